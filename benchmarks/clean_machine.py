"""The first minute on a clean machine: a drop-in script on an empty kernel cache.

The script (:data:`SCRIPT`) calls each public function once on 10 000 3x3
float64 matrices, timing every call, as a user who swaps blocksolve in for
``numpy.linalg``/``scipy.linalg`` would.  Each run is a new process; per
repeat, on a new empty ``BLOCKSOLVE_CACHE_DIR``, alternating blocksolve and
the reference:

1. ``first``: blocksolve's import, the script, exit (kernels that the calls
   started compiling in the background are abandoned at exit);
2. ``reference``: NumPy/SciPy's imports and the same script
   (``numpy.linalg``, or ``scipy.linalg`` where NumPy lacks the function;
   ``lstsq`` is a Python loop of ``numpy.linalg.lstsq``), then the script again;
3. ``second``: blocksolve on the same cache: the script; then the script again,
   beside the reference script, while the background compiles go on (what the
   compiles cost the caller's own work); ``blocksolve.wait_for_kernels()``;
   both scripts again with every kernel ready;
4. ``reference`` again;
5. ``cached``: blocksolve on the cache the second process filled: the script
   (kernels load from disk in the background), wait, the script again.

The reference process never imports blocksolve.  Every measurement records the
load averages before and after it.

Usage::

    PYTHONPATH=. python benchmarks/clean_machine.py [--repeats 3] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import _record

NAME = "clean-machine"

# The drop-in script, in its order: name -> call on the library ``f`` (blocksolve, or
# :func:`_reference`'s stand-in) and the inputs ``d``.
SCRIPT = {
    "cholesky": lambda f, d: f.cholesky(d["spd"]),
    "lstsq": lambda f, d: f.lstsq(d["general"], d["b"]),
    "eigh": lambda f, d: f.eigh(d["symmetric"]),
    "qr": lambda f, d: f.qr(d["general"]),
    "solve": lambda f, d: f.solve(d["general"], d["b"]),
    "slogdet": lambda f, d: f.slogdet(d["general"]),
    "inv": lambda f, d: f.inv(d["general"]),
    "cho_factor": lambda f, d: f.cho_factor(d["spd"]),
    "cho_solve": lambda f, d: f.cho_solve((d["lower"], True), d["b"]),
    "lu_factor": lambda f, d: f.lu_factor(d["general"]),
    "lu_solve": lambda f, d: f.lu_solve((d["packed_lu"], d["pivots"]), d["b"]),
    "solve_triangular": lambda f, d: f.solve_triangular(d["lower"], d["b"], lower=True),
    "det": lambda f, d: f.det(d["general"]),
    "eigvalsh": lambda f, d: f.eigvalsh(d["symmetric"]),
}


def _reference():
    """The script's functions from NumPy, or SciPy where NumPy has none."""
    from types import SimpleNamespace

    import numpy as np
    import scipy.linalg as sla

    def lstsq(a, b):  # NumPy cannot batch it: a Python loop, as a user writes it
        return [np.linalg.lstsq(a[i], b[i]) for i in range(len(a))]

    la = np.linalg
    return SimpleNamespace(
        cholesky=la.cholesky,
        lstsq=lstsq,
        eigh=la.eigh,
        qr=la.qr,
        solve=la.solve,
        slogdet=la.slogdet,
        inv=la.inv,
        cho_factor=sla.cho_factor,
        cho_solve=sla.cho_solve,
        lu_factor=sla.lu_factor,
        lu_solve=sla.lu_solve,
        solve_triangular=sla.solve_triangular,
        det=la.det,
        eigvalsh=la.eigvalsh,
    )


