"""One fixture for every backend: tests take ``xp`` and run on the CPU, and on
the GPU (marked ``gpu``) when cupy and a CUDA device are present."""

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

    settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("dev", max_examples=50, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # pragma: no cover
    pass


def pytest_collection_modifyitems(config, items):
    # Real code generation takes tens of seconds per kernel: only when selected by -m.
    if "codegen" not in (config.option.markexpr or ""):
        skip = pytest.mark.skip(reason="real cuSolverDx code generation (minutes): select it "
                                       "with -m codegen")
        for item in items:
            if "codegen" in item.keywords:
                item.add_marker(skip)
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU with cupy, numba-cuda and nvmath-python")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


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


def pytest_runtest_logreport(report):
    """With ``$BLOCKSOLVE_TEST_LOG``, append each verdict as a JSON line as soon as it is known.

    A run cut short by a time limit (the GPU check) keeps every verdict it reached;
    a junit file is written only when pytest finishes.
    """
    path = os.environ.get("BLOCKSOLVE_TEST_LOG")
    if not path or (report.when != "call" and report.outcome == "passed"):
        return
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps({"test": report.nodeid, "when": report.when,
                              "outcome": report.outcome, "seconds": round(report.duration, 3),
                              "time": time.time(),
                              "message": report.longreprtext[-2000:] if report.failed
                              else None}) + "\n")
