"""The background compiler: ``python -P .../blocksolve/cpu/_compile_worker.py DIR STAMP``.

Reads jobs ``(job_id, module, factory, key, signature_text, signature,
check_marker)`` as pickles from standard input (``signature`` itself
pickled) and answers each with ``(job_id, error or None, seconds, marked)``
on standard output:

- ``marked``: asked to (``check_marker``), it found the marker a compilation
  of this kernel left in ``DIR`` (for the package sources ``STAMP``): the
  caller loads the kernel itself, nothing was compiled;
- otherwise it compiled ``module.factory(*key)`` for ``signature`` into the
  disk cache (under the kernel's file lock, so a kernel another process is
  compiling is loaded, not compiled again) and left the marker.

Started and read by :mod:`blocksolve.cpu._background`, ahead of need: run as
a script, it imports blocksolve (and numba) with its first compilation, not
before, so a worker that only finds markers stays a bare interpreter; ends
when its standard input closes.  The markers' format lives here, where it
needs nothing else: :mod:`blocksolve.cpu._tiers` writes and reads them too.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import pickle
import sys
import time


def signature_repr(signature):
    """How a numba signature (a tuple of types) enters its kernel's marker."""
    return repr(tuple(signature))


def marker(directory, module, qualname, key, signature_text, stamp):
    """File that says the kernel ``module.qualname(*key)`` was compiled into the disk cache.

    For the numba signature ``signature_text`` (see :func:`signature_repr`), from the
    package sources whose digest is ``stamp``, in the cache's marker folder
    ``directory``.  Derived from names, not from the kernel itself: asking costs
    a file-system lookup instead of building the dispatcher and reading numba's
    index.  A hint only: what it promises is loaded through numba's cache, which
    checks everything.
    """
    text = f"{module}.{qualname}|{key!r}|{signature_text}|{stamp}"
    digest = hashlib.sha256(text.encode()).hexdigest()[:32]
    return os.path.join(directory, f"{qualname.rsplit('.', 1)[-1].strip('_')}-{digest}")


def _compile(module, factory, key, signature):
    compile_specialised = importlib.import_module("blocksolve.cpu._tiers").compile_specialised
    function = functools.reduce(getattr, factory.split("."), importlib.import_module(module))
    compile_specialised(function, key, pickle.loads(signature))


def main(directory, stamp):
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not break the protocol
    jobs = sys.stdin.buffer
    while True:
        try:
            job_id, module, factory, key, signature_text, signature, check_marker = pickle.load(
                jobs
            )
        except EOFError:
            return
        start = time.perf_counter()
        error = None
        marked = check_marker and os.path.exists(
            marker(directory, module, factory, key, signature_text, stamp)
        )
        if not marked:
            try:
                _compile(module, factory, key, signature)
            except Exception as exc:  # noqa: BLE001 - reported to the caller, the worker goes on
                error = f"{type(exc).__name__}: {exc}"
        pickle.dump((job_id, error, time.perf_counter() - start, marked), answers)
        answers.flush()


if __name__ == "__main__":
    main(*sys.argv[1:])
