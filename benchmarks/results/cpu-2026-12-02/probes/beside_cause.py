"""What slows first_calls' back-to-back step right after a hand-off (results section 7).

After the base size's first call, one of these states, then step 3 (for sizes base+1..base+4:
NumPy's first call of the size on fresh data, then blocksolve's):
'handoff' (the 2nd call hands the specialised kernel to the background; step 3 at once),
'handoff-spin' (then a 0.5 s busy loop first), 'handoff-wait-spin' (wait_for_kernels, then the
busy loop), 'never' (specialisation off before the 2nd call: nothing in the background),
'never-spin', 'pythread' (no hand-off; a second thread runs a Python loop for 50 ms).
Usage: SCRIPT op base state -> one JSON line: µs lists, background jobs pending at the start and
end of step 3, the step's ms, the main thread's page faults and context switches in it."""
import sys, time, json
import numpy as np
import blocksolve
from blocksolve import _bench
op, base, state = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def case_data(size):
    case = _bench.Case(op, "float64", size, 1, "cpu")
    data = _bench.inputs(case)
    peer = _bench.PEERS[0].calls[op](data)
    return (lambda: case.workload.run(blocksolve, data)), peer
ours, peer = case_data(base)
ours(); peer()
if state.startswith("never") or state == "pythread":
    blocksolve.set_specialization("never")
if state == "pythread":  # a second thread running Python for 50 ms, nothing of blocksolve's
    import threading as _t
    def _spin():
        end = time.perf_counter() + 0.05
        while time.perf_counter() < end:
            pass
    _t.Thread(target=_spin, daemon=True).start()
ours(); peer()
if "wait" in state:
    blocksolve.wait_for_kernels()
if state.endswith("spin"):
    end = time.perf_counter() + 0.5
    while time.perf_counter() < end:
        pass
from blocksolve.cpu import _background
import threading
pending = _background.pending(); threads = threading.active_count()
import resource
np_t, ours_t = [], []
loop_start = time.perf_counter(); r0 = resource.getrusage(resource.RUSAGE_THREAD); p0 = resource.getrusage(resource.RUSAGE_SELF)
for n in range(base + 1, base + 5):
    o, _ = case_data(n); _, p = case_data(n)
    s = time.perf_counter_ns(); p(); np_t.append((time.perf_counter_ns() - s) / 1000)
    s = time.perf_counter_ns(); o(); ours_t.append((time.perf_counter_ns() - s) / 1000)
pending_after = _background.pending(); loop_s = time.perf_counter() - loop_start
r1 = resource.getrusage(resource.RUSAGE_THREAD); p1 = resource.getrusage(resource.RUSAGE_SELF)
faults = dict(thread_minflt=r1.ru_minflt - r0.ru_minflt, thread_nivcsw=r1.ru_nivcsw - r0.ru_nivcsw,
              thread_nvcsw=r1.ru_nvcsw - r0.ru_nvcsw, process_minflt=p1.ru_minflt - p0.ru_minflt)
print(json.dumps(dict(state=state, numpy=np_t, ours=ours_t, pending=pending, pending_after=pending_after, loop_ms=round(loop_s * 1e3, 2), threads=threads, **faults)))
