"""The background compiler: ``python -m blocksolve.cpu._compile_worker``.

Reads jobs ``(job_id, module, factory, key, signature)`` as pickles from
standard input, compiles ``module.factory(*key)`` for ``signature`` into the
disk cache (under the kernel's file lock, so a kernel another process is
compiling is loaded, not compiled again), and answers ``(job_id, error or
None, seconds)`` on standard output.  Started and read by
:mod:`blocksolve.cpu._background`; ends when its standard input closes.
"""

from __future__ import annotations

import functools
import importlib
import os
import pickle
import sys
import time


def _compile(module, factory, key, signature):
    from ._tiers import compile_specialised
    function = functools.reduce(getattr, factory.split("."), importlib.import_module(module))
    compile_specialised(function, key, signature)


def main():
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not break the protocol
    jobs = sys.stdin.buffer
    while True:
        try:
            job_id, module, factory, key, signature = pickle.load(jobs)
        except EOFError:
            return
        start = time.perf_counter()
        try:
            _compile(module, factory, key, signature)
            error = None
        except Exception as exc:  # noqa: BLE001 - reported to the caller, the worker goes on
            error = f"{type(exc).__name__}: {exc}"
        pickle.dump((job_id, error, time.perf_counter() - start), answers)
        answers.flush()


if __name__ == "__main__":
    main()
