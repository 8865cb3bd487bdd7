"""The CUDA backend without a GPU: offline sm_90 compilation of the kernels, import
hygiene, and the error a GPU call gives without a driver.

The compilation tests build every routine's kernel (the ``kernel`` its family
registers, from ``blocksolve.cuda.kernels``) on the simulator's stand-in
descriptors, made typable here with device methods that check their
arguments like nvmath's dispatch does (value-typed arrays for matrices and
tau, int32 arrays for ipiv and info), and compile them to PTX for sm_90 with
NVVM.  That catches what the simulator accepts but the GPU compiler rejects
(untypable code, Python-only constructs, wrong argument kinds).  For complex
dtypes the shared memory uses nvmath's own device types (float32x2/float64x2,
with their casts from and to numba's complex), which load without a driver
even though ``import nvmath.device`` as a whole fails.  Not covered: the
cuSolverDx code itself.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import types as pytypes
from pathlib import Path

import numpy as np
import pytest

import blocksolve
from _helpers import gpu_available, tool_module
from blocksolve._pattern import CallPattern


def _simulator_enabled():
    import numba

    return bool(numba.config.ENABLE_CUDASIM)


# --- import hygiene and errors ----------------------------------------------


def test_import_loads_no_gpu_library():
    """Neither blocksolve nor the CUDA backend's family modules: a process whose kernels
    are in the disk cache launches them without numba.cuda, nvmath or cupy imported."""
    code = (
        "import sys, numpy as np, blocksolve, blocksolve.cuda\n"
        "from blocksolve.cuda._plan import ROUTINES; ROUTINES['potrf']  # every family\n"
        "blocksolve.cholesky(np.eye(3)); blocksolve.cache_info()\n"
        "gpu = ('cupy', 'cupyx', 'numba.cuda', 'nvmath')\n"
        "print(sorted(m for m in sys.modules if m == 'numba.cuda' or m.split('.')[0] in gpu\n"
        "             or m.startswith(('numba.cuda.', 'nvmath.'))))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", f"imported GPU modules: {result.stdout}"


def test_every_declared_routine_is_registered_once_with_each_backend():
    from blocksolve import cpu, cuda
    from blocksolve._op import all_ops
    from blocksolve.cpu._backend import ROUTINES as ON_CPU
    from blocksolve.cuda._plan import ON_HOST
    from blocksolve.cuda._plan import ROUTINES as ON_GPU

    declared = {op.routine for op in all_ops()}
    assert set(ON_CPU) == set(ON_GPU) | set(ON_HOST) == declared
    assert not set(ON_GPU) & set(ON_HOST)
    assert all(isinstance(routine, cuda.Routine) for routine in ON_GPU.values())
    assert all(isinstance(routine, cpu.Routine) for routine in ON_CPU.values())
    with pytest.raises(RuntimeError, match="the CPU routine 'potrf' is registered twice"):
        cpu.register("potrf", None, None)
    with pytest.raises(RuntimeError, match="the CUDA routine 'potrf' is registered twice"):
        cuda.register("potrf", None, None, None)
    for routine in ON_HOST:
        with pytest.raises(RuntimeError, match=f"the CUDA routine '{routine}' is registered twice"):
            cuda.register(routine, None, None, None)


@pytest.mark.skipif(gpu_available(), reason="a usable GPU is present")
def test_gpu_call_without_driver_raises_clear_error():
    with blocksolve.use_device("cuda"):
        with pytest.raises(
            RuntimeError,
            match=r"^blocksolve: (the CUDA backend needs|no usable "
            r"CUDA GPU|numba-cuda cannot)",
        ):
            blocksolve.cholesky(np.eye(2))


@pytest.fixture
def driver_with_a_device(monkeypatch):
    """Pretend the driver reports a device (the checks after it are what is tested)."""
    import blocksolve.cuda._backend as backend_module

    monkeypatch.setattr(backend_module, "probe_driver", lambda: None)
    return backend_module


def test_gpu_backend_names_missing_cupy(driver_with_a_device, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(RuntimeError, match=r"needs cupy; install the CUDA extra"):
        driver_with_a_device.gpu_backend()


def test_gpu_backend_refuses_the_simulator(monkeypatch):
    import numba

    from blocksolve.cuda import gpu_backend

    monkeypatch.setattr(numba.config, "ENABLE_CUDASIM", 1)
    with pytest.raises(RuntimeError, match=r"simulator is enabled \(NUMBA_ENABLE_CUDASIM=1\)"):
        gpu_backend()


@pytest.mark.skipif(gpu_available(), reason="a usable GPU is present")
def test_gpu_backend_says_first_that_there_is_no_gpu(monkeypatch):
    if _simulator_enabled():
        pytest.skip("the simulator check comes first")
    from blocksolve.cuda import gpu_backend

    monkeypatch.setitem(sys.modules, "cupy", None)  # no package hint before the GPU verdict
    with pytest.raises(RuntimeError, match=r"^blocksolve: no usable CUDA GPU: "):
        gpu_backend()


def test_driver_probe_reports_a_driver_without_devices(tmp_path):
    """The stand-in driver of tools/cudastub.c: loadable, but cuInit finds no device."""
    compiler = os.environ.get("CC", "cc")
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}) to build the stand-in driver")
    tools = Path(__file__).resolve().parents[1] / "tools"
    subprocess.run(
        [
            compiler,
            "-shared",
            "-fPIC",
            "-Wl,-soname,libcuda.so.1",
            "-o",
            str(tmp_path / "libcuda.so.1"),
            str(tools / "cudastub.c"),
        ],
        check=True,
    )
    code = "from blocksolve.cuda import probe_driver; print(probe_driver())"
    env = {**os.environ, "LD_LIBRARY_PATH": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "cuInit returned 100" in result.stdout


def test_compiling_without_the_toolchain_names_the_package(monkeypatch):
    import importlib.util

    from blocksolve.cuda import _plan

    real_find_spec = importlib.util.find_spec
    # numba-cuda present (so that the README's plain test extra, without it, gets the same
    # answer), nvmath-python missing.
    present = {"numba_cuda": object(), "nvmath": None}
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: present[name] if name in present else real_find_spec(name, *a),
    )
    with pytest.raises(_plan.ToolchainMissing, match=r"needs nvmath-python; install the CUDA"):
        _plan._require_toolchain()


# --- offline compilation ------------------------------------------------------

# Device methods of the descriptors and their argument kinds, as nvmath's
# cuSolverDx dispatch tables declare them (compile-time leading dimensions).
_METHODS = {
    ("CholeskySolver", "factorize"): ("value", "int32"),
    ("CholeskySolver", "solve"): ("value", "value"),
    ("LUPivotSolver", "factorize"): ("value", "int32", "int32"),
    ("LUPivotSolver", "solve"): ("value", "int32", "value"),
    ("TriangularSolver", "solve"): ("value", "value"),
    ("QRFactorize", "factorize"): ("value", "value"),
    ("QRMultiply", "multiply"): ("value", "value", "value"),
}


def _register_standin_types():
    """Make the simulator's stand-in descriptors typable in CUDA kernels (once)."""
    import _cuda_simulated as _simulated
    from numba import types
    from numba.core.errors import TypingError
    from numba.cuda.cudaimpl import lower_constant
    from numba.cuda.extending import overload_method, register_model
    from numba.extending import models, typeof_impl
    from numba.np.numpy_support import from_dtype

    class StandInType(types.Type):
        def __init__(self, descriptor):
            self.descriptor = descriptor
            super().__init__(name=f"StandIn({type(descriptor).__name__}@{id(descriptor):x})")

    for cls in {type_name for type_name, _ in _METHODS}:
        typeof_impl.register(getattr(_simulated, cls))(lambda val, c: StandInType(val))
    register_model(StandInType)(models.OpaqueModel)

    @lower_constant(StandInType)
    def _constant(context, builder, ty, pyval):
        return context.get_dummy_value()

    def check(self, method, args):
        cls = type(self.descriptor).__name__
        kinds = _METHODS.get((cls, method))
        if kinds is None:
            raise TypingError(f"{cls} has no device method {method}")
        given = [
            a for a in args if a not in (None, types.none) and not isinstance(a, types.Omitted)
        ]
        if len(given) != len(kinds):
            raise TypingError(f"{cls}.{method} takes {len(kinds)} arrays; got {given}")
        value_type = self.descriptor.value_type
        value = getattr(value_type, "_numba_type", None) or from_dtype(np.dtype(value_type))
        for kind, arg in zip(kinds, given):
            want = value if kind == "value" else types.int32
            if not (isinstance(arg, types.Array) and arg.ndim == 1 and arg.dtype == want):
                raise TypingError(f"{cls}.{method}: expected a 1-D {want} array; got {arg}")
        return len(kinds)

    def register(method):
        def overload(self, x0, x1, x2=None):
            arity = check(self, method, (x0, x1, x2))
            if arity == 2:

                def impl(self, x0, x1, x2=None):
                    x0[0] = x0[0]
                    x1[0] = x1[0]
            else:

                def impl(self, x0, x1, x2=None):
                    x0[0] = x0[0]
                    x1[0] = x1[0]
                    x2[0] = x2[0]

            return impl

        overload_method(StandInType, method, target="cuda")(overload)

    for method in {m for _, m in _METHODS}:
        register(method)


