"""Measure the first call of new call patterns (issue 12's goal: under a second on 2 cores
once the generic kernels are cached, and within 3x NumPy's time on the same call).

For each case, a fresh Python process with its own copy of a kernel cache that holds
only the generic kernels (so no case finds a specialised kernel another left behind):

1. imports blocksolve (timed: ``import_s``, and the CPU time of the process's
   threads in it, ``import_cpu_s``) and builds the inputs (not timed);
2. makes blocksolve's first call of a pattern nothing has compiled before
   (``first_call_s``: the run-time-size kernel loaded from the disk cache and
   run; ``first_call_cpu_s``, and the whole machine's ``steal_s`` and
   ``iowait_s`` over steps 1 and 2, from ``/proc/stat``: a slow first call
   says whether the process computed or waited), calls it again (the
   specialised kernel is handed to the background compiler from a pattern's
   second call; ``--settle`` waits for it to finish), each call followed by
   NumPy's on the same data (untimed: NumPy's first call in the process is
   no new size); NumPy's time on that data
   (``numpy_s``, the minimum of 5) is taken after step 3;
3. in the same process, new patterns as a notebook user trying other sizes:
   for each size ``n + 1 ... n + NEW``, NumPy's first call on its own fresh
   copy of the data (``numpy_first_s``), then blocksolve's first call of the
   new pattern on another fresh copy (``new_pattern_s``), each after the same
   pause (``--pause``, default 0.3 s: both start from an idle machine, as a
   notebook cell does; ``--pause 0``: back to back, each library's first call
   right after the other's, as in a loop over sizes that calls both, with no
   ``sleep(0)``: that yield to the OS alone doubled both first calls);
   after the loop, NumPy's best of 5 on each size (``numpy_best_s``);
4. waits for the background compiler and times the specialised kernel
   (``specialised_s``) and the run-time-size one (``generic_s``) of size
   ``n``, minima of 20.

The first call of anything after a pause is slow for every library (caches
and branch predictors cold: NumPy's first 6x6 Cholesky after 0.3 s idle takes
~150 us here against 5 us warm); comparing first calls made in the same state
is the point of step 3.

By default the script creates a fresh cache directory and runs ``python -m
blocksolve warm`` (generic kernels only) into it first.

Usage::

    python tools/first_calls.py --json first_calls.json          # fresh cache, warm, measure
    python tools/first_calls.py --cache-dir DIR --no-warm ...     # an existing generic-only cache
    python tools/first_calls.py --only single --pause 0           # one matrix, back to back
    python tools/first_calls.py --only single --single-sizes 20 40  # one matrix of other sizes
    python tools/first_calls.py --only single --pause 0 --repeat 6  # medians over 6 processes
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap

NEW = 4  # new sizes per case in step 3

CASE_SCRIPT = textwrap.dedent("""
    import json, os, sys, time

    def machine_waits():  # the whole machine's (steal, iowait) clock ticks so far, Linux only
        try:
            with open("/proc/stat") as f:
                ticks = f.readline().split()
        except OSError:
            return None
        return int(ticks[8]), int(ticks[5])

    def waited(before):  # (steal, iowait) seconds since ``before``
        after = machine_waits()
        if before is None or after is None:
            return None, None
        hz = os.sysconf("SC_CLK_TCK")
        return (after[0] - before[0]) / hz, (after[1] - before[1]) / hz

    waits_before = machine_waits()
    t0, c0 = time.perf_counter(), time.process_time()
    import numpy as np
    import blocksolve
    from blocksolve import _bench
    import_s, import_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    op, dtype, size, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    new, pause, settle = int(sys.argv[5]), float(sys.argv[6]), sys.argv[7] == "settle"

    def case_data(size):
        case = _bench.Case(op, dtype, size, batch, "cpu")
        data = _bench.inputs(case)
        peer = _bench.PEERS[0].calls[op](data)
        return (lambda: case.workload.run(blocksolve, data)), peer

    def idle(seconds):  # no sleep(0) for no pause: that yield to the OS slowed both calls ~2x
        if seconds:
            time.sleep(seconds)

    def best(call, repeat):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        return min(times)

    ours, numpy_call = case_data(size)
    start, cpu_start = time.perf_counter(), time.process_time()
    ours()
    first, first_cpu = time.perf_counter() - start, time.process_time() - cpu_start
    steal_s, iowait_s = waited(waits_before)  # over the import and the first call
    numpy_call()  # NumPy's first call in the process, untimed: step 3 compares new sizes
    ours()  # a second call: the specialised kernel is handed to the background from here
    numpy_call()
    if settle:  # step 3 without that compilation running beside it
        blocksolve.wait_for_kernels()
    # Step 3 alternates the two libraries' first calls and nothing else, so that each
    # follows one call of the other; NumPy's warm times come after it (timed in the loop,
    # they warmed NumPy's code, and only NumPy's, before its next first call).
    numpy_first, new_pattern, numpy_others = [], [], []
    for other in range(size + 1, size + 1 + new):
        ours_other, _ = case_data(other)
        _, numpy_other = case_data(other)  # its own copy: neither call warms the other's data
        idle(pause)
        numpy_first.append(best(numpy_other, 1))
        idle(pause)
        new_pattern.append(best(ours_other, 1))
        numpy_others.append(numpy_other)
    numpy_s = best(numpy_call, 5)
    numpy_best = [best(numpy_other, 5) for numpy_other in numpy_others]
    blocksolve.wait_for_kernels()
    specialised = best(ours, 20)
    blocksolve.set_specialization("never")
    generic = best(ours, 20)
    print(json.dumps(dict(op=op, dtype=dtype, n=size, batch=batch, import_s=import_s,
                          import_cpu_s=import_cpu_s, first_call_s=first,
                          first_call_cpu_s=first_cpu, steal_s=steal_s, iowait_s=iowait_s,
                          numpy_s=numpy_s, pause_s=pause,
                          new_pattern_s=new_pattern, numpy_first_s=numpy_first,
                          numpy_best_s=numpy_best, specialised_s=specialised,
                          generic_s=generic)))
