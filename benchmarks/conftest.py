"""pytest-benchmark set-up: which grid, which devices, a time budget, and GPU skipping.

Run ``pytest benchmarks`` (the quick grid: CPU rows, plus GPU rows when cupy
sees a GPU), ``pytest benchmarks -m gpu`` (GPU rows only) or ``-m "not gpu"``.
The header estimates the run's time.  Options: ``--bench-grid`` (``quick``, the
default; ``full``, ``gpu-check``, ``tiny``, ...; or ``$BLOCKSOLVE_BENCH_GRID``),
``--bench-ops``/``--bench-dtypes``/``--bench-sizes`` to narrow it,
``--bench-budget S`` (or ``$BLOCKSOLVE_BENCH_BUDGET``) to skip the cases that
would start after S seconds, so a time-boxed run still writes its
``--benchmark-json``.  ``bench_*.py`` files are collected as test modules.
"""

from __future__ import annotations

import os
import time

import pytest

from blocksolve.cli import bench as _bench


def pytest_addoption(parser):
    group = parser.getgroup("blocksolve benchmarks")
    group.addoption(
        "--bench-grid",
        default=os.environ.get("BLOCKSOLVE_BENCH_GRID", "quick"),
        choices=tuple(_bench.GRIDS),
        help="named case grid (default: quick; full: every case)",
    )
    group.addoption("--bench-ops", nargs="+", choices=_bench.ALL_OPS, help="only these ops")
    group.addoption("--bench-dtypes", nargs="+", help="only these dtypes")
    group.addoption("--bench-sizes", nargs="+", type=int, help="only these matrix sizes")
    group.addoption("--bench-min-time", type=float, help="seconds of timed calls per benchmark")
    group.addoption(
        "--bench-budget",
        type=float,
        default=float(os.environ.get("BLOCKSOLVE_BENCH_BUDGET") or 0) or None,
        help="skip benchmarks that would start after this many seconds",
    )


def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".py" and file_path.name.startswith("bench_"):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


def pytest_configure(config):
    config._bench_started = time.monotonic()


def pytest_report_header(config):
    grid = config.getoption("--bench-grid")
    cost = _bench.estimate(_bench.cases(_grid(config), list(_DEVICES)), _min_time(config))
    more = "" if grid == "full" else " (--bench-grid full for every case)"
    return (
        f"blocksolve benchmarks: grid {grid!r}{more}, "
        f"about {cost['timing_s'] / 60:.1f} min of timing and about "
        f"{cost['compile_s'] / 60:.1f} min compiling {cost['kernels']} kernels on a cold cache"
    )


def pytest_collection_modifyitems(config, items):
    if _bench.gpu_available():
        return
    skip = pytest.mark.skip(reason="needs cupy and a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def _grid(config):
    grid = _bench.GRIDS[config.getoption("--bench-grid")]
    return grid.override(
        ops=config.getoption("--bench-ops"),
        dtypes=config.getoption("--bench-dtypes"),
        sizes=config.getoption("--bench-sizes"),
    )


_DEVICES = {"cpu": (), "cuda": (pytest.mark.gpu,)}


def pytest_generate_tests(metafunc):
    """Parametrize ``case, library`` over the grid, ``device`` over CPU and GPU."""
    if "case" in metafunc.fixturenames:
        params = [
            pytest.param(case, library, id=f"{case.id}-{library}", marks=_DEVICES[case.device])
            for case in _bench.cases(_grid(metafunc.config), list(_DEVICES))
            for library in _bench.libraries(case)
        ]
        metafunc.parametrize(("case", "library"), params)
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", [pytest.param(d, marks=m) for d, m in _DEVICES.items()])


def _min_time(config):
    return config.getoption("--bench-min-time") or _grid(config).min_time


@pytest.fixture(scope="session")
def min_time(pytestconfig):
    return _min_time(pytestconfig)


@pytest.fixture(autouse=True)
def _time_budget(pytestconfig):
    budget = pytestconfig.getoption("--bench-budget")
    if budget and time.monotonic() - pytestconfig._bench_started > budget:
        pytest.skip(f"benchmark time budget of {budget:g} s used up")


def pytest_benchmark_update_machine_info(config, machine_info):
    from blocksolve.cli.info import environment

    machine_info["blocksolve"] = environment()
