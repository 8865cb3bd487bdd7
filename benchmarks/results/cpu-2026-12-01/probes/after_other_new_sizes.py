"""first_calls.py's back-to-back step (sizes 7..10 after a 6x6 case, NumPy's first call of
each size then blocksolve's), after blocksolve has already run ``K`` other new sizes
(20, 21, ...) in this process.  If the cost of a new size were work per size, K would not
matter; if it is the first executions of the new-size code path, it falls with K.

    python after_other_new_sizes.py cholesky 8
"""
import sys
import time

import numpy as np

import blocksolve

op, earlier = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)


def make(n):
    a = rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n), rng.standard_normal(n)


ours = {"cholesky": lambda a, b: blocksolve.cholesky(a), "solve": blocksolve.solve}[op]
theirs = {"cholesky": lambda a, b: np.linalg.cholesky(a), "solve": np.linalg.solve}[op]
ours(*make(6)), ours(*make(6)), theirs(*make(6))  # the family, in this process
others = [make(n) for n in range(20, 20 + earlier)]
data = [make(n) for n in range(7, 11)]
copies = [tuple(x.copy() for x in d) for d in data]
for args in others:
    ours(*args)
ratios = []
for args, copy in zip(data, copies):
    start = time.perf_counter()
    theirs(*args)
    middle = time.perf_counter()
    ours(*copy)
    ratios.append((time.perf_counter() - middle) / (middle - start))
print(f"{op} after {earlier:2d} other new sizes: median ratio over sizes 7-10 "
      f"{np.median(ratios):.1f} ({' '.join(f'{r:.1f}' for r in ratios)})")
