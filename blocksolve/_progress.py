"""Saying what long work a call is doing: one line on standard error per compilation."""

from __future__ import annotations

import contextlib
import sys
import time

__all__ = ["compiling"]


@contextlib.contextmanager
def compiling(what, expected):
    """``blocksolve: compiling <what> (<expected>) ... done in <s> s`` around the block.

    For compilations a caller waits for (``set_specialization('wait')``, a GPU
    kernel not in the disk cache), so that a pause of seconds says why.
    """
    stream = sys.stderr
    start = time.perf_counter()
    if stream is not None:
        print(f"blocksolve: compiling {what} ({expected}) ...", file=stream, flush=True)
    yield
    if stream is not None:
        print(
            f"blocksolve: compiled {what} in {time.perf_counter() - start:.1f} s",
            file=stream,
            flush=True,
        )
