"""Two tiers of CPU kernels: one that answers a new call pattern at once, one that is fastest.

Compiling a kernel specialised on its matrix size takes seconds, so a
builder asks :func:`sized` (or :func:`tiered`) for a :class:`Tiered` kernel:
the *generic* kernel of the family, which takes the sizes at run time and is
compiled once per dtype (and kept in the disk cache, so in practice it is
always ready), answers at once, while the *specialised* one is made ready in
the background (:mod:`blocksolve.cpu._background`) and takes over when it
is.  Both run the same algorithm, so their results agree to rounding.

:func:`set_specialization` chooses between ``'background'`` (the default,
or ``$BLOCKSOLVE_SPECIALIZE``), ``'wait'`` (compile or load the specialised
kernel before the first call returns, as benchmarks want) and ``'never'``
(only the generic kernels).
"""

from __future__ import annotations

import os
import threading

from .._errors import ignore_setting
from . import _background
from ._compile_worker import marker, signature_repr
from ._jit import KernelChoice, signature_of, static_size
from ._numba_cache import cache_path, compile_locked, load_cached, marker_directory, package_stamp

__all__ = [
    "Tiered",
    "sized",
    "tiered",
    "tiered_kernels",
    "MODES",
    "set_specialization",
    "specialization",
    "compile_specialised",
    "compiled_before",
]

MODES = ("background", "wait", "never")
_ENV_MODE = "BLOCKSOLVE_SPECIALIZE"


def _check_mode(mode, where):
    if mode not in MODES:
        raise ValueError(
            f"{where}: specialization must be one of {', '.join(map(repr, MODES))}; got {mode!r}"
        )
    return mode


def _mode_from_environment():
    """``$BLOCKSOLVE_SPECIALIZE`` (any case, spaces ignored); another value is ignored with
    a warning, as numba treats its own variables."""
    text = os.environ.get(_ENV_MODE, "")
    mode = text.strip().lower() or "background"
    if mode not in MODES:
        return ignore_setting(
            _ENV_MODE, text, f"one of {', '.join(map(repr, MODES))}", "background"
        )
    return mode


_mode = _mode_from_environment()


def specialization():
    """The current specialisation mode (see :func:`set_specialization`)."""
    return _mode


def set_specialization(mode):
    """Choose when size-specialised CPU kernels are compiled; return the previous mode.

    Parameters
    ----------
    mode : {'background', 'wait', 'never'}
        ``'background'`` (default, or ``$BLOCKSOLVE_SPECIALIZE``): a new call
        pattern runs at once on the kernel that takes its sizes at run time,
        while, from the pattern's second call, the kernel specialised on its
        sizes compiles in a background process and takes over when ready (a
        size used once is never compiled).  ``'wait'``: the first call of a
        pattern compiles (or loads) the specialised kernel and uses it, as
        benchmarks want.  ``'never'``: only the run-time-size kernels.

    Returns
    -------
    str
        The mode in force before the call.
    """
    global _mode
    previous, _mode = _mode, _check_mode(mode, "set_specialization")
    return previous


_NEW, _PENDING, _READY, _FAILED = "new", "pending", "ready", "failed"


