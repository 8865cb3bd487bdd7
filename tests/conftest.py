"""Fixtures for every test module.

* ``xp``: tests run on the CPU, and on the GPU (marked ``gpu``) when cupy and
  a CUDA device are present.
* CPU kernel tiers: every test runs on the kernels that take their sizes at
  run time (one compilation per kernel family and dtype, so the suite is
  quick on a cold kernel cache), compiled before the call that needs them;
  calls of one matrix run on NumPy's or SciPy's LAPACK, as for any user
  (``single_matrices_on_kernels`` puts them on the kernels).  Modules marked
  ``kernel_tiers`` (the per-family numerics) run every test a second time on
  the size-specialised kernels under the ``exhaustive`` marker (``pytest -m
  exhaustive``; CI runs it): that compiles every pattern of their grids, in
  float64 where a test case also runs other dtypes (complex64 too for QR and
  least squares; :func:`_other_precisions`; ``--every-dtype`` runs them all).
  ``tests/test_tiers.py`` checks that the two tiers agree, on a few patterns
  per family, in the default run.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest

from _helpers import gpu_available

# Keep hypothesis fast and deterministic on 2-core CI machines.
try:
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "ci",
        max_examples=25,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.register_profile(
        "dev", max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # pragma: no cover
    pass


TIERS = ("generic", "specialised")


def pytest_addoption(parser):
    parser.addoption(
        "--every-dtype",
        action="store_true",
        help="run the size-specialised kernel tier (-m exhaustive) in every dtype "
        "of its test cases, not only float64 and complex64",
    )


def pytest_generate_tests(metafunc):
    if metafunc.definition.get_closest_marker("kernel_tiers"):
        metafunc.parametrize(
            "kernel_tier",
            ["generic", pytest.param("specialised", marks=pytest.mark.exhaustive)],
            indirect=True,
        )


@pytest.hookimpl(trylast=True)  # after -m: count as deselected here only what it kept
def pytest_collection_modifyitems(config, items):
    # Real code generation takes tens of seconds per kernel: only when selected by -m.
    if "codegen" not in (config.option.markexpr or ""):
        skip = pytest.mark.skip(
            reason="real cuSolverDx code generation (minutes): select it with -m codegen"
        )
        for item in items:
            if "codegen" in item.keywords:
                item.add_marker(skip)
    # The CPU kernel tier means nothing on the GPU: one GPU run of each test.
    dropped = [item for item in items if _gpu_twice(item)]
    if not config.getoption("--every-dtype"):
        dropped = list(dict.fromkeys(dropped + _other_precisions(items)))
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        dropped = set(dropped)
        items[:] = [item for item in items if item not in dropped]
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU with cupy, numba-cuda and nvmath-python")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def _params(item):
    return getattr(getattr(item, "callspec", None), "params", {})


def _gpu_twice(item):
    params = _params(item)
    return params.get("xp") == "cupy" and params.get("kernel_tier") == "specialised"


# The dtype of each kind the specialised tier keeps where a test case runs both.
_KEPT = {"f": np.dtype(np.float64), "c": np.dtype(np.complex64)}


def _other_precisions(items):
    """The specialised-tier items left out for their dtype.

    The tier exists for the sizes (a kernel per size, straight-line code for the
    smallest); the generic tier runs every dtype in the default run.  A loop
    kernel's source is the same for every dtype, so where a test case (a test
    and its other parameters) runs a real dtype, the tier keeps float64 alone,
    and complex64 where the case runs only complex ones.  Modules marked
    ``straight_line`` (QR and least squares: their smallest shapes are
    straight-line code generated per dtype) keep float64 and complex64.  The
    same dtypes in every test, so that the kernels left out are never compiled:
    CI's longest step compiles about a third fewer kernels than with float64 and
    complex64 everywhere.
    """
    cases = {}
    for item in items:
        params = _params(item)
        if params.get("kernel_tier") == "specialised" and "dtype" in params:
            case = (
                item.nodeid.split("[")[0],
                tuple(sorted((k, _stable_repr(v)) for k, v in params.items() if k != "dtype")),
            )
            cases.setdefault(case, []).append((np.dtype(params["dtype"]), item))
    dropped = []
    for members in cases.values():
        dtypes = {dtype for dtype, _ in members}
        # kind -> the one dtype of it the case keeps (None: none), for the kinds it thins
        kept = {kind: dtype for kind, dtype in _KEPT.items() if dtype in dtypes}
        if "f" in kept and not members[0][1].get_closest_marker("straight_line"):
            kept["c"] = None
        dropped += [
            item for dtype, item in members if dtype.kind in kept and dtype != kept[dtype.kind]
        ]
    return dropped


def _stable_repr(value):
    # The same in every xdist worker, which must all collect the same tests.
    text = repr(value)
    return type(value).__qualname__ if " at 0x" in text else text


@pytest.fixture(autouse=True)
def kernel_tier(request):
    """The CPU kernels of this test: ``'generic'`` (sizes read at run time) unless
    parametrised ``'specialised'`` (sizes baked in).

    Either way a call that runs on a kernel compiles (or loads) it first, so
    that the test runs the kernel and not the LAPACK path that answers while a
    kernel compiles in the background.
    """
    from blocksolve.cpu import _compiled, _jit

    tier = getattr(request, "param", "generic")
    previous_sizes = _jit.use_run_time_sizes(tier == "generic")
    previous_mode = _compiled.set_specialization("wait")
    yield tier
    _compiled.set_specialization(previous_mode)
    _jit.use_run_time_sizes(previous_sizes)


@pytest.fixture
def single_matrices_on_kernels(monkeypatch):
    """Calls of one matrix run on the generated kernel too (they run on NumPy's or SciPy's
    LAPACK otherwise): for tests of a kernel's own consistency, one matrix against many."""
    from blocksolve import clear_cache
    from blocksolve.cpu import _backend as _routine

    monkeypatch.setattr(_routine, "KERNEL_FROM_BATCH", 1)
    clear_cache()  # runners, and the plans holding them, chose by the old value
    yield
    clear_cache()


