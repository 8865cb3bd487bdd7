"""numba's private API that blocksolve's CPU kernels use.

Checked on numba 0.60.0 through 0.68.1 (the range ``pyproject.toml`` allows):

- ``numba._dispatcher.compute_fingerprint(value)``: the C function keying numba's
  own cache of argument types (:func:`fingerprint`);
- ``numba.core.caching``: ``_CacheLocator`` and ``_SourceFileBackedLocatorMixin``,
  subclassed to put the disk cache where blocksolve wants it, and
  ``CacheImpl._locator_classes``, where such a locator is registered
  (:func:`add_cache_locator`);
- a ``cache=True`` dispatcher's ``_cache`` (``load_overload``,
  ``save_overload``, ``_cache_file._index_path``, ``_cache_file._load_index``),
  ``_cache_hits``, ``targetctx.insert_user_function`` and ``add_overload``: what
  :func:`load_from_disk` does to load a kernel without compiling, the rest of
  ``Dispatcher.compile`` (numba has no "load only" call);
- ``numba.core.compiler_lock.global_compiler_lock``;
- the jit option ``_nrt=False`` (:data:`NO_REFERENCE_COUNTS`): a function compiled
  without numba's reference counting, whose array arguments then cost no atomic
  operations per call (a helper called once per matrix).

``tests/test_compat.py`` checks every name here on the installed numba.
"""

from __future__ import annotations

from numba import _dispatcher
from numba.core import caching
from numba.core.compiler_lock import global_compiler_lock

__all__ = [
    "CHECKED",
    "fingerprint",
    "CacheLocator",
    "add_cache_locator",
    "disk_cache",
    "index_path",
    "reload_index",
    "load_from_disk",
    "compiler_lock",
    "NO_REFERENCE_COUNTS",
]

CHECKED = ("0.60.0", "0.68.1")

fingerprint = _dispatcher.compute_fingerprint
compiler_lock = global_compiler_lock
# jit options: no reference counts in the function (it must not allocate)
NO_REFERENCE_COUNTS = {"_nrt": False}


class CacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """Base of a numba cache locator keyed on a source file (numba's own base classes)."""


def add_cache_locator(locator):
    """Make ``locator`` the first numba tries for every ``cache=True`` function."""
    if locator not in caching.CacheImpl._locator_classes:
        caching.CacheImpl._locator_classes.insert(0, locator)


def disk_cache(dispatcher):
    """The disk cache of a ``cache=True`` dispatcher: its ``load_overload(sig,
    target_context)`` and ``save_overload(sig, data)`` may be wrapped."""
    return dispatcher._cache


def index_path(dispatcher):
    """Path of the dispatcher's cache index file."""
    return dispatcher._cache._cache_file._index_path


def reload_index(dispatcher):
    """Read the dispatcher's cache index as numba's save reads it (raises if damaged)."""
    dispatcher._cache._cache_file._load_index()


def load_from_disk(dispatcher, sig):
    """Make ``dispatcher`` ready for the signature ``sig`` (a tuple of numba types) from
    its disk cache, never compiling; whether it is now usable without a compilation."""
    if sig in dispatcher.overloads:
        return True
    with global_compiler_lock:
        if sig in dispatcher.overloads:
            return True
        cres = dispatcher._cache.load_overload(sig, dispatcher.targetctx)
        if cres is None:
            return False
        dispatcher._cache_hits[sig] += 1  # numba's statistics, as compile() keeps them
        dispatcher.targetctx.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
        dispatcher.add_overload(cres)
    return True
