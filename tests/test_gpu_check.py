"""The GPU check (tools/gpu-check.sh and its helpers), on a machine without a GPU.

A GPU session is short and rare: whatever can go wrong before the first launch
-- the wheels to carry, the preflight's verdicts, the plan and its budget, the
files it writes, the smoke's comparisons, the test step's isolation of a CUDA
error and its refusal of skipped tests -- is tested here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from _helpers import gpu_available, tool_module

ROOT = Path(__file__).resolve().parents[1]
gpu_check = tool_module("gpu_check")
gpu_smoke = tool_module("gpu_smoke")


def _wheel(directory, name, version, tags="py3-none-any", requires=">=3.10"):
    """A minimal wheel file: the name, tags and METADATA a wheel check reads."""
    stem = name.replace("-", "_")
    path = Path(directory) / f"{stem}-{version}-{tags}.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(
            f"{stem}-{version}.dist-info/METADATA",
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            f"Requires-Python: {requires}\n",
        )
    return path


@pytest.fixture
def wheels(tmp_path):
    """A wheel directory as ``--fetch-wheels`` leaves it (tiny stand-in wheels)."""
    directory = tmp_path / "whl"
    directory.mkdir()
    for name, version in gpu_check.carried():
        _wheel(directory, name, version, "cp312-cp312-manylinux_2_28_x86_64")
    return directory


def test_the_carried_wheels_are_the_constraints_versions(wheels):
    pinned = gpu_check.constraints()
    assert {"nvmath-python", "nvidia-libmathdx-cu13", "array-api-compat", "numba-cuda"} <= set(
        gpu_check.CARRIED
    )
    assert gpu_check.carried() == [(name, pinned[name]) for name in gpu_check.CARRIED]
    command = gpu_check.download_command(".whl")
    assert command[:4] == ["python3", "-m", "pip", "download"] and "--no-deps" in command
    assert command[command.index("--python-version") + 1] == "3.12"
    assert command[-len(gpu_check.CARRIED) :] == [f"{n}=={v}" for n, v in gpu_check.carried()]
    assert gpu_check.check_wheels(wheels) == []


@pytest.mark.parametrize(
    "change, problem",
    [
        ("missing", r"nvmath-python==\S+: no wheel"),
        ("other version", r"nvidia-libmathdx-cu13: wheel of 0\.4\.0\.9, the constraints pin"),
        ("two versions", r"numba-cuda: 2 wheels"),
        ("cp311 build", r"not installable on CPython 3\.12"),
        ("python 3.13 only", r"Requires-Python >=3\.13 excludes 3\.12"),
        ("not carried", r"torch-2\.0-py3-none-any\.whl: not a carried wheel"),
        ("not a zip", r"not a wheel"),
    ],
)
def test_the_wheel_check_names_what_would_break_the_install(wheels, change, problem):
    pinned = gpu_check.constraints()
    if change == "missing":
        next(wheels.glob("nvmath_python-*")).unlink()
    elif change == "other version":
        next(wheels.glob("nvidia_libmathdx_cu13-*")).unlink()
        _wheel(wheels, "nvidia-libmathdx-cu13", "0.4.0.9")
    elif change == "two versions":
        _wheel(wheels, "numba-cuda", "0.30.0", "cp312-cp312-manylinux_2_28_x86_64")
    elif change == "cp311 build":
        next(wheels.glob("cuda_core-*")).unlink()
        _wheel(wheels, "cuda-core", pinned["cuda-core"], "cp311-cp311-manylinux_2_28_x86_64")
    elif change == "python 3.13 only":
        next(wheels.glob("array_api_compat-*")).unlink()
        _wheel(wheels, "array-api-compat", pinned["array-api-compat"], requires=">=3.13")
    elif change == "not carried":
        _wheel(wheels, "torch", "2.0")
    else:
        (wheels / "cuda_pathfinder-9-py3-none-any.whl").write_text("no zip")
    problems = gpu_check.check_wheels(wheels)
    assert len(problems) == 1 and re.search(problem, problems[0]), problems


def test_the_preflight_blocks_on_each_piece_that_would_waste_the_run():
    """Fake machines, one piece missing each: NVVM's absence (every gpu test skipped, pytest
    green) blocks like a missing GPU; a deviation of what is not carried only notes."""
    assert gpu_check.preflight_selftest(out=open(os.devnull, "w")) == []
    pinned = gpu_check.constraints()
    scenarios = {what: expected for what, _, expected in gpu_check.SCENARIOS}
    assert any("NVVM" in what and "numba.cuda" in blocked for what, blocked in scenarios.items())
    checks = gpu_check.preflight(gpu_check.FakeMachine(pinned), pinned)
    assert gpu_check.blocking_failures(checks) == []
    assert {c.name for c in checks} >= {*gpu_check.CARRIED, "GPU", "CUDA driver", "nvvm"}


def test_the_preflight_here_fails_loudly_and_writes_what_it_found(tmp_path):
    """No GPU on this machine: the real preflight must say so, not pass."""
    if gpu_available():
        pytest.skip("a GPU is here: pytest -m gpu runs")
    out = tmp_path / "preflight.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools/gpu_check.py"), "preflight", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 1 and "PREFLIGHT FAILED" in done.stdout, done.stdout + done.stderr
    found = json.loads(out.read_text())
    assert "GPU" in found["blocking"] and "numba.cuda" in found["blocking"]
    assert {c["name"] for c in found["checks"]} >= set(gpu_check.CARRIED)


def _steps(work, *rows):
    (work / "steps.tsv").write_text("".join("\t".join(map(str, r)) + "\n" for r in rows))


def test_the_summary_fails_on_a_skipped_test_a_missing_verdict_and_a_timeout(tmp_path):
    work, out = tmp_path / "work", tmp_path / "out"
    work.mkdir()
    out.mkdir()
    _steps(work, ("preflight", 0, 9, 20), ("smoke", 0, 50, 70), ("tests", 124, 180, 180))
    (out / "preflight.json").write_text(
        json.dumps({"blocking": [], "deviations": [], "checks": [{"name": "GPU", "found": []}]})
    )
    (out / "tests.jsonl").write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"collected": 3},
                {"test": "a", "outcome": "passed"},
                {"test": "b", "outcome": "skipped"},
                {"test": "c", "outcome": "failed"},
                {"test": "c", "cuda_error": "CUDA_ERROR_ILLEGAL_ADDRESS"},
                {"test": "c", "outcome": "failed"},
            ]
        )
    )
    text, failures = gpu_check.summarize(work, out)
    assert text.startswith("GPU check: FAILED")
    assert "smoke wrote no smoke.json" in failures
    assert "tests exited 124 (out of time)" in failures
    assert "1 gpu test(s) skipped" in failures and "1 gpu test(s) failed" in failures
    assert "CUDA error in c: CUDA_ERROR_ILLEGAL_ADDRESS" in text

    _steps(work, ("preflight", 0, 9, 20), ("smoke", "not-selected", 0, 70))
    (out / "tests.jsonl").unlink()
    text, failures = gpu_check.summarize(work, out)
    assert failures == [] and text.startswith("GPU check: PASSED")


@pytest.mark.parametrize("wheel_missing", [False, True], ids=["as-fetched", "one-missing"])
def test_the_dry_run_passes_here_and_fails_on_a_missing_wheel(wheels, wheel_missing):
    """Plan and budget, the header's instructions, wheels, preflight logic, smoke cases, the
    selection of gpu tests, the files of $OUT and a simulated run of every step."""
    if not wheel_missing:  # the selection collects the GPU tests, which need CuPy to be
        pytest.importorskip("cupy", reason="listing the GPU tests needs CuPy (the cuda extra)")
    if wheel_missing:
        next(wheels.glob("nvidia_libmathdx_cu13-*")).unlink()
    env = {**os.environ, "PYTHON": sys.executable, "GPU_CHECK_WHEELS": str(wheels)}
    done = subprocess.run(
        ["bash", str(ROOT / "tools/gpu-check.sh"), "--dry-run"],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    if wheel_missing:
        assert done.returncode == 1 and "DRY RUN FAILED" in done.stdout, done.stdout[-4000:]
        version = gpu_check.constraints()["nvidia-libmathdx-cu13"]
        assert f"nvidia-libmathdx-cu13=={version}: no wheel" in done.stdout
        return
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "dry run passed" in done.stdout and "DRY RUN FAILED" not in done.stdout
    assert "at the limits: smoke by" in done.stdout


CUDA_ERROR_TESTS = """
import pytest

