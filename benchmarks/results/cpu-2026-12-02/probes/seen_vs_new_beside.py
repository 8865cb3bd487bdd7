"""As first_calls step 3 (--pause 0, calls alternating): NumPy's first call of a new size on
fresh data, then blocksolve's call on fresh data of either that new size (new) or of the size
it has called twice before (seen: a remembered signature). Background compilation of the seen
size's kernel running beside (beside) or finished (settled).
Usage: SCRIPT op new|seen beside|settled  -> one JSON line: lists of µs."""
import sys, time, json
import numpy as np
import blocksolve
from blocksolve import _bench
op, mode, state = sys.argv[1:4]; base = int(sys.argv[4])
def case_data(size):
    case = _bench.Case(op, "float64", size, 1, "cpu")
    data = _bench.inputs(case)
    peer = _bench.PEERS[0].calls[op](data)
    return (lambda: case.workload.run(blocksolve, data)), peer
ours, peer = case_data(base)
ours(); peer(); ours(); peer()
if state == "settled":
    blocksolve.wait_for_kernels()
np_t, ours_t = [], []
for n in range(base + 1, base + 5):
    o_new, _ = case_data(n); _, p = case_data(n)
    o_seen, _ = case_data(base)
    s = time.perf_counter_ns(); p(); np_t.append((time.perf_counter_ns() - s) / 1000)
    f = o_new if mode == "new" else o_seen
    s = time.perf_counter_ns(); f(); ours_t.append((time.perf_counter_ns() - s) / 1000)
print(json.dumps(dict(mode=mode, state=state, numpy=np_t, ours=ours_t)))
