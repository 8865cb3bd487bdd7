"""Keep ``benchmarks/results/`` small: JSON one record per line, bundles, summaries.

A results folder holds a ``README.md`` (machine, date, commit, command, the tables the
documentation cites) and the JSON those tables come from.  This tool makes that JSON small
enough to commit without changing a number (issue 40):

``format FILE ...``
    Rewrites JSON files in place, one record per line: a dict whose values are numbers,
    strings or flat lists and dicts of them (a benchmark row, one case of a probe) on one
    line, a container that fits in 100 characters on one line, every other one opened with
    one item per line.  Lossless: the text written is parsed back and compared with the file
    it replaces first.  ``--check`` only lists the files it would change (exit status 1 if
    any).

``bundle OUT [NAME=]FILE ...``
    Writes several JSON or JSON-lines files as one document,
    ``{"format": "blocksolve-results-bundle/1", "files": {NAME: content, ...}}``, formatted as
    ``format`` does; a JSON-lines file's content is the list of its lines, and its name is
    listed under ``"json_lines"``.  NAME defaults to the file's path relative to OUT's folder.
    Lossless: each entry is compared with its file before anything is written.  Read an entry
    back with ``json.load(open(OUT))["files"][NAME]``.

``summarize RAW OUT``
    Writes the statistics of one script's raw output without the samples they were computed
    from, for the outputs whose samples are too many to commit:

    * ``blocksolve-clean-machine/1`` (``benchmarks/clean_machine.py``): everything but
      ``repeats`` (each process's every call); the summary of every call and process stays;
    * ``blocksolve-one-matrix-clients/1`` (``benchmarks/one_matrix_clients.py``): everything
      but each workload's timed ``runs`` and each call's ``all_seconds`` (their median, least
      and greatest, the call's least, stay);
    * the first-call timings of ``tools/offline_codegen.py timings``: per case and process the
      times, the plan, the kernel's size and each cuSolverDx function's time, not the kernel
      records (entry names, hashes, layouts) or the cuSolverDx descriptors;
    * ``benchmarks/roofline.py``'s ``results.json``: the per-tree medians (``summary``, what its
      README's table shows) and of each run its limits and each case's speed-up over NumPy,
      not the bench rows (every library's times and statistics) or their environments.

    Each gets ``"load_1min"`` where its samples held load averages (the range its README
    quotes) and ``"summarized"``: the raw file, the commit that holds it (``git show
    COMMIT:PATH``) and what was left out.  Run it before the raw file is deleted.

Usage::

    python tools/compact_results.py format benchmarks/results/*/*.json
    python tools/compact_results.py bundle DIR/first-calls-runs.json DIR/first-calls-*.json
    python tools/compact_results.py summarize DIR/results.json DIR/summary.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 100  # a container this short goes on one line
RECORD = 2000  # a dict three levels deep (a case and its samples) goes on one line up to this
BUNDLE = "blocksolve-results-bundle/1"


# --------------------------------------------------------------------------- format


def _depth(value):
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


def _one_line(value):
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def dumps(value, indent=0):
    """``value`` as JSON text, one record per line (see the module's docstring)."""
    line = _one_line(value)
    if (
        not isinstance(value, dict | list)
        or not value
        or indent + len(line) <= WIDTH
        or _depth(value) == 1
        or (isinstance(value, dict) and _depth(value) == 2)
        or (isinstance(value, dict) and _depth(value) == 3 and indent + len(line) <= RECORD)
    ):
        return line
    pad = " " * (indent + 1)
    if isinstance(value, dict):
        items = [f"{pad}{_one_line(k)}: {dumps(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + dumps(v, indent + 1) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def _same(a, b):
    """Equal as JSON values, key order and NaNs included."""
    return json.dumps(a, allow_nan=True) == json.dumps(b, allow_nan=True)


def _checked(value):
    text = dumps(value) + "\n"
    if not _same(json.loads(text), value):  # pragma: no cover - a bug in dumps
        raise AssertionError("formatted JSON does not read back as the original")
    return text


def format_files(paths, check=False):
    """Rewrite ``paths`` one record per line; return those that changed (or would)."""
    changed = []
    for path in map(Path, paths):
        old = path.read_text(encoding="utf-8")
        new = _checked(json.loads(old))
        if new != old:
            changed.append(path)
            if not check:
                path.write_text(new, encoding="utf-8")
    return changed


# --------------------------------------------------------------------------- bundle


def _read(path):
    """``(content, is_json_lines)`` of a JSON or JSON-lines file."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()], True
    return json.loads(text), False


def bundle(out, sources):
    """Write ``sources`` (paths, or ``NAME=path``) into the bundle ``out``."""
    out = Path(out)
    files, json_lines = {}, []
    for source in sources:
        name, _, path = source.rpartition("=")
        path = Path(path)
        name = name or path.resolve().relative_to(out.resolve().parent).as_posix()
        if name in files:
            raise ValueError(f"{name} given twice")
        files[name], is_lines = _read(path)
        if is_lines:
            json_lines.append(name)
    document = {"format": BUNDLE, "files": files}
    if json_lines:
        document["json_lines"] = json_lines
    text = _checked(document)
    for source in sources:  # every entry reads back as its file
        name, _, path = source.rpartition("=")
        name = name or Path(path).resolve().relative_to(out.resolve().parent).as_posix()
        if not _same(json.loads(text)["files"][name], _read(Path(path))[0]):
            raise AssertionError(f"{name} does not read back from the bundle")  # pragma: no cover
    out.write_text(text, encoding="utf-8")
    return document


# --------------------------------------------------------------------------- summarize


def _load_range(records):
    """Spread of the 1-minute load averages in ``records``' ``load_before``/``load_after``."""
    ones = [
        v[0] for r in records for v in (r.get("load_before"), r.get("load_after")) if v is not None
    ]
    if not ones:
        return None
    return {"median": statistics.median(ones), "min": min(ones), "max": max(ones), "n": len(ones)}


def _clean_machine(data):
    records = [
        x
        for r in data["repeats"]
        for p in r["processes"]
        for x in [p, p["script"], *p["script"]["calls"].values()]
    ]  # the records benchmarks/clean_machine.py's README takes its load range from
    summary = {k: v for k, v in data.items() if k != "repeats"}
    summary["load_1min"] = _load_range(records)
    left_out = "repeats: each repeat's processes and each of their calls (the raw samples)"
    return summary, left_out


def _one_matrix_clients(data):
    summary = dict(data)
    summary["workloads"] = {
        name: {k: v for k, v in workload.items() if k != "runs"}
        for name, workload in data["workloads"].items()
    }
    summary["call_costs"] = {
        op: {k: v for k, v in cost.items() if k != "all_seconds"}
        for op, cost in data["call_costs"].items()
    }
    runs = [r for w in data["workloads"].values() for side in w["runs"].values() for r in side]
    summary["load_1min"] = _load_range(runs)  # the timed runs, as the script's README says
    left_out = (
        "workloads.*.runs (each timed run; their spread is in summary) and "
        "call_costs.*.all_seconds (each round; the least is call_costs.*.seconds)"
    )
    return summary, left_out


_CODEGEN_PROCESS_KEYS = (
    "plan",
    "fallback",
    "plan_s",
    "timings",
    "setup_s",
    "imports_s",
    "since_process_start_s",
    "process_wall_s",
    "cubin_bytes",
    "loaded_modules",
)
_CODEGEN_KERNEL_KEYS = ("block_dim", "batches_per_block", "shared_bytes", "registers")


def _codegen_process(process):
    out = {k: process[k] for k in _CODEGEN_PROCESS_KEYS if k in process}
    record = process.get("record") or {}
    out["kernel"] = {k: record[k] for k in _CODEGEN_KERNEL_KEYS if k in record}
    if "solver_functions" in process:
        out["solver_functions"] = [
            {k: f[k] for k in ("function", "generated", "seconds")}
            for f in process["solver_functions"]
        ]
    return out


def _codegen(data):
    summary = {k: v for k, v in data.items() if k != "runs"}
    summary["runs"] = [
        {
            k: (_codegen_process(v) if isinstance(v, dict) and "plan_s" in v else v)
            for k, v in run.items()
        }
        for run in data["runs"]
    ]
    left_out = (
        "per process: the kernel record but its launch size, shared memory and registers "
        "(entry name, ABI, output layouts, cubin hash, cache key), the cuSolverDx descriptors, "
        "and of each cuSolverDx function all but its name, whether it was generated and its time"
    )
    return summary, left_out


def _roofline_run(document):
    """One bench run of ``benchmarks/roofline.py``: its limits and blocksolve's speed-up over
    NumPy per case (labelled as the script labels them)."""
    speed_ups = {
        f"{row['op']} {row['dtype']} {row['n']}x{row['n']} x {row['batch']}": row.get("speed_up")
        for row in document["results"]
        if row["library"] == "numpy"
    }
    limits = ("created", "copy_gb_per_s", "gemm_gflop_per_s")
    return {**{k: document[k] for k in limits if k in document}, "speed_up": speed_ups}


def _roofline(data):
    summary = {k: v for k, v in data.items() if k != "runs"}
    runs = data["runs"]
    summary["runs"] = {tree: [_roofline_run(d) for d in runs[tree]] for tree in runs}
    left_out = (
        "runs.*: each run's bench rows (every library's times and statistics, NumPy's rates) "
        "and environment; kept per run: its limits and each case's speed-up over NumPy"
    )
    return summary, left_out


def _summarizer(data):
    fmt = data.get("format")
    if fmt == "blocksolve-clean-machine/1":
        return _clean_machine
    if fmt == "blocksolve-one-matrix-clients/1":
        return _one_matrix_clients
    if "runs" in data and str(data.get("what", "")).startswith("first-call costs of the CUDA"):
        return _codegen
    if {"trees", "runs", "summary"} <= set(data) and data.get("grid"):
        return _roofline
    raise ValueError(f"no summary is defined for this document (format {fmt!r})")


def _commit(path):
    """The last commit that changed ``path`` (``git show COMMIT:PATH`` prints it), if any."""
    done = subprocess.run(
        ["git", "log", "-1", "--format=%H", "--", path.name],
        cwd=path.parent,
        capture_output=True,
        text=True,
    )
    return (done.stdout.strip()[:12] or None) if done.returncode == 0 else None


def _shown(path):
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def summarize(raw, out):
    raw = Path(raw).resolve()
    data = json.loads(raw.read_text(encoding="utf-8"))
    summary, left_out = _summarizer(data)(data)
    summary["summarized"] = {
        "from": _shown(raw),
        "commit": _commit(raw),
        "by": "tools/compact_results.py summarize",
        "left_out": left_out,
    }
    Path(out).write_text(_checked(summary), encoding="utf-8")
    return summary


# --------------------------------------------------------------------------- command line


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    fmt = commands.add_parser("format", help="rewrite JSON files one record per line")
    fmt.add_argument("files", nargs="+")
    fmt.add_argument("--check", action="store_true", help="only list the files it would change")
    bun = commands.add_parser("bundle", help="several JSON / JSON-lines files as one")
    bun.add_argument("out")
    bun.add_argument("sources", nargs="+", metavar="[NAME=]FILE")
    summ = commands.add_parser("summarize", help="the statistics of a raw output, not its samples")
    summ.add_argument("raw")
    summ.add_argument("out")
    args = parser.parse_args(argv)
    if args.command == "format":
        changed = format_files(args.files, check=args.check)
        for path in changed:
            print(path)
        return 1 if args.check and changed else 0
    if args.command == "bundle":
        document = bundle(args.out, args.sources)
        print(f"{args.out}: {len(document['files'])} files")
        return 0
    summarize(args.raw, args.out)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
