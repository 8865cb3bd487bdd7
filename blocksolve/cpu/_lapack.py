"""NumPy's LAPACK for large matrices, where blocked LAPACK beats the generated kernels.

Measured on the project's 2-core machine (float64, one thread each): from
n = 64 ``numpy.linalg.cholesky``, ``solve``, ``qr``, ``inv`` and ``slogdet``
are 1.2-4x faster than the numba kernels, whose advantage (the size baked
in, no per-matrix call) fades as the O(n^3) work grows; ``eigh`` from n = 32
(Jacobi's sweeps cost several times LAPACK's tridiagonal reduction there).
NumPy's linalg gufuncs release the GIL, so the batch is still split across
blocksolve's thread pool.

NumPy raises for the whole batch when one matrix fails; the generated kernel
then redoes the batch, so ``info`` and the partial results are the same as
on the kernel path (``det``/``slogdet`` never raise: a singular matrix has
determinant 0).  Only the routines NumPy has are here (no getrf, getrs,
trsm, potrs, posv or gels without SciPy, which is not a runtime dependency).
"""

from __future__ import annotations

import numpy as np

from .._ops import QR_MODES
from ._jit import launch

__all__ = ["LAPACK_FROM", "takes", "wrap"]

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


def _heev(pattern, fallback):
    uplo = "L" if pattern.option("lower") else "U"
    vectors = pattern.option("vectors")
    n, real, dtype = pattern.dim("n"), np.finfo(pattern.np_dtype).dtype, pattern.np_dtype

    def run(a):
        w = np.empty(a.shape[:2], real)
        v = np.empty(a.shape if vectors else (a.shape[0], 0, 0), dtype)

        def compute(start, stop):
            if vectors:
                w[start:stop], v[start:stop] = np.linalg.eigh(a[start:stop], UPLO=uplo)
            else:
                w[start:stop] = np.linalg.eigvalsh(a[start:stop], UPLO=uplo)

        if not _chunks(compute, a.shape[0], 10 * n ** 3):
            return fallback(a)
        info = np.zeros(a.shape[0], np.int32)
        return (w, v, info) if vectors else (w, info)
    return run


def _getri(pattern, fallback):
    dtype = pattern.np_dtype

    def run(a):
        ainv = np.empty(a.shape, dtype)

        def compute(start, stop):
            ainv[start:stop] = np.linalg.inv(a[start:stop])

        if not _chunks(compute, a.shape[0], a.shape[1] ** 3):
            return fallback(a)
        return ainv, np.zeros(a.shape[0], np.int32)
    return run


def _getrf_det(pattern, fallback):
    """det / slogdet never raise in NumPy (a singular matrix has determinant 0)."""
    log, dtype = pattern.option("log"), pattern.np_dtype

    def run(a):
        batch = a.shape[0]
        first = np.empty(batch, dtype)
        logabsdet = np.empty(batch, np.finfo(dtype).dtype)

        def compute(start, stop):
            if log:
                first[start:stop], logabsdet[start:stop] = np.linalg.slogdet(a[start:stop])
            else:
                first[start:stop] = np.linalg.det(a[start:stop])

        _chunks(compute, batch, a.shape[1] ** 3)
        info = np.zeros(batch, np.int32)
        return (first, logabsdet, info) if log else (first, info)
    return run


# routine -> (runner, the core dimensions that decide, the size from which LAPACK wins).
# eigh's Jacobi kernel is 2.4x faster than NumPy at n = 16 but 0.85x at 32 and 0.2x
# at 64 (measured like the others, 2-core VM, float64).
_RUNNERS = {"potrf": (_potrf, ("n",), LAPACK_FROM), "gesv": (_gesv, ("n",), LAPACK_FROM),
            "geqrf": (_geqrf, ("m", "n"), LAPACK_FROM), "getri": (_getri, ("n",), LAPACK_FROM),
            "getrf_det": (_getrf_det, ("n",), LAPACK_FROM), "heev": (_heev, ("n",), 32)}


def takes(pattern):
    """Whether ``pattern`` runs on NumPy's LAPACK (its sizes are where LAPACK is faster)."""
    entry = _RUNNERS.get(pattern.routine)
    if entry is None:
        return False
    _, sizes, start = entry
    return min(pattern.dim(s) for s in sizes) >= start


def wrap(pattern, run):
    """NumPy's LAPACK for ``pattern`` when it is faster, with ``run`` as the fallback."""
    return _RUNNERS[pattern.routine][0](pattern, run) if takes(pattern) else run
