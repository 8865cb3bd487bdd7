"""A call pattern's numba kernel: run when compiled, compiled in the background until then.

Compiling a kernel takes seconds, and no call should wait for that.  A runner
launches a :class:`Kernel`; :func:`~blocksolve.cpu._jit.launch` asks it for the
dispatcher to run.  When the kernel is ready (compiled, or loaded from the disk
cache) that is the kernel; when it is not, in the default ``'background'`` mode,
the kernel is handed to :mod:`blocksolve.cpu._background` and :class:`NotReady`
is raised -- the backend then answers the call with NumPy's or SciPy's LAPACK
(:mod:`blocksolve.cpu._routine`).  ``'wait'`` compiles or loads the kernel in the
caller instead, as benchmarks want; ``'never'`` keeps every call on LAPACK.

Kernels are told apart by what builds them (a factory and its arguments, or a
module-level dispatcher) and by the numba signature of the call: numba compiles
one machine-code version per signature, and each is compiled once.
"""

from __future__ import annotations

import inspect
import numbers
import os
import threading
import warnings

import numpy as np

from .._cache import Memo
from .._errors import ignore_setting, user_stacklevel
from .._options import choice
from .._progress import compiling
from . import _background
from ._jit import KernelChoice, batch_dispatcher, signature_of, static_size
from ._numba_cache import compile_locked, load_cached

__all__ = [
    "Kernel",
    "BatchKernel",
    "batch_kernel",
    "NotReady",
    "MODES",
    "set_specialization",
    "specialization",
]

MODES = ("background", "wait", "never")
_ENV_MODE = "BLOCKSOLVE_SPECIALIZE"


def _mode_from_environment():
    """``$BLOCKSOLVE_SPECIALIZE`` (any case, spaces ignored); another value is ignored with a
    warning, as numba treats its own variables."""
    text = os.environ.get(_ENV_MODE, "")
    mode = text.strip().lower() or "background"
    if mode not in MODES:
        return ignore_setting(
            _ENV_MODE, text, f"one of {', '.join(map(repr, MODES))}", "background"
        )
    return mode


_mode = _mode_from_environment()


def specialization():
    """The current mode (see :func:`set_specialization`)."""
    return _mode


def set_specialization(mode):
    """Choose when blocksolve's generated CPU kernels are compiled; return the previous mode.

    Parameters
    ----------
    mode : {'background', 'wait', 'never'}
        ``'background'`` (default, or ``$BLOCKSOLVE_SPECIALIZE``): a call whose
        kernel is not compiled yet runs on NumPy's or SciPy's LAPACK while the
        kernel compiles in a background process; later calls run the kernel.
        ``'wait'``: such a call compiles (or loads from the disk cache) the kernel
        first and runs it, as benchmarks want.  ``'never'``: every call runs on
        NumPy's or SciPy's LAPACK, with their results to the bit.

    Returns
    -------
    str
        The mode in force before the call.

    Examples
    --------
    >>> import blocksolve
    >>> previous = blocksolve.set_specialization("wait")
    >>> blocksolve.set_specialization(previous)
    'wait'
    """
    global _mode
    previous, _mode = _mode, choice("set_specialization", "mode", mode, {m: m for m in MODES})
    return previous


class NotReady(Exception):
    """The kernel is compiling in the background: answer this call another way."""


_NEW, _PENDING, _READY, _FAILED = "new", "pending", "ready", "failed"


class _Entry:
    """One kernel for one numba signature, in this process."""

    __slots__ = ("dispatcher", "signature", "origin", "ready", "state", "error", "lock")

    def __init__(self, dispatcher, signature, origin):
        self.dispatcher, self.signature, self.origin = dispatcher, signature, origin
        self.ready = None  # the dispatcher, once it runs this signature without compiling
        self.state = _NEW
        self.error = None
        self.lock = threading.Lock()

    def __repr__(self):
        return f"<kernel {self._name()} {self.state}>"

    def _name(self):
        module, qualname, key = self.origin
        return f"{module}.{qualname}{'' if key is None else key}"

    def get(self, mode):
        """The dispatcher, compiled now (``'wait'``), or :class:`NotReady` after handing
        it to the background compiler."""
        with self.lock:
            if self.ready is not None:
                return self.ready
            if mode == "wait":  # a pending background job holds the file lock: wait for it
                if not load_cached(self.dispatcher, self.signature):
                    with compiling(f"the CPU kernel {self._name()}", "once; seconds"):
                        compile_locked(self.dispatcher, self.signature)
                self.ready, self.state = self.dispatcher, _READY
                return self.ready
            if self.state == _NEW:
                self.state = _PENDING
                _background.submit(self)
        raise NotReady

    def finish(self, error):
        """Called by :mod:`._background`: the compiler is done with this kernel."""
        with self.lock:
            if self.ready is not None:
                return
            if error is None and not load_cached(self.dispatcher, self.signature):
                error = "compiled in the background but not found in the disk cache"
            if error is None:
                self.ready, self.state = self.dispatcher, _READY
                return
            self.state, self.error = _FAILED, error
        warnings.warn(
            f"blocksolve: the kernel {self!r} failed to compile ({error}); its calls run on "
            f"NumPy's/SciPy's LAPACK",
            RuntimeWarning,
            stacklevel=user_stacklevel(),
        )

    def reset(self):
        """Forget a background job (after ``fork``: it belonged to the parent)."""
        self.lock = threading.Lock()
        if self.state == _PENDING:
            self.state = _NEW


