"""How blocksolve's CPU kernels are compiled, cached and run in parallel.

A kernel is a serial ``numba.njit(nogil=True, cache=True)`` loop over a
slice ``[start, stop)`` of the batch, built inside a factory whose argument
(the matrix size) is a closure constant, so LLVM sees the loop bounds and
unrolls small sizes.  :func:`launch` splits the batch across a thread pool;
the GIL is released inside the kernel.  Compared with ``parallel=True`` and
``prange`` this compiles about three times faster and has no thread-team
start-up on small batches.

numba caches one entry per closure value; this module points that cache at
``blocksolve.cache_dir()/cpu/numba-<version>`` instead of ``__pycache__``
next to the (possibly read-only) installed sources.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor

import numba
from numba.core import caching

from .._cache import KernelCache

__all__ = ["jit", "launch", "CACHE", "SPECIALIZE_UP_TO", "static_size", "num_threads"]

# Largest matrix size compiled with the size as a constant: above it one
# runtime-size kernel serves all sizes (compile time grows with unrolling,
# the speed-up shrinks).
SPECIALIZE_UP_TO = 32

# Below this much work per call (the kernels' rough operation counts), handing
# slices to the thread pool costs more than it saves: measured on 2 cores for
# Cholesky, threads start paying at ~12 000 4x4, ~3 000 8x8, ~450 16x16 matrices.
_PARALLEL_WORK = 1 << 20

CACHE = KernelCache("cpu")
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


@functools.cache
def _package_stamp():
    """Digest of every source file of this package (kernel cache validity)."""
    digest = hashlib.sha256()
    for name in sorted(os.listdir(_PACKAGE_DIR)):
        if name.endswith(".py"):
            with open(os.path.join(_PACKAGE_DIR, name), "rb") as source:
                digest.update(name.encode() + b"\0" + source.read())
    return digest.hexdigest()


class _BlocksolveCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """Store the numba cache of this package's kernels under ``cache_dir()``."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(CACHE.disk_dir / f"numba-{numba.__version__}")

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        # Kernels inline helpers from sibling modules: a change to any of
        # them must invalidate every cached kernel, not just its own file's.
        return _package_stamp()

    @classmethod
    def from_function(cls, py_func, py_file):
        if os.path.dirname(os.path.abspath(py_file)) != _PACKAGE_DIR:
            return None
        return super().from_function(py_func, py_file)


if _BlocksolveCacheLocator not in caching.CacheImpl._locator_classes:
    caching.CacheImpl._locator_classes.insert(0, _BlocksolveCacheLocator)


def jit(function):
    """Compile a batch kernel ``kernel(start, stop, *arrays_and_options)``."""
    return numba.njit(cache=True, nogil=True, error_model="numpy")(function)


def static_size(n):
    """Size to bake into a kernel: ``n`` when small enough, else 0 (runtime)."""
    return n if n <= SPECIALIZE_UP_TO else 0


@functools.cache
def num_threads():
    """Threads used for large batches: ``$BLOCKSOLVE_NUM_THREADS`` or the CPU count."""
    return int(os.environ.get("BLOCKSOLVE_NUM_THREADS") or os.cpu_count() or 1)


_pool = None


def _executor():
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=num_threads(), thread_name_prefix="blocksolve")
        atexit.register(_pool.shutdown, wait=False)
    return _pool


def launch(kernel, batch, work_per_matrix, *args):
    """Run ``kernel(start, stop, *args)`` over ``range(batch)``, in parallel when worth it.

    Parameters
    ----------
    kernel : numba dispatcher
    batch : int
        Number of matrices.
    work_per_matrix : int
        Rough scalar operation count of one matrix (decides threading).
    *args
        Arrays and options passed through.
    """
    threads = min(num_threads(), batch)
    if threads <= 1 or batch * work_per_matrix < _PARALLEL_WORK:
        kernel(0, batch, *args)
        return
    bounds = [batch * i // threads for i in range(threads + 1)]
    futures = [_executor().submit(kernel, lo, hi, *args)
               for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
    for future in futures:
        future.result()
