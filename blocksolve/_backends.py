"""The one place that decides which backend runs a call."""

from __future__ import annotations

import contextvars

from ._options import choice

__all__ = ["select", "use_device", "cpu_backend"]

_forced_device: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "blocksolve_device", default=None
)
_DEVICES = {"cpu": "cpu", "cuda": "cuda", None: None}


class use_device:
    """Run blocksolve calls on ``'cpu'`` or ``'cuda'``: in a ``with`` block, or from now on.

    By default numpy arrays are computed on the CPU and cupy arrays (and
    CUDA DLPack tensors) on their GPU.  With ``use_device("cuda")`` numpy
    inputs are copied to the current GPU, computed there, and the results
    copied back as numpy arrays; with ``use_device("cpu")`` GPU arrays are
    computed on the host and returned on their device.

    Like ``torch.set_grad_enabled``, it takes effect when called: as the
    expression of a ``with`` statement the previous choice comes back at the
    end of the block; called on its own it is a setter, in force for the rest
    of the thread (or asyncio task) until the next one.  ``use_device(None)``
    goes back to the default.

    Parameters
    ----------
    device : {'cpu', 'cuda', None}

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> with blocksolve.use_device("cpu"):
    ...     L = blocksolve.cholesky(np.eye(2))
    >>> _ = blocksolve.use_device("cpu")  # from now on
    >>> _ = blocksolve.use_device(None)  # the default again
    """

    def __init__(self, device):
        self.device = device = choice("use_device", "device", device, _DEVICES)
        self._token = _forced_device.set(device)

    def __repr__(self):
        return f"blocksolve.use_device({self.device!r})"

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        _forced_device.reset(self._token)
        return False


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
