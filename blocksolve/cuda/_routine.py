"""What the CUDA backend knows about a routine, declared in one place per routine.

Each op family's module (:mod:`blocksolve.cuda.cholesky`, ``lu``, ``qr`` ...)
declares ``ROUTINES = {routine: CudaRoutine(...)}``; :func:`routine` finds
them through :func:`blocksolve._registry.routines`.  Family modules import
neither numba.cuda, nvmath nor cupy: their kernel factories import the
kernel machinery when called, so a process whose kernels are all in the disk
cache launches them without those imports.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CudaRoutine", "routine", "routines"]


@dataclass(frozen=True)
class CudaRoutine:
    """One routine on the GPU.

    Attributes
    ----------
    descriptors : callable
        ``descriptors(api, pattern, common) -> {role: descriptor}``: the
        cuSolverDx solver objects the kernel calls, built from ``api``
        (:mod:`nvmath.device` or the simulator's stand-ins) with the keyword
        arguments ``common`` every descriptor shares (precision, data type,
        architecture, launch shape).  The first one's launch shape is the one
        cuSolverDx is asked to suggest.
    kernel : callable
        ``kernel(descriptors, pattern) -> KernelSpec``: the kernel on
        :func:`blocksolve.cuda._kernels.block_program`, whose outputs are the
        op's (or :attr:`finish`'s inputs).
    empty : callable
        ``empty(pattern, operands, xp, runtime) -> (*outputs, info)`` for a
        problem with an empty core dimension, which cuSolverDx cannot take:
        NumPy's and SciPy's results, computed without a launch.
    finish : callable, optional
        ``finish(outputs, info, xp, pattern, runtime, operands) -> (*outputs,
        info)``: host-side work after the kernel.
    plan : callable, optional
        ``plan(pattern, build) -> plan or None``: a plan other than the
        pattern's own kernel where one applies.  ``build(other)`` plans
        another pattern; ``build(pattern)`` gives the pattern's own plan (its
        kernel, or what an empty or too large problem gets) for the routine's
        plan to build on; ``build.shared_limit`` is the shared memory per
        block the plans may use (``None``: no limit).
    """

    descriptors: Callable
    kernel: Callable
    empty: Callable
    finish: Callable | None = None
    plan: Callable | None = None


@functools.cache
def routines():
    """Every routine the CUDA backend has a kernel for: ``{name: CudaRoutine}``."""
    from .._registry import routines as declared

    return declared("blocksolve.cuda")


def routine(name):
    """The :class:`CudaRoutine` declared for the routine ``name``.

    Raises
    ------
    KeyError
        No family module declares it.
    """
    try:
        return routines()[name]
    except KeyError:
        raise KeyError(f"the CUDA backend has no routine {name!r}") from None
