"""tools/compact_results.py: results JSON made smaller without changing a value."""

import json

import pytest

from _helpers import tool_module

compact = tool_module("compact_results")

ROW = {"op": "cholesky", "n": 4, "dims": {"n": 4}, "time_s": 4.893764686558e-06, "ok": True}
DOCUMENT = {
    "format": "blocksolve-bench/1",
    "environment": {"versions": {"numpy": "2.4.6", "torch": None}, "cpu": {"logical_cpus": 2}},
    "results": [ROW, dict(ROW, n=8, time_s=float("nan"), samples=[1e-05, 2.5e-05])],
}


def _write(path, value):
    path.write_text(json.dumps(value, indent=1) + "\n")
    return path


def _same(a, b):
    return json.dumps(a) == json.dumps(b)


def test_format_writes_one_record_per_line_and_changes_no_value(tmp_path):
    path = _write(tmp_path / "bench.json", DOCUMENT)
    assert compact.main(["format", "--check", str(path)]) == 1
    assert compact.main(["format", str(path)]) == 0
    text = path.read_text()
    assert _same(json.loads(text), DOCUMENT)  # NaN and key order included
    lines = text.splitlines()
    assert len(lines) == 8  # {, format, environment, "results": [, a row per line, ], }
    rows = [json.loads(line.strip().rstrip(",")) for line in lines[4:6]]
    assert _same(rows, DOCUMENT["results"])
    assert compact.main(["format", "--check", str(path)]) == 0  # idempotent


def test_bundle_keys_each_file_by_its_path_and_keeps_json_lines(tmp_path):
    folder = tmp_path / "run"
    (folder / "probe").mkdir(parents=True)
    first = _write(folder / "probe" / "a.json", DOCUMENT)
    lines = folder / "probe" / "b.jsonl"
    lines.write_text('{"mode": "new", "ours": [1.5, 2.0]}\n{"mode": "seen", "ours": []}\n')
    out = folder / "probe-runs.json"
    compact.main(["bundle", str(out), str(first), f"renamed.jsonl={lines}"])
    bundle = json.loads(out.read_text())
    assert bundle["format"] == compact.BUNDLE
    assert _same(bundle["files"]["probe/a.json"], DOCUMENT)
    assert bundle["files"]["renamed.jsonl"] == [
        {"mode": "new", "ours": [1.5, 2.0]},
        {"mode": "seen", "ours": []},
    ]
    assert bundle["json_lines"] == ["renamed.jsonl"]
    with pytest.raises(ValueError, match="given twice"):
        compact.bundle(out, [str(first), f"probe/a.json={first}"])


def _timed(seconds, load):
    return {"s": seconds, "load_before": [load, 1.0, 1.0], "load_after": [load + 0.1, 1.0, 1.0]}


def test_summarize_clean_machine_drops_the_samples_and_keeps_the_load_range(tmp_path):
    process = dict(_timed(1.0, 0.5), script=dict(_timed(0.5, 0.7), calls={"qr": _timed(0.1, 1.2)}))
    raw = {
        "format": "blocksolve-clean-machine/1",
        "config": {"repeats": 1},
        "summary": {"per_call": {"first": {"qr": {"median": 0.1, "min": 0.1, "max": 0.1}}}},
        "repeats": [{"cache": "/tmp/c", "processes": [process]}],
    }
    out = tmp_path / "summary.json"
    compact.main(["summarize", str(_write(tmp_path / "results.json", raw)), str(out)])
    summary = json.loads(out.read_text())
    assert "repeats" not in summary
    assert summary["summary"] == raw["summary"] and summary["config"] == raw["config"]
    assert (summary["load_1min"]["min"], summary["load_1min"]["max"]) == (0.5, 1.3)
    assert summary["summarized"]["from"].endswith("results.json")
    assert summary["summarized"]["commit"] is None  # not in a git repository


def test_summarize_one_matrix_clients_keeps_order_and_statistics(tmp_path):
    raw = {
        "format": "blocksolve-one-matrix-clients/1",
        "workloads": {
            "omp": {"first": {}, "runs": {"reference": [_timed(0.08, 0.8)]}, "max_rel": 0.0}
        },
        "call_costs": {"qr": {"seconds": {"blocksolve": 1e-05}, "all_seconds": {"x": [1, 2]}}},
        "summary": {"omp": {"ratio": {"median": 1.08}}},
    }
    out = tmp_path / "summary.json"
    compact.summarize(_write(tmp_path / "results.json", raw), out)
    summary = json.loads(out.read_text())
    assert list(summary)[:4] == ["format", "workloads", "call_costs", "summary"]
    assert summary["workloads"] == {"omp": {"first": {}, "max_rel": 0.0}}
    assert summary["call_costs"] == {"qr": {"seconds": {"blocksolve": 1e-05}}}
    assert summary["load_1min"]["max"] == pytest.approx(0.9)


def test_summarize_codegen_keeps_times_not_kernel_records(tmp_path):
    cold = {
        "case": "potrf",
        "plan": "KernelPlan",
        "plan_s": 2.21,
        "timings": {"link_s": 0.47},
        "setup_s": 2.1,
        "record": {"entry": "_ZN...", "registers": 44, "cubin_sha256": "e3"},
        "solver_functions": [{"function": "potrf", "generated": True, "seconds": 0.5, "sm": [9]}],
        "descriptors": {"solver.factorize": {"function": "potrf"}},
    }
    raw = {"what": "first-call costs of the CUDA path", "runs": [{"case": "potrf", "cold": cold}]}
    out = tmp_path / "first-calls-summary.json"
    compact.summarize(_write(tmp_path / "first-calls.json", raw), out)
    (run,) = json.loads(out.read_text())["runs"]
    assert run["cold"] == {
        "plan": "KernelPlan",
        "plan_s": 2.21,
        "timings": {"link_s": 0.47},
        "setup_s": 2.1,
        "kernel": {"registers": 44},
        "solver_functions": [{"function": "potrf", "generated": True, "seconds": 0.5}],
    }


def test_summarize_roofline_keeps_medians_limits_and_each_runs_speed_ups(tmp_path):
    case = {"op": "inv", "dtype": "float64", "n": 8, "batch": 50000, "time_s": 0.002}
    run = {
        "created": "2026-12-07",
        "copy_gb_per_s": 44.0,
        "gemm_gflop_per_s": {"float64": 120.0},
        "environment": {"numpy": "2.4"},
        "results": [
            {**case, "library": "blocksolve", "bandwidth_fraction": 0.48},
            {**case, "library": "numpy", "time_s": 0.025, "speed_up": 12.4},
        ],
    }
    medians = {"after": {"inv float64 8x8 x 50000": {"bandwidth_fraction": 0.48}}}
    raw = {"trees": {"after": "40f1336"}, "grid": "roofline", "runs": {"after": [run]}}
    out = tmp_path / "summary.json"
    compact.summarize(_write(tmp_path / "results.json", {**raw, "summary": medians}), out)
    summary = json.loads(out.read_text())
    assert summary["summary"] == medians and summary["trees"] == raw["trees"]
    assert summary["runs"] == {
        "after": [
            {
                "created": "2026-12-07",
                "copy_gb_per_s": 44.0,
                "gemm_gflop_per_s": {"float64": 120.0},
                "speed_up": {"inv float64 8x8 x 50000": 12.4},
            }
        ]
    }


def test_summarize_refuses_an_unknown_document(tmp_path):
    with pytest.raises(ValueError, match="no summary"):
        compact.summarize(_write(tmp_path / "x.json", {"format": "other/1"}), tmp_path / "o.json")
