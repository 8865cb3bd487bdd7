"""The one place that decides which backend runs a call."""

from __future__ import annotations

import contextlib
import contextvars

__all__ = ["select", "use_device", "cpu_backend"]

_forced_device: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "blocksolve_device", default=None
)
_DEVICES = ("cpu", "cuda")


@contextlib.contextmanager
def use_device(device):
    """Run blocksolve calls in a ``with`` block on ``'cpu'`` or ``'cuda'``.

    By default numpy arrays are computed on the CPU and cupy arrays (and
    CUDA DLPack tensors) on their GPU.  Inside ``use_device("cuda")`` numpy
    inputs are copied to the current GPU, computed there, and the results
    copied back as numpy arrays.

    Parameters
    ----------
    device : {'cpu', 'cuda'}
    """
    if device not in _DEVICES:
        raise ValueError(f"use_device: device must be one of {_DEVICES}; got {device!r}")
    token = _forced_device.set(device)
    try:
        yield
    finally:
        _forced_device.reset(token)


def select(native):
    """Return ``(backend, to_backend, from_backend)`` for a call.

    ``to_backend``/``from_backend`` move arrays between the caller's
    namespace and the backend's (identity when they agree).
    """
    forced = _forced_device.get()
    if forced == "cpu" and native.on_gpu:
        return _CPU, native.xp.asnumpy, native.from_host
    if native.on_gpu or forced == "cuda":
        from .cuda import gpu_backend  # imports cupy/numba.cuda only now

        backend = gpu_backend()
        if native.on_gpu:
            return backend, _identity, _identity
        return backend, backend.from_host, backend.to_host
    return _CPU, _identity, _identity


def _identity(x):
    return x


def cpu_backend():
    """The CPU backend (one per process); also what the CUDA backend falls back to."""
    return _CPU


from .cpu import CpuBackend as _CpuBackend  # noqa: E402

_CPU = _CpuBackend()
