"""Real cuSolverDx code generation and linking for sm_90, on a machine without a GPU.

blocksolve's CUDA path compiles a kernel per call pattern: nvmath-python's
descriptors, libmathdx code generation, numba-cuda typing, NVVM and the
nvJitLink link.  None of that needs a GPU, but ``import nvmath.device`` needs
a CUDA driver and numba-cuda asks the current device for its architecture.
This tool supplies both: a stand-in driver library (``tools/cudastub.c``:
version 13.0, no device) and answers for an H200 (sm_90, 227 KB of shared
memory per block) to the few "current device" queries.  Everything else --
blocksolve's plan, the real descriptors, code generation, the link, the
ABI check against the cubin, the disk caches -- is the production code.

Commands (each case runs the production ``CudaBackend.plan`` in this process)::

    python tools/offline_codegen.py stub DIR           # build DIR/libcuda.so.1
    python tools/offline_codegen.py list [--ci]        # case names
    python tools/offline_codegen.py compile CASE...    # cold or warm: compile what is not cached
    python tools/offline_codegen.py load CASE...       # cached only: no numba.cuda, no nvmath
    python tools/offline_codegen.py shapes FILE [CASE...]  # record launch shapes (JSON)
    python tools/offline_codegen.py timings FILE [CASE...] # cold/warm first calls (JSON)
    python tools/offline_codegen.py abi CASE...        # launch bytes: numba-cuda's == blocksolve's

``compile``, ``load``, ``shapes``, ``timings`` and ``abi`` need ``BLOCKSOLVE_CODEGEN_STUB``
(the built stub) and use ``BLOCKSOLVE_CACHE_DIR`` as usual; each prints one ``RESULT {json}``
line per case.  ``load`` stops where a GPU would load the module: the
kernel is ready to launch.  It is how the ``codegen`` tests
(``tests/test_codegen.py``) and the recorded first-call timings
(``benchmarks/results/``) are produced; nothing here runs a kernel.
"""

from __future__ import annotations

import time

_PROCESS_START = time.perf_counter()

import ctypes  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import types as pytypes  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent

# What an H200 reports: compute capability 9.0 (numba-cuda links sm_90a code
# from 9.0 on) and cudaDevAttrMaxSharedMemoryPerBlockOptin.
H200_CC = (9, 0)
H200_TARGET = "sm_90"
H200_SHARED_LIMIT = 232448


@dataclass(frozen=True)
class Case:
    """One call pattern of the grid; ``ci`` marks the subset CI compiles."""

    routine: str
    dims: dict
    dtype: str
    options: dict
    layouts: str
    ci: bool = False

    def pattern(self):
        """The call pattern the public function would make (derived dimensions included)."""
        from blocksolve._op import op_for, resolve_dims
        from blocksolve._pattern import CallPattern

        dims = resolve_dims(op_for(self.routine, self.options), dict(self.dims))
        return CallPattern.make(
            self.routine, dims, self.dtype, self.options, list(self.layouts), H200_TARGET
        )


_LOWER = {"lower": True, "clean": True}
_UPPER_RAW = {"lower": False, "clean": False}
_NO_ESTIMATE = {"condition": False}  # numpy.linalg.solve's and solve_triangular's calls

