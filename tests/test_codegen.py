"""The real cuSolverDx code generation and link, on a machine without a GPU.

Each case runs ``tools/offline_codegen.py`` in fresh processes: a stand-in
CUDA driver (built here from ``tools/cudastub.c``) and H200 answers to the
"current device" queries let the production path -- ``CudaBackend.plan``,
the real nvmath descriptors, libmathdx, numba-cuda typing, NVVM, nvJitLink,
the ABI check and the disk caches -- compile every kernel family to an sm_90
cubin.  What can be known without running is asserted: the cubin links for
sm_90; its parameter table is the argument layout blocksolve packs; static
plus dynamic shared memory is what the plan computed and fits the device,
and so do its registers; every cuSolverDx function the kernel calls was generated for the kernel's
pinned batches per block, block shape, arrangements and leading dimensions;
the launch shapes the simulator tests use are the real ones; a second
process is served from the disk cache without importing numba.cuda or
nvmath; and every parameter of the cubin gets the same bytes from
blocksolve's launch through cupy as from numba-cuda's own launcher.  Nothing
here runs a kernel: that needs ``pytest -m gpu``.

Selected only when asked for (each case compiles for tens of seconds):

    python -m pytest -m "codegen and not slow" -n 2   # CI: every family once, ~3 min
    python -m pytest -m codegen -n 2                  # the whole grid
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from _helpers import tool_module

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "offline_codegen.py"
SHAPES = Path(__file__).resolve().parent / "data" / "cusolverdx_launch_shapes.json"

pytestmark = pytest.mark.codegen


offline_codegen = tool_module("offline_codegen")

# What a case that runs on the device plans: its kernel, or (lstsq) its kernel and the SVD's.
_KERNEL_PLANS = ("KernelPlan", "GelsPlan")


def _params():
    return [
        pytest.param(name, id=name, marks=() if case.ci else pytest.mark.slow)
        for name, case in offline_codegen.cases().items()
    ]


def _cannot(reason):
    """Skip -- or fail where ``$BLOCKSOLVE_REQUIRE_CODEGEN`` says this layer must run (CI)."""
    if os.environ.get("BLOCKSOLVE_REQUIRE_CODEGEN"):
        pytest.fail(f"BLOCKSOLVE_REQUIRE_CODEGEN is set, but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def stub_driver(tmp_path_factory):
    """The stand-in driver, built now; skips where the toolchain to do so is missing."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        _cannot("code generation needs numba-cuda's real compiler (the simulator is on)")
    for module, package in (
        ("nvmath", "nvmath-python"),
        ("numba_cuda", "numba-cuda"),
        ("cupy", "cupy"),
    ):
        if importlib.util.find_spec(module) is None:
            _cannot(f"code generation needs {package}: pip install -e '.[cuda]'")
    compiler = os.environ.get("CC", "cc")
    if shutil.which(compiler) is None:
        _cannot(f"no C compiler ({compiler}) to build the stand-in driver")
    return offline_codegen.build_stub(tmp_path_factory.mktemp("stub"))


