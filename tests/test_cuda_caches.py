"""The CUDA backend's disk caches and cached-kernel launch records, without a GPU.

Linked kernels are stored with a launch record and loaded by later processes
without compiling; these tests cover what decides whether a stored kernel is
used (its key), what makes it unusable (a changed cubin, a changed ABI), the
argument packing a cached launch relies on, and the plan a stored record
produces (``tests/test_codegen.py`` does the same with real cubins).
"""

from __future__ import annotations

import hashlib
import sys

import numpy as np
import pytest

from blocksolve._pattern import CallPattern


def _pattern(**changes):
    fields = dict(
        routine="potrf",
        dims={"n": 4},
        dtype="float64",
        options={"lower": True, "clean": True},
        layouts=["C"],
        target="sm_90",
    )
    fields.update(changes)
    return CallPattern.make(
        fields["routine"],
        fields["dims"],
        fields["dtype"],
        fields["options"],
        fields["layouts"],
        fields["target"],
    )


def _record(pattern, cubin, **changes):
    from blocksolve.cuda import _abi

    outputs = [((4, 4), np.dtype(np.float64))]
    record = {
        "entry": "potrf_kernel",
        "abi": _abi.kernel_abi(pattern, outputs),
        "abi_version": _abi.ABI_VERSION,
        "block_dim": [32, 1, 1],
        "batches_per_block": 32,
        "shared_bytes": 4224,
        "static_shared_bytes": 1024,
        "registers": 40,
        "outputs": [[[4, 4], "<f8"]],
        "sm": 90,
        "cubin_sha256": hashlib.sha256(cubin).hexdigest(),
        "timings": {},
    }
    record.update(changes)
    return record


@pytest.fixture
def store(tmp_path):
    from blocksolve.cuda._kernel_store import KernelStore

    return KernelStore(tmp_path)


# --- the argument layout -----------------------------------------------------------------


def test_abi_follows_the_op_table_and_the_layouts():
    from blocksolve.cuda import _abi

    pattern = _pattern(
        routine="getrs",
        dims={"n": 4, "k": 2},
        options={"trans": 0},
        layouts=["F", "C", "C"],
        dtype="complex64",
    )
    abi = _abi.kernel_abi(pattern, [((4, 2), np.dtype(np.complex64))])
    assert abi == [
        ["array", "complex64", 3, "A"],
        ["array", "int32", 2, "C"],
        ["array", "complex64", 3, "C"],
        ["array", "complex64", 3, "C"],
        ["array", "int32", 1, "C"],
        ["int64"],
    ]
    assert _abi.param_count(abi) == 11 + 9 + 11 + 11 + 7 + 1


def test_abi_check_refuses_a_parameter_table_it_would_not_fill():
    from blocksolve.cuda import _abi

    abi = [["array", "float64", 3, "C"], ["int64"]]
    _abi.check_params(abi, [(i, 8 * i, 8) for i in range(12)])
    with pytest.raises(_abi.AbiMismatch, match=r"takes 13 parameters .* would pass 12"):
        _abi.check_params(abi, [(i, 8 * i, 8) for i in range(13)])
    with pytest.raises(_abi.AbiMismatch, match=r"cannot be cached"):
        _abi.check_params(abi, [(i, 8 * i, 4 if i == 3 else 8) for i in range(12)])


def test_pack_passes_arrays_as_numba_cuda_does():
    from blocksolve.cuda import _abi

    a = np.zeros((3, 4, 5))
    b = np.asfortranarray(np.zeros((4, 5)))[None].repeat(3, axis=0).swapaxes(1, 2)
    abi = [["array", "float64", 3, "C"], ["array", "float64", 3, "A"], ["int64"]]
    params = _abi.pack(abi, [a, b], 3, lambda x: 1000 + x.ndim)
    assert [int(p) for p in params[:11]] == [0, 0, 60, 8, 1003, 3, 4, 5, 160, 40, 8]
    assert [int(p) for p in params[16:22]] == [*b.shape, *b.strides] and int(params[-1]) == 3
    assert all(np.asarray(p).itemsize == 8 for p in params)
    with pytest.raises(_abi.AbiMismatch, match=r"given a float64 array"):
        _abi.pack([["array", "float64", 3, "C"], ["int64"]], [b], 3, lambda x: 0)
    with pytest.raises(_abi.AbiMismatch):
        _abi.pack(abi, [a.astype(np.float32), b], 3, lambda x: 0)


