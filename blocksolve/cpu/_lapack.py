"""Runners on NumPy's and SciPy's LAPACK: what answers a call no generated kernel does.

Every routine has one (:class:`~blocksolve.cpu._routine.CpuRoutine`): it
answers calls of one matrix and calls below the routine's crossover, calls
whose kernel is still compiling, and every call under
``set_specialization('never')``.  Each makes the reference library's own LAPACK
call, so its results are the reference's to the bit: the NumPy-named functions
run NumPy's gufunc on the whole batch (:func:`numpy_batched`), the SciPy-named
ones loop over the matrices calling :mod:`scipy.linalg.lapack` with the
arguments SciPy passes (:func:`lapack_function`).  NumPy raises for the whole
batch when one matrix fails; the batch is then redone one matrix at a time
through SciPy's wrapper of the same LAPACK routine, which reports ``info`` per
matrix.
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from ._jit import in_parallel

__all__ = ["lapack_function", "numpy_batched", "first_zero_diagonal", "cholesky_info"]

# A NumPy call is split across threads from this much work (m * n * min(m, n) per
# matrix, summed over the batch): NumPy's linalg gufuncs release the GIL.
_PARALLEL_WORK = 4 << 20


@functools.cache
def lapack_function(name, dtype):
    """SciPy's wrapper of the LAPACK routine ``name`` (``'potrf'``, ...) for ``dtype``."""
    from scipy.linalg import get_lapack_funcs

    return get_lapack_funcs(name, dtype=np.dtype(dtype))


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
    """Per matrix of ``a`` (batch, n, n): the 1-based index of the first exactly zero
    diagonal entry, 0 where there is none (how blocksolve reports a singular factor)."""
    zero = np.diagonal(a, axis1=1, axis2=2) == 0
    if not np.logical_or.reduce(zero, axis=None):
        return np.zeros(a.shape[0], np.int32)
    return _first(zero)


def cholesky_info(c, info=None):
    """``info`` of Cholesky factors ``c`` (batch, n, n): LAPACK's where it is non-zero, else
    the order of the first leading minor whose pivot is not positive -- a NaN, which
    LAPACK lets through (the generated kernels report it, as the op table says)."""
    n = c.shape[1]
    # A NaN pivot makes every later pivot NaN: the last one says whether to look.
    if not n or np.logical_and.reduce(c[:, n - 1, n - 1].real > 0):
        return np.zeros(c.shape[0], np.int32) if info is None else info
    found = _first(~(np.diagonal(c, axis1=1, axis2=2).real > 0))
    return found if info is None else np.where(info != 0, info, found).astype(np.int32)


def _first(flags):
    """Per row of ``flags`` (batch, n): the 1-based index of the first True, 0 if none."""
    if not flags.shape[1]:
        return np.zeros(flags.shape[0], np.int32)
    return np.where(flags.any(axis=1), flags.argmax(axis=1) + 1, 0).astype(np.int32)