def _nvmath_device_types():
    """nvmath's ``complex64``/``complex128`` device types, or ``None``.

    ``import nvmath.device`` needs a driver, but it registers its numba
    vector types (and their casts) before it fails; they stay usable.
    """
    try:
        import nvmath.device  # noqa: F401
    except Exception:
        pass
    return sys.modules.get("nvmath.device.types")


@pytest.fixture(scope="module")
def offline_cuda():
    pytest.importorskip(
        "numba_cuda", reason="offline compilation needs numba-cuda: pip install -e '.[sim]'"
    )
    """NVVM available, simulator off, device queries answered with sm_90.

    The stand-ins' complex value type becomes nvmath's device type when
    available, as the real descriptors' ``value_type`` is.
    """
    if _simulator_enabled():
        pytest.skip("offline compilation needs numba-cuda's real compiler (simulator enabled)")
    from numba.cuda.cudadrv import nvvm

    if not nvvm.is_available():
        pytest.skip("NVVM is not available: install numba-cuda[cu13]")
    import _cuda_simulated as _simulated
    import numba.cuda.dispatcher as dispatcher

    nvmath_types = _nvmath_device_types()
    numpy_value_type = _simulated._Descriptor.value_type

    def value_type(self):
        dtype = numpy_value_type.fget(self)
        if dtype.kind == "c" and nvmath_types is not None:
            return nvmath_types.complex64 if dtype == np.complex64 else nvmath_types.complex128
        return dtype

    with pytest.MonkeyPatch.context() as patch:
        # Device functions ask the current device for its compute capability;
        # without a driver, answer for the target we compile for.
        patch.setattr(
            dispatcher,
            "get_current_device",
            lambda: pytypes.SimpleNamespace(compute_capability=(9, 0)),
        )
        patch.setattr(_simulated._Descriptor, "value_type", property(value_type))
        if not getattr(offline_cuda, "registered", False):
            _register_standin_types()
            offline_cuda.registered = True
        yield nvmath_types


