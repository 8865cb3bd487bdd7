"""How far the kernels are from this machine's limits, for source trees side by side.

Runs ``python -m blocksolve bench --grid roofline`` (issue 43's cases) once per
tree, alternating ``--repeats`` times so that the machine's drift falls on every
tree, each tree with its own kernel cache (compiled by a first, untimed run).
Every run measures its own limits: a large matrix product per dtype (GFLOP/s)
and a plain copy (GB/s); a case's rates are fractions of those, and its speed-up
over NumPy is measured in the same run.  The summary is the median over a tree's
runs.

Usage::

    python benchmarks/roofline.py --tree before=PATH --tree after=PATH [--repeats 2]
        [--grid roofline]

Results go to ``benchmarks/results/roofline-<date>/`` (``results.json`` with every
run's rows, and a README).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _record  # noqa: E402

# What the table shows per case and tree: (column, row field, scale, digits).
COLUMNS = [
    ("GFLOP/s", "gflop_per_s", 1, 2),
    ("% gemm", "compute_fraction", 100, 1),
    ("GB/s", "gb_per_s", 1, 1),
    ("% copy", "bandwidth_fraction", 100, 0),
    ("vs NumPy", "speed_up", 1, 2),
]


def run_bench(tree, cache, grid, out):
    """One ``bench --grid GRID`` run of ``tree``; its JSON document."""
    env = dict(os.environ, PYTHONPATH=str(tree), BLOCKSOLVE_CACHE_DIR=str(cache))
    subprocess.run(
        [sys.executable, "-m", "blocksolve", "bench", "--grid", grid, "--json", str(out)],
        env=env,
        check=True,
        capture_output=True,
        cwd=tempfile.gettempdir(),
    )
    return json.loads(out.read_text())


def case_key(row):
    return f"{row['op']} {row['dtype']} {row['n']}x{row['n']} x {row['batch']}"


def rows_of(document):
    """``{case: {field: value}}``: blocksolve's row of each case, with its speed-up over
    NumPy from NumPy's row."""
    rows = {}
    for row in document["results"]:
        if row["library"] == "blocksolve":
            rows.setdefault(case_key(row), {}).update(row)
        elif row["library"] == "numpy":
            rows.setdefault(case_key(row), {})["speed_up"] = row.get("speed_up")
    return rows


def summary(documents):
    """Per case and field, the median over the runs (None where a run has none)."""
    runs = [rows_of(d) for d in documents]
    summarised = {}
    for case in runs[0]:
        summarised[case] = {}
        for _, field, _, _ in COLUMNS:
            values = [r[case].get(field) for r in runs if case in r]
            values = [v for v in values if v is not None]
            summarised[case][field] = statistics.median(values) if values else None
    return summarised


def limits(documents):
    """``(copy GB/s, {dtype: gemm GFLOP/s})`` medians over the runs."""
    copy = statistics.median(d["copy_gb_per_s"]["cpu"] for d in documents)
    dtypes = documents[0]["gemm_gflop_per_s"]["cpu"]
    gemm = {
        dtype: statistics.median(d["gemm_gflop_per_s"]["cpu"][dtype] for d in documents)
        for dtype in dtypes
    }
    return copy, gemm


def _cell(value, scale, digits):
    return "–" if value is None else f"{value * scale:.{digits}f}"


def readme(data):
    names = list(data["trees"])
    trees = ", ".join(f"{name} = `{path}`" for name, path in data["trees"].items())
    lines = [
        "# Distance to the machine's limits (roofline)",
        "",
        f"Trees: {trees}; "
        f"{data['repeats']} alternating runs of `python -m blocksolve bench --grid "
        f"{data['grid']}` "
        "each, medians shown (`results.json` has every run).  Machine: "
        f"{data['machine']['cpu'].get('model', 'unknown CPU')}, "
        f"{data['machine']['cpu'].get('logical_cpus')} logical CPUs.",
        "",
        "Limits measured in the same runs (medians): "
        + "; ".join(
            f"{name}: copy {copy:.1f} GB/s, "
            + ", ".join(f"{t} matrix product {g:.1f} GFLOP/s" for t, g in gemm.items())
            for name, (copy, gemm) in ((n, limits(data["runs"][n])) for n in names)
        )
        + ".  GFLOP/s count LAPACK's operations for the work (`blocksolve/_flops.py`); GB/s "
        "every input read and every output written once.",
        "",
    ]
    header = ["case"] + [f"{name}: {column}" for column, *_ in COLUMNS for name in names]
    rows = []
    for case in data["summary"][names[0]]:
        cells = [case]
        for _, field, scale, digits in COLUMNS:
            values = [data["summary"][name].get(case, {}).get(field) for name in names]
            cells += [_cell(value, scale, digits) for value in values]
        rows.append(cells)
    lines.append(_record.table(header, rows))
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, metavar="NAME=PATH")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--grid", default="roofline", help="bench grid (default: roofline)")
    parser.add_argument("--out", type=Path, default=_record.default_dir("roofline"))
    args = parser.parse_args(argv)
    trees = _record.trees(args.tree)
    runs = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        for name, tree in trees.items():  # compile every kernel first, untimed
            run_bench(tree, scratch / name, args.grid, scratch / f"{name}-warm.json")
        for repeat in range(args.repeats):
            for name, tree in trees.items():
                document = run_bench(tree, scratch / name, args.grid, scratch / f"{name}.json")
                runs[name].append(document)
                print(f"{name} run {repeat + 1} done", flush=True)
    _record.write_trees(
        args.out, trees, runs, summary, readme, repeats=args.repeats, grid=args.grid
    )


if __name__ == "__main__":
    main()