# Every kernel family, real and complex, small n (many matrices per block) and
# larger n.  The CI subset proves each family once and covers both dtypes kinds
# and both size regimes.
CASES = {
    "potrf-f64-n4-C": Case("potrf", {"n": 4}, "float64", _LOWER, "C", ci=True),
    "potrf-c128-n4-F-upper": Case("potrf", {"n": 4}, "complex128", _UPPER_RAW, "F"),
    "potrf-f32-n32-C": Case("potrf", {"n": 32}, "float32", _LOWER, "C"),
    "potrf-c128-n32-C": Case("potrf", {"n": 32}, "complex128", _LOWER, "C"),
    "potrf-f64-n96-C": Case("potrf", {"n": 96}, "float64", _LOWER, "C"),  # > 48 KB: opt-in
    "potrs-f64-n4k2": Case("potrs", {"n": 4, "k": 2}, "float64", {"lower": True}, "CC"),
    "potrs-c64-n32k1": Case(
        "potrs", {"n": 32, "k": 1}, "complex64", {"lower": False}, "CC", ci=True
    ),
    "getrf-f64-n4": Case("getrf", {"m": 4, "n": 4}, "float64", {}, "C"),
    "getrf-c128-n32-F": Case("getrf", {"m": 32, "n": 32}, "complex128", {}, "F", ci=True),
    "getrf-f64-3x5": Case("getrf", {"m": 3, "n": 5}, "float64", {}, "C"),
    "getrs-c128-n4k2-trans2": Case(
        "getrs", {"n": 4, "k": 2}, "complex128", {"trans": 2}, "CCC", ci=True
    ),
    "getrs-f64-n32k1-trans1": Case("getrs", {"n": 32, "k": 1}, "float64", {"trans": 1}, "CCC"),
    # complex A^T x = b: cuSolverDx's 'conj_transposed' on conjugated right-hand sides
    "getrs-c64-n4k2-trans1": Case("getrs", {"n": 4, "k": 2}, "complex64", {"trans": 1}, "CCC"),
    "gesv-f64-n4k1": Case("gesv", {"n": 4, "k": 1}, "float64", _NO_ESTIMATE, "CC", ci=True),
    "gesv-c64-n4k1": Case("gesv", {"n": 4, "k": 1}, "complex64", _NO_ESTIMATE, "CC"),
    "gesv-f64-n32k2": Case("gesv", {"n": 32, "k": 2}, "float64", _NO_ESTIMATE, "CC"),
    "gesv-c128-n32k2-F": Case("gesv", {"n": 32, "k": 2}, "complex128", _NO_ESTIMATE, "FF"),
    "trsm-f64-n4k3-FC": Case(
        "trsm",
        {"n": 4, "k": 3},
        "float64",
        {"lower": True, "trans": 1, "unit_diagonal": False, **_NO_ESTIMATE},
        "FC",
    ),
    "trsm-c128-n32k2-unit": Case(
        "trsm",
        {"n": 32, "k": 2},
        "complex128",
        {"lower": False, "trans": 2, "unit_diagonal": True, **_NO_ESTIMATE},
        "CC",
        ci=True,
    ),
    "geqrf-r-f64-6x4": Case("geqrf", {"m": 6, "n": 4}, "float64", {"mode": "r"}, "C"),
    "geqrf-raw-f32-6x4": Case("geqrf", {"m": 6, "n": 4}, "float32", {"mode": "raw"}, "C"),
    "geqrf-reduced-c128-6x4": Case(
        "geqrf", {"m": 6, "n": 4}, "complex128", {"mode": "reduced"}, "C", ci=True
    ),
    "geqrf-complete-c64-3x5-F": Case(
        "geqrf", {"m": 3, "n": 5}, "complex64", {"mode": "complete"}, "F"
    ),
    "geqrf-reduced-f64-32x16": Case(
        "geqrf", {"m": 32, "n": 16}, "float64", {"mode": "reduced"}, "C"
    ),
    "gels-over-f64-6x4k2": Case("gels", {"m": 6, "n": 4, "k": 2}, "float64", {}, "CC", ci=True),
    "gels-under-c128-3x5k1": Case("gels", {"m": 3, "n": 5, "k": 1}, "complex128", {}, "FC"),
    "gels-over-c64-32x16k1": Case("gels", {"m": 32, "n": 16, "k": 1}, "complex64", {}, "CC"),
    # 512 threads: without launch bounds ptxas gave each 204 registers, more than a block has.
    "gels-over-c128-128x64k4": Case("gels", {"m": 128, "n": 64, "k": 4}, "complex128", {}, "CC"),
    # eigh/eigvalsh (heev, nvmath's generic Solver), inv (getri), det/slogdet (getrf_det),
    # solve(assume_a='pos') (posv).
    "heev-f64-n4-C": Case(
        "heev", {"n": 4}, "float64", {"lower": True, "vectors": True}, "C", ci=True
    ),
    "heev-c128-n8-F-values-upper": Case(
        "heev", {"n": 8}, "complex128", {"lower": False, "vectors": False}, "F"
    ),
    "heev-f32-n32-C": Case("heev", {"n": 32}, "float32", {"lower": True, "vectors": True}, "C"),
    "getri-f64-n4": Case("getri", {"n": 4}, "float64", {}, "C", ci=True),
    "getri-c128-n32-F": Case("getri", {"n": 32}, "complex128", {}, "F"),
    "det-f64-n4": Case("getrf_det", {"n": 4}, "float64", {"log": False}, "C"),
    "slogdet-c64-n8-F": Case("getrf_det", {"n": 8}, "complex64", {"log": True}, "F", ci=True),
    "posv-f64-n4k1": Case("posv", {"n": 4, "k": 1}, "float64", {"lower": True}, "CC", ci=True),
    "posv-c128-n32k2-FC-upper": Case(
        "posv", {"n": 32, "k": 2}, "complex128", {"lower": False}, "FC"
    ),
    # svd (gesvd: geqrf, one-sided Jacobi in numba-cuda, unmqr for the vectors)
    "gesvd-f64-4x4-reduced": Case(
        "gesvd", {"m": 4, "n": 4}, "float64", {"vectors": True, "full": False}, "C", ci=True
    ),
    "gesvd-c128-6x4-full": Case(
        "gesvd", {"m": 6, "n": 4}, "complex128", {"vectors": True, "full": True}, "C"
    ),
    "gesvd-values-f32-3x5-F": Case(
        "gesvd", {"m": 3, "n": 5}, "float32", {"vectors": False, "full": False}, "F"
    ),
    "gesvd-c64-16x32-reduced": Case(
        "gesvd", {"m": 16, "n": 32}, "complex64", {"vectors": True, "full": False}, "C"
    ),
    # 64 KiB of complex128 buffers: above 48 KiB, the opt-in
    "gesvd-c128-32x32-full": Case(
        "gesvd", {"m": 32, "n": 32}, "complex128", {"vectors": True, "full": True}, "C"
    ),
    # float32 at odd sizes, one matrix per block (from 16 rows on): buffers whose sizes end
    # off a 16-byte boundary, each of the next starting on one
    "geqrf-reduced-f32-17x5": Case("geqrf", {"m": 17, "n": 5}, "float32", {"mode": "reduced"}, "C"),
    "gels-over-f32-17x5k1": Case("gels", {"m": 17, "n": 5, "k": 1}, "float32", {}, "CC"),
    "gesvd-f32-17x5-reduced": Case(
        "gesvd", {"m": 17, "n": 5}, "float32", {"vectors": True, "full": False}, "C"
    ),
}


