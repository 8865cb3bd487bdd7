"""The routines the op families register, and one call pattern's plan: what runs, and how
its results come back.

Each op family registers, for each of its routines, a :class:`Routine`: the
cuSolverDx descriptors, the kernel, the results of empty problems and any host
step (:func:`register`).  :func:`build` picks one of:

:class:`KernelPlan`
    the routine's cuSolverDx kernel (its family module's
    ``Routine.kernel``): on a GPU a linked cubin
    (:class:`~blocksolve.cuda._launch.CubinKernel`), taken from the disk
    cache when it holds the pattern, else compiled -- traits (cached),
    descriptors, kernel, numba typing, libmathdx code generation (cached),
    NVVM and the nvJitLink link -- and stored; under the simulator the numba
    kernel itself (:class:`~blocksolve.cuda._launch.SimulatedKernel`);
:class:`HostPlan`
    a core dimension is empty: the routine's ``empty`` results, nothing is
    launched;
:class:`FallbackPlan`
    cuSolverDx cannot take the problem (libmathdx rejects the configuration,
    static plus dynamic shared memory exceed what the device allows per
    block, or the linked kernel's registers exceed a block's): the CPU
    backend runs on a host copy and the results are copied
    back.  Correct, but it synchronises and moves the data twice;
    :attr:`reason` says why it was chosen;

or the routine's own plan where it declares one (``Routine.plan``).

Every plan's ``run(operands, xp, runtime)`` returns ``(*outputs, info)`` in
the order of the op's ``outputs`` declaration in :mod:`blocksolve.ops`, and
has ``fallback`` (the reason, or ``None``) and ``timings`` (seconds per
planning step).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._backends import backend
from .._compat.nvmath import wrap_solver_codegen
from .._op import has_empty_input, op_for
from .._progress import compiling
from . import _compile
from ._launch import CubinKernel, SimulatedKernel
from .kernels import _descriptors

__all__ = [
    "Routine",
    "register",
    "ROUTINES",
    "ON_HOST",
    "register_on_host",
    "build",
    "KernelPlan",
    "HostPlan",
    "FallbackPlan",
    "ToolchainMissing",
]

INSTALL_HINT = (
    "install the CUDA extra: pip install 'blocksolve[cuda]' (cupy-cuda13x, "
    "numba-cuda[cu13], nvmath-python[cu13-dx])"
)


@dataclass(frozen=True)
class Routine:
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
        :func:`blocksolve.cuda.kernels._skeleton.block_program`, whose outputs are the
        op's (or what the routine's own :attr:`plan` finishes).
    empty : callable
        ``empty(pattern, operands, xp, runtime) -> (*outputs, info)`` for a
        problem with an empty core dimension, which cuSolverDx cannot take:
        NumPy's and SciPy's results, computed without a launch.
    plan : callable, optional
        ``plan(pattern, build) -> plan or None``: a plan other than the
        pattern's own kernel where one applies.  ``build(other)`` plans
        another pattern; ``build(pattern)`` gives the pattern's own plan (its
        kernel, or what an empty or too large problem gets) for the routine's
        plan to build on; ``build.shared_limit`` is the shared memory per
        block the plans may use (``None``: no limit); ``build.fallback(other,
        reason)`` is the CPU fallback's plan of another pattern.
    """

    descriptors: Callable
    kernel: Callable
    empty: Callable
    plan: Callable | None = None


ROUTINES: dict[str, Routine] = {}


# Routines the GPU runs on the host for now (the CPU backend, on a copy), and why.
ON_HOST: dict[str, str] = {}


def register(routine, descriptors, kernel, empty, **steps):
    """Declare how the GPU runs the LAPACK-style ``routine`` (see :class:`Routine`)."""
    if routine in ROUTINES or routine in ON_HOST:
        raise RuntimeError(f"the CUDA routine {routine!r} is registered twice")
    ROUTINES[routine] = Routine(descriptors, kernel, empty, **steps)


def register_on_host(routine, reason):
    """Declare that GPU arrays of ``routine`` are computed on the host, by the CPU backend on
    a copy, and why (the plan's :attr:`FallbackPlan.reason`, which ``info`` shows)."""
    if routine in ROUTINES or routine in ON_HOST:
        raise RuntimeError(f"the CUDA routine {routine!r} is registered twice")
    ON_HOST[routine] = reason


class ToolchainMissing(RuntimeError):
    """A kernel must be compiled, but numba-cuda or nvmath-python is not installed."""


class _DoesNotFit(Exception):
    """cuSolverDx or the device cannot take the pattern; the message says why."""


