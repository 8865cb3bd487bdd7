"""NumPy's LAPACK where it beats the generated kernels: large matrices, and few
matrices per call.

Measured on the project's 2-core machine (float64, one thread each): from
n = 64 ``numpy.linalg.cholesky``, ``solve``, ``qr``, ``inv`` and ``slogdet``
are 1.2-4x faster than the numba kernels, whose advantage (the size baked
in, no per-matrix call) fades as the O(n^3) work grows; ``eigh`` from n = 32
(Jacobi's sweeps cost several times LAPACK's tridiagonal reduction there).
NumPy's linalg gufuncs release the GIL, so the batch is still split across
blocksolve's thread pool.

Below that the kernels win on batches, and on few matrices they may not:
they compute a block of up to 32 matrices side by side, every loop across
the block, and a block holding few matrices leaves each one's dependency
chains exposed, where LAPACK vectorises within a matrix.  Measured per
routine and size (``tools/lapack_crossover.py``, specialised kernels,
``benchmarks/results/cpu-2026-12-01/`` §8), one matrix on the kernel takes
1.3x LAPACK's time for a 24x24 ``solve``, 4.3x for a 32x32 ``qr``, 6x for
a 24x24 ``eigh``, 6.5x for a 24x24 ``lstsq``; ``cholesky`` and ``qr`` lose
at n = 48, ``lstsq`` at 32 and ``eigh`` at 24 for every batch up to 256.
So a call with fewer matrices than :data:`_KERNEL_FROM_BATCH` gives for
its routine and size takes LAPACK; the choice is made per call, so a
matrix of a large batch and the same matrix alone may differ in the last
bits.

NumPy raises for the whole batch when one matrix fails; the generated kernel
then redoes the batch, so ``info`` and the partial results are the same as
on the kernel path (``det``/``slogdet`` never raise: a singular matrix has
determinant 0).  Only the routines NumPy has are here (no getrf, getrs,
trsm, potrs or posv without SciPy, which is not a runtime dependency);
``lstsq`` is NumPy's per matrix (``xGELSD``: an SVD, where the kernel
reduces by QR and then takes the SVD of the triangle; same rank rule).
"""

from __future__ import annotations

import math

import numpy as np

from .._ops import QR_MODES, lstsq_cutoff
from ._jit import launch

__all__ = ["LAPACK_FROM", "kernel_from_batch", "takes", "wrap"]

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


def _gels(pattern, fallback):
    """``numpy.linalg.lstsq`` (LAPACK ``xGELSD``) per matrix: NumPy's lstsq takes no stacks.

    NumPy leaves ``residuals`` empty for a rank-deficient matrix; blocksolve's
    are the squared norms of ``b - a x`` then, computed here.  An inf or NaN
    in ``a`` goes to the kernel directly: LAPACK would print an error for it
    before NumPy raises.
    """
    m, n, k, r = (pattern.dim(d) for d in "mnkr")
    p, dtype = min(m, n), pattern.np_dtype
    real = np.finfo(dtype).dtype

    def run(a, b, rcond=None):
        batch = a.shape[0]
        x = np.empty((batch, n, k), dtype)
        residuals = np.empty((batch, r), real)
        rank = np.empty(batch, np.int32)
        s = np.empty((batch, p), real)
        cutoff = lstsq_cutoff(rcond, m, n, dtype)

        def compute(start, stop):
            for i in range(start, stop):
                x[i], found, rank[i], s[i] = np.linalg.lstsq(a[i], b[i], rcond=cutoff)
                if r:
                    residuals[i] = found if found.size else \
                        np.sum(np.abs(b[i] - a[i] @ x[i]) ** 2, axis=0)

        if not (np.isfinite(a).all() and _chunks(compute, batch, 4 * m * n * p + 4 * m * n * k)):
            return fallback(a, b, rcond)
        return x, residuals, rank, s, np.zeros(batch, np.int32)
    return run


# routine -> (runner, the core dimensions that decide, the size from which LAPACK wins).
# eigh's Jacobi kernel is 2.4x faster than NumPy at n = 16 but 0.85x at 32 and 0.2x
# at 64 (measured like the others, 2-core VM, float64).
_RUNNERS = {"potrf": (_potrf, ("n",), LAPACK_FROM), "gesv": (_gesv, ("n",), LAPACK_FROM),
            "geqrf": (_geqrf, ("m", "n"), LAPACK_FROM), "getri": (_getri, ("n",), LAPACK_FROM),
            "getrf_det": (_getrf_det, ("n",), LAPACK_FROM), "heev": (_heev, ("n",), 32),
            "gels": (_gels, ("m", "n"), LAPACK_FROM)}


# routine -> ((n, fewest), ...): from size n on (up to the next entry's n), calls with
# fewer than ``fewest`` matrices take LAPACK.  Measured with tools/lapack_crossover.py
# (2-core VM, float64, specialised kernels; benchmarks/results/cpu-2026-12-01/ §8).
_KERNEL_FROM_BATCH = {
    "potrf": ((48, math.inf),),
    "gesv": ((24, 8), (32, 12), (48, 16)),
    "geqrf": ((16, 8), (24, 12), (32, 48), (48, math.inf)),
    "getri": ((12, 2), (16, 8), (24, 12), (32, 32), (48, 64)),
    "getrf_det": ((16, 3), (24, 4), (32, 8), (48, 12)),
    "heev": ((8, 6), (12, 16), (16, 24), (24, math.inf)),
    "gels": ((12, 8), (16, 12), (24, 32), (32, math.inf)),
}


def kernel_from_batch(pattern):
    """The fewest matrices per call of ``pattern`` that its generated kernel runs
    (``math.inf``: every call takes LAPACK; 1: none does)."""
    entry = _RUNNERS.get(pattern.routine)
    if entry is None:
        return 1
    _, sizes, start = entry
    n = min(pattern.dim(s) for s in sizes)
    if n >= start:
        return math.inf
    fewest = 1
    for from_n, batch in _KERNEL_FROM_BATCH[pattern.routine]:
        if n >= from_n:
            fewest = batch
    return fewest


def takes(pattern, batch):
    """Whether a call of ``pattern`` on ``batch`` matrices runs on NumPy's LAPACK."""
    return batch < kernel_from_batch(pattern)


def wrap(pattern, run):
    """``run`` for ``pattern``, with NumPy's LAPACK instead where it is faster (``run``
    stays the fallback for a batch LAPACK fails on)."""
    fewest = kernel_from_batch(pattern)
    if fewest <= 1:
        return run
    lapack = _RUNNERS[pattern.routine][0](pattern, run)
    if fewest == math.inf:
        return lapack

    def choose(*operands, **runtime):
        return (lapack if operands[0].shape[0] < fewest else run)(*operands, **runtime)
    return choose
