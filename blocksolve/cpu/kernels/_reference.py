"""What the family modules' reference calls share: SciPy's LAPACK wrappers and how a
factor's ``info`` is read off it.

Each family declares the reference library's own calls of its routines beside
its kernels (``*_per_matrix``: SciPy's LAPACK call on one matrix, which reports
``info``; ``*_numpy``: NumPy's gufunc); :mod:`blocksolve.cpu._backend` makes the
runners from them.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import get_lapack_funcs

from ..._cache import memo

__all__ = [
    "lapack_function",
    "whole_batch",
    "first_zero_diagonal",
    "cholesky_info",
    "pivots_positive",
]


@memo("scipy-lapack-functions", maxsize=256)
def lapack_function(name, dtype):
    """SciPy's wrapper of the LAPACK routine ``name`` (``'potrf'``, ...) for ``dtype``."""
    return get_lapack_funcs(name, dtype=np.dtype(dtype))


def whole_batch(compute):
    """NumPy's ``compute`` of a routine, marked to run on the whole batch in one call.

    Where the BLAS under NumPy's LAPACK runs threads within each matrix, splitting
    the batch across blocksolve's threads as well oversubscribes the cores: the call
    then takes up to twice NumPy's time (eigenvectors of symmetric matrices from 32x32).
    """

    def run(*operands, **runtime):
        return compute(*operands, **runtime)

    run.whole_batch = True
    return run


def first_zero_diagonal(a):
    """The 1-based index of the first exactly zero diagonal entry of the matrix ``a``, 0
    if there is none (how blocksolve reports a singular factor)."""
    diagonal = np.diagonal(a)
    return 0 if diagonal.all() else int((diagonal == 0).argmax()) + 1


def cholesky_info(c, info=0):
    """``info`` of the Cholesky factor ``c`` (n, n): LAPACK's ``info`` where it is non-zero,
    else the order of the first leading minor whose pivot is not positive -- a NaN, which
    LAPACK lets through (the generated kernels report it, as the op table says)."""
    if info or pivots_positive(c):
        return int(info)
    return int((~(np.diagonal(c).real > 0)).argmax()) + 1


def pivots_positive(c):
    """Whether the Cholesky factors ``c`` (..., n, n) have no NaN pivot: a NaN makes
    every later pivot NaN, so the last one of each says it."""
    n = c.shape[-1]
    if not n:
        return True
    if c.ndim == 2:
        return bool(c[n - 1, n - 1].real > 0)
    last = c[..., n - 1, n - 1].real
    return np.count_nonzero(last > 0) == last.size