def _operand(core, dtype, layout):
    a = np.zeros((2, *core), dtype)
    if layout == "F":
        a = np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)
    return a


_CASES = {
    "potrf-f64-C-lower": ("potrf", {"n": 4}, "float64", {"lower": True, "clean": True}, "C"),
    "potrf-c128-F-upper": ("potrf", {"n": 5}, "complex128", {"lower": False, "clean": False}, "F"),
    "potrs-f32": ("potrs", {"n": 4, "k": 2}, "float32", {"lower": True}, "CC"),
    "getrf-c64-F": ("getrf", {"m": 6, "n": 6, "p": 6}, "complex64", {}, "F"),
    "getrf-wide-f64": ("getrf", {"m": 3, "n": 5, "p": 3}, "float64", {}, "C"),
    "getrs-f64-trans2": ("getrs", {"n": 4, "k": 3}, "float64", {"trans": 2}, "CCF"),
    "getrs-c128-trans1": ("getrs", {"n": 4, "k": 2}, "complex128", {"trans": 1}, "CCC"),
    "gesv-c128": ("gesv", {"n": 8, "k": 1}, "complex128", {}, "CC"),
    "trsm-f64-FC": (
        "trsm",
        {"n": 5, "k": 2},
        "float64",
        {"lower": True, "trans": 1, "unit_diagonal": False},
        "FC",
    ),
    "trsm-c64-unit": (
        "trsm",
        {"n": 3, "k": 4},
        "complex64",
        {"lower": False, "trans": 2, "unit_diagonal": True},
        "CC",
    ),
    "trsm-c64-trans1-F": (
        "trsm",
        {"n": 4, "k": 2},
        "complex64",
        {"lower": True, "trans": 1, "unit_diagonal": False},
        "FF",
    ),
    "geqrf-reduced": ("geqrf", {"m": 6, "n": 4}, "float64", {"mode": "reduced"}, "C"),
    "geqrf-complete-c128-F": ("geqrf", {"m": 3, "n": 5}, "complex128", {"mode": "complete"}, "F"),
    "geqrf-r-f32": ("geqrf", {"m": 4, "n": 4}, "float32", {"mode": "r"}, "C"),
    "geqrf-raw-c64": ("geqrf", {"m": 5, "n": 3}, "complex64", {"mode": "raw"}, "C"),
    "gels-over-f64": ("gels", {"m": 6, "n": 4, "k": 2}, "float64", {}, "CC"),
    "gels-over-c64-FF": ("gels", {"m": 5, "n": 3, "k": 2}, "complex64", {}, "FF"),
    "gels-under-c128": ("gels", {"m": 3, "n": 5, "k": 1}, "complex128", {}, "FC"),
    "slogdet-f32": ("getrf_det", {"n": 4}, "float32", {"log": True}, "C"),
    "det-c128-F": ("getrf_det", {"n": 3}, "complex128", {"log": False}, "F"),
    "gesvd-reduced-f64": (
        "gesvd",
        {"m": 4, "n": 4, "p": 4},
        "float64",
        {"vectors": True, "full": False},
        "C",
    ),
    "gesvd-full-wide-c64-F": (
        "gesvd",
        {"m": 3, "n": 5, "p": 3},
        "complex64",
        {"vectors": True, "full": True},
        "F",
    ),
    "gesvd-values-c128": (
        "gesvd",
        {"m": 5, "n": 3, "p": 3},
        "complex128",
        {"vectors": False, "full": False},
        "C",
    ),
}

