"""How long a new call pattern takes to reach kernel speed, and the speed it reaches.

For each pattern of issue 42's list (float64, 10 000 matrices), in one process
with an empty kernel cache and ``set_specialization('wait')``: the first call
(which compiles the kernel) less a steady call is the *time to full speed*;
then the steady-state speed-up over NumPy, in interleaved rounds.  Several
source trees (``--tree``) are measured in one run, each in its own processes
and caches, alternating ``--repeats`` times, so that the machine's drift falls
on all of them.

Usage::

    python benchmarks/time_to_speed.py --tree before=PATH --tree after=PATH [--repeats 2]
        [--patterns LABEL ...] [--batch 10000] [--complex-svd]

Results go to ``benchmarks/results/time-to-speed-<date>/`` (``results.json``, README).
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

# (label, function, input kind, m, n): issue 42's patterns.
PATTERNS = [
    ("cholesky 4x4", "cholesky", "spd", 4, 4),
    ("solve 4x4", "solve", "general+rhs", 4, 4),
    ("qr 8x8", "qr", "general", 8, 8),
    ("lstsq 8x4", "lstsq", "general+rhs", 8, 4),
    ("eigh 8x8", "eigh", "spd", 8, 8),
    ("inv 4x4", "inv", "general", 4, 4),
    ("slogdet 4x4", "slogdet", "general", 4, 4),
    ("svd 3x3", "svd", "general", 3, 3),
    ("svd 8x8", "svd", "general", 8, 8),
    ("pinv 4x4", "pinv", "general", 4, 4),
    ("lu_factor 8x8", "lu_factor", "general", 8, 8),
    ("solve_triangular 8x8", "solve_triangular", "triangular+rhs", 8, 8),
]
GOAL_LABELS = [pattern[0] for pattern in PATTERNS]  # the goals' median and max are over these
# More of the Cholesky family, whose kernels are the longest to compile after the SVD's.
PATTERNS += [
    ("solve assume_a='pos' 4x4", "solve_pos", "spd+rhs", 4, 4),
    ("cho_solve 4x4", "cho_solve", "factor+rhs", 4, 4),
]
# SciPy's solve, which estimates each matrix's condition number (its LinAlgWarning).
PATTERNS += [
    ("solve assume_a='gen' 4x4", "solve_gen", "general+rhs", 4, 4),
    ("solve assume_a='lower triangular' 8x8", "solve_lower", "triangular+rhs", 8, 8),
]
BATCH = 10_000

_CHILD = r"""
import json, sys, time
import numpy as np
import scipy.linalg

patterns, batch, rounds, complex_svd = json.loads(sys.argv[1])
start = time.perf_counter()
import blocksolve
import_s = time.perf_counter() - start
blocksolve.set_specialization("wait")
rng = np.random.default_rng(0)
REFERENCE = {"lu_factor": scipy.linalg.lu_factor,
             "solve_triangular": lambda a, b: scipy.linalg.solve_triangular(a, b, lower=True),
             "lstsq": None}
STRUCTURES = {"solve_pos": "pos", "solve_gen": "gen", "solve_lower": "lower triangular"}
for name, structure in STRUCTURES.items():  # SciPy's batched solve
    REFERENCE[name] = lambda a, b, s=structure: scipy.linalg.solve(a, b, assume_a=s)


def inputs(kind, m, n, dtype):
    x = rng.standard_normal((batch, m, n))
    if dtype == "complex128":
        x = x + 1j * rng.standard_normal((batch, m, n))
    if kind.startswith("spd"):
        a = x @ np.conj(x.transpose(0, 2, 1)) / n + np.eye(n)
    elif kind.startswith("factor"):
        a = np.linalg.cholesky(x @ np.conj(x.transpose(0, 2, 1)) / n + np.eye(n))
    elif kind.startswith("triangular"):
        a = np.tril(x / (2 * n) + np.eye(m, n))
    else:
        a = x + 2 * np.sqrt(max(m, n)) * np.eye(m, n)
    a = a.astype(dtype)
    if kind.endswith("+rhs"):
        return a, rng.standard_normal((batch, m, 1)).astype(dtype)
    return (a,)


def call(name):
    if name in STRUCTURES:
        return lambda a, b: blocksolve.solve(a, b, assume_a=STRUCTURES[name])
    if name == "cho_solve":
        return lambda c, b: blocksolve.cho_solve((c, True), b)
    function = getattr(blocksolve, name)
    return (lambda a, b: function(a, b, lower=True)) if name == "solve_triangular" else function


def steady(function, args):
    times = []
    for _ in range(5):
        start = time.perf_counter(); function(*args); times.append(time.perf_counter() - start)
    return sorted(times)[2]