def _run_cases(command, names, cache_dir, stub):
    """``tools/offline_codegen.py command names...`` in a new process: one result per case."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env.update(
        BLOCKSOLVE_CACHE_DIR=str(cache_dir),
        BLOCKSOLVE_CODEGEN_STUB=str(stub),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
    )
    result = subprocess.run(
        [sys.executable, str(TOOL), command, *names],
        capture_output=True,
        text=True,
        env=env,
        timeout=900 * len(names),
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    assert result.returncode == 0 and len(lines) == len(names), result.stderr[-4000:]
    return [json.loads(line.removeprefix("RESULT ")) for line in lines]


def _run(command, name, cache_dir, stub):
    (result,) = _run_cases(command, [name], cache_dir, stub)
    return result


@pytest.mark.parametrize("name", _params())
def test_kernel_generates_links_and_is_served_from_disk(name, stub_driver, tmp_path):
    case = offline_codegen.cases()[name]
    compiled = _run("compile", name, tmp_path, stub_driver)

    assert compiled["plan"] in _KERNEL_PLANS and compiled["fallback"] is None, compiled
    # A plan made of plans (lstsq: its kernel, then the SVD kernel of the triangle) runs
    # them all on the device; only an SVD kernel too large for the device's shared memory
    # is not one (that step is then cuSOLVER's, through cupy).
    parts = compiled["parts"]
    assert parts[0]["record"] == compiled["record"]
    for part in parts:
        assert part["plan"] == "KernelPlan" or "shared memory" in part["fallback"], part
    shapes = [
        (part["record"]["batches_per_block"], part["record"]["block_dim"])
        for part in parts
        if part["record"] is not None
    ]
    record = compiled["record"]
    timings = compiled["timings"]
    assert "link_s" in timings and "kernel_load_s" not in timings, "expected a cold compile"
    assert record["sm"] == 90 and compiled["cubin_bytes"] > 0
    # The ABI was checked against the cubin's parameter table before it was stored.
    assert compiled["abi_params"] > 0 and record["abi_version"].startswith("numba-cuda")

    # Shared memory: the plan's dynamic bytes plus cuSolverDx's static ones, within an H200's.
    assert record["shared_bytes"] > 0
    assert (
        record["static_shared_bytes"] + record["shared_bytes"] <= offline_codegen.H200_SHARED_LIMIT
    )

    # Registers: a block of the kernel's threads has them (the launch bounds see to it).
    from blocksolve.cuda._plan import REGISTERS_PER_BLOCK, registers_per_block

    assert 0 < record["registers"] <= 255
    assert registers_per_block(record["registers"], record["block_dim"]) <= REGISTERS_PER_BLOCK

    # Every cuSolverDx function the kernels called is one of their descriptors' functions,
    # pinned to its kernel's launch shape.
    functions = compiled["solver_functions"]
    assert functions, "the kernel called no cuSolverDx function"
    described = [dict(fields) for fields in compiled["descriptors"].values()]
    for called in functions:
        fields = {k: v for k, v in called.items() if k not in ("generated", "seconds")}
        assert fields in described, f"{fields['function']} is none of the descriptors"
        assert (fields["batches_per_block"], fields["block_dim"]) in shapes
    assert any(called["generated"] for called in functions)

    # The simulator tests run at the shapes recorded per libmathdx version: for a recorded
    # version they must be the real ones.  A version not recorded yet may choose other
    # shapes (a new release does); that is reported, not a failure.
    shape = {"batches_per_block": record["batches_per_block"], "block_dim": record["block_dim"]}
    version = offline_codegen.libmathdx_version()
    recorded = json.loads(SHAPES.read_text())
    record_it = f"`python tools/offline_codegen.py shapes {SHAPES.relative_to(ROOT)}` records them"
    if version in recorded:
        assert recorded[version].get(name, shape) == shape, (
            f"libmathdx {version} suggests another launch shape for {name} than recorded: "
            f"{shape}; {record_it}"
        )
    else:
        warnings.warn(
            f"the launch shapes of libmathdx {version} are not recorded, so the "
            f"simulator tests do not run {name} at {shape}; {record_it}",
            stacklevel=1,
        )
    if case.dims.get("n", 99) <= 4 and case.dims.get("m", 0) <= 4:
        assert record["batches_per_block"] > 1, "small matrices share a block"

    # A new process finds the kernel on disk: nothing is compiled or imported for it.
    loaded = _run("load", name, tmp_path, stub_driver)
    assert loaded["plan"] == compiled["plan"]
    assert [part["plan"] for part in loaded["parts"]] == [part["plan"] for part in parts]
    assert list(loaded["timings"]) == ["kernel_load_s"]
    assert loaded["loaded_modules"] == []
    assert loaded["record"]["cubin_sha256"] == record["cubin_sha256"]


def test_solve_shares_the_factorisation_with_lu_factor(stub_driver, tmp_path):
    """``solve`` generates getrf exactly as ``lu_factor`` does: the second finds it cached."""
    first = _run("compile", "gesv-f64-n4k1", tmp_path, stub_driver)
    assert [f["function"] for f in first["solver_functions"] if f["generated"]] == [
        "getrf_partial_pivot",
        "getrs_partial_pivot",
    ]
    second = _run("compile", "getrf-f64-n4", tmp_path, stub_driver)
    assert second["plan"] == "KernelPlan" and "link_s" in second["timings"]
    assert not any(f["generated"] for f in second["solver_functions"])
    assert "traits_s" in second["timings"]


@pytest.mark.parametrize("subset", ["ci", pytest.param("others", marks=pytest.mark.slow)])
def test_launch_passes_the_bytes_numba_cudas_own_launcher_would(subset, stub_driver, tmp_path):
    """The kernel ABI, field by field: for every kernel family, each parameter of the linked
    cubin gets the same bytes from blocksolve's cupy launch (``_abi.pack``) as from
    numba-cuda's launcher (``_Kernel._prepare_args`` and cuda.core's ``ParamHolder``, on
    stand-in device arrays of the kernel's dtypes, ranks and layouts) -- with the strides
    given and with numba-cuda deriving them.  Wrong packings that the parameter table alone
    cannot see (strides in elements, two 8-byte fields swapped) must show as differences."""
    names = [name for name, case in offline_codegen.cases().items() if case.ci == (subset == "ci")]
    results = _run_cases("abi", names, tmp_path, stub_driver)
    assert [r["case"] for r in results] == names
    for result in results:
        assert result["plan"] in _KERNEL_PLANS, result
        assert result["params"] > 0 and result["param_sizes"] == [8], result
        assert result["differences"] == [], f"{result['case']}: {result['differences'][:8]}"
        missed = [m for m, caught in result["mutants_caught"].items() if not caught]
        assert not missed, f"{result['case']}: the comparison did not see {missed}"
