"""Two blocksolve source trees timed in one run: per-call cost and steady-state speed.

For a change meant to leave the speed alone (a restructuring), this measures
what a user would notice, for the tree before and the tree after, each in its
own processes, alternating ``--repeats`` times so that the machine's drift
falls on both:

* the per-call cost of a seen call: stacks of 1, 2 and 10 4x4 matrices
  through ``cholesky`` and ``solve``, NumPy's beside (microseconds; the fixed
  cost of a call), and one 4x4 matrix through each function NumPy has (what
  code written for NumPy makes);
* the steady-state speed-ups over NumPy of the README's table, each measured
  against NumPy in interleaved rounds in the same process (``speed_up``).

Usage::

    python benchmarks/before_after.py --before PATH --after PATH [--repeats 3] [--out DIR]

``PATH`` is a checkout (its ``blocksolve`` is imported through ``PYTHONPATH``);
each tree gets its own kernel cache, compiled before any timing.  Results go to
``benchmarks/results/before-after-<date>/`` (``results.json`` and a README).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _record  # noqa: E402

# (label, function name, batch, size): the README's steady-state table.
STEADY = [
    ("cholesky 100 000 x 4x4", "cholesky", 100_000, 4),
    ("solve 100 000 x 4x4", "solve", 100_000, 4),
    ("solve 100 000 x 8x8", "solve", 100_000, 8),
    ("qr 100 000 x 4x4", "qr", 100_000, 4),
    ("qr 100 000 x 8x8", "qr", 100_000, 8),
    ("eigh 100 000 x 4x4", "eigh", 100_000, 4),
    ("svd 100 000 x 3x3", "svd", 100_000, 3),
    ("svd 20 000 x 8x8", "svd", 20_000, 8),
    ("pinv 100 000 x 4x4", "pinv", 100_000, 4),
    ("matrix_rank 100 000 x 4x4", "matrix_rank", 100_000, 4),
]
ONE_MATRIX = ["cholesky", "solve", "inv", "det", "slogdet", "eigh", "qr", "svd"]
STACKS = [1, 2, 10]

# The child: run with the tree's blocksolve on sys.path; prints one JSON line.
_CHILD = r"""
import json, sys, time
import numpy as np
import blocksolve

STEADY, ONE_MATRIX, STACKS, ROUNDS = json.loads(sys.argv[1])
blocksolve.set_specialization("wait")
rng = np.random.default_rng(0)


def inputs(name, batch, n):
    x = rng.standard_normal((batch, n, n))
    a = x @ x.transpose(0, 2, 1) / n + np.eye(n)
    return (a, rng.standard_normal((batch, n, 1))) if name == "solve" else (a,)


def per_call(function, args, seconds=0.3):
    function(*args)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(100):
            function(*args)
        count += 100
    return (time.perf_counter() - start) / count * 1e6


def pair(ours, theirs, args):
    ours(*args), theirs(*args)
    ratios = []
    for _ in range(ROUNDS):
        start = time.perf_counter(); theirs(*args); t = time.perf_counter() - start
        start = time.perf_counter(); ours(*args); o = time.perf_counter() - start
        ratios.append(t / o)
    return sorted(ratios)[len(ratios) // 2]


result = {
    "stack_us": {}, "numpy_stack_us": {}, "one_matrix_us": {}, "numpy_one_matrix_us": {},
    "speed_up": {},
}
for name in ("cholesky", "solve"):
    for batch in STACKS:
        args = inputs(name, batch, 4)
        result["stack_us"][f"{name} {batch}"] = per_call(getattr(blocksolve, name), args)
        result["numpy_stack_us"][f"{name} {batch}"] = per_call(getattr(np.linalg, name), args)
for name in ONE_MATRIX:
    args = tuple(x[0] for x in inputs(name, 1, 4))
    result["one_matrix_us"][name] = per_call(getattr(blocksolve, name), args)
    result["numpy_one_matrix_us"][name] = per_call(getattr(np.linalg, name), args)
for label, name, batch, n in STEADY:
    args = inputs(name, batch, n)
    result["speed_up"][label] = pair(getattr(blocksolve, name), getattr(np.linalg, name), args)
print(json.dumps(result))
"""


def run_tree(tree, cache, rounds):
    spec = [[list(case) for case in STEADY], ONE_MATRIX, STACKS, rounds]
    return _record.run_in_tree(_CHILD, spec, tree, cache)


def summary(runs):
    """Per measurement: the median over the runs of each tree."""
    keys = {section: list(runs[0][section]) for section in runs[0]}
    return {
        section: {key: statistics.median(run[section][key] for run in runs) for key in names}
        for section, names in keys.items()
    }


def _cell(data, tree, section, key, digits=2):
    """``median (min-max)`` of a measurement over a tree's runs."""
    values = [run[section][key] for run in data["runs"][tree]]
    low, middle, high = min(values), statistics.median(values), max(values)
    return f"{middle:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def readme(data):
    after = data["summary"]["after"]
    lines = [
        "# Before and after, in one run",
        "",
        f"Before: `{data['before']}`; after: `{data['after']}`; {data['repeats']} alternating "
        "runs of each: the median, and the least and greatest of the runs (`results.json` "
        "has every run).  Machine: "
        f"{data['machine']['cpu'].get('model', 'unknown CPU')}, "
        f"{data['machine']['cpu'].get('logical_cpus')} logical CPUs.",
        "",
        "| per call, µs | before | after |",
        "|---|---|---|",
    ]
    for key in after["stack_us"]:
        name, batch = key.split()
        lines.append(
            f"| `{name}`, a seen stack of {batch} 4x4 (NumPy {after['numpy_stack_us'][key]:.2f}) "
            f"| {_cell(data, 'before', 'stack_us', key)} "
            f"| {_cell(data, 'after', 'stack_us', key)} |"
        )
    for name in after["one_matrix_us"]:
        lines.append(
            f"| `{name}`, one 4x4 matrix (NumPy {after['numpy_one_matrix_us'][name]:.2f}) "
            f"| {_cell(data, 'before', 'one_matrix_us', name)} "
            f"| {_cell(data, 'after', 'one_matrix_us', name)} |"
        )
    lines += ["", "| speed-up over NumPy, steady state | before | after |", "|---|---|---|"]
    for label in after["speed_up"]:
        lines.append(
            f"| {label} | {_cell(data, 'before', 'speed_up', label)} "
            f"| {_cell(data, 'after', 'speed_up', label)} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, type=Path)
    parser.add_argument("--after", required=True, type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", type=Path, default=_record.default_dir("before-after"))
    args = parser.parse_args(argv)
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    runs = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as scratch:
        caches = {name: Path(scratch) / name for name in trees}
        for name, tree in trees.items():  # compile every kernel first, untimed
            run_tree(tree, caches[name], 1)
        for repeat in range(args.repeats):
            for name, tree in trees.items():
                start = time.perf_counter()
                runs[name].append(run_tree(tree, caches[name], args.rounds))
                print(f"{name} run {repeat + 1}: {time.perf_counter() - start:.0f} s", flush=True)
    data = {
        "before": str(trees["before"]),
        "after": str(trees["after"]),
        "repeats": args.repeats,
        "rounds": args.rounds,
        "machine": _record.machine(),
        "load": _record.load(),
        "runs": runs,
        "summary": {name: summary(found) for name, found in runs.items()},
    }
    _record.write(args.out, data, readme(data))
    print(readme(data))


if __name__ == "__main__":
    main()
