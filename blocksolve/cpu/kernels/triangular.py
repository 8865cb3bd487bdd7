"""Triangular solves on the CPU: ``trsm``.

The builder takes a :class:`~blocksolve._pattern.CallPattern` and returns a
runner ``run(a, b) -> (x, info)`` over flattened, C-contiguous
``(batch, *core)`` operands.  The numba kernel is specialised on the matrix
size and on the options ``lower``, ``trans`` and ``unit_diagonal``.  It
works on interleaved blocks of matrices (:mod:`blocksolve.cpu._blocks`);
the block helpers here are shared with the LU family.
"""

from __future__ import annotations

import numba
import numpy as np

from ..._cache import memo
from .._compiled import Kernel, batch_kernel
from .._jit import launch
from ._blocks import block_width, load, store
from ._condition import (
    TRIANGULAR_LOWER,
    TRIANGULAR_UPPER,
    condition_names,
    condition_work,
    emit_condition_check,
    emit_condition_flag,
    emit_one_norm,
    flagged_if,
    triangular_one_norm,
)
from ._reference import first_zero_diagonal, lapack_function
from ._unrolled import (
    Source,
    compile_kernel,
    emit_first_zero,
    emit_lane_kernel,
    emit_read,
    emit_stash,
    emit_triangular_solve,
    emit_unstash,
    loaded_entries,
    matrix_indices,
    unrolled_lanes,
    unrolled_solve,
)


@numba.njit(forceinline=True, error_model="numpy")
def zero_diagonal_block(t, n, width, info):
    """``info[m]``: 1-based index of the first zero on the diagonal of matrix ``m``, or 0."""
    for m in range(width):
        info[m] = 0
    for i in range(n - 1, -1, -1):
        for m in range(width):
            info[m] = i + 1 if t[i, i, m] == 0 else info[m]


@numba.njit(forceinline=True, error_model="numpy")
def op_block(t, n, width, conj):
    """Transpose every matrix of the block ``t`` in place; conjugate too if ``conj``."""
    for i in range(n):
        for j in range(i if conj else i + 1, n):
            for m in range(width):
                upper, lower = t[i, j, m], t[j, i, m]
                t[i, j, m] = np.conj(lower) if conj else lower
                t[j, i, m] = np.conj(upper) if conj else upper


@numba.njit(forceinline=True, error_model="numpy")
def divide(x, d):
    # numba raises ZeroDivisionError for a complex x / 0 even with the numpy
    # error model; a zero diagonal is reported through info, the quotient
    # only has to be non-finite, as for real dtypes.
    return x / d if d != 0 else x * np.inf


@numba.njit(forceinline=True, error_model="numpy")
def trsm_block(t, x, n, width, lower, unit_diagonal, adjoint=False):
    """Solve ``T x = b``, or ``T^H x = b`` when ``adjoint``, in place of the block ``x``
    (``(n, k, width)``).

    ``T`` is the triangle of the block ``t`` selected by ``lower``; only that
    triangle is read, and its diagonal only when not ``unit_diagonal``.  A
    zero on the diagonal gives infs/NaNs (callers report it through info).
    ``T^H`` is read from ``T`` itself (entry ``(i, j)`` is ``conj(t[j, i])``),
    so a Cholesky factor serves both of its solves unchanged.
    """
    k = x.shape[1]
    forward = lower != adjoint  # op(T) is lower triangular: rows top to bottom
    for step in range(n):
        i = step if forward else n - 1 - step
        lo, hi = (0, i) if forward else (i + 1, n)
        for j in range(lo, hi):
            for c in range(k):
                for m in range(width):
                    entry = np.conj(t[j, i, m]) if adjoint else t[i, j, m]
                    x[i, c, m] -= entry * x[j, c, m]
        if not unit_diagonal:
            for c in range(k):
                for m in range(width):
                    diagonal = np.conj(t[i, i, m]) if adjoint else t[i, i, m]
                    x[i, c, m] = divide(x[i, c, m], diagonal)


@batch_kernel(options=("lower", "trans", "unit_diagonal", "condition"))
def _trsm_kernel(start, stop, n, a, b, x, info, lower, trans, unit_diagonal, condition):
    capacity = block_width(n, stop - start)
    t = np.empty((n, n, capacity), a.dtype)
    rhs = np.empty((n, b.shape[2], capacity), b.dtype)
    vector, signs = condition_work(a)
    kind = TRIANGULAR_LOWER if lower else TRIANGULAR_UPPER
    for first in range(start, stop, capacity):
        width = min(capacity, stop - first)
        load(a, first, width, t)
        load(b, first, width, rhs)
        if trans:
            op_block(t, n, width, trans == 2)
        if unit_diagonal:
            info[first : first + width] = 0
        else:
            zero_diagonal_block(t, n, width, info[first : first + width])
        # op(a) is lower triangular when exactly one of lower and trans holds
        trsm_block(t, rhs, n, width, lower != (trans != 0), unit_diagonal)
        store(rhs, x, first, width)
        for c in range(width if condition and b.shape[2] > 0 else 0):
            if info[first + c] == 0:
                norm = triangular_one_norm(a[first + c], n, lower)
                ill = flagged_if(condition, a[first + c], kind, norm, vector, signs)
                info[first + c] = n + 1 if ill else 0


