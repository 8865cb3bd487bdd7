"""``python -m blocksolve info | bench`` and the pytest-benchmark suite, on tiny grids."""

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import blocksolve
from blocksolve.cli import bench as _bench
from blocksolve.cli import main as cli_main
from blocksolve.cli.constraints import read_constraints
from blocksolve.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
RECORD_FIELDS = {
    "op",
    "dtype",
    "n",
    "dims",
    "batch",
    "batch_kind",
    "device",
    "library",
    "looped",
    "bytes",
    "time_s",
    "time_min_s",
    "rounds",
    "iterations",
    "first_call_s",
    "matrices_per_s",
    "gb_per_s",
    "copy_gb_per_s",
    "bandwidth_fraction",
    "flops",
    "gflop_per_s",
    "gemm_gflop_per_s",
    "compute_fraction",
}


def test_info_prints_versions_devices_and_cache():
    done = subprocess.run(
        [sys.executable, "-m", "blocksolve", "info"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert f"blocksolve {blocksolve.__version__}" in done.stdout
    assert f"numpy                   {np.__version__}" in done.stdout
    for word in ("numba", "numba-cuda", "nvmath-python", "CPU:", "GPU", "cache:"):
        assert word in done.stdout
    assert str(blocksolve.cache_dir()) in done.stdout


def test_info_compares_the_cuda_stack_with_its_verified_versions(monkeypatch, capsys):
    from blocksolve.cli import info as _info

    pinned, note, also = read_constraints()
    assert pinned["nvmath-python"] and pinned["nvidia-libmathdx-cu13"] and "GPU" in note
    assert not note.startswith("verified") and also.startswith("Also verified")
    installed = {"nvmath-python": pinned["nvmath-python"], "numba-cuda": "0.0.1"}
    monkeypatch.setattr(_info, "_distribution_version", lambda name: (name, installed.get(name)))
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    text = " ".join(out.split())
    assert "No run on GPU hardware has been recorded yet." in text
    assert "Also verified (the oldest supported" in text
    lines = {
        line.split()[0]: line for line in out.splitlines() if line.startswith("  ") and line.split()
    }
    assert lines["nvmath-python"].endswith(" verified")
    assert lines["numba-cuda"].endswith(f"not the verified {pinned['numba-cuda']}")
    assert lines["nvidia-libmathdx-cu13"].endswith("not installed")


def test_info_json(capsys):
    assert main(["info", "--json"]) == 0
    env = json.loads(capsys.readouterr().out)
    assert env["versions"]["numpy"] == np.__version__
    assert env["cpu"]["logical_cpus"] >= 1
    assert "cpu" in env["cache"]["disk"] and "plans" in env["cache"]["memory"]
    assert isinstance(env["gpus"], list) and (env["gpus"] or env["gpu_note"])


def test_bench_json_has_every_field(tmp_path, capsys):
    out = tmp_path / "bench.json"
    argv = ["bench", "--quick", "--grid", "tiny", "--ops", "cholesky", "--device", "cpu"]
    assert main([*argv, "--json", str(out)]) == 0
    table = capsys.readouterr().out
    title, selection, compared, estimate, *_ = table.splitlines()
    assert title.startswith("blocksolve ") and title.endswith(
        "tiny grid narrowed by --ops cholesky"
    )
    assert selection == "1 case: cholesky; float64; n = 4; batch of 32 matrices"
    assert compared.startswith("compared with numpy")
    assert estimate.startswith("Estimated time on 2 cores: about ")
    assert "Ctrl-C stops early" in estimate
    assert "vs numpy" in table and "rounds" in table and "matrices/s" in table
    assert "% gemm" in table and "cpu float64: " in table and " GFLOP/s" in table
    assert "Columns: blocksolve = median seconds per call" in table
    assert "numpy = numpy.linalg on the whole batch (for lstsq a Python loop" in table
    assert "README's table" in table and "first calls (kernel compilation" in table
    document = json.loads(out.read_text())
    assert document["format"] == _bench.FORMAT and document["grid"] == "tiny"
    assert document["copy_gb_per_s"]["cpu"] > 0 and document["interrupted"] is False
    assert document["environment"]["versions"]["numpy"] == np.__version__
    rows = {r["library"]: r for r in document["results"]}
    tiny = _bench.cases(_bench.GRIDS["tiny"], ["cpu"])[0]
    assert set(rows) == {"blocksolve", *_bench.peers(tiny, alternatives_only=True)}
    assert "numpy" in rows and "scipy" not in rows  # scipy loops in Python: not in the table
    for row in rows.values():
        assert RECORD_FIELDS <= set(row)
        assert (row["op"], row["dtype"], row["n"], row["device"]) == (
            "cholesky",
            "float64",
            4,
            "cpu",
        )
        assert row["bytes"] == row["batch"] * 2 * 4 * 4 * 8  # read a, write L
        assert row["matrices_per_s"] == pytest.approx(row["batch"] / row["time_s"])
        assert row["bandwidth_fraction"] == pytest.approx(row["gb_per_s"] / row["copy_gb_per_s"])
        assert row["flops"] == row["batch"] * (4**3 / 3 + 4**2 / 2 + 4 / 6)  # LAPACK's potrf
        assert row["gflop_per_s"] == pytest.approx(row["flops"] / row["time_s"] / 1e9)
        gemm = document["gemm_gflop_per_s"]["cpu"]["float64"]
        assert row["compute_fraction"] == pytest.approx(row["gflop_per_s"] / gemm)
        assert row["time_min_s"] <= row["time_s"] and row["first_call_s"] > 0
    numpy_row = rows["numpy"]
    assert numpy_row["paired_rounds"] == numpy_row["rounds"] == rows["blocksolve"]["rounds"] >= 3
    assert numpy_row["speed_up_q1"] <= numpy_row["speed_up"] <= numpy_row["speed_up_q3"]
    (line,) = [x for x in table.splitlines() if x.startswith("cholesky ")]
    assert f"{numpy_row['speed_up']:.2f}x ({numpy_row['speed_up_q1']:.2f}-" in line


def test_bench_header_says_what_was_selected(capsys):
    argv = ["bench", "--grid", "quick", "--ops", "solve", "--sizes", "4", "--batch", "10"]
    assert main([*argv, "--device", "cpu", "--budget", "0"]) == 0
    title, selection, *_ = capsys.readouterr().out.splitlines()
    assert title.endswith("quick grid narrowed by --ops solve --sizes 4 --batch 10")
    assert selection == "1 case: solve; float64; n = 4; batch of 10 matrices"


def test_bench_batch_large_keeps_the_grids_batch_kind(capsys):
    argv = ["bench", "--ops", "qr", "--sizes", "4", "--dtypes", "float64", "--batch", "large"]
    assert main([*argv, "--device", "cpu", "--budget", "0"]) == 0
    _, selection, *_ = capsys.readouterr().out.splitlines()
    grid = _bench.GRIDS["full"].override(ops=["qr"], sizes=[4], dtypes=["float64"])
    case = next(c for c in _bench.cases(grid, ["cpu"]) if c.batch_kind == "large")
    assert case.batch_kind == "large"
    assert selection == f"1 case: qr; float64; n = 4; a large batch of {case.batch} matrices"


def test_bench_estimates_the_time_of_a_grid():
    cases = _bench.cases(_bench.GRIDS["quick"], ["cpu"])
    cost = _bench.estimate(cases, 0.05)
    libraries = sum(1 + len(_bench.peers(c, alternatives_only=True)) for c in cases)
    assert cost["timing_s"] >= libraries * 0.05
    assert cost["kernels"] == 8  # cholesky, solve, qr, lstsq at n = 4 and 16
    ops = ["cholesky", "solve", "qr", "lstsq"]
    assert cost["compile_s"] == 2 * sum(_bench.COMPILE_S[op] for op in ops)


def test_each_kernel_is_counted_once():
    cases = _bench.cases(_bench.GRIDS["quick"], ["cpu"])
    costs = _bench.case_costs(cases, 0.05)
    compiled = [c.size for c, cost in zip(cases, costs) if cost["compile_s"]]
    assert len(compiled) == 8 and sorted(set(compiled)) == [4, 16]
    assert all(cost["compile_s"] == 0 for c, cost in zip(cases, costs) if c.batch_kind != "large")
    own_kernels = set(_bench.ALL_OPS) - set(_bench._SAME_KERNEL)
    assert own_kernels <= set(_bench.COMPILE_S), "a workload without a measured compile time"


def _compiled_by(*cases):
    return [cost["compile_s"] for cost in _bench.case_costs(list(cases), 0.05)]


def test_kernels_shared_or_not_compiled_are_not_counted():
    case = lambda op, size, batch=4096: _bench.Case(op, "float64", size, batch, "cpu")  # noqa: E731
    # det and slogdet call one kernel; so do the sizes that read theirs at run time.
    assert _compiled_by(case("det", 4), case("slogdet", 4)) == [_bench.COMPILE_S["det"], 0.0]
    above = _bench.SPECIALIZE_UP_TO
    first, second = _compiled_by(case("solve", above + 1), case("solve", above + 2))
    assert first == _bench.COMPILE_S["solve"] and second == 0.0
    # Calls with fewer matrices than the kernel's crossover run on LAPACK: nothing compiles.
    one = case("cholesky", 4, batch=1)
    fewest = _bench.CPU_ROUTINES["potrf"].fewest(one.dims)
    assert fewest > 1 and _compiled_by(one) == [0.0]
    # eig and eigvals share a routine, not a kernel.
    assert 0.0 not in _compiled_by(case("eig", 4), case("eigvals", 4))


@pytest.mark.parametrize("cached", [False, True])
def test_bench_estimate_says_whether_the_disk_cache_is_empty(monkeypatch, cached):
    disk = {"cpu": {"files": int(cached)}, "cuda": {"files": 0}}
    monkeypatch.setattr(blocksolve, "cache_info", lambda: {"memory": {}, "disk": disk})
    out = io.StringIO()
    cli_main._print_estimate(_bench.cases(_bench.GRIDS["quick"], ["cpu"]), 0.05, out)
    line = out.getvalue().splitlines()[0]
    if cached:
        assert "plus up to about " in line and "not in the disk cache yet" in line
    else:
        assert "compiling its 8 blocksolve kernels (the disk cache is empty)" in line


def test_progress_estimates_the_time_left_from_the_cases_costs(monkeypatch):
    stream = io.StringIO()
    clock = iter([0.0, 0.0, 30.0, 36.0, 40.0])
    monkeypatch.setattr(cli_main.time, "perf_counter", lambda: next(clock))
    progress = cli_main._Progress([10.0, 1.0, 1.0, 1.0], stream)  # a compile, then three
    progress.next()
    progress.next()  # the first case took 30 s for an estimated 10: 3x, so 9 s for the rest
    progress.update("second case")  # 6 s into the second case
    progress.update("second case again")  # 10 s into it
    assert stream.getvalue().splitlines() == [
        "[2/4] 36 s, about 3 s left: second case",
        "[2/4] 40 s, under 1 s left: second case again",
    ]


def _interrupt_second_case(monkeypatch):
    timed = _bench.side_by_side
    calls = []

    def side_by_side(timeds, min_time):
        calls.append(timeds)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return timed(timeds, min_time)

    monkeypatch.setattr(_bench, "side_by_side", side_by_side)


def test_bench_ctrl_c_prints_the_partial_table(monkeypatch, tmp_path, capsys):
    _interrupt_second_case(monkeypatch)
    out = tmp_path / "bench.json"
    argv = ["bench", "--grid", "tiny", "--ops", "cholesky", "cho_factor", "--device", "cpu"]
    assert main([*argv, "--json", str(out)]) == 130
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert [x.split()[0] for x in lines if x.startswith(("cholesky ", "cho_factor "))] == [
        "cholesky"
    ]
    assert "Interrupted: 1 case(s) not run." in lines
    assert "interrupted after 1 of 2 cases" in captured.err
    document = json.loads(out.read_text())
    assert document["interrupted"] is True
    assert document["not_run"] == ["cho_factor-float64-n4-b32-cpu"]
    assert {r["op"] for r in document["results"]} == {"cholesky"}


def test_bench_sigint_ends_with_the_table_not_a_traceback():
    """A real Ctrl-C (SIGINT) while a case is timed: exit status 130, the table so far."""
    process = subprocess.Popen(
        [sys.executable, "-m", "blocksolve", "bench", "--grid", "tiny", "--device", "cpu"]
        + ["--min-time", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        # A background job (CI's) ignores SIGINT, and Python keeps an inherited SIG_IGN:
        # the child gets the terminal's default, as a user's bench has.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    err = []
    for line in process.stderr:  # progress: one line per step when not on a terminal
        err.append(line)
        if ": timing " in line:
            time.sleep(0.5)
            process.send_signal(signal.SIGINT)
            break
    out, rest = process.communicate(timeout=120)
    err = "".join(err) + rest
    assert process.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "op " in out and "Interrupted: 1 case(s) not run." in out


def test_bench_budget_stops_before_the_first_case(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert (
        main(["bench", "--grid", "tiny", "--device", "cpu", "--budget", "0", "--json", str(out)])
        == 0
    )
    assert "1 case(s) not run" in capsys.readouterr().out
    document = json.loads(out.read_text())
    assert document["results"] == [] and document["not_run"] == ["cholesky-float64-n4-b32-cpu"]


def test_bench_compile_only(capsys):
    assert main(["bench", "--grid", "tiny", "--device", "cpu", "--compile-only"]) == 0
    out = capsys.readouterr().out
    assert "cholesky" in out and "1 kernels" in out


def test_warm_compiles_the_kernels_of_the_sizes(capsys):
    assert (
        main(["warm", "--ops", "cholesky", "cho_factor", "--dtypes", "float64", "--sizes", "3"])
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("blocksolve warm: compiling 2 CPU kernels into ")
    lines = [line for line in out.splitlines() if line.startswith("[")]
    assert len(lines) == 2  # cho_factor's options (lower=False, clean=False) are its own
    assert any("potrf  float64     n=3      cpu  (cholesky)" in line for line in lines)
    assert any("potrf  float64     n=3      cpu  (cho_factor)" in line for line in lines)
    assert "2 kernels ready in" in out


def test_warm_reaches_the_kernel_of_sizes_whose_few_matrix_calls_take_lapack(monkeypatch):
    """A 24x24 ``solve`` of fewer than 8 matrices runs on NumPy's LAPACK: ``warm`` calls
    with enough of them to reach the kernel."""
    from blocksolve.cli import warm as _warm
    from blocksolve.cpu import _compiled

    picked = []

    def pick(self, args):  # instead of compiling: which kernel was asked for
        picked.append(self.key)
        raise _compiled.NotReady

    monkeypatch.setattr(_compiled.Kernel, "pick", pick)
    _, error = _warm.compile_kernel(_warm.Kernel("solve", "gesv", "float64", 24))
    assert error is None
    assert len(picked) == 1  # the kernel was asked for, not only LAPACK


@pytest.mark.parametrize(
    "argv, message",
    [
        (["warm"], "the following arguments are required: --sizes"),
        (["warm", "--device", "cuda"], "the following arguments are required: --sizes"),
        (["warm", "--sizes", "-1"], "must be a positive integer"),
        ([], "required"),
        (["bench", "--ops", "nope"], "invalid choice: 'nope'"),
        (["bench", "--ops", "solve_pos"], "invalid choice: 'solve_pos'"),  # no public function
        (["warm", "--ops", "solve_pos"], "invalid choice: 'solve_pos'"),
        (["bench", "--dtypes", "float16"], "invalid choice: 'float16'"),
        (["bench", "--sizes", "0"], "must be a positive integer"),
        (["bench", "--budget", "soon"], "invalid float value"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_bad_arguments_are_usage_errors(capsys, argv, message):
    with pytest.raises(SystemExit) as raised:
        main(argv)
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert "usage:" in err and message in err


@pytest.mark.parametrize("argv", [[], ["info"], ["bench"], ["warm"]])
def test_help_is_plain_text_and_names_only_public_functions(capsys, argv):
    with pytest.raises(SystemExit) as raised:
        main([*argv, "--help"])
    assert raised.value.code == 0
    text = capsys.readouterr().out
    assert "`" not in text and ":func:" not in text and ":mod:" not in text
    assert "solve_pos" not in text
    if argv in (["bench"], ["warm"]):
        assert ", ".join(_bench.FUNCTIONS) in " ".join(text.split())
        assert set(_bench.FUNCTIONS) == {op.name for op in blocksolve._op.all_ops()}


@pytest.mark.skipif(_bench.gpu_available(), reason="this machine has a GPU")
def test_bench_on_cuda_without_gpu_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as raised:
        main(["bench", "--grid", "tiny", "--device", "cuda"])
    assert raised.value.code == 2
    assert "no GPU" in capsys.readouterr().err


@pytest.mark.skipif(_bench.gpu_available(), reason="this machine has a GPU")
def test_warm_on_cuda_without_gpu_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as raised:
        main(["warm", "--device", "cuda", "--sizes", "4"])
    assert raised.value.code == 2
    assert "no usable GPU" in capsys.readouterr().err


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_kernels_to_warm_are_one_per_op(device):
    from blocksolve.cli import warm as _warm

    todo = _warm.kernels(["cholesky", "cho_factor", "solve"], ["float64"], [4, 8], device=device)
    # cholesky and cho_factor share potrf, but their options make different kernels.
    assert sorted((k.op, k.routine, k.size) for k in todo) == [
        ("cho_factor", "potrf", 4),
        ("cho_factor", "potrf", 8),
        ("cholesky", "potrf", 4),
        ("cholesky", "potrf", 8),
        ("solve", "gesv", 4),
        ("solve", "gesv", 8),
    ]
    assert {k.device for k in todo} == {device}


def _pytest_benchmarks(*args, timeout):
    """``pytest benchmarks *args`` in a child process, which must succeed.  Without
    PYTEST_XDIST_* (pytest-benchmark would disable itself: "xdist plugin is active")
    and the BLOCKSOLVE_BENCH_* defaults of the environment."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_XDIST", "BLOCKSOLVE_BENCH"))
    }
    command = [sys.executable, "-m", "pytest", "benchmarks", "-p", "no:cacheprovider", *args]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_pytest_benchmarks_defaults_to_the_quick_grid_and_estimates_it():
    done = _pytest_benchmarks("--collect-only", timeout=120)
    quick = _bench.cases(_bench.GRIDS["quick"], ["cpu", "cuda"])
    cost = _bench.estimate(quick, _bench.GRIDS["quick"].min_time)
    header = "blocksolve benchmarks: grid 'quick' (--bench-grid full for every case), about "
    assert header in done.stdout
    assert f"compiling {cost['kernels']} kernels on a cold cache" in done.stdout
    linalg_items = done.stdout.count("<Function test_linalg[")
    assert linalg_items == sum(len(_bench.libraries(case)) for case in quick)


def test_pytest_benchmark_suite_on_tiny_grid(tmp_path):
    out = tmp_path / "pb.json"
    _pytest_benchmarks(
        "-q", "--bench-grid", "tiny", "-m", "not gpu", f"--benchmark-json={out}", timeout=300
    )
    data = json.loads(out.read_text())
    groups = {b["group"] for b in data["benchmarks"]}
    assert groups == {"cholesky float64 n=4 batch=32 cpu", "copy cpu"}
    rows = _bench.load_records(data)
    tiny = _bench.cases(_bench.GRIDS["tiny"], ["cpu"])[0]
    assert {r["library"] for r in rows} == set(_bench.libraries(tiny)) >= {"numpy"}
    for row in rows:
        assert RECORD_FIELDS <= set(row) and row["bandwidth_fraction"] > 0
    assert data["machine_info"]["blocksolve"]["versions"]["numpy"] == np.__version__
