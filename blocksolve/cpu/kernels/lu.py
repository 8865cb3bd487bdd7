"""LU family on the CPU: ``getrf`` (factor), ``getrs`` (solve with the factors)
and ``gesv`` (factor and solve in one kernel).

Each builder takes a :class:`~blocksolve._pattern.CallPattern` and returns
a runner ``run(*operands) -> (*outputs, info)`` over flattened, C-contiguous
``(batch, *core)`` operands.  The numba kernels are specialised on the
matrix size; ``trans`` is a runtime argument.  They work on interleaved
blocks of matrices (:mod:`blocksolve.cpu._blocks`); for small real matrices
the solve (and the inverse and determinants of :mod:`.inverse` and
:mod:`.determinant`) is straight-line code across lanes instead, written out
by :func:`emit_getrf`.  Pivots are 0-based, as in :func:`scipy.linalg.lu_factor`.
"""

from __future__ import annotations

import numba
import numpy as np

from ..._cache import memo
from ..._compat.numpy import numpy_linalg
from .._compiled import Kernel, batch_kernel
from .._jit import launch, static_size
from ._blocks import block_width, load, store
from ._condition import (
    LU,
    condition_names,
    condition_work,
    emit_condition_check,
    emit_condition_flag,
    emit_one_norm,
    flagged_if,
    one_norm,
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
)
from .triangular import op_block, trsm_block, zero_diagonal_block


@numba.njit(inline="always")
def _pivot_size(z):
    # BLAS i?amax's measure: |re| + |im| (|x| for real x).
    return abs(z.real) + abs(z.imag)


@numba.njit(inline="always")
def _list_swaps(piv_row, i, width, swapping):
    """Store the matrices ``m`` with ``piv_row[m] != i`` in ``swapping``; return their count.

    Listing them first, branch-free, and then swapping rows for the listed
    matrices only costs less than a branch per matrix that mispredicts.
    """
    count = 0
    for m in range(width):
        swapping[count] = m
        count += piv_row[m] != i
    return count


@numba.njit(inline="always")
def getrf_work(lu):
    """Scratch for :func:`getrf_block` on blocks like ``lu``."""
    capacity = lu.shape[2]
    return (
        np.empty(capacity, lu.real.dtype),
        np.empty(capacity, np.bool_),
        np.empty(capacity, lu.dtype),
        np.empty(capacity, np.int64),
        np.empty((lu.shape[0], capacity), lu.dtype),
    )