@pytest.mark.parametrize("given", [1, 3], ids=["one-short", "one-over"])
def test_pack_refuses_another_number_of_arrays(given):
    """A missing array must not shift the batch size into an array's fields."""
    from blocksolve.cuda import _abi

    abi = [["array", "float64", 3, "C"], ["array", "float64", 3, "C"], ["int64"]]
    arrays = [np.zeros((3, 4, 5))] * given
    with pytest.raises(_abi.AbiMismatch, match=rf"takes 2 arrays .* given {given} arrays"):
        _abi.pack(abi, arrays, 3, lambda x: 0)


# --- keys and entries ------------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"dims": {"n": 5}},
        {"dtype": "complex128"},
        {"options": {"lower": False, "clean": True}},
        {"layouts": ["F"]},
        {"target": "sm_100"},
        {"routine": "getrf", "options": {}},
    ],
)
def test_kernel_key_covers_the_whole_pattern(change):
    from blocksolve.cuda._kernel_store import KernelStore

    assert KernelStore.kernel_key(_pattern()) != KernelStore.kernel_key(_pattern(**change))
    assert KernelStore.traits_key(_pattern()) != KernelStore.traits_key(_pattern(**change))


def test_kernel_key_covers_versions_driver_and_sources(monkeypatch):
    from blocksolve.cuda import _kernel_store

    key = _kernel_store.KernelStore.kernel_key(_pattern())
    for name, value in [
        ("package_versions", lambda: {"nvmath-python": "9.9"}),
        ("driver_version", lambda: 99999),
        ("source_digest", lambda *paths: "edited"),
    ]:
        with monkeypatch.context() as patch:
            patch.setattr(_kernel_store, name, value)
            assert _kernel_store.KernelStore.kernel_key(_pattern()) != key, name
    with monkeypatch.context() as patch:  # traits do not depend on the driver
        patch.setattr(_kernel_store, "driver_version", lambda: 99999)
        assert _kernel_store.KernelStore.traits_key(
            _pattern()
        ) == _kernel_store.KernelStore.traits_key(_pattern())


@pytest.mark.parametrize(
    "distribution",
    [
        "nvmath-python",
        "nvidia-libmathdx-cu13",
        "numba-cuda",
        "nvidia-nvvm",
        "nvidia-nvjitlink",
        "nvidia-cuda-nvrtc",
        "cuda-bindings",
    ],
)
def test_another_toolchain_version_misses_every_cache(monkeypatch, distribution):
    """Resolved traits, linked cubins and generated device code made with one version of
    a toolchain package are not reused with another: each key changes."""
    from types import SimpleNamespace

    from blocksolve.cuda import _code_cache, _kernel_store
    from blocksolve.cuda._versions import package_versions

    store, pattern = _kernel_store.KernelStore, _pattern()
    solver = SimpleNamespace(function="potrf", size=(4, 4, 1), precision="float64")

    def keys():
        code = _code_cache.CodeCache("unused", versions=_code_cache.library_versions())
        return store.traits_key(pattern), store.kernel_key(pattern), code.key(solver, "lto", 1)

    before = keys()
    assert distribution in package_versions()
    changed = {**package_versions(), distribution: "0.0.1-another"}
    monkeypatch.setattr(_kernel_store, "package_versions", lambda: changed)
    monkeypatch.setattr(_code_cache, "package_versions", lambda: changed)
    after = keys()
    assert all(b != a for b, a in zip(before, after, strict=True)), (before, after)


def test_sources_digest_sees_every_cuda_source():
    from blocksolve.cuda._versions import source_digest

    assert source_digest("cuda") != source_digest("cuda/kernels/_skeleton.py")
    assert source_digest("cuda", "_op.py") != source_digest("cuda")


def test_stored_kernel_round_trips_and_a_changed_cubin_is_dropped(store):
    pattern = _pattern()
    cubin = b"\x7fELF" + bytes(range(200))
    store.store_kernel(pattern, _record(pattern, cubin), cubin)
    record, loaded = store.load_kernel(pattern)
    assert loaded == cubin and record["entry"] == "potrf_kernel" and store.hits == 1
    assert store.load_kernel(_pattern(dims={"n": 5})) is None and store.misses == 1
    # A record whose cubin hash does not match (a torn or tampered file) is not trusted.
    store.store_kernel(pattern, _record(pattern, cubin, cubin_sha256="0" * 64), cubin)
    assert store.load_kernel(pattern) is None
    assert not list(store._kernels.directory.glob("*.cubin"))


