"""Cholesky family on the CPU: ``potrf`` (factor), ``potrs`` (solve) and ``posv`` (both in
one kernel, for ``solve(assume_a='pos')``).

Each builder takes a :class:`~blocksolve._pattern.CallPattern` and returns
a runner ``run(*operands) -> (*outputs, info)`` over flattened, C-contiguous
``(batch, *core)`` operands.  The numba kernel inside is specialised on the
matrix size and the options (and, through numba's dispatch, the dtype).
"""

from __future__ import annotations

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

from ..._cache import memo
from ..._compat.numpy import numpy_linalg
from .._compiled import Kernel, batch_kernel
from .._jit import launch, static_size
from ._blocks import block_width, load, store
from ._condition import (
    CHOLESKY_LOWER,
    CHOLESKY_UPPER,
    condition_names,
    condition_work,
    emit_condition_check,
    emit_condition_flag,
    emit_one_norm,
    hermitian_one_norm,
    singular_to_working_precision,
)
from ._reference import cholesky_info, first_zero_diagonal, lapack_function, pivots_positive
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
    unrolled,
    unrolled_lanes,
    unrolled_solve,
)
from .triangular import divide, trsm_block, zero_diagonal_block


@numba.njit(forceinline=True, error_model="numpy")
def _abs2(z):
    return z.real * z.real + z.imag * z.imag


@numba.njit(forceinline=True, error_model="numpy")
def _copy(src, dst):
    """``dst[...] = src`` for matrices of one shape.  A loop: numba's slice assignment
    compiles its error message's string formatting, seconds in every new process."""
    for i in range(src.shape[0]):
        for j in range(src.shape[1]):
            dst[i, j] = src[i, j]


@numba.njit(forceinline=True, error_model="numpy")
def _unfactored(a, c, n, first, clean):
    """Columns from ``first`` on as ``a`` has them (zeros in the upper triangle when
    ``clean``), as LAPACK leaves a matrix it could not factor."""
    for j in range(first, n):
        for i in range(n):
            c[i, j] = a[i, j] if i >= j or not clean else 0


@numba.njit(forceinline=True, error_model="numpy")
def _potrf(a, c, n, clean):
    """``c = L`` with ``a = L L^H`` from the lower triangle of ``a``; return info.

    Written for the lower triangle only: on the transposed views ``a.T`` and ``c.T``
    the same operations read the upper triangle of ``a`` and write ``U = L^H`` (for a
    Hermitian ``a`` the upper triangle read as the lower one is ``conj(a)``, whose
    factor is ``conj(L)``), to the bit.  On failure at column ``j`` the columns from
    ``j`` on hold ``a``'s entries, as LAPACK leaves them.
    """
    for j in range(n):
        d = a[j, j].real
        for k in range(j):
            d -= _abs2(c[j, k])
        if not d > 0:  # also catches NaN
            _unfactored(a, c, n, j, clean)
            return j + 1
        d = np.sqrt(d)
        c[j, j] = d
        r = np.reciprocal(d)  # in the real dtype (1 / d: float64), as LAPACK
        for i in range(j + 1, n):
            t = a[i, j]
            for k in range(j):
                t -= c[i, k] * np.conj(c[j, k])
            c[i, j] = t * r
        for i in range(j):
            c[i, j] = 0 if clean else a[i, j]
    return 0


@numba.njit(forceinline=True, error_model="numpy")
def _potrf_pair(a0, c0, a1, c1, n, clean):
    """:func:`_potrf` of two matrices in lockstep; ``False`` if either fails.

    The two square-root/division chains are independent, so the CPU overlaps
    them (a single matrix waits on its own chain).  On failure the caller
    redoes both matrices one at a time for LAPACK's partial result and info.
    """
    for j in range(n):
        d0 = a0[j, j].real
        d1 = a1[j, j].real
        for k in range(j):
            d0 -= _abs2(c0[j, k])
            d1 -= _abs2(c1[j, k])
        if not (d0 > 0 and d1 > 0):
            return False
        d0 = np.sqrt(d0)
        d1 = np.sqrt(d1)
        c0[j, j] = d0
        c1[j, j] = d1
        r0 = np.reciprocal(d0)
        r1 = np.reciprocal(d1)
        for i in range(j + 1, n):
            t0 = a0[i, j]
            t1 = a1[i, j]
            for k in range(j):
                t0 -= c0[i, k] * np.conj(c0[j, k])
                t1 -= c1[i, k] * np.conj(c1[j, k])
            c0[i, j] = t0 * r0
            c1[i, j] = t1 * r1
        for i in range(j):
            c0[i, j] = 0 if clean else a0[i, j]
            c1[i, j] = 0 if clean else a1[i, j]
    return True