class _Recorded(Exception):
    """The call pattern a public call makes, caught where its GPU kernel would be built."""


class _PatternRecorder:
    """A stand-in GPU backend that records the call pattern a call makes (as on an H200)."""

    name = "cuda"

    def target_of(self, operands):
        return H200_TARGET

    def from_host(self, array):
        return array

    def to_host(self, array):
        return array

    def runner(self, pattern):
        raise _Recorded(pattern)


def pattern_of_example(op, size=4, dtype="float64"):
    """The call pattern ``op``'s example call makes on ``size`` matrices of ``dtype``,
    C-ordered, when it runs on the GPU."""
    import numpy as np

    import blocksolve
    from blocksolve import _backends, _execute
    from blocksolve._op import call_example
    from blocksolve.cli.workloads import example_inputs

    dims = op.example.sizes(op, size)
    inputs = example_inputs(op, np.random.default_rng(0), (2,), dims, dtype)
    previous = _backends._MADE.get("cuda")
    _backends._MADE["cuda"] = _PatternRecorder()
    try:
        with blocksolve.use_device("cuda"):
            call_example(op, [inputs[spec.name] for spec in op.inputs])
    except _Recorded as recorded:
        return recorded.args[0]
    finally:
        _execute.PLANS.clear()  # its plans hold the recorder
        if previous is None:
            _backends._MADE.pop("cuda", None)
        else:
            _backends._MADE["cuda"] = previous
    raise RuntimeError(f"{op.label}: its example call made no GPU call pattern")


