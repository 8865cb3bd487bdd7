"""How blocksolve's CPU kernels are compiled and run in parallel.

A kernel is a serial ``numba.njit(nogil=True, cache=True)`` loop over a
slice ``[start, stop)`` of the batch; the kernel of a call pattern has the
matrix size as a literal (:class:`~blocksolve.cpu._compiled.BatchKernel`), so
LLVM sees the loop bounds and unrolls small sizes.  :func:`launch` runs a large batch
in chunks that the calling thread and a thread pool take in turn; the GIL is released
inside the kernel.  Compared with ``parallel=True`` and
``prange`` this compiles about three times faster and has no thread-team
start-up on small batches.

A call pattern's kernel has its sizes baked in up to :data:`SPECIALIZE_UP_TO`
and reads them at run time above; it is compiled in the background while
LAPACK answers (:mod:`blocksolve.cpu._compiled`), into numba's disk cache
(:mod:`blocksolve.cpu._numba_cache`).
"""

from __future__ import annotations

import ast
import atexit
import inspect
import os
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor

import numba

from .._cache import Memo, clear_cache, memo
from .._compat.numba import fingerprint
from .._errors import ignore_setting
from ._numba_cache import use_disk_cache

__all__ = [
    "jit",
    "batch_dispatcher",
    "launch",
    "in_chunks",
    "SPECIALIZE_UP_TO",
    "static_size",
    "use_run_time_sizes",
    "num_threads",
    "signature_of",
    "KernelChoice",
]

# Largest matrix size compiled with the size as a constant: above it one
# runtime-size kernel serves all sizes (compile time grows with unrolling,
# the speed-up shrinks).
SPECIALIZE_UP_TO = 32

# Below this much work per call (the kernels' rough operation counts), handing
# slices to the thread pool costs more than it saves: measured on 2 cores for
# Cholesky, threads start paying at ~12 000 4x4, ~3 000 8x8, ~450 16x16 matrices.
_PARALLEL_WORK = 1 << 20

# Chunks of a batch split over threads are multiples of the widest interleaved block most
# kernels compute in (kernels/_blocks.py), so that no chunk leaves a part-filled block
# behind.
_CHUNK_ALIGNMENT = 32


def jit(function):
    """Compile a batch kernel ``kernel(start, stop, *arrays_and_options)``, or a helper
    the kernels call that is worth compiling once into the disk cache."""
    return use_disk_cache(numba.njit(cache=True, nogil=True, error_model="numpy")(function))


def batch_dispatcher(body, sizes, parameters, options):
    """The kernel ``kernel(start, stop, *arguments)``: ``body(start, stop, *sizes,
    *parameters)`` with the sizes fixed (``sizes``: name -> value, 0 for the first
    argument's core dimension, read at run time) and the parameters named in
    ``options`` fixed to their values (bools or ints); the others, ``arguments``, are
    its own.

    Its source is the body's, with those values assigned as constants at its top
    rather than passed: numba then drops the branches a call pattern does not take
    before it inlines the helpers inside them, and compiles one function where a
    wrapper calling the body would copy the body's whole IR into it.  The source is
    attributed to the body's file at the body's lines and named by the body, the
    sizes and the options, so numba's disk cache keeps one entry per version.
    """
    for name, value in options.items():
        if type(value) not in (bool, int):
            raise TypeError(f"{body.__qualname__}: option {name}={value!r}: bool or int")
    arguments = [p for p in parameters if p not in options]
    fixed = {
        name: str(size) if size else f"{arguments[0]}.shape[{i + 1}]"
        for i, (name, size) in enumerate(sizes.items())
    } | {option: repr(value) for option, value in options.items()}
    module = ast.parse(textwrap.dedent(inspect.getsource(body)))
    (definition,) = module.body
    definition.name = "_".join(
        [body.__name__, "x".join(map(str, sizes.values()))]
        + [f"{option}{int(value)}" for option, value in options.items()]
    )
    definition.decorator_list = []
    definition.args = ast.arguments(
        posonlyargs=[],
        args=[ast.arg(p) for p in ["start", "stop", *arguments]],
        kwonlyargs=[],
        kw_defaults=[],
        defaults=[],
    )
    definition.body[:0] = [ast.parse(f"{name} = {value}").body[0] for name, value in fixed.items()]
    ast.increment_lineno(module, body.__code__.co_firstlineno - 1)
    ast.fix_missing_locations(module)
    scope = dict(body.__globals__)  # the body's module, without the kernels added to it
    exec(compile(module, body.__code__.co_filename, "exec"), scope)
    return jit(scope[definition.name])


# fingerprints of a call's arguments -> their numba types
_SIGNATURES = Memo("cpu-argument-types", maxsize=1024)


def signature_of(dispatcher, args):
    """numba argument types of a call ``dispatcher(*args)``.

    Typing an argument in full costs ~2-20 us (far more in a process that
    has been idle); a new call pattern asks for the signature of arguments
    whose types it has nearly always seen, only their sizes differ.  numba's
    fingerprints (type code, and for arrays ndim, layout, mutability and
    dtype -- what its typing of an array reads) key a memo of the types, as
    they key numba's own cache of argument types.
    """
    try:
        key = tuple(map(fingerprint, args))
    except (TypeError, ValueError, NotImplementedError):  # no fingerprint for this type
        return tuple(dispatcher.typeof_pyval(x) for x in args)
    return _SIGNATURES.get(key, lambda key: tuple(dispatcher.typeof_pyval(x) for x in args))