# Every kernel (per numba signature) this process has asked for, with its compile state.
_ENTRIES = Memo("cpu-compilations", maxsize=4096)


def _origin(make, key):
    """``(module, qualname, key)``: how another process finds the same kernel."""
    function = getattr(make, "py_func", make)  # a module-level dispatcher
    return function.__module__, function.__qualname__, key


class Kernel(KernelChoice):
    """The kernel a runner launches: ``make(*key)``, or the dispatcher ``make`` itself
    when ``key`` is None.

    ``make`` must be reachable from its module by its qualified name (a module-level
    factory or dispatcher), so that the background process can build it too.
    """

    __slots__ = ("make", "key", "_entry")

    def __init__(self, make, key=None):
        self.make, self.key = make, key
        self._entry = None  # resolved on the first launch: the runner's signature is fixed

    def pick(self, args):
        entry = self._entry
        if entry is None:
            entry = self._entry = self._resolve(args)
        ready = entry.ready
        return ready if ready is not None else entry.get(_mode)

    def _resolve(self, args):
        dispatcher = self.make if self.key is None else self.make(*self.key)
        signature = signature_of(dispatcher, args)
        origin = _origin(self.make, self.key)
        return _ENTRIES.get((dispatcher, signature), lambda key: _Entry(*key, origin))


def entries():
    """Every kernel (per signature) this process has asked for."""
    return _ENTRIES.values()


def _forget_in_child():
    for entry in _ENTRIES.values():
        entry.reset()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


# The numba dispatchers of batch kernels, by (body, sizes): each holds its compiled code.
_KERNELS = Memo("cpu-kernels", maxsize=1024)


class BatchKernel:
    """A batch kernel written once, as its body; ``kernel(*sizes, *options)`` is its numba
    dispatcher for matrices of those sizes and those values of its options.

    The body ``body(start, stop, *sizes, *arguments)`` runs a slice of the batch.
    ``kernel(4)`` is the body with the size 4 as a constant (one compilation per
    size, which LLVM unrolls); ``kernel(0)`` reads the sizes from the first
    argument's core dimensions at run time.  The body's ``options`` (arguments
    named by the decorator, each a bool or a small int) are constants too: numba
    drops the branches a call pattern does not take before it compiles them.  The
    dispatcher's source is the body's, with those constants
    (:func:`~._jit.batch_dispatcher`), attributed to the body's module, so numba's
    disk cache keeps one entry per size and option values.

    Made by :func:`batch_kernel`; importable as the body's module attribute (what
    the background compiler rebuilds kernels from).
    """

    def __init__(self, body, sizes, options=()):
        parameters = list(inspect.signature(body).parameters)
        if parameters[: 2 + len(sizes)] != ["start", "stop", *sizes]:
            raise TypeError(f"{body.__qualname__}: parameters must start with start, stop, {sizes}")
        self.parameters = tuple(parameters[2 + len(sizes) :])
        if not set(options) <= set(self.parameters):
            raise TypeError(f"{body.__qualname__}: options {options} must be among its parameters")
        self.body = body
        self.sizes, self.options = tuple(sizes), tuple(options)
        self.arguments = tuple(p for p in self.parameters if p not in options)
        self.__module__, self.__qualname__ = body.__module__, body.__qualname__
        self.__name__ = body.__name__

    def __repr__(self):
        return f"<batch kernel {self.__module__}.{self.__qualname__}>"

    def __call__(self, *key):
        """The dispatcher for ``key``: the sizes (0: read at run time), then the options'
        values in the decorator's order."""
        return _KERNELS.get((self, key), _compile_sized)

    def sized(self, *sizes, **options):
        """The :class:`~blocksolve.cpu._compiled.Kernel` a runner launches for matrices of
        ``sizes`` and those ``options``: the sizes baked in where every one is small
        enough (and non-zero), else read at run time (:func:`static_size`).  The runner
        passes the body's other arguments, :attr:`arguments`."""
        if sorted(options) != sorted(self.options):
            raise TypeError(f"{self.__qualname__}: options {sorted(options)}, not {self.options}")
        baked = all(sizes) and all(static_size(size) for size in sizes)
        static = tuple(sizes) if baked else (0,) * len(sizes)
        values = tuple(_option_value(options[name]) for name in self.options)
        return Kernel(self, static + values)


def _option_value(value):
    """``value`` as the Python bool or int a kernel bakes in (NumPy scalars too)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    raise TypeError(f"a kernel option is a bool or an int, not {value!r}")


def _compile_sized(key):
    kernel, key = key
    static, values = key[: len(kernel.sizes)], key[len(kernel.sizes) :]
    return batch_dispatcher(
        kernel.body,
        dict(zip(kernel.sizes, static)),
        kernel.parameters,
        dict(zip(kernel.options, values)),
    )


def batch_kernel(body=None, *, sizes=("n",), options=()):
    """Decorator: the :class:`BatchKernel` whose body is ``body``."""
    if body is None:
        return lambda body: BatchKernel(body, sizes, options)
    return BatchKernel(body, sizes, options)
