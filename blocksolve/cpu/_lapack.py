"""NumPy's LAPACK for large matrices, where blocked LAPACK beats the generated kernels.

Measured on the project's 2-core machine (float64, one thread each): from
n = 64 ``numpy.linalg.cholesky``, ``solve`` and ``qr`` are 1.2-2.5x faster
than the numba kernels, whose advantage (the size baked in, no per-matrix
call) fades as the O(n^3) work grows.  NumPy's linalg gufuncs release the
GIL, so the batch is still split across blocksolve's thread pool.

NumPy raises for the whole batch when one matrix fails; the generated kernel
then redoes the batch, so ``info`` and the partial results are the same as
on the kernel path.  Only the routines NumPy has are here (no getrf, getrs,
trsm, potrs or gels without SciPy, which is not a runtime dependency).
"""

from __future__ import annotations

import numpy as np

from .._ops import QR_MODES
from ._jit import launch

__all__ = ["LAPACK_FROM", "wrap"]

LAPACK_FROM = 64


def _chunks(compute, batch, work_per_matrix):
    """``compute(start, stop)`` over the batch; ``False`` if NumPy found a failing matrix."""
    try:
        launch(compute, batch, work_per_matrix)
    except np.linalg.LinAlgError:
        return False
    return True


def _potrf(pattern, fallback):
    lower, clean = pattern.option("lower"), pattern.option("clean")
    dtype = pattern.np_dtype

    def run(a):
        c = np.empty(a.shape, dtype)

        def compute(start, stop):
            c[start:stop] = np.linalg.cholesky(a[start:stop], upper=not lower)
            if not clean:  # cho_factor keeps a's other triangle, as SciPy does
                c[start:stop] += np.triu(a[start:stop], 1) if lower else np.tril(a[start:stop], -1)

        if not _chunks(compute, a.shape[0], a.shape[1] ** 3):
            return fallback(a)
        return c, np.zeros(a.shape[0], np.int32)
    return run


def _gesv(pattern, fallback):
    dtype = pattern.np_dtype

    def run(a, b):
        x = np.empty(b.shape, dtype)

        def compute(start, stop):
            x[start:stop] = np.linalg.solve(a[start:stop], b[start:stop])

        if not _chunks(compute, a.shape[0], a.shape[1] ** 3):
            return fallback(a, b)
        return x, np.zeros(a.shape[0], np.int32)
    return run


def _geqrf(pattern, fallback):
    mode = pattern.option("mode")
    dims = dict(pattern.dims, p=min(pattern.dim("m"), pattern.dim("n")))
    declared = QR_MODES[mode].outputs
    dtype = pattern.np_dtype

    def run(a):
        batch = a.shape[0]
        outputs = [np.empty((batch, *(dims[s] for s in o.core)), dtype) for o in declared]

        def compute(start, stop):
            result = np.linalg.qr(a[start:stop], mode=mode)
            for out, part in zip(outputs, result if isinstance(result, tuple) else (result,)):
                out[start:stop] = part

        _chunks(compute, batch, a.shape[1] * a.shape[2] * min(a.shape[1:]))  # QR cannot fail
        return (*outputs, np.zeros(batch, np.int32))
    return run


_RUNNERS = {"potrf": (_potrf, ("n",)), "gesv": (_gesv, ("n",)), "geqrf": (_geqrf, ("m", "n"))}


def wrap(pattern, run):
    """NumPy's LAPACK for ``pattern`` when it is faster, with ``run`` as the fallback."""
    entry = _RUNNERS.get(pattern.routine)
    if entry is None:
        return run
    make, sizes = entry
    if min(pattern.dim(s) for s in sizes) < LAPACK_FROM:
        return run
    return make(pattern, run)