def cases():
    """:data:`CASES`, and for every routine with a CUDA kernel that none of them compiles,
    in CI's subset, the pattern its op's example call makes (float64, matrices of 4, C
    order): a new op family gets a case without an edit here."""
    from blocksolve._op import examples
    from blocksolve.cuda._plan import ROUTINES

    found, covered = dict(CASES), {case.routine for case in CASES.values()}
    for op in examples():
        if op.routine in covered or op.routine not in ROUTINES:
            continue
        pattern = pattern_of_example(op)
        name = f"{pattern.routine}-f64-{op.example.name or op.name}-example"
        found[name] = Case(
            pattern.routine,
            dict(pattern.dims),
            "float64",
            dict(pattern.options),
            "".join(pattern.layouts),
            ci=True,
        )
        covered.add(op.routine)
    return found


# --- the machine without a GPU --------------------------------------------------------


def build_stub(directory):
    """Compile ``tools/cudastub.c`` to ``directory/libcuda.so.1``; return its path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "libcuda.so.1"
    compiler = os.environ.get("CC", "cc")
    subprocess.run(
        [
            compiler,
            "-shared",
            "-fPIC",
            "-O2",
            "-Wl,-soname,libcuda.so.1",
            "-o",
            str(target),
            str(HERE / "cudastub.c"),
        ],
        check=True,
    )
    return target


def load_stub_driver():
    """Load the stand-in driver before anything looks for libcuda.so.1."""
    path = os.environ.get("BLOCKSOLVE_CODEGEN_STUB")
    if not path or not Path(path).is_file():
        sys.exit(
            "set BLOCKSOLVE_CODEGEN_STUB to a stub driver built with "
            "`python tools/offline_codegen.py stub DIR`"
        )
    if "numba.cuda" in sys.modules or "nvmath" in sys.modules or "cuda.bindings" in sys.modules:
        raise RuntimeError("the stub driver must be loaded before CUDA libraries are imported")
    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)


def answer_device_queries():
    """Answer numba-cuda's and nvmath's "current device" questions as an H200 would."""
    import numba.cuda.codegen as codegen
    import numba.cuda.dispatcher as dispatcher
    import nvmath.device  # noqa: F401  (needs the stub driver)
    import nvmath.device.common_cuda as common_cuda
    import nvmath.device.cusolverdx_numba as glue
    from nvmath.device.common_cuda import CodeType, ComputeCapability

    from blocksolve.cuda._compile import target_cc

    cc_with_suffix = target_cc(H200_TARGET)
    dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=H200_CC)
    codegen.CUDACodeLibrary._ensure_cc = lambda self, cc: cc_with_suffix if cc is None else cc
    code_type = CodeType("lto", ComputeCapability(*cc_with_suffix))
    common_cuda.get_default_code_type = lambda: code_type
    glue.get_default_code_type = lambda: code_type


def record_solver_functions(code_cache):
    """Record every cuSolverDx function a kernel asks for (generated or from the LTO-IR cache)."""
    import nvmath.device.cusolverdx_numba as glue

    from blocksolve._compat.nvmath import wrap_solver_codegen
    from blocksolve.cuda._code_cache import solver_key_fields

    wrap_solver_codegen(code_cache.wrap)
    cached_compile = glue.compile_solver_execute
    calls = []

    def recording(solver, code_type, execution_api):
        misses = code_cache.misses
        start = time.perf_counter()
        result = cached_compile(solver, code_type, execution_api)
        calls.append(
            {
                **solver_key_fields(solver),
                "generated": code_cache.misses > misses,
                "seconds": round(time.perf_counter() - start, 3),
            }
        )
        return result

    recording.__wrapped_by_blocksolve__ = True
    glue.compile_solver_execute = recording
    return calls


# --- one case ---------------------------------------------------------------------------


def _backend():
    from blocksolve.cuda import CudaBackend

    return CudaBackend(target=H200_TARGET, shared_limit=H200_SHARED_LIMIT)


def _describe_descriptors(pattern, record):
    """The cuSolverDx functions behind the kernel's descriptors (cheap: traits pinned)."""
    from blocksolve.cuda._code_cache import solver_key_fields
    from blocksolve.cuda._plan import ROUTINES
    from blocksolve.cuda.kernels import _descriptors

    traits = _descriptors.Traits(record["batches_per_block"], tuple(record["block_dim"]))
    described = {}
    recipe = ROUTINES[pattern.routine].descriptors
    for role, descriptor in _descriptors.build(pattern, recipe, traits).items():
        # nvmath's Solver per device method (_execute: blocksolve's GenericSolver wrapper)
        for part in ("_factorize", "_solve", "_multiply", "_execute"):
            solver = getattr(descriptor, part, None)
            if solver is not None:
                described[f"{role}.{part.lstrip('_')}"] = solver_key_fields(solver)
    return described