_run_time_sizes = False


def static_size(n):
    """Size to bake into a kernel: ``n`` when small enough, else 0 (read at run time)."""
    return n if n <= SPECIALIZE_UP_TO and not _run_time_sizes else 0


def use_run_time_sizes(flag):
    """Build every kernel with its sizes read at run time (``True``), or baked in up to
    :data:`SPECIALIZE_UP_TO` (``False``, the default); return the previous setting.

    The same code either way; the test suite runs on run-time sizes (one compilation
    per kernel and dtype) and on baked-in ones under its ``exhaustive`` marker.
    """
    global _run_time_sizes
    previous, _run_time_sizes = _run_time_sizes, bool(flag)
    if previous != _run_time_sizes:  # runners, and the plans holding them, chose by the old
        clear_cache()  # setting
    return previous


# --------------------------------------------------------------------------- launching


@memo("cpu-threads", maxsize=1)
def num_threads():
    """Threads used for large batches: ``$BLOCKSOLVE_NUM_THREADS`` or the CPU count.

    A value that is not a positive integer is ignored with a warning (as numba
    treats its own variables).
    """
    default = os.cpu_count() or 1
    text = os.environ.get("BLOCKSOLVE_NUM_THREADS", "").strip()
    if not text:
        return default
    try:
        threads = int(text)
    except ValueError:
        threads = 0
    if threads < 1:
        return ignore_setting("BLOCKSOLVE_NUM_THREADS", text, "a positive integer", default)
    return threads


_pool = None


def _executor():
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=num_threads(), thread_name_prefix="blocksolve")
        atexit.register(_pool.shutdown, wait=False)
    return _pool


def _forget_pool_in_child():
    """After ``fork``: the pool's threads stayed in the parent (a child's submissions to
    it would wait for ever); the child starts its own when it needs one."""
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


class KernelChoice:
    """A kernel that chooses, per call, which dispatcher runs (:class:`~._compiled.Kernel`)."""

    def pick(self, args):
        """The dispatcher to run ``kernel(*args)`` with (``args`` include start and stop)."""
        raise NotImplementedError


def launch(kernel, batch, work_per_matrix, *args):
    """Run ``kernel(start, stop, *args)`` over ``range(batch)``, in parallel when worth it
    (:func:`in_chunks`, in chunks of whole blocks of matrices).

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
    if batch * work_per_matrix < _PARALLEL_WORK:  # one slice, without in_chunks'
        kernel(0, batch, *args)  # bookkeeping: small calls are the most
        return  # sensitive to it
    in_chunks(kernel, batch, work_per_matrix, *args, alignment=_CHUNK_ALIGNMENT)


def in_chunks(compute, batch, work_per_matrix, *args, parallel_work=None, alignment=1):
    """``[compute(start, stop, *args), ...]`` over ``range(batch)``, in order of ``start``.

    One call in this thread below ``parallel_work`` (default: the kernels'
    :data:`_PARALLEL_WORK`) of work in all; above, the batch is cut into chunks
    (:func:`_chunk_size`, multiples of ``alignment`` matrices but the last) that this
    thread and ``num_threads() - 1`` pool threads take in turn until none is left,
    rather than into one slice per thread: a thread that gets its core late --
    another library's threads still spinning there after their call, as OpenBLAS's
    do after NumPy's -- then takes fewer chunks, where a fixed share waited for it
    (a batch of two chunks has nothing to rebalance).  An exception of a chunk is
    raised once every thread is done.
    """
    parallel_work = parallel_work or _PARALLEL_WORK
    threads = min(num_threads(), batch) if batch * work_per_matrix >= parallel_work else 1
    if threads == 1:
        return [compute(0, batch, *args)]
    size = _chunk_size(batch, work_per_matrix, threads, parallel_work, alignment)
    results = [None] * -(-batch // size)
    taken, lock = [0], threading.Lock()

    def take_chunks():
        while True:
            with lock:
                chunk = taken[0]
                taken[0] += 1
            if chunk >= len(results):
                return
            start = chunk * size
            results[chunk] = compute(start, min(start + size, batch), *args)

    helpers = [_executor().submit(take_chunks) for _ in range(min(threads, len(results)) - 1)]
    try:
        take_chunks()
    finally:  # the results are complete, or the error raised, only once every helper is done
        for helper in helpers:
            helper.result()
    return results


def _chunk_size(batch, work_per_matrix, threads, parallel_work, alignment):
    """Matrices per chunk of :func:`in_chunks`: between one and four chunks per thread,
    none under a quarter of ``parallel_work`` (a chunk's call and scratch cost a few
    microseconds), each a multiple of ``alignment`` matrices but the last."""
    chunks = min(4 * threads, max(threads, batch * work_per_matrix * 4 // parallel_work))
    size = -(-batch // chunks)
    return -(-size // alignment) * alignment
