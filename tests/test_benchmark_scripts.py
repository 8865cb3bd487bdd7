"""The benchmark scripts of ``benchmarks/`` run, in a tiny configuration, and write their
results (no timing is checked)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import blocksolve

ROOT = Path(blocksolve.__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"


def _run(script, *args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr


def _results(folder):
    assert (folder / "README.md").read_text().startswith("# ")
    return json.loads((folder / "results.json").read_text())


def test_clean_machine_runs_every_process_and_records_each_call(tmp_path):
    # One matrix per call: LAPACK answers, no kernel compiles, seconds in all.
    ops = ["cholesky", "lstsq", "cho_factor"]
    _run(
        "clean_machine.py",
        "--repeats", 1, "--batch", 1, "--during", 1, "--ready", 1, "--ops", *ops,
        "--cache-root", tmp_path / "caches", "--out", tmp_path / "out",
    )  # fmt: skip
    data = _results(tmp_path / "out")
    processes = [p["process"] for p in data["repeats"][0]["processes"]]
    assert processes == ["first", "reference", "second", "reference", "cached"]
    for process in data["repeats"][0]["processes"]:
        assert list(process["script"]["calls"]) == ops
        assert all(len(c["load_before"]) == 3 for c in process["script"]["calls"].values())
    second = data["repeats"][0]["processes"][2]
    assert second["wait"]["finished"] is True
    assert second["ready"][0]["blocksolve"]["calls"].keys() == set(ops)
    assert set(data["summary"]["per_call"]["first"]) == set(ops)
    assert not (tmp_path / "caches").exists() or not any((tmp_path / "caches").iterdir())


def test_one_matrix_clients_agree_with_the_reference_and_compile_nothing(tmp_path):
    _run(
        "one_matrix_clients.py",
        "--repeats", 1, "--scale", 0.02, "--states", 4, "--number", 5, "--call-repeats", 1,
        "--profile", "cholesky", "--cache-dir", tmp_path / "cache", "--out", tmp_path / "out",
    )  # fmt: skip
    data = _results(tmp_path / "out")
    assert set(data["workloads"]) == {
        "omp",
        "kalman-4-inv",
        "kalman-4-solve",
        "kalman-4-cho",
        "gmm",
    }
    for name, result in data["workloads"].items():
        assert result["max_relative_difference"] < 1e-8, name
        assert len(result["runs"]["blocksolve"]) == len(result["runs"]["reference"]) == 1
    assert data["call_costs"]["cholesky"]["identical_to_reference"] is True
    assert "numpy" in data["call_costs"]["cholesky"]["seconds"]
    assert data["profiles"]["cholesky"]
    compilation = data["compilation"]
    assert compilation["numba_compile_events"] == 0
    assert compilation["after"]["kernels_requested"] == []
    assert compilation["after"]["worker_started"] is False


def test_qr_longley_records_both_column_orders(tmp_path):
    out = tmp_path / "longley.json"
    _run("qr_longley.py", "--orders", 2, "--json", out)
    document = json.loads(out.read_text())
    for constant in ("last", "first"):
        assert len(document["row_orders"][constant]) == 2
        given = document["as_given"][constant]
        assert 0 < given["qr_backward"] < 1e-14 and 0 < given["lstsq"] < 1e-9


def test_time_to_speed_measures_each_tree_and_pattern(tmp_path):
    patterns = ["solve_triangular 8x8", "cho_solve 4x4"]
    _run(
        "time_to_speed.py", "--tree", f"a={ROOT}", "--tree", f"b={ROOT}", "--repeats", 1,
        "--rounds", 1, "--batch", 64, "--patterns", *patterns, "--out", tmp_path / "out",
    )  # fmt: skip
    data = _results(tmp_path / "out")
    assert data["batch"] == 64 and list(data["runs"]) == ["a", "b"]
    for name in ("a", "b"):
        summary = data["summary"][name]
        assert list(summary["patterns"]) == patterns and summary["goal_patterns"] == 1
        for row in summary["patterns"].values():
            assert row["first_s"] > 0 and row["steady_s"] > 0
        assert summary["patterns"]["solve_triangular 8x8"]["speed_up"] > 0  # against SciPy's
        assert summary["patterns"]["cho_solve 4x4"]["speed_up"] is None  # no batched peer


def test_roofline_reports_rates_against_the_same_runs_limits(tmp_path):
    _run("roofline.py", "--tree", f"a={ROOT}", "--repeats", 1, "--grid", "tiny",
         "--out", tmp_path / "out")  # fmt: skip
    data = _results(tmp_path / "out")
    (document,) = data["runs"]["a"]
    gemm = document["gemm_gflop_per_s"]["cpu"]["float64"]
    ((case, row),) = data["summary"]["a"].items()
    assert case == "cholesky float64 4x4 x 32"
    assert row["compute_fraction"] == pytest.approx(row["gflop_per_s"] / gemm)
    assert 0 < row["bandwidth_fraction"] and row["speed_up"] > 0
    assert "% gemm" in (tmp_path / "out" / "README.md").read_text()


def test_clean_machine_readme_renders_from_its_committed_summaries():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import clean_machine
    finally:
        sys.path.remove(str(BENCHMARKS))
    folder = BENCHMARKS / "results" / "clean-machine-2026-12-06"
    readme = (folder / "README.md").read_text()
    summaries = [json.loads((folder / "summary.json").read_text())]
    summaries += json.loads((folder / "history.json").read_text())["files"].values()
    for summary in summaries:
        tables = [line for line in clean_machine.readme(summary).splitlines() if "|" in line]
        assert tables and all(line in readme for line in tables)
