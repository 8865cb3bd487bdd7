"""The background compiler: ``python -P .../blocksolve/cpu/_compile_worker.py``.

Reads jobs ``(module, qualname, key, pickled signature)`` as pickles from
standard input and answers each with ``(error or None, seconds)`` on standard
output, once the kernel -- ``module.qualname(*key)``, or ``module.qualname``
itself when ``key`` is None -- is compiled for the signature into numba's disk
cache (under the kernel's file lock: a kernel another process is compiling is
loaded, not compiled again).  Started and read by
:mod:`blocksolve.cpu._background`; ends when its standard input closes, after
the jobs written before -- also when nobody reads its answers any more (its
caller has exited).
"""

from __future__ import annotations

import functools
import importlib
import os
import pickle
import sys
import time

from blocksolve.cpu._numba_cache import compile_locked


def _compile(module, qualname, key, signature):
    target = functools.reduce(getattr, qualname.split("."), importlib.import_module(module))
    dispatcher = target if key is None else target(*key)
    compile_locked(dispatcher, pickle.loads(signature))


def main():
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not break the protocol
    jobs = sys.stdin.buffer
    while True:
        try:
            job = pickle.load(jobs)
        except EOFError:
            return
        start, error = time.perf_counter(), None
        try:
            _compile(*job)
        except Exception as exc:  # noqa: BLE001 - reported to the caller; the worker goes on
            error = f"{type(exc).__name__}: {exc}"
        if answers is not None:
            try:
                pickle.dump((error, time.perf_counter() - start), answers)
                answers.flush()
            except OSError:  # the caller has exited: go on with the jobs it left
                answers = None


if __name__ == "__main__":
    main()
