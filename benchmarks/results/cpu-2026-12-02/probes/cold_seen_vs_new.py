"""Back to back, cold (as first_calls --pause 0): NumPy's first call of a new size, then blocksolve's call of
either that new size (mode new) or of a signature seen before (mode seen). Usage: SCRIPT cholesky 8 seen|new."""
import sys, time
import numpy as np
import blocksolve
from blocksolve import _bench
op = sys.argv[1]
def case_data(size):
    case = _bench.Case(op, "float64", size, 1, "cpu")
    data = _bench.inputs(case)
    peer = _bench.PEERS[0].calls[op](data)
    return (lambda: case.workload.run(blocksolve, data)), peer
seen, seen_np = case_data(6); seen(); seen(); seen(); blocksolve.set_specialization("never")
mode = sys.argv[3]
for n in range(7, 7 + int(sys.argv[2])):
    o, _ = case_data(n); _, p = case_data(n)
    s = time.perf_counter_ns(); p(); tn = time.perf_counter_ns() - s
    if mode == "seen":
        s = time.perf_counter_ns(); seen(); to = time.perf_counter_ns() - s
    else:
        s = time.perf_counter_ns(); o(); to = time.perf_counter_ns() - s
    print(n, round(tn / 1000, 1), round(to / 1000, 1), round(to / tn, 1))