def _inputs(batch, n, seed):
    """Well-conditioned inputs, the same in every process (no linear algebra made them)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    eye = np.eye(n)
    x = rng.standard_normal((batch, n, n))
    general = rng.standard_normal((batch, n, n)) / np.sqrt(n) + 2 * eye
    return {
        "spd": x @ x.transpose(0, 2, 1) / n + eye,
        "general": general,
        "symmetric": (x + x.transpose(0, 2, 1)) / 2,
        "lower": np.tril(general),  # also a Cholesky factor: its diagonal is positive
        # any matrix with a non-zero diagonal is a packed LU factor, with any pivots
        "packed_lu": general,
        "pivots": np.broadcast_to(np.arange(n, dtype=np.int32), (batch, n)).copy(),
        "b": rng.standard_normal((batch, n, 1)),
    }


# --------------------------------------------------------------------------- one process


def _pending():
    from blocksolve.cpu import _background

    return _background.pending()


def _run_script(library, ops, data, pending=None):
    """Each call of the script once, timed; ``pending()`` after each call if given."""
    calls, start, before = {}, time.perf_counter(), _record.load()
    for name in ops:
        _, calls[name] = _record.timed(SCRIPT[name], library, data)
        if pending is not None:
            calls[name]["pending_after"] = pending()
    return {
        "calls": calls,
        "total_s": sum(c["s"] for c in calls.values()),
        "wall_s": time.perf_counter() - start,
        "load_before": before,
        "load_after": _record.load(),
    }


def _worker_cpu_s():
    """CPU seconds the background compiler process has used so far (Linux), or None."""
    from blocksolve.cpu import _background

    worker = _background._Worker.current
    if worker is None:
        return None
    try:
        with open(f"/proc/{worker.process.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _background_state():
    from blocksolve.cpu import _background, _compiled

    return {
        "statistics": _background.statistics(),
        "kernels": [repr(e) for e in _compiled.entries()],
        "worker_cpu_s": _worker_cpu_s(),
    }


def _child(args):
    """One process of the measurement; its record as JSON to ``args.json``."""
    record = {"process": args.child, "load_start": _record.load()}
    start = time.perf_counter()
    import numpy  # noqa: F401 - timed apart: both libraries need it

    record["import_numpy_s"] = time.perf_counter() - start
    start = time.perf_counter()
    if args.child == "reference":
        import scipy.linalg  # noqa: F401

        library = _reference()
    else:
        import blocksolve

        library = blocksolve
        record["blocksolve"] = blocksolve.__file__
        record["specialization"] = blocksolve.cpu.specialization()
    record["import_s"] = time.perf_counter() - start
    data = _inputs(args.batch, args.size, args.seed)
    ops = args.ops
    if args.child == "reference":
        record["script"] = _run_script(library, ops, data)
        record["again"] = _run_script(library, ops, data)
    else:
        record["script"] = _run_script(library, ops, data, _pending)
        record["after_script"] = _background_state()
        if args.child != "first":
            _blocksolve_later(record, blocksolve, ops, data, args)
    record["load_end"] = _record.load()
    record["end_time"] = time.time()
    with open(args.json, "w") as out:
        json.dump(record, out)


def _blocksolve_later(record, blocksolve, ops, data, args):
    """The script while the kernels compile or load, the wait, the script when they are ready."""
    reference = _reference()
    record["during"] = []
    while len(record["during"]) < args.during and _pending():
        record["during"].append(
            {
                "reference": _run_script(reference, ops, data),
                "blocksolve": _run_script(blocksolve, ops, data, _pending),
            }
        )
    done, record["wait"] = _record.timed(blocksolve.wait_for_kernels, args.wait_timeout)
    record["wait"]["finished"] = done
    record["ready"] = [
        {
            "reference": _run_script(reference, ops, data),
            "blocksolve": _run_script(blocksolve, ops, data, _pending),
        }
        for _ in range(args.ready)
    ]
    record["after_wait"] = _background_state()


# --------------------------------------------------------------------------- the driver


def _spawn(process, cache, args):
    """Run one process of the measurement; its record plus the wall time seen from here."""
    env = dict(os.environ, BLOCKSOLVE_CACHE_DIR=cache)
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
        path = out.name
    command = [sys.executable, os.path.abspath(__file__), "--child", process, "--json", path]
    command += ["--batch", str(args.batch), "--size", str(args.size), "--seed", str(args.seed)]
    command += ["--during", str(args.during), "--ready", str(args.ready)]
    command += ["--wait-timeout", str(args.wait_timeout), "--ops", *args.ops]
    before = _record.load()
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True)
    wall = time.perf_counter() - start
    ended = time.time()
    with open(path) as result:
        record = json.load(result)
    os.unlink(path)
    record.update(process_wall_s=wall, load_before=before, load_after=_record.load())
    record["exit_s"] = ended - record.pop("end_time")  # the child's last line to its exit
    print(f"  {process}: {record['script']['total_s']:.2f} s of calls", file=sys.stderr)
    return record


def measure(args):
    """Every repeat's processes, in order."""
    root = args.cache_root or tempfile.mkdtemp(prefix="blocksolve-clean-")
    os.makedirs(root, exist_ok=True)
    repeats = []
    try:
        for repeat in range(args.repeats):
            print(f"repeat {repeat + 1}/{args.repeats}", file=sys.stderr)
            cache = tempfile.mkdtemp(dir=root, prefix=f"repeat{repeat}-")
            repeats.append(
                {
                    "cache": cache,
                    "processes": [
                        _spawn(process, cache, args)
                        for process in ("first", "reference", "second", "reference", "cached")
                    ],
                }
            )
            if not args.keep_caches:
                shutil.rmtree(cache, ignore_errors=True)
    finally:
        if args.cache_root is None and not args.keep_caches:
            shutil.rmtree(root, ignore_errors=True)
    return repeats


