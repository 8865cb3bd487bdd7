"""Every cache blocksolve keeps, in one registry: bounded memos in memory, folders on disk.

A :class:`Memo` is a bounded mapping with hit and miss counters; every memo of
the package is one (plans by call signature, runners by call pattern, numba
dispatchers by kernel and size, argument types, ...), made with :class:`Memo`
or the :func:`memo` decorator, and registered by name.  Each backend registers
the folder of its compiled artefacts with :func:`register_disk`.
:func:`cache_info` lists them all and :func:`clear_cache` empties them.
"""

from __future__ import annotations

import functools
import os
import shutil
import threading
from pathlib import Path

__all__ = ["Memo", "memo", "register_disk", "cache_dir", "cache_info", "clear_cache"]

_MEMOS: dict[str, Memo] = {}
_MISSING = object()
_DISKS: dict[str, str] = {}  # name -> sub-folder of cache_dir()


class Memo:
    """A bounded memo, registered under ``name`` for :func:`cache_info` and
    :func:`clear_cache`.

    Once ``maxsize`` entries are held, adding one forgets the oldest (what is
    forgotten is rebuilt on next use).  Lookups take no lock; building takes
    one, so that concurrent callers build a value once.

    Parameters
    ----------
    name : str
        Unique name, as :func:`cache_info` shows it.
    maxsize : int
        Most entries kept.
    register : bool
        Register the memo (tests make private ones that should not be listed).
    """

    __slots__ = ("name", "maxsize", "hits", "misses", "_entries", "_lock")

    def __init__(self, name, maxsize=256, *, register=True):
        self.name, self.maxsize = name, maxsize
        self.hits = self.misses = 0
        self._entries = {}
        self._lock = threading.RLock()
        if register:
            if name in _MEMOS:
                raise ValueError(f"a cache named {name!r} is registered already")
            _MEMOS[name] = self

    def __repr__(self):
        return f"<Memo {self.name}: {len(self._entries)}/{self.maxsize}>"

    def __len__(self):
        return len(self._entries)

    def lookup(self, key):
        """The value held for ``key``, or None (nothing is built; for memos whose values
        are never None)."""
        value = self._entries.get(key)
        if value is not None:
            self.hits += 1
        return value

    def put(self, key, value):
        """Hold ``value`` for ``key`` (forgetting the oldest entry if full); returns it."""
        entries = self._entries
        if key not in entries and len(entries) >= self.maxsize:
            entries.pop(next(iter(entries)), None)
        entries[key] = value
        return value

    def get(self, key, build):
        """The value for ``key``, made once by ``build(key)`` (which may return None)."""
        value = self._entries.get(key, _MISSING)
        if value is not _MISSING:
            self.hits += 1
            return value
        with self._lock:
            value = self._entries.get(key, _MISSING)
            if value is _MISSING:
                self.misses += 1
                value = self.put(key, build(key))
            else:
                self.hits += 1
        return value

    def keys(self):
        return list(self._entries)

    def values(self):
        return list(self._entries.values())

    def clear(self):
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def info(self):
        return {
            "entries": len(self._entries),
            "maxsize": self.maxsize,
            "hits": self.hits,
            "misses": self.misses,
        }


def memo(name, maxsize=256):
    """Decorator: ``functools.cache`` on a registered, bounded :class:`Memo`.

    The function's positional arguments (hashable) are the key.
    """

    def decorate(function):
        cache = Memo(name, maxsize)

        @functools.wraps(function)
        def cached(*args):
            return cache.get(args, _call(function))

        cached.cache = cache
        return cached

    return decorate


def _call(function):
    return lambda args: function(*args)


def register_disk(name, folder):
    """Register ``cache_dir() / folder`` as the disk cache named ``name``."""
    _DISKS[name] = folder


def cache_dir():
    """Root of blocksolve's on-disk cache, an absolute path.

    ``$BLOCKSOLVE_CACHE_DIR`` if set (a relative path is taken from the working
    folder of the first call), else ``$XDG_CACHE_HOME/blocksolve`` or
    ``~/.cache/blocksolve``.
    """
    explicit = os.environ.get("BLOCKSOLVE_CACHE_DIR")
    if explicit:
        return _absolute(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return _absolute(str(base)) / "blocksolve"


# Not a memo (clear_cache() must not forget it): a relative $BLOCKSOLVE_CACHE_DIR is bound
# to the working folder of its first use, for the whole process.
_BOUND = {}


def _absolute(path):
    """``path`` made absolute against the working folder of its first use, whatever
    ``os.chdir`` does later."""
    bound = _BOUND.get(path)
    if bound is None:
        bound = _BOUND.setdefault(path, Path(path).absolute())
    return bound


def _disk_info(folder):
    path = cache_dir() / folder
    files = [p for p in path.rglob("*") if p.is_file()] if path.exists() else []
    return {"path": str(path), "files": len(files), "bytes": sum(p.stat().st_size for p in files)}


def cache_info():
    """Every cache blocksolve keeps: its size and hits in memory, its files on disk.

    Returns
    -------
    dict
        ``{"memory": {name: {"entries", "maxsize", "hits", "misses"}},
        "disk": {name: {"path", "files", "bytes"}}}``, sorted by name.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> _ = blocksolve.cholesky(np.eye(3))
    >>> blocksolve.cache_info()["memory"]["plans"]["entries"] >= 1
    True
    """
    return {
        "memory": {name: _MEMOS[name].info() for name in sorted(_MEMOS)},
        "disk": {name: _disk_info(_DISKS[name]) for name in sorted(_DISKS)},
    }


def clear_cache(*, memory=True, disk=False):
    """Empty blocksolve's caches.

    Parameters
    ----------
    memory : bool
        Empty every memo in memory: plans, runners, kernels (rebuilt on next
        use, from the disk cache where it holds them).
    disk : bool
        Also delete the compiled artefacts under :func:`cache_dir`.
    """
    if memory:
        for cache in _MEMOS.values():
            cache.clear()
    if disk:
        for folder in _DISKS.values():
            shutil.rmtree(cache_dir() / folder, ignore_errors=True)
