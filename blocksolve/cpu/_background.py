"""Compile kernels in the background, one after the other.

:func:`submit` queues a kernel (:class:`~blocksolve.cpu._compiled._Entry`) and
returns at once.  One daemon thread takes the jobs in turn: a kernel an earlier
process left in numba's disk cache is loaded here; any other is compiled into
that cache by a worker process (:mod:`blocksolve.cpu._compile_worker`, at a
lower scheduling priority) and then loaded -- or, where the cache cannot be
written, compiled here, in memory.  From then on calls run it.

Why a process: numba compiles under a process-wide lock and holds the
interpreter lock for much of the work, so a compiling thread would slow the
caller's own Python code and hold up every kernel it loads.  The worker never
delays the interpreter's exit, and does not outlive it: at exit it is stopped,
and a kernel it had not finished is compiled again next time.  With
``$BLOCKSOLVE_FINISH_AT_EXIT=1`` it finishes the kernels still queued instead,
into the disk cache, then ends on its own (a short script's kernels are then
ready for its next run).
Kernels are compiled under a file lock per kernel
(:func:`~blocksolve.cpu._numba_cache.compile_locked`), so two processes never
compile the same one: the second loads what the first saved.
"""

from __future__ import annotations

import atexit
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import time

from .._cache import cache_dir
from .._errors import ignore_setting
from ._numba_cache import cache_writable, compile_locked, load_cached

__all__ = ["submit", "wait", "pending", "statistics"]

_MAX_STARTS = 3  # a worker that keeps dying (broken environment) is not restarted forever

_lock = threading.Condition()
_queue = queue.SimpleQueue()
_thread = None
_pending = set()  # entries submitted and not finished
_stats = {"compiled": 0, "loaded": 0, "failed": 0, "seconds": 0.0}


class _Worker:
    """The compiler process: this process's blocksolve and cache folder, its own session
    (a Ctrl-C meant for the caller does not reach it), ten nice levels lower."""

    starts = 0
    current = None

    def __init__(self):
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        env["BLOCKSOLVE_CACHE_DIR"] = str(cache_dir())
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_compile_worker.py")
        self.process = subprocess.Popen(
            [sys.executable, "-P", script],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        try:
            os.setpriority(os.PRIO_PROCESS, self.process.pid, 10)
        except (AttributeError, OSError):  # no priorities here: the worker just competes
            pass

    def send(self, entry):
        """Write ``entry``'s job to the worker."""
        self.process.stdin.write(pickle.dumps((*entry.origin, pickle.dumps(entry.signature))))
        self.process.stdin.flush()

    def compile(self, entry):
        """Compile ``entry`` into the disk cache; an error message, or None."""
        self.send(entry)
        error, seconds = pickle.load(self.process.stdout)
        _stats["seconds"] += seconds
        return error

    def stop(self):
        """End the worker and anything it started, without waiting for its compilation
        (its own session: one signal reaches them all)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (AttributeError, OSError):  # gone already, or no process groups here
            self.process.kill()

    def hand_over(self, entries):
        """At exit: send ``entries`` and end the worker's input, so that it compiles them
        and the one it is on, and ends, on its own."""
        try:
            for entry in entries:
                self.send(entry)
            self.process.stdin.close()
        except OSError:  # gone already: nothing to hand over to
            pass


def _compile(entry):
    """Compile ``entry`` in the worker (started or restarted as needed); an error or None."""
    worker = _Worker.current
    if worker is None or worker.process.poll() is not None:
        if _Worker.starts >= _MAX_STARTS:
            return f"the background compiler failed {_Worker.starts} times; not restarted"
        _Worker.starts += 1
        try:
            worker = _Worker.current = _Worker()
        except OSError as error:
            return f"cannot start the background compiler: {error}"
    try:
        return worker.compile(entry)
    except (OSError, EOFError, pickle.UnpicklingError) as error:
        worker.process.kill()  # whatever state it is in: a new one takes the next job
        _Worker.current = None
        return f"the background compiler exited ({type(error).__name__})"


def _serve():
    while True:
        entry = _queue.get()
        counter = "loaded"
        try:
            error = None
            if not load_cached(entry.dispatcher, entry.signature):
                counter = "compiled"
                if cache_writable():
                    error = _compile(entry)
                else:  # the worker could not save it: compiled here, in memory
                    compile_locked(entry.dispatcher, entry.signature)
        except Exception as exc:  # noqa: BLE001 - reported with the kernel; the thread goes on
            error = f"{type(exc).__name__}: {exc}"
        entry.finish(error)
        with _lock:
            _pending.discard(entry)
            _stats["failed" if error else counter] += 1
            _lock.notify_all()


def submit(entry):
    """Get ``entry`` compiled or loaded in the background; returns at once."""
    global _thread
    with _lock:
        _pending.add(entry)
        if _thread is None:
            _thread = threading.Thread(target=_serve, name="blocksolve-compile", daemon=True)
            _thread.start()
    _queue.put(entry)


def pending():
    """Number of kernels still compiling or loading in the background."""
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


def finish_at_exit():
    """Whether the worker finishes the queued kernels after this process exits:
    ``$BLOCKSOLVE_FINISH_AT_EXIT`` is ``1`` (default ``0``: it is stopped)."""
    text = os.environ.get("BLOCKSOLVE_FINISH_AT_EXIT", "").strip()
    if text in ("", "0", "1"):
        return text == "1"
    return ignore_setting("BLOCKSOLVE_FINISH_AT_EXIT", text, "0 or 1", False)


def _at_exit():
    """Stop the worker, or hand it the kernels still queued (:func:`finish_at_exit`)."""
    if finish_at_exit():
        _hand_over()
        return
    worker = _Worker.current
    if worker is not None and worker.process.poll() is None:
        worker.stop()


def _hand_over():
    """The kernels still queued go to the worker (started for them if need be), which
    finishes them after this process has gone."""
    queued = []
    while True:
        try:
            queued.append(_queue.get_nowait())
        except queue.Empty:
            break
    worker = _Worker.current
    if worker is None or worker.process.poll() is not None:
        if not queued:
            return
        try:
            worker = _Worker()
        except OSError:
            return
    worker.hand_over(queued)


def _forget_in_child():
    """After ``fork``: the thread, the worker and the jobs belong to the parent."""
    global _lock, _queue, _thread, _pending
    _lock, _queue, _thread, _pending = threading.Condition(), queue.SimpleQueue(), None, set()
    _Worker.current, _Worker.starts = None, 0


atexit.register(_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