_INPUTS = {
    "potrf": ("nn",),
    "potrs": ("nn", "nk"),
    "getrf": ("mn",),
    "getrs": ("nn", "n", "nk"),
    "gesv": ("nn", "nk"),
    "trsm": ("nn", "nk"),
    "geqrf": ("mn",),
    "gels": ("mn", "mk"),
    "getrf_det": ("nn",),
    "gesvd": ("mn",),
}


@pytest.mark.parametrize("case", list(_CASES))
def test_kernel_template_compiles_for_sm90(offline_cuda, case):
    import _cuda_simulated as _simulated
    import numba
    from numba import cuda

    from blocksolve.cuda._plan import ROUTINES
    from blocksolve.cuda.kernels import _descriptors

    routine, dims, dtype, options, layouts = _CASES[case]
    pattern = CallPattern.make(routine, dims, dtype, options, list(layouts), "sm_90")
    recipe = ROUTINES[routine]
    traits = _descriptors.resolve_traits(pattern, recipe.descriptors, _simulated, 2)
    descriptors = _descriptors.build(pattern, recipe.descriptors, traits, _simulated)
    spec = recipe.kernel(descriptors, pattern)

    inputs = []
    for symbols, layout in zip(_INPUTS[routine], layouts):
        core = tuple(dims[s] for s in symbols)
        kind = np.int32 if routine == "getrs" and symbols == "n" else dtype
        inputs.append(_operand(core, kind, layout))
    outputs = [np.zeros((2, *core), out_dtype) for core, out_dtype in spec.outputs]
    args = [*inputs, *outputs, np.zeros(2, np.int32), 2]
    signature = tuple(numba.typeof(x) for x in args)

    ptx, _ = cuda.compile_ptx(spec.kernel.py_func, signature, cc=(9, 0))
    assert ".target sm_90" in ptx
    assert ".extern .shared" in ptx, "expected one dynamic shared-memory allocation"
    assert "bar.sync" in ptx
    # The dynamic allocation's base is declared on a 16-byte boundary, whatever its element
    # type (the buffers carved from it are 16-byte aligned relative to it).
    alignments = re.findall(r"\.extern \.shared \.align (\d+) ", ptx)
    assert alignments and set(alignments) == {"16"}, alignments


