"""blocksolve beside numpy/scipy (CPU) and cuSOLVER through cupy, and torch (GPU).

One pytest-benchmark group per (op, dtype, n, batch, device), every library
on the same data (cases, peers and timing: :mod:`blocksolve.cli.bench`).  The
first call of each library (code generation or cache load) is not timed; it
is reported as ``extra_info['first_call_s']`` beside matrices/s, GB/s and the
fraction of the copy bandwidth measured on the same device in this run.
"""

from __future__ import annotations

import pytest

from blocksolve.cli import bench as _bench


def _stats(benchmark, iterations):
    s = benchmark.stats.stats
    return {
        "time_s": s.median,
        "time_min_s": s.min,
        "time_mean_s": s.mean,
        "time_stddev_s": s.stddev,
        "rounds": s.rounds,
        "iterations": iterations,
    }


def _run(benchmark, timed, min_time):
    rounds, iterations = _bench.schedule(timed, min_time)
    benchmark.pedantic(timed.call, rounds=rounds, iterations=iterations)
    return None if benchmark.stats is None else _stats(benchmark, iterations)  # None: disabled


def test_linalg(benchmark, case, library, min_time):
    try:
        timed = _bench.prepare(case, library)
    except _bench.Unavailable as why:
        pytest.skip(str(why))
    benchmark.group = case.group
    stats = _run(benchmark, timed, min_time)
    if stats is not None:
        benchmark.extra_info.update(
            _bench.record(
                case,
                library,
                stats,
                timed.first_call_s,
                timed.looped,
                _bench.copy_bandwidth(case.device),
                _bench.gemm_rate(case.device, case.dtype) if case.flops else None,
            )
        )


def test_copy(benchmark, device, min_time):
    """The bandwidth every other group is compared with (read + write)."""
    timed, moved = _bench.copy_timed(device)
    benchmark.group = f"copy {device}"
    stats = _run(benchmark, timed, min_time)
    if stats is not None:
        benchmark.extra_info.update(
            device=device, library="copy", bytes=moved, gb_per_s=moved / stats["time_s"] / 1e9
        )