class KernelPlan:
    """A cuSolverDx kernel for one call pattern.

    Attributes
    ----------
    pattern : CallPattern
    kernel : CubinKernel or SimulatedKernel
    timings : dict of str to float
        Seconds spent planning, per step (``'kernel_load_s'`` when the disk
        cache held the kernel; ``'traits_s'``, ``'descriptors_s'``,
        ``'typing_codegen_nvvm_s'``, ``'link_s'``, ``'store_s'`` when it was
        compiled).
    """

    fallback = None

    def __init__(self, pattern, kernel, timings=None):
        self.pattern = pattern
        self.kernel = kernel
        self.timings = dict(timings or {})

    @property
    def descriptors(self):
        """The simulator's stand-in descriptors (``None`` for a cubin)."""
        return getattr(self.kernel, "descriptors", None)

    def run(self, operands, xp, runtime):
        batch = operands[0].shape[0]
        outputs = [xp.empty((batch, *core), dtype) for core, dtype in self.kernel.outputs]
        info = xp.zeros(batch, np.int32)
        self.kernel.launch([*operands, *outputs, info], batch, xp)
        return (*outputs, info)


class HostPlan:
    """Problems with an empty core dimension: the routine's ``empty`` results."""

    fallback = None
    timings = {}

    def __init__(self, pattern):
        self.pattern = pattern
        self._empty = ROUTINES[pattern.routine].empty

    def run(self, operands, xp, runtime):
        return self._empty(self.pattern, operands, xp, runtime)


class FallbackPlan:
    """Runs the CPU backend on a host copy; :attr:`reason` says why."""

    timings = {}

    def __init__(self, pattern, reason):
        self.pattern = pattern
        self.reason = reason

    @property
    def fallback(self):
        return self.reason

    def run(self, operands, xp, runtime):
        to_host = getattr(xp, "asnumpy", np.asarray)
        host = [np.ascontiguousarray(to_host(x)) for x in operands]
        cpu_pattern = dataclasses.replace(self.pattern, target="cpu", layouts=("C",) * len(host))
        results = backend("cpu").execute(cpu_pattern, host, **runtime)
        return tuple(xp.asarray(r) for r in results)


def _spec(pattern, api, traits, timings):
    """Descriptors and kernel; :class:`_DoesNotFit` where libmathdx refuses."""
    start = time.perf_counter()
    try:
        recipe = ROUTINES[pattern.routine]
        descriptors = _descriptors.build(pattern, recipe.descriptors, traits, api)
        spec = recipe.kernel(descriptors, pattern)  # reads their traits too
    except (ValueError, RuntimeError) as error:
        raise _DoesNotFit(f"cuSolverDx does not take this configuration: {error}") from error
    timings["descriptors_s"] = time.perf_counter() - start
    return descriptors, spec


def _traits(pattern, api, store, overrides, timings):
    start = time.perf_counter()
    cached = store.load_traits(pattern) if store is not None and not overrides else None
    if cached is not None:
        traits = _descriptors.Traits.from_dict(cached)
    else:
        try:
            recipe = ROUTINES[pattern.routine].descriptors
            traits = _descriptors.resolve_traits(pattern, recipe, api, **overrides)
        except (ValueError, RuntimeError) as error:
            raise _DoesNotFit(f"cuSolverDx does not take this configuration: {error}") from error
        if store is not None and not overrides:
            store.store_traits(pattern, traits.as_dict())
    timings["traits_s"] = time.perf_counter() - start
    return traits


def _check_shared(needed, limit, what):
    if limit is not None and needed > limit:
        raise _DoesNotFit(
            f"needs {needed} bytes of {what} shared memory per block; the device allows {limit}"
        )


# A block's register file on every architecture cuSolverDx supports (sm_70 on), and how
# it is handed out: per warp, in units of 8 registers per thread.
REGISTERS_PER_BLOCK = 64 * 1024