@pytest.mark.parametrize("batches_per_block", [1, 3])
def test_every_shared_buffer_starts_on_a_16_byte_boundary(monkeypatch, batches_per_block):
    """Every kernel of the codegen layer's cases (each family, real and complex, odd sizes
    in float32 among them), built on the stand-in descriptors: each shared buffer it uses
    starts on a 16-byte boundary of the allocation, none overlaps another, and the
    allocation is the plan's dynamic shared memory.  At least one buffer ends off a
    16-byte boundary, so the alignment is exercised, not given by the sizes."""
    pytest.importorskip("numba_cuda", reason="the kernel factories need numba-cuda")
    import _cuda_simulated as _simulated

    from blocksolve.cuda import _plan
    from blocksolve.cuda.kernels import _skeleton as _kernels

    carved = []
    carve = _kernels.carve

    def recording(value_dtype, **sizes):
        bounds, nbytes = carve(value_dtype, **sizes)
        carved.append((np.dtype(value_dtype), bounds, nbytes))
        return bounds, nbytes

    monkeypatch.setattr(_kernels, "carve", recording)
    unaligned_ends = 0
    for name, case in tool_module("offline_codegen").CASES.items():
        del carved[:]
        plan = _plan.build(case.pattern(), _simulated, batches_per_block=batches_per_block)
        assert plan.fallback is None, (name, plan.fallback)
        assert carved, f"{name}: no kernel built"
        assert plan.kernel.shared_bytes == carved[0][2], name
        for dtype, bounds, nbytes in carved:
            itemsize = {
                **dict.fromkeys(_kernels.Shared._fields[:5], dtype.itemsize),
                "eigenvalues": np.finfo(dtype).dtype.itemsize,
                "ipiv": 4,
                "info": 4,
            }
            used = sorted(
                (start * itemsize[buffer], stop * itemsize[buffer], buffer)
                for buffer, (start, stop) in bounds._asdict().items()
                if stop > start
            )
            for start, stop, buffer in used:
                assert start % 16 == 0, f"{name}: {buffer} starts at byte {start}"
                unaligned_ends += stop % 16 != 0
            for (_, stop, first), (start, _, second) in zip(used, used[1:]):
                assert stop <= start, f"{name}: {first} overlaps {second}"
            assert used[-1][1] <= nbytes, name
    assert unaligned_ends


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_the_svd_kernels_shared_memory_bound_is_a_lower_bound(dtype):
    """lstsq skips building an SVD kernel whose bound from its pattern alone exceeds the
    device's shared memory: the bound must never exceed what the kernel takes."""
    pytest.importorskip("numba_cuda", reason="the kernel factories need numba-cuda")
    import _cuda_simulated as _simulated

    from blocksolve.cuda import _plan
    from blocksolve.cuda.kernels import svd

    for (m, n), vectors, full in [
        ((4, 4), True, False),
        ((7, 3), True, True),
        ((3, 7), True, True),
        ((5, 2), False, False),
        ((17, 17), True, False),
    ]:
        options = {"vectors": vectors, "full": full}
        pattern = CallPattern.make(
            "gesvd", {"m": m, "n": n, "p": min(m, n)}, dtype, options, ["C"], "sm_90"
        )
        plan = _plan.build(pattern, _simulated, batches_per_block=1)
        bound = svd.least_shared_bytes(pattern)
        assert bound <= plan.kernel.shared_bytes, (m, n, options)
        assert bound >= plan.kernel.shared_bytes // 2, "too loose to be of use"