@memo("cpu-straight-line-trsm", maxsize=256)
def _unrolled_trsm_kernel(n, k, dtype, lower, trans, unit_diagonal, condition):
    """:func:`_trsm_kernel` as straight-line code for real ``n x n`` triangles and ``k``
    right-hand sides: :func:`trsm_block`'s operations on ``op(a)`` in its order, so the
    same solutions to the bit, and the same ``info``."""
    forward = lower != (trans != 0)  # op(a) is lower triangular
    triangle = [  # the entries of op(a) the solve reads, row by row
        (i, j)
        for i in range(n)
        for j in (range(i + 1) if forward else range(i, n))
        if not (unit_diagonal and i == j)
    ]
    row = {entry: r for r, entry in enumerate(triangle)}
    x_at = len(triangle)
    info_at = x_at + n * k
    decided_at = info_at + 1
    kind = TRIANGULAR_LOWER if lower else TRIANGULAR_UPPER
    src = Source(complex_values=False)

    def load():
        for (i, j), r in row.items():  # op(a)[i, j] of matrix l (a real op(a) is a^T)
            src(f"work[{r}, l] = a[first + l, {j if trans else i}, {i if trans else j}]")
        emit_read(src, "b", n, k, x_at)

    def lane():
        t = {entry: src.let("t", f"work[{r}, l]") for entry, r in row.items()}
        x = loaded_entries(src, n, k, x_at, "b")
        emit_triangular_solve(src, lambda i, j: t[i, j], x, n, range(k), forward, unit_diagonal)
        emit_stash(src, [x[i, c] for i in range(n) for c in range(k)], x_at)
        if not unit_diagonal:
            zeros = [src.let("zero", f"{t[i, i]} == 0") for i in range(n)]
            emit_stash(src, [emit_first_zero(src, zeros)], info_at)
        if condition:  # the estimate's cheap bound here, across the lanes (trans is 0)
            norm = emit_one_norm(src, lambda i, j: t[i, j], n, kind)
            emit_condition_flag(src, norm, lambda i, j: t[i, j], n, kind, decided_at)

    def finish():
        emit_unstash(src, "x", matrix_indices(n, k), x_at)
        if unit_diagonal:
            src("info[first + l] = 0")
        else:
            emit_unstash(src, "info", [""], info_at, "int")
        if condition:  # where the bound left it in doubt, the estimate as _trsm_kernel
            norm = f"triangular_one_norm(a[first + l], {n}, {lower})"
            emit_condition_check(src, decided_at, n, norm, "a[first + l]")

    setup = ("vector, signs = condition_work(a)",) if condition else ()
    lanes = unrolled_lanes(dtype, n)
    rows = decided_at + 1 if condition else info_at + 1
    emit_lane_kernel(src, "a, b, x, info", lanes, rows, load, lane, finish, setup)
    options = f"{'lower' if lower else 'upper'}_{trans}{'_unit' if unit_diagonal else ''}"
    name = f"trsm_{n}x{k}_{dtype.name}_{options}{'_condition' if condition else ''}"
    return compile_kernel(name, src.text(), dtype, condition_names(dtype, kind))


def trsm(pattern):
    """Triangular solve; options ``lower``, ``trans`` (0, 1, 2), ``unit_diagonal`` and
    ``condition`` (``solve``'s triangular structure, ``trans`` 0 and a non-unit
    diagonal: ``info = n + 1`` marks a matrix singular to working precision, by
    ``xTRCON``'s estimate).  Real triangles up to 8x8 with up to 8 right-hand sides
    run as straight-line code across lanes (:func:`_unrolled_trsm_kernel`)."""
    n, k, dtype = pattern.dim("n"), pattern.dim("k"), pattern.np_dtype
    options = {
        name: pattern.option(name) for name in ("lower", "trans", "unit_diagonal", "condition")
    }
    if unrolled_solve(pattern):
        kernel = Kernel(_unrolled_trsm_kernel, (n, k, dtype, *options.values()))
    else:
        kernel = _trsm_kernel.sized(n, **options)

    def run(a, b):
        x = np.empty(b.shape, dtype)
        info = np.empty(a.shape[0], np.int32)
        launch(kernel, a.shape[0], a.shape[1] ** 2 * b.shape[2], a, b, x, info)
        return x, info

    return run


# --- SciPy's LAPACK -------------------------------------------------------------------


def trsm_per_matrix(pattern):
    """SciPy's ``solve_triangular``: LAPACK ``xTRTRS``, on the transposed system for a
    matrix that is not Fortran-ordered (as SciPy does); ``info`` is xTRTRS's, the
    first exactly zero diagonal entry."""
    lower, trans = pattern.option("lower"), pattern.option("trans")
    unit_diagonal, dtype = pattern.option("unit_diagonal"), pattern.np_dtype
    condition, eps = pattern.option("condition"), np.finfo(dtype).eps

    def solve(a, b):
        trtrs = lapack_function("trtrs", dtype)
        if a.flags.f_contiguous or trans == 2:
            return trtrs(a, b, lower=lower, trans=trans, unitdiag=unit_diagonal)
        return trtrs(a.T, b, lower=not lower, trans=not trans, unitdiag=unit_diagonal)

    def run(a, b):
        if not b.size:  # xTRTRS is not called
            return b.copy(), 0 if unit_diagonal else first_zero_diagonal(a)
        x, info = solve(a, b)
        if info or not condition:
            return x, info
        rcond = lapack_function("trcon", dtype)(a, uplo="L" if lower else "U")[0]
        return x, a.shape[0] + 1 if not rcond >= eps else 0

    return run
