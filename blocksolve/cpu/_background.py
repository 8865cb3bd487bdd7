"""Compile size-specialised kernels in a background process.

A :class:`~blocksolve.cpu._jit.Tiered` kernel whose specialised version is
neither in memory nor in the disk cache hands it to :func:`submit`.  One
worker process (:mod:`blocksolve.cpu._compile_worker`, started on the first
job, at a lower scheduling priority) compiles the jobs one after the other
into the disk cache; a listener thread then loads each kernel into this
process, where it replaces the generic one from the next call on.

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
import subprocess
import sys
import threading
import time

__all__ = ["submit", "wait", "pending", "statistics"]

_MAX_STARTS = 3  # a worker that keeps dying (broken environment) is not restarted forever

_lock = threading.Condition()
_worker = None
_pending = {}  # job id -> Tiered
_next_id = 0
_starts = 0
_stats = {"compiled": 0, "failed": 0, "seconds": 0.0}


class _Worker:
    """The compile process and the thread that reads its answers."""

    def __init__(self):
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH"))
                                            if p)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "blocksolve.cpu._compile_worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
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


def _done(job_id, error, seconds):
    with _lock:
        kernel = _pending.get(job_id)
    if kernel is not None:
        kernel.finish_background(error)
    with _lock:
        _pending.pop(job_id, None)
        _stats["failed" if kernel is None or kernel.error else "compiled"] += 1
        _stats["seconds"] += seconds
        _lock.notify_all()


def _worker_exited(worker, reason):
    global _worker
    with _lock:
        if _worker is worker:
            _worker = None
        lost = list(_pending.items())
        _pending.clear()
    for _, kernel in lost:
        kernel.finish_background(reason)
    with _lock:
        _stats["failed"] += len(lost)
        _lock.notify_all()


def submit(kernel):
    """Queue the specialised version of a :class:`Tiered` ``kernel`` (its ``signature`` set).

    Returns
    -------
    str or None
        Why the job cannot run (then the kernel stays generic), else None.
    """
    global _worker, _next_id, _starts
    factory = kernel.factory
    message = (factory.__module__, factory.__qualname__, kernel.key, kernel.signature)
    with _lock:
        if _worker is None or _worker.process.poll() is not None:
            if _starts >= _MAX_STARTS:
                return f"the background compiler failed {_starts} times; not restarted"
            _starts += 1
            try:
                _worker = _Worker()
            except OSError as error:
                return f"cannot start the background compiler: {error}"
        _next_id += 1
        _pending[_next_id] = kernel
        try:
            _worker.send((_next_id, *message))
        except (OSError, ValueError) as error:  # the worker is gone: its listener reports it
            _pending.pop(_next_id, None)
            return f"cannot reach the background compiler: {error}"
    return None


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
    """``{'pending', 'compiled', 'failed', 'seconds'}``: background work of this process."""
    with _lock:
        return {"pending": len(_pending), **_stats}


def _close():
    with _lock:
        worker = _worker
    if worker is not None:
        worker.close()


def _forget_in_child():
    """After ``fork``: the worker and its jobs belong to the parent."""
    global _lock, _worker, _pending, _starts
    for kernel in _pending.values():
        kernel.reset()
    _lock, _worker, _pending, _starts = threading.Condition(), None, {}, 0


atexit.register(_close)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