@numba.njit(forceinline=True, error_model="numpy")
def _potrf_one(a, c, n, lower, clean):
    return _potrf(a, c, n, clean) if lower else _potrf(a.T, c.T, n, clean)


# From this size on, factoring two matrices in lockstep pays (measured:
# n=8 1.5x faster; n=4 slower, its chains are already short).
_PAIR_FROM = 6


@numba.njit(forceinline=True, error_model="numpy")
def potrf_range(a, c, info, start, stop, n, lower, clean):
    """Factor ``a[s]`` into ``c[s]`` for ``s`` in ``[start, stop)``; ``info[s]`` as LAPACK."""
    b = start
    while n >= _PAIR_FROM and b + 1 < stop:
        if lower:
            ok = _potrf_pair(a[b], c[b], a[b + 1], c[b + 1], n, clean)
        else:
            ok = _potrf_pair(a[b].T, c[b].T, a[b + 1].T, c[b + 1].T, n, clean)
        if ok:
            info[b] = info[b + 1] = 0
        else:  # redo both alone: LAPACK's partial result and info
            info[b] = _potrf_one(a[b], c[b], n, lower, clean)
            info[b + 1] = _potrf_one(a[b + 1], c[b + 1], n, lower, clean)
        b += 2
    for s in range(b, stop):
        info[s] = _potrf_one(a[s], c[s], n, lower, clean)


# Factoring across interleaved blocks (:mod:`._blocks`) pays for real matrices from this
# many of this size on: each loop across a block's matrices is a vector loop, and the
# square roots and divisions of different matrices overlap.  4x4 matrices gain nothing
# over one at a time (the copies into and out of the block cost what it saves), complex
# ones lose (16x16 complex128: 1.4x slower; LLVM does not vectorise complex products).
_FACTOR_BLOCKS_FROM = 8
_FACTOR_BLOCKS_FROM_SIZE = 6


def _blocks_pay(a, count):
    """Whether factoring ``count`` matrices of ``a`` across blocks pays (their size aside)."""


@overload(_blocks_pay)
def _blocks_pay_impl(a, count):
    if isinstance(a.dtype, types.Complex):
        return lambda a, count: False
    return lambda a, count: count >= _FACTOR_BLOCKS_FROM


@numba.njit(forceinline=True, error_model="numpy")
def _load_triangle(a, first, width, block, lower):
    """``block[i, j, m]`` for ``i >= j``: the triangle of ``a[first + m]`` that ``lower``
    selects, read as a lower one (the upper triangle transposed, as :func:`_potrf` reads
    it through ``a.T``)."""
    n = block.shape[0]
    for m in range(width):
        for i in range(n):
            for j in range(i + 1):
                block[i, j, m] = a[first + m, i, j] if lower else a[first + m, j, i]


@numba.njit(forceinline=True, error_model="numpy")
def potrf_block(t, n, width, d, bad):
    """Overwrite the lower triangle of each of the first ``width`` matrices ``A`` of the
    block ``t`` with its Cholesky factor ``L``, ``A = L L^H``; ``bad[m]`` marks a matrix
    that is not positive definite (its triangle is then garbage).

    :func:`_potrf`'s operations in its order, one loop across the matrices each, so the
    factors are the same to the bit.  ``d`` is scratch of the real dtype.
    """
    for m in range(width):
        bad[m] = False
    for j in range(n):
        for m in range(width):
            d[m] = t[j, j, m].real
        for k in range(j):
            for m in range(width):
                d[m] -= _abs2(t[j, k, m])
        for m in range(width):
            bad[m] = bad[m] or not d[m] > 0  # also catches NaN
            d[m] = np.sqrt(d[m])
            t[j, j, m] = d[m]
            d[m] = np.reciprocal(d[m])
        for i in range(j + 1, n):
            for k in range(j):
                for m in range(width):
                    t[i, j, m] -= t[i, k, m] * np.conj(t[j, k, m])
            for m in range(width):
                t[i, j, m] = t[i, j, m] * d[m]


