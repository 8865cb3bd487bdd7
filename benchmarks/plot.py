#!/usr/bin/env python3
"""Draw benchmark results as PNG charts.

Reads ``python -m blocksolve bench --json`` files (the canonical format) and
pytest-benchmark ``--benchmark-json`` files from ``pytest benchmarks``
(converted with :func:`blocksolve.cli.bench.load_records`), and writes into the
output folder:

* ``rate-<device>-<op>-<dtype>-<batch>.png``: matrices/s against the matrix
  size, one line per library;
* ``bandwidth-<device>-<dtype>-<batch>.png``: blocksolve's effective
  bandwidth as a fraction of the copy bandwidth of the same device, one line
  per op (1.0 = as fast as copying the data once).

``<batch>`` is ``large`` (each call moves >= 200 MB on a GPU), ``small``
(latency) or ``fixed`` (a batch given on the command line).

Usage::

    python benchmarks/plot.py results.json [more.json ...] -o plots/
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from blocksolve.cli.bench import load_records

_STYLE = {"blocksolve": dict(color="C3", marker="o", linewidth=2.2)}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


_LOOPED = {"python": " (Python loop)", "library": " (per-matrix calls)"}


def _label(row):
    return row["library"] + _LOOPED.get(row.get("looped") or "", "")


def _size_axis(ax, sizes):
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("matrix size n")
    ax.grid(True, which="both", alpha=0.3)


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def _rate_chart(plt, key, rows, folder):
    device, op, dtype, batch = key
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    by_library = defaultdict(list)
    for row in rows:
        by_library[_label(row)].append(row)
    for label, series in sorted(by_library.items(), key=lambda kv: kv[0] != "blocksolve"):
        series.sort(key=lambda r: r["n"])
        ax.plot(
            [r["n"] for r in series],
            [r["matrices_per_s"] for r in series],
            label=label,
            **_STYLE.get(label, dict(marker=".")),
        )
    ax.set_yscale("log")
    ax.set_ylabel("matrices / s")
    _size_axis(ax, sorted({r["n"] for r in rows}))
    ax.set_title(f"{op} {dtype} on {device} ({batch} batch)")
    ax.legend()
    path = _save(fig, folder / f"rate-{device}-{op}-{dtype}-{batch}.png")
    plt.close(fig)
    return path


def _bandwidth_chart(plt, key, rows, folder):
    device, dtype, batch = key
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    by_op = defaultdict(list)
    for row in rows:
        by_op[row["op"]].append(row)
    for op, series in sorted(by_op.items()):
        series.sort(key=lambda r: r["n"])
        ax.plot(
            [r["n"] for r in series],
            [r["bandwidth_fraction"] for r in series],
            marker="o",
            label=op,
        )
    ax.axhline(1.0, color="k", linewidth=0.8, linestyle="--")
    ax.set_ylabel("fraction of copy bandwidth")
    ax.set_ylim(bottom=0)
    _size_axis(ax, sorted({r["n"] for r in rows}))
    copy = rows[0].get("copy_gb_per_s")
    ax.set_title(
        f"blocksolve {dtype} on {device} ({batch} batch)"
        + (f"; copy = {copy:.0f} GB/s" if copy else "")
    )
    ax.legend(fontsize="small")
    path = _save(fig, folder / f"bandwidth-{device}-{dtype}-{batch}.png")
    plt.close(fig)
    return path


def plot(rows, folder):
    """Write every chart for ``rows`` (result records) into ``folder``; return the paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    plt = _pyplot()
    latest = {
        (r["device"], r["op"], r["dtype"], r["batch_kind"], _label(r), r["n"]): r for r in rows
    }  # a case measured in several files: the last file wins
    rates, fractions = defaultdict(list), defaultdict(list)
    for row in latest.values():
        rates[(row["device"], row["op"], row["dtype"], row["batch_kind"])].append(row)
        if row["library"] == "blocksolve" and row.get("bandwidth_fraction") is not None:
            fractions[(row["device"], row["dtype"], row["batch_kind"])].append(row)
    paths = [_rate_chart(plt, key, group, folder) for key, group in sorted(rates.items())]
    paths += [_bandwidth_chart(plt, key, group, folder) for key, group in sorted(fractions.items())]
    return paths


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "results",
        nargs="+",
        type=Path,
        help="bench --json or pytest-benchmark --benchmark-json files",
    )
    parser.add_argument("-o", "--output", type=Path, required=True, help="folder for the PNGs")
    args = parser.parse_args(argv)
    rows = []
    for path in args.results:
        try:
            rows += load_records(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as error:
            parser.error(f"cannot read {path}: {error}")
    if not rows:
        parser.error("no benchmark results in " + ", ".join(map(str, args.results)))
    for path in plot(rows, args.output):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
