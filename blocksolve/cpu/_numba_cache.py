"""numba's disk cache for blocksolve's CPU kernels: where it lives, its locks, its faults.

numba caches one entry per closure value of a kernel; this module points
that cache at ``blocksolve.cache_dir()/cpu/numba-<version>`` instead of
``__pycache__`` next to the (possibly read-only) installed sources, keys it
on the source of every module kernels are compiled from, and adds what
numba lacks:

- two file locks: a process compiles a (kernel, signature) only after taking
  its lock, so that two processes never compile the same one (the second
  loads what the first saved), and writes to a kernel's cache index are
  serialised (numba's read-modify-write of the index can otherwise let two
  processes that save different closure values of one kernel at the same time
  point both entries at one data file);
- a cache that cannot be written (read-only, another user's, a full disk)
  still serves what it holds and compiles the rest in memory, and an entry
  that cannot be read (a truncated or corrupted file, however it fails) is a
  miss: the kernel compiles (and replaces the damaged entry where it can), the
  call goes on, and one :class:`~blocksolve.CacheWarning` per process says so;
- a fork never copies numba's compiler lock held by another thread (the
  child would wait for it for ever).

Editing this module leaves the cached kernels valid: no kernel is compiled
from it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
import threading
import warnings

import numba

from .._cache import cache_dir, memo
from .._compat.numba import (
    CacheLocator,
    add_cache_locator,
    compiler_lock,
    disk_cache,
    index_path,
    load_from_disk,
    reload_index,
)
from .._errors import CacheWarning, user_stacklevel

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: numba's own cache behaviour, no locks
    fcntl = None

__all__ = [
    "cache_path",
    "package_stamp",
    "cache_writable",
    "use_disk_cache",
    "load_cached",
    "compile_locked",
]

_HERE = os.path.dirname(os.path.abspath(__file__))
_KERNELS_DIR = os.path.join(_HERE, "kernels")
# What kernels are compiled from: the kernel modules, the batch-kernel template and
# options (_jit.py), and the numerical constants baked into them.  Editing any other
# module leaves the kernels in the disk cache valid.
_KERNEL_SOURCES = (
    os.path.join(_HERE, "_jit.py"),
    os.path.join(os.path.dirname(_HERE), "_numerics.py"),
)


@memo("cpu-source-stamp", maxsize=1)
def package_stamp():
    """Digest of the source files kernels are compiled from (kernel cache validity)."""
    digest = hashlib.sha256()
    kernels = sorted(
        os.path.join(_KERNELS_DIR, name)
        for name in os.listdir(_KERNELS_DIR)
        if name.endswith(".py")
    )
    for path in (*_KERNEL_SOURCES, *kernels):
        with open(path, "rb") as source:
            digest.update(os.path.basename(path).encode() + b"\0" + source.read())
    return digest.hexdigest()


def cache_path():
    """Folder of numba's cache files for this package's kernels."""
    return cache_dir() / "cpu" / f"numba-{numba.__version__}"


class _BlocksolveCacheLocator(CacheLocator):
    """Store the numba cache of this package's kernels under ``cache_dir()``.

    It takes every kernel of the package, whatever state the folder is in: numba's
    other locations (``__pycache__`` in the installed package, say) key an entry
    on its own file only, not on the helpers it inlines from sibling modules.
    """

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(cache_path())

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        # Kernels inline helpers from sibling modules: a change to any of
        # them must invalidate every cached kernel, not just its own file's.
        return package_stamp()

    def ensure_cache_path(self):
        # A folder that exists but cannot be written (a pre-warmed cache in a read-only
        # image, another user's) still serves its kernels; saving into it is what fails
        # (and is reported, see _tolerate_faults).
        with contextlib.suppress(OSError):
            super().ensure_cache_path()

    @classmethod
    def from_function(cls, py_func, py_file):
        if os.path.dirname(os.path.abspath(py_file)) != _KERNELS_DIR:
            return None
        return super().from_function(py_func, py_file)


add_cache_locator(_BlocksolveCacheLocator)


# --------------------------------------------------------------------------- faults

_warned = set()
_warned_lock = threading.Lock()


def _warn_once(kind, message):
    """One :class:`CacheWarning` of each kind per process."""
    with _warned_lock:
        if kind in _warned:
            return
        _warned.add(kind)
    warnings.warn(f"blocksolve: {message}", CacheWarning, stacklevel=user_stacklevel())


def _cache_fault(kind, error):
    where = cache_path()
    if kind == "read":
        _warn_once(
            kind,
            f"cannot read a kernel from the cache in {where} ({error}); "
            f"compiling it instead. If this repeats, the cache is damaged: "
            f"blocksolve.clear_cache(disk=True) empties it.",
        )
    else:
        _warn_once(
            kind,
            f"cannot save a kernel into the cache in {where} ({error}); kernels are "
            f"compiled in memory, again in every new process. Set $BLOCKSOLVE_CACHE_DIR "
            f"to a writable folder to keep them.",
        )


# What reading a damaged index raises (unpickling garbage can raise nearly anything; numba
# catches only a missing file).  A damaged data file can also fail in LLVM ("bitcode
# parsing error", a RuntimeError): any error reading an entry makes it a miss.
_DAMAGE_ERRORS = (
    EOFError,
    pickle.UnpicklingError,
    ValueError,
    TypeError,
    AttributeError,
    ImportError,
    IndexError,
    KeyError,
)


def _tolerate_faults(dispatcher):
    """Make ``dispatcher``'s cache treat an unreadable entry as a miss and a failed save
    as no save (both reported once per process)."""
    cache = disk_cache(dispatcher)
    load, save = cache.load_overload, cache.save_overload

    def load_overload(sig, target_context):
        try:
            return load(sig, target_context)
        except Exception as error:  # noqa: BLE001 - an entry that cannot be read is a miss
            _cache_fault("read", f"{type(error).__name__}: {error}")
            return None

    def save_overload(sig, data):
        try:
            save(sig, data)
        except OSError as error:
            _cache_fault("write", f"{type(error).__name__}: {error}")

    cache.load_overload, cache.save_overload = load_overload, save_overload


# --------------------------------------------------------------------------- file locks


@contextlib.contextmanager
def _file_lock(path):
    """Hold an exclusive ``flock`` on ``path`` (created if needed).

    The lock is released when the process ends, however it ends, so a
    crashed compilation never leaves a stale lock behind.  Where the file
    cannot be created or opened for writing (a read-only cache), an existing
    one is locked through a read-only descriptor, and where it cannot be
    opened at all the block runs unlocked: nothing can be saved there, so
    there is nothing for two processes to race on.  A no-op without fcntl.
    """
    fd = None
    if fcntl is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            with contextlib.suppress(OSError):
                fd = os.open(path, os.O_RDONLY)
    if fd is None:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _compile_key(dispatcher, sig):
    """File-name-safe digest of a kernel (function, closure values) and a signature."""
    func = dispatcher.py_func
    cells = tuple(c.cell_contents for c in func.__closure__ or ())
    text = f"{func.__module__}.{func.__qualname__}|{cells!r}|{tuple(sig)!r}|{package_stamp()}"
    return f"{func.__name__[:40]}-{hashlib.sha256(text.encode()).hexdigest()[:24]}"


def _lock_index_writes(dispatcher):
    """Serialise writes to ``dispatcher``'s numba cache index across processes; an index
    that cannot be read (damaged) is started afresh (its entries compile again)."""
    cache = disk_cache(dispatcher)
    save = cache.save_overload
    index = index_path(dispatcher)

    def save_overload(sig, data):
        with _file_lock(cache_path() / "locks" / (os.path.basename(index) + ".lock")):
            try:
                reload_index(dispatcher)  # what numba's save reads first
            except _DAMAGE_ERRORS:
                os.unlink(index)
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
        with _file_lock(cache_path() / "locks" / (_compile_key(dispatcher, sig) + ".lock")):
            return compile_unlocked(sig)

    dispatcher.compile = compile  # numba's call path looks it up on the instance


@memo("cpu-cache-writable", maxsize=1)
def cache_writable():
    """Whether a kernel compiled now can be saved in the disk cache (a read-only folder,
    another user's or a file cannot: kernels are then compiled in memory, and the
    warning says so once per process)."""
    path = cache_path()
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as error:
        _cache_fault("write", f"{type(error).__name__}: {error}")
        return False
    return True


def use_disk_cache(dispatcher):
    """Give a ``numba.njit(cache=True)`` dispatcher of this package the locks and the
    fault tolerance above."""
    _lock_index_writes(dispatcher)
    _tolerate_faults(dispatcher)  # a failed save, lock included, is no save
    _lock_compilation(dispatcher)
    return dispatcher


def load_cached(dispatcher, sig):
    """Make ``dispatcher`` ready for ``sig`` from the disk cache, never compiling.

    Returns
    -------
    bool
        Whether the kernel is now usable without a compilation.
    """
    return load_from_disk(dispatcher, tuple(sig))


def compile_locked(dispatcher, sig):
    """Compile (or load) ``dispatcher`` for ``sig`` under its cross-process lock."""
    dispatcher.compile(tuple(sig))


# A fork while another thread holds numba's compiler lock (loading or compiling a kernel)
# would give the child a lock nobody releases: fork waits for it instead.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=compiler_lock.acquire,
        after_in_parent=compiler_lock.release,
        after_in_child=compiler_lock.release,
    )