@numba.njit(forceinline=True, error_model="numpy")
def _store_factor(t, a, c, first, width, lower, clean):
    """``c[first + m]``: the factor in the block ``t`` in the triangle ``lower`` selects
    (transposed back for the upper one), the other triangle zero when ``clean``, else as
    ``a`` has it."""
    n = t.shape[0]
    for m in range(width):
        for r in range(n):
            for s in range(n):
                if r >= s if lower else r <= s:
                    c[first + m, r, s] = t[r, s, m] if lower else t[s, r, m]
                else:
                    c[first + m, r, s] = 0 if clean else a[first + m, r, s]


@batch_kernel(options=("lower", "clean"))
def _potrf_kernel(start, stop, n, a, c, info, lower, clean):
    # A constant size below the threshold: numba drops the block path before compiling it.
    if n < _FACTOR_BLOCKS_FROM_SIZE or not _blocks_pay(a, stop - start):
        potrf_range(a, c, info, start, stop, n, lower, clean)
        return
    capacity = block_width(n, stop - start)
    block = np.empty((n, n, capacity), a.dtype)
    d = np.empty(capacity, a.real.dtype)
    bad = np.empty(capacity, np.bool_)
    for first in range(start, stop, capacity):
        width = min(capacity, stop - first)
        _load_triangle(a, first, width, block, lower)
        potrf_block(block, n, width, d, bad)
        _store_factor(block, a, c, first, width, lower, clean)
        for m in range(width):  # redone alone: LAPACK's partial result and info
            s = first + m
            info[s] = _potrf_one(a[s], c[s], n, lower, clean) if bad[m] else 0


# Matrices from this size up to 8x8 factor as straight-line code across lanes
# (:func:`_unrolled_potrf_kernel`): 1.2x (3x3) to 2x (8x8) the speed of the kernels below
# on 50 000-100 000 real matrices, 1.2x to 2.8x complex ones; 2x2 ran 10 % (float64) to 30 %
# (complex128) slower (the copies into and out of the lanes cost more than they save).
_STRAIGHT_LINE_FROM = 3


def emit_potrf(src, entry, n):
    """:func:`_potrf` on one matrix per lane, written out for a straight-line kernel: its
    operations in its order, so the same factor to the bit (complex ones too, on ``src``'s
    complex names: the diagonal's real part, the products with conjugates).

    ``entry(i, j)`` is the name (or expression) of entry ``(i, j)``, ``i >= j``, of the
    lower triangle read.  Returns ``(factor, positive)``: the names of ``L``'s entries by
    ``(i, j)``, and of each step's flag that its pivot is positive (after the first step
    that is not, the entries are garbage).
    """
    factor, positive = {}, []
    for j in range(n):
        diagonal = f"{entry(j, j)}.real" if src.complex else entry(j, j)
        terms = [diagonal] + [src.abs2(factor[j, k]) for k in range(j)]
        pivot = src.let("d", " - ".join(terms))
        positive.append(src.let("positive", f"{pivot} > 0"))
        factor[j, j] = src.let("l", f"np.sqrt({pivot})")
        inverse = src.let("r", f"REAL_ONE / {factor[j, j]}")
        for i in range(j + 1, n):
            terms = [entry(i, j)]
            terms += [f"{factor[i, k]} * {src.conj(factor[j, k])}" for k in range(j)]
            factor[i, j] = src.let("l", f"({' - '.join(terms)}) * {inverse}")
    return factor, positive