results = {"import_s": import_s, "patterns": {}}
todo = [(*p, "float64") for p in patterns]
if complex_svd:
    todo.append(("svd 8x8 complex128", "svd", "general", 8, 8, "complex128"))
for label, name, kind, m, n, dtype in todo:
    args = inputs(kind, m, n, dtype)
    ours = call(name)
    start = time.perf_counter(); ours(*args); first = time.perf_counter() - start
    steady_s = steady(ours, args)
    theirs = REFERENCE.get(name, getattr(np.linalg, name, None))  # None: no batched peer
    ratios = []
    if theirs is not None:
        theirs(*args)
        for _ in range(rounds):
            start = time.perf_counter(); theirs(*args); t = time.perf_counter() - start
            start = time.perf_counter(); ours(*args); o = time.perf_counter() - start
            ratios.append(t / o)
    results["patterns"][label] = {
        "first_s": first,
        "steady_s": steady_s,
        "to_full_speed_s": first - steady_s,
        "speed_up": sorted(ratios)[len(ratios) // 2] if ratios else None,
    }
print(json.dumps(results))
"""


def run(tree, patterns, batch, rounds, complex_svd):
    with tempfile.TemporaryDirectory() as cache:
        spec = [[list(p) for p in patterns], batch, rounds, complex_svd]
        return _record.run_in_tree(_CHILD, spec, tree, cache)


def summary(runs):
    labels = list(runs[0]["patterns"])
    table = {}
    for label in labels:
        found = [run["patterns"][label] for run in runs]
        table[label] = {
            key: statistics.median(f[key] for f in found) if found[0][key] is not None else None
            for key in found[0]
        }
    goals = [table[label]["to_full_speed_s"] for label in GOAL_LABELS if label in table]
    return {
        "patterns": table,
        "goal_patterns": len(goals),
        "median_to_full_speed_s": statistics.median(goals) if goals else None,
        "max_to_full_speed_s": max(goals) if goals else None,
    }


def readme(data):
    names = list(data["summary"])
    trees = ", ".join(f"{name} = `{data['trees'][name]}`" for name in names)
    lines = [
        "# Time to full speed",
        "",
        f"Trees: {trees}; "
        f"{data['repeats']} alternating runs each, medians shown.  Each run: one process, "
        f"an empty kernel cache, `set_specialization('wait')`, {data['batch']} matrices per call.  "
        "Time to full speed = first call less a steady call; speed-up = NumPy's time over "
        "blocksolve's (SciPy's for its functions and `solve`'s named structures), "
        "interleaved rounds.",
        "",
        "| pattern | " + " | ".join(f"{n}: to full speed, s | {n}: speed-up" for n in names) + " |",
        "|---|" + "---|---|" * len(names),
    ]
    labels = list(data["summary"][names[0]]["patterns"])
    for label in labels:
        cells = []
        for name in names:
            row = data["summary"][name]["patterns"][label]
            speed = "" if row["speed_up"] is None else f"{row['speed_up']:.2f}"
            cells += [f"{row['to_full_speed_s']:.2f}", speed]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for name in names:
        s = data["summary"][name]
        if s["goal_patterns"] < len(GOAL_LABELS):
            continue  # the goals' median and max are over all twelve
        lines.append(
            f"\n{name}: median {s['median_to_full_speed_s']:.2f} s, "
            f"max {s['max_to_full_speed_s']:.2f} s to full speed (issue 42's twelve patterns)."
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, metavar="NAME=PATH")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--complex-svd", action="store_true", help="also complex128 svd 8x8")
    parser.add_argument(
        "--patterns", nargs="+", choices=[p[0] for p in PATTERNS], help="only these patterns"
    )
    parser.add_argument("--batch", type=int, default=BATCH, help="matrices per call")
    parser.add_argument("--out", type=Path, default=_record.default_dir("time-to-speed"))
    args = parser.parse_args(argv)
    trees = _record.trees(args.tree)
    patterns = [p for p in PATTERNS if not args.patterns or p[0] in args.patterns]
    runs = {name: [] for name in trees}
    for repeat in range(args.repeats):
        for name, tree in trees.items():
            start = time.perf_counter()
            found = run(tree, patterns, args.batch, args.rounds, args.complex_svd)
            runs[name].append(found)
            print(f"{name} run {repeat + 1}: {time.perf_counter() - start:.0f} s", flush=True)
    _record.write_trees(
        args.out, trees, runs, summary, readme, repeats=args.repeats, batch=args.batch
    )


if __name__ == "__main__":
    main()
