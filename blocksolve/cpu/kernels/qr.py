"""QR factorisation on the CPU: ``geqrf``, the four modes of ``numpy.linalg.qr``.

Two kernels, both working on blocks of matrices (see
:mod:`blocksolve.cpu._householder`): straight-line code generated per shape
for matrices up to 8x8 (:mod:`blocksolve.cpu._unrolled`), and one kernel
with run-time sizes for everything larger.  The mode ('reduced',
'complete', 'r', 'raw') is a run-time argument of both, so all modes share
a compilation.  Results match :func:`numpy.linalg.qr` (LAPACK ``xGEQRF`` and
``xORGQR``/``xUNGQR``) to rounding.
"""

from __future__ import annotations

import numpy as np

from ..._cache import memo
from ..._op import op_for
from .._jit import jit, launch
from ._householder import (
    HOUSEHOLDER_REAL_ROWS,
    HOUSEHOLDER_VALUE_ROWS,
    block_helper,
    fast_limits,
    form_q_block,
    householder_block,
    load_block,
    narrow_lanes,
)
from ._unrolled import (
    Entries,
    Source,
    compile_kernel,
    emit_block_in,
    emit_careful_redo,
    emit_form_q,
    emit_householder,
    emit_load,
    emit_scratch,
    emit_store,
    kernels_for,
    unrolled_lanes,
)

__all__ = ["geqrf", "MODE_CODES"]

# Run-time mode codes of the geqrf kernels.
MODE_CODES = {"reduced": 0, "complete": 1, "r": 2, "raw": 3}
_REDUCED, _COMPLETE, _RAW = MODE_CODES["reduced"], MODE_CODES["complete"], MODE_CODES["raw"]


@block_helper
def _store_block(first, count, mode, w, t, qw, q, r, h, tau):
    """Write the block's results for ``mode`` into the outputs (``R`` with exact zeros)."""
    n, m = w.shape[0], w.shape[1]
    for l in range(count):
        b = first + l
        if mode == _RAW:
            for j in range(n):
                for i in range(m):
                    h[b, j, i] = w[j, i, l]
            for j in range(tau.shape[1]):
                tau[b, j] = t[j, l]
            continue
        for i in range(r.shape[1]):
            for j in range(n):
                r[b, i, j] = w[j, i, l] if i <= j else 0
        if mode == _REDUCED or mode == _COMPLETE:
            for i in range(m):
                for c in range(q.shape[2]):
                    q[b, i, c] = qw[c, i, l]


@jit
def _geqrf_kernel(start, stop, a, q, r, h, tau, mode, lanes, limits):
    lanes = narrow_lanes(lanes, start, stop)
    m, n = a.shape[1], a.shape[2]
    p = min(m, n)
    forms_q = mode == _REDUCED or mode == _COMPLETE
    q_cols = m if mode == _COMPLETE else p
    w = np.zeros((n, m, lanes), a.dtype)
    t = np.zeros((p, lanes), a.dtype)
    qw = np.zeros((q_cols if forms_q else 0, m, lanes), a.dtype)
    reflector_reals = np.zeros((HOUSEHOLDER_REAL_ROWS, lanes), limits.dtype)
    reflector_values = np.zeros((HOUSEHOLDER_VALUE_ROWS, lanes), a.dtype)
    for first in range(start, stop, lanes):
        count = min(lanes, stop - first)
        load_block(a, first, count, w, m, n, False)
        householder_block(w, t, m, n, lanes, limits, reflector_reals, reflector_values)
        if forms_q:
            form_q_block(w, t, p, m, qw, q_cols, lanes, reflector_values[0])
        _store_block(first, count, mode, w, t, qw, q, r, h, tau)


def _emit_store_outputs(src, m, n, tau_at, q_at):
    """Per-mode stores of one block's results, as in :func:`_store_block`."""
    p = min(m, n)
    for mode, code in MODE_CODES.items():
        with src.block(f"if mode == {code}:"), src.block("for l in range(count):"):
            src("b = first + l")
            if mode == "raw":
                with src.block(f"for j in range({n}):"), src.block(f"for i in range({m}):"):
                    src(f"h[b, j, i] = work[j * {m} + i, l]")
                with src.block(f"for j in range({p}):"):
                    src(f"tau[b, j] = work[{tau_at} + j, l]")
                continue
            with src.block(f"for i in range({m if mode == 'complete' else p}):"):
                with src.block(f"for j in range({n}):"):
                    with src.block("if i <= j:"):
                        src(f"r[b, i, j] = work[j * {m} + i, l]")
                    with src.block("else:"):
                        src("r[b, i, j] = 0")
            if mode in ("reduced", "complete"):
                with src.block(f"for i in range({m}):"):
                    with src.block(f"for c in range({m if mode == 'complete' else p}):"):
                        src(f"q[b, i, c] = work[{q_at} + c * {m} + i, l]")


