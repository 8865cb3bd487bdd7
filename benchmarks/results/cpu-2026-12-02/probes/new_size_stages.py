"""Per-stage time of the first new sizes, fresh process (as first_calls step 3, pause 0, no background)."""
import sys, time, json
import numpy as np
import blocksolve
from blocksolve import _execute, _bench
from blocksolve.cpu import CpuBackend
op = sys.argv[1]
T = {}
def timed(cls, name):
    f = getattr(cls, name)
    def w(*a, **k):
        s = time.perf_counter_ns(); r = f(*a, **k); T.setdefault(name, []).append(time.perf_counter_ns() - s); return r
    setattr(cls, name, w)
timed(_execute._Plan, "resized"); timed(_execute._Plan, "run"); timed(CpuBackend, "execute_new_size"); timed(_execute._Plan, "give_back")
def case_data(size):
    case = _bench.Case(op, "float64", size, 1, "cpu")
    data = _bench.inputs(case)
    peer = _bench.PEERS[0].calls[op](data)
    return (lambda: case.workload.run(blocksolve, data)), peer
ours, peer = case_data(6); ours(); ours(); blocksolve.set_specialization("never")
for k in T: T[k].clear()
rows = []
for n in range(7, 7 + int(sys.argv[2])):
    o, _ = case_data(n); _, p = case_data(n)
    s = time.perf_counter_ns(); p(); tn = time.perf_counter_ns() - s
    s = time.perf_counter_ns(); o(); to = time.perf_counter_ns() - s
    rows.append(dict(numpy=tn, ours=to, **{k: v[-1] for k, v in T.items()}))
print(json.dumps(rows))