@memo("cpu-straight-line-cholesky", maxsize=256)
def _unrolled_potrf_kernel(n, dtype, lower, clean):
    """:func:`_potrf_kernel` as straight-line code for ``n x n`` matrices.

    Blocks of ``unrolled_lanes(dtype, n)`` matrices: the triangle read goes into the
    rows of a work array, one lane per matrix, and one loop across the lanes
    runs :func:`_potrf`'s operations in its order, written out (so the factors
    are the same to the bit), which LLVM vectorises.  A lane whose matrix is
    not positive definite is redone alone, for LAPACK's partial factor and info.
    """
    triangle = [(i, j) for j in range(n) for i in range(j, n)]  # column by column
    row = {entry: k for k, entry in enumerate(triangle)}
    bad_at = len(triangle)
    lanes = unrolled_lanes(dtype, n)

    def entry(i, j):  # the entry (i, j) of the lower triangle read, in matrix l
        return f"a[first + l, {i}, {j}]" if lower else f"a[first + l, {j}, {i}]"

    src = Source(complex_values=dtype.kind == "c")

    def load():
        for k, (i, j) in enumerate(triangle):
            src(f"work[{k}, l] = {entry(i, j)}")

    def lane():
        factor, positive = emit_potrf(src, lambda i, j: f"work[{row[i, j]}, l]", n)
        emit_stash(src, [factor[i, j] for i, j in triangle], 0)
        emit_stash(src, [f"select({' & '.join(positive)}, ZERO, ONE)"], bad_at)

    def finish():
        for r in range(n):
            for s in range(n):
                i, j = (r, s) if lower else (s, r)
                kept = "0" if clean else f"a[first + l, {r}, {s}]"
                value = f"work[{row[i, j]}, l]" if i >= j else kept
                src(f"c[first + l, {r}, {s}] = {value}")
        src("info[first + l] = 0")
        with src.block(f"if work[{bad_at}, l] != 0:"):
            redo = f"potrf_one(a[first + l], c[first + l], {n}, {lower}, {clean})"
            src(f"info[first + l] = {redo}")

    emit_lane_kernel(src, "a, c, info", lanes, bad_at + 1, load, lane, finish)
    name = f"potrf_{n}_{dtype.name}_{'lower' if lower else 'upper'}{'_clean' if clean else ''}"
    return compile_kernel(name, src.text(), dtype, extra={"potrf_one": _potrf_one})


def potrf(pattern):
    """Cholesky factorisation; options ``lower`` and ``clean`` (zero the other triangle)."""
    lower, clean = pattern.option("lower"), pattern.option("clean")
    n, dtype = pattern.dim("n"), pattern.np_dtype
    if n >= _STRAIGHT_LINE_FROM and unrolled(n, n) and static_size(n):
        kernel = Kernel(_unrolled_potrf_kernel, (n, dtype, lower, clean))
    else:
        kernel = _potrf_kernel.sized(n, lower=lower, clean=clean)

    def run(a):
        c = np.empty(a.shape, dtype)
        info = np.zeros(a.shape[0], np.int32)
        launch(kernel, a.shape[0], a.shape[1] ** 3, a, c, info)
        return c, info

    return run


# Solves across interleaved blocks (:mod:`._blocks`) pay from a few matrices on, up to
# n = 24; beyond, and for fewer matrices, one matrix at a time is faster (its factor stays
# in L1).  Measured on the project's 2-core machine, float64, k = 2: a batch of 1000 8x8
# solves 2.5x faster in blocks, of 1000 32x32 1.4x slower; one 24x24 matrix 1.3x slower.
_BLOCKS_UP_TO = 24
_BLOCKS_FROM = 8


@numba.njit(forceinline=True, error_model="numpy")
def solves_in_blocks(n, count):
    """Whether ``count`` solves with ``n x n`` factors run across blocks of matrices."""
    return n <= _BLOCKS_UP_TO and count >= _BLOCKS_FROM


