"""LU family on the CPU: ``getrf`` (factor), ``getrs`` (solve with the factors)
and ``gesv`` (factor and solve in one kernel).

Each builder takes a :class:`~blocksolve._pattern.CallPattern` and returns
a runner ``run(*operands) -> (*outputs, info)`` over flattened, C-contiguous
``(batch, *core)`` operands.  The numba kernels are specialised on the
matrix size; ``trans`` is a runtime argument.  They work on interleaved
blocks of matrices (:mod:`blocksolve.cpu._blocks`).  Pivots are 0-based,
as in :func:`scipy.linalg.lu_factor`.
"""

from __future__ import annotations

import functools

import numba
import numpy as np

from ._blocks import block_width, load, store
from ._jit import jit, launch
from ._tiers import sized
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
    return (np.empty(capacity, lu.real.dtype), np.empty(capacity, np.bool_),
            np.empty(capacity, lu.dtype), np.empty(capacity, np.int64))


@numba.njit(inline="always")
def getrf_block(lu, rhs, n, width, piv, info, work):
    """Factor the block ``lu`` (``(n, n, width)``) in place, as LAPACK ``getf2``.

    Partial pivoting: the pivot of column ``k`` is the first entry of largest
    :func:`_pivot_size` on or below the diagonal; ``piv[k, m]`` is its row
    (0-based).  An exactly zero pivot sets ``info[m]`` to its 1-based column
    (the first such one) and the factorisation goes on.  The same row
    operations are applied to the block ``rhs`` (``(n, k, width)``, ``k`` may
    be 0), which leaves ``L^-1 P^T b`` there.

    ``work`` is scratch from :func:`getrf_work`.
    """
    best, tiny_pivot, scale, swapping = work
    tiny = np.finfo(lu.dtype).tiny
    k_rhs = rhs.shape[1]
    for m in range(width):
        info[m] = 0
    for k in range(n):
        for m in range(width):
            piv[k, m] = k
            best[m] = _pivot_size(lu[k, k, m])
        for i in range(k + 1, n):
            for m in range(width):
                size = _pivot_size(lu[i, k, m])
                larger = size > best[m]
                best[m] = size if larger else best[m]
                piv[k, m] = i if larger else piv[k, m]
        for s in range(_list_swaps(piv[k], k, width, swapping)):
            m = swapping[s]
            p = piv[k, m]
            for j in range(n):
                lu[k, j, m], lu[p, j, m] = lu[p, j, m], lu[k, j, m]
            for c in range(k_rhs):
                rhs[k, c, m], rhs[p, c, m] = rhs[p, c, m], rhs[k, c, m]
        any_tiny = False
        for m in range(width):
            pivot = lu[k, k, m]
            zero = pivot == 0
            info[m] = k + 1 if zero and info[m] == 0 else info[m]
            # LAPACK divides by the pivots whose reciprocal would overflow.
            tiny_pivot[m] = not zero and abs(pivot) < tiny
            any_tiny |= tiny_pivot[m] != 0
            scale[m] = 0 if zero else 1 if tiny_pivot[m] else 1 / pivot
        for i in range(k + 1, n):
            for m in range(width):
                lu[i, k, m] *= scale[m]
        if any_tiny:
            for m in range(width):
                if tiny_pivot[m]:
                    for i in range(k + 1, n):
                        lu[i, k, m] /= lu[k, k, m]
        for i in range(k + 1, n):
            for j in range(k + 1, n):
                for m in range(width):
                    lu[i, j, m] -= lu[i, k, m] * lu[k, j, m]
            for c in range(k_rhs):
                for m in range(width):
                    rhs[i, c, m] -= lu[i, k, m] * rhs[k, c, m]


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