""")

# (size, batch): a large batch (as `bench --quick`) and a single matrix.
SIZES = ((4, "large"), (13, "large"), (6, 1), (10, 1))
DEFAULT_CASES = [
    (op, "float64", n, batch) for op in ("cholesky", "solve", "qr", "lstsq") for n, batch in SIZES
]


def _batch(op, dtype, n, kind):
    from blocksolve import _bench

    return _bench.batch_for(kind, "cpu", op, n, dtype)


def _ratios(row, against):
    return [ours / peer for ours, peer in zip(row["new_pattern_s"], row[against])]


def _run_case(cache, op, dtype, n, batch, pause, settle):
    """One fresh process on its own copy of ``cache``: the row CASE_SCRIPT prints."""
    with tempfile.TemporaryDirectory(prefix="blocksolve-first-call-case-") as case_cache:
        shutil.copytree(cache, case_cache, dirs_exist_ok=True)
        env = {
            **os.environ,
            "BLOCKSOLVE_CACHE_DIR": case_cache,
            "BLOCKSOLVE_SPECIALIZE": "background",
        }
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                CASE_SCRIPT,
                op,
                dtype,
                str(n),
                str(batch),
                str(NEW),
                str(pause),
                "settle" if settle else "-",
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _pooled(runs):
    """One row from the runs of a case: the first run's row, the per-size lists of all
    runs concatenated (``runs``: how many), the ratios medians over all of them; the
    import and the first call in a new process are the slowest run's (each with its CPU
    time, the first call also with the machine's steal and iowait), each run's listed in
    ``import_runs_s``, ``first_call_runs_s`` and so on (the goal is a bound on every one)."""
    row = dict(runs[0], runs=len(runs))
    for key in ("new_pattern_s", "numpy_first_s", "numpy_best_s"):
        row[key] = [t for run in runs for t in run[key]]
    for key, per_run in _PER_RUN:
        row[per_run] = [run.get(key) for run in runs]
    for key, companions in (
        ("import_s", ("import_cpu_s",)),
        ("first_call_s", ("first_call_cpu_s", "steal_s", "iowait_s")),
    ):
        slowest = max(runs, key=lambda run: run[key])
        for name in (key, *companions):
            row[name] = slowest.get(name)
    row["ratio_first"] = statistics.median(_ratios(row, "numpy_first_s"))
    row["ratio_best"] = statistics.median(_ratios(row, "numpy_best_s"))
    return row


# (a run's key, the row's list of it over the runs)
_PER_RUN = (
    ("import_s", "import_runs_s"),
    ("import_cpu_s", "import_cpu_runs_s"),
    ("first_call_s", "first_call_runs_s"),
    ("first_call_cpu_s", "first_call_cpu_runs_s"),
    ("steal_s", "steal_runs_s"),
    ("iowait_s", "iowait_runs_s"),
)


def _slow_first_calls(row, bound=1.0):
    """A line per run of ``row`` whose first call took more than ``bound`` seconds: where
    the time went (the process's CPU, or waiting: the VM's steal, the disk)."""
    lines = []
    for i, seconds in enumerate(row["first_call_runs_s"]):
        if seconds > bound:
            steal, iowait = row["steal_runs_s"][i], row["iowait_runs_s"][i]
            waits = (
                ""
                if steal is None
                else f"; the machine's steal {steal:.2f} s, iowait {iowait:.2f} s over both"
            )
            lines.append(
                f"  run {i + 1}: first call {seconds:.2f} s, of it CPU "
                f"{row['first_call_cpu_runs_s'][i]:.2f} s; import "
                f"{row['import_runs_s'][i]:.2f} s, CPU "
                f"{row['import_cpu_runs_s'][i]:.2f} s{waits}"
            )
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", help="kernel cache to copy per case (default: a fresh one)")
    parser.add_argument(
        "--no-warm",
        action="store_true",
        help="do not run `python -m blocksolve warm` into the cache first",
    )
    parser.add_argument("--jobs", type=int, default=2, help="processes for warm (default 2)")
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument(
        "--only",
        choices=("single", "large"),
        help="only the single-matrix or only the large-batch cases",
    )
    parser.add_argument(
        "--pause",
        type=float,
        default=0.3,
        help="seconds idle before each first call of step 3 (default 0.3)",
    )
    parser.add_argument(
        "--single-sizes",
        nargs="+",
        type=int,
        metavar="N",
        help="sizes of the single-matrix cases (default: 6 10)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="R",
        help="fresh processes per case; ratios are medians over all their "
        "new sizes (default 1; single calls on a shared VM vary ±50%%)",
    )
    parser.add_argument(
        "--settle",
        action="store_true",
        help="wait for the background compilation the second call starts "
        "before step 3 (default: step 3 runs beside it, as a notebook's "
        "next cell would; on 2 cores it takes one)",
    )
    args = parser.parse_args(argv)
    cases = [
        case
        for case in DEFAULT_CASES
        if args.only is None or (case[3] == 1) == (args.only == "single")
    ]
    if args.single_sizes:
        cases = [case for case in cases if case[3] != 1] + [
            (op, dtype, n, 1)
            for op in dict.fromkeys(c[0] for c in cases)
            for dtype in ("float64",)
            for n in args.single_sizes
        ]
    cache = args.cache_dir or tempfile.mkdtemp(prefix="blocksolve-first-calls-")
    if not args.no_warm:
        subprocess.run(
            [sys.executable, "-m", "blocksolve", "warm", "--jobs", str(args.jobs)],
            env={**os.environ, "BLOCKSOLVE_CACHE_DIR": cache},
            check=True,
        )
    rows = []
    print(
        f"step 3: {NEW} new sizes per case, {args.pause} s idle before each first call; "
        "ratios are medians over them"
    )
    print(
        f"{'op':<9}{'dtype':<9}{'n':>3}{'batch':>7}{'import':>9}{'first call':>12}"
        f"{'numpy':>10}{'new pattern':>13}{'numpy 1st':>11}{'ratio':>7}{'best':>10}"
        f"{'ratio':>7}{'specialised':>13}{'generic':>10}"
    )
    for op, dtype, n, kind in cases:
        batch = _batch(op, dtype, n, kind)
        runs = [
            _run_case(cache, op, dtype, n, batch, args.pause, args.settle)
            for _ in range(args.repeat)
        ]
        row = _pooled(runs)
        rows.append(row)
        print(
            f"{op:<9}{dtype:<9}{n:>3}{batch:>7}{row['import_s']:>8.3f}s"
            f"{row['first_call_s']:>11.3f}s{row['numpy_s']:>9.2e}s"
            f"{statistics.median(row['new_pattern_s']):>12.2e}s"
            f"{statistics.median(row['numpy_first_s']):>10.2e}s{row['ratio_first']:>7.1f}"
            f"{statistics.median(row['numpy_best_s']):>9.2e}s{row['ratio_best']:>7.1f}"
            f"{row['specialised_s']:>12.2e}s{row['generic_s']:>9.2e}s",
            flush=True,
        )
        for line in _slow_first_calls(row):
            print(line, flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(
                {
                    "cache_dir": cache,
                    "pause_s": args.pause,
                    "settle": args.settle,
                    "repeat": args.repeat,
                    "rows": rows,
                },
                f,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