def _solve_with_factor(conjugate):
    """``solve(t, x, n)``: ``L L^H x = b`` in place of ``x`` with ``L = t``, or with
    ``L = conj(t)`` when ``conjugate`` (the upper factor's ``U^H``, read through
    ``t = c.T``).  Scalar loops, not row expressions (``x[i, :] -= ...``): numba
    allocates a temporary for each of those."""

    @numba.njit(forceinline=True, error_model="numpy")
    def solve(t, x, n):
        for i in range(n):  # L y = b
            for col in range(x.shape[1]):
                v = x[i, col]
                for j in range(i):
                    e = np.conj(t[i, j]) if conjugate else t[i, j]
                    v -= e * x[j, col]
                e = np.conj(t[i, i]) if conjugate else t[i, i]
                x[i, col] = divide(v, e)
        for i in range(n - 1, -1, -1):  # L^H x = y
            for col in range(x.shape[1]):
                v = x[i, col]
                for j in range(i + 1, n):
                    e = t[j, i] if conjugate else np.conj(t[j, i])
                    v -= e * x[j, col]
                e = t[i, i] if conjugate else np.conj(t[i, i])
                x[i, col] = divide(v, e)

    return solve


_potrs_lower = _solve_with_factor(conjugate=False)
_potrs_upper = _solve_with_factor(conjugate=True)


@numba.njit(forceinline=True, error_model="numpy")
def potrs_inplace(c, x, n, lower):
    """Solve ``(L L^H) x = b`` or ``(U^H U) x = b`` in place of ``x``; return info.

    :func:`potrs_block` for one matrix: the same operations in the same order, so
    the results are the same to the bit.  A zero on the diagonal gives infs/NaNs,
    as LAPACK's ``potrs``; ``info`` names it.
    """
    info = 0
    for i in range(n - 1, -1, -1):
        if c[i, i] == 0:
            info = i + 1
    if lower:
        _potrs_lower(c, x, n)
    else:
        _potrs_upper(c.T, x, n)
    return info


@numba.njit(forceinline=True, error_model="numpy")
def potrs_block(t, x, n, width, lower):
    """Solve ``(L L^H) x = b`` or ``(U^H U) x = b`` in place of the block ``x`` with the
    factor in the triangle of the block ``t`` that ``lower`` selects."""
    # Constant flags: no branch left in trsm_block's loops across the block.
    if lower:
        trsm_block(t, x, n, width, True, False, False)  # L y = b
        trsm_block(t, x, n, width, True, False, True)  # L^H x = y
    else:
        trsm_block(t, x, n, width, False, False, True)  # U^H y = b
        trsm_block(t, x, n, width, False, False, False)  # U x = y


@batch_kernel(options=("lower",))
def _potrs_kernel(start, stop, n, c, b, x, info, lower):
    if not solves_in_blocks(n, stop - start):
        for s in range(start, stop):
            _copy(b[s], x[s])
            info[s] = potrs_inplace(c[s], x[s], n, lower)
        return
    capacity = block_width(n, stop - start)
    block = np.empty((n, n, capacity), c.dtype)
    rhs = np.empty((n, b.shape[2], capacity), b.dtype)
    for first in range(start, stop, capacity):
        width = min(capacity, stop - first)
        load(c, first, width, block)
        load(b, first, width, rhs)
        zero_diagonal_block(block, n, width, info[first : first + width])
        potrs_block(block, rhs, n, width, lower)
        store(rhs, x, first, width)