@numba.njit(inline="always")
def getrf_block(lu, rhs, m, n, width, piv, info, work):
    """Factor the block ``lu`` (``(m, n, width)``) in place, as LAPACK ``getf2``.

    Partial pivoting: the pivot of column ``k < min(m, n)`` is the first
    entry of largest :func:`_pivot_size` on or below the diagonal;
    ``piv[k, m]`` is its row (0-based).  ``L`` (unit lower trapezoidal) ends
    up below the diagonal, ``U`` (upper trapezoidal) on and above it.  An
    exactly zero pivot sets ``info[m]`` to its 1-based column (the first
    such one) and the factorisation goes on.

    Left-looking, in the order of operations of OpenBLAS's ``getf2`` (the
    LU behind NumPy's and SciPy's wheels): each entry of column ``j``
    subtracts the dot product of its row of ``L`` with the column above
    it, so that rounding -- and the noise left where the exact result is
    0 -- is the same as there for most small real matrices (measured: all
    random 4x4 float64 ones; complex arithmetic rounds differently).
    (Rows are swapped whole when the pivot is found: moving values is
    exact, so that is the same as OpenBLAS swapping later columns later.)
    The right-hand sides ``rhs`` (``(m, k, width)``, ``k`` may be 0) are
    treated as more columns, which leaves ``L^-1 P^T b`` there.

    Multipliers are ``lu[i, k] * (1 / pivot)``, except for pivots below the
    smallest normal number, whose reciprocal would overflow: those divide,
    as ``xGETF2`` does.  ``work`` is scratch from :func:`getrf_work`.
    """
    best, tiny_pivot, scale, swapping, dot = work
    tiny = np.finfo(lu.dtype).tiny
    one_at_a_time = np.iscomplexobj(lu)
    p = min(m, n)
    for c in range(width):
        info[c] = 0
    for j in range(n + rhs.shape[1]):
        col = lu[:, j] if j < n else rhs[:, j - n]
        # Below the diagonal each entry takes off the dot product of its row
        # of L with the column above, summed first (gemv).  Above it -- U, or
        # L^-1 b -- the same for real dtypes (dot), one product at a time for
        # complex ones (trsv).
        above = min(j, p)
        for i in range(m):
            for c in range(width):
                dot[i, c] = 0
        for k in range(above):
            if one_at_a_time:
                for i in range(k + 1, above):
                    for c in range(width):
                        col[i, c] -= lu[i, k, c] * col[k, c]
            else:
                for c in range(width):
                    col[k, c] -= dot[k, c]
            for i in range(above if one_at_a_time else k + 1, m):
                for c in range(width):
                    dot[i, c] += lu[i, k, c] * col[k, c]
        for i in range(above, m):
            for c in range(width):
                col[i, c] -= dot[i, c]
        if j >= p:
            continue
        for c in range(width):
            piv[j, c] = j
            best[c] = _pivot_size(col[j, c])
        for i in range(j + 1, m):
            for c in range(width):
                size = _pivot_size(col[i, c])
                larger = size > best[c]
                best[c] = size if larger else best[c]
                piv[j, c] = i if larger else piv[j, c]
        for s in range(_list_swaps(piv[j], j, width, swapping)):
            c = swapping[s]
            r = piv[j, c]
            for k in range(n):  # whole rows: the later columns get it now, not when reached
                lu[j, k, c], lu[r, k, c] = lu[r, k, c], lu[j, k, c]
            for k in range(rhs.shape[1]):
                rhs[j, k, c], rhs[r, k, c] = rhs[r, k, c], rhs[j, k, c]
        any_tiny = False
        for c in range(width):
            pivot = col[j, c]
            zero = pivot == 0
            info[c] = j + 1 if zero and info[c] == 0 else info[c]
            tiny_pivot[c] = not zero and abs(pivot) < tiny
            any_tiny |= tiny_pivot[c] != 0
            scale[c] = 1 if zero or tiny_pivot[c] else 1 / pivot
        for i in range(j + 1, m):
            for c in range(width):
                col[i, c] *= scale[c]
        if any_tiny:
            for c in range(width):
                if tiny_pivot[c]:
                    for i in range(j + 1, m):
                        col[i, c] /= col[j, c]


def emit_getrf(src, e, n, columns, swapped=None):
    """:func:`getrf_block` on one real ``n x n`` matrix per lane, written out for a
    straight-line kernel (:mod:`._unrolled`): its operations in its order, so the
    factors and the transformed right-hand sides are the same to the bit.

    ``e[i, c]`` names entry ``(i, c)`` of ``[a | b]`` (``columns`` columns, the
    right-hand sides after the matrix) and is updated to the factors (``L`` below
    the diagonal, ``U`` on and above it) and ``L^-1 P^T b``.  Each lane takes its
    own pivots: a row swap is a select between the rows the pivot may come from, in the
    first ``swapped`` columns (all by default).  Entries named ``ZERO`` or ``ONE`` (an
    identity the swaps leave in place) skip their products: the same results wherever
    the factors are finite.  Returns the names of each step's pivot row (0-based, an
    integer) and of its flag that the pivot is exactly zero.  Needs ``TINY`` (the
    dtype's smallest normal).
    """
    pivots, zero_pivots = [], []
    for j in range(columns):
        above = min(j, n)
        dot = {}
        for k in range(above):  # the dot products of L's rows with the column above
            if k in dot or e[k, j] not in ("ZERO", "ONE"):
                e[k, j] = src.let("x", f"{e[k, j]} - {dot.get(k, 'ZERO')}")
            if e[k, j] == "ZERO":
                continue
            for i in range(k + 1, n):
                term = e[i, k] if e[k, j] == "ONE" else f"{e[i, k]} * {e[k, j]}"
                dot[i] = src.let("dot", f"{dot.get(i, 'ZERO')} + {term}")
        for i in range(above, n):
            e[i, j] = src.let("x", f"{e[i, j]} - {dot.get(i, 'ZERO')}")
        if j >= n:
            continue
        # The first entry of largest magnitude on or below the diagonal, from the bottom:
        # ``chosen[i]``, that row i > j is the pivot row.
        best = src.let("best", f"abs({e[j, j]})")
        larger = {}
        for i in range(j + 1, n):
            size = src.let("size", f"abs({e[i, j]})")
            larger[i] = src.let("larger", f"{size} > {best}")
            best = src.let("best", f"select({larger[i]}, {size}, {best})")
        chosen, taken, pivot_row = {}, "False", f"{j}"
        for i in range(n - 1, j, -1):
            chosen[i] = src.let("chosen", f"{larger[i]} & (not {taken})")
            taken = src.let("taken", f"{taken} | {larger[i]}")
            pivot_row = src.let("pivot_row", f"select({chosen[i]}, {i}, {pivot_row})")
        pivots.append(pivot_row)
        for c in range(columns if swapped is None else swapped):  # as getrf_block swaps
            top = e[j, c]
            new_top = top
            for i in range(j + 1, n):
                new_top = src.let("x", f"select({chosen[i]}, {e[i, c]}, {new_top})")
                e[i, c] = src.let("x", f"select({chosen[i]}, {top}, {e[i, c]})")
            e[j, c] = new_top
        pivot = e[j, j]
        zero = src.let("zero", f"{pivot} == 0")
        tiny = src.let("tiny", f"(not {zero}) & (abs({pivot}) < TINY)")
        scale = src.let("scale", f"select({zero} | {tiny}, ONE, ONE / {pivot})")
        for i in range(j + 1, n):
            e[i, j] = src.let("x", f"select({tiny}, {e[i, j]} / {pivot}, {e[i, j]} * {scale})")
        zero_pivots.append(zero)
    return pivots, zero_pivots


