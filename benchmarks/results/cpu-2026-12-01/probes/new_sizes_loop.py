"""First calls of new sizes in a loop, each library alone: blocksolve's first call of each
size against NumPy's first call of it (fresh copies of the same matrices, made beforehand).

    python new_sizes_loop.py solve 24 48     # sizes 24..47, one matrix each
"""
import sys
import time

import numpy as np

import blocksolve

op, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)


def make(n):
    a = rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n), rng.standard_normal(n)


CALLS = {"cholesky": (blocksolve.cholesky, np.linalg.cholesky, 1),
         "solve": (blocksolve.solve, np.linalg.solve, 2),
         "qr": (blocksolve.qr, np.linalg.qr, 1), "lstsq": (blocksolve.lstsq, np.linalg.lstsq, 2),
         "det": (blocksolve.det, np.linalg.det, 1), "inv": (blocksolve.inv, np.linalg.inv, 1),
         "eigh": (blocksolve.eigh, np.linalg.eigh, 1)}
ours, theirs, nargs = CALLS[op]
first = make(lo - 1)[:nargs]
ours(*first), ours(*first), theirs(*first)  # the family's plan and kernels, in this process
data = [make(n)[:nargs] for n in range(lo, hi)]
copies = [tuple(x.copy() for x in d) for d in data]
times_theirs, times_ours = [], []
for args in data:
    start = time.perf_counter()
    theirs(*args)
    times_theirs.append(time.perf_counter() - start)
for args in copies:
    start = time.perf_counter()
    ours(*args)
    times_ours.append(time.perf_counter() - start)
ratio = np.array(times_ours) / np.array(times_theirs)
print(f"{op:8s} n={lo}..{hi - 1}: blocksolve median {1e6 * np.median(times_ours):.0f} us, "
      f"numpy {1e6 * np.median(times_theirs):.0f} us, median ratio {np.median(ratio):.1f} "
      f"(last half {np.median(ratio[len(ratio) // 2:]):.1f})")