def registers_per_block(registers, block_dim):
    """Registers a block of ``block_dim`` threads takes when each uses ``registers``."""
    return -(-registers // 8) * 8 * -(-math.prod(block_dim) // 32) * 32


def _check_registers(kernel):
    """A linked kernel's registers fit its block (the launch bounds make ptxas see to it;
    this keeps a kernel that cannot launch from being launched, whatever built it)."""
    if kernel.registers is None:  # the simulator
        return
    threads = math.prod(kernel.block_dim)
    needed = registers_per_block(kernel.registers, kernel.block_dim)
    if needed > REGISTERS_PER_BLOCK:
        raise _DoesNotFit(
            f"needs {kernel.registers} registers per thread for {threads} "
            f"threads, {needed} per block; a block has {REGISTERS_PER_BLOCK}"
        )


def _require_toolchain():
    for module, package in (("numba_cuda", "numba-cuda"), ("nvmath", "nvmath-python")):
        if importlib.util.find_spec(module) is None:
            raise ToolchainMissing(
                f"blocksolve: compiling a CUDA kernel needs {package}; {INSTALL_HINT}"
            )


def _device_kernel(pattern, store, code_cache, shared_limit, overrides, timings):
    """The linked kernel of ``pattern``: from ``store``, or compiled and stored there."""
    use_store = store is not None and not overrides
    start = time.perf_counter()
    cached = store.load_kernel(pattern) if use_store else None
    if cached is not None:
        timings["kernel_load_s"] = time.perf_counter() - start
        return CubinKernel(*cached)
    _require_toolchain()
    if code_cache is not None:
        wrap_solver_codegen(code_cache.wrap)
    traits = _traits(pattern, None, store, overrides, timings)
    _, spec = _spec(pattern, None, traits, timings)
    _check_shared(spec.shared_bytes, shared_limit, "dynamic")
    with compiling(f"the GPU kernel for {_describe(pattern)}", "once per pattern; 5-20 s"):
        record, cubin = _compile.compile_spec(spec, pattern)
    timings.update(record["timings"])
    if use_store:
        start = time.perf_counter()
        store.store_kernel(pattern, record, cubin)
        timings["store_s"] = time.perf_counter() - start
    return CubinKernel(record, cubin)


def _describe(pattern):
    sizes = "x".join(str(size) for _, size in pattern.dims)
    return f"{pattern.routine} {sizes} {pattern.np_dtype.name}"


def _simulated_kernel(pattern, api, overrides, timings):
    traits = _traits(pattern, api, None, overrides, timings)
    descriptors, spec = _spec(pattern, api, traits, timings)
    return SimulatedKernel(spec, descriptors)


def build(
    pattern,
    api=None,
    *,
    store=None,
    code_cache=None,
    shared_limit=None,
    batches_per_block=None,
    block_dim=None,
):
    """The plan for ``pattern``.

    Parameters
    ----------
    pattern : CallPattern
        Operand layouts already canonical (``'C'`` or ``'F'``).
    api : module, optional
        ``None``: real cuSolverDx descriptors (:mod:`nvmath.device`) and a
        linked cubin.  A module of stand-ins for its solver classes (the
        tests'): the kernel runs under numba's CUDA simulator.
    store : blocksolve.cuda._kernel_store.KernelStore, optional
        Disk cache of traits and linked kernels.
    code_cache : blocksolve.cuda._code_cache.CodeCache, optional
        Disk cache of libmathdx's generated device code.
    shared_limit : int, optional
        Shared memory per block the device allows; larger kernels fall back.
    batches_per_block, block_dim : optional
        Override cuSolverDx's choices (tests, tuning); such kernels bypass
        the disk caches of traits and kernels.

    Raises
    ------
    ToolchainMissing
        The kernel is not cached and numba-cuda or nvmath-python is missing.
    """
    if pattern.routine in ON_HOST:
        return FallbackPlan(pattern, ON_HOST[pattern.routine])
    if pattern.routine not in ROUTINES:
        return FallbackPlan(pattern, f"the CUDA backend has no kernel for {pattern.routine} yet")
    settings = {
        "api": api,
        "store": store,
        "code_cache": code_cache,
        "shared_limit": shared_limit,
        "batches_per_block": batches_per_block,
        "block_dim": block_dim,
    }
    special = ROUTINES[pattern.routine].plan
    if special is not None:

        def plan_of(other):
            if other == pattern:  # the pattern's own plan, not the routine's again
                return _own_plan(pattern, **settings)
            return build(other, **settings)

        plan_of.shared_limit = shared_limit
        plan_of.fallback = FallbackPlan
        plan = special(pattern, plan_of)
        if plan is not None:
            return plan
    return _own_plan(pattern, **settings)


def _own_plan(pattern, api, store, code_cache, shared_limit, batches_per_block, block_dim):
    """The pattern's kernel, :class:`HostPlan` or :class:`FallbackPlan` (no routine's plan)."""
    if has_empty_input(op_for(pattern.routine, pattern.options), dict(pattern.dims)):
        return HostPlan(pattern)
    overrides = {
        name: value
        for name, value in (("batches_per_block", batches_per_block), ("block_dim", block_dim))
        if value is not None
    }
    timings = {}
    try:
        if api is None:
            kernel = _device_kernel(pattern, store, code_cache, shared_limit, overrides, timings)
        else:
            kernel = _simulated_kernel(pattern, api, overrides, timings)
        _check_shared(
            kernel.static_shared_bytes + kernel.shared_bytes, shared_limit, "static and dynamic"
        )
        _check_registers(kernel)
    except _DoesNotFit as reason:
        return FallbackPlan(pattern, str(reason))
    return KernelPlan(pattern, kernel, timings)
