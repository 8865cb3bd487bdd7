"""The one place that decides which backend runs a call, and where backends register.

A backend (:mod:`blocksolve.cpu`, :mod:`blocksolve.cuda`) registers itself by name
with :func:`register_backend`, giving a factory that makes it (or raises, saying
why it cannot run here); :func:`select` picks one per call from where the arrays
are and :class:`use_device`.  A backend has ``name``, ``runner(pattern)``,
``target_of(operands)`` and, for a device, ``from_host`` and ``to_host``.
"""

from __future__ import annotations

import contextvars

from ._options import choice

__all__ = ["register_backend", "backend", "select", "use_device", "forced_device", "identity"]

_forced_device: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "blocksolve_device", default=None
)
_DEVICES = {"cpu": "cpu", "cuda": "cuda", None: None}
_FACTORIES = {}  # name -> callable making the backend (it may raise: no GPU, say)
_MADE = {}  # name -> the backend, once made


def register_backend(name, factory):
    """Make ``factory()`` the backend called ``name`` (``'cpu'``, ``'cuda'``)."""
    _FACTORIES[name] = factory
    _MADE.pop(name, None)


def backend(name):
    """The backend ``name``, made on first use (its factory's error if it cannot run)."""
    made = _MADE.get(name)
    if made is None:
        made = _MADE[name] = _FACTORIES[name]()
    return made


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


def forced_device():
    """The device :class:`use_device` forces in this context, or None."""
    return _forced_device.get()


def select(native):
    """Return ``(backend, to_backend, from_backend)`` for a call.

    ``to_backend``/``from_backend`` move arrays between the caller's
    namespace and the backend's (identity when they agree).
    """
    forced = _forced_device.get()
    if forced == "cpu" and native.on_gpu:
        return backend("cpu"), native.xp.asnumpy, native.from_host
    if native.on_gpu or forced == "cuda":
        gpu = backend("cuda")
        if native.on_gpu:
            return gpu, identity, identity
        return gpu, gpu.from_host, gpu.to_host
    return backend("cpu"), identity, identity


def identity(x):
    return x
