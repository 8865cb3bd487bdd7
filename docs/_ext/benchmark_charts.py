"""``.. benchmark-results::``: the recorded benchmark results, as charts and tables.

Reads every JSON file under ``benchmarks/results/`` (``python -m blocksolve
bench --json`` documents and pytest-benchmark ``--benchmark-json`` files,
through :func:`blocksolve.cli.bench.load_records`), draws charts with
``benchmarks/plot.py`` into ``docs/_build/benchmark-charts/`` and
emits, per device, where and with what the numbers were measured, the
charts, and a table.  Nothing is invented: with no recorded GPU result the
page says so.  A results file that cannot be read is a warning (an error
under ``sphinx-build -W``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from collections import Counter, defaultdict
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

from blocksolve.cli.bench import load_records

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
CHART_DIR = "_build/benchmark-charts"  # under the Sphinx source folder
DEVICES = {"cuda": "GPU", "cpu": "CPU"}
VERSIONS_SHOWN = (
    "blocksolve",
    "numpy",
    "scipy",
    "numba",
    "numba-cuda",
    "nvmath-python",
    "nvidia-libmathdx-cu13",
    "cupy",
    "torch",
)


def _plotter():
    path = ROOT / "benchmarks" / "plot.py"
    spec = importlib.util.spec_from_file_location("plot_benchmarks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _environment(document):
    """The ``blocksolve.cli.info.environment()`` dict stored in a results file, if any."""
    if "environment" in document:
        return document["environment"]
    return (document.get("machine_info") or {}).get("blocksolve") or {}


def _when(document):
    return (document.get("created") or document.get("datetime") or "unknown date")[:19]


def _shown_path(path):
    return os.path.relpath(path, ROOT)


def _describe_file(path, document, devices):
    env = _environment(document)
    parts = [f"``{_shown_path(path)}`` ({_when(document).replace('T', ' ')})"]
    if "cuda" in devices:
        gpus = env.get("gpus") or []
        names = sorted({g.get("name", "?") for g in gpus})
        if names:
            driver = gpus[0].get("driver_cuda_version")
            parts.append(", ".join(names) + (f", driver CUDA {driver}" if driver else ""))
    if "cpu" in devices and env.get("cpu"):
        cpu = env["cpu"]
        parts.append(f"{cpu.get('model', '?')}, {cpu.get('blocksolve_threads', '?')} threads")
    versions = env.get("versions") or {}
    shown = [
        f"{name} {version}"
        for name, version in versions.items()
        if version and any(name.startswith(v) for v in VERSIONS_SHOWN)
    ]
    if shown:
        parts.append("; ".join(shown))
    return " — ".join(parts)


def _seconds(t):
    if t is None:
        return "—"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if t >= scale or unit == "µs":
            return f"{t / scale:.3g} {unit}"


def _chart_rows(rows):
    """The rows drawn: the most common dtype (float64 when present), large batches first."""
    dtypes = Counter(r["dtype"] for r in rows)
    dtype = "float64" if "float64" in dtypes else dtypes.most_common(1)[0][0]
    kinds = {r["batch_kind"] for r in rows if r["dtype"] == dtype}
    kind = "large" if "large" in kinds else sorted(kinds)[0]
    return dtype, kind, [r for r in rows if r["dtype"] == dtype and r["batch_kind"] == kind]


def _table(rows):
    """One line per (case, other library): blocksolve's time, theirs, and the ratio."""
    cases = defaultdict(dict)
    for r in rows:
        key = (r["op"], r["dtype"], r["n"], r["batch"])
        cases[key][r["library"] + (" (loop)" if r.get("looped") else "")] = r
    lines = [
        ".. list-table::",
        "   :header-rows: 1",
        "",
        "   * - op",
        "     - dtype",
        "     - n",
        "     - batch",
        "     - blocksolve",
        "     - % of copy bandwidth",
        "     - compared with",
        "     - their time",
        "     - speed-up",
    ]
    for (op, dtype, n, batch), by_library in sorted(cases.items()):
        ours = by_library.get("blocksolve")
        others = [(name, r) for name, r in sorted(by_library.items()) if name != "blocksolve"]
        for name, theirs in others or [("—", None)]:
            fraction = ours and ours.get("bandwidth_fraction")
            ratio = f"{theirs['time_s'] / ours['time_s']:.2f}×" if ours and theirs else "—"
            lines += [
                f"   * - {op}",
                f"     - {dtype}",
                f"     - {n}",
                f"     - {batch}",
                f"     - {_seconds(ours and ours['time_s'])}",
                f"     - {100 * fraction:.1f}" if fraction else "     - —",
                f"     - {name}",
                f"     - {_seconds(theirs and theirs['time_s'])}",
                f"     - {ratio}",
            ]
    return lines


