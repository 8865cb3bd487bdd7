"""One call pattern's plan: what runs, and how its results come back.

:func:`build` picks one of:

:class:`KernelPlan`
    the cuSolverDx kernel of :mod:`blocksolve.cuda._kernels`;
:class:`HostPlan`
    a core dimension is empty: :func:`blocksolve.cuda._host.zero_sized`
    computes the results, nothing is launched;
:class:`FallbackPlan`
    cuSolverDx cannot take the problem (libmathdx rejects the configuration,
    or the matrices need more shared memory per block than the device has --
    known when planning, or at the first launch once cuSolverDx's own static
    shared memory is known, in which case the kernel plan switches over):
    the CPU backend runs on a host copy and the results are copied back.
    Correct, but it synchronises and moves the data twice; :attr:`reason`
    says why it was chosen.

Every plan's ``run(operands, xp, runtime)`` returns ``(*outputs, info)`` in
the order of the op's ``outputs`` declaration in :mod:`blocksolve._ops`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._pattern import CallPattern
from . import _descriptors, _host
from ._kernels import FACTORIES
from ._launch import SharedMemoryExceeded, launch

__all__ = ["build", "KernelPlan", "HostPlan", "FallbackPlan"]


def _outputs_and_info(outputs, info, xp, pattern, runtime):
    return (*outputs, info)


def _finish_gels(outputs, info, xp, pattern, runtime):
    x, residuals, triangle = outputs
    s = _host.singular_values(triangle, xp)
    rank, info = _host.lstsq_rank(s, pattern.dim("m"), pattern.dim("n"),
                                  runtime.get("rcond"), xp)
    return x, residuals, rank, s, info


_FINISH = {"gels": _finish_gels}


class KernelPlan:
    """A generated cuSolverDx kernel for one call pattern.

    Attributes
    ----------
    pattern : CallPattern
    spec : blocksolve.cuda._kernels.KernelSpec
    descriptors : dict
        The solver descriptors the kernel was built from.
    """

    def __init__(self, pattern, spec, descriptors):
        self.pattern = pattern
        self.spec = spec
        self.descriptors = descriptors
        self._finish = _FINISH.get(pattern.routine, _outputs_and_info)
        self._prepared = set()
        self._fallback = None

    @property
    def fallback(self):
        """Why the CPU fallback replaced the kernel, or ``None``."""
        return self._fallback and self._fallback.reason

    def run(self, operands, xp, runtime):
        if self._fallback is not None:
            return self._fallback.run(operands, xp, runtime)
        batch = operands[0].shape[0]
        outputs = [xp.empty((batch, *core), dtype) for core, dtype in self.spec.outputs]
        info = xp.zeros(batch, np.int32)
        try:
            launch(self.spec, [*operands, *outputs, info], batch, xp, self._prepared)
        except SharedMemoryExceeded as error:  # found on the first launch: switch for good
            self._fallback = FallbackPlan(self.pattern, str(error))
            return self._fallback.run(operands, xp, runtime)
        return self._finish(outputs, info, xp, self.pattern, runtime)


class HostPlan:
    """Problems with an empty core dimension (see :func:`blocksolve.cuda._host.zero_sized`)."""

    fallback = None

    def __init__(self, pattern):
        self.pattern = pattern

    def run(self, operands, xp, runtime):
        return _host.zero_sized(self.pattern, operands, xp, runtime)


class FactorInfoPlan:
    """``solve`` with no right-hand sides: only the LU factorisation's ``info`` is needed."""

    fallback = None

    def __init__(self, pattern, factor_plan):
        self.pattern = pattern
        self.factor_plan = factor_plan

    def run(self, operands, xp, runtime):
        a, b = operands
        *_, info = self.factor_plan.run((a,), xp, runtime)
        return b.copy(), info


class FallbackPlan:
    """Runs the CPU backend on a host copy; :attr:`reason` says why."""

    def __init__(self, pattern, reason):
        self.pattern = pattern
        self.reason = reason

    @property
    def fallback(self):
        return self.reason

    def run(self, operands, xp, runtime):
        from ..cpu import CpuBackend
        to_host = getattr(xp, "asnumpy", np.asarray)
        host = [np.ascontiguousarray(to_host(x)) for x in operands]
        cpu_pattern = dataclasses.replace(self.pattern, target="cpu",
                                          layouts=("C",) * len(host))
        results = CpuBackend().execute(cpu_pattern, host, **runtime)
        return tuple(xp.asarray(r) for r in results)


def build(pattern, api=None, *, batches_per_block=None, block_dim=None, shared_limit=None):
    """The plan for ``pattern``.

    Parameters
    ----------
    pattern : CallPattern
        Operand layouts already canonical (``'C'`` or ``'F'``).
    api : module, optional
        Solver classes: :mod:`nvmath.device` (default) or the simulator's
        stand-ins.
    batches_per_block, block_dim : optional
        Override the descriptor recipe's choices (tests, tuning).
    shared_limit : int, optional
        Shared memory per block the device allows; larger kernels fall back.
    """
    dims = dict(pattern.dims)
    if pattern.routine == "gesv" and dims["k"] == 0 and dims["n"] > 0:
        factor = CallPattern.make("getrf", {"n": dims["n"]}, pattern.dtype, {},
                                  pattern.layouts[:1], pattern.target)
        return FactorInfoPlan(pattern, build(factor, api, batches_per_block=batches_per_block,
                                             block_dim=block_dim, shared_limit=shared_limit))
    if 0 in dims.values():
        return HostPlan(pattern)
    try:  # the factory reads descriptor traits, which libmathdx may refuse too
        descriptors = _descriptors.build(pattern, api, batches_per_block, block_dim)
        spec = FACTORIES[pattern.routine](descriptors, pattern)
    except (ValueError, RuntimeError) as error:
        return FallbackPlan(pattern, f"cuSolverDx does not take this configuration: {error}")
    if shared_limit is not None and spec.shared_bytes > shared_limit:
        return FallbackPlan(pattern, f"needs {spec.shared_bytes} bytes of shared memory per "
                                     f"block; the device allows {shared_limit}")
    return KernelPlan(pattern, spec, descriptors)