def emit_upper_solve(src, e, n, columns):
    """``x = U^-1 x`` on the right-hand-side columns of :func:`emit_getrf`'s entries, in
    :func:`~.triangular.trsm_block`'s order (a zero on the diagonal gives infs/NaNs)."""
    emit_triangular_solve(src, lambda i, j: e[i, j], e, n, range(n, columns), forward=False)


def emit_lu_load(src, n, k):
    """Copy matrix ``first + l`` of ``a`` (and ``k`` columns of ``b``) into rows ``0 ..
    n * n + n * k - 1`` of ``work``, row by row."""
    emit_read(src, "a", n, n, 0)
    emit_read(src, "b", n, k, n * n)


def lu_entries(src, n, k, identity=False):
    """The entries of ``[a | b]`` of lane ``l`` as :func:`emit_lu_load` left them (or
    ``[a | I]`` when ``identity``), for :func:`emit_getrf`."""
    e = loaded_entries(src, n, n, 0, "a")
    b = {} if identity else loaded_entries(src, n, k, n * n, "b")
    for i in range(n):
        for c in range(k):
            e[i, n + c] = ("ONE" if i == c else "ZERO") if identity else b[i, c]
    return e


def emit_lu_kernel(
    src, dtype, arguments, n, k, rows, lane, finish, identity=False, setup=(), swap_identity=True
):
    """The skeleton every straight-line kernel of the LU family shares.

    ``def KERNEL(start, stop, <arguments>)`` (``a`` first) over blocks of
    ``unrolled_lanes(dtype, n)`` matrices: each block read into ``work`` (``rows`` rows;
    ``[a | I]`` when ``identity``, the row swaps moving ``I`` too if ``swap_identity``),
    factored by :func:`emit_getrf` in one loop across the lanes, whose rest ``lane(e,
    pivots, zero_pivots)`` writes, then one loop over the block's matrices (``first +
    l``) whose body ``finish()`` writes.  ``setup``: source lines before the blocks.
    """
    swapped = n if identity and not swap_identity else None

    def factored():
        e = lu_entries(src, n, k, identity)
        lane(e, *emit_getrf(src, e, n, n + k, swapped))

    emit_lane_kernel(
        src,
        arguments,
        unrolled_lanes(dtype, n),
        rows,
        lambda: emit_lu_load(src, n, 0 if identity else k),
        factored,
        finish,
        setup,
    )