@functools.cache
def _getrf_kernel(n_static):
    @jit
    def kernel(start, stop, a, lu, piv, info):
        n = n_static if n_static else a.shape[1]
        capacity = block_width(n)
        block = np.empty((n, n, capacity), a.dtype)
        no_rhs = np.empty((n, 0, capacity), a.dtype)
        piv_block = np.empty((n, capacity), np.int32)
        work = getrf_work(block)
        for first in range(start, stop, capacity):
            width = min(capacity, stop - first)
            load(a, first, width, block)
            getrf_block(block, no_rhs, n, width, piv_block, info[first:first + width], work)
            store(block, lu, first, width)
            store(piv_block.reshape((n, 1, capacity)), piv, first, width)
    return kernel


def getrf(pattern):
    """LU factorisation with partial pivoting; outputs ``lu``, ``piv`` (0-based)."""
    kernel = sized(_getrf_kernel, pattern.dim("n"))
    dtype = pattern.np_dtype

    def run(a):
        lu = np.empty(a.shape, dtype)
        piv = np.empty(a.shape[:2] + (1,), np.int32)  # (n, 1) per matrix, like the others
        info = np.empty(a.shape[0], np.int32)
        launch(kernel, a.shape[0], a.shape[1] ** 3, a, lu, piv, info)
        return lu, piv[..., 0], info
    return run


@functools.cache
def _getrs_kernel(n_static):
    @jit
    def kernel(start, stop, lu, piv, b, x, info, trans):
        n = n_static if n_static else lu.shape[1]
        capacity = block_width(n)
        block = np.empty((n, n, capacity), lu.dtype)
        rhs = np.empty((n, b.shape[2], capacity), b.dtype)
        piv_block = np.empty((n, capacity), np.int32)
        swapping = np.empty(capacity, np.int64)
        for first in range(start, stop, capacity):
            width = min(capacity, stop - first)
            load(lu, first, width, block)
            load(piv, first, width, piv_block.reshape((n, 1, capacity)))
            load(b, first, width, rhs)
            zero_diagonal_block(block, n, width, info[first:first + width])
            getrs_block(block, piv_block, rhs, n, width, trans, swapping)
            store(rhs, x, first, width)
    return kernel


def getrs(pattern):
    """Solve with LU factors and 0-based pivots; option ``trans`` (0, 1, 2)."""
    kernel = sized(_getrs_kernel, pattern.dim("n"))
    trans = pattern.option("trans")
    dtype = pattern.np_dtype

    def run(lu, piv, b):
        x = np.empty(b.shape, dtype)
        info = np.empty(lu.shape[0], np.int32)
        launch(kernel, lu.shape[0], lu.shape[1] ** 2 * b.shape[2], lu, piv[..., None], b, x,
               info, trans)  # pivots as (n, 1) per matrix, like the others
        return x, info
    return run


@functools.cache
def _gesv_kernel(n_static):
    @jit
    def kernel(start, stop, a, b, x, info):
        n = n_static if n_static else a.shape[1]
        capacity = block_width(n)
        block = np.empty((n, n, capacity), a.dtype)
        rhs = np.empty((n, b.shape[2], capacity), b.dtype)
        piv_block = np.empty((n, capacity), np.int32)
        work = getrf_work(block)
        for first in range(start, stop, capacity):
            width = min(capacity, stop - first)
            load(a, first, width, block)
            load(b, first, width, rhs)
            # Factoring [a | b] leaves L^-1 P^T b in rhs: only U is left to solve.
            getrf_block(block, rhs, n, width, piv_block, info[first:first + width], work)
            trsm_block(block, rhs, n, width, False, False)
            store(rhs, x, first, width)
    return kernel


def gesv(pattern):
    """Solve ``a x = b`` by LU factorisation with partial pivoting."""
    kernel = sized(_gesv_kernel, pattern.dim("n"))
    dtype = pattern.np_dtype

    def run(a, b):
        x = np.empty(b.shape, dtype)
        info = np.empty(a.shape[0], np.int32)
        launch(kernel, a.shape[0], a.shape[1] ** 3 + a.shape[1] ** 2 * b.shape[2],
               a, b, x, info)
        return x, info
    return run
