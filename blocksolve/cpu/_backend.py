"""The CPU backend: which code answers a call, the generated kernel or the reference's LAPACK.

Each op family registers its routines here (:func:`register`, from its module
of :mod:`blocksolve.ops`): the kernel builder, the reference's LAPACK calls and
the crossovers between them.  A call runs on the generated kernel when it holds
enough matrices for the kernel to pay (at least :data:`KERNEL_FROM_BATCH`, more
where the routine's measured crossover says so, none from ``lapack_from``) and
the kernel is ready; otherwise on NumPy's or SciPy's LAPACK -- NumPy's gufunc
first where the function is NumPy's, redone per matrix with SciPy's call, which
reports ``info``, when it raises -- so its results are the reference's to the
bit.  A call of one matrix, what code written for NumPy or SciPy makes, is
answered by the runner's ``one`` on its own matrices, without a batch axis.
Kernels compile in a background process while LAPACK answers
(:mod:`blocksolve.cpu._compiled`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._backends import register_backend
from .._cache import Memo, register_disk
from . import _background, _compiled
from ._compiled import NotReady
from ._jit import in_chunks

__all__ = ["Routine", "register", "CpuBackend", "KERNEL_FROM_BATCH", "wait_for_kernels"]

# The fewest matrices per call that run on a generated kernel.
KERNEL_FROM_BATCH = 2

# A NumPy call is split across threads from this much work (m * n * min(m, n) per
# matrix, summed over the batch): NumPy's linalg gufuncs release the GIL.
_PARALLEL_WORK = 4 << 20


@dataclass(frozen=True)
class Routine:
    """How the CPU backend runs one routine.

    Attributes
    ----------
    kernel : callable
        ``build(pattern) -> run(*operands, **runtime) -> (*outputs, info)`` over
        ``(batch, *core)`` operands, C-contiguous and writable: the generated
        kernel (it raises :class:`~blocksolve.cpu._compiled.NotReady` while
        compiling).
    per_matrix : callable or None
        ``build(pattern) -> run(*operands, **runtime) -> (*outputs, info)`` over one
        matrix's operands (any layout), ``info`` an int: the LAPACK call SciPy
        makes, which reports ``info``.  None where ``numpy`` never fails.
    numpy : callable, optional
        ``build(pattern) -> compute(*operands, **runtime) -> outputs`` or None:
        NumPy's gufunc on a stack or on one matrix, raising ``LinAlgError`` when
        a matrix fails (the call is then redone by ``per_matrix``).
    lapack_from : int or float
        Size from which every call runs on LAPACK (faster there).
    kernel_from_batch : tuple of (int, int or float)
        ``((n, fewest), ...)``: from size ``n`` on, calls with fewer than
        ``fewest`` matrices run on LAPACK (it vectorises within a matrix, where a
        kernel's block of few matrices leaves its dependency chains exposed).
    whole_batch_from : int or float
        Size from which ``numpy`` runs a batch in one call, not split over the threads:
        from there the BLAS under NumPy's LAPACK runs threads within each matrix (0:
        OpenBLAS's own routine, slower split at most sizes), and a batch split over
        blocksolve's threads as well ran slower than NumPy's one call (measured per
        routine, 2 cores, OpenBLAS).
    deciding : tuple of str
        The core dimensions whose least is the size those three compare.
    """

    kernel: Callable
    per_matrix: Callable | None
    numpy: Callable | None = None
    lapack_from: float = math.inf
    kernel_from_batch: tuple = ()
    whole_batch_from: float = math.inf
    deciding: tuple = ("n",)

    def size(self, dims):
        """The size of matrices of sizes ``dims`` that the crossovers compare."""
        return min(dims[symbol] for symbol in self.deciding)

    def fewest(self, dims):
        """The fewest matrices per call of sizes ``dims`` that the kernel runs."""
        size = self.size(dims)
        if size >= self.lapack_from:
            return math.inf
        fewest = KERNEL_FROM_BATCH
        for from_size, batch in self.kernel_from_batch:
            if size >= from_size:
                fewest = max(KERNEL_FROM_BATCH, batch)
        return fewest


ROUTINES: dict[str, Routine] = {}


def register(routine, kernel, per_matrix, **crossovers):
    """Declare how the CPU runs the LAPACK-style ``routine`` (see :class:`Routine`)."""
    if routine in ROUTINES:
        raise RuntimeError(f"the CPU routine {routine!r} is registered twice")
    ROUTINES[routine] = Routine(kernel, per_matrix, **crossovers)


def runner(routine, pattern):
    """``run(operands, runtime) -> (*outputs, info)`` for ``pattern``'s calls over
    ``(batch, *core)`` operands; ``run.one(*operands, **runtime)``, the same for the
    operands of one matrix (``info`` an int), or None where one matrix runs on the
    kernel (``KERNEL_FROM_BATCH = 1``, as tests of the kernels set it)."""
    per_matrix = routine.per_matrix and routine.per_matrix(pattern)
    compute = routine.numpy and routine.numpy(pattern)
    if compute is None:
        one, lapack = per_matrix, _looped(per_matrix)
    else:
        one = _numpy_first(compute, per_matrix)
        whole = routine.size(dict(pattern.dims)) >= routine.whole_batch_from
        lapack = _numpy_batched(compute, per_matrix and _looped(per_matrix), whole)
    fewest = routine.fewest(dict(pattern.dims))
    kernel = None if fewest == math.inf else routine.kernel(pattern)

    def run(operands, runtime):
        if kernel is not None and operands[0].shape[0] >= fewest and _compiled._mode != "never":
            try:
                return kernel(*map(_kernel_operand, operands), **runtime)
            except NotReady:
                pass
        return lapack(*operands, **runtime)

    run.one = one if fewest > 1 else None
    return run


def _kernel_operand(x):
    """``x`` as the kernels take it: C-contiguous and writable (numba types read-only
    arrays apart; one signature per kernel keeps it to one compilation)."""
    x = np.ascontiguousarray(x)
    return x if x.flags.writeable else x.copy()


# --------------------------------------------------------------------------- LAPACK


def _numpy_first(compute, per_matrix=None):
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


def _looped(per_matrix):
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


def _numpy_batched(compute, per_matrix=None, whole=False):
    """``run(*operands, **runtime) -> (*outputs, info)`` from NumPy's batched ``compute``.

    ``compute(*operands, **runtime)`` returns the outputs for a slice of the batch
    and raises ``LinAlgError`` when a matrix fails; the batch is then redone by
    ``per_matrix`` (same contract as ``run``), which reports ``info`` per matrix.
    Large batches are computed in slices on the thread pool, unless ``whole`` (see
    :attr:`Routine.whole_batch_from`) or ``compute`` is marked
    :func:`~.kernels._reference.whole_batch` (where an option decides).
    """
    whole = whole or getattr(compute, "whole_batch", False)

    def run(*operands, **runtime):
        a = operands[0]
        batch = a.shape[0]
        work = a.shape[1] * a.shape[2] * min(a.shape[1:])
        try:
            if whole or batch * work < _PARALLEL_WORK:
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
    """``compute`` on slices of the batch, which the threads take in turn
    (:func:`~._jit.in_chunks`); the first slice done allocates the batch's outputs and
    each writes its own part there."""
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

    return in_chunks(on_slice, batch, work, parallel_work=_PARALLEL_WORK)[0]


# --------------------------------------------------------------------------- the backend

RUNNERS = Memo("cpu-runners", maxsize=1024)
register_disk("cpu", "cpu")


def _build(pattern):
    return runner(ROUTINES[pattern.routine], pattern)


class CpuBackend:
    """Runs call patterns on the host."""

    name = "cpu"
    target = "cpu"

    def runner(self, pattern):
        """``run(operands, runtime) -> (*outputs, info)`` of ``pattern`` over flattened
        ``(batch, *core)`` numpy operands."""
        return RUNNERS.get(pattern, _build)

    def execute(self, pattern, operands, **runtime):
        """Run ``pattern`` on flattened ``(batch, *core)`` numpy ``operands``; return
        ``(*outputs, info)``."""
        return self.runner(pattern)(operands, runtime)

    def target_of(self, operands):
        """The target of every CPU call pattern."""
        return self.target


register_backend("cpu", CpuBackend)


def wait_for_kernels(timeout=None):
    """Wait until the CPU kernels compiling in the background are ready.

    A call whose kernel is not compiled yet runs on NumPy's or SciPy's LAPACK
    while the kernel compiles in a background process (see
    :func:`set_specialization`); this waits for all of those.

    Parameters
    ----------
    timeout : float, optional
        Seconds to wait at most; default: as long as it takes.

    Returns
    -------
    bool
        True when nothing is left compiling, False on timeout.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> L = blocksolve.cholesky(np.eye(3)[None].repeat(8, axis=0))  # may start a compilation
    >>> blocksolve.wait_for_kernels()
    True
    """
    return _background.wait(timeout)