# Real matrices solve (also with their factors) and take determinants as straight-line code
# across lanes (:mod:`._unrolled`) while ``[a | b]`` has at most this many entries: the code, and
# its compile time, grow like ``n^2 (n + k)``; at 72 (8x8 with one right-hand side) it compiles in
# about 4 s, 1.5x the looped kernel.  Measured 2.5-3.5x the looped kernel's speed on 50 000-100 000
# matrices.  (Inverses go up to 8x8, their identity's zeros costing little: :mod:`.inverse`.)
# Complex matrices stay on the looped kernels: written out, each pivot's modulus is a ``hypot``
# call and each division a complex one per lane, which LLVM does not vectorise (complex128
# 4x4 solves ran 1.7x slower, 8x8 2x; Cholesky's solves with complex factors no faster).
STRAIGHT_LINE_ENTRIES = 72


def straight_line(pattern, columns):
    """Whether ``pattern``'s real ``n x n`` matrices with ``columns`` columns in all (the
    matrix's and the right-hand sides') get the LU family's straight-line kernels."""
    n = pattern.dim("n")
    return (
        0 < n * columns <= STRAIGHT_LINE_ENTRIES and static_size(n) and pattern.np_dtype.kind == "f"
    )


@memo("cpu-straight-line-gesv", maxsize=256)
def _unrolled_gesv_kernel(n, k, dtype, condition):
    """:func:`_gesv_kernel` as straight-line code for real ``n x n`` matrices and ``k``
    right-hand sides: the same operations in the same order (:func:`emit_getrf`), so
    the same solutions to the bit."""
    x_at, info_at = n * n, n * n + n * k
    decided_at = info_at + 1
    src = Source(complex_values=False)

    def entry_of_a(i, j):  # in the work array until the lane stashes the factors there
        return f"work[{i * n + j}, l]"

    def lane(e, pivots, zero_pivots):
        emit_upper_solve(src, e, n, n + k)
        if condition:  # the estimate's cheap bound here, across the lanes; the factors
            norm = emit_one_norm(src, entry_of_a, n)
            emit_condition_flag(src, norm, lambda i, j: e[i, j], n, LU, decided_at)
            emit_stash(src, [e[i, j] for i in range(n) for j in range(n)], 0)
        emit_stash(src, [e[i, n + c] for i in range(n) for c in range(k)], x_at)
        emit_stash(src, [emit_first_zero(src, zero_pivots)], info_at)

    def finish():
        emit_unstash(src, "x", matrix_indices(n, k), x_at)
        emit_unstash(src, "info", [""], info_at, "int")
        if condition:  # where the bound left it in doubt, the estimate as the looped kernel
            emit_condition_check(src, decided_at, n, f"one_norm(a[first + l], {n})", "w[:, :, l]")

    setup = ()
    if condition:  # the factors as blocks, and scratch for the estimate
        lanes = unrolled_lanes(dtype, n)
        setup = (
            f"w = work[:{n * n}].reshape(({n}, {n}, {lanes}))",
            "vector, signs = condition_work(a)",
        )
    rows = decided_at + 1 if condition else info_at + 1
    emit_lu_kernel(src, dtype, "a, b, x, info", n, k, rows, lane, finish, setup=setup)
    name = f"gesv_{n}x{k}_{dtype.name}{'_condition' if condition else ''}"
    return compile_kernel(name, src.text(), dtype, extra=straight_line_names(dtype))


def straight_line_names(dtype):
    """The names the LU family's straight-line kernels use beyond :func:`compile_kernel`'s."""
    return {"TINY": np.finfo(dtype).tiny, **condition_names(dtype, LU)}


@numba.njit(inline="always")
def _swap_rows_block(x, piv, n, width, reverse, swapping):
    """Swap row ``i`` of the block ``x`` with row ``piv[i, m]`` of every matrix ``m``,
    for ``i = 0 .. n - 1`` (``n - 1 .. 0`` when ``reverse``)."""
    for step in range(n):
        i = n - 1 - step if reverse else step
        for s in range(_list_swaps(piv[i], i, width, swapping)):
            m = swapping[s]
            p = piv[i, m]
            for c in range(x.shape[1]):
                x[i, c, m], x[p, c, m] = x[p, c, m], x[i, c, m]


