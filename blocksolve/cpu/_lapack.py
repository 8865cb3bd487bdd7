"""Runners on NumPy's and SciPy's LAPACK: what answers a call no generated kernel does.

Every routine declares its reference call (:class:`~blocksolve.cpu._routine.CpuRoutine`):
``per_matrix``, the LAPACK call SciPy makes on one matrix, which reports ``info``,
and for the NumPy-named routines ``numpy``, NumPy's gufunc on a stack or one
matrix, which raises for all when one matrix fails.  From those two this module
makes the runner of one matrix (:func:`numpy_first`) and that of a batch
(:func:`numpy_batched`, :func:`looped`): NumPy's gufunc first, redone per matrix
when it raises.  Either way a call gets the reference library's own LAPACK
call, so its results are the reference's to the bit.  The runners answer calls
of one matrix and calls below the routine's crossover, calls whose kernel is
still compiling, and every call under ``set_specialization('never')``.
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from ._jit import in_parallel

__all__ = [
    "lapack_function",
    "numpy_first",
    "numpy_batched",
    "looped",
    "first_zero_diagonal",
    "cholesky_info",
    "pivots_positive",
]

# A NumPy call is split across threads from this much work (m * n * min(m, n) per
# matrix, summed over the batch): NumPy's linalg gufuncs release the GIL.
_PARALLEL_WORK = 4 << 20


@functools.cache
def lapack_function(name, dtype):
    """SciPy's wrapper of the LAPACK routine ``name`` (``'potrf'``, ...) for ``dtype``."""
    from scipy.linalg import get_lapack_funcs

    return get_lapack_funcs(name, dtype=np.dtype(dtype))


def numpy_first(compute, per_matrix=None):
    """``run(*operands, **runtime) -> (*outputs, info)`` of one matrix from NumPy's
    ``compute``, redone by ``per_matrix`` (same contract, ``info`` an int) when it raises
    ``LinAlgError``."""

    def run(*operands, **runtime):
        try:
            outputs = compute(*operands, **runtime)
        except np.linalg.LinAlgError:
            if per_matrix is None:
                raise
            return per_matrix(*operands, **runtime)
        return (*outputs, 0)

    return run


def looped(per_matrix):
    """``run(*operands, **runtime) -> (*outputs, info)`` over ``(batch, *core)`` operands
    (``batch >= 1``) from ``per_matrix``, which takes and returns one matrix's."""

    def run(*operands, **runtime):
        batch = operands[0].shape[0]
        info = np.empty(batch, np.int32)
        outputs = None
        for i in range(batch):
            *found, info[i] = per_matrix(*(x[i] for x in operands), **runtime)
            if outputs is None:
                outputs = [np.empty((batch, *np.shape(f)), f.dtype) for f in found]
            for out, f in zip(outputs, found):
                out[i] = f
        return (*outputs, info)

    return run


def numpy_batched(compute, per_matrix=None):
    """``run(*operands, **runtime) -> (*outputs, info)`` from NumPy's batched ``compute``.

    ``compute(*operands, **runtime)`` returns the outputs for a slice of the batch
    and raises ``LinAlgError`` when a matrix fails; the batch is then redone by
    ``per_matrix`` (same contract as ``run``), which reports ``info`` per matrix.
    Large batches are computed in slices on the thread pool.
    """

    def run(*operands, **runtime):
        a = operands[0]
        batch = a.shape[0]
        work = a.shape[1] * a.shape[2] * min(a.shape[1:])
        try:
            if batch * work < _PARALLEL_WORK:
                outputs = compute(*operands, **runtime)
            else:
                outputs = _in_slices(compute, batch, work, operands, runtime)
        except np.linalg.LinAlgError:
            if per_matrix is None:
                raise
            return per_matrix(*operands, **runtime)
        return (*outputs, np.zeros(batch, np.int32))

    return run


def _in_slices(compute, batch, work, operands, runtime):
    """``compute`` on slices of the batch, a slice per thread; the first slice done
    allocates the batch's outputs and each thread writes its own slice there."""
    whole, lock = [], threading.Lock()

    def on_slice(start, stop):
        parts = compute(*(x[start:stop] for x in operands), **runtime)
        if stop - start == batch:
            return parts
        with lock:
            if not whole:
                whole.extend(np.empty((batch, *p.shape[1:]), p.dtype) for p in parts)
        for out, part in zip(whole, parts):
            out[start:stop] = part
        return whole

    futures = in_parallel(on_slice, batch, work, parallel_work=_PARALLEL_WORK)
    return [f.result() for f in futures][0]


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
    return bool(np.logical_and.reduce(c[..., n - 1, n - 1].real > 0, axis=None))
