"""What the benchmark scripts of this folder record beside their times, and where.

Every measurement carries the machine's load averages before and after it
(:func:`timed`), since a shared machine's load moves the times more than many
changes do; results go to ``benchmarks/results/<name>-<date>/`` as one JSON and
a short README of tables (:func:`write`).  Scripts that compare source trees run
each tree in a child process of its own (:func:`run_in_tree`).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def load():
    """The 1-, 5- and 15-minute load averages (None where the platform has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def timed(function, *args, **kwargs):
    """``(result, record)``: ``function``'s result and a record of its wall and CPU
    seconds with the load averages before and after."""
    before = load()
    cpu = time.process_time()
    start = time.perf_counter()
    result = function(*args, **kwargs)
    seconds = time.perf_counter() - start
    return result, {
        "s": seconds,
        "cpu_s": time.process_time() - cpu,
        "load_before": before,
        "load_after": load(),
    }


def spread(values):
    """Median, least, greatest and count of ``values`` (None for none)."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
    }


def machine():
    """Python, platform, CPUs and library versions, for the JSON."""
    from blocksolve.cli.info import cpu_info, versions

    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": cpu_info(),
        "versions": {k: v for k, v in versions().items() if v is not None},
    }


def default_dir(name):
    """``benchmarks/results/<name>-<today>``."""
    return RESULTS / f"{name}-{datetime.date.today().isoformat()}"


def write(directory, data, readme):
    """Write ``data`` as ``results.json`` and ``readme`` as ``README.md`` in ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "results.json").write_text(json.dumps(data, indent=1) + "\n")
    (directory / "README.md").write_text(readme)
    return directory


def trees(specs):
    """``{name: resolved path}`` of the ``--tree NAME=PATH`` arguments."""
    return {name: Path(path).resolve() for name, path in (s.split("=", 1) for s in specs)}


def write_trees(directory, trees, runs, summary, readme, **fields):
    """Write and print the results of source ``trees`` measured side by side: each tree's
    ``runs``, their ``summary(runs)``, the machine and ``fields``; return the data."""
    data = {
        "trees": {name: str(tree) for name, tree in trees.items()},
        **fields,
        "machine": machine(),
        "load": load(),
        "runs": runs,
        "summary": {name: summary(found) for name, found in runs.items()},
    }
    write(directory, data, readme(data))
    print(readme(data))
    return data


def table(headers, rows):
    """A Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def ms(seconds):
    """Seconds as milliseconds with three significant figures."""
    return "–" if seconds is None else f"{seconds * 1e3:.3g}"


def loads(records):
    """The range of 1-minute load averages over ``records`` (dicts made by :func:`timed`)."""
    values = [x for r in records for x in (r["load_before"], r["load_after"]) if x is not None]
    if not values:
        return "–"
    ones = [v[0] for v in values]
    return f"{min(ones):.1f}–{max(ones):.1f}"


def run_in_tree(source, spec, tree, cache):
    """Run ``source`` (a child script that prints one JSON line last) with the blocksolve
    of ``tree`` on its path, the kernel cache ``cache`` and ``json.dumps(spec)`` as its
    argument, from a folder outside any checkout; return that JSON."""
    env = dict(os.environ, PYTHONPATH=str(tree), BLOCKSOLVE_CACHE_DIR=str(cache))
    done = subprocess.run(
        [sys.executable, "-c", source, json.dumps(spec)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    return json.loads(done.stdout.strip().splitlines()[-1])
