"""benchmarks/plot.py on small synthetic result files."""

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from blocksolve.cli import bench as _bench  # noqa: E402

TOOL = Path(__file__).resolve().parents[1] / "benchmarks" / "plot.py"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def plot_tool():
    spec = importlib.util.spec_from_file_location("plot_benchmarks", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(op, n, library, seconds, looped=False):
    return {
        "op": op,
        "dtype": "float64",
        "n": n,
        "batch": 1000,
        "batch_kind": "large",
        "device": "cpu",
        "library": library,
        "looped": looped,
        "bytes": 100_000_000,
        "time_s": seconds,
        "matrices_per_s": 1000 / seconds,
        "gb_per_s": 0.1 / seconds,
        "copy_gb_per_s": 20.0,
        "bandwidth_fraction": 0.1 / seconds / 20.0,
        "first_call_s": 0.5,
    }


def test_plots_from_bench_json_and_pytest_benchmark_json(tmp_path, plot_tool, capsys):
    canonical = {
        "format": _bench.FORMAT,
        "results": [
            _row(op, n, library, seconds * n)
            for op in ("cholesky", "solve")
            for n in (4, 8, 16)
            for library, seconds in (("blocksolve", 1e-4), ("numpy", 3e-4))
        ],
    }
    pytest_json = {
        "benchmarks": [  # extra_info holds the row; stats give the timing
            {
                "group": f"lstsq n={n}",
                "extra_info": _row("lstsq", n, "numpy", 1.0, "python"),
                "stats": {
                    "median": 1e-2 * n,
                    "min": 1e-2,
                    "mean": 1e-2,
                    "stddev": 0.0,
                    "rounds": 3,
                },
            }
            for n in (4, 8)
        ]
    }
    files = [tmp_path / "bench.json", tmp_path / "pytest.json"]
    files[0].write_text(json.dumps(canonical))
    files[1].write_text(json.dumps(pytest_json))
    out = tmp_path / "plots"

    assert plot_tool.main([*map(str, files), "-o", str(out)]) == 0

    written = sorted(p.name for p in out.iterdir())
    assert written == [
        "bandwidth-cpu-float64-large.png",
        "rate-cpu-cholesky-float64-large.png",
        "rate-cpu-lstsq-float64-large.png",
        "rate-cpu-solve-float64-large.png",
    ]
    assert all((out / name).read_bytes().startswith(PNG_SIGNATURE) for name in written)
    assert capsys.readouterr().out.split() == [
        str(out / name)
        for name in [
            "rate-cpu-cholesky-float64-large.png",
            "rate-cpu-lstsq-float64-large.png",
            "rate-cpu-solve-float64-large.png",
            "bandwidth-cpu-float64-large.png",
        ]
    ]


def test_no_results_is_a_usage_error(tmp_path, plot_tool, capsys):
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"benchmarks": []}))
    with pytest.raises(SystemExit) as raised:
        plot_tool.main([str(empty), "-o", str(tmp_path / "plots")])
    assert raised.value.code == 2
    assert "no benchmark results" in capsys.readouterr().err


def test_unreadable_file_is_a_usage_error(tmp_path, plot_tool, capsys):
    with pytest.raises(SystemExit) as raised:
        plot_tool.main([str(tmp_path / "missing.json"), "-o", str(tmp_path / "plots")])
    assert raised.value.code == 2
    assert "cannot read" in capsys.readouterr().err