@numba.njit(inline="always")
def getrs_block(lu, piv, x, n, width, trans, swapping):
    """Solve ``op(a) x = b`` in place of the block ``x`` from :func:`getrf_block`'s factors.

    ``piv`` is ``(n, width)``, 0-based.  ``lu`` is overwritten with ``op(lu)``.
    A zero on ``U``'s diagonal gives infs/NaNs, no check.  ``swapping`` is
    integer scratch of ``width`` entries.
    """
    if trans == 0:  # a = P L U: x = U^-1 L^-1 P^T b
        _swap_rows_block(x, piv, n, width, False, swapping)
    else:  # op(a) = op(U) op(L) P^T: x = P op(L)^-1 op(U)^-1 b
        op_block(lu, n, width, trans == 2)
    # Now the lower triangle holds L (unit) or op(U), the upper one U or op(L) (unit).
    trsm_block(lu, x, n, width, True, trans == 0)
    trsm_block(lu, x, n, width, False, trans != 0)
    if trans != 0:
        _swap_rows_block(x, piv, n, width, True, swapping)


@batch_kernel(sizes=("m", "n"))
def _getrf_kernel(start, stop, m, n, a, lu, piv, info):
    p = min(m, n)
    capacity = block_width(max(m, n), stop - start)
    block = np.empty((m, n, capacity), a.dtype)
    no_rhs = np.empty((m, 0, capacity), a.dtype)
    piv_block = np.empty((p, capacity), np.int32)
    work = getrf_work(block)
    for first in range(start, stop, capacity):
        width = min(capacity, stop - first)
        load(a, first, width, block)
        getrf_block(block, no_rhs, m, n, width, piv_block, info[first : first + width], work)
        store(block, lu, first, width)
        store(piv_block.reshape((p, 1, capacity)), piv, first, width)


@memo("cpu-straight-line-getrf", maxsize=256)
def _unrolled_getrf_kernel(n, dtype):
    """:func:`_getrf_kernel` as straight-line code for real ``n x n`` matrices: the same
    operations in the same order, so the same factors and pivots to the bit."""
    piv_at, info_at = n * n, n * n + n
    src = Source(complex_values=False)

    def lane(e, pivots, zero_pivots):
        emit_stash(src, [e[i, j] for i in range(n) for j in range(n)], 0)
        emit_stash(src, pivots, piv_at)
        emit_stash(src, [emit_first_zero(src, zero_pivots)], info_at)

    def finish():
        emit_unstash(src, "lu", matrix_indices(n, n), 0)
        emit_unstash(src, "piv", matrix_indices(n, 1), piv_at, "int")
        emit_unstash(src, "info", [""], info_at, "int")

    emit_lu_kernel(src, dtype, "a, lu, piv, info", n, 0, info_at + 1, lane, finish)
    return compile_kernel(f"getrf_{n}_{dtype.name}", src.text(), dtype, straight_line_names(dtype))


def getrf(pattern):
    """LU factorisation with partial pivoting of ``m x n`` matrices; outputs ``lu``,
    ``piv`` (``min(m, n)`` 0-based row indices).  The sizes are read from the
    operand (a pattern with sizes 0 runs every size)."""
    m, n = pattern.dim("m"), pattern.dim("n")
    dtype = pattern.np_dtype
    if m == n and straight_line(pattern, n):
        kernel = Kernel(_unrolled_getrf_kernel, (n, dtype))
    else:
        kernel = _getrf_kernel.sized(m, n)

    def run(a):
        batch, m, n = a.shape
        p = min(m, n)
        info = np.zeros(batch, np.int32)
        if not p:  # nothing to factor
            return a.astype(dtype, copy=True), np.empty((batch, 0), np.int32), info
        lu = np.empty(a.shape, dtype)
        piv = np.empty((batch, p, 1), np.int32)  # (p, 1) per matrix, like the others
        launch(kernel, batch, m * n * p, a, lu, piv, info)
        return lu, piv[..., 0], info

    return run


@batch_kernel
def _getrs_kernel(start, stop, n, lu, piv, b, x, info, trans):
    capacity = block_width(n, stop - start)
    block = np.empty((n, n, capacity), lu.dtype)
    rhs = np.empty((n, b.shape[2], capacity), b.dtype)
    piv_block = np.empty((n, capacity), np.int32)
    swapping = np.empty(capacity, np.int64)
    for first in range(start, stop, capacity):
        width = min(capacity, stop - first)
        load(lu, first, width, block)
        load(piv, first, width, piv_block.reshape((n, 1, capacity)))
        load(b, first, width, rhs)
        zero_diagonal_block(block, n, width, info[first : first + width])
        getrs_block(block, piv_block, rhs, n, width, trans, swapping)
        store(rhs, x, first, width)


