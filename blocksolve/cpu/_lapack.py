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
import threading

import numpy as np

from .._ops import lstsq_cutoff, lstsq_residual_count
from ._jit import in_parallel

__all__ = ["LAPACK_FROM", "kernel_from_batch", "wrap"]

LAPACK_FROM = 64


# Each routine's NumPy computation: ``(compute, work)`` for a pattern, where
# ``compute(*operands, **runtime)`` returns the outputs (no ``info``) for a slice of
# the batch and raises ``LinAlgError`` when NumPy finds a failing matrix, and
# ``work(*operands)`` is LAPACK's operation count for one matrix.  A call is split
# across threads from ``_PARALLEL_WORK`` of it, 4x the kernels' threshold: measured
# at 48x48 (2 cores), 16 ``det`` or ``solve`` (~1.2e6) took twice as long in two
# threads as in one, 16 ``inv`` (3.5e6) a quarter less.
_PARALLEL_WORK = 4 << 20


def _potrf(pattern):
    lower, clean = pattern.option("lower"), pattern.option("clean")

    def compute(a):
        c = np.linalg.cholesky(a, upper=not lower)
        if not clean:  # cho_factor keeps a's other triangle, as SciPy does
            c += np.triu(a, 1) if lower else np.tril(a, -1)
        return (c,)

    return compute, lambda a: a.shape[1] ** 3 // 3


def _gesv(pattern):
    return (
        lambda a, b: (np.linalg.solve(a, b),)
    ), lambda a, b: 2 * a.shape[1] ** 3 // 3 + 2 * a.shape[1] ** 2 * b.shape[2]


def _geqrf(pattern):
    mode = pattern.option("mode")

    def compute(a):  # QR cannot fail
        result = np.linalg.qr(a, mode=mode)
        return result if isinstance(result, tuple) else (result,)

    return compute, lambda a: a.shape[1] * a.shape[2] * min(a.shape[1:])


def _heev(pattern):
    uplo, vectors = ("L" if pattern.option("lower") else "U"), pattern.option("vectors")

    def compute(a):
        return (
            tuple(np.linalg.eigh(a, UPLO=uplo)) if vectors else (np.linalg.eigvalsh(a, UPLO=uplo),)
        )

    return compute, lambda a: 10 * a.shape[1] ** 3


def _getri(pattern):
    return (lambda a: (np.linalg.inv(a),)), lambda a: 2 * a.shape[1] ** 3


def _getrf_det(pattern):
    """det / slogdet never raise in NumPy (a singular matrix has determinant 0)."""
    log = pattern.option("log")

    def compute(a):
        return tuple(np.linalg.slogdet(a)) if log else (np.linalg.det(a),)

    return compute, lambda a: 2 * a.shape[1] ** 3 // 3


def _gels(pattern):
    """``numpy.linalg.lstsq`` (LAPACK ``xGELSD``) per matrix: NumPy's lstsq takes no stacks.

    NumPy leaves ``residuals`` empty for a rank-deficient matrix; blocksolve's
    are the squared norms of ``b - a x`` then, computed here.  An inf or NaN
    in ``a`` is a failure raised here: LAPACK would print an error for it
    before NumPy raises.
    """
    dtype = pattern.np_dtype
    real = np.finfo(dtype).dtype

    def compute(a, b, rcond=None):
        if not np.isfinite(a).all():
            raise np.linalg.LinAlgError("SVD did not converge in Linear Least Squares")
        batch, m, n = a.shape
        k = b.shape[2]
        r, cutoff = lstsq_residual_count({"m": m, "n": n, "k": k}), lstsq_cutoff(rcond, m, n, dtype)
        x = np.empty((batch, n, k), dtype)
        residuals = np.empty((batch, r), real)
        rank = np.empty(batch, np.int32)
        s = np.empty((batch, min(m, n)), real)
        for i in range(batch):
            x[i], found, rank[i], s[i] = np.linalg.lstsq(a[i], b[i], rcond=cutoff)
            if r:
                residuals[i] = (
                    found if found.size else np.sum(np.abs(b[i] - a[i] @ x[i]) ** 2, axis=0)
                )
        return x, residuals, rank, s

    def work(a, b):
        m, n = a.shape[1:]
        return 4 * m * n * min(m, n) + 4 * m * n * b.shape[2]

    return compute, work


def _numpy_runner(pattern, fallback):
    """Run ``pattern`` by NumPy's computation for its routine, in slices on the thread pool
    when the batch is worth it; ``fallback`` (the kernel) redoes the batch when NumPy finds
    a failing matrix, for the kernel's ``info`` and partial results."""
    compute, work = _RUNNERS[pattern.routine][0](pattern)

    def run(*operands, **runtime):
        batch, per_matrix = operands[0].shape[0], work(*operands)
        try:
            if batch * per_matrix < _PARALLEL_WORK:  # one slice: NumPy's own arrays
                outputs = compute(*operands, **runtime)
            else:
                outputs = _in_slices(compute, batch, per_matrix, operands, runtime)
        except np.linalg.LinAlgError:
            return fallback(*operands, **runtime)
        return (*outputs, np.zeros(batch, np.int32))

    return run