@memo("cpu-straight-line-potrs", maxsize=256)
def _unrolled_potrs_kernel(n, k, dtype, lower):
    """:func:`_potrs_kernel` as straight-line code for real ``n x n`` factors and ``k``
    right-hand sides: :func:`potrs_block`'s operations in its order, so the same solutions
    to the bit; ``info`` names the first zero on the factor's diagonal."""
    lanes = unrolled_lanes(dtype, n)
    triangle = [(i, j) for i in range(n) for j in range(i + 1)]  # of L, row by row
    row = {entry: r for r, entry in enumerate(triangle)}
    x_at = len(triangle)
    info_at = x_at + n * k

    def entry(i, j):  # L[i, j] of matrix l: its lower triangle, or the upper one transposed
        return f"c[first + l, {i}, {j}]" if lower else f"c[first + l, {j}, {i}]"

    src = Source(complex_values=False)

    def load():
        for (i, j), r in row.items():
            src(f"work[{r}, l] = {entry(i, j)}")
        emit_read(src, "b", n, k, x_at)

    def lane():
        f = {(i, j): src.let("f", f"work[{r}, l]") for (i, j), r in row.items()}
        v = loaded_entries(src, n, k, x_at, "b")
        for col in range(k):  # L y = b, then L^H x = y
            emit_triangular_solve(src, lambda i, j: f[i, j], v, n, [col], forward=True)
            emit_triangular_solve(src, lambda i, j: f[j, i], v, n, [col], forward=False)
        emit_stash(src, [v[i, col] for i in range(n) for col in range(k)], x_at)
        zeros = [src.let("zero", f"{f[i, i]} == 0") for i in range(n)]
        emit_stash(src, [emit_first_zero(src, zeros)], info_at)

    def finish():
        emit_unstash(src, "x", matrix_indices(n, k), x_at)
        emit_unstash(src, "info", [""], info_at, "int")

    emit_lane_kernel(src, "c, b, x, info", lanes, info_at + 1, load, lane, finish)
    name = f"potrs_{n}x{k}_{dtype.name}_{'lower' if lower else 'upper'}"
    return compile_kernel(name, src.text(), dtype)


def potrs(pattern):
    """Solve with a Cholesky factor; option ``lower``."""
    n, k, dtype = pattern.dim("n"), pattern.dim("k"), pattern.np_dtype
    lower = pattern.option("lower")
    if unrolled_solve(pattern):
        kernel = Kernel(_unrolled_potrs_kernel, (n, k, dtype, lower))
    else:
        kernel = _potrs_kernel.sized(n, lower=lower)

    def run(c, b):
        x = np.empty(b.shape, dtype)
        info = np.zeros(c.shape[0], np.int32)
        launch(kernel, c.shape[0], c.shape[1] ** 2 * b.shape[2], c, b, x, info)
        return x, info

    return run


# posv: the family's own factorisation (``potrf_range``, two matrices in lockstep from
# n = 6) and solve (across blocks of matrices where that pays) on chunks of the batch whose
# factors stay in cache, so ``a`` and ``b`` are read once and the factors never reach
# memory: the same numbers as ``cho_factor`` followed by ``cho_solve``, in one pass.  A
# matrix that is not positive definite gets its right-hand side back as ``x`` and ``info``
# = the order of the failing leading minor; one singular to working precision (SciPy's
# warning: reciprocal condition number below the machine epsilon, xPOCON's estimate)
# gets its solution and ``info = n + 1``, as LAPACK's xPOSVX.
# Matrices factored before they are solved with one at a time: a few KB of factors.
_CHUNK = 16


@batch_kernel(options=("lower",))
def _posv_kernel(start, stop, n, a, b, x, info, lower):
    blocks = solves_in_blocks(n, stop - start)
    chunk = block_width(n, stop - start) if blocks else _CHUNK
    factors = np.empty((chunk, n, n), a.dtype)
    block = np.empty((n, n, chunk if blocks else 0), a.dtype)
    rhs = np.empty((n, b.shape[2], chunk if blocks else 0), b.dtype)
    vector, signs = condition_work(a)
    kind = CHOLESKY_LOWER if lower else CHOLESKY_UPPER
    for first in range(start, stop, chunk):
        count = min(chunk, stop - first)
        chunk_info = info[first : first + count]
        potrf_range(a[first : first + count], factors, chunk_info, 0, count, n, lower, False)
        if blocks:
            load(factors, 0, count, block)
            load(b, first, count, rhs)
            potrs_block(block, rhs, n, count, lower)
            store(rhs, x, first, count)
        for i in range(count):
            if not blocks:  # one matrix at a time
                _copy(b[first + i], x[first + i])
                if chunk_info[i] == 0:
                    potrs_inplace(factors[i], x[first + i], n, lower)
            elif chunk_info[i]:  # not positive definite: b back
                _copy(b[first + i], x[first + i])
            if chunk_info[i] == 0:
                norm = hermitian_one_norm(a[first + i], n, lower)
                ill = singular_to_working_precision(factors[i], kind, norm, vector, signs)
                chunk_info[i] = n + 1 if ill else 0


