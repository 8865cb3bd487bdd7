"""Least squares on the CPU: ``gels`` (``numpy.linalg.lstsq``).

QR of ``a`` when ``m >= n``; QR of ``a^H`` when ``m < n``, which gives the
minimum-norm solution through the LQ factorisation ``a = R^H Q^H``.  As in
:mod:`blocksolve.cpu.qr` there are two kernels over blocks of matrices:
straight-line code per shape up to 8x8, run-time sizes above.

The singular values (for ``s`` and the rank) are those of the small
triangular factor ``R``, computed with a one-sided Jacobi SVD of ``R^H``:
LAPACK is not reachable from numba without SciPy, and the QR is already
the preconditioning that makes Jacobi converge in a few sweeps (five for a
random 8x4 matrix, the last one only confirming convergence).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ._householder import (abs2, apply_reflector, block_helper, block_lanes,
                           householder_block, load_block, reciprocal, scale_block,
                           scaling_limits)
from ._jit import jit, launch
from ._tiers import tiered
from ._unrolled import (Entries, Source, compile_kernel, emit_apply, emit_block_in,
                        emit_householder, emit_jacobi_sweep, emit_load, emit_singular_values,
                        emit_store, unrolled, unrolled_lanes)

__all__ = ["gels"]

_MAX_SWEEPS = 30  # as LAPACK's xGESVJ


@block_helper
def _load_rhs(b, first, count, c, m, rows, k):
    """``c[col, i, l] = b[first + l, i, col]``; rows ``m:rows`` are zero."""
    for l in range(count):
        for i in range(m):
            for col in range(k):
                c[col, i, l] = b[first + l, i, col]
    for col in range(k):
        for i in range(m, rows):
            for l in range(c.shape[2]):
                c[col, i, l] = 0


@block_helper
def _solve_tall(w, tau, pivot_inv, m, n, k, c, lanes, dot):
    """``c <- Q^H c``, then ``R x = c[:n]`` in place (``m >= n``)."""
    for j in range(n):
        for col in range(k):
            apply_reflector(w, tau, j, m, c, col, lanes, dot, True)
    for col in range(k):
        for i in range(n - 1, -1, -1):
            for l in range(lanes):
                dot[l] = c[col, i, l]
            for j in range(i + 1, n):
                for l in range(lanes):
                    dot[l] -= w[j, i, l] * c[col, j, l]
            for l in range(lanes):
                c[col, i, l] = dot[l] * pivot_inv[i, l]


@block_helper
def _solve_wide(w, tau, pivot_inv, m, n, k, c, lanes, dot):
    """``R^H z = c[:m]``, then ``x = Q [z; 0]`` in place (``m < n``, ``a^H = Q R``)."""
    for col in range(k):
        for i in range(m):
            for l in range(lanes):
                dot[l] = c[col, i, l]
            for j in range(i):
                for l in range(lanes):
                    dot[l] -= np.conj(w[i, j, l]) * c[col, j, l]
            for l in range(lanes):
                c[col, i, l] = dot[l] * np.conj(pivot_inv[i, l])
    for j in range(m - 1, -1, -1):
        for col in range(k):
            apply_reflector(w, tau, j, n, c, col, lanes, dot, False)


@block_helper
def _column_norms(g, p, lanes, norms):
    for j in range(p):
        for l in range(lanes):
            norms[j, l] = 0
        for i in range(p):
            for l in range(lanes):
                norms[j, l] += abs2(g[j, i, l])


@block_helper
def _jacobi_sweeps(g, p, lanes, norms, dot, cosine, sine, tol):
    """One-sided (Hestenes) Jacobi on the columns ``g[j, :p]`` of every matrix.

    Rotates pairs of columns until every pair is orthogonal to ``tol``
    (relative) in every matrix of the block; then ``norms[j, l]`` holds the
    squared singular values, unsorted.  Only the singular values are wanted,
    so a column may pick up a unit phase.
    """
    tol2 = tol * tol
    for _ in range(_MAX_SWEEPS):
        _column_norms(g, p, lanes, norms)  # fresh each sweep: the updates below drift
        rotated = 0
        for pc in range(p - 1):
            for qc in range(pc + 1, p):
                for l in range(lanes):
                    dot[l] = 0
                for i in range(p):
                    for l in range(lanes):
                        dot[l] += np.conj(g[pc, i, l]) * g[qc, i, l]
                pair_rotated = 0
                for l in range(lanes):
                    pair_rotated += abs2(dot[l]) > tol2 * norms[pc, l] * norms[qc, l]
                if not pair_rotated:  # common in the last sweeps: skip the square roots
                    continue
                for l in range(lanes):
                    # Rutishauser's rotation for the Gram matrix [[ap, dot], [conj(dot), aq]]:
                    # with d = aq - ap, r = sqrt(d^2 + 4|dot|^2), u = |d| + r and
                    # inv = 1 / sqrt(2 r u): cos = u inv, sin = 2 |dot| inv, and the norms
                    # move by tan |dot| = 2 |dot|^2 / u = 4 r |dot|^2 inv^2.
                    ap, aq = norms[pc, l], norms[qc, l]
                    off2 = abs2(dot[l])
                    rotate = off2 > tol2 * ap * aq
                    d = aq - ap
                    r = math.sqrt(d * d + 4 * off2)
                    u = abs(d) + r
                    inv = 1 / math.sqrt(2 * r * u if rotate else 1)
                    sign_inv = math.copysign(inv, d)
                    shift = 4 * r * off2 * inv * sign_inv
                    cosine[l] = u * inv if rotate else 1
                    sine[l] = dot[l] * (2 * sign_inv) if rotate else 0
                    norms[pc, l] = ap - shift if rotate else ap
                    norms[qc, l] = aq + shift if rotate else aq
                rotated += pair_rotated
                for i in range(p):
                    for l in range(lanes):
                        x, y = g[pc, i, l], g[qc, i, l]
                        g[pc, i, l] = cosine[l] * x - np.conj(sine[l]) * y
                        g[qc, i, l] = sine[l] * x + cosine[l] * y
        if not rotated:
            break
    _column_norms(g, p, lanes, norms)


@block_helper
def _singular_values(norms, p, lanes, rcond, found):
    """Squared singular values ``norms[:p]`` -> singular values, largest first; ``found`` = rank."""
    for j in range(p):
        for l in range(lanes):
            norms[j, l] = math.sqrt(norms[j, l])
    for top in range(p - 1, 0, -1):  # bubble sort, the whole block at once
        for j in range(top):
            for l in range(lanes):
                x, y = norms[j, l], norms[j + 1, l]
                norms[j, l] = x if x >= y else y
                norms[j + 1, l] = y if x >= y else x
    for l in range(lanes):
        found[l] = 0
    for j in range(p):
        for l in range(lanes):
            found[l] += norms[j, l] > rcond * norms[0, l]


@jit
def _gels_kernel(start, stop, a, b, x, residuals, rank, s, info, rcond, lanes, limits, tol):
    m, n, k = a.shape[1], a.shape[2], b.shape[2]
    wide = m < n
    rows, p = max(m, n), min(m, n)
    w = np.zeros((p, rows, lanes), a.dtype)
    t = np.zeros((p, lanes), a.dtype)
    c = np.zeros((k, rows, lanes), a.dtype)
    g = np.zeros((p, p, lanes), a.dtype)
    pivot_inv = np.zeros((p, lanes), a.dtype)
    dot = np.zeros(lanes, a.dtype)
    sine = np.zeros(lanes, a.dtype)
    cosine = np.zeros(lanes, limits.dtype)
    norms = np.zeros((p, lanes), limits.dtype)
    tail = np.zeros((residuals.shape[1], lanes), limits.dtype)
    found = np.zeros(lanes, np.int64)
    scale = np.ones(lanes)
    for first in range(start, stop, lanes):
        count = min(lanes, stop - first)
        load_block(a, first, count, w, rows, p, wide)
        scale_block(w, rows, p, lanes, limits, cosine, scale)
        householder_block(w, t, rows, p, lanes, cosine, dot)
        for j in range(p):  # g: columns of R^H (Jacobi converges faster on them than on R's)
            for i in range(p):
                for l in range(lanes):
                    g[i, j, l] = np.conj(w[j, i, l]) if i <= j else 0
            for l in range(lanes):
                pivot_inv[j, l] = reciprocal(w[j, j, l])
        _load_rhs(b, first, count, c, m, rows, k)
        if wide:
            _solve_wide(w, t, pivot_inv, m, n, k, c, lanes, dot)
        else:
            _solve_tall(w, t, pivot_inv, m, n, k, c, lanes, dot)
        for col in range(tail.shape[0]):  # residuals: |Q^H b|^2 below row n
            for l in range(lanes):
                tail[col, l] = 0
            for i in range(n, m):
                for l in range(lanes):
                    tail[col, l] += abs2(c[col, i, l])
        _jacobi_sweeps(g, p, lanes, norms, dot, cosine, sine, tol)
        _singular_values(norms, p, lanes, rcond, found)
        for l in range(count):
            bi = first + l
            for i in range(n):
                for col in range(k):
                    x[bi, i, col] = c[col, i, l] * scale[l]
            for col in range(tail.shape[0]):
                residuals[bi, col] = tail[col, l]
            unscale = 1 / scale[l]
            for j in range(p):
                s[bi, j] = norms[j, l] * unscale
            rank[bi] = found[l]
            info[bi] = found[l] + 1 if found[l] < p else 0


def _emit_solve(src, m, n, a, taus, c_at, tail_at):
    """One right-hand side ``work[c_at:c_at + m]`` -> solution and residual, straight-line.

    As :func:`_solve_tall` / :func:`_solve_wide` for one matrix per lane.
    """
    rows, p = max(m, n), min(m, n)
    c = Entries("c")
    for i in range(rows):
        if i < m:
            c.assign(src, i, 0, f"work[{c_at + i}, l]")
        else:
            c.set_constant(i, 0, "0")
    if m >= n:
        for j in range(p):
            emit_apply(src, a, j, m, c, 0, taus[j], adjoint=True)
        tail = " + ".join(src.abs2(c.get(i, 0)) for i in range(n, m))
        src(f"work[{tail_at}, l] = {tail or '0.0'}")
        for i in range(n - 1, -1, -1):
            rest = "".join(f" - {a.get(i, j)} * {c.get(j, 0)}" for j in range(i + 1, n))
            c.assign(src, i, 0, f"({c.get(i, 0)}{rest}) * reciprocal({a.get(i, i)})")
    else:
        for i in range(m):
            rest = "".join(f" - {src.conj(a.get(j, i))} * {c.get(j, 0)}" for j in range(i))
            c.assign(src, i, 0, f"({c.get(i, 0)}{rest}) * {src.conj(f'reciprocal({a.get(i, i)})')}")
        for j in range(p - 1, -1, -1):
            emit_apply(src, a, j, n, c, 0, taus[j], adjoint=False)
    for i in range(n):
        src(f"work[{c_at + i}, l] = {c.get(i, 0)}")


@functools.cache
def _unrolled_gels_kernel(m, n, dtype):
    """:func:`_gels_kernel` as straight-line code for ``m x n`` matrices.

    Right-hand sides are solved one column at a time; the Jacobi sweeps run
    until no matrix of the block rotates.
    """
    wide = m < n
    rows, p = max(m, n), min(m, n)
    lanes = unrolled_lanes(dtype)
    # work rows: the factored matrix (column-major), tau, one right-hand side,
    # G = R^H (column-major), residual, singular values, rank
    tau_at = rows * p
    c_at = tau_at + p
    g_at = c_at + rows
    tail_at = g_at + p * p
    sv_at = tail_at + 1
    rank_at = sv_at + p

    def load_g():
        g = Entries("g")
        emit_load(src, g, p, p, g_at)
        return g

    src = Source(dtype.kind == "c")
    with src.block("def KERNEL(start, stop, a, b, x, residuals, rank, s, info, rcond, lanes, "
                   "limits, tol):"):
        src("k = b.shape[2]")
        src("tol2 = tol * tol")
        src(f"work = np.zeros(({rank_at + 1}, {lanes}), a.dtype)")
        src(f"w = work[:{rows * p}].reshape(({p}, {rows}, {lanes}))")
        src(f"peak = np.zeros({lanes}, limits.dtype)")
        src(f"scale = np.ones({lanes})")
        with src.block(f"for first in range(start, stop, {lanes}):"):
            src(f"count = min({lanes}, stop - first)")
            emit_block_in(src, rows, p, lanes, wide)
            with src.block(f"for l in range({lanes}):"):
                a = Entries("a")
                emit_load(src, a, rows, p, 0)
                taus = emit_householder(src, a, rows, p, [])
                emit_store(src, a, rows, p, 0)
                for j, tau in enumerate(taus):
                    src(f"work[{tau_at + j}, l] = {tau}")
                g = Entries("g")  # columns of R^H: Jacobi converges faster on them than on R's
                for col in range(p):
                    for row in range(p):
                        g.set_constant(row, col, "0")
                        if row >= col:
                            g.assign(src, row, col, src.conj(a.get(col, row)))
                emit_store(src, g, p, p, g_at)
            with src.block("for col in range(k):"):
                with src.block("for l in range(count):"), src.block(f"for i in range({m}):"):
                    src(f"work[{c_at} + i, l] = b[first + l, i, col]")
                with src.block(f"for l in range({lanes}):"):
                    a = Entries("a")
                    emit_load(src, a, rows, p, 0)
                    taus = [src.let("tau", f"work[{tau_at + j}, l]") for j in range(p)]
                    _emit_solve(src, m, n, a, taus, c_at, tail_at)
                with src.block("for l in range(count):"):
                    with src.block(f"for i in range({n}):"):
                        src(f"x[first + l, i, col] = work[{c_at} + i, l] * scale[l]")
                    if m > n:
                        src(f"residuals[first + l, col] = work[{tail_at}, l].real")
            with src.block(f"for sweep in range({_MAX_SWEEPS}):"):
                src("rotated = 0")
                with src.block(f"for l in range({lanes}):"):
                    g = load_g()
                    src(f"rotated += {emit_jacobi_sweep(src, g, p)}")
                    emit_store(src, g, p, p, g_at)
                with src.block("if rotated == 0:"):
                    src("break")
            with src.block(f"for l in range({lanes}):"):
                values = emit_singular_values(src, load_g(), p)
                cutoff = src.let("cutoff", f"rcond * {values[0]}")
                for j, value in enumerate(values):
                    src(f"work[{sv_at + j}, l] = {value}")
                src(f"work[{rank_at}, l] = " + " + ".join(f"int({v} > {cutoff})" for v in values))
            with src.block("for l in range(count):"):
                src("unscale = 1 / scale[l]")
                with src.block(f"for j in range({p}):"):
                    src(f"s[first + l, j] = work[{sv_at} + j, l].real * unscale")
                src(f"found = int(work[{rank_at}, l].real)")
                src("rank[first + l] = found")
                src(f"info[first + l] = select(found < {p}, found + 1, 0)")
    return compile_kernel(f"gels_{m}x{n}_{dtype.name}", src.text())


def _kernel(m, n, dtype):
    """``(kernel, lanes)`` for ``m x n`` matrices of ``dtype``.

    Up to 8x8 the straight-line kernel, with the run-time-size one standing
    in until it is compiled (:func:`~blocksolve.cpu._tiers.tiered`); the
    straight-line kernel ignores ``lanes``, its block width is built in.
    """
    if unrolled(m, n):
        return tiered(_gels_kernel, _unrolled_gels_kernel, (m, n, np.dtype(dtype))), block_lanes(m, n)
    return _gels_kernel, block_lanes(m, n)


def _rank_cutoff(rcond, m, n, dtype):
    """NumPy 2's ``rcond`` rule: default ``eps * max(m, n)``, negative means ``eps``."""
    eps = float(np.finfo(dtype).eps)
    if rcond is None:
        return eps * max(m, n)
    return eps if rcond < 0 else float(rcond)