def plan_parts(plan):
    """The plans a plan runs: its own, or those it is made of (lstsq's ``GelsPlan``: the
    gels kernel's, then the SVD's)."""
    return tuple(getattr(plan, "parts", (plan,)))


def _launch_record(kernel):
    return {k: v for k, v in kernel.record.items() if k not in ("pattern", "abi")}


def _result(name, plan, seconds):
    kernel = getattr(plan, "kernel", None)
    record = None if kernel is None else _launch_record(kernel)
    return {
        "case": name,
        "plan": type(plan).__name__,
        "fallback": plan.fallback,
        "plan_s": round(seconds, 3),
        "timings": {k: round(v, 3) for k, v in plan.timings.items()},
        "record": record,
        "parts": [
            {
                "routine": part.pattern.routine,
                "dims": dict(part.pattern.dims),
                "dtype": str(part.pattern.dtype),
                "plan": type(part).__name__,
                "fallback": part.fallback,
                "record": _launch_record(part.kernel) if hasattr(part, "kernel") else None,
            }
            for part in plan_parts(plan)
        ],
        "cubin_bytes": None if kernel is None else len(kernel.cubin),
        "abi_params": None
        if kernel is None
        else sum(5 + 2 * a[2] if a[0] == "array" else 1 for a in kernel.abi),
    }


def compile_cases(names):
    """Plan every case, compiling what the disk cache does not hold."""
    load_stub_driver()
    start = time.perf_counter()
    answer_device_queries()
    setup_s = time.perf_counter() - start
    backend = _backend()
    _, code_cache = backend.stores()
    calls = record_solver_functions(code_cache)
    for name in names:
        case = cases()[name]
        pattern = case.pattern()
        del calls[:]
        start = time.perf_counter()
        plan = backend.plan(pattern)
        result = _result(name, plan, time.perf_counter() - start)
        result["setup_s"] = round(setup_s, 3)
        result["solver_functions"] = list(calls)
        if result["record"] is not None:
            result["descriptors"] = {
                f"{part.pattern.routine}:{role}": fields
                for part in plan_parts(plan)
                if hasattr(part, "kernel")
                for role, fields in _describe_descriptors(part.pattern, part.kernel.record).items()
            }
        yield result


def load_cases(names):
    """Plan every case from the disk cache only: what a new process on a GPU does."""
    load_stub_driver()
    imports_start = time.perf_counter()
    import cupy  # noqa: F401  (the caller of a GPU call has it loaded)

    import blocksolve  # noqa: F401

    imports_s = time.perf_counter() - imports_start
    backend = _backend()
    for name in names:
        start = time.perf_counter()
        plan = backend.plan(cases()[name].pattern())
        result = _result(name, plan, time.perf_counter() - start)
        result["imports_s"] = round(imports_s, 3)
        result["since_process_start_s"] = round(time.perf_counter() - _PROCESS_START, 3)
        result["loaded_modules"] = sorted(
            m for m in ("numba.cuda", "nvmath", "nvmath.device") if m in sys.modules
        )
        yield result


# --- the launch ABI against numba-cuda's own launcher ----------------------------------------

# Device addresses the stand-in arrays claim: distinct, 64-bit, never dereferenced.
_STAND_IN_ADDRESS = 0x7F5A_0000_0000
_STAND_IN_BATCH = 37  # a partial last block for every launch shape


