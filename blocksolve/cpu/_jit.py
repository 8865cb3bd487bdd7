"""How blocksolve's CPU kernels are compiled and cached.

Kernels are ``numba.njit(parallel=True, cache=True)`` functions built inside
factories whose arguments (matrix size, options) are closure constants, so
LLVM sees the loop bounds and unrolls small sizes.  numba caches one entry
per closure value; this module points that cache at
``blocksolve.cache_dir()/cpu/numba-<version>`` instead of ``__pycache__``
next to the (possibly read-only) installed sources.
"""

from __future__ import annotations

import os

import numba
from numba.core import caching

from .._cache import KernelCache, cache_dir

__all__ = ["jit", "CACHE", "SPECIALIZE_UP_TO", "static_size"]

# Largest matrix size compiled with the size as a constant: above it one
# runtime-size kernel serves all sizes (compile time grows with unrolling,
# the speed-up shrinks).
SPECIALIZE_UP_TO = 32

CACHE = KernelCache("cpu")
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class _BlocksolveCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """Store the numba cache of this package's kernels under :func:`cache_dir`."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(CACHE.disk_dir / f"numba-{numba.__version__}")

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        if os.path.dirname(os.path.abspath(py_file)) != _PACKAGE_DIR:
            return None
        return super().from_function(py_func, py_file)


if _BlocksolveCacheLocator not in caching.CacheImpl._locator_classes:
    caching.CacheImpl._locator_classes.insert(0, _BlocksolveCacheLocator)


def jit(function):
    """Compile a batch kernel: parallel over the batch, cached on disk."""
    return numba.njit(parallel=True, cache=True, nogil=True, error_model="numpy")(function)


def static_size(n):
    """Size to bake into a kernel: ``n`` when small enough, else 0 (runtime)."""
    return n if n <= SPECIALIZE_UP_TO else 0