def emit_row_swaps(src, x, pivots, n, columns, reverse):
    """:func:`_swap_rows_block` on one real matrix per lane, written out: row ``i`` of
    the right-hand sides ``x[i, c]`` (names, ``c`` in ``columns``) swapped with row
    ``pivots[i]`` (names of each lane's 0-based pivot row, any row) for ``i = 0 .. n -
    1`` (``n - 1 .. 0`` when ``reverse``), each swap a select per row."""
    for step in range(n):
        i = n - 1 - step if reverse else step
        chosen = {r: src.let("chosen", f"{pivots[i]} == {r}") for r in range(n) if r != i}
        for c in columns:
            top = new_top = x[i, c]
            for r, flag in chosen.items():
                new_top = src.let("x", f"select({flag}, {x[r, c]}, {new_top})")
                x[r, c] = src.let("x", f"select({flag}, {top}, {x[r, c]})")
            x[i, c] = new_top


@memo("cpu-straight-line-getrs", maxsize=256)
def _unrolled_getrs_kernel(n, k, dtype, trans):
    """:func:`_getrs_kernel` as straight-line code for real ``n x n`` factors and ``k``
    right-hand sides: :func:`getrs_block`'s row swaps and triangular solves in its order,
    so the same solutions to the bit; ``info`` names the first zero on ``U``'s diagonal.
    ``trans`` is baked in (the kernel's own argument is ignored)."""
    piv_at, x_at = n * n, n * n + n
    info_at = x_at + n * k
    src = Source(complex_values=False)

    def load():
        emit_read(src, "lu", n, n, 0)
        emit_read(src, "piv", n, 1, piv_at)
        emit_read(src, "b", n, k, x_at)

    def lane():
        f = loaded_entries(src, n, n, 0, "f")
        pivots = [p for p in loaded_entries(src, n, 1, piv_at, "p").values()]
        x = loaded_entries(src, n, k, x_at, "b")
        columns = range(k)
        if trans == 0:  # a = P L U: x = U^-1 L^-1 P^T b
            emit_row_swaps(src, x, pivots, n, columns, reverse=False)
            emit_triangular_solve(src, lambda i, j: f[i, j], x, n, columns, True, True)
            emit_triangular_solve(src, lambda i, j: f[i, j], x, n, columns, False)
        else:  # op(a) = op(U) op(L) P^T: x = P op(L)^-1 op(U)^-1 b (real: op is ^T)
            emit_triangular_solve(src, lambda i, j: f[j, i], x, n, columns, True)
            emit_triangular_solve(src, lambda i, j: f[j, i], x, n, columns, False, True)
            emit_row_swaps(src, x, pivots, n, columns, reverse=True)
        emit_stash(src, [x[i, c] for i in range(n) for c in columns], x_at)
        zeros = [src.let("zero", f"{f[i, i]} == 0") for i in range(n)]
        emit_stash(src, [emit_first_zero(src, zeros)], info_at)

    def finish():
        emit_unstash(src, "x", matrix_indices(n, k), x_at)
        emit_unstash(src, "info", [""], info_at, "int")

    lanes = unrolled_lanes(dtype, n)
    emit_lane_kernel(src, "lu, piv, b, x, info, trans", lanes, info_at + 1, load, lane, finish)
    return compile_kernel(f"getrs_{n}x{k}_{dtype.name}_{trans}", src.text(), dtype)


def getrs(pattern):
    """Solve with LU factors and 0-based pivots; option ``trans`` (0, 1, 2).  Real
    factors with right-hand sides ``[lu | b]`` of at most :data:`STRAIGHT_LINE_ENTRIES`
    run as straight-line code across lanes (:func:`_unrolled_getrs_kernel`)."""
    n, k, dtype = pattern.dim("n"), pattern.dim("k"), pattern.np_dtype
    trans = pattern.option("trans")
    if k and straight_line(pattern, n + k):
        kernel = Kernel(_unrolled_getrs_kernel, (n, k, dtype, trans))
    else:
        kernel = _getrs_kernel.sized(n)

    def run(lu, piv, b):
        x = np.empty(b.shape, dtype)
        info = np.empty(lu.shape[0], np.int32)
        launch(
            kernel,
            lu.shape[0],
            lu.shape[1] ** 2 * b.shape[2],
            lu,
            piv[..., None],
            b,
            x,
            info,
            trans,
        )  # pivots as (n, 1) per matrix, like the others
        return x, info

    return run


