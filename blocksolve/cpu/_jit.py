"""How blocksolve's CPU kernels are compiled, cached and run in parallel.

A kernel is a serial ``numba.njit(nogil=True, cache=True)`` loop over a
slice ``[start, stop)`` of the batch, built inside a factory whose argument
(the matrix size) is a closure constant, so LLVM sees the loop bounds and
unrolls small sizes.  :func:`launch` splits the batch across a thread pool;
the GIL is released inside the kernel.  Compared with ``parallel=True`` and
``prange`` this compiles about three times faster and has no thread-team
start-up on small batches.

Kernels come in two tiers, the size-specialised one and the one that takes
the sizes at run time (:mod:`blocksolve.cpu._tiers`).

**The disk cache.**  numba caches one entry per closure value; this module
points that cache at ``blocksolve.cache_dir()/cpu/numba-<version>`` instead
of ``__pycache__`` next to the (possibly read-only) installed sources, and
adds two file locks numba lacks: a process compiles a (kernel, signature)
only after taking its lock, so that two processes never compile the same
one (the second loads what the first saved), and writes to a kernel's cache
index are serialised (numba's read-modify-write of the index can otherwise
let two processes that save different closure values of one kernel at the
same time point both entries at one data file).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor

import numba
from numba.core import caching
from numba.core.compiler_lock import global_compiler_lock

try:  # numba's own key for its argument-type cache (C, ~0.1 us per argument)
    from numba._dispatcher import compute_fingerprint as _fingerprint
except ImportError:  # pragma: no cover - another numba: type every argument in full
    _fingerprint = None

from .._cache import KernelCache

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: numba's own cache behaviour, no locks
    fcntl = None

__all__ = ["jit", "launch", "in_parallel", "CACHE", "SPECIALIZE_UP_TO", "static_size",
           "num_threads", "signature_of", "load_cached", "compile_locked", "KernelChoice"]

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


# Modules of this package that no kernel compiles code from: editing them
# leaves the kernels in the disk cache valid.
_NOT_KERNEL_SOURCES = frozenset({"__init__.py", "_background.py", "_compile_worker.py",
                                 "_lapack.py", "_tiers.py"})


@functools.cache
def _package_stamp():
    """Digest of the source files of this package that kernels are compiled from
    (kernel cache validity)."""
    digest = hashlib.sha256()
    for name in sorted(os.listdir(_PACKAGE_DIR)):
        if name.endswith(".py") and name not in _NOT_KERNEL_SOURCES:
            with open(os.path.join(_PACKAGE_DIR, name), "rb") as source:
                digest.update(name.encode() + b"\0" + source.read())
    return digest.hexdigest()


def _numba_cache_dir():
    return CACHE.disk_dir / f"numba-{numba.__version__}"


class _BlocksolveCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """Store the numba cache of this package's kernels under ``cache_dir()``."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(_numba_cache_dir())

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


# --------------------------------------------------------------------------- file locks

@contextlib.contextmanager
def _file_lock(path):
    """Hold an exclusive ``flock`` on ``path`` (created if needed); a no-op without fcntl.

    The lock is released when the process ends, however it ends, so a
    crashed compilation never leaves a stale lock behind.
    """
    if fcntl is None:  # pragma: no cover
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _compile_key(dispatcher, sig):
    """File-name-safe digest of a kernel (function, closure values) and a signature."""
    func = dispatcher.py_func
    cells = tuple(c.cell_contents for c in func.__closure__ or ())
    text = f"{func.__module__}.{func.__qualname__}|{cells!r}|{tuple(sig)!r}|{_package_stamp()}"
    return f"{func.__name__[:40]}-{hashlib.sha256(text.encode()).hexdigest()[:24]}"


def _lock_index_writes(dispatcher):
    """Serialise writes to ``dispatcher``'s numba cache index across processes."""
    cache = dispatcher._cache
    save = cache.save_overload
    index = cache._cache_file._index_path

    def save_overload(sig, data):
        with _file_lock(_numba_cache_dir() / "locks" / (os.path.basename(index) + ".lock")):
            save(sig, data)

    cache.save_overload = save_overload


def _lock_compilation(dispatcher):
    """Make ``dispatcher`` compile each signature under a per-(kernel, signature) file lock.

    A second process that needs the same kernel waits for the first and then
    loads it from the disk cache instead of compiling it again; threads of
    one process are serialised the same way (each takes its own descriptor).
    """
    compile_unlocked = dispatcher.compile

    def compile(sig):
        args = tuple(sig) if not isinstance(sig, str) else sig
        if args in dispatcher.overloads:
            return dispatcher.overloads[args].entry_point
        with _file_lock(_numba_cache_dir() / "locks" / (_compile_key(dispatcher, sig) + ".lock")):
            return compile_unlocked(sig)

    dispatcher.compile = compile  # numba's call path looks it up on the instance