def test_traits_round_trip(store):
    assert store.load_traits(_pattern()) is None
    store.store_traits(_pattern(), {"batches_per_block": 32, "block_dim": [32, 1, 1]})
    assert store.load_traits(_pattern()) == {"batches_per_block": 32, "block_dim": [32, 1, 1]}


# --- plans from stored kernels -------------------------------------------------------------


def test_a_stored_kernel_is_planned_without_compiling(store):
    from blocksolve.cuda import _plan
    from blocksolve.cuda._launch import CubinKernel

    pattern = _pattern()
    cubin = b"\x7fELF" + bytes(100)
    store.store_kernel(pattern, _record(pattern, cubin), cubin)
    plan = _plan.build(pattern, store=store, shared_limit=232448)
    assert isinstance(plan, _plan.KernelPlan) and isinstance(plan.kernel, CubinKernel)
    assert list(plan.timings) == ["kernel_load_s"]
    assert plan.kernel.outputs == (((4, 4), np.dtype(np.float64)),)
    assert plan.kernel.block_dim == (32, 1, 1) and plan.kernel.batches_per_block == 32


def test_static_plus_dynamic_shared_memory_over_the_limit_falls_back(store):
    from blocksolve.cuda import _plan

    pattern = _pattern()
    cubin = b"\x7fELF" + bytes(100)
    store.store_kernel(
        pattern, _record(pattern, cubin, shared_bytes=45000, static_shared_bytes=9000), cubin
    )
    plan = _plan.build(pattern, store=store, shared_limit=48 * 1024)
    assert isinstance(plan, _plan.FallbackPlan)
    assert plan.fallback == (
        "needs 54000 bytes of static and dynamic shared memory per block; the device allows 49152"
    )


@pytest.mark.parametrize(
    "registers, threads, fits",
    [
        (128, 512, True),
        (125, 512, True),  # 125 is handed out as 128
        (129, 512, False),
        (204, 512, False),
        (255, 256, True),
        (255, 257, False),
        (130, 480, True),
        (130, 481, False),
    ],
)  # threads by whole warps
def test_a_kernel_whose_registers_exceed_a_block_falls_back(store, registers, threads, fits):
    from blocksolve.cuda import _plan

    pattern = _pattern()
    cubin = b"\x7fELF" + bytes(100)
    store.store_kernel(
        pattern, _record(pattern, cubin, registers=registers, block_dim=[threads, 1, 1]), cubin
    )
    plan = _plan.build(pattern, store=store, shared_limit=232448)
    if fits:
        assert isinstance(plan, _plan.KernelPlan)
    else:
        assert isinstance(plan, _plan.FallbackPlan)
        assert plan.fallback.startswith(
            f"needs {registers} registers per thread for {threads} threads"
        )
        assert plan.fallback.endswith("a block has 65536")


class _FakeDevice:
    """cupy's ``Device`` as far as the backend uses it: a context that makes it current."""

    current = 0

    def __init__(self, id, compute_capability):
        self.id, self.compute_capability = id, compute_capability

    def __enter__(self):
        self.previous, _FakeDevice.current = _FakeDevice.current, self.id

    def __exit__(self, *exc):
        _FakeDevice.current = self.previous


class _FakeGpuArray:
    def __init__(self, device):
        self.device = device


def test_a_call_runs_on_its_operands_device_whatever_the_current_one(monkeypatch):
    """Arrays on device 1 while cupy's current device is 0 (a torch tensor on cuda:1, a
    cupy array made under another ``Device``): the pattern is for device 1's
    architecture and the plan runs with device 1 current, then device 0 is current again."""
    import types

    from blocksolve.cuda import CudaBackend

    devices = [_FakeDevice(0, "90"), _FakeDevice(1, "80")]
    xp = types.SimpleNamespace(
        cuda=types.SimpleNamespace(Device=lambda: devices[_FakeDevice.current])
    )
    backend = CudaBackend(xp=xp)
    operands = (_FakeGpuArray(devices[1]), _FakeGpuArray(devices[1]))
    assert backend.target == "sm_90" and backend.target_of(operands) == "sm_80"
    assert _FakeDevice.current == 0
    ran_on = []
    plan = types.SimpleNamespace(run=lambda ops, xp, runtime: ran_on.append(_FakeDevice.current))
    monkeypatch.setattr(backend, "plan", lambda pattern: plan)
    backend.execute(_pattern(layouts=["C", "C"], target="sm_80"), operands)
    assert ran_on == [1] and _FakeDevice.current == 0


