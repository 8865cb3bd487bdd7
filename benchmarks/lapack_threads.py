"""blocksolve's LAPACK path against NumPy's own call on the same batch, for source trees
side by side.

The LAPACK path (``set_specialization('never')``; by default, matrices past each
routine's ``lapack_from``) runs NumPy's call on the whole batch or on a slice per
thread; this measures, per routine and size, NumPy's time over blocksolve's in paired
rounds (blocksolve's call, then NumPy's), each tree in a process of its own,
alternating.

Usage::

    python benchmarks/lapack_threads.py --tree before=<path> --tree after=<path> --out DIR
"""

from __future__ import annotations

import argparse
import statistics

from _record import default_dir, run_in_tree, table, trees, write_trees

# (function, size, matrices per call): each routine where its split was measured to
# gain and where to lose, on batches of a few MB to a few tens of MB
CASES = [
    ("cholesky", 4, 100_000),
    ("cholesky", 64, 300),
    ("det", 4, 100_000),
    ("det", 48, 300),
    ("inv", 16, 5_000),
    ("inv", 128, 64),
    ("solve", 64, 300),
    ("eigvalsh", 16, 5_000),
    ("eigvalsh", 64, 300),
    ("svd", 16, 5_000),
    ("svd", 64, 300),
    ("qr", 64, 300),
    ("qr", 128, 64),
    ("eig", 64, 300),
    ("eig", 128, 64),
]

CHILD = r"""
import json, sys, time
import numpy as np
import blocksolve

blocksolve.set_specialization("never")
rng = np.random.default_rng(0)
results = {}
for name, n, batch, rounds in json.loads(sys.argv[1]):
    x = rng.standard_normal((batch, n, n))
    a = x @ np.swapaxes(x, -1, -2) + n * np.eye(n)
    args = (a, a[..., :1]) if name == "solve" else (a,)
    ours, theirs = getattr(blocksolve, name), getattr(np.linalg, name)
    ours(*args), theirs(*args)
    ratios = []
    for _ in range(rounds):
        start = time.perf_counter(); ours(*args); mine = time.perf_counter() - start
        start = time.perf_counter(); theirs(*args); numpy = time.perf_counter() - start
        ratios.append(numpy / mine)
    results[f"{name} {n}x{n} x {batch}"] = ratios
print(json.dumps(results))
"""


def readme(data):
    names = list(data["trees"])
    headers = ["case"] + [f"{name}: NumPy's time / blocksolve's" for name in names]
    cases = list(data["summary"][names[0]])
    rows = [
        [case] + [", ".join(f"{r:.2f}" for r in data["summary"][name][case]) for name in names]
        for case in cases
    ]
    return (
        "# blocksolve's LAPACK path against NumPy's call\n\n"
        + f"Trees: {', '.join(f'{k} = `{v}`' for k, v in data['trees'].items())}; "
        + "per run the median over paired rounds, one entry per run.\n\n"
        + table(headers, rows)
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", required=True, metavar="NAME=PATH")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--cache", default=None, help="kernel cache (none is compiled)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    sources = trees(args.tree)
    spec = [(name, n, batch, args.rounds) for name, n, batch in CASES]
    runs = {name: [] for name in sources}
    for _ in range(args.repeats):
        for name, tree in sources.items():
            runs[name].append(run_in_tree(CHILD, spec, tree, args.cache or "/tmp/bs-lapack"))

    def summary(found):
        return {case: [statistics.median(run[case]) for run in found] for case in found[0]}

    write_trees(
        args.out or default_dir("lapack-threads"),
        sources,
        runs,
        summary,
        readme,
        rounds=args.rounds,
    )


if __name__ == "__main__":
    main()