@memo("cpu-straight-line-qr", maxsize=256)
def _unrolled_geqrf_kernel(m, n, dtype):
    """:func:`_geqrf_kernel` as straight-line code for ``m x n`` matrices.

    The rows of its work array hold the matrix (column-major, factored in
    place), then ``tau``, then ``Q`` (column-major, up to ``m`` columns),
    then each lane's careful-path flag.
    """
    p = min(m, n)
    lanes = unrolled_lanes(dtype)
    tau_at, q_at = m * n, m * n + p
    flag_at = q_at + m * m
    src = Source(dtype.kind == "c")
    with src.block("def KERNEL(start, stop, a, q, r, h, tau, mode, lanes, limits):"):
        src(f"work = np.zeros(({flag_at + 1}, {lanes}), a.dtype)")
        src(f"w = work[:{m * n}].reshape(({n}, {m}, {lanes}))")
        emit_scratch(src, lanes)
        src("low, high = limits[0], limits[1]")
        with src.block(f"for first in range(start, stop, {lanes}):"):
            src(f"count = min({lanes}, stop - first)")
            emit_block_in(src, m, n, False)
            with src.block(f"for l in range({lanes}):"):
                a = Entries("a")
                emit_load(src, a, m, n, 0)
                taus, careful = emit_householder(src, a, m, n, [])
                emit_store(src, a, m, n, 0)
                for j, name_j in enumerate(taus):
                    src(f"work[{tau_at + j}, l] = {name_j}")
                src(f"work[{flag_at}, l] = {careful}")
            emit_careful_redo(src, m, n, False, flag_at, tau_at)
            # Q: the first p columns for 'reduced', all m for 'complete' (the same if m <= n).
            q_variants = {p: [_REDUCED]}
            q_variants.setdefault(m, []).append(_COMPLETE)
            for q_cols, codes in q_variants.items():
                with src.block(f"if {' or '.join(f'mode == {c}' for c in codes)}:"):
                    with src.block(f"for l in range({lanes}):"):
                        v, q = Entries("v"), Entries("q")
                        emit_load(src, v, m, p, 0)
                        taus = [src.let("tau", f"work[{tau_at + j}, l]") for j in range(p)]
                        emit_form_q(src, v, m, p, q, q_cols, taus)
                        emit_store(src, q, m, q_cols, q_at)
            _emit_store_outputs(src, m, n, tau_at, q_at)
    return compile_kernel(f"geqrf_{m}x{n}_{dtype.name}", src.text(), dtype)


def _zero_sized(outputs):
    """Results for ``m == 0`` or ``n == 0``: empty or zero, ``Q`` of 'complete' the identity."""
    for name, out in outputs.items():
        out[...] = 0
        if name == "Q" and out.shape[-1] == out.shape[-2]:
            out[...] = np.eye(out.shape[-1], dtype=out.dtype)
    return outputs


def geqrf(pattern):
    """QR factorisation; option ``mode`` ('reduced', 'complete', 'r', 'raw').

    The outputs are those of ``QR_MODES[mode]``; the mode is a run-time
    argument of the kernel, so all modes share one compilation.  The sizes
    are read from the operand (a pattern with sizes 0 runs every size).
    """
    mode = pattern.option("mode")
    dtype = pattern.np_dtype
    declared = op_for(pattern.routine, dict(pattern.options)).outputs
    limits, code = fast_limits(dtype), MODE_CODES[mode]
    kernel_for = kernels_for(pattern, _geqrf_kernel, _unrolled_geqrf_kernel)

    def run(a):
        batch, m, n = a.shape
        p = min(m, n)
        dims = {"m": m, "n": n, "p": p}
        outputs = {o.name: np.empty((batch, *(dims[s] for s in o.core)), dtype) for o in declared}
        if not p:
            _zero_sized(outputs)
        else:
            kernel, lanes = kernel_for(m, n)
            unused = np.empty((1, 1, 1), dtype)
            launch(
                kernel,
                batch,
                4 * m * n * p,
                a,
                outputs.get("Q", unused),
                outputs.get("R", unused),
                outputs.get("h", unused),
                outputs.get("tau", unused[0]),
                code,
                lanes,
                limits,
            )
        return (*outputs.values(), np.zeros(batch, np.int32))

    return run


def geqrf_numpy(pattern):
    """``numpy.linalg.qr`` in the pattern's mode (QR never fails)."""
    mode = pattern.option("mode")

    def compute(a):
        result = np.linalg.qr(a, mode=mode)
        return tuple(result) if isinstance(result, tuple) else (result,)

    return compute
