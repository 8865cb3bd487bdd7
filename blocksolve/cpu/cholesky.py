"""Cholesky family on the CPU: ``potrf`` (factor) and ``potrs`` (solve).

Each builder takes a :class:`~blocksolve._pattern.CallPattern` and returns
a runner ``run(*operands) -> (*outputs, info)`` over flattened, C-contiguous
``(batch, *core)`` operands.  The numba kernel inside is specialised on the
matrix size (and, through numba's dispatch, the dtype); options are runtime
arguments, so they cost no extra compilations.
"""

from __future__ import annotations

import functools

import numba
import numpy as np

from ._jit import jit, launch, static_size


@numba.njit(inline="always")
def _potrf_lower(a, c, n, clean):
    """``c = L`` with ``a = L L^H`` from the lower triangle of ``a``; return info.

    On failure at column ``j`` the columns from ``j`` on hold ``a``'s entries,
    as LAPACK leaves them.
    """
    for j in range(n):
        d = a[j, j].real
        for k in range(j):
            d -= (c[j, k] * np.conj(c[j, k])).real
        if not d > 0:  # also catches NaN
            _fill_from(a, c, n, j, clean, True)
            return j + 1
        d = np.sqrt(d)
        c[j, j] = d
        r = 1 / d
        for i in range(j + 1, n):
            t = a[i, j]
            for k in range(j):
                t -= c[i, k] * np.conj(c[j, k])
            c[i, j] = t * r
        for i in range(j):
            c[i, j] = 0 if clean else a[i, j]
    return 0


@numba.njit(inline="always")
def _potrf_upper(a, c, n, clean):
    """``c = U`` with ``a = U^H U`` from the upper triangle of ``a``; return info."""
    for j in range(n):
        d = a[j, j].real
        for k in range(j):
            d -= (c[k, j] * np.conj(c[k, j])).real
        if not d > 0:
            _fill_from(a, c, n, j, clean, False)
            return j + 1
        d = np.sqrt(d)
        c[j, j] = d
        r = 1 / d
        for i in range(j + 1, n):
            t = a[j, i]
            for k in range(j):
                t -= np.conj(c[k, j]) * c[k, i]
            c[j, i] = t * r
        for i in range(j):
            c[j, i] = 0 if clean else a[j, i]
    return 0


@numba.njit(inline="always")
def _fill_from(a, c, n, first, clean, lower):
    """Copy the unfactored part (from column/row ``first``) of ``a`` into ``c``."""
    for j in range(first, n):
        for i in range(n):
            inside = (i >= j) if lower else (i <= j)
            if lower:
                c[i, j] = a[i, j] if inside or not clean else 0
            else:
                c[j, i] = a[j, i] if inside or not clean else 0


@functools.cache
def _potrf_kernel(n_static):
    @jit
    def kernel(start, stop, a, c, info, lower, clean):
        for b in range(start, stop):
            n = n_static if n_static else a.shape[1]
            if lower:
                info[b] = _potrf_lower(a[b], c[b], n, clean)
            else:
                info[b] = _potrf_upper(a[b], c[b], n, clean)
    return kernel


def potrf(pattern):
    """Cholesky factorisation; options ``lower`` and ``clean`` (zero the other triangle)."""
    kernel = _potrf_kernel(static_size(pattern.dim("n")))
    lower, clean = pattern.option("lower"), pattern.option("clean")
    dtype = pattern.np_dtype

    def run(a):
        c = np.empty(a.shape, dtype)
        info = np.zeros(a.shape[0], np.int32)
        launch(kernel, a.shape[0], a.shape[1] ** 3, a, c, info, lower, clean)
        return c, info
    return run


@numba.njit(inline="always")
def potrs_inplace(c, x, n, lower):
    """Solve ``(L L^H) x = b`` or ``(U^H U) x = b`` in place of ``x``; return info."""
    for i in range(n):
        if c[i, i] == 0:
            return i + 1
    if lower:
        for i in range(n):  # L y = b
            for j in range(i):
                x[i, :] -= c[i, j] * x[j, :]
            x[i, :] /= c[i, i]
        for i in range(n - 1, -1, -1):  # L^H x = y
            for j in range(i + 1, n):
                x[i, :] -= np.conj(c[j, i]) * x[j, :]
            x[i, :] /= np.conj(c[i, i])
    else:
        for i in range(n):  # U^H y = b
            for j in range(i):
                x[i, :] -= np.conj(c[j, i]) * x[j, :]
            x[i, :] /= np.conj(c[i, i])
        for i in range(n - 1, -1, -1):  # U x = y
            for j in range(i + 1, n):
                x[i, :] -= c[i, j] * x[j, :]
            x[i, :] /= c[i, i]
    return 0


@functools.cache
def _potrs_kernel(n_static):
    @jit
    def kernel(start, stop, c, b, x, info, lower):
        for s in range(start, stop):
            n = n_static if n_static else c.shape[1]
            x[s] = b[s]
            info[s] = potrs_inplace(c[s], x[s], n, lower)
    return kernel


def potrs(pattern):
    """Solve with a Cholesky factor; option ``lower``."""
    kernel = _potrs_kernel(static_size(pattern.dim("n")))
    lower = pattern.option("lower")
    dtype = pattern.np_dtype

    def run(c, b):
        x = np.empty(b.shape, dtype)
        info = np.zeros(c.shape[0], np.int32)
        launch(kernel, c.shape[0], c.shape[1] ** 2 * b.shape[2], c, b, x, info, lower)
        return x, info
    return run