class BenchmarkResults(SphinxDirective):
    """Charts and tables of every results file, grouped by device."""

    option_spec = {"results": directives.unchanged}

    def _read(self, folder):
        files = []
        for path in sorted(folder.rglob("*.json")):
            self.env.note_dependency(str(path))
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
                rows = load_records(document) if isinstance(document, dict) else []
            except (OSError, ValueError, KeyError, TypeError) as error:
                logger.warning(
                    f"benchmark-results: cannot read {path}: {error}", location=self.get_location()
                )
                continue
            if rows:
                files.append((path, document, rows))
        return files

    def _device_lines(self, device, files, chart_dir, plotter):
        rows = [r for _, _, file_rows in files for r in file_rows if r["device"] == device]
        heading = f"{DEVICES[device]} results"
        lines = [heading, "-" * len(heading), ""]
        lines += ["Measured in:", ""]
        lines += [
            f"* {_describe_file(path, document, {device})}"
            for path, document, file_rows in files
            if any(r["device"] == device for r in file_rows)
        ]
        dtype, kind, drawn = _chart_rows(rows)
        lines += [
            "",
            f"Charts: {dtype}, {kind} batches. Matrices per second against the matrix "
            "size, one line per library; then blocksolve's effective bandwidth as a "
            "fraction of a plain copy on the same device (1.0 = as fast as reading and "
            "writing the data once).",
            "",
        ]
        for chart in plotter.plot(drawn, chart_dir / device):
            relative = chart.relative_to(Path(self.env.srcdir))
            lines += [f".. image:: /{relative.as_posix()}", "   :width: 48%", ""]
        lines += [
            "",
            f"All {dtype} cases (times are medians per call; speed-up = their time / "
            "blocksolve's):",
            "",
        ]
        lines += _table([r for r in rows if r["dtype"] == dtype]) + [""]
        return lines

    def run(self):
        folder = ROOT / self.options.get("results", "benchmarks/results")
        files = self._read(folder)
        devices = {r["device"] for _, _, rows in files for r in rows}
        lines = []
        if not files:
            lines += [
                ".. note::",
                "",
                f"   No benchmark results have been recorded yet: ``{_shown_path(folder)}``"
                " holds no results file. No GPU result has been recorded yet.",
                "",
            ]
        elif "cuda" not in devices:
            lines += [
                ".. note::",
                "",
                "   No GPU result has been recorded yet; the results below were measured on a CPU.",
                "",
            ]
        if files:
            chart_dir = Path(self.env.srcdir) / CHART_DIR
            shutil.rmtree(chart_dir, ignore_errors=True)
            plotter = _plotter()
            for device in DEVICES:
                if device in devices:
                    lines += self._device_lines(device, files, chart_dir, plotter)
        container = nodes.section()
        container.document = self.state.document
        nested_parse_with_titles(
            self.state, StringList(lines, source="benchmark-results"), container
        )
        return container.children


def setup(app):
    app.add_directive("benchmark-results", BenchmarkResults)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
