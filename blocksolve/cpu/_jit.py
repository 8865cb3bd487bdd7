"""How blocksolve's CPU kernels are compiled, cached, tiered and run in parallel.

A kernel is a serial ``numba.njit(nogil=True, cache=True)`` loop over a
slice ``[start, stop)`` of the batch, built inside a factory whose argument
(the matrix size) is a closure constant, so LLVM sees the loop bounds and
unrolls small sizes.  :func:`launch` splits the batch across a thread pool;
the GIL is released inside the kernel.  Compared with ``parallel=True`` and
``prange`` this compiles about three times faster and has no thread-team
start-up on small batches.

**Two tiers.**  Compiling a size-specialised kernel takes seconds, so a
builder asks :func:`sized` (or :func:`tiered`) for a :class:`Tiered` kernel:
the *generic* kernel of the family, which takes the sizes at run time and is
compiled once per dtype (and kept in the disk cache), answers at once, while
the *specialised* one is compiled by a background process
(:mod:`blocksolve.cpu._background`) and takes over when it is ready.  Both
run the same algorithm, so their results agree to rounding.
:func:`set_specialization` chooses between ``'background'`` (the default,
or ``$BLOCKSOLVE_SPECIALIZE``), ``'wait'`` (compile the specialised kernel
before the first call returns, as benchmarks want) and ``'never'``.

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
import threading
from concurrent.futures import ThreadPoolExecutor

import numba
from numba.core import caching
from numba.core.compiler_lock import global_compiler_lock

from .._cache import KernelCache

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: numba's own cache behaviour, no locks
    fcntl = None

__all__ = ["jit", "launch", "CACHE", "SPECIALIZE_UP_TO", "static_size", "num_threads",
           "Tiered", "sized", "tiered", "MODES", "set_specialization", "specialization",
           "load_cached", "compile_locked"]

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


def signature_of(dispatcher, args):
    """numba argument types of a call ``dispatcher(*args)``."""
    return tuple(dispatcher.typeof_pyval(x) for x in args)


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


# --------------------------------------------------------------------------- tiers

MODES = ("background", "wait", "never")
_ENV_MODE = "BLOCKSOLVE_SPECIALIZE"


def _check_mode(mode, where):
    if mode not in MODES:
        raise ValueError(f"{where}: specialization must be one of "
                         f"{', '.join(map(repr, MODES))}; got {mode!r}")
    return mode


_mode = _check_mode(os.environ.get(_ENV_MODE) or "background", f"${_ENV_MODE}")


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
        while the kernel specialised on its sizes compiles in a background
        process and takes over when ready.  ``'wait'``: the first call of a
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


class Tiered:
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
                if load_cached(self.specialised, self.signature):
                    return self._finish(None)
            if mode == "wait":  # also when pending: the lock waits for the other compiler
                compile_locked(self.specialised, self.signature)
                return self._finish(None)
            if self.state == _NEW:
                from . import _background
                self.state = _PENDING
                error = _background.submit(self)
                if error is not None:
                    return self._finish(error)
        return self.generic

    def __call__(self, start, stop, *args):
        return self.pick((start, stop) + args)(start, stop, *args)

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
                error = ("compiled in the background but not found in the disk cache "
                         f"({_numba_cache_dir()})")
            self._finish(error)


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


def launch(kernel, batch, work_per_matrix, *args):
    """Run ``kernel(start, stop, *args)`` over ``range(batch)``, in parallel when worth it.

    Parameters
    ----------
    kernel : numba dispatcher or Tiered
    batch : int
        Number of matrices.
    work_per_matrix : int
        Rough scalar operation count of one matrix (decides threading).
    *args
        Arrays and options passed through.
    """
    if type(kernel) is Tiered:
        kernel = kernel.pick((0, batch) + args)
    threads = min(num_threads(), batch)
    if threads <= 1 or batch * work_per_matrix < _PARALLEL_WORK:
        kernel(0, batch, *args)
        return
    bounds = [batch * i // threads for i in range(threads + 1)]
    futures = [_executor().submit(kernel, lo, hi, *args)
               for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
    for future in futures:
        future.result()
