"""A fresh process as `tools/first_calls.py --pause 0` runs it: one 6x6 matrix twice, then new
sizes 7, 8, ... once each, NumPy's first call of each size right before ours, each on its own
fresh data.  Prints one JSON row per new size: both calls and the stages of ours (us).

Usage: first_new_sizes.py OP COUNT   (OP: cholesky or solve)
"""
import json
import sys
import time

import blocksolve
import blocksolve.cpu as cpu
from blocksolve import _bench, _execute

op = sys.argv[1]
stages = {}


def timed(owner, name, label):
    function = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter_ns()
        result = function(*args, **kwargs)
        stages[label] = (time.perf_counter_ns() - start) / 1e3
        return result
    setattr(owner, name, wrapper)


timed(_execute._Plan, "resized", "new plan")
timed(_execute._Plan, "run", "run")
timed(cpu.CpuBackend, "execute_new_size", "family runner")
timed(cpu, "_run", "kernel call")


def case_data(size):
    case = _bench.Case(op, "float64", size, 1, "cpu")
    data = _bench.inputs(case)
    return (lambda: case.workload.run(blocksolve, data)), _bench.PEERS[0].calls[op](data)


ours, _ = case_data(6)
ours()
ours()
for n in range(7, 7 + int(sys.argv[2])):
    ours_n, _ = case_data(n)
    _, numpy_n = case_data(n)
    start = time.perf_counter_ns()
    numpy_n()
    numpy_us = (time.perf_counter_ns() - start) / 1e3
    start = time.perf_counter_ns()
    ours_n()
    ours_us = (time.perf_counter_ns() - start) / 1e3
    print(json.dumps(dict(n=n, numpy=numpy_us, ours=ours_us, **stages)))