def test_a_gpu_call_made_on_the_cpu_returns_to_its_arrays_device():
    """``use_device('cpu')`` with arrays on device 1 while device 0 is current: the host
    results go back to device 1."""
    import types

    from blocksolve._backends import select, use_device
    from blocksolve._normalize import Native

    made_on = []
    xp = types.SimpleNamespace(
        asnumpy=np.asarray, asarray=lambda x: made_on.append(_FakeDevice.current) or x
    )
    with use_device("cpu"):
        backend, to_backend, from_backend = select(Native(xp, None, _FakeDevice(1, "90")))
    assert backend.name == "cpu"
    from_backend(np.ones(2))
    assert made_on == [1] and _FakeDevice.current == 0


class _FakeExternalStream:
    """cupy's ``ExternalStream`` as far as ``Native`` uses it: a context that makes it
    the current stream of the current device."""

    current = {}  # device id -> stream handle

    def __init__(self, ptr, device_id):
        self.ptr, self.device_id = ptr, device_id

    def __enter__(self):
        assert _FakeDevice.current == self.device_id, "a stream is entered on its device"
        self.previous = _FakeExternalStream.current.get(self.device_id)
        _FakeExternalStream.current[self.device_id] = self.ptr

    def __exit__(self, *exc):
        _FakeExternalStream.current[self.device_id] = self.previous


def test_the_whole_call_runs_on_its_arrays_device(monkeypatch):
    """Arrays on device 1 while device 0 is current: not only the kernel but the casts and
    checks before it, the policy's look at ``info`` and the hand-back run with device 1
    current (on device 0 they would read device 1's memory, or leave results there)."""
    import blocksolve
    from blocksolve import _execute
    from blocksolve._normalize import Native

    seen = {}
    real_to_native, real_failed_info = _execute.to_native, _execute.failed_info
    real_fill_nan, real_run = _execute._fill_nan, _execute._Plan.run

    def recorded(name, function):
        def call(*args, **kwargs):
            seen.setdefault(name, []).append(_FakeDevice.current)
            return function(*args, **kwargs)

        return call

    def on_device_1(function, args, stream=None):
        native, arrays = real_to_native(function, args, stream)
        return Native(native.xp, recorded("give back", lambda x: x), _FakeDevice(1, "90")), arrays

    monkeypatch.setattr(_execute, "to_native", on_device_1)
    monkeypatch.setattr(_execute, "failed_info", recorded("policy", real_failed_info))
    monkeypatch.setattr(_execute, "_fill_nan", recorded("nan fill", real_fill_nan))
    monkeypatch.setattr(_execute._Plan, "run", recorded("run", real_run))
    a = np.stack([np.eye(3), -np.eye(3)])
    _execute.PLANS.clear()  # plans remembered from other tests hold their own Native
    try:
        L = blocksolve.cholesky(a, errors="nan")
        assert np.isnan(L[1]).all() and np.array_equal(L[0], np.eye(3))
        with pytest.raises(blocksolve.LinAlgError, match=r"^cholesky: 1 matrix .* index \(1,\)"):
            blocksolve.cholesky(a)
    finally:
        _execute.PLANS.clear()  # nor may later tests find this one's
    assert seen == {"run": [1, 1], "nan fill": [1], "give back": [1], "policy": [1]}
    assert _FakeDevice.current == 0


def test_a_call_on_a_streams_arrays_runs_on_that_stream():
    """``Native.current()``: the arrays' device current and, where the caller's library
    names its stream (torch), that stream cupy's current one -- on that device, and
    both given back afterwards."""
    import types

    from blocksolve._normalize import Native

    xp = types.SimpleNamespace(cuda=types.SimpleNamespace(ExternalStream=_FakeExternalStream))
    native = Native(xp, None, _FakeDevice(1, "90"), stream=0x5EED)
    with native.current():
        assert _FakeDevice.current == 1 and _FakeExternalStream.current[1] == 0x5EED
    assert _FakeDevice.current == 0 and _FakeExternalStream.current[1] is None
    with Native(xp, None, _FakeDevice(1, "90")).current():  # cupy's own stream: left as is
        assert _FakeDevice.current == 1 and _FakeExternalStream.current[1] is None


