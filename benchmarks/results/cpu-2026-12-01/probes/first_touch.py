"""What a new size's first calls cost, piece by piece, in a fresh process.

    python first_touch.py         # after two calls of a 6x6 cholesky, the first calls of
                                  # sizes 7, 8, 9, each step of the new-size path timed
                                  # (the wrappers add well under a microsecond each)
    python first_touch.py bind    # bind_shapes alone, right after the import, ten new shapes
"""
import sys
import time

import numpy as np

import blocksolve
import blocksolve.cpu as cpu
from blocksolve import _execute
from blocksolve._ops import OPS

clock = time.perf_counter
stamps = []


def timed(owner, name):
    function = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = clock()
        result = function(*args, **kwargs)
        stamps.append((name, clock() - start))
        return result
    setattr(owner, name, wrapper)


if sys.argv[1:] == ["bind"]:
    from blocksolve._normalize import bind_shapes
    times = []
    for n in range(6, 16):
        start = clock()
        bind_shapes(OPS["cholesky"], "cholesky", {"a": (n, n)})
        times.append(clock() - start)
    print("bind_shapes on new shapes, us:", " ".join(f"{t * 1e6:.1f}" for t in times))
    sys.exit()

for owner, name in [(_execute, "_signature"), (_execute, "_family"), (_execute, "bind_shapes"),
                    (_execute, "output_shape"), (_execute._Plan, "_bind"),
                    (_execute._Plan, "resized"), (cpu, "_run"),
                    (cpu.CpuBackend, "execute_new_size"), (_execute._Plan, "run")]:
    timed(owner, name)
rng = np.random.default_rng(0)


def spd(n):
    a = rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


a = spd(6)
blocksolve.cholesky(a), blocksolve.cholesky(a)
for n in (7, 8, 9):
    x = spd(n)
    stamps.clear()
    start = clock()
    blocksolve.cholesky(x)
    total = clock() - start
    print(n, f"total {total * 1e6:.0f} us:", " ".join(f"{k} {v * 1e6:.0f}" for k, v in stamps))