@memo("cpu-straight-line-posv", maxsize=256)
def _unrolled_posv_kernel(n, k, dtype, lower):
    """:func:`_posv_kernel` as straight-line code for real ``n x n`` matrices and ``k``
    right-hand sides: :func:`_potrf`'s and :func:`potrs_block`'s operations in their
    order, so the same solutions to the bit; per matrix after the block, as the looped
    kernel, ``b`` back where ``a`` is not positive definite, else the condition estimate
    on the factor where the estimate's cheap bound, computed across the lanes, leaves it
    in doubt (rows of the work array: the triangle read, ``b``, the factor as an ``n x n``
    matrix in the triangle ``lower`` selects, ``x``, info, the bound's verdict)."""
    triangle = [(i, j) for j in range(n) for i in range(j, n)]  # column by column
    row = {entry: r for r, entry in enumerate(triangle)}
    b_at = len(triangle)
    factor_at = b_at + n * k
    x_at = factor_at + n * n
    info_at = x_at + n * k
    decided_at = info_at + 1
    kind = CHOLESKY_LOWER if lower else CHOLESKY_UPPER
    lanes = unrolled_lanes(dtype, n)
    src = Source(complex_values=False)

    def read(i, j):  # a[i, j] in the triangle lower selects: the work row it was read into
        return f"work[{row[i, j] if lower else row[j, i]}, l]"

    def load():
        for (i, j), r in row.items():  # the lower triangle read (the upper one transposed)
            src(f"work[{r}, l] = a[first + l, {i if lower else j}, {j if lower else i}]")
        emit_read(src, "b", n, k, b_at)

    def lane():
        factor, positive = emit_potrf(src, lambda i, j: f"work[{row[i, j]}, l]", n)
        x = loaded_entries(src, n, k, b_at, "b")
        for c in range(k):  # L y = b, then L^H x = y
            emit_triangular_solve(src, lambda i, j: factor[i, j], x, n, [c], forward=True)
            emit_triangular_solve(src, lambda i, j: factor[j, i], x, n, [c], forward=False)
        for i, j in triangle:  # L, or U = L^H
            src(f"work[{factor_at + (i * n + j if lower else j * n + i)}, l] = {factor[i, j]}")
        emit_stash(src, [x[i, c] for i in range(n) for c in range(k)], x_at)
        failed = [src.let("failed", f"not {flag}") for flag in positive]
        emit_stash(src, [emit_first_zero(src, failed)], info_at)
        stored = (lambda i, j: factor[i, j]) if lower else (lambda i, j: factor[j, i])
        emit_condition_flag(src, emit_one_norm(src, read, n, kind), stored, n, kind, decided_at)

    def finish():
        emit_unstash(src, "info", [""], info_at, "int")
        with src.block("if info[first + l] != 0:"):  # not positive definite: b back
            for index in matrix_indices(n, k):
                src(f"x[first + l, {index}] = b[first + l, {index}]")
        with src.block("else:"):
            emit_unstash(src, "x", matrix_indices(n, k), x_at)
        norm = f"hermitian_one_norm(a[first + l], {n}, {lower})"  # the estimate, in doubt
        emit_condition_check(src, decided_at, n, norm, "factors[:, :, l]")

    setup = (
        f"factors = work[{factor_at}:{x_at}].reshape(({n}, {n}, {lanes}))",
        "vector, signs = condition_work(a)",
    )
    emit_lane_kernel(src, "a, b, x, info", lanes, decided_at + 1, load, lane, finish, setup)
    name = f"posv_{n}x{k}_{dtype.name}_{'lower' if lower else 'upper'}"
    return compile_kernel(name, src.text(), dtype, condition_names(dtype, kind))