class Tiered(KernelChoice):
    """A size-specialised kernel, stood in for by the generic one until it is compiled.

    Call it like a kernel, ``kernel(start, stop, *args)``; :func:`launch`
    resolves it once per call with :meth:`pick`.  Create through
    :func:`tiered`, which keeps one per specialised kernel.

    Parameters
    ----------
    generic : numba dispatcher
        The kernel that takes the sizes at run time (same arguments).
    factory : callable
        ``factory(*key)`` returns the specialised dispatcher (a module-level
        function, so that the background process can call it too).
    key : tuple
        Picklable arguments of ``factory``.
    """

    def __init__(self, generic, factory, key):
        self.generic, self.factory, self.key = generic, factory, key
        self.ready = None  # the specialised dispatcher, once it can run without compiling
        self.state = _NEW
        self.error = None
        self.signature = None
        self._lock = threading.Lock()

    def __repr__(self):
        return f"<Tiered {self.factory.__qualname__}{self.key} {self.state}>"

    @property
    def specialised(self):
        return self.factory(*self.key)

    def pick(self, args):
        """The dispatcher to run ``kernel(*args)`` (``args`` include start and stop) with."""
        ready, mode = self.ready, _mode
        if ready is not None and mode != "never":
            return ready
        state = self.state
        if mode == "never" or state == _FAILED or (state == _PENDING and mode != "wait"):
            return self.generic
        with self._lock:
            if self.ready is not None:
                return self.ready
            if self.state == _NEW:
                self.signature = signature_of(self.generic, args)
            if mode == "wait":  # also when pending: the file lock waits for the other compiler
                compile_specialised(self.factory, self.key, self.signature)
                return self._finish(None)
            if self.state == _NEW:
                self.state = _PENDING
                _background.submit(self)
        return self.generic

    def __call__(self, start, stop, *args):
        return self.pick((start, stop) + args)(start, stop, *args)

    def compiled_before(self):
        """Whether an earlier compilation left the specialised kernel in the disk cache
        (asked by the background thread, off the caller's path)."""
        return compiled_before(self.factory, self.key, self.signature)

    def _finish(self, error):
        """Record that the specialised kernel is in memory (``error`` None) or cannot be.

        Returns the kernel to run: the specialised one, or the generic one.
        """
        if error is None:
            self.ready, self.state = self.specialised, _READY
            return self.ready
        self.error, self.state = error, _FAILED
        return self.generic

    def reset(self):
        """Forget a pending background job (after ``fork``, in the child)."""
        self._lock = threading.Lock()
        if self.state == _PENDING:
            self.state = _NEW

    def finish_background(self, error):
        """Called by :mod:`._background` when the other process is done with this kernel."""
        with self._lock:
            if self.ready is not None:
                return
            if error is None and not load_cached(self.specialised, self.signature):
                error = (
                    f"compiled in the background but not found in the disk cache ({cache_path()})"
                )
            self._finish(error)


def _marker(factory, key, sig):
    """File that says the kernel ``factory(*key)`` was compiled for ``sig`` into the disk cache
    (see :func:`._compile_worker.marker`): asked before a kernel is loaded, so that the
    first call of a pattern stays cheap."""
    return marker(
        marker_directory(),
        factory.__module__,
        factory.__qualname__,
        key,
        signature_repr(sig),
        package_stamp(),
    )


def compiled_before(factory, key, sig):
    """Whether :func:`compile_specialised` has put this kernel in the disk cache."""
    return os.path.exists(_marker(factory, key, sig))


def compile_specialised(factory, key, sig):
    """Compile (or load) the kernel ``factory(*key)`` for ``sig``, and say so on disk
    (where it can: the marker is a hint, a cache that cannot be written has none)."""
    compile_locked(factory(*key), sig)
    path = _marker(factory, key, sig)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a"):
            pass
    except OSError:
        pass


_TIERED = {}
_TIERED_LOCK = threading.Lock()


def tiered(generic, factory, key):
    """The :class:`Tiered` kernel ``factory(*key)`` with ``generic`` standing in (one per key)."""
    entry = (factory, key)
    kernel = _TIERED.get(entry)
    if kernel is None:
        with _TIERED_LOCK:
            kernel = _TIERED.setdefault(entry, Tiered(generic, factory, key))
    return kernel


def sized(factory, n):
    """Kernel for ``n x n`` matrices from a factory of closures over a static size.

    ``factory(n_static)`` builds the kernel with ``n_static`` baked in, and
    ``factory(0)`` the one that reads the size from its arguments.  Sizes
    above :data:`SPECIALIZE_UP_TO` get the run-time kernel only; the others
    a :class:`Tiered` kernel.
    """
    n_static = static_size(n)
    if n_static == 0:
        return factory(0)
    return tiered(factory(0), factory, (n_static,))


def tiered_kernels():
    """Every :class:`Tiered` kernel created in this process."""
    return list(_TIERED.values())