class StandInDeviceArray:
    """A device array for numba-cuda's launcher on a machine without a device.

    numba-cuda takes an object with ``__cuda_memory__`` as device memory and reads
    the strided memory view it offers; this one describes a host array's shape,
    strides and dtype at a made-up device address.  ``export_strides=False`` leaves
    the strides out where the array is C-contiguous, as cupy's
    ``__cuda_array_interface__`` does, so that numba-cuda derives them itself.
    """

    __cuda_memory__ = True

    def __init__(self, host, address, export_strides=True):
        self.host = host
        self.address = address
        self.export_strides = export_strides or not host.flags.c_contiguous

    @property
    def _strided_memory_view_shim(self):
        from numba.cuda.cudadrv.devicearray import _StridedLayoutShim, _StridedMemoryViewShim

        flags = self.host.flags
        return _StridedMemoryViewShim(
            ptr=self.address,
            shape=self.host.shape,
            dtype=self.host.dtype,
            size=self.host.size,
            _layout=_StridedLayoutShim(
                strides_in_bytes=self.host.strides if self.export_strides else None,
                is_contiguous_c=flags.c_contiguous,
                is_contiguous_f=flags.f_contiguous,
                is_contiguous_any=flags.c_contiguous or flags.f_contiguous,
            ),
        )


def _stand_in_operands(pattern, kernel, batch):
    """Host arrays shaped as a launch of ``kernel`` receives them: inputs in the
    pattern's layouts, outputs C-contiguous, ``info``."""
    import numpy as np

    from blocksolve._op import op_for

    dims = dict(pattern.dims)
    arrays = []
    for spec, layout in zip(op_for(pattern.routine, pattern.options).inputs, pattern.layouts):
        dtype = np.int32 if spec.kind == "index" else pattern.np_dtype
        core = tuple(dims[symbol] for symbol in spec.core)
        if layout == "F" and len(core) == 2:  # a stack of column-major matrices
            arrays.append(np.zeros((batch, *core[::-1]), dtype).swapaxes(1, 2))
        else:
            arrays.append(np.zeros((batch, *core), dtype))
    arrays += [np.zeros((batch, *core), dtype) for core, dtype in kernel.outputs]
    arrays.append(np.zeros(batch, np.int32))
    return arrays


def _field_names(abi):
    """The name of every kernel parameter ``abi`` expands to, e.g. ``arg2.strides[1]``."""
    names = []
    for index, spec in enumerate(abi):
        if spec[0] != "array":
            names.append(f"arg{index} ({spec[0]})")
            continue
        names += [f"arg{index}.{field}" for field in ("meminfo", "parent", "nitems", "itemsize")]
        names.append(f"arg{index}.data")
        names += [f"arg{index}.shape[{k}]" for k in range(spec[2])]
        names += [f"arg{index}.strides[{k}]" for k in range(spec[2])]
    return names


def _bytes_at(addresses, params):
    """The bytes the driver copies for each entry of a cubin's parameter table: ``size``
    bytes from where the launch's ``kernelParams[ordinal]`` points."""
    return [ctypes.string_at(addresses[ordinal], size) for ordinal, _offset, size in params]


def numba_launch_bytes(abi, arrays, batch, params, export_strides):
    """What numba-cuda's own launch of a kernel of ``abi`` passes, per cubin parameter.

    ``_Kernel._prepare_args`` (the dispatcher's per-argument conversion, fed stand-in
    device arrays) builds the argument list, and cuda.core's ``ParamHolder`` -- what
    ``cuda.core.launch`` hands ``cuLaunchKernelEx`` -- turns it into parameter pointers.
    """
    from cuda.core._kernel_arg_handler import ParamHolder
    from numba.cuda.dispatcher import _Kernel

    from blocksolve.cuda import _abi

    values = [
        StandInDeviceArray(x, _STAND_IN_ADDRESS + 0x100_0000 * i, export_strides)
        for i, x in enumerate(arrays)
    ]
    kernel_args = []
    launcher = pytypes.SimpleNamespace(extensions=[])  # blocksolve's kernels declare none
    for ty, value in zip(_abi.numba_signature(abi), [*values, batch], strict=True):
        _Kernel._prepare_args(launcher, ty, value, 0, [], kernel_args)
    if len(kernel_args) != len(params):
        return None, f"numba-cuda passes {len(kernel_args)} parameters, the cubin has {len(params)}"
    holder = ParamHolder(kernel_args)
    addresses = (ctypes.c_void_p * len(kernel_args)).from_address(holder.ptr)
    return _bytes_at(addresses, params), None