def posv(pattern):
    """Solve ``a x = b`` for Hermitian positive-definite ``a`` read from the triangle
    option ``lower`` selects; ``info = n + 1`` marks a matrix singular to working
    precision (``xPOSVX``'s code).  Real matrices up to 8x8 with up to 8 right-hand sides
    run as straight-line code across lanes (:func:`_unrolled_posv_kernel`)."""
    n, k, dtype = pattern.dim("n"), pattern.dim("k"), pattern.np_dtype
    lower = pattern.option("lower")
    if unrolled_solve(pattern):
        kernel = Kernel(_unrolled_posv_kernel, (n, k, dtype, lower))
    else:
        kernel = _posv_kernel.sized(n, lower=lower)

    def run(a, b):
        x = np.empty(b.shape, dtype)
        info = np.zeros(a.shape[0], np.int32)
        if b.shape[2] == 0:  # SciPy returns at once for empty right-hand sides
            return x, info
        launch(kernel, a.shape[0], a.shape[1] ** 3 + a.shape[1] ** 2 * b.shape[2], a, b, x, info)
        return x, info

    return run


# --- NumPy's and SciPy's LAPACK -------------------------------------------------------


def potrf_per_matrix(pattern):
    """SciPy's ``cho_factor`` (``clean``: its ``cholesky``): LAPACK ``xPOTRF``; ``info`` is
    the order of the first minor that is not positive definite, a NaN pivot included
    (see :func:`~._lapack.cholesky_info`)."""
    lower, clean, dtype = pattern.option("lower"), pattern.option("clean"), pattern.np_dtype

    def run(a):
        c, info = lapack_function("potrf", dtype)(a, lower=lower, clean=clean)
        return c, cholesky_info(c, info)

    return run


def potrf_numpy(pattern):
    """``numpy.linalg.cholesky`` for ``cholesky``'s calls (``cho_factor`` keeps the other
    triangle: SciPy's only); a NaN pivot fails, as in :func:`potrf_per_matrix`."""
    if not pattern.option("clean"):
        return None
    factor = numpy_linalg(
        "cholesky_lo" if pattern.option("lower") else "cholesky_up", pattern.np_dtype
    )

    def compute(a):
        (c,) = factor(a)
        if not pivots_positive(c):
            raise np.linalg.LinAlgError("a NaN pivot")
        return (c,)

    return compute


def potrs_per_matrix(pattern):
    """SciPy's ``cho_solve``: LAPACK ``xPOTRS``; ``info`` names a zero on the factor's
    diagonal (LAPACK divides by it)."""
    lower, dtype = pattern.option("lower"), pattern.np_dtype

    def run(c, b):
        x = lapack_function("potrs", dtype)(c, b, lower=lower)[0] if b.size else b.copy()
        return x, first_zero_diagonal(c)

    return run


def posv_per_matrix(pattern):
    """LAPACK ``xPOSV`` (Cholesky factor and solve) and ``xPOCON``, as SciPy's ``solve``
    with ``assume_a='pos'``; ``info`` is ``xPOTRF``'s, or ``n + 1`` where the matrix is
    singular to working precision."""
    lower, dtype = pattern.option("lower"), pattern.np_dtype
    eps = np.finfo(dtype).eps

    def run(a, b):
        if not b.size:
            return b.copy(), 0
        c, x, info = lapack_function("posv", dtype)(a, b, lower=lower)
        info = cholesky_info(c, info)
        if info:
            return x, info
        norm = _hermitian_one_norm(a, lower)
        rcond = lapack_function("pocon", dtype)(c, norm, uplo="L" if lower else "U")[0]
        return x, a.shape[0] + 1 if not rcond >= eps else 0

    return run


def _hermitian_one_norm(a, lower):
    """``||a||_1`` of the Hermitian matrix in the triangle ``lower`` selects of ``a``, as
    :func:`~._condition.hermitian_one_norm` (NumPy, for the LAPACK path)."""
    t = np.abs(np.tril(a) if lower else np.triu(a))
    diagonal = np.diagonal(t)
    sums = t.sum(axis=0) + t.sum(axis=1) - 2 * diagonal + np.abs(np.diagonal(a).real)
    return sums.max()