def _in_slices(compute, batch, work, operands, runtime):
    """``compute`` on slices of the batch, a slice per thread of the pool.

    The first slice done allocates the batch's outputs (from its results' shapes
    and dtypes) and each thread writes its slice there: a copy after joining
    would be serial.
    """
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

    return [f.result() for f in in_parallel(on_slice, batch, work, parallel_work=_PARALLEL_WORK)][0]


# routine -> (its NumPy computation, the core dimensions that decide, the size from
# which LAPACK wins).
# On large batches eigh's Jacobi kernel is 2.4x faster than NumPy at n = 16 but 0.85x at
# 32 and 0.2x at 64 (measured like the others, 2-core VM, float64).
_RUNNERS = {
    "potrf": (_potrf, ("n",), LAPACK_FROM),
    "gesv": (_gesv, ("n",), LAPACK_FROM),
    "geqrf": (_geqrf, ("m", "n"), LAPACK_FROM),
    "getri": (_getri, ("n",), LAPACK_FROM),
    "getrf_det": (_getrf_det, ("n",), LAPACK_FROM),
    "heev": (_heev, ("n",), 32),
    "gels": (_gels, ("m", "n"), LAPACK_FROM),
}


# routine -> ((n, fewest), ...): from size n on (up to the next entry's n), calls with
# fewer than ``fewest`` matrices take LAPACK.  Measured with tools/lapack_crossover.py
# (2-core VM, float64, specialised kernels; two runs combined, ``--combine``:
# benchmarks/results/cpu-2026-12-01/ §8).
_KERNEL_FROM_BATCH = {
    "potrf": ((48, math.inf),),
    "gesv": ((24, 8), (32, 12), (48, 128)),
    "geqrf": ((16, 8), (24, 12), (32, 48), (48, math.inf)),
    "getri": ((16, 8), (24, 12), (32, 32), (48, 64)),
    "getrf_det": ((16, 2), (24, 4), (32, 8), (48, 32)),
    "heev": ((8, 6), (12, 16), (16, 64), (24, math.inf)),
    "gels": ((12, 6), (16, 16), (24, 32), (32, math.inf)),
}


def kernel_from_batch(routine, dims):
    """The fewest matrices per call of ``routine`` on matrices of sizes ``dims`` (symbol ->
    size) that its generated kernel runs (``math.inf``: every call takes LAPACK; 1: none
    does)."""
    entry = _RUNNERS.get(routine)
    if entry is None:
        return 1
    return _kernel_from_batch(routine, min(dims[s] for s in entry[1]))


def _kernel_from_batch(routine, n):
    """:func:`kernel_from_batch` for a routine of :data:`_RUNNERS` whose deciding size (the
    least of its deciding dimensions) is ``n``."""
    if n >= _RUNNERS[routine][2]:
        return math.inf
    fewest = 1
    for from_n, batch in _KERNEL_FROM_BATCH[routine]:
        if n >= from_n:
            fewest = batch
    return fewest


def wrap(pattern, run):
    """``run`` for ``pattern``, with NumPy's LAPACK instead where it is faster (``run``
    stays the fallback for a batch LAPACK fails on).

    A family's pattern (every size 0: its runner takes every size) chooses per
    call, by the operands' sizes, what each size's own pattern chooses once by
    its sizes: the first call of a new size, which the family's runner takes,
    runs where the size's later calls run.  The deciding dimensions of every
    routine here are those of its first operand, ``a``.
    """
    routine = pattern.routine
    if routine not in _RUNNERS:
        return run
    if not any(size for _, size in pattern.dims):
        lapack = _numpy_runner(pattern, run)
        # the fewest matrices for the kernels, by deciding size, up to the size from
        # which LAPACK takes every call
        fewest_by_size = [_kernel_from_batch(routine, n) for n in range(_RUNNERS[routine][2])]

        def choose_by_sizes(a, *operands, **runtime):
            n = min(a.shape[1:])
            fewest = fewest_by_size[n] if n < len(fewest_by_size) else math.inf
            return (lapack if a.shape[0] < fewest else run)(a, *operands, **runtime)

        return choose_by_sizes
    fewest = kernel_from_batch(routine, dict(pattern.dims))
    if fewest <= 1:
        return run
    lapack = _numpy_runner(pattern, run)
    if fewest == math.inf:
        return lapack

    def choose(*operands, **runtime):
        return (lapack if operands[0].shape[0] < fewest else run)(*operands, **runtime)

    return choose
