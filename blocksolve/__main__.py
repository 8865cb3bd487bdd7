"""``python -m blocksolve info | bench | warm``: what this machine has, how fast blocksolve is
on it, and compiling its CPU kernels ahead of time.

``info`` prints package versions, CPUs, GPUs and the kernel cache without
initialising CUDA where there is no driver.  ``bench`` times blocksolve
against numpy/scipy on the CPU and cuSOLVER (through cupy) on the GPU on
the same data and prints one row per case; ``--json`` writes every
measurement in the format :func:`blocksolve._bench.load_records` reads
(``tools/plot_benchmarks.py`` draws it).  The cases, peers and timing are
the ones ``benchmarks/`` uses (:mod:`blocksolve._bench`).  ``warm`` fills
the CPU kernel cache (:mod:`blocksolve._warm`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
import textwrap
import time

from . import _bench

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
    for backend, info in env["cache"]["backends"].items():
        disk = info["disk"]
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
    print(
        textwrap.fill(stack["verified"], 88, initial_indent="  ", subsequent_indent="  "), file=out
    )
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
    from ._info import environment

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


def _format_rate(x):
    return "n/a" if x is None else f"{x:.3g}"


_COLUMNS = (
    "op",
    "dtype",
    "n",
    "batch",
    "device",
    "blocksolve",
    "peer",
    "peer time",
    "speed-up",
    "matrices/s",
    "GB/s",
    "% copy",
    "first call",
)


def _table_row(case, ours, peer_name, theirs):
    t_ours = ours and ours["time_s"]
    t_peer = theirs and theirs["time_s"]
    fraction = ours and ours["bandwidth_fraction"]
    return (
        case.op,
        case.dtype,
        str(case.size),
        str(case.batch),
        case.device,
        _format_time(t_ours),
        peer_name or "-",
        _format_time(t_peer),
        f"{t_peer / t_ours:.2f}x" if t_ours and t_peer else "n/a",
        _format_rate(ours and ours["matrices_per_s"]),
        _format_rate(ours and ours["gb_per_s"]),
        "n/a" if fraction is None else f"{100 * fraction:.1f}",
        _format_time(ours and ours["first_call_s"]),
    )


_TEXT_COLUMNS = {"op", "dtype", "device", "peer"}  # left-aligned; numbers are right-aligned


def _print_table(rows, out):
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(_COLUMNS)]

    def line(cells):
        return "  ".join(
            cell.ljust(w) if name in _TEXT_COLUMNS else cell.rjust(w)
            for name, cell, w in zip(_COLUMNS, cells, widths)
        )

    print(line(_COLUMNS), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in rows:
        print(line(row), file=out)


class _Progress:
    """``[i/N] case`` on stderr: one rewritten line on a terminal, one line per case otherwise."""

    def __init__(self, total, stream=None):
        self.total, self.stream = total, stream or sys.stderr
        self.tty = self.stream.isatty()
        self.start = time.perf_counter()
        self.index = 0

    def next(self):
        self.index += 1

    def update(self, text):
        elapsed = time.perf_counter() - self.start
        message = f"[{self.index}/{self.total}] {elapsed:5.1f}s {text}"
        if self.tty:
            self.stream.write("\r\033[K" + message)
        else:
            self.stream.write(message + "\n")
        self.stream.flush()

    def note(self, text):
        self.stream.write(("\r\033[K" if self.tty else "") + text + "\n")
        self.stream.flush()

    def done(self):
        if self.tty:
            self.stream.write("\r\033[K")
        self.stream.write(
            f"{self.index} of {self.total} cases in {time.perf_counter() - self.start:.1f}s\n"
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
    name = "quick" if args.quick and args.grid is None else (args.grid or "full")
    grid = _bench.GRIDS[name].override(
        ops=args.ops,
        dtypes=args.dtypes,
        sizes=args.sizes,
        batches=[args.batch] if args.batch else None,
    )
    min_time = args.min_time if args.min_time is not None else grid.min_time
    return name, _bench.cases(grid, _devices(args.device, parser)), min_time


def _compile_only(cases, jobs, out):
    unique = list({(c.op, c.dtype, c.size, c.device): c for c in cases}.values())
    warmed = _bench.warm_up(unique, jobs)
    total = 0.0
    for case, seconds, error in warmed:
        total += seconds or 0.0
        status = f"{seconds:.2f} s" if error is None else f"failed: {error}"
        print(f"{case.op:<18}{case.dtype:<12}n={case.size:<5}{case.device:<6}{status}", file=out)
    print(f"{len(unique)} kernels, {total:.1f} s of first calls over {jobs} process(es)", file=out)
    return 0 if all(error is None for _, _, error in warmed) else 1


class _Failed(dict):
    """A measurement that raised: shown as n/a, counted in the exit status, not written."""

    def __init__(self):
        super().__init__(
            time_s=None,
            matrices_per_s=None,
            gb_per_s=None,
            bandwidth_fraction=None,
            first_call_s=None,
        )


def _measure(case, library, min_time, progress):
    """One :func:`~blocksolve._bench.run_case`: None if unavailable, a :class:`_Failed` if
    it raised."""
    progress.update(f"{case.group}: {library}")
    try:
        return _bench.run_case(case, library, min_time)
    except _bench.Unavailable as why:
        progress.note(f"{case.group}: {library} skipped: {why}")
        return None
    except Exception as error:  # noqa: BLE001 - one broken case must not end the run
        progress.note(f"{case.group}: {library} FAILED: {type(error).__name__}: {error}")
        return _Failed()


def _measure_case(case, min_time, progress):
    """``(blocksolve's record, peer name, peer's record)``: the first peer that can run it."""
    ours = _measure(case, "blocksolve", min_time, progress)
    for peer in _bench.peers(case):
        theirs = _measure(case, peer, min_time, progress)
        if theirs is not None:
            return ours, peer, theirs
    return ours, None, None


def _write_json(path, grid_name, devices, results, not_run):
    from ._info import environment

    document = {
        "format": _bench.FORMAT,
        "grid": grid_name,
        "created": datetime.datetime.now(datetime.UTC).isoformat(),
        "environment": environment(),
        "copy_gb_per_s": {d: _bench.copy_bandwidth(d) for d in devices},
        "not_run": [c.id for c in not_run],
        "results": results,
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1)


_PEER_NOTES = {
    "numpy": "numpy = numpy.linalg on the whole batch (for lstsq a Python loop of "
    "numpy.linalg.lstsq over the matrices: NumPy cannot batch it)",
    "scipy": "scipy = scipy.linalg (it loops over a batch in Python)",
    "cupy": "cupy = cuSOLVER/cuBLAS through CuPy (batched where CuPy has it)",
    "torch": "torch = torch.linalg on the GPU",
}


def _title(grid_name, cases, out):
    from . import __version__
    from .cpu._jit import num_threads

    devices = sorted({c.device for c in cases})
    where = ", ".join("this CPU" if d == "cpu" else "the GPU" for d in devices)
    dtypes = ", ".join(sorted({c.dtype for c in cases}))
    print(
        f"blocksolve {__version__} benchmark ({grid_name} grid): time per call of blocksolve and "
        f"of another library on the same data, on {where} ({num_threads()} CPU threads); "
        f"{dtypes}",
        file=out,
    )


def _legend(cases, peers_used, copies, out):
    lines = [
        "Columns: blocksolve and peer time = median seconds per call (first calls not timed); "
        "peer = the library compared against:",
        *(f"  {_PEER_NOTES[p]}" for p in sorted(peers_used) if p in _PEER_NOTES),
        "  speed-up = peer time / blocksolve time (above 1: blocksolve is faster); "
        "matrices/s = matrices per second for blocksolve;",
        "  GB/s = every input read and every output written once, per second; % copy = that "
        f"against a plain copy on the same device ({copies});",
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
    grid_name, cases, min_time = _select_cases(args, parser)
    if args.compile_only:
        return _compile_only(cases, args.jobs, sys.stdout)
    _title(grid_name, cases, sys.stdout)
    sys.stdout.flush()
    deadline = time.monotonic() + args.budget if args.budget is not None else math.inf
    progress = _Progress(len(cases))
    results, rows, not_run, failures, peers_used = [], [], [], 0, set()
    for case in cases:
        if time.monotonic() > deadline:
            not_run.append(case)
            continue
        progress.next()
        ours, peer, theirs = _measure_case(case, min_time, progress)
        measured = [r for r in (ours, theirs) if r is not None]
        failures += sum(isinstance(r, _Failed) for r in measured)
        results += [r for r in measured if not isinstance(r, _Failed)]
        rows.append(_table_row(case, ours, peer, theirs))
        peers_used.add(peer)
    progress.done()

    devices = sorted({c.device for c in cases})
    print(file=sys.stdout)
    _print_table(rows, sys.stdout)
    copies = ", ".join(f"{d}: {_bench.copy_bandwidth(d):.1f} GB/s" for d in devices)
    first_calls = sum(r["first_call_s"] for r in results if r["library"] == "blocksolve")
    print(file=sys.stdout)
    _legend(cases, peers_used, copies, sys.stdout)
    total = time.perf_counter() - started
    print(
        f"Time: {total:.1f} s in all, {first_calls:.1f} s of it blocksolve's first calls "
        f"(kernel compilation or disk-cache loads)."
        + (
            " To take the compilation out of later runs: python -m blocksolve warm --ops "
            f"{' '.join(sorted({c.op for c in cases}))} --sizes "
            f"{' '.join(map(str, sorted({c.size for c in cases})))} --dtypes "
            f"{' '.join(sorted({c.dtype for c in cases}))}"
            if first_calls > 0.2 * total
            else ""
        )
    )
    if not_run:
        print(f"time budget of {args.budget:g} s reached: {len(not_run)} case(s) not run.")
    if args.json:
        _write_json(args.json, grid_name, devices, results, not_run)
        print(f"wrote {args.json}")
    if failures:
        print(f"{failures} measurement(s) failed; see the messages above.", file=sys.stderr)
    return 1 if failures else 0


# --------------------------------------------------------------------------- warm


def _warm_command(args):
    from . import _warm
    from ._bench import ALL_OPS

    ops = args.ops or ALL_OPS
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
    from ._cache import cache_dir

    return cache_dir() / device


# --------------------------------------------------------------------------- parser


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer; got {text}")
    return value


def _parser():
    from ._bench import ALL_OPS, GRIDS

    parser = argparse.ArgumentParser(
        prog="python -m blocksolve", description=__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{info,bench,warm}")

    info = commands.add_parser("info", help="versions, CPUs, GPUs and the kernel cache")
    info.add_argument("--json", action="store_true", help="print a JSON document instead")

    bench = commands.add_parser(
        "bench",
        help="time blocksolve against numpy/scipy or cuSOLVER",
        description="Time blocksolve against numpy/scipy (CPU) and "
        "cuSOLVER through cupy (GPU) on the same data.",
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
        choices=ALL_OPS,
        metavar="OP",
        help=f"functions to time (default: all of {', '.join(ALL_OPS)})",
    )
    bench.add_argument(
        "--dtypes",
        nargs="+",
        metavar="DTYPE",
        choices=("float32", "float64", "complex64", "complex128"),
        help="dtypes (default: float32 float64 complex128)",
    )
    bench.add_argument(
        "--sizes",
        nargs="+",
        type=_positive_int,
        metavar="N",
        help="matrix sizes (default: 2 4 8 16 32 64 128)",
    )
    bench.add_argument(
        "--batch",
        type=_positive_int,
        help="matrices per call (default: a large batch and a small one)",
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
        choices=ALL_OPS,
        metavar="OP",
        help=f"functions whose kernels to compile (default: all of {', '.join(ALL_OPS)})",
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
