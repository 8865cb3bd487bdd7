"""The CUDA backend: one generated cuSolverDx kernel per call pattern.

:func:`gpu_backend` returns the backend object :mod:`blocksolve._backends`
hands GPU calls to.  Nothing here imports cupy, numba.cuda or nvmath.device
before a GPU call is made; :func:`gpu_backend` then checks that all three
can work and raises :class:`RuntimeError` naming what is missing.

Each call pattern gets a plan (:mod:`blocksolve.cuda._plan`), kept in memory
by ``blocksolve._cache.KernelCache('cuda')``: a kernel from
:mod:`blocksolve.cuda._kernels` built on the descriptors of
:mod:`blocksolve.cuda._descriptors`.  The cuSolverDx device code generated
for it is cached on disk under ``blocksolve.cache_dir()/cuda`` (see
:mod:`blocksolve.cuda._code_cache` for what is and is not cached).
Problems with an empty core dimension are computed without a launch;
problems that do not fit cuSolverDx or the device's shared memory run on the
CPU backend on a host copy (:class:`blocksolve.cuda._plan.FallbackPlan`).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util

import numpy as np

from .._cache import KernelCache

__all__ = ["gpu_backend", "CudaBackend", "CACHE"]

CACHE = KernelCache("cuda")

_INSTALL_HINT = ("install the CUDA extra: pip install 'blocksolve[cuda]' (cupy-cuda13x, "
                 "numba-cuda[cu13], nvmath-python[cu13-dx])")


def _check_available():
    """Raise ``RuntimeError`` naming what the CUDA backend lacks; never calls what raises."""
    try:
        import cupy
    except ImportError:
        raise RuntimeError(f"blocksolve: the CUDA backend needs cupy; {_INSTALL_HINT}") from None
    try:
        import numba
        from numba import cuda
    except ImportError:
        raise RuntimeError(f"blocksolve: the CUDA backend needs numba-cuda; {_INSTALL_HINT}") \
            from None
    if numba.config.ENABLE_CUDASIM:
        raise RuntimeError("blocksolve: the CUDA backend needs a real GPU, but numba's CUDA "
                           "simulator is enabled (NUMBA_ENABLE_CUDASIM=1)")
    if importlib.util.find_spec("nvmath") is None:
        raise RuntimeError(f"blocksolve: the CUDA backend needs nvmath-python; {_INSTALL_HINT}")
    if not cupy.cuda.is_available():
        raise RuntimeError("blocksolve: no usable CUDA GPU: cupy.cuda.is_available() is False "
                           "(no NVIDIA driver, no device, or CUDA_VISIBLE_DEVICES hides them)")
    if not cuda.is_available():
        raise RuntimeError("blocksolve: numba-cuda cannot use the CUDA driver "
                           "(numba.cuda.is_available() is False); check the driver and "
                           "numba-cuda[cu13]")


def gpu_backend():
    """The CUDA backend (one per process).

    Raises
    ------
    RuntimeError
        If cupy, numba-cuda or nvmath-python is missing, numba's CUDA
        simulator is enabled, or no CUDA driver/device is usable; the
        message says which.
    """
    _check_available()
    return _backend()


@functools.cache
def _backend():
    from . import _code_cache, _descriptors
    backend = CudaBackend()
    backend.code_cache = _code_cache.CodeCache(CACHE.disk_dir / "ltoir")
    try:  # the first import of nvmath.device: it loads libmathdx and the driver
        _descriptors.install_code_cache(backend.code_cache)
    except Exception as error:
        raise RuntimeError(f"blocksolve: nvmath.device cannot be loaded ({error}); "
                           f"{_INSTALL_HINT}") from error
    return backend


def _canonical_layout(layout):
    return "F" if layout == "F" else "C"


class CudaBackend:
    """Runs call patterns on the current CUDA device.

    Parameters
    ----------
    api : module, optional
        Solver classes: :mod:`nvmath.device` (default) or
        :mod:`blocksolve.cuda._simulated` for numba's CUDA simulator.
    xp : module, optional
        Array namespace of operands and results: cupy (default), or numpy
        under the simulator.
    target : str, optional
        Architecture such as ``'sm_90'`` (default: the current device's).
    cache : KernelCache, optional
        Where plans are kept (default :data:`CACHE`).
    batches_per_block : int, optional
        Overrides the recipe (tests).
    """

    name = "cuda"
    code_cache = None  # the on-disk cache of generated device code, once installed

    def __init__(self, api=None, xp=None, target=None, cache=None, batches_per_block=None):
        self._api = api
        if xp is None:
            import cupy as xp
        self._xp = xp
        self._target = target
        self._cache = CACHE if cache is None else cache
        self._batches_per_block = batches_per_block

    @property
    def target(self):
        """``'sm_XY'`` of the current device (part of every call pattern)."""
        if self._target is not None:
            return self._target
        return "sm_" + self._xp.cuda.Device().compute_capability

    def from_host(self, array):
        """numpy -> device array (for ``use_device('cuda')`` with numpy inputs)."""
        return self._xp.asarray(array)

    def to_host(self, array):
        """Device array -> numpy (synchronises)."""
        return self._xp.asnumpy(array) if self._xp is not np else array

    def plan(self, pattern):
        """The (cached) plan of ``pattern``, layouts made canonical (``'A'`` -> ``'C'``)."""
        pattern = dataclasses.replace(
            pattern, layouts=tuple(_canonical_layout(x) for x in pattern.layouts))
        return self._cache.get(pattern, self._build)

    def _build(self, pattern):
        from . import _plan
        limit = None
        if self._xp is not np:
            from ._launch import max_shared_bytes
            limit = max_shared_bytes()
        return _plan.build(pattern, self._api, batches_per_block=self._batches_per_block,
                           shared_limit=limit)

    def execute(self, pattern, operands, **runtime):
        """Run ``pattern`` on flattened ``(batch, *core)`` operands.

        Strided operands (layout ``'A'``) are made C-contiguous first.

        Returns
        -------
        tuple
            ``(*outputs, info)``, device arrays in the order of the op's
            outputs; ``info`` is int32 ``(batch,)``.  Nothing synchronises.
        """
        xp = self._xp
        operands = tuple(x if layout in ("C", "F") else xp.ascontiguousarray(x)
                         for x, layout in zip(operands, pattern.layouts))
        return self.plan(pattern).run(operands, xp, runtime)
