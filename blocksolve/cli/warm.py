"""Fill the kernel caches ahead of time: ``python -m blocksolve warm --sizes ...``.

A call whose kernel is not compiled yet runs on NumPy's or SciPy's LAPACK while
the kernel compiles in the background (see :mod:`blocksolve.cpu._compiled`);
``warm`` compiles the kernels of the given sizes ahead of time, so benchmarks
and latency-sensitive programs find them ready.  Sizes above
:data:`~blocksolve.cpu._jit.SPECIALIZE_UP_TO` share one kernel that reads its
sizes at run time.

On a GPU (``device='cuda'``) ``warm --device cuda --sizes ...`` fills the CUDA
backend's disk caches (launch shapes, generated cuSolverDx code, linked
cubins; see :mod:`blocksolve.cuda`), after which any process launches those
patterns without compiling.

Each kernel is compiled by calling its public function once on a small input,
in ``jobs`` processes side by side (a kernel another process is already
compiling is waited for and loaded, not compiled twice; on the GPU two
processes may both compile a pattern, and the second write wins).
"""

from __future__ import annotations

import math
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass

import numpy as np

import blocksolve

from ..cpu import set_specialization
from ..cpu._backend import ROUTINES as CPU_ROUTINES
from .bench import WORKLOADS

__all__ = ["Kernel", "kernels", "warm", "DTYPES"]

DTYPES = ("float32", "float64", "complex64", "complex128")


@dataclass(frozen=True)
class Kernel:
    """One kernel to compile: the op that reaches it, dtype, matrix size, device."""

    op: str
    routine: str
    dtype: str
    size: int
    device: str = "cpu"

    @property
    def label(self):
        return f"{self.routine:<6} {self.dtype:<11} n={self.size:<6} {self.device:<5}({self.op})"


def kernels(ops, dtypes, sizes, device="cpu"):
    """The kernels that ``ops`` x ``dtypes`` x ``sizes`` need: one per op, as its
    default options shape it (two ops whose calls reach one kernel, such as
    ``solve`` and ``lu_factor`` followed by ``lu_solve``, find it in the cache the
    second time)."""
    return [
        Kernel(op, WORKLOADS[op].declaration.routine, dtype, size, device)
        for dtype in dtypes
        for op in ops
        for size in sizes
    ]


def compile_kernel(kernel):
    """Make ``kernel`` ready in the disk cache; return ``(seconds, error or None)``."""
    workload = WORKLOADS[kernel.op]
    dims = workload.dims(kernel.size)
    data = workload.make(
        np.random.default_rng(0), _matrices_to_reach(kernel, dims), dims, np.dtype(kernel.dtype)
    )
    previous = set_specialization("wait")
    start = time.perf_counter()
    try:
        with blocksolve.errstate("ignore"), blocksolve.use_device(kernel.device):
            workload.run(blocksolve, data)
        return time.perf_counter() - start, None
    except Exception as error:  # noqa: BLE001 - reported per kernel, the others go on
        return time.perf_counter() - start, f"{type(error).__name__}: {error}"
    finally:
        set_specialization(previous)


def _matrices_to_reach(kernel, dims):
    """How many matrices a call needs for ``kernel`` to run it: on the CPU, calls with
    fewer than the routine's crossover run on LAPACK (where every call does, there is
    no kernel to compile and two matrices are as good as any)."""
    if kernel.device != "cpu":
        return 2
    fewest = CPU_ROUTINES[kernel.routine].fewest(dims)
    return 2 if math.isinf(fewest) else fewest


def warm(todo, jobs=1, report=None):
    """Compile every :class:`Kernel` of ``todo`` in ``jobs`` processes.

    Parameters
    ----------
    todo : list of Kernel
    jobs : int
        Processes side by side (1: in this process).
    report : callable, optional
        ``report(kernel, seconds, error)`` as each one finishes.

    Returns
    -------
    list of (Kernel, float, str or None)
        In the order they finished.
    """
    done = []

    def finished(kernel, seconds, error):
        done.append((kernel, seconds, error))
        if report is not None:
            report(kernel, seconds, error)

    if jobs <= 1:
        for kernel in todo:
            finished(kernel, *compile_kernel(kernel))
        return done
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(compile_kernel, kernel): kernel for kernel in todo}
        for future in as_completed(futures):
            finished(futures[future], *future.result())
    return done
