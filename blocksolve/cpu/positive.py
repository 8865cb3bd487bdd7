"""Positive-definite solve on the CPU: ``posv``, Cholesky factor and solve in one kernel.

The builder takes a :class:`~blocksolve._pattern.CallPattern` and returns a
runner ``run(a, b) -> (x, info)`` over flattened, C-contiguous operands.
The kernel runs the Cholesky family's own factorisation
(:func:`~blocksolve.cpu.cholesky.potrf_range`, two matrices in lockstep from
n = 6) and solve (:func:`~blocksolve.cpu.cholesky.potrs_inplace`) on chunks
of the batch whose factors stay in cache, so ``a`` and ``b`` are read once
and the factors never reach memory: the same numbers as ``cho_factor``
followed by ``cho_solve``, in one pass.  A matrix that is not positive
definite gets its right-hand side back as ``x`` and ``info`` = the order of
the failing leading minor.
"""

from __future__ import annotations

import functools

import numpy as np

from ._jit import jit, launch
from ._tiers import sized
from .cholesky import potrf_range, potrs_inplace

__all__ = ["posv"]

# Matrices factored before they are solved with: a few KB of factors.
_CHUNK = 16


@functools.cache
def _posv_kernel(n_static):
    @jit
    def kernel(start, stop, a, b, x, info, lower):
        n = n_static if n_static else a.shape[1]
        factors = np.empty((_CHUNK, n, n), a.dtype)
        for first in range(start, stop, _CHUNK):
            count = min(_CHUNK, stop - first)
            chunk_info = info[first:first + count]
            potrf_range(a[first:first + count], factors, chunk_info, 0, count, n, lower, False)
            for i in range(count):
                x[first + i] = b[first + i]
                if chunk_info[i] == 0:
                    potrs_inplace(factors[i], x[first + i], n, lower)
    return kernel


def posv(pattern):
    """Solve ``a x = b`` for Hermitian positive-definite ``a`` read from the triangle
    option ``lower`` selects."""
    kernel = sized(_posv_kernel, pattern.dim("n"))
    lower = pattern.option("lower")
    dtype = pattern.np_dtype

    def run(a, b):
        x = np.empty(b.shape, dtype)
        info = np.zeros(a.shape[0], np.int32)
        if b.shape[2] == 0:  # SciPy returns at once for empty right-hand sides
            return x, info
        launch(kernel, a.shape[0], a.shape[1] ** 3 + a.shape[1] ** 2 * b.shape[2],
               a, b, x, info, lower)
        return x, info
    return run
