"""Get size-specialised kernels ready in the background.

A :class:`~blocksolve.cpu._tiers.Tiered` kernel called for the first time
hands its specialised version to :func:`submit` and runs the generic one.
One worker process (:mod:`blocksolve.cpu._compile_worker`, at a lower
scheduling priority) compiles the jobs one after the other into the disk
cache, and a listener thread loads each kernel into this process when it is
done; a kernel an earlier compilation left in the disk cache (the worker
looks for its marker) is loaded by a thread of this process.  From the next
call on the specialised kernel runs.

The caller's part is a message of a few hundred bytes written to the
worker's pipe without blocking: the worker is started ahead of need by
:func:`start`, from the first call of a kernel family (which loads kernels
from disk anyway).  Waking a thread of this process instead would cost the
caller more than its own work: the woken thread must take the interpreter
lock the caller holds, and until it gets it (up to CPython's 5 ms switch
interval) every release of the lock by the caller's kernels (they run
``nogil``) wakes it in vain and slows them (``benchmarks/results/cpu-2026-12-03``
§2).  A thread does what the caller cannot do at once: load a kernel, start
a worker, wait for room in the pipe.

Why a process and not a thread: numba compiles under one process-wide lock
and holds the GIL for much of the work, so a compiling thread would stall
every other kernel load and much of the caller's Python code for seconds.

The worker never delays the interpreter's exit: it is terminated at exit
(numba writes its cache files atomically, so at worst a kernel is compiled
again next time), and it ends by itself when this process goes away (its
standard input closes).
"""

from __future__ import annotations

import atexit
import os
import pickle
import queue
import select
import subprocess
import sys
import threading
import time

from .._cache import cache_dir
from ._compile_worker import signature_repr
from ._numba_cache import load_cached, marker_directory, package_stamp

__all__ = ["start", "submit", "wait", "pending", "statistics"]

_MAX_STARTS = 3  # a worker that keeps dying (broken environment) is not restarted forever
_PIPE_BUF = getattr(select, "PIPE_BUF", 512)  # bytes a pipe writes whole; POSIX: at least 512

_lock = threading.Condition()
_queue = queue.SimpleQueue()
_thread = None
_worker = None
_pending = {}  # job id -> Tiered, from submit() until the kernel is ready or has failed
_sent = {}  # job id -> the _Worker compiling it
_next_id = 0
_starts = 0
_signatures = {}  # numba signature -> (its repr, its pickle); the same few recur across sizes
_stats = {"compiled": 0, "loaded": 0, "failed": 0, "seconds": 0.0}