def _module_object(module, **attributes):
    """An object whose type lives in ``module`` (what ``stream_handle`` tells libraries by)."""
    kind = type("Stream", (), {"__module__": module})
    thing = kind()
    thing.__dict__.update(attributes)
    return thing


def test_stream_keyword_takes_the_streams_of_cupy_torch_the_protocol_and_handles():
    import types

    from blocksolve._normalize import stream_handle

    cupy_stream = _module_object("cupy.cuda.stream", ptr=0xC0, device_id=1)
    torch_stream = _module_object(
        "torch.cuda.streams", cuda_stream=0x70, device=types.SimpleNamespace(index=2)
    )
    protocol = types.SimpleNamespace(__cuda_stream__=lambda: (0, 0xCD))
    assert stream_handle("f", cupy_stream) == (0xC0, 1)
    assert stream_handle("f", torch_stream) == (0x70, 2)
    assert stream_handle("f", protocol) == (0xCD, None)
    assert stream_handle("f", 0) == (0, None)  # the legacy default stream
    assert stream_handle("f", np.uint64(0x5EED)) == (0x5EED, None)


@pytest.mark.parametrize(
    "bad, error, message",
    [
        (
            "s",
            TypeError,
            r"cholesky: stream must be a CuPy or torch CUDA stream, an object with "
            r"__cuda_stream__, or a cudaStream_t handle \(int\); got builtins.str",
        ),
        (1.0, TypeError, r"got builtins.float"),
        (
            True,
            TypeError,
            r"cholesky: stream must be a CUDA stream or a cudaStream_t handle; "
            r"got True",
        ),
        (-1, ValueError, r"cholesky: a stream handle is not negative; got -1"),
    ],
)
def test_stream_keyword_refuses_what_is_no_stream(bad, error, message):
    import blocksolve

    with pytest.raises(error, match=message):
        blocksolve.cholesky(np.eye(2), stream=bad)


def test_stream_keyword_is_refused_for_a_call_on_the_cpu():
    import blocksolve

    with pytest.raises(
        ValueError,
        match=r"solve: stream= applies to a call that runs on a "
        r"GPU; these are host arrays, computed on the CPU",
    ):
        blocksolve.solve(np.eye(2), np.ones(2), stream=0)


def test_stream_keyword_on_another_device_than_the_arrays_is_refused(monkeypatch):
    import blocksolve
    from blocksolve import _execute

    monkeypatch.setattr(_execute, "gpu_device_of", lambda args: 0)
    stream = _module_object("cupy.cuda.stream", ptr=0xC0, device_id=1)
    with pytest.raises(
        ValueError,
        match=r"qr: the stream is on device 1, the arrays on "
        r"device 0",
    ):
        blocksolve.qr(np.eye(2), stream=stream)


def test_a_call_given_a_stream_runs_on_it_from_the_arrays_hand_over_on(monkeypatch):
    """``stream=``: the arrays' device and that stream current from the arrays' import
    (a DLPack producer orders its pending work before the consumer's stream) to the
    results, both given back after; such calls are not remembered."""
    import types

    import blocksolve
    from blocksolve import _execute
    from blocksolve._normalize import Native

    devices = {i: _FakeDevice(i, "90") for i in (0, 1)}
    fake_cupy = types.ModuleType("cupy")
    fake_cupy.cuda = types.SimpleNamespace(
        Device=lambda id=None: devices[_FakeDevice.current if id is None else id],
        ExternalStream=_FakeExternalStream,
    )
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    monkeypatch.setattr(_execute, "gpu_device_of", lambda args: 1)
    seen = []

    def where():
        return _FakeDevice.current, _FakeExternalStream.current.get(_FakeDevice.current)

    def imported(function, args, stream=None):
        seen.append(("import", *where(), stream))
        return Native(np), {name: np.asarray(x) for name, x in args.items()}

    real_run = _execute._Plan.run

    def run(plan, *args):
        seen.append(("run", *where()))
        return real_run(plan, *args)

    monkeypatch.setattr(_execute, "to_native", imported)
    monkeypatch.setattr(_execute._Plan, "run", run)
    remembered = _execute.PLANS.values()
    a = np.stack([np.eye(3), 4 * np.eye(3)])
    L = blocksolve.cholesky(a, stream=0xBEEF)
    np.testing.assert_array_equal(L, np.stack([np.eye(3), 2 * np.eye(3)]))
    assert seen == [("import", 1, 0xBEEF, 0xBEEF), ("run", 1, 0xBEEF)]
    assert _FakeDevice.current == 0 and _FakeExternalStream.current.get(1) is None
    assert _execute.PLANS.values() == remembered


