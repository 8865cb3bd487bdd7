"""Positive-definite solve on the CPU: ``posv``, Cholesky factor and solve in one kernel.

The builder takes a :class:`~blocksolve._pattern.CallPattern` and returns a
runner ``run(a, b) -> (x, info)`` over flattened, C-contiguous operands.
The kernel runs the Cholesky family's own factorisation
(:func:`~blocksolve.cpu.cholesky.potrf_range`, two matrices in lockstep from
n = 6) and solve (across blocks of matrices where that pays,
:func:`~blocksolve.cpu.cholesky.solves_in_blocks`) on chunks of the batch
whose factors stay in cache, so ``a`` and ``b`` are read once and the
factors never reach memory: the same numbers as ``cho_factor`` followed by
``cho_solve``, in one pass.  A matrix that is not positive
definite gets its right-hand side back as ``x`` and ``info`` = the order of
the failing leading minor.
"""

from __future__ import annotations

import functools

import numpy as np

from ._blocks import block_width, load, store
from ._jit import jit, launch, sized
from ._lapack import cholesky_info, lapack_function
from ._routine import CpuRoutine
from .cholesky import potrf_range, potrs_block, potrs_inplace, solves_in_blocks

__all__ = ["posv"]

# Matrices factored before they are solved with one at a time: a few KB of factors.
_CHUNK = 16


@functools.cache
def _posv_kernel(n_static):
    @jit
    def kernel(start, stop, a, b, x, info, lower):
        n = n_static if n_static else a.shape[1]
        blocks = solves_in_blocks(n, stop - start)
        chunk = block_width(n, stop - start) if blocks else _CHUNK
        factors = np.empty((chunk, n, n), a.dtype)
        block = np.empty((n, n, chunk if blocks else 0), a.dtype)
        rhs = np.empty((n, b.shape[2], chunk if blocks else 0), b.dtype)
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
                    x[first + i] = b[first + i]
                    if chunk_info[i] == 0:
                        potrs_inplace(factors[i], x[first + i], n, lower)
                elif chunk_info[i]:  # not positive definite: b back
                    x[first + i] = b[first + i]

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
        launch(
            kernel, a.shape[0], a.shape[1] ** 3 + a.shape[1] ** 2 * b.shape[2], a, b, x, info, lower
        )
        return x, info

    return run


def posv_per_matrix(pattern):
    """LAPACK ``xPOSV`` (Cholesky factor and solve), as SciPy's ``solve`` with
    ``assume_a='pos'``; ``info`` is ``xPOTRF``'s."""
    lower, dtype = pattern.option("lower"), pattern.np_dtype

    def run(a, b):
        if not b.size:
            return b.copy(), 0
        c, x, info = lapack_function("posv", dtype)(a, b, lower=lower)
        return x, cholesky_info(c, info)

    return run


ROUTINES = {"posv": CpuRoutine(posv, posv_per_matrix)}
