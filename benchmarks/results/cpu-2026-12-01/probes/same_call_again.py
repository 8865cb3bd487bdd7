"""The same binding, over and over, right after the import: is a first call's cost per new
shape, or per first executions of the code?

    python same_call_again.py same   # bind_shapes on one 5x5 shape, 12 times
    python same_call_again.py new    # on 12 new shapes, 5x5 ... 16x16
"""
import sys
import time

import blocksolve  # noqa: F401 - the import whose state is measured
from blocksolve._normalize import bind_shapes
from blocksolve._ops import OPS

op = OPS["cholesky"]
same = sys.argv[1] == "same"
times = []
for i in range(12):
    shape = (5, 5) if same else (5 + i, 5 + i)
    start = time.perf_counter_ns()
    bind_shapes(op, "cholesky", {"a": shape})
    times.append(time.perf_counter_ns() - start)
print(f"{sys.argv[1]:4s} us:", " ".join(f"{t / 1000:.1f}" for t in times))