# --------------------------------------------------------------------------- summary


def _processes(repeats, name):
    return [p for r in repeats for p in r["processes"] if p["process"] == name]


def _summary(repeats, ops):
    """Medians and ranges over the repeats: per call, totals, background work."""
    first, second, cached = (_processes(repeats, n) for n in ("first", "second", "cached"))
    reference = _processes(repeats, "reference")

    def calls(records, where=lambda p: p["script"]):
        return {op: _record.spread([where(p)["calls"][op]["s"] for p in records]) for op in ops}

    def last_ready(side):
        return lambda p: p["ready"][-1][side] if p.get("ready") else p["script"]

    per_call = {
        "reference": calls(reference),
        "first": calls(first),
        "second": calls(second),
        "cached": calls(cached),
        "ready": calls(second, last_ready("blocksolve")),
        "reference_beside_ready": calls(second, last_ready("reference")),
    }
    totals = {}
    for name, records in (
        ("reference", reference),
        ("first", first),
        ("second", second),
        ("cached", cached),
    ):
        totals[name] = {
            "import_s": _record.spread([p["import_s"] for p in records]),
            "import_numpy_s": _record.spread([p["import_numpy_s"] for p in records]),
            "calls_s": _record.spread([p["script"]["total_s"] for p in records]),
            "slowest_call_s": _record.spread(
                [max(c["s"] for c in p["script"]["calls"].values()) for p in records]
            ),
            "process_wall_s": _record.spread([p["process_wall_s"] for p in records]),
            "exit_s": _record.spread([p["exit_s"] for p in records]),
        }
    # Each blocksolve process against the reference process(es) of its repeat.
    ratios = {}
    for name in ("first", "second", "cached"):
        calls_ratio, whole_ratio, wall_ratio = [], [], []
        for r in repeats:
            bs = next(p for p in r["processes"] if p["process"] == name)
            refs = [p for p in r["processes"] if p["process"] == "reference"]
            ref_calls = sum(p["script"]["total_s"] for p in refs) / len(refs)
            ref_whole = sum(_whole(p) for p in refs) / len(refs)
            ref_wall = sum(p["process_wall_s"] for p in refs) / len(refs)
            calls_ratio.append(bs["script"]["total_s"] / ref_calls)
            whole_ratio.append(_whole(bs) / ref_whole)
            wall_ratio.append(bs["process_wall_s"] / ref_wall)
        ratios[name] = {
            "calls": _record.spread(calls_ratio),
            "imports_and_calls": _record.spread(whole_ratio),
            # meaningful for `first` only: the others do more than the script
            "process_wall": _record.spread(wall_ratio),
        }
    background = {
        name: {
            "kernels_compiled": _record.spread(
                [p.get("after_wait", p["after_script"])["statistics"]["compiled"] for p in records]
            ),
            "kernels_loaded": _record.spread(
                [p.get("after_wait", p["after_script"])["statistics"]["loaded"] for p in records]
            ),
            "pending_after_script": _record.spread(
                [p["after_script"]["statistics"]["pending"] for p in records]
            ),
            "worker_compile_s": _record.spread(
                [p.get("after_wait", p["after_script"])["statistics"]["seconds"] for p in records]
            ),
            "worker_cpu_s": _record.spread(
                [p.get("after_wait", p["after_script"])["worker_cpu_s"] for p in records]
            ),
            "wait_s": _record.spread([p["wait"]["s"] for p in records if "wait" in p]),
        }
        for name, records in (("first", first), ("second", second), ("cached", cached))
    }
    beside = {}
    for side in ("reference", "blocksolve"):
        during = [d[side]["total_s"] for p in second for d in p.get("during", [])]
        ready = [d[side]["total_s"] for p in second for d in p.get("ready", [])]
        beside[side] = {
            "during_s": _record.spread(during),
            "ready_s": _record.spread(ready),
        }
    return {
        "per_call": per_call,
        "totals": totals,
        "ratios": ratios,
        "background": background,
        "while_compiling": beside,
    }