def _zero_sized(b, x, residuals, m, n):
    """``m == 0`` or ``n == 0``: ``x = 0``, rank 0, residuals ``|b|^2`` when ``m > n``."""
    x[...] = 0
    if residuals.shape[-1]:
        residuals[...] = (b.real ** 2 + b.imag ** 2).sum(axis=1)


def gels(pattern):
    """Least-squares solve with rank and singular values; run-time ``rcond``."""
    m, n, k, r = (pattern.dim(d) for d in "mnkr")
    p = min(m, n)
    dtype = pattern.np_dtype
    real = np.finfo(dtype).dtype
    limits = scaling_limits(dtype)
    tol = float(np.finfo(dtype).eps) * max(p, 1)
    kernel, lanes = _kernel(m, n, dtype) if p else (None, 0)

    def run(a, b, rcond=None):
        batch = a.shape[0]
        x = np.empty((batch, n, k), dtype)
        residuals = np.empty((batch, r), real)
        rank = np.zeros(batch, np.int32)
        s = np.empty((batch, p), real)
        info = np.zeros(batch, np.int32)
        if kernel is None:
            _zero_sized(b, x, residuals, m, n)
        else:
            launch(kernel, batch, 4 * m * n * p + 20 * p ** 3 + 4 * m * n * k, a, b, x,
                   residuals, rank, s, info, _rank_cutoff(rcond, m, n, dtype), lanes,
                   limits, tol)
        return x, residuals, rank, s, info
    return run