def jit(function):
    """Compile a batch kernel ``kernel(start, stop, *arrays_and_options)``."""
    dispatcher = numba.njit(cache=True, nogil=True, error_model="numpy")(function)
    _lock_index_writes(dispatcher)
    _lock_compilation(dispatcher)
    return dispatcher


# fingerprints of a call's arguments -> their numba types
_SIGNATURES = {}


def signature_of(dispatcher, args):
    """numba argument types of a call ``dispatcher(*args)``.

    Typing an argument in full costs ~2-20 us (far more in a process that
    has been idle); a new call pattern asks for the signature of arguments
    whose types it has nearly always seen, only their sizes differ.  numba's
    fingerprints (type code, and for arrays ndim, layout, mutability and
    dtype -- what its typing of an array reads) key a memo of the types, as
    they key numba's own cache of argument types.
    """
    key = None
    if _fingerprint is not None:
        try:
            key = tuple(map(_fingerprint, args))
        except (TypeError, ValueError, NotImplementedError):  # no fingerprint for this type
            key = None
        signature = _SIGNATURES.get(key) if key is not None else None
        if signature is not None:
            return signature
    signature = tuple(dispatcher.typeof_pyval(x) for x in args)
    if key is not None:
        _SIGNATURES[key] = signature
    return signature


def load_cached(dispatcher, sig):
    """Make ``dispatcher`` ready for ``sig`` from the disk cache, never compiling.

    Returns
    -------
    bool
        Whether the kernel is now usable without a compilation.
    """
    sig = tuple(sig)
    if sig in dispatcher.overloads:
        return True
    # Dispatcher.compile without its last step: numba has no "load only" call.
    with global_compiler_lock:
        if sig in dispatcher.overloads:
            return True
        cres = dispatcher._cache.load_overload(sig, dispatcher.targetctx)
        if cres is None:
            return False
        dispatcher.targetctx.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
        dispatcher.add_overload(cres)
    return True


def compile_locked(dispatcher, sig):
    """Compile (or load) ``dispatcher`` for ``sig`` under its cross-process lock."""
    dispatcher.compile(tuple(sig))


def static_size(n):
    """Size to bake into a kernel: ``n`` when small enough, else 0 (runtime)."""
    return n if n <= SPECIALIZE_UP_TO else 0


# --------------------------------------------------------------------------- launching

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


class KernelChoice:
    """A kernel that chooses, per call, which dispatcher runs (:class:`~._tiers.Tiered`)."""

    def pick(self, args):
        """The dispatcher to run ``kernel(*args)`` with (``args`` include start and stop)."""
        raise NotImplementedError


def launch(kernel, batch, work_per_matrix, *args):
    """Run ``kernel(start, stop, *args)`` over ``range(batch)``, in parallel when worth it.

    Parameters
    ----------
    kernel : numba dispatcher or KernelChoice
    batch : int
        Number of matrices.
    work_per_matrix : int
        Rough scalar operation count of one matrix (decides threading).
    *args
        Arrays and options passed through.
    """
    if isinstance(kernel, KernelChoice):  # one choice for the whole batch
        kernel = kernel.pick((0, batch) + args)
    if batch * work_per_matrix < _PARALLEL_WORK:  # one slice, without in_parallel's
        kernel(0, batch, *args)                   # bookkeeping: small calls are the most
        return                                    # sensitive to it
    for future in in_parallel(kernel, batch, work_per_matrix, *args):
        future.result()


def in_parallel(compute, batch, work_per_matrix, *args, parallel_work=None):
    """``compute(start, stop, *args)`` over ``range(batch)``: in this thread when one slice
    is enough (returns ``[result]``), else a slice per thread (returns their futures).

    Either way, ``[f.result() for f in ...]`` are the slices' results in order.
    ``parallel_work``: the least total work worth splitting (default: the kernels').
    """
    threads = min(num_threads(), batch)
    if threads <= 1 or batch * work_per_matrix < (parallel_work or _PARALLEL_WORK):
        return [_Done(compute(0, batch, *args))]
    bounds = [batch * i // threads for i in range(threads + 1)]
    return [_executor().submit(compute, lo, hi, *args)
            for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]


class _Done:
    """A result computed in the caller's thread, read like a future's."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value
