"""``python -m blocksolve info | bench | warm``: what this machine has, how fast blocksolve is
on it, and compiling its kernels ahead of time.

``info`` prints package versions, CPUs, GPUs and the kernel cache without
initialising CUDA where there is no driver.  ``bench`` times blocksolve side
by side with the libraries a user would call instead (NumPy, torch and JAX
on the CPU; cuSOLVER through CuPy, and torch, on the GPU) and prints one row
per case, each speed-up with its spread over paired rounds; ``--json``
writes every measurement in the format
:func:`blocksolve.cli.bench.load_records` reads (``benchmarks/plot.py`` draws
it).  The cases, peers and timing are the ones ``benchmarks/`` uses
(:mod:`blocksolve.cli.bench`).  ``warm`` fills the kernel caches
(:mod:`blocksolve.cli.warm`).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import sys
import textwrap
import time

from .. import __version__
from .._cache import cache_dir
from ..cpu._jit import num_threads
from . import bench as _bench
from . import warm as _warm
from .bench import ALL_OPS, FUNCTIONS, GRIDS, workloads_of
from .info import environment

__all__ = ["main"]


# --------------------------------------------------------------------------- info


def _format_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def _print_info(env, out):
    print(f"blocksolve {env['versions']['blocksolve']}", file=out)
    print(f"Python     {env['python']} ({env['executable']})", file=out)
    print(f"platform   {env['platform']}", file=out)
    print("packages:", file=out)
    for name, version in env["versions"].items():
        print(f"  {name:<24}{version or 'not installed'}", file=out)
    _print_cuda_stack(env["cuda_stack"], out)
    cpu = env["cpu"]
    print(
        f"CPU:       {cpu['model']}; {cpu['logical_cpus']} logical CPUs, {cpu['usable_cpus']} "
        f"usable, blocksolve threads {cpu['blocksolve_threads']}",
        file=out,
    )
    if env["gpus"]:
        for gpu in env["gpus"]:
            extra = "".join(
                f", {key} {gpu[key]}"
                for key in (
                    "memory_gib",
                    "multiprocessors",
                    "driver_cuda_version",
                    "runtime_cuda_version",
                )
                if key in gpu
            )
            print(
                f"GPU {gpu['index']}:     {gpu['name']}, compute capability "
                f"{gpu['compute_capability']}{extra}",
                file=out,
            )
    else:
        print(f"GPU:       none ({env['gpu_note']})", file=out)
    print(f"cache:     {env['cache']['dir']}", file=out)
    for backend, disk in env["cache"]["disk"].items():
        print(
            f"  {backend}: {disk['files']} files, {_format_bytes(disk['bytes'])} in {disk['path']}",
            file=out,
        )


def _print_cuda_stack(stack, out):
    print(
        "CUDA stack, against the versions of its last verification "
        "(blocksolve/cuda/constraints.txt):",
        file=out,
    )
    for text in (stack["verified"], stack.get("also_verified")):
        if text:
            print(textwrap.fill(text, 88, initial_indent="  ", subsequent_indent="  "), file=out)
    for package in stack["packages"]:
        installed, verified = package["installed"], package["verified"]
        verdict = (
            "verified"
            if installed == verified
            else "not installed"
            if installed is None
            else f"not the verified {verified}"
        )
        print(f"  {package['name']:<24}{installed or '-':<14}{verdict}", file=out)


def _info(args):
    env = environment()
    if args.json:
        json.dump(env, sys.stdout, indent=2)
        print()
    else:
        _print_info(env, sys.stdout)
    return 0


# --------------------------------------------------------------------------- bench


def _format_time(seconds):
    if seconds is None:
        return "n/a"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale or unit == "us":
            return f"{seconds / scale:.3g} {unit}"


def _format_duration(seconds):
    if seconds < 1:
        return "under 1 s"
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def _count(number, noun):
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _format_rate(x):
    return "n/a" if x is None else f"{x:.3g}"


def _format_speed_up(row):
    if row is None or row.get("speed_up") is None:
        return "n/a"
    ratio = f"{row['speed_up']:.2f}x"
    if row["paired_rounds"] < 2:
        return ratio
    return f"{ratio} ({row['speed_up_q1']:.2f}-{row['speed_up_q3']:.2f})"


_TEXT_COLUMNS = {"op", "dtype", "device"}  # left-aligned; numbers are right-aligned


def _columns(peers):
    return (
        "op",
        "dtype",
        "n",
        "batch",
        "device",
        "blocksolve",
        *(f"vs {p}" for p in peers),
        "rounds",
        "matrices/s",
        "% copy",
        "% gemm",
        "first call",
    )


def _table_row(case, records, peers):
    ours = records.get("blocksolve")
    fraction = ours and ours["bandwidth_fraction"]
    compute = ours and ours.get("compute_fraction")
    rounds = {r["rounds"] for r in records.values()}
    return (
        case.workload.label,
        case.dtype,
        str(case.size),
        str(case.batch),
        case.device,
        _format_time(ours and ours["time_s"]),
        *(_format_speed_up(records.get(p)) if p in records else "-" for p in peers),
        str(rounds.pop()) if len(rounds) == 1 else "n/a",
        _format_rate(ours and ours["matrices_per_s"]),
        "n/a" if not fraction else f"{100 * fraction:.1f}",
        "n/a" if not compute else f"{100 * compute:.1f}",
        _format_time(ours and ours["first_call_s"]),
    )


def _print_table(measured, out):
    """One row per case; a ``vs <peer>`` column for each peer measured in any case."""
    peers = [p for p in dict.fromkeys(p.name for p in _bench.PEERS) if _measured(measured, p)]
    columns = _columns(peers)
    rows = [_table_row(case, records, peers) for case, records in measured]
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]

    def line(cells):
        return "  ".join(
            cell.ljust(w) if name in _TEXT_COLUMNS else cell.rjust(w)
            for name, cell, w in zip(columns, cells, widths)
        ).rstrip()

    print(line(columns), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in rows:
        print(line(row), file=out)
    return peers


def _measured(measured, library):
    return any(library in records for _, records in measured)


class _Progress:
    """``[i/N] elapsed, time left: case`` on stderr: one rewritten line on a terminal, one
    line per step otherwise.

    The time left is the estimated cost of the cases not finished (``costs``, seconds per
    case), scaled by how long the finished ones took against their estimate, less the time
    the current case has run: a run whose first cases compile does not extrapolate their
    cost to the rest.
    """

    def __init__(self, costs, stream=None):
        self.costs, self.total = list(costs), len(costs)
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.start = self.case_start = time.perf_counter()
        self.index = 0

    def next(self):
        self.index += 1
        self.case_start = time.perf_counter()

    def update(self, text):
        now = time.perf_counter()
        elapsed = now - self.start
        done = self.index - 1  # the current case is under way
        expected, finished = sum(self.costs[:done]), self.case_start - self.start
        left = ""
        if done and expected > 0:
            seconds = finished / expected * sum(self.costs[done:]) - (now - self.case_start)
            left = (
                ", under 1 s left" if seconds < 1 else f", about {_format_duration(seconds)} left"
            )
        message = f"[{self.index}/{self.total}] {elapsed:.0f} s{left}: {text}"
        if self.tty:
            self.stream.write("\r\033[K" + message)
        else:
            self.stream.write(message + "\n")
        self.stream.flush()

    def note(self, text):
        self.stream.write(("\r\033[K" if self.tty else "") + text + "\n")
        self.stream.flush()

    def done(self, interrupted=False):
        if self.tty:
            self.stream.write("\r\033[K")
        finished = self.index - 1 if interrupted else self.index
        how = "interrupted after" if interrupted else "measured"
        self.stream.write(
            f"{how} {finished} of {self.total} cases in {time.perf_counter() - self.start:.1f} s\n"
        )
        self.stream.flush()


def _devices(choice, parser):  # parser: the bench sub-parser, for usage errors
    if choice == "cpu":
        return ["cpu"]
    if choice == "cuda":
        if not _bench.gpu_available():
            parser.error("--device cuda: no GPU (cupy with a CUDA device is needed)")
        return ["cuda"]
    return ["cpu", "cuda"] if _bench.gpu_available() else ["cpu"]


def _select_cases(args, parser):
    """``(grid name, the options that narrowed it, cases, seconds of timed calls)``."""
    name = "quick" if args.quick and args.grid is None else (args.grid or "full")
    narrowed = [
        f"--{flag} {' '.join(map(str, values))}"
        for flag, values in (
            ("ops", args.ops),
            ("dtypes", args.dtypes),
            ("sizes", args.sizes),
            ("batch", [args.batch] if args.batch else None),
        )
        if values
    ]
    grid = _bench.GRIDS[name].override(
        ops=args.ops,  # public names; a variant (solve(assume_a='pos')) only with its grid
        dtypes=args.dtypes,
        sizes=args.sizes,
        batches=[args.batch] if args.batch else None,
    )
    min_time = args.min_time if args.min_time is not None else grid.min_time
    return name, narrowed, _bench.cases(grid, _devices(args.device, parser)), min_time


def _compile_only(cases, jobs, out):
    unique = list({(c.op, c.dtype, c.size, c.device): c for c in cases}.values())
    warmed = _bench.warm_up(unique, jobs)
    total = 0.0
    for case, seconds, error in warmed:
        total += seconds or 0.0
        status = f"{seconds:.2f} s" if error is None else f"failed: {error}"
        print(
            f"{case.workload.label:<24}{case.dtype:<12}n={case.size:<5}{case.device:<6}{status}",
            file=out,
        )
    print(f"{len(unique)} kernels, {total:.1f} s of first calls over {jobs} process(es)", file=out)
    return 0 if all(error is None for _, _, error in warmed) else 1


def _measure_case(case, min_time, progress):
    """``({library: record}, failures)`` for blocksolve and the peers a user would call
    instead, timed side by side (:func:`~blocksolve.cli.bench.side_by_side`)."""
    timeds, failures = {}, 0
    for library in ["blocksolve", *_bench.peers(case, alternatives_only=True)]:
        progress.update(f"{case.group}: {library}, first call")
        try:
            timeds[library] = _bench.prepare(case, library)
        except _bench.Unavailable as why:
            progress.note(f"{case.group}: {library} skipped: {why}")
        except Exception as error:  # noqa: BLE001 - one broken case must not end the run
            progress.note(f"{case.group}: {library} FAILED: {type(error).__name__}: {error}")
            failures += 1
    if not timeds:
        return {}, failures
    progress.update(f"{case.group}: timing {', '.join(timeds)}")
    try:
        timings = _bench.side_by_side(timeds, min_time)
    except Exception as error:  # noqa: BLE001
        progress.note(f"{case.group}: timing FAILED: {type(error).__name__}: {error}")
        return {}, failures + len(timeds)
    copy = _bench.copy_bandwidth(case.device)
    gemm = _bench.gemm_rate(case.device, case.dtype) if case.flops else None
    records = {
        library: _bench.record(
            case,
            library,
            _bench.summarize(times, iterations),
            timeds[library].first_call_s,
            timeds[library].looped,
            copy,
            gemm,
        )
        for library, (times, iterations) in timings.items()
    }
    if "blocksolve" in timings:
        ours = timings["blocksolve"][0]
        for library, (theirs, _) in timings.items():
            if library != "blocksolve":
                records[library].update(_bench.speed_up(ours, theirs))
    return records, failures


def _write_json(path, grid_name, devices, measured, not_run, interrupted):
    document = {
        "format": _bench.FORMAT,
        "grid": grid_name,
        "created": datetime.datetime.now(datetime.UTC).isoformat(),
        "environment": environment(),
        "copy_gb_per_s": {d: _bench.copy_bandwidth(d) for d in devices},
        "gemm_gflop_per_s": _gemm_rates(measured),
        "interrupted": interrupted,
        "not_run": [c.id for c in not_run],
        "results": [r for _, records in measured for r in records.values()],
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1)


def _gemm_rates(measured):
    """``{device: {dtype: GFLOP/s}}`` of the matrix products the measured cases were
    compared with."""
    rates = {}
    for case, records in measured:
        for row in records.values():
            if row.get("gemm_gflop_per_s"):
                rates.setdefault(case.device, {})[case.dtype] = row["gemm_gflop_per_s"]
    return rates


_PEER_NOTES = {
    ("numpy", "cpu"): "numpy = numpy.linalg on the whole batch (for lstsq a Python loop of "
    "numpy.linalg.lstsq over the matrices: NumPy cannot batch it)",
    ("torch", "cpu"): "torch = torch.linalg on the CPU, on the whole batch (its own threads)",
    ("jax", "cpu"): "jax = jax.numpy.linalg / jax.scipy.linalg on the CPU, jit-compiled and "
    "vmapped over the batch",
    ("cupy", "cuda"): "cupy = cuSOLVER/cuBLAS through CuPy (batched where CuPy has it)",
    ("torch", "cuda"): "torch = torch.linalg on the GPU",
}


def _summary(values, unit=""):
    values = sorted(set(values))
    return ", ".join(f"{v}{unit}" for v in values)


def _batches(cases):
    """The batch sizes of ``cases`` in words: by kind, the grid's large and small ones
    as a range."""
    words = []
    for kind, name in (("large", "large"), ("small", "small")):
        sizes = sorted({c.batch for c in cases if c.batch_kind == kind})
        if len(sizes) == 1:
            words.append(f"a {name} batch of {sizes[0]} matrices")
        elif sizes:
            words.append(f"{name} batches of {sizes[0]}-{sizes[-1]} matrices")
    fixed = sorted({c.batch for c in cases if c.batch_kind == "fixed"})
    if fixed:
        words.append(f"{'batch' if len(fixed) == 1 else 'batches'} of {_summary(fixed)} matrices")
    return "; ".join(words)


def _title(grid_name, narrowed, cases, out):
    devices = sorted({c.device for c in cases})
    where = " and ".join("this CPU" if d == "cpu" else "the GPU" for d in devices)
    selection = f"{grid_name} grid" + (f" narrowed by {' '.join(narrowed)}" if narrowed else "")
    print(
        f"blocksolve {__version__} benchmark on {where} ({num_threads()} CPU threads): {selection}",
        file=out,
    )
    labels = dict.fromkeys(c.workload.label for c in cases)
    print(
        f"{_count(len(cases), 'case')}: {', '.join(labels)}; {_summary(c.dtype for c in cases)}; "
        f"n = {_summary(c.size for c in cases)}; {_batches(cases)}",
        file=out,
    )
    compared = dict.fromkeys(p for c in cases for p in _bench.peers(c, alternatives_only=True))
    missing = [
        p.name
        for p in _bench.PEERS
        if p.alternative
        and p.device in devices
        and importlib.util.find_spec(p.requires) is None
        and p.name not in compared
    ]
    print(
        f"compared with {', '.join(compared) or 'nothing (no peer installed)'}"
        + (
            f"; not installed, so not compared: {', '.join(dict.fromkeys(missing))}"
            if missing
            else ""
        ),
        file=out,
    )


_LONG_RUN_S = 300  # estimates above this suggest a shorter run


def _print_estimate(cases, min_time, out):
    cost = _bench.estimate(cases, min_time)
    compiling = _format_duration(cost["compile_s"])
    kernels = _count(cost["kernels"], "blocksolve kernel")
    print(
        f"Estimated time on 2 cores: about {_format_duration(cost['timing_s'])} of measuring, "
        + (
            f"plus about {compiling} compiling its {kernels} (the disk cache is empty).  "
            if cost["cache_empty"]
            else f"plus up to about {compiling} compiling those of its {kernels} not in the "
            "disk cache yet.  "
        )
        + "Ctrl-C stops early and prints the table so far.",
        file=out,
    )
    if cost["timing_s"] + cost["compile_s"] > _LONG_RUN_S:
        print(
            "For a shorter run: --quick, or narrow the grid with --ops, --dtypes, --sizes or "
            "--batch, or cap it with --budget SECONDS.",
            file=out,
        )


def _legend(cases, peers, copies, gemms, out):
    devices = {c.device for c in cases}
    lines = [
        "Columns: blocksolve = median seconds per call (first calls not timed); "
        "vs <peer> = blocksolve's speed-up over that library:",
        "  its time / blocksolve's time (above 1: blocksolve is faster), the median over the "
        "paired rounds, and in brackets the middle half (25th-75th percentile) of the "
        "per-round ratios;",
        "  rounds = paired rounds: in each, every library makes its calls right after the "
        "others, so a change in the machine's load falls on all of them alike.  A wide "
        "bracket marks a noisy measurement (a busy machine): rerun it with --min-time 1.",
        *(
            f"  {_PEER_NOTES[(p, d)]}"
            for p in peers
            for d in sorted(devices)
            if (p, d) in _PEER_NOTES
        ),
        "  matrices/s = matrices per second for blocksolve; % copy = the bytes it reads and "
        f"writes per second, against a plain copy on the same device ({copies}); % gemm = "
        "the floating-point operations LAPACK counts for the work, per second, against a "
        f"large matrix product in the same dtype on the same device ({gemms}): how far "
        "each case is from the machine's limits;",
        "  first call = blocksolve's first call of the case: compiling its size-specialised "
        "kernel, or loading it from the disk cache.",
    ]
    kinds = {c.batch_kind for c in cases}
    if "large" in kinds:
        low, high = _bench.CPU_BATCH_RANGE
        lines.append(
            f"Batches: 'large' CPU batches hold about {_bench.CPU_BYTES / 1e6:g} MB of "
            f"data ({low}-{high} matrices): enough that the per-call cost vanishes, "
            "few enough that the Python-loop peers finish in seconds; GPU batches move "
            f"{_bench.GPU_BYTES / 1e6:g} MB, more than the L2 cache holds."
        )
    if any(c.batch in _bench.CALL_COST_BATCHES for c in cases):
        lines.append(
            "  Batches of "
            + ", ".join(map(str, _bench.CALL_COST_BATCHES))
            + " matrices measure the cost of one call, where NumPy's own few "
            "microseconds per call decide."
        )
    lines.append(
        "The README's table comes from longer runs on 100 000 matrices per call "
        "(benchmarks/results/): the same comparison on larger batches, so expect "
        "similar ratios, not the same numbers."
    )
    for line in lines:
        print(line, file=out)


def _bench_command(args, parser):
    started = time.perf_counter()
    grid_name, narrowed, cases, min_time = _select_cases(args, parser)
    if args.compile_only:
        return _compile_only(cases, args.jobs, sys.stdout)
    _title(grid_name, narrowed, cases, sys.stdout)
    _print_estimate(cases, min_time, sys.stdout)
    sys.stdout.flush()
    deadline = time.monotonic() + args.budget if args.budget is not None else math.inf
    progress = _Progress(
        [c["timing_s"] + c["compile_s"] for c in _bench.case_costs(cases, min_time)]
    )
    measured, not_run, failures, interrupted = [], [], 0, False
    try:
        for case in cases:
            if time.monotonic() > deadline:
                not_run.append(case)
                continue
            progress.next()
            records, failed = _measure_case(case, min_time, progress)
            measured.append((case, records))
            failures += failed
    except KeyboardInterrupt:
        interrupted = True
        not_run = cases[len(measured) :]
    progress.done(interrupted)

    devices = sorted({c.device for c in cases})
    print(file=sys.stdout)
    peers = _print_table(measured, sys.stdout)
    copies = ", ".join(f"{d}: {_bench.copy_bandwidth(d):.1f} GB/s" for d in devices)
    gemms = ", ".join(
        f"{device} {dtype}: {rate:.1f} GFLOP/s"
        for device, rates in _gemm_rates(measured).items()
        for dtype, rate in rates.items()
    )
    results = [r for _, records in measured for r in records.values()]
    first_calls = sum(r["first_call_s"] for r in results if r["library"] == "blocksolve")
    print(file=sys.stdout)
    _legend(cases, peers, copies, gemms or "not measured", sys.stdout)
    total = time.perf_counter() - started
    print(
        f"Time: {total:.1f} s in all, {first_calls:.1f} s of it blocksolve's first calls "
        f"(kernel compilation or disk-cache loads)."
        + (
            " To take the compilation out of later runs: python -m blocksolve warm --ops "
            f"{' '.join(dict.fromkeys(c.workload.function for c in cases))} --sizes "
            f"{' '.join(map(str, sorted({c.size for c in cases})))} --dtypes "
            f"{' '.join(sorted({c.dtype for c in cases}))}"
            if first_calls > 0.2 * total
            else ""
        )
    )
    if interrupted:
        print(f"Interrupted: {len(not_run)} case(s) not run.")
    elif not_run:
        print(f"time budget of {args.budget:g} s reached: {len(not_run)} case(s) not run.")
    if args.json:
        _write_json(args.json, grid_name, devices, measured, not_run, interrupted)
        print(f"wrote {args.json}")
    if failures:
        print(f"{failures} measurement(s) failed; see the messages above.", file=sys.stderr)
    if interrupted:
        return 130  # as a shell reports a command ended by Ctrl-C
    return 1 if failures else 0


# --------------------------------------------------------------------------- warm


def _warm_command(args):
    ops = workloads_of(args.ops) if args.ops else ALL_OPS
    dtypes = args.dtypes or _warm.DTYPES
    todo = _warm.kernels(ops, dtypes, args.sizes, device=args.device)
    where = "GPU" if args.device == "cuda" else "CPU"
    print(
        f"blocksolve warm: compiling {len(todo)} {where} kernels into "
        f"{_cache_path(args.device)} with {args.jobs} process(es), typically 3-15 s each "
        "on a CPU core; kernels already in the cache only load.",
        flush=True,
    )
    start = time.perf_counter()
    count = [0]

    def report(kernel, seconds, error):
        count[0] += 1
        status = f"{seconds:6.1f} s" if error is None else "FAILED"
        print(
            f"[{count[0]:>{len(str(len(todo)))}}/{len(todo)}] {status}  {kernel.label}"
            + (f": {error}" if error else ""),
            flush=True,
        )

    done = _warm.warm(todo, args.jobs, report)
    failed = sum(error is not None for _, _, error in done)
    print(
        f"{len(done) - failed} kernels ready in {time.perf_counter() - start:.1f} s "
        f"({sum(s for _, s, _ in done):.1f} s compiling or loading, all processes)"
        + (f"; {failed} failed" if failed else "")
    )
    return 1 if failed else 0


def _cache_path(device):
    return cache_dir() / device


# --------------------------------------------------------------------------- parser


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer; got {text}")
    return value


def _batch(text):
    return text if text in ("large", "small") else _positive_int(text)


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m blocksolve",
        description="What this machine offers blocksolve (info), how fast blocksolve is on "
        "it (bench), and compiling its kernels ahead of time (warm).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{info,bench,warm}")

    info = commands.add_parser("info", help="versions, CPUs, GPUs and the kernel cache")
    info.add_argument("--json", action="store_true", help="print a JSON document instead")

    bench = commands.add_parser(
        "bench",
        help="time blocksolve against NumPy, torch and JAX, or cuSOLVER",
        description="Time blocksolve against the libraries a user would call instead, on the "
        "same data: NumPy, and torch and JAX where installed, on the CPU; cuSOLVER through "
        "CuPy, and torch, on the GPU.  Prints a time estimate first and one row per case: "
        "each speed-up with its spread over paired rounds.  Ctrl-C stops early and prints "
        "the table so far.",
    )
    bench.add_argument(
        "--quick",
        action="store_true",
        help="a small grid: cholesky, solve, qr, lstsq, float64, n = 4 and 16 on "
        "large batches; cholesky and solve on 1, 10 and 100 4x4 matrices",
    )
    bench.add_argument(
        "--ops",
        nargs="+",
        choices=FUNCTIONS,
        metavar="FUNCTION",
        help=f"functions to time (default: the grid's, which may add solve(assume_a='pos')); "
        f"any of {', '.join(FUNCTIONS)}",
    )
    bench.add_argument(
        "--dtypes",
        nargs="+",
        metavar="DTYPE",
        choices=("float32", "float64", "complex64", "complex128"),
        help="dtypes (default: the grid's; full: float32 float64 complex128)",
    )
    bench.add_argument(
        "--sizes",
        nargs="+",
        type=_positive_int,
        metavar="N",
        help="matrix sizes (default: the grid's; full: 2 4 8 16 32 64 128)",
    )
    bench.add_argument(
        "--batch",
        type=_batch,
        help="matrices per call, or 'large' (about 4 MB per call on the CPU, 200 MB on the "
        "GPU) or 'small' (16) (default: the grid's)",
    )
    bench.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="where to run (default: the CPU, and the GPU when there is one)",
    )
    bench.add_argument("--json", metavar="FILE", help="write every measurement to FILE")
    bench.add_argument(
        "--min-time", type=float, metavar="S", help="seconds of timed calls per library and case"
    )
    bench.add_argument(
        "--budget", type=float, metavar="S", help="start no new case after S seconds"
    )
    bench.add_argument(
        "--compile-only",
        action="store_true",
        help="only make each kernel's first call (fills the disk cache)",
    )
    bench.add_argument(
        "--jobs", type=_positive_int, default=1, help="processes for --compile-only (default 1)"
    )
    bench.add_argument(
        "--grid",
        choices=tuple(GRIDS),
        help="a named grid instead (call-cost: every function on 1, 10 and 100 "
        "4x4 matrices; default: full, or quick with --quick)",
    )
    bench.set_defaults(subparser=bench)

    warm = commands.add_parser(
        "warm",
        help="compile kernels into the disk cache ahead of time",
        description="Compile blocksolve's kernels of the given matrix sizes into the disk "
        "cache ahead of time (a call whose kernel is not compiled yet runs on NumPy's or "
        "SciPy's LAPACK while it compiles in the background).  With --device cuda, the GPU "
        "kernels (launch shape, cuSolverDx code and linked cubin, after which any process "
        "launches them without compiling).",
    )
    warm.add_argument(
        "--ops",
        nargs="+",
        choices=FUNCTIONS,
        metavar="FUNCTION",
        help=f"functions whose kernels to compile (default: all of {', '.join(FUNCTIONS)}; "
        "solve also compiles solve(assume_a='pos'))",
    )
    warm.add_argument(
        "--dtypes",
        nargs="+",
        metavar="DTYPE",
        choices=("float32", "float64", "complex64", "complex128"),
        help="dtypes (default: all four)",
    )
    warm.add_argument(
        "--sizes",
        nargs="+",
        type=_positive_int,
        metavar="N",
        required=True,
        help="matrix sizes whose kernels to compile (lstsq: N x N/2)",
    )
    warm.add_argument(
        "--jobs", type=_positive_int, default=1, help="processes compiling side by side (default 1)"
    )
    warm.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help="whose kernels (default cpu)",
    )
    return parser


def main(argv=None):
    """Entry point of ``python -m blocksolve`` and the ``blocksolve`` script."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "info":
        return _info(args)
    if args.command == "warm":
        if args.device == "cuda" and not _bench.gpu_available():
            parser.error("warm --device cuda: no usable GPU (cupy with a CUDA device)")
        return _warm_command(args)
    return _bench_command(args, args.subparser)


if __name__ == "__main__":
    sys.exit(main())