def _whole(process):
    return process["import_numpy_s"] + process["import_s"] + process["script"]["total_s"]


def _cell(s, scale=1e3, digits=3):
    if s is None:
        return "–"
    fmt = lambda x: f"{x * scale:.{digits}g}"  # noqa: E731
    return (
        fmt(s["median"]) if s["n"] == 1 else f"{fmt(s['median'])} [{fmt(s['min'])}–{fmt(s['max'])}]"
    )


def _loads(data):
    """The load range: from the raw samples, or as a summary keeps it (``load_1min``)."""
    if "repeats" not in data:
        found = data["load_1min"]
        return f"{found['min']:.1f}–{found['max']:.1f}"
    records = [
        x
        for r in data["repeats"]
        for p in r["processes"]
        for x in [p, p["script"], *p["script"]["calls"].values()]
    ]
    return _record.loads(records)


def readme(data):
    """The README's tables from the JSON."""
    s, config, cpu = data["summary"], data["config"], data["machine"]["cpu"]
    ops = config["ops"]
    lines = [
        f"# Clean machine: the drop-in script on an empty kernel cache ({data['date']})\n",
        f"`python benchmarks/clean_machine.py {' '.join(data['argv'])}` — each public function "
        f"once on {config['batch']} {config['size']}x{config['size']} float64 matrices, every "
        f"process new, a new empty `BLOCKSOLVE_CACHE_DIR` per repeat; {config['repeats']} "
        f"repeats of: blocksolve `first` (script, exit), NumPy/SciPy `reference`, blocksolve "
        f"`second` (same cache: script, script beside the reference while kernels compile, "
        f"`wait_for_kernels()`, `ready` script), `reference`, blocksolve `cached` (kernels "
        f"compiled by `second`). Machine: {cpu['model']}, {cpu['logical_cpus']} logical CPUs, "
        f"Python "
        f"{data['machine']['python']}; 1-minute load average over every measurement "
        f"{_loads(data)}.\n",
        "Cells: median [min–max] over the repeats (reference: over its two processes per "
        "repeat), in ms unless said.\n",
        "## Each call\n",
        _record.table(
            ["call", "NumPy/SciPy", "first", "second", "cached", "ready"],
            [
                [op]
                + [
                    _cell(s["per_call"][k][op])
                    for k in ("reference", "first", "second", "cached", "ready")
                ]
                for op in ops
            ],
        ),
        "## Totals (s)\n",
        _record.table(
            [
                "process",
                "import numpy",
                "import library",
                "calls",
                "slowest call",
                "calls / NumPy's",
                "(imports + calls) / NumPy's",
                "process wall",
                "last line to exit",
            ],
            [
                [name]
                + [
                    _cell(s["totals"][name][k], 1, 3)
                    for k in ("import_numpy_s", "import_s", "calls_s", "slowest_call_s")
                ]
                + (
                    [
                        _cell(s["ratios"][name]["calls"], 1),
                        _cell(s["ratios"][name]["imports_and_calls"], 1),
                    ]
                    if name in s["ratios"]
                    else ["", ""]
                )
                + [_cell(s["totals"][name][k], 1, 3) for k in ("process_wall_s", "exit_s")]
                for name in ("reference", "first", "second", "cached")
            ],
        ),
        "Process wall: from the driver's start of the process to its end (for `first`, "
        f"{_cell(s['ratios']['first']['process_wall'], 1)}× the reference process's; "
        "`second` and `cached` do more than the script). Last line to exit: from the "
        "process's last statement to its end, as the driver sees it.\n",
        "## Background work (per process)\n",
        _record.table(
            [
                "process",
                "compiled",
                "loaded",
                "pending after script",
                "worker compile s",
                "worker CPU s",
                "wait_for_kernels s",
            ],
            [
                [name]
                + [
                    _cell(s["background"][name][k], 1, 3)
                    for k in (
                        "kernels_compiled",
                        "kernels_loaded",
                        "pending_after_script",
                        "worker_compile_s",
                        "worker_cpu_s",
                        "wait_s",
                    )
                ]
                for name in ("first", "second", "cached")
            ],
        ),
        "## The script while the kernels compile (`second`), s\n",
        _record.table(
            ["script", "while compiling", "kernels ready"],
            [
                [side, _cell(v["during_s"], 1), _cell(v["ready_s"], 1)]
                for side, v in s["while_compiling"].items()
            ],
        ),
    ]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=10_000, help="matrices per call")
    parser.add_argument("--size", type=int, default=3, help="matrix order")
    parser.add_argument("--ops", nargs="+", default=list(SCRIPT), choices=list(SCRIPT))
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument(
        "--during", type=int, default=5, help="script pairs at most while kernels compile"
    )
    parser.add_argument("--ready", type=int, default=3, help="script pairs once kernels are ready")
    parser.add_argument("--wait-timeout", type=float, default=1200.0)
    parser.add_argument("--out", help=f"results folder (default results/{NAME}-<date>)")
    parser.add_argument("--cache-root", help="where the per-repeat kernel caches are made")
    parser.add_argument("--keep-caches", action="store_true")
    parser.add_argument(
        "--child", choices=("first", "second", "cached", "reference"), help=argparse.SUPPRESS
    )
    parser.add_argument("--json", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args)
    argv = sys.argv[1:] if argv is None else list(argv)
    repeats = measure(args)
    data = {
        "format": "blocksolve-clean-machine/1",
        "date": time.strftime("%Y-%m-%d"),
        "argv": argv,
        "config": {
            k: getattr(args, k)
            for k in ("repeats", "batch", "size", "ops", "seed", "during", "ready", "wait_timeout")
        },
        "machine": _record.machine(),
        "summary": _summary(repeats, args.ops),
        "repeats": repeats,
    }
    out = _record.write(args.out or _record.default_dir(NAME), data, readme(data))
    print(f"wrote {out}", file=sys.stderr)
    return None


if __name__ == "__main__":
    main()