@pytest.fixture(params=["numpy", pytest.param("cupy", marks=pytest.mark.gpu)])
def xp(request):
    """The array namespace under test: numpy (CPU backend) or cupy (GPU backend)."""
    if request.param == "numpy":
        return np
    import cupy

    return cupy


@pytest.fixture
def rng():
    return np.random.default_rng(20261130)


@pytest.fixture
def simulated_gpu(monkeypatch):
    """``use_device('cuda')`` runs the real kernel templates under numba's CUDA simulator: a
    CUDA backend on the simulator's stand-in descriptors (``_cuda_simulated``) takes the
    place of the GPU's.  Its plans are forgotten after the test."""
    import _cuda_simulated

    import blocksolve
    from blocksolve import _backends, _execute
    from blocksolve._cache import Memo
    from blocksolve.cuda import CudaBackend

    backend = CudaBackend(
        api=_cuda_simulated, xp=np, target="sm_90", cache=Memo("cuda-simulator", register=False)
    )
    monkeypatch.setitem(_backends._MADE, "cuda", backend)
    try:
        with blocksolve.use_device("cuda"):
            yield backend
    finally:
        _execute.PLANS.clear()


def pytest_runtest_logreport(report):
    """With ``$BLOCKSOLVE_TEST_LOG``, append each verdict as a JSON line as soon as it is known.

    A run cut short by a time limit (the GPU check) keeps every verdict it reached;
    a junit file is written only when pytest finishes.
    """
    path = os.environ.get("BLOCKSOLVE_TEST_LOG")
    if not path or (report.when != "call" and report.outcome == "passed"):
        return
    with open(path, "a", encoding="utf-8") as log:
        log.write(
            json.dumps(
                {
                    "test": report.nodeid,
                    "when": report.when,
                    "outcome": report.outcome,
                    "seconds": round(report.duration, 3),
                    "time": time.time(),
                    "message": report.longreprtext[-2000:] if report.failed else None,
                }
            )
            + "\n"
        )