class _Worker:
    """The compile process and the thread that reads its answers.

    It runs this process's blocksolve (its package folder first on the path, and
    ``-P``: not a ``blocksolve`` in the current folder) with this process's cache
    folder (made absolute: a relative ``$BLOCKSOLVE_CACHE_DIR`` would move with a
    ``chdir``), in a session of its own, so that a Ctrl-C at the terminal, meant for
    the caller, does not end it.  Run as a script, it imports nothing of blocksolve
    (nor numba) before its first compilation, so a worker started ahead of need and
    never used is a bare interpreter.
    """

    def __init__(self):
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        env["BLOCKSOLVE_CACHE_DIR"] = str(cache_dir())
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_compile_worker.py")
        self.process = subprocess.Popen(
            [sys.executable, "-P", script, marker_directory(), package_stamp()],
            bufsize=0,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        _lower_priority(self.process.pid)
        self._jobs = self.process.stdin.fileno()
        try:
            os.set_blocking(self._jobs, False)  # the caller's writes must never wait
            self._nonblocking = True
        except OSError:  # (not on this platform's pipes) every job goes through the thread
            self._nonblocking = False
        self._writing = threading.Lock()
        self.listener = threading.Thread(
            target=self._listen, name="blocksolve-compile-listener", daemon=True
        )
        self.listener.start()

    def try_send(self, message):
        """Write ``message`` (bytes) if the pipe takes it whole now; False if not.

        Never blocks: up to ``PIPE_BUF`` bytes a pipe writes all or nothing.
        """
        if (
            not self._nonblocking
            or len(message) > _PIPE_BUF
            or not self._writing.acquire(blocking=False)
        ):
            return False
        try:
            os.write(self._jobs, message)
        except BlockingIOError:  # the pipe is full: the worker is far behind
            return False
        finally:
            self._writing.release()
        return True

    def send(self, message):
        """Write ``message`` (bytes), waiting for room in the pipe."""
        with self._writing:
            rest = memoryview(message)
            while rest:
                try:
                    rest = rest[os.write(self._jobs, rest) :]
                except BlockingIOError:
                    select.select([], [self._jobs], [])

    def _listen(self):
        stream = self.process.stdout
        while True:
            try:
                job_id, error, seconds, marked = pickle.load(stream)
            except (EOFError, OSError, pickle.UnpicklingError):
                break
            if marked:  # compiled before: to be loaded here
                _hand_to_thread(job_id)
            else:
                _done(job_id, error, seconds)
        code = self.process.wait()
        _worker_exited(self, f"the background compiler exited (code {code})")

    def close(self):
        try:
            self.process.stdin.close()
        except OSError:
            pass
        if self.process.poll() is None:
            self.process.terminate()


def _lower_priority(pid):
    """Ten nice levels below this process, from the start: the worker's own start-up
    (interpreter, imports) would otherwise compete with the caller's next kernels."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, min(os.getpriority(os.PRIO_PROCESS, 0) + 10, 19))
    except (AttributeError, OSError):  # no priorities here (Windows); the worker just competes
        pass


def _done(job_id, error, seconds, counter="compiled"):
    with _lock:
        kernel = _pending.get(job_id)
        _sent.pop(job_id, None)
    if kernel is None:
        return
    kernel.finish_background(error)
    with _lock:
        _pending.pop(job_id, None)
        _stats["failed" if kernel.error else counter] += 1
        _stats["seconds"] += seconds
        _lock.notify_all()


def _worker_exited(worker, reason):
    global _worker
    with _lock:
        if _worker is worker:
            _worker = None
        lost = [job_id for job_id, sent in _sent.items() if sent is worker]
        for job_id in lost:
            del _sent[job_id]
    for job_id in lost:
        _done(job_id, reason, 0.0)


def _message(job_id, kernel, check_marker):
    """The worker's job for ``kernel`` (see :mod:`._compile_worker`), the signature's repr
    and pickle made once per signature (pickling numba types costs ~40 us)."""
    signature = _signatures.get(kernel.signature)
    if signature is None:
        signature = _signatures[kernel.signature] = (
            signature_repr(kernel.signature),
            pickle.dumps(kernel.signature),
        )
    factory = kernel.factory
    return pickle.dumps(
        (job_id, factory.__module__, factory.__qualname__, kernel.key, *signature, check_marker)
    )


def _start_worker():
    """A running worker (started now if there is none); why not, or None.  Under ``_lock``."""
    global _worker, _starts
    if _worker is not None and _worker.process.poll() is None:
        return None
    if _starts >= _MAX_STARTS:
        return f"the background compiler failed {_starts} times; not restarted"
    _starts += 1
    try:
        _worker = _Worker()
    except OSError as error:
        return f"cannot start the background compiler: {error}"
    return None


def start():
    """Start the worker ahead of its first job, unless one runs or keeps failing to.

    Called by the first call of a kernel family (see
    :meth:`blocksolve.cpu.CpuBackend.every_size_runner`), whose second call is
    likely to hand a job over: starting it then would cost that call ~5 ms.
    """
    if _worker is None:
        with _lock:
            if _worker is None:
                _start_worker()


def _send(job_id, kernel, *, wait):
    """Hand ``kernel``'s specialised version to the worker; why not, or None.

    ``wait=False``, the caller's way: only to a running worker, only if its pipe takes
    the job now, and the worker first looks for the marker of an earlier compilation
    (answering at once if it finds one).  ``wait=True``, the thread's way (the marker
    already looked for here): starting a worker if needed, waiting for room in its pipe.
    """
    message = _message(job_id, kernel, check_marker=not wait)
    with _lock:
        error = _start_worker() if wait else None
        if error is not None:
            return error
        worker = _worker
        if worker is None:
            return "no background compiler running"
        _sent[job_id] = worker
    try:
        if wait:
            worker.send(message)
            return None
        if worker.try_send(message):
            return None
        error = "the background compiler's pipe is full"
    except (OSError, ValueError) as exc:  # the worker is gone
        error = f"cannot reach the background compiler: {exc}"
    with _lock:
        _sent.pop(job_id, None)
    return error


# The thread holds the GIL while it checks the disk cache, loads a kernel or
# starts the worker; starting on a job this long after it was submitted lets
# the call that submitted it return first (a new pattern's first call is
# ~0.1 ms; the job takes seconds either way).
_SETTLE_S = 0.002


def _prepare():
    """The thread that loads specialised kernels from disk or sends them to the worker."""
    while True:
        job_id = _queue.get()
        time.sleep(_SETTLE_S)
        with _lock:
            kernel = _pending.get(job_id)
        if kernel is None:  # failed meanwhile (its worker exited)
            continue
        try:
            if kernel.compiled_before() and load_cached(kernel.specialised, kernel.signature):
                _done(job_id, None, 0.0, counter="loaded")
                continue
            error = _send(job_id, kernel, wait=True)
        except Exception as exc:  # noqa: BLE001 - the kernel stays generic, the thread goes on
            error = f"{type(exc).__name__}: {exc}"
        if error is not None:
            _done(job_id, error, 0.0)


def submit(kernel):
    """Get the specialised version of a :class:`Tiered` ``kernel`` (its ``signature``
    set) ready in the background; returns at once.

    The job is written to a running worker's pipe from here when the pipe has room;
    everything else -- loading a kernel compiled before, starting the worker, waiting
    for room -- is left to a thread.  Called under the kernel's lock: whatever
    finishes the job runs in another thread.
    """
    global _next_id
    with _lock:
        _next_id += 1
        job_id = _next_id
        _pending[job_id] = kernel
    try:
        if _send(job_id, kernel, wait=False) is None:
            return
    except Exception:  # noqa: BLE001 - the thread tries again and reports what fails
        pass
    _hand_to_thread(job_id)


def _hand_to_thread(job_id):
    global _thread
    with _lock:
        _sent.pop(job_id, None)
        if _thread is None:
            _thread = threading.Thread(target=_prepare, name="blocksolve-specialise", daemon=True)
            _thread.start()
    _queue.put(job_id)


def pending():
    """Number of specialised kernels still being compiled in the background."""
    with _lock:
        return len(_pending)


def wait(timeout=None):
    """Block until every background compilation has finished; False on timeout."""
    deadline = None if timeout is None else time.monotonic() + timeout
    with _lock:
        while _pending:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            _lock.wait(left)
    return True


def statistics():
    """Background work of this process: kernels ``pending``, ``compiled`` by the worker,
    ``loaded`` from the disk cache, ``failed``, and the worker's ``seconds``."""
    with _lock:
        return {"pending": len(_pending), **_stats}


def _close():
    with _lock:
        worker = _worker
    if worker is not None:
        worker.close()


def _forget_in_child():
    """After ``fork``: the threads, the worker and the jobs belong to the parent."""
    global _lock, _queue, _thread, _worker, _pending, _sent, _starts
    for kernel in _pending.values():
        kernel.reset()
    _lock, _queue, _thread, _worker = threading.Condition(), queue.SimpleQueue(), None, None
    _pending, _sent, _starts = {}, {}, 0


atexit.register(_close)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
