"""Hermitian eigen-decomposition on the CPU: ``heev`` by cyclic Jacobi.

The builder takes a :class:`~blocksolve._pattern.CallPattern` and returns a
runner ``run(a) -> (eigenvalues, [eigenvectors,] info)`` over flattened,
C-contiguous ``(batch, n, n)`` operands.  The numba kernel is specialised on
the matrix size and works on interleaved blocks of matrices
(:mod:`blocksolve.cpu._blocks`), so every rotation runs across the matrices
of a block in one vectorised loop.

One algorithm per matrix, whatever its neighbours: cyclic-by-row Jacobi
sweeps with the rotation of Rutishauser/Numerical Recipes, complex pairs
first turned real by their phase, on the upper triangle of matrices first
scaled into LAPACK ``heev``'s safe range by a power of two.  A pair
``(p, q)`` is rotated only while ``|a_pq| > eps * sqrt(|a_pp| |a_qq|)`` (the
relative-accuracy criterion of Demmel and Veselic); otherwise ``a_pq`` is
set to zero and the rotation is the identity, which leaves the matrix, its
diagonal and its eigenvectors as they were.  A block sweeps until none of
its matrices rotates, so a matrix gets the same result alone or in any
batch.  A matrix that still rotates after :data:`MAX_SWEEPS` sweeps reports
the number of off-diagonal pairs above the criterion as ``info`` (LAPACK's
meaning for ``heev``: that many off-diagonal elements did not converge to
zero).  Eigenvalues come out in ascending order (a stable sort across the
block, ties keep their index order), eigenvectors as the columns of ``v``,
as in NumPy.  A matrix with an inf or NaN entry gets NaN eigenvalues and
eigenvectors (NumPy returns NaNs there too; neither reports a failure).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

from ..._compat.numpy import numpy_linalg
from .._compiled import batch_kernel
from .._jit import launch
from ._blocks import block_width, identity, load, store
from ._pow2 import pow2_factors
from ._reference import lapack_function, whole_batch

__all__ = ["heev", "MAX_SWEEPS"]

# Jacobi converges quadratically: 3-10 sweeps for the sizes blocksolve
# targets, so only a matrix that never settles reaches this (non-finite ones
# are set aside before the sweeps).  Read when a kernel runs (a run-time
# argument), so a test can lower it.
MAX_SWEEPS = 40


# Matrices per block.  Wider than the LU family's blocks (32): Jacobi runs many
# short loops across the block per matrix, and the width amortises their
# set-up.  Measured on the 2-core VM (one thread, float64, eigh with vectors):
# 4x4 takes 210 / 141 / 100 / 84 / 89 ns per matrix at widths 16 / 32 / 64 /
# 128 / 256, 8x8 about 1.3 / 0.9 / 1.1 us at 32 / 128 / 256.
_MAX_WIDTH = 128
_BLOCK_ENTRIES = 1 << 17  # of a and of v: the block stays in L2 for larger n


@numba.njit(inline="always")
def _upper_from_triangle(a, n, width, lower):
    """Move the triangle ``lower`` selects into the upper one (conjugated); real diagonal.

    The kernel keeps only the upper triangle of each Hermitian matrix.
    """
    for i in range(n):
        for m in range(width):
            a[i, i, m] = a[i, i, m].real
        if lower:
            for j in range(i + 1, n):
                for m in range(width):
                    a[i, j, m] = np.conj(a[j, i, m])


@numba.njit(inline="always")
def _largest_part(z):
    return max(abs(z.real), abs(z.imag))


@numba.njit(inline="always")
def _scale_block(a, n, width, exponent, largest, low, high):
    """Scale matrices whose largest entry is outside ``[low, high]`` by a power of two.

    As LAPACK's ``heev`` does, so that the squares the rotations use neither
    over- nor underflow; ``exponent[m]`` is what the eigenvalues must be
    scaled back by (0: unscaled).  Powers of two scale exactly.

    ``largest[m]`` (real scratch of the block's width) is left NaN for a
    matrix with an inf or NaN entry; such a matrix is zeroed here (nothing
    to rotate) and gets NaN results from :func:`_store_results`.
    """
    for m in range(width):
        largest[m] = 0
    for i in range(n):
        for j in range(i, n):
            for m in range(width):
                part = _largest_part(a[i, j, m])
                # part * 0 is NaN for an inf or NaN part, and NaN stays.
                largest[m] = max(largest[m], part) + part * 0
    for m in range(width):
        exponent[m] = 0
        if largest[m] != largest[m]:
            for i in range(n):
                for j in range(i, n):
                    a[i, j, m] = 0
        elif largest[m] > high or 0 < largest[m] < low:
            exponent[m] = math.frexp(largest[m])[1]
            # Three factors: a largest entry below 2**-1022 needs more than one can hold.
            f1, f2, f3 = pow2_factors(-exponent[m])
            for i in range(n):
                for j in range(i, n):
                    a[i, j, m] = a[i, j, m] * f1 * f2 * f3


@numba.njit(inline="always")
def _abs2(z):
    return z.real * z.real + z.imag * z.imag


def _real_modulus(z, tiny):
    return max(abs(z), tiny)


def _complex_modulus(z, tiny):
    x, y = abs(z.real), abs(z.imag)
    big = max(max(x, y), tiny)
    ratio = min(x, y) / big
    return big * np.sqrt(1 + ratio * ratio)


def _modulus(z, tiny):
    """``max(|z|, tiny)``; for a complex ``z`` without squaring its parts, which under- or
    overflow far from 1 (and in loops that vectorise, where ``abs`` of a complex number
    is a library call)."""
    return (_complex_modulus if np.iscomplexobj(z) else _real_modulus)(z, tiny)


@overload(_modulus, inline="always")
def _modulus_kernel(z, tiny):
    return _complex_modulus if isinstance(z, types.Complex) else _real_modulus


@numba.njit(inline="always")
def _above_criterion(apq, app, aqq, tol2):
    """``|a_pq| > eps sqrt(|a_pp a_qq|)``, squared; false for NaN."""
    return _abs2(apq) > tol2 * abs(app) * abs(aqq)


@numba.njit(inline="always")
def _rotate_columns(xp, xq, m, c, se):
    """``(x_p, x_q) J`` for one row: the new ``(x_p, x_q)``."""
    return c[m] * xp - np.conj(se[m]) * xq, se[m] * xp + c[m] * xq


@numba.njit(inline="always")
def _rotate_pair(a, v, p, q, n, width, tol2, tiny, vectors, c_of, t_of, se_of):
    """One Jacobi rotation of the pair ``(p, q)`` of every matrix of the block; returns
    how many matrices rotated.

    With ``e = a_pq / |a_pq|`` the rotation is ``J = [[c, s e], [-s conj(e), c]]``
    in rows/columns ``p, q``, ``t = s / c`` the smaller root of
    ``t^2 + 2 theta t - 1 = 0``, ``theta = (a_qq - a_pp) / (2 |a_pq|)``, by
    Rutishauser's ``t = sign(theta) / (|theta| + sqrt(1 + theta^2))``;
    ``a <- J^H a J`` (upper triangle only), ``v <- v J``.  Nothing squares
    ``a_pq``: its square underflows for a pair far below the matrix's largest
    entry, and a rotation computed from it is then no rotation (``c = 0``
    wiped two eigenvectors) or not orthogonal.  Every loop runs across the
    matrices of the block, branch-free, so that it vectorises.
    """
    busy = 0
    for m in range(width):
        rotate = _above_criterion(a[p, q, m], a[p, p, m].real, a[q, q, m].real, tol2)
        c_of[m] = rotate
        busy += rotate
    if busy == 0:  # nothing to rotate in any matrix: a_pq is negligible everywhere
        for m in range(width):
            a[p, q, m] = 0
        return 0
    for m in range(width):
        w = a[p, q, m]
        size = _modulus(w, tiny)  # |a_pq|; only a pair left alone can be below tiny
        theta = (a[q, q, m].real - a[p, p, m].real) / (2 * size)
        # theta^2 overflows only where t < 1e-154 (float64): t = 0 is then exact to rounding.
        t = math.copysign(1 / (abs(theta) + np.sqrt(1 + theta * theta)), theta)
        c = 1 / np.sqrt(1 + t * t)
        rotate = c_of[m] != 0
        t_of[m] = t * size if rotate else 0  # the change of the diagonal entries
        se_of[m] = c * t * (w * (1 / size)) if rotate else 0
        c_of[m] = c if rotate else 1
    # Columns p and q of a J for the rows k != p, q, kept in the upper triangle
    # (a[k, p] is conj(a[p, k]) for k > p): three ranges of k, one index pattern each.
    for k in range(p):
        for m in range(width):
            a[k, p, m], a[k, q, m] = _rotate_columns(a[k, p, m], a[k, q, m], m, c_of, se_of)
    for k in range(p + 1, q):
        for m in range(width):
            new_kp, new_kq = _rotate_columns(np.conj(a[p, k, m]), a[k, q, m], m, c_of, se_of)
            a[p, k, m] = np.conj(new_kp)
            a[k, q, m] = new_kq
    for k in range(q + 1, n):
        for m in range(width):
            new_kp, new_kq = _rotate_columns(
                np.conj(a[p, k, m]), np.conj(a[q, k, m]), m, c_of, se_of
            )
            a[p, k, m] = np.conj(new_kp)
            a[q, k, m] = np.conj(new_kq)
    for m in range(width):
        a[p, p, m] = a[p, p, m].real - t_of[m]
        a[q, q, m] = a[q, q, m].real + t_of[m]
        a[p, q, m] = 0
    if vectors:
        for k in range(n):
            for m in range(width):
                v[k, p, m], v[k, q, m] = _rotate_columns(v[k, p, m], v[k, q, m], m, c_of, se_of)
    return busy


@numba.njit(inline="always")
def jacobi_block(a, v, n, width, vectors, info, work, max_sweeps):
    """Diagonalise the Hermitian block ``a`` (``(n, n, width)``, upper triangle) in place;
    ``v`` gets the eigenvectors (when ``vectors``).  ``info[m]`` as described in the
    module."""
    c_of, t_of, se_of = work
    tol = np.finfo(c_of.dtype).eps
    tol2 = tol * tol
    tiny = np.finfo(c_of.dtype).tiny
    if vectors:
        identity(v, width)
    for _ in range(max_sweeps):
        busy = 0
        for p in range(n - 1):
            for q in range(p + 1, n):
                busy += _rotate_pair(a, v, p, q, n, width, tol2, tiny, vectors, c_of, t_of, se_of)
        if busy == 0:
            break
    for m in range(width):
        info[m] = 0
    for p in range(n - 1):
        for q in range(p + 1, n):
            for m in range(width):
                info[m] += _above_criterion(a[p, q, m], a[p, p, m].real, a[q, q, m].real, tol2)


@numba.njit(inline="always")
def _sort_block(a, v, n, width, vectors, keys, swapped, exponent):
    """Eigenvalues of every matrix of the block into ``keys`` (``(n, width)``, scaled back
    by ``exponent``), sorted ascending together with the eigenvector columns of ``v``.

    Odd-even transposition sort: ``n`` passes of compare-exchanges of
    neighbours, the same for every matrix, so the loops run across the
    block; stable (equal eigenvalues keep their order), NaN never moves.
    """
    for i in range(n):
        for m in range(width):
            keys[i, m] = a[i, i, m].real
    for m in range(width):
        if exponent[m]:
            for i in range(n):
                keys[i, m] = math.ldexp(keys[i, m], exponent[m])
    for sweep in range(n):
        for i in range(sweep % 2, n - 1, 2):
            for m in range(width):
                low, high = keys[i, m], keys[i + 1, m]
                swap = low > high
                keys[i, m] = high if swap else low
                keys[i + 1, m] = low if swap else high
                swapped[m] = swap
            if vectors:
                for k in range(n):
                    for m in range(width):
                        left, right = v[k, i, m], v[k, i + 1, m]
                        v[k, i, m] = right if swapped[m] else left
                        v[k, i + 1, m] = left if swapped[m] else right


@numba.njit(inline="always")
def _store_results(keys, v, w_out, v_out, first, width, n, vectors, largest):
    """``keys`` into ``w_out``, ``v`` into ``v_out``; NaN for the matrices
    :func:`_scale_block` found non-finite."""
    store(keys.reshape((n, 1, keys.shape[1])), w_out.reshape((w_out.shape[0], n, 1)), first, width)
    if vectors:
        store(v, v_out, first, width)
    for m in range(width):
        if largest[m] != largest[m]:
            for i in range(n):
                w_out[first + m, i] = np.nan
                if vectors:
                    for k in range(n):
                        v_out[first + m, k, i] = np.nan


@batch_kernel
def _heev_kernel(start, stop, n, a, w, v, info, lower, vectors, max_sweeps):
    capacity = block_width(n, stop - start, _MAX_WIDTH, _BLOCK_ENTRIES)
    block = np.empty((n, n, capacity), a.dtype)
    vecs = np.empty((n, n, capacity) if vectors else (0, 0, 0), a.dtype)
    work = (
        np.empty(capacity, w.dtype),
        np.empty(capacity, w.dtype),
        np.empty(capacity, a.dtype),
    )
    keys = np.empty((n, capacity), w.dtype)
    swapped = np.empty(capacity, np.bool_)
    exponent = np.empty(capacity, np.int64)
    largest = np.empty(capacity, w.dtype)
    # LAPACK heev's safe range: sqrt(safmin / eps) .. its reciprocal.
    low = np.sqrt(np.finfo(w.dtype).tiny / np.finfo(w.dtype).eps)
    high = 1 / low
    for first in range(start, stop, capacity):
        width = min(capacity, stop - first)
        load(a, first, width, block)
        _upper_from_triangle(block, n, width, lower)
        _scale_block(block, n, width, exponent, largest, low, high)
        jacobi_block(block, vecs, n, width, vectors, info[first : first + width], work, max_sweeps)
        _sort_block(block, vecs, n, width, vectors, keys, swapped, exponent)
        _store_results(keys, vecs, w, v, first, width, n, vectors, largest)


def heev(pattern):
    """Eigenvalues (and eigenvectors when option ``vectors``) of Hermitian matrices read
    from the triangle option ``lower`` selects."""
    kernel = _heev_kernel.sized(pattern.dim("n"))
    lower, vectors = pattern.option("lower"), pattern.option("vectors")
    dtype = pattern.np_dtype
    real = np.finfo(dtype).dtype

    def run(a):
        batch, n = a.shape[0], a.shape[1]
        w = np.empty((batch, n), real)
        v = np.empty((batch, n, n) if vectors else (batch, 0, 0), dtype)
        info = np.empty(batch, np.int32)
        # About six sweeps of n^2 / 2 rotations, each O(n) (twice with vectors).
        launch(
            kernel,
            batch,
            6 * n**3 * (2 if vectors else 1),
            a,
            w,
            v,
            info,
            lower,
            vectors,
            MAX_SWEEPS,
        )
        return (w, v, info) if vectors else (w, info)

    return run


# --- NumPy's LAPACK -------------------------------------------------------------------


def heev_per_matrix(pattern):
    """LAPACK ``xSYEVD``/``xHEEVD`` (what NumPy calls); ``info`` as theirs, and all-NaN
    results for a matrix with an inf or NaN in the triangle it reads, as the kernels give."""
    lower, vectors, dtype = pattern.option("lower"), pattern.option("vectors"), pattern.np_dtype
    name = "heevd" if np.dtype(dtype).kind == "c" else "syevd"
    triangle = np.tril if lower else np.triu

    def run(a):
        if not np.isfinite(triangle(a)).all():  # NaN results, no failure (see the op table)
            w = np.full(a.shape[0], np.nan, np.finfo(dtype).dtype)
            return (w, np.full(a.shape, np.nan, dtype), 0) if vectors else (w, 0)
        w, v, info = lapack_function(name, dtype)(a, compute_v=vectors, lower=lower)
        return (w, v, info) if vectors else (w, info)

    return run


# From this size NumPy's eigh with eigenvectors (LAPACK xSYEVD/xHEEVD) runs BLAS threads
# within each matrix: two slices of a batch at once took twice its time on 2 cores.
# (Without them from 64: the registration's whole_batch_from.)
_BLAS_THREADS_FROM = 32


def heev_numpy(pattern):
    """``numpy.linalg.eigh`` or ``eigvalsh`` with the triangle option ``lower`` selects."""
    vectors = pattern.option("vectors")
    name = "eigh" if vectors else "eigvalsh"
    compute = numpy_linalg(f"{name}_{'lo' if pattern.option('lower') else 'up'}", pattern.np_dtype)
    if vectors and pattern.dim("n") >= _BLAS_THREADS_FROM:
        return whole_batch(compute)
    return compute
