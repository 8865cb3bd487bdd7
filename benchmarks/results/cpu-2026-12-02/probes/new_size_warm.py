import sys, time, statistics as st, cProfile, pstats
import numpy as np
import blocksolve
from blocksolve import _execute, _backends
rng = np.random.default_rng(0)
blocksolve.set_specialization("never")
op = sys.argv[1]
n = 6
a = rng.standard_normal((n, n)); a = a @ a.T + n * np.eye(n); b = rng.standard_normal((n, 1))
if op == "cholesky":
    f = lambda: blocksolve.cholesky(a); g = lambda: np.linalg.cholesky(a)
else:
    f = lambda: blocksolve.solve(a, b); g = lambda: np.linalg.solve(a, b)
f(); f(); f()
from blocksolve.cpu import CpuBackend
import gc
backends = [o for o in gc.get_objects() if isinstance(o, CpuBackend)]
def reset():
    _execute._PLANS.clear()
    for be in backends: be._sizes_run.clear()
def newsize():
    reset(); s = time.perf_counter(); f(); return time.perf_counter() - s
def same():
    s = time.perf_counter(); f(); return time.perf_counter() - s
def npy():
    s = time.perf_counter(); g(); return time.perf_counter() - s
for _ in range(3):
    print("new-size %.2f  same %.2f  numpy %.2f us" % tuple(st.median(h() for _ in range(3000)) * 1e6 for h in (newsize, same, npy)))
if len(sys.argv) > 2:
    pr = cProfile.Profile()
    def loop():
        for _ in range(20000):
            reset(); f()
    pr.runcall(loop)
    pstats.Stats(pr).sort_stats("ncalls").print_stats(70)