@batch_kernel(options=("condition",))
def _gesv_kernel(start, stop, n, a, b, x, info, condition):
    capacity = block_width(n, stop - start)
    block = np.empty((n, n, capacity), a.dtype)
    rhs = np.empty((n, b.shape[2], capacity), b.dtype)
    piv_block = np.empty((n, capacity), np.int32)
    work = getrf_work(block)
    vector, signs = condition_work(a)
    for first in range(start, stop, capacity):
        width = min(capacity, stop - first)
        load(a, first, width, block)
        load(b, first, width, rhs)
        # Factoring [a | b] leaves L^-1 P^T b in rhs: only U is left to solve.
        getrf_block(block, rhs, n, n, width, piv_block, info[first : first + width], work)
        trsm_block(block, rhs, n, width, False, False)
        store(rhs, x, first, width)
        for c in range(width if condition and b.shape[2] > 0 else 0):  # SciPy: not without b
            if info[first + c] == 0:
                norm = one_norm(a[first + c], n)
                ill = flagged_if(condition, block[:, :, c], LU, norm, vector, signs)
                info[first + c] = n + 1 if ill else 0


def gesv(pattern):
    """Solve ``a x = b`` by LU factorisation with partial pivoting; with option
    ``condition``, ``info = n + 1`` marks a matrix whose reciprocal condition number
    is below the machine epsilon (SciPy's warning; ``xGESVX``'s code)."""
    n, k, dtype = pattern.dim("n"), pattern.dim("k"), pattern.np_dtype
    condition = pattern.option("condition")
    if k and straight_line(pattern, n + k):
        kernel = Kernel(_unrolled_gesv_kernel, (n, k, dtype, condition))
    else:
        kernel = _gesv_kernel.sized(n, condition=condition)

    def run(a, b):
        x = np.empty(b.shape, dtype)
        info = np.empty(a.shape[0], np.int32)
        launch(kernel, a.shape[0], a.shape[1] ** 3 + a.shape[1] ** 2 * b.shape[2], a, b, x, info)
        return x, info

    return run


# --- NumPy's and SciPy's LAPACK -------------------------------------------------------


def getrf_per_matrix(pattern):
    """SciPy's ``lu_factor``: LAPACK ``xGETRF`` (0-based pivots)."""
    dtype = pattern.np_dtype

    def run(a):
        if not min(a.shape):
            return a.copy(), np.empty(0, np.int32), 0
        return lapack_function("getrf", dtype)(a)

    return run


def getrs_per_matrix(pattern):
    """SciPy's ``lu_solve``: LAPACK ``xGETRS``; ``info`` names a zero on the diagonal of
    ``U`` (LAPACK divides by it)."""
    trans, dtype = pattern.option("trans"), pattern.np_dtype

    def run(lu, piv, b):
        x = lapack_function("getrs", dtype)(lu, piv, b, trans=trans)[0] if b.size else b.copy()
        return x, first_zero_diagonal(lu)

    return run


def gesv_per_matrix(pattern):
    """LAPACK ``xGESV``; ``info`` as ``xGETRF``'s (its verdict alone when ``b`` has no
    columns).  With option ``condition``, ``xGECON`` on its factors as SciPy's
    ``solve``, and ``info = n + 1`` where the matrix is singular to working
    precision."""
    dtype, condition = pattern.np_dtype, pattern.option("condition")
    eps = np.finfo(dtype).eps

    def run(a, b):
        if not a.size:
            return b.copy(), 0
        if not b.shape[1]:
            return b.copy(), lapack_function("getrf", dtype)(a)[2]
        lu, _, x, info = lapack_function("gesv", dtype)(a, b)
        if info or not condition:
            return x, info
        norm = lapack_function("lange", dtype)("1", a)
        rcond = lapack_function("gecon", dtype)(lu, norm)[0]
        return x, a.shape[0] + 1 if not rcond >= eps else 0

    return run


def gesv_numpy(pattern):
    """``numpy.linalg.solve`` (not without columns: it would not see a singular ``a``;
    not with option ``condition``: it estimates no condition number)."""
    if not pattern.dim("k") or pattern.option("condition"):
        return None
    return numpy_linalg("solve", pattern.np_dtype)
