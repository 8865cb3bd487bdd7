"""The CUDA backend: one generated cuSolverDx kernel per call pattern.

:func:`gpu_backend` makes the backend :mod:`blocksolve._backends` hands GPU
calls to.  Nothing here imports cupy, numba.cuda or nvmath.device before a GPU
call is made; :func:`gpu_backend` then checks that there is a usable driver and
device, and cupy.

Each op family registers its routines here (:func:`register`, from its module
of :mod:`blocksolve.ops`): the cuSolverDx descriptors, the kernel (in
:mod:`blocksolve.cuda.kernels`, every one on the skeleton of
:mod:`~blocksolve.cuda.kernels._skeleton`), the results of empty problems and
any host step (:class:`Routine`).

Each call pattern gets a plan (:mod:`blocksolve.cuda._plan`), kept in the
``cuda-plans`` memo of :mod:`blocksolve._cache`.  Under
``blocksolve.cache_dir()/cuda`` three disk caches make a pattern cheap the
second time, in any process:

- ``kernels/``: linked cubins with their launch records
  (:mod:`blocksolve.cuda._kernel_store`): a pattern found there launches
  through cupy without importing numba.cuda or nvmath -- a new process is
  ready to launch in well under a second;
- ``traits/``: cuSolverDx's batches per block and block shape per pattern
  (each libmathdx query costs seconds);
- ``ltoir/``: the cuSolverDx device functions libmathdx generated
  (:mod:`blocksolve.cuda._code_cache`), shared by every kernel that calls the
  same function (``lu_factor`` and ``solve`` for any number of right-hand
  sides share one getrf).

Only a pattern missing from ``kernels/`` needs numba-cuda and nvmath-python
(a compile of seconds to tens of seconds; ``python -m blocksolve warm``
fills the caches in advance).  Problems with an empty core dimension are
computed without a launch; problems that do not fit cuSolverDx or the
device's shared memory run on the CPU backend on a host copy
(:class:`blocksolve.cuda._plan.FallbackPlan`).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
from pathlib import Path

import numba
import numpy as np

from .._backends import register_backend
from .._cache import Memo, cache_dir, memo, register_disk
from . import _plan
from ._code_cache import CodeCache
from ._kernel_store import KernelStore
from ._launch import max_shared_bytes
from ._plan import INSTALL_HINT, Routine, register, register_on_host

__all__ = [
    "Routine",
    "register",
    "register_on_host",
    "gpu_backend",
    "CudaBackend",
    "PLANS",
    "probe_driver",
]

PLANS = Memo("cuda-plans", maxsize=1024)
register_disk("cuda", "cuda")


@memo("cuda-driver-probe", maxsize=1)
def probe_driver():
    """Why no CUDA device is usable, or ``None`` when the driver reports one.

    Asks the driver library itself (``cuInit``, ``cuDeviceGetCount``), so the
    answer needs no Python package and is the same whichever are installed.
    """
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "no NVIDIA driver is installed (libcuda.so.1 cannot be loaded)"
    status = driver.cuInit(0)
    if status != 0:
        return (
            f"the NVIDIA driver finds no usable device (cuInit returned {status}; "
            f"100 means no device, or CUDA_VISIBLE_DEVICES hides them)"
        )
    count = ctypes.c_int(0)
    if driver.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return "the NVIDIA driver reports no CUDA device"
    return None


def _check_available():
    """Raise ``RuntimeError`` saying why the CUDA backend cannot run here (no GPU first)."""
    if numba.config.ENABLE_CUDASIM:
        raise RuntimeError(
            "blocksolve: the CUDA backend needs a real GPU, but numba's CUDA "
            "simulator is enabled (NUMBA_ENABLE_CUDASIM=1)"
        )
    problem = probe_driver()
    if problem is not None:
        raise RuntimeError(f"blocksolve: no usable CUDA GPU: {problem}")
    try:
        import cupy
    except ImportError:
        raise RuntimeError(f"blocksolve: the CUDA backend needs cupy; {INSTALL_HINT}") from None
    if not cupy.cuda.is_available():
        raise RuntimeError(
            "blocksolve: no usable CUDA GPU: cupy.cuda.is_available() is False "
            "(the driver is older than cupy's CUDA, or cupy's CUDA build "
            "does not match it)"
        )


def gpu_backend():
    """The CUDA backend (one per process).

    Raises
    ------
    RuntimeError
        If numba's CUDA simulator is enabled, there is no usable driver or
        device, or cupy is missing; the message says which.  numba-cuda and
        nvmath-python are needed (and checked) only when a kernel has to be
        compiled.
    """
    _check_available()
    return _backend()


@memo("cuda-backend", maxsize=1)
def _backend():
    return CudaBackend()


def _canonical_layout(layout):
    return "F" if layout == "F" else "C"


class CudaBackend:
    """Runs call patterns on the CUDA device of their operands.

    Parameters
    ----------
    api : module, optional
        ``None`` (default): real cuSolverDx descriptors and linked cubins.
        A module of stand-ins for :mod:`nvmath.device`'s solver classes (the
        tests' ``tests/_cuda_simulated.py``): the kernels run under numba's
        CUDA simulator.
    xp : module, optional
        Array namespace of operands and results: cupy (default), or numpy
        under the simulator.
    target : str, optional
        Architecture such as ``'sm_90'`` (default: the current device's).
    cache : blocksolve._cache.Memo, optional
        Where plans are kept in memory (default :data:`PLANS`).
    batches_per_block : int, optional
        Overrides cuSolverDx's choice (tests); such kernels are not cached on
        disk.
    shared_limit : int, optional
        Shared memory per block the device allows (default: the current
        device's, with the opt-in; none under the simulator).
    disk_dir : path-like, optional
        Root of the disk caches (default ``blocksolve.cache_dir()/cuda``).
    """

    name = "cuda"

    def __init__(
        self,
        api=None,
        xp=None,
        target=None,
        cache=None,
        batches_per_block=None,
        shared_limit=None,
        disk_dir=None,
    ):
        self._api = api
        if xp is None:
            import cupy as xp
        self._xp = xp
        self._target = target
        self._cache = PLANS if cache is None else cache
        self._batches_per_block = batches_per_block
        self._shared_limit = shared_limit
        self._disk_dir = disk_dir
        self._stores = None

    @property
    def target(self):
        """``'sm_XY'`` of the current device."""
        if self._target is not None:
            return self._target
        return "sm_" + self._xp.cuda.Device().compute_capability

    def target_of(self, operands):
        """``'sm_XY'`` of the device ``operands`` are on (part of every call pattern)."""
        with self._device_of(operands):
            return self.target

    def _device_of(self, operands):
        """The operands' device as a context (checked to be one by ``to_native``): a
        call runs there whatever cupy's current device is -- a torch tensor on
        ``cuda:1``, a cupy array made under another ``Device`` -- and its results are
        allocated there."""
        if self._xp is np or not operands:  # the simulator
            return contextlib.nullcontext()
        return operands[0].device

    @property
    def disk_dir(self):
        return Path(self._disk_dir) if self._disk_dir is not None else cache_dir() / "cuda"

    def stores(self):
        """``(kernel_store, code_cache)`` under :attr:`disk_dir` (created on first use)."""
        if self._stores is None:
            self._stores = (KernelStore(self.disk_dir), CodeCache(self.disk_dir / "ltoir"))
        return self._stores

    def from_host(self, array):
        """numpy -> device array (for ``use_device('cuda')`` with numpy inputs)."""
        return self._xp.asarray(array)

    def to_host(self, array):
        """Device array -> numpy (synchronises)."""
        return self._xp.asnumpy(array) if self._xp is not np else array

    def plan(self, pattern):
        """The (cached) plan of ``pattern``, layouts made canonical (``'A'`` -> ``'C'``)."""
        pattern = dataclasses.replace(
            pattern, layouts=tuple(_canonical_layout(x) for x in pattern.layouts)
        )
        return self._cache.get(pattern, self._build)

    def plans(self):
        """The plans built so far (in memory)."""
        return self._cache.values()

    def _build(self, pattern):
        if self._api is not None:  # the simulator: no disk caches, no device limits
            return _plan.build(
                pattern,
                self._api,
                batches_per_block=self._batches_per_block,
                shared_limit=self._shared_limit,
            )
        limit = self._shared_limit
        if limit is None:
            limit = max_shared_bytes()
        store, code_cache = self.stores()
        return _plan.build(
            pattern,
            store=store,
            code_cache=code_cache,
            shared_limit=limit,
            batches_per_block=self._batches_per_block,
        )

    def execute(self, pattern, operands, **runtime):
        """Run ``pattern`` on flattened ``(batch, *core)`` operands.

        Strided operands (layout ``'A'``) are made C-contiguous first.

        Returns
        -------
        tuple
            ``(*outputs, info)``, device arrays in the order of the op's
            outputs; ``info`` is int32 ``(batch,)``.  Nothing synchronises.
        """
        return self.runner(pattern)(operands, runtime)

    def runner(self, pattern):
        """``run(operands, runtime)``: :meth:`execute` of ``pattern``, its plan looked up
        once (a plan of the call's signature keeps it)."""
        plan, xp = self.plan(pattern), self._xp
        strided = tuple(i for i, layout in enumerate(pattern.layouts) if layout not in "CF")

        def run(operands, runtime):
            with self._device_of(operands):
                if strided:
                    operands = list(operands)
                    for i in strided:
                        operands[i] = xp.ascontiguousarray(operands[i])
                return plan.run(operands, xp, runtime)

        return run


register_backend("cuda", gpu_backend)
