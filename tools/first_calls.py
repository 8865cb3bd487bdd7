"""Measure the first call of new call patterns (issue 12's goal: under a second on 2 cores
once the generic kernels are cached, and within 3x NumPy's time on the same call).

For each case, a fresh Python process:

1. imports blocksolve (timed: ``import_s``) and builds the inputs (not timed);
2. makes blocksolve's first call of a pattern nothing has compiled before
   (``first_call_s``: the run-time-size kernel loaded from the disk cache and
   run, the specialised one handed to the background compiler), then times
   the same call with NumPy (``numpy_s``, the minimum of 5);
3. in the same process, a second new pattern (size + 1): ``second_first_call_s``
   against NumPy's first call of it on a fresh copy of the same data
   (``second_numpy_first_s``: both touch their data for the first time) and
   NumPy's best of 5 (``second_numpy_s``) — a notebook user trying another size;
4. waits for the background compiler and times the specialised kernel
   (``specialised_s``) and the run-time-size one (``generic_s``), minima of 20.

The disk cache must hold the generic kernels and no specialised kernel of
these sizes: by default the script creates a fresh cache directory and runs
``python -m blocksolve warm`` (generic kernels only) into it first.

Usage::

    python tools/first_calls.py --json first_calls.json          # fresh cache, warm, measure
    python tools/first_calls.py --cache-dir DIR --no-warm ...     # an existing generic-only cache
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

CASE_SCRIPT = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    import numpy as np
    import blocksolve
    from blocksolve import _bench
    import_s = time.perf_counter() - t0
    op, dtype, size, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

    def case_data(size):
        case = _bench.Case(op, dtype, size, batch, "cpu")
        data = _bench.inputs(case)
        peer = _bench.PEERS[0].calls[op](data)
        return (lambda: case.workload.run(blocksolve, data)), peer

    def best(call, repeat):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        return min(times)

    ours, numpy_call = case_data(size)
    start = time.perf_counter()
    ours()
    first = time.perf_counter() - start
    numpy_s = best(numpy_call, 5)
    ours2, _ = case_data(size + 1)
    _, numpy_call2 = case_data(size + 1)  # its own copy: neither call warms the other's data
    second_numpy_first = best(numpy_call2, 1)
    start = time.perf_counter()
    ours2()
    second = time.perf_counter() - start
    second_numpy = best(numpy_call2, 5)
    blocksolve.wait_for_kernels()
    specialised = best(ours, 20)
    blocksolve.set_specialization("never")
    generic = best(ours, 20)
    print(json.dumps(dict(op=op, dtype=dtype, n=size, batch=batch, import_s=import_s,
                          first_call_s=first, numpy_s=numpy_s, second_first_call_s=second,
                          second_numpy_s=second_numpy, second_numpy_first_s=second_numpy_first,
                          specialised_s=specialised,
                          generic_s=generic)))
""")

# (size, batch): a large batch (as `bench --quick`) and a single matrix.  Every size,
# and size + 1 (the second new pattern), appears once per op, so that no case finds
# a specialised kernel that an earlier case's background compiler left in the cache.
SIZES = ((4, "large"), (13, "large"), (6, 1), (10, 1))
DEFAULT_CASES = [(op, "float64", n, batch) for op in ("cholesky", "solve", "qr", "lstsq")
                 for n, batch in SIZES]


def _batch(op, dtype, n, kind):
    from blocksolve import _bench
    return _bench.batch_for(kind, "cpu", op, n, dtype)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", help="kernel cache to use (default: a fresh one)")
    parser.add_argument("--no-warm", action="store_true",
                        help="do not run `python -m blocksolve warm` into the cache first")
    parser.add_argument("--jobs", type=int, default=2, help="processes for warm (default 2)")
    parser.add_argument("--json", help="write the rows to this file")
    args = parser.parse_args(argv)
    cache = args.cache_dir or tempfile.mkdtemp(prefix="blocksolve-first-calls-")
    env = {**os.environ, "BLOCKSOLVE_CACHE_DIR": cache, "BLOCKSOLVE_SPECIALIZE": "background"}
    if not args.no_warm:
        subprocess.run([sys.executable, "-m", "blocksolve", "warm", "--jobs", str(args.jobs)],
                       env=env, check=True)
    rows = []
    print(f"{'op':<9}{'dtype':<9}{'n':>3}{'batch':>7}{'import':>9}{'first call':>12}"
          f"{'numpy':>10}{'ratio':>7}{'2nd new':>10}{'numpy 1st':>10}{'ratio':>7}"
          f"{'best':>10}{'ratio':>7}"
          f"{'specialised':>13}{'generic':>10}")
    for op, dtype, n, kind in DEFAULT_CASES:
        for batch in [_batch(op, dtype, n, kind)]:
            done = subprocess.run([sys.executable, "-c", CASE_SCRIPT, op, dtype, str(n),
                                   str(batch)], env=env, capture_output=True, text=True,
                                  check=True)
            row = json.loads(done.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(f"{op:<9}{dtype:<9}{n:>3}{batch:>7}{row['import_s']:>8.3f}s"
                  f"{row['first_call_s']:>11.3f}s{row['numpy_s']:>9.2e}s"
                  f"{row['first_call_s'] / row['numpy_s']:>7.1f}"
                  f"{row['second_first_call_s']:>9.2e}s{row['second_numpy_first_s']:>9.2e}s"
                  f"{row['second_first_call_s'] / row['second_numpy_first_s']:>7.1f}"
                  f"{row['second_numpy_s']:>9.2e}s"
                  f"{row['second_first_call_s'] / row['second_numpy_s']:>7.1f}"
                  f"{row['specialised_s']:>12.2e}s{row['generic_s']:>9.2e}s", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"cache_dir": cache, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