def blocksolve_launch_bytes(abi, arrays, batch, params, pack):
    """What blocksolve's launch through cupy passes, per cubin parameter: ``pack``'s
    scalars as cupy's launcher holds them (``CScalar``, whose ``ptr`` goes into the
    kernel's parameter array)."""
    from cupy._core._scalar import CScalar

    addresses = {id(x): _STAND_IN_ADDRESS + 0x100_0000 * i for i, x in enumerate(arrays)}
    packed = pack(abi, arrays, batch, lambda x: addresses[id(x)])
    if len(packed) != len(params):
        return None, f"blocksolve passes {len(packed)} parameters, the cubin has {len(params)}"
    scalars = [CScalar(value) for value in packed]  # kept alive while their bytes are read
    return _bytes_at([scalar.ptr for scalar in scalars], params), None


def compare_launch_bytes(abi, arrays, batch, params, pack):
    """Every parameter where blocksolve's launch would differ from numba-cuda's, by name
    (both ways numba-cuda may see an array's strides), or why they cannot be compared."""
    names = _field_names(abi)
    ours, problem = blocksolve_launch_bytes(abi, arrays, batch, params, pack)
    if problem:
        return [problem]
    differences = []
    for export_strides in (True, False):
        theirs, problem = numba_launch_bytes(abi, arrays, batch, params, export_strides)
        if problem:
            return [problem]
        how = "strides exported" if export_strides else "strides derived by numba-cuda"
        differences += [
            f"{name} ({how}): numba-cuda {int.from_bytes(t, 'little')}, "
            f"blocksolve {int.from_bytes(o, 'little')}"
            for name, t, o in zip(names, theirs, ours)
            if t != o
        ]
    return differences


def _mutant(rewrite):
    """A wrong ``pack``: blocksolve's, with ``rewrite(names, values, arrays)`` applied."""
    from blocksolve.cuda import _abi

    def pack(abi, arrays, batch, pointer):
        values = list(_abi.pack(abi, arrays, batch, pointer))
        rewrite(_field_names(abi), values, arrays)
        return tuple(values)

    return pack


