"""A routine on the CPU: its generated kernel, its LAPACK calls, and which answers a call.

Each family module declares its routines as :class:`CpuRoutine` entries of its
``ROUTINES`` mapping.  A call runs on the generated kernel when it holds enough
matrices for the kernel to pay (at least :data:`KERNEL_FROM_BATCH`, more where
the routine's measured crossover says so, none from ``lapack_from``) and the
kernel is ready; otherwise on NumPy's or SciPy's LAPACK
(:mod:`blocksolve.cpu._lapack`).  A call of one matrix -- what code written for
NumPy or SciPy makes -- therefore gets the reference library's own result, and
no kernel is compiled for a pattern that only ever runs on LAPACK; the runner's
``one`` answers such a call on its own matrices, without a batch axis.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import _compiled
from ._compiled import NotReady
from ._lapack import looped, numpy_batched, numpy_first

__all__ = ["CpuRoutine", "KERNEL_FROM_BATCH", "runner"]

# The fewest matrices per call that run on a generated kernel.
KERNEL_FROM_BATCH = 2


@dataclass(frozen=True)
class CpuRoutine:
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
    deciding : tuple of str
        The core dimensions whose least is the size those two compare.
    """

    kernel: Callable
    per_matrix: Callable | None
    numpy: Callable | None = None
    lapack_from: float = math.inf
    kernel_from_batch: tuple = ()
    deciding: tuple = ("n",)

    def fewest(self, dims):
        """The fewest matrices per call of sizes ``dims`` that the kernel runs."""
        size = min(dims[symbol] for symbol in self.deciding)
        if size >= self.lapack_from:
            return math.inf
        fewest = KERNEL_FROM_BATCH
        for from_size, batch in self.kernel_from_batch:
            if size >= from_size:
                fewest = max(KERNEL_FROM_BATCH, batch)
        return fewest


def runner(routine, pattern):
    """``run(operands, runtime) -> (*outputs, info)`` for ``pattern``'s calls over
    ``(batch, *core)`` operands; ``run.one(*operands, **runtime)``, the same for the
    operands of one matrix (``info`` an int), or None where one matrix runs on the
    kernel (``KERNEL_FROM_BATCH = 1``, as tests of the kernels set it)."""
    per_matrix = routine.per_matrix and routine.per_matrix(pattern)
    compute = routine.numpy and routine.numpy(pattern)
    if compute is None:
        one, lapack = per_matrix, looped(per_matrix)
    else:
        one = numpy_first(compute, per_matrix)
        lapack = numpy_batched(compute, per_matrix and looped(per_matrix))
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
