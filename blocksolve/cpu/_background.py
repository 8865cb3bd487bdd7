"""Get size-specialised kernels ready in the background.

A :class:`~blocksolve.cpu._tiers.Tiered` kernel called for the first time
hands its specialised version to :func:`submit` and runs the generic one.
A thread of this process loads the specialised kernel if an earlier
compilation left it in the disk cache; otherwise it sends it to one worker
process (:mod:`blocksolve.cpu._compile_worker`, started on the first such
job, at a lower scheduling priority), which compiles the jobs one after the
other into the disk cache, and a listener thread loads each kernel into
this process when it is done.  From the next call on the specialised kernel
runs; nothing of this is on the caller's path.

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
import subprocess
import sys
import threading
import time

from .._cache import cache_dir
from ._numba_cache import load_cached

__all__ = ["submit", "wait", "pending", "statistics"]

_MAX_STARTS = 3  # a worker that keeps dying (broken environment) is not restarted forever

_lock = threading.Condition()
_queue = queue.SimpleQueue()
_thread = None
_worker = None
_pending = {}  # job id -> Tiered, from submit() until the kernel is ready or has failed
_sent = {}  # job id -> the _Worker compiling it
_next_id = 0
_starts = 0
_stats = {"compiled": 0, "loaded": 0, "failed": 0, "seconds": 0.0}


class _Worker:
    """The compile process and the thread that reads its answers.

    It runs this process's blocksolve (its package folder first on the path, and
    ``-P``: not a ``blocksolve`` in the current folder) with this process's cache
    folder (made absolute: a relative ``$BLOCKSOLVE_CACHE_DIR`` would move with a
    ``chdir``), in a session of its own, so that a Ctrl-C at the terminal, meant for
    the caller, does not end it.
    """

    def __init__(self):
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH"))
                                            if p)
        env["BLOCKSOLVE_CACHE_DIR"] = str(cache_dir())
        self.process = subprocess.Popen(
            [sys.executable, "-P", "-m", "blocksolve.cpu._compile_worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
            start_new_session=True)
        _lower_priority(self.process.pid)
        self.listener = threading.Thread(target=self._listen, name="blocksolve-compile-listener",
                                         daemon=True)
        self.listener.start()

    def send(self, message):
        pickle.dump(message, self.process.stdin)
        self.process.stdin.flush()

    def _listen(self):
        stream = self.process.stdout
        while True:
            try:
                job_id, error, seconds = pickle.load(stream)
            except (EOFError, OSError, pickle.UnpicklingError):
                break
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


def _send(job_id, kernel):
    """Hand ``kernel``'s specialised version to the worker; why not, or None."""
    global _worker, _starts
    factory = kernel.factory
    message = (job_id, factory.__module__, factory.__qualname__, kernel.key, kernel.signature)
    with _lock:
        if _worker is None or _worker.process.poll() is not None:
            if _starts >= _MAX_STARTS:
                return f"the background compiler failed {_starts} times; not restarted"
            _starts += 1
            try:
                _worker = _Worker()
            except OSError as error:
                return f"cannot start the background compiler: {error}"
        _sent[job_id] = _worker
        try:
            _worker.send(message)
        except (OSError, ValueError) as error:  # the worker is gone
            del _sent[job_id]
            return f"cannot reach the background compiler: {error}"
    return None


# The thread holds the GIL while it checks the disk cache, loads a kernel or
# starts the worker; starting on a job this long after it was submitted lets
# the call that submitted it return first (a new pattern's first call is
# ~0.1 ms; the job takes seconds either way).
_SETTLE_S = 0.002


def _prepare():
    """The thread that loads specialised kernels from disk or sends them to the worker."""
    while True:
        job_id, kernel = _queue.get()
        time.sleep(_SETTLE_S)
        try:
            if kernel.compiled_before() and load_cached(kernel.specialised,
                                                        kernel.signature):
                _done(job_id, None, 0.0, counter="loaded")
                continue
            error = _send(job_id, kernel)
        except Exception as exc:  # noqa: BLE001 - the kernel stays generic, the thread goes on
            error = f"{type(exc).__name__}: {exc}"
        if error is not None:
            _done(job_id, error, 0.0)


def submit(kernel):
    """Get the specialised version of a :class:`Tiered` ``kernel`` (its ``signature``
    set) ready in the background; returns at once.  One compiled before is loaded
    from the disk cache, the others are sent to the worker."""
    global _next_id, _thread
    with _lock:
        _next_id += 1
        job_id = _next_id
        _pending[job_id] = kernel
        if _thread is None:
            _thread = threading.Thread(target=_prepare, name="blocksolve-specialise",
                                       daemon=True)
            _thread.start()
    _queue.put((job_id, kernel))


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