# --- the disk cache of generated device code ------------------------------------


def _fake_solver(**overrides):
    fields = dict(
        function="potrf",
        size=(4, 4, 1),
        precision=np.float64,
        execution="Block",
        sm=(9, 0, ""),
        arrangement=("row_major", "col_major"),
        transpose_mode=None,
        side=None,
        diag=None,
        fill_mode="lower",
        batches_per_block=8,
        data_type="real",
        leading_dimensions=(4, 4),
        block_dim=(64, 1, 1),
        job=None,
    )
    return pytypes.SimpleNamespace(**{**fields, **overrides})


def _fake_compile(calls):
    def compile_execute(solver, code_type, execution_api):
        calls.append(solver.function)
        code = pytypes.SimpleNamespace(isa_version=(8, 8), data=b"LTO" * 100)
        return code, f"symbol_{solver.function}"

    return compile_execute


def _make_code(code_type, isa_version, data):
    return pytypes.SimpleNamespace(code_type=code_type, isa_version=tuple(isa_version), data=data)


def test_code_cache_generates_once_across_processes(tmp_path):
    from blocksolve.cuda._code_cache import CodeCache

    calls = []
    versions = {"nvmath-python": "1.0.0", "driver": 13000}
    first = CodeCache(tmp_path, versions=versions).wrap(_fake_compile(calls), _make_code)
    code, symbol = first(_fake_solver(), ("lto", (9, 0)), "compiled_leading_dim")
    assert calls == ["potrf"] and symbol == "symbol_potrf"
    # A new process: a new cache object over the same directory.
    again = CodeCache(tmp_path, versions=versions)
    code2, symbol2 = again.wrap(_fake_compile(calls), _make_code)(
        _fake_solver(), ("lto", (9, 0)), "compiled_leading_dim"
    )
    assert calls == ["potrf"] and again.hits == 1
    assert (code2.data, code2.isa_version, symbol2) == (code.data, (8, 8), symbol)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


@pytest.mark.parametrize(
    "change",
    [
        {"solver": {"fill_mode": "upper"}},
        {"solver": {"size": (5, 5, 1)}},
        {"solver": {"precision": np.float32}},
        {"solver": {"arrangement": ("col_major",) * 2}},
        {"solver": {"sm": (10, 0, "")}},
        {"api": "runtime_leading_dim"},
        {"versions": {"nvmath-python": "1.0.1", "driver": 13000}},
        {"versions": {"nvmath-python": "1.0.0", "driver": 13010}},
    ],
)
def test_code_cache_key_covers_what_shapes_the_code(tmp_path, change):
    from blocksolve.cuda._code_cache import CodeCache

    base = {"nvmath-python": "1.0.0", "driver": 13000}
    key = CodeCache(tmp_path, versions=base).key(
        _fake_solver(), ("lto", (9, 0)), "compiled_leading_dim"
    )
    other = CodeCache(tmp_path, versions=change.get("versions", base)).key(
        _fake_solver(**change.get("solver", {})),
        ("lto", (9, 0)),
        change.get("api", "compiled_leading_dim"),
    )
    assert key != other


def test_code_cache_drops_broken_entries_and_stays_bounded(tmp_path):
    from blocksolve.cuda._code_cache import CodeCache

    cache = CodeCache(tmp_path, max_bytes=1000, versions={})
    cache.store("a", {"symbol": "s"}, b"x" * 400)
    (tmp_path / "b.ltoir").write_bytes(b"\x05\x00")  # truncated
    assert cache.load("b") is None and not (tmp_path / "b.ltoir").exists()
    os.utime(tmp_path / "a.ltoir", (1, 1))  # oldest
    cache.store("c", {"symbol": "s"}, b"y" * 400)
    cache.store("d", {"symbol": "s"}, b"z" * 400)
    assert cache.load("a") is None  # evicted first
    assert cache.load("d")[1] == b"z" * 400
    assert sum(p.stat().st_size for p in tmp_path.glob("*.ltoir")) <= 1000