def test_torch_tensors_name_torchs_current_stream_on_their_device(monkeypatch):
    """The stream of a call on torch tensors is torch's current one on the tensors' device;
    torch's default stream (handle 0, the legacy stream cupy uses too) and other arrays
    name none."""
    import types

    from blocksolve._normalize import _caller_stream

    class Tensor:
        def __init__(self, device):
            self.device = device

    streams = {"cuda:0": 0, "cuda:1": 0xCAFE}
    torch = types.ModuleType("torch")
    torch.Tensor = Tensor
    torch.cuda = types.SimpleNamespace(
        current_stream=lambda device: types.SimpleNamespace(cuda_stream=streams[device])
    )
    monkeypatch.setitem(sys.modules, "torch", torch)
    assert _caller_stream(Tensor("cuda:1")) == 0xCAFE
    assert _caller_stream(Tensor("cuda:0")) is None
    assert _caller_stream(np.ones(2)) is None


class _FakeGpuInfo:
    """A GPU ``info`` array as far as the policy reads it."""

    def __init__(self, values, device):
        self.values, self.device, self.copies = np.asarray(values), device, 0

    def any(self):
        assert _FakeDevice.current == self.device.id, "reduced on its own device"
        return self.values.any()

    def get(self):
        self.copies += 1
        return self.values


def test_the_policy_copies_a_gpu_info_only_when_a_matrix_failed():
    """On a GPU the default policy reduces ``info`` there (one byte crosses) and copies the
    whole array only when something failed; with the array's device current (a Dask
    block's policy runs outside its call)."""
    from blocksolve._execute import failed_info

    clean = _FakeGpuInfo([0, 0, 0], _FakeDevice(1, "90"))
    assert failed_info(clean) is None and clean.copies == 0
    failing = _FakeGpuInfo([0, 2, 0], _FakeDevice(1, "90"))
    np.testing.assert_array_equal(failed_info(failing), [0, 2, 0])
    assert failing.copies == 1 and _FakeDevice.current == 0
    host = np.array([0, 0], np.int32)
    assert failed_info(host) is None and failed_info(host + 1) is not None


def test_gpu_arrays_on_two_devices_are_refused_by_name():
    from blocksolve._normalize import _check_one_device

    arrays = {"a": _FakeGpuArray(_FakeDevice(0, "90")), "b": _FakeGpuArray(_FakeDevice(1, "90"))}
    with pytest.raises(
        ValueError,
        match=r"^solve: arrays must all be on one GPU; got a on "
        r"device 0, b on device 1$",
    ):
        _check_one_device("solve", arrays)
    _check_one_device("solve", {"a": arrays["a"], "b": arrays["a"]})


def test_fallback_reaches_the_cpu_through_the_backend_seam(rng):
    from blocksolve.cuda import _plan

    a = np.eye(3)[None] * 4.0
    plan = _plan.FallbackPlan(_pattern(dims={"n": 3}), "test")
    c, info = plan.run((a,), np, {})
    np.testing.assert_allclose(c, 2 * np.eye(3)[None])
    source = open(_plan.__file__).read() + open(sys.modules["blocksolve._cache"].__file__).read()
    assert "from ..cpu" not in source and "from . import cpu" not in source


def test_launch_record_outputs_are_what_the_kernel_spec_declares():
    from blocksolve.cuda._launch import CubinKernel

    pattern = _pattern(routine="getrf", dims={"n": 4}, options={})
    record = _record(pattern, b"x", outputs=[[[4, 4], "<c16"], [[4], "<i4"]])
    kernel = CubinKernel(record, b"x")
    assert kernel.outputs == (((4, 4), np.dtype(np.complex128)), ((4,), np.dtype(np.int32)))