def _strides_in_elements(names, values, arrays):
    for i, name in enumerate(names):
        if ".strides[" in name:
            itemsize = arrays[int(name[3 : name.index(".")])].itemsize
            values[i] = type(values[i])(int(values[i]) // itemsize)


def _nitems_and_itemsize_swapped(names, values, arrays):
    for i, name in enumerate(names):
        if name.endswith(".nitems"):
            values[i], values[i + 1] = values[i + 1], values[i]


# Wrong packings the comparison must catch: a unit slip, and a reordering of 8-byte fields
# that the parameter table alone (ordinal, offset, size) cannot see.
MUTANTS = {
    "strides in elements": _strides_in_elements,
    "nitems and itemsize swapped": _nitems_and_itemsize_swapped,
}


def prove_abi(names):
    """Plan every case (compiling what is not cached) and compare, parameter by parameter of
    its cubin, the bytes numba-cuda's launcher would pass with those blocksolve passes;
    then check that each of :data:`MUTANTS` would be caught."""
    from blocksolve.cuda import _abi, _elf

    for result in compile_cases(names):
        name = result["case"]
        plan = _backend().plan(cases()[name].pattern())  # in memory since compile_cases
        kernel = plan.kernel
        params = _elf.kernel_params(kernel.cubin, kernel.entry)
        arrays = _stand_in_operands(plan.pattern, kernel, _STAND_IN_BATCH)
        args = (kernel.abi, arrays, _STAND_IN_BATCH, params)
        yield {
            "case": name,
            "plan": result["plan"],
            "params": len(params),
            "param_sizes": sorted({size for _, _, size in params}),
            "differences": compare_launch_bytes(*args, _abi.pack),
            "mutants_caught": {
                mutant: bool(compare_launch_bytes(*args, _mutant(rewrite)))
                for mutant, rewrite in MUTANTS.items()
            },
        }


def libmathdx_version():
    """The installed libmathdx's version (the one that chooses launch shapes), or None."""
    from importlib import metadata

    for distribution in ("nvidia-libmathdx-cu13", "nvidia-libmathdx-cu12"):
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            pass
    return None


def write_shapes(path, names):
    """Record cuSolverDx's launch shape of each case in ``path``, under the installed
    libmathdx's version (the simulator tests run every recorded shape)."""
    path = Path(path)
    by_version = json.loads(path.read_text()) if path.exists() else {}
    shapes = by_version.setdefault(libmathdx_version(), {})
    for result in compile_cases(names):
        record = result["record"]
        if record is not None:
            shapes[result["case"]] = {
                "batches_per_block": record["batches_per_block"],
                "block_dim": record["block_dim"],
            }
            print(result["case"], shapes[result["case"]], flush=True)
    path.write_text(json.dumps(by_version, indent=1, sort_keys=True) + "\n")


def _child(command, name, cache_dir):
    """Run ``command name`` in a new process; return its result and the process's wall time."""
    env = {**os.environ, "BLOCKSOLVE_CACHE_DIR": str(cache_dir)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, command, name],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    wall = time.perf_counter() - start
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return {**json.loads(line.removeprefix("RESULT ")), "process_wall_s": round(wall, 3)}


def measure_first_calls(path, names, work_dir):
    """Cold, template-changed and warm first calls per case, each in a new process."""
    import platform
    import shutil
    from importlib import metadata

    runs = []
    for name in names:
        cache = Path(work_dir) / name
        shutil.rmtree(cache, ignore_errors=True)
        load_before = os.getloadavg()[0]
        cold = _child("compile", name, cache)  # nothing cached
        warm = _child("load", name, cache)  # the same pattern, a new process
        shutil.rmtree(cache / "cuda" / "kernels")  # e.g. a new blocksolve release:
        relink = _child("compile", name, cache)  # traits and generated code cached
        runs.append(
            {
                "case": name,
                "load_average_before": round(load_before, 2),
                "cold": cold,
                "warm_new_process": warm,
                "kernel_uncached_codegen_cached": relink,
            }
        )
        print(
            f"{name}: cold {cold['process_wall_s']:.1f}s (plan {cold['plan_s']:.1f}s), "
            f"warm ready {warm['since_process_start_s']:.2f}s after start "
            f"(process {warm['process_wall_s']:.2f}s), relink {relink['plan_s']:.1f}s",
            flush=True,
        )
    versions = {
        d: metadata.version(d)
        for d in (
            "nvmath-python",
            "nvidia-libmathdx-cu13",
            "numba-cuda",
            "numba",
            "cupy-cuda13x",
            "nvidia-nvjitlink",
            "nvidia-cuda-nvrtc",
        )
    }
    document = {
        "what": "first-call costs of the CUDA path, measured without a GPU "
        "(stand-in driver, H200 target sm_90) up to a launchable kernel",
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "versions": versions,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "runs": runs,
    }
    Path(path).write_text(json.dumps(document, indent=1) + "\n")


def main(argv):
    command, *rest = argv or ["help"]
    known = cases() if command in ("list", "timings", "shapes", "compile", "load", "abi") else {}
    if command == "stub":
        print(build_stub(rest[0] if rest else "."))
    elif command == "list":
        print("\n".join(n for n, c in known.items() if c.ci or "--ci" not in rest))
    elif command == "timings":
        measure_first_calls(
            rest[0],
            rest[1:] or [n for n, c in known.items() if c.ci],
            os.environ.get("TMPDIR", "/tmp") + "/blocksolve-first-calls",
        )
    elif command == "shapes":
        write_shapes(rest[0], rest[1:] or list(known))
    elif command in ("compile", "load", "abi"):
        unknown = [n for n in rest if n not in known]
        if unknown:
            sys.exit(f"unknown cases {unknown}; see `list`")
        run = {"compile": compile_cases, "load": load_cases, "abi": prove_abi}[command]
        for result in run(rest):
            print("RESULT " + json.dumps(result), flush=True)
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
