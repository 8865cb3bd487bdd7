"""How the order of the calls around two first calls moves their ratio (results §6).

One fresh process, generic kernels only (``BLOCKSOLVE_SPECIALIZE=never``: nothing compiles
beside the loop).  After two calls of a 6x6 case, for sizes 7..12: NumPy's first call of
the size, then blocksolve's (each on its own fresh copy of the data), with, between one
size and the next, nothing (``plain``), ``time.sleep(0)`` before each of the two calls
(``sleep0``), or NumPy's five warm calls of the size just done (``numpy5``, what
first_calls.py's loop did before).  Prints the medians over sizes 8..11.

    BLOCKSOLVE_SPECIALIZE=never python alternation.py cholesky plain|sleep0|numpy5
"""
import statistics
import sys
import time

import blocksolve
from blocksolve import _bench

op, variant = sys.argv[1], sys.argv[2]


def case_data(size):
    case = _bench.Case(op, "float64", size, 1, "cpu")
    data = _bench.inputs(case)
    return (lambda: case.workload.run(blocksolve, data)), _bench.PEERS[0].calls[op](data)


def timed(call):
    if variant == "sleep0":
        time.sleep(0)
    start = time.perf_counter_ns()
    call()
    return (time.perf_counter_ns() - start) / 1e3


ours, numpy_call = case_data(6)
ours(), numpy_call(), ours(), numpy_call()
rows = []
for n in range(7, 13):
    ours_n, _ = case_data(n)
    _, numpy_n = case_data(n)
    rows.append((timed(numpy_n), timed(ours_n)))
    if variant == "numpy5":
        for _ in range(5):
            numpy_n()
rows = rows[1:5]
print(f"{variant:7} numpy {statistics.median(r[0] for r in rows):6.1f} us  blocksolve "
      f"{statistics.median(r[1] for r in rows):6.1f} us  ratio "
      f"{statistics.median(r[1] / r[0] for r in rows):4.2f}")
