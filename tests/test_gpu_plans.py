"""GPU calls are planned once per signature, as CPU calls are.

Without a GPU, a stand-in backend registered as ``'cuda'`` takes the calls
``use_device('cuda')`` routes to the GPU: what is tested is the executor's
part -- the plan of a seen signature is reused, its backend runner is built
once -- not a kernel.
"""

import numpy as np
import pytest

import blocksolve
from _helpers import random_spd, tool_module
from blocksolve import _backends, _execute
from blocksolve._op import examples
from blocksolve.ops.cholesky import CHOLESKY


class _StandInGpu:
    """A backend that computes on the host with NumPy, counting what it is asked for."""

    name = "cuda"

    def __init__(self):
        self.runners = 0
        self.transfers = 0

    def target_of(self, operands):
        return "sm_90"

    def from_host(self, x):
        self.transfers += 1
        return np.array(x)

    def to_host(self, x):
        return np.asarray(x)

    def runner(self, pattern):
        self.runners += 1

        def run(operands, runtime):
            (a,) = operands
            return np.linalg.cholesky(a), np.zeros(len(a), np.int32)

        return run


@pytest.fixture
def gpu(monkeypatch):
    stand_in = _StandInGpu()
    monkeypatch.setitem(_backends._FACTORIES, "cuda", lambda: stand_in)
    monkeypatch.setitem(_backends._MADE, "cuda", stand_in)
    _execute.PLANS.clear()
    yield stand_in
    _execute.PLANS.clear()


def test_a_seen_gpu_call_skips_planning(gpu, monkeypatch):
    a = random_spd(np.random.default_rng(0), (5,), 4, np.float64)
    with blocksolve.use_device("cuda"):
        first = blocksolve.cholesky(a)
        plans = len(_execute.PLANS)
        hits = _execute.PLANS.hits

        def no_planning(*args, **kwargs):
            raise AssertionError("a seen GPU call was planned again")

        monkeypatch.setattr(_execute, "_Plan", no_planning)
        second = blocksolve.cholesky(a)
    np.testing.assert_array_equal(first, np.linalg.cholesky(a))
    np.testing.assert_array_equal(second, first)
    assert gpu.runners == 1 and gpu.transfers == 2
    assert len(_execute.PLANS) == plans and _execute.PLANS.hits == hits + 1


def test_the_device_is_part_of_a_gpu_call_signature(gpu):
    a = random_spd(np.random.default_rng(1), (3,), 4, np.float64)
    on_cpu = blocksolve.cholesky(a)
    with blocksolve.use_device("cuda"):
        on_gpu = blocksolve.cholesky(a)
    again_on_cpu = blocksolve.cholesky(a)
    assert gpu.runners == 1 and len(_execute.PLANS) == 2
    np.testing.assert_allclose(on_gpu, on_cpu)
    np.testing.assert_array_equal(again_on_cpu, on_cpu)


class _DeviceArray:
    """What the signature reads of a CuPy array: its type's module, device, shape, dtype,
    strides."""

    def __init__(self, host, device):
        self.shape, self.dtype, self.strides = host.shape, host.dtype, host.strides
        self.device = type("Device", (), {"id": device})()


_DeviceArray.__module__ = "cupy"


def test_a_cupy_signature_keys_on_device_shape_dtype_and_strides():
    op = CHOLESKY
    options = {"lower": True, "clean": True}
    host = np.zeros((2, 3, 3))
    key = _execute._signature(op, {"a": _DeviceArray(host, 0)}, options)
    assert key is not None
    assert key == _execute._signature(op, {"a": _DeviceArray(host, 0)}, options)
    for other in (
        _DeviceArray(host, 1),
        _DeviceArray(host.astype(np.float32), 0),
        _DeviceArray(np.zeros((3, 3, 3)), 0),
        _DeviceArray(np.asfortranarray(host), 0),
    ):
        assert _execute._signature(op, {"a": other}, options) != key


# --- the code-generation cases the declarations give ----------------------------------

offline_codegen = tool_module("offline_codegen")


@pytest.mark.parametrize("op", examples(), ids=lambda op: op.example.name or op.label)
def test_each_example_call_makes_a_gpu_pattern_of_its_routine(op):
    pattern = offline_codegen.pattern_of_example(op)
    assert pattern.routine == op.routine and pattern.target == offline_codegen.H200_TARGET
    assert {name for name, _ in pattern.options} == set(op.options)
    assert pattern.np_dtype == np.float64 and set(pattern.layouts) == {"C"}
    assert not len(_execute.PLANS) or all(
        plan.backend.name != "cuda" for plan in _execute.PLANS.values()
    )


def test_a_routine_no_curated_case_compiles_gets_its_examples_case(monkeypatch):
    curated = {name: c for name, c in offline_codegen.CASES.items() if c.routine != "potrf"}
    monkeypatch.setattr(offline_codegen, "CASES", curated)
    added = {name: c for name, c in offline_codegen.cases().items() if name not in curated}
    assert list(added) == ["potrf-f64-cholesky-example"]
    case = added["potrf-f64-cholesky-example"]
    assert case.ci and case.options == {"lower": True, "clean": True}
    assert case.dims == {"n": 4} and case.layouts == "C"