STATE = {"poisoned": False}  # a sticky CUDA error, as a process would keep it


@pytest.mark.parametrize("i", range(10))
def test_launch(i):
    if STATE["poisoned"]:
        raise RuntimeError("cudaErrorIllegalAddress: left over from an earlier test")
    if i == 2:
        STATE["poisoned"] = True
        raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access")


def test_skipped():
    pytest.skip("a piece of the stack is missing")
"""


def test_a_cuda_error_ends_only_its_worker_and_a_skip_fails_the_run(tmp_path):
    pytest.importorskip("xdist")
    (tmp_path / "test_launches.py").write_text(CUDA_ERROR_TESTS)
    log = tmp_path / "tests.jsonl"
    env = {
        **os.environ,
        "GPU_CHECK_TEST_LOG": str(log),
        "PYTHONPATH": str(ROOT / "tools"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "gpu_pytest_plugin", "-p", "no:cacheprovider"]
        + ["-n", "2", "-q", "test_launches.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    records = [json.loads(line) for line in log.read_text().splitlines()]
    outcomes = gpu_check._test_outcomes(records)
    assert records[0] == {"collected": 11, "time": records[0]["time"]}
    assert outcomes.pop("test_launches.py::test_launch[2]") == "failed"
    assert outcomes.pop("test_launches.py::test_skipped") == "skipped"
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == 9, outcomes
    assert any(r.get("cuda_error") for r in records)
    assert done.returncode == 1 and "1 test(s) skipped" in done.stdout, done.stdout


def test_the_smoke_run_writes_every_case_s_verdict_even_without_a_gpu(tmp_path):
    """The orchestration: a process per case and phase, a verdict for each case in the JSON
    (here each child fails, finding no GPU, or the deadline leaves it unreached), exit 1."""
    if gpu_available():
        pytest.skip("a GPU is here: the smoke would pass")
    out = tmp_path / "smoke.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools/gpu_smoke.py"), "run", str(out)]
        + ["--jobs", "2", "--deadline", "20", "--logs", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    found = json.loads(out.read_text())
    assert set(found["cases"]) == set(gpu_smoke.SMOKE)
    assert sum(found["counts"].values()) == len(gpu_smoke.SMOKE) and found["counts"]["passed"] == 0
    failed = [c for c in found["cases"].values() if c["verdict"] == "failed"]
    assert failed and all(c["why"] for c in failed), found
    assert (tmp_path / f"smoke-{next(iter(gpu_smoke.SMOKE))}-compile.log").exists()


def test_the_smoke_launches_every_codegen_family_and_the_two_large_kernels():
    assert gpu_smoke.check_cases() == []


@pytest.mark.parametrize("name", list(gpu_smoke.SMOKE))
def test_a_smoke_check_passes_on_the_cpu_and_rejects_a_wrong_result(name):
    """The comparisons are right (the CPU backend's results pass them) and can fail."""
    import blocksolve

    case = gpu_smoke.SMOKE[name]
    inputs, host = _smoke_inputs(case)
    result = case.call(blocksolve, host)
    assert gpu_smoke._problems(case.check, result, inputs) == []
    results = result if isinstance(result, tuple) else (result,)
    wrong = (results[0] * 1.01, *results[1:])
    assert gpu_smoke._problems(case.check, wrong if isinstance(result, tuple) else wrong[0], inputs)


needs_the_simulator = [
    pytest.mark.cudasim,
    pytest.mark.skipif(
        os.environ.get("NUMBA_ENABLE_CUDASIM") != "1", reason="needs NUMBA_ENABLE_CUDASIM=1"
    ),
]


def _smoke_inputs(case):
    inputs = case.make(np.random.default_rng(20261205))
    host = {
        k: gpu_smoke._column_major(v, np) if k in case.column_major else v
        for k, v in inputs.items()
    }
    return inputs, host


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=needs_the_simulator) for n, c in gpu_smoke.SMOKE.items()]
)
def test_a_smoke_call_uses_its_codegen_kernel_in_the_simulator(name, simulated_gpu, monkeypatch):
    """The public call of each smoke case plans exactly the kernel whose launch bytes the
    codegen layer proves (the same pattern); the small ones' kernel templates also pass the
    comparison (the two large ones would take the simulator minutes: not launched)."""
    import blocksolve
    from blocksolve.cuda import _launch

    case = gpu_smoke.SMOKE[name]
    inputs, host = _smoke_inputs(case)
    if case.first:

        def outputs_zero(kernel, arrays, batch, xp):  # not launched: defined outputs, info 0
            for array in arrays[-len(kernel.outputs) - 1 :]:
                array.fill(0)

        monkeypatch.setattr(_launch.SimulatedKernel, "launch", outputs_zero)
        with blocksolve.errstate("ignore"):
            case.call(blocksolve, host)
    else:
        result = case.call(blocksolve, host)
        assert gpu_smoke._problems(case.check, result, inputs) == []
    assert gpu_smoke.kernel_problems(case, simulated_gpu.plans(), exact=False) == []
