"""Two-level kernel cache: call pattern -> built kernel in memory; compiled
artefacts on disk (each backend owns its disk format, this module owns the
location, the inventory and the clearing)."""

from __future__ import annotations

import functools
import os
import shutil
import threading
from pathlib import Path

__all__ = ["KernelCache", "cache_dir", "cache_info", "clear_cache"]

_REGISTRY: dict[str, KernelCache] = {}


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
    return _absolute(base) / "blocksolve"


@functools.cache
def _absolute(path):
    """``path`` made absolute against the working folder of its first use: a relative
    ``$BLOCKSOLVE_CACHE_DIR`` names one folder for the whole process, whatever
    ``os.chdir`` does later."""
    return Path(path).absolute()


class KernelCache:
    """Memory cache of built kernels for one backend.

    Parameters
    ----------
    backend : str
        Backend name; also the sub-folder of :func:`cache_dir` its compiled
        artefacts live in.
    """

    def __init__(self, backend):
        self.backend = backend
        self._kernels = {}
        self._lock = threading.Lock()
        self.hits = self.misses = 0
        _REGISTRY[backend] = self

    @property
    def disk_dir(self):
        return cache_dir() / self.backend

    def lookup(self, pattern):
        """The kernel built for ``pattern``, or None (nothing is built)."""
        kernel = self._kernels.get(pattern)
        if kernel is not None:
            self.hits += 1
        return kernel

    def get(self, pattern, build):
        """Return the kernel for ``pattern``, building it once with ``build(pattern)``."""
        kernel = self._kernels.get(pattern)
        if kernel is not None:
            self.hits += 1
            return kernel
        with self._lock:
            kernel = self._kernels.get(pattern)
            if kernel is None:
                self.misses += 1
                kernel = self._kernels[pattern] = build(pattern)
            else:
                self.hits += 1
        return kernel

    def patterns(self):
        return list(self._kernels)

    def clear(self):
        with self._lock:
            self._kernels.clear()
            self.hits = self.misses = 0

    def info(self):
        files = (
            [p for p in self.disk_dir.rglob("*") if p.is_file()] if self.disk_dir.exists() else []
        )
        return {
            "memory": {"entries": len(self._kernels), "hits": self.hits, "misses": self.misses},
            "disk": {
                "path": str(self.disk_dir),
                "files": len(files),
                "bytes": sum(p.stat().st_size for p in files),
            },
        }


def cache_info():
    """Kernel cache statistics of every backend that has been used.

    Returns
    -------
    dict
        ``{backend: {"memory": {"entries", "hits", "misses"},
        "disk": {"path", "files", "bytes"}}}``.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> _ = blocksolve.cholesky(np.eye(3))
    >>> blocksolve.cache_info()["cpu"]["memory"]["entries"] >= 1
    True
    """
    return {name: cache.info() for name, cache in sorted(_REGISTRY.items())}


def clear_cache(*, memory=True, disk=False):
    """Forget built kernels.

    Parameters
    ----------
    memory : bool
        Drop the in-memory kernels (they are rebuilt, from disk when
        possible, on next use), and the plans of the call signatures seen,
        which hold some of them.
    disk : bool
        Also delete the compiled artefacts under :func:`cache_dir`.
    """
    if memory:
        from ._execute import clear_plans  # _execute builds on this module

        clear_plans()
    for cache in _REGISTRY.values():
        if memory:
            cache.clear()
        if disk and cache.disk_dir.exists():
            shutil.rmtree(cache.disk_dir, ignore_errors=True)
