"""Benchmark cases, peers and timing shared by ``benchmarks/`` and ``python -m blocksolve bench``.

One table drives both front ends:

* :data:`WORKLOADS`, one per op declared with an example (:mod:`blocksolve.ops`):
  which core dimensions a matrix size means, how to build well-conditioned
  inputs (:mod:`blocksolve.cli.workloads`, the tests' generators) and how to
  call blocksolve;
* :data:`PEERS` says how numpy and scipy (the same call on the function of the
  same name), torch and JAX (CPU) and cupy and torch (GPU) compute the same
  thing on the same data;
* :data:`GRIDS` are named lists of (ops, dtypes, sizes, batches);
* :func:`prepare`, :func:`schedule` and :func:`measure` time one
  (case, library) the same way everywhere: the first call (numba or CUDA
  code generation, or loading it from the disk cache) is timed on its own
  and reported as ``first_call_s``; the timed calls wait for the device
  (``synchronize`` inside the timed call on a GPU).  :func:`side_by_side`
  times several libraries in interleaved rounds, :func:`speed_up` compares
  them round by round.

Rates count every input read once and every output written once
(:func:`bytes_per_matrix`, derived from the op declarations), and the floating-point
operations LAPACK counts for the work (:func:`flops_per_matrix`, the declarations'
examples); they are compared with the machine's own limits measured in the same
process: a plain copy (:func:`copy_bandwidth`) and a large matrix product in the
case's dtype (:func:`gemm_rate`) -- a roofline.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import itertools
import math
import multiprocessing
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np
import scipy
import scipy.linalg  # noqa: F401 - scipy.linalg.<function> for the references

import blocksolve

from .. import _flops
from .._op import Op, examples, resolve_dims
from ..cpu import _compiled
from ..cpu._backend import ROUTINES as CPU_ROUTINES
from ..cpu._jit import SPECIALIZE_UP_TO
from .workloads import example_inputs

__all__ = [
    "Workload",
    "WORKLOADS",
    "ALL_OPS",
    "FUNCTIONS",
    "workloads_of",
    "DTYPES",
    "SIZES",
    "Case",
    "Part",
    "Grid",
    "GRIDS",
    "cases",
    "Peer",
    "PEERS",
    "peers",
    "libraries",
    "Unavailable",
    "Timed",
    "prepare",
    "schedule",
    "measure",
    "side_by_side",
    "speed_up",
    "case_costs",
    "estimate",
    "summarize",
    "record",
    "copy_timed",
    "copy_bandwidth",
    "flops_per_matrix",
    "gemm_timed",
    "gemm_rate",
    "warm_up",
    "gpu_available",
    "load_records",
    "FORMAT",
]

FORMAT = "blocksolve-bench/1"

SIZES = (2, 4, 8, 16, 32, 64, 128)
DTYPES = ("float32", "float64", "complex128")

SMALL_BATCH = 16  # latency: fewer matrices than a GPU has SMs
# Per-call cost: one matrix, then ten and a hundred, where NumPy's own per-call
# cost (a few microseconds) is what a loop of small calls pays.
CALL_COST_BATCHES = (1, 10, 100)
GPU_BYTES = 200e6  # more than a GPU's L2 cache can flatter (H200: 60 MB)
CPU_BYTES = 4e6  # keeps a full CPU run (and Python-loop peers) in minutes
CPU_BATCH_RANGE = (64, 4096)
# Largest batch given to peers that loop over the matrices, in Python or inside the
# library (e.g. one cuSOLVER geqrf per matrix): beyond it one call takes many seconds.
LOOP_LIMIT = {"cpu": {}, "cuda": {"python": 256, "library": 20_000}}
SLOW_CALL_S = 1.0  # calls slower than this are timed once
POOL = 1024  # distinct matrices generated; larger batches repeat them
GPU_COPY_BYTES = 1 << 30
CPU_COPY_BYTES = 64 << 20
# Order of the matrix product that stands for the machine's floating-point peak: large
# enough for the BLAS to reach its top speed, small enough to take ~0.1 s a call.
GPU_GEMM_N = 8192
CPU_GEMM_N = 1600


# --------------------------------------------------------------------------- workloads


@dataclass(frozen=True)
class Workload:
    """How one op is benchmarked: its declaration's :class:`~blocksolve._op.Example`.

    Attributes
    ----------
    declaration : blocksolve._op.Op
    """

    declaration: Op

    @property
    def op(self):
        """The workload's name: the public function's, or the example's own
        (``solve_pos``, ``solve(assume_a='pos')``)."""
        return self.declaration.example.name or self.declaration.name

    @property
    def function(self):
        """The public function the workload calls."""
        return self.declaration.name

    @property
    def label(self):
        """What the workload calls, in the public API's words (``solve(assume_a='pos')``)."""
        return self.declaration.label if self.declaration.example.name else self.op

    def dims(self, size):
        """Core dimensions for matrices of ``size`` (``{'n': 8, 'k': 1}``)."""
        return self.declaration.example.sizes(self.declaration, size)

    def make(self, rng, count, dims, dtype):
        """Host inputs of ``count`` matrices, by operand name."""
        return example_inputs(self.declaration, rng, (count,), dims, dtype)

    def run(self, library, inputs):
        """The call being measured, ``library`` (blocksolve) in place of its function."""
        function = getattr(library, self.declaration.name)
        operands = [inputs[spec.name] for spec in self.declaration.inputs]
        example = self.declaration.example
        return example.call(function, *operands) if example.call else function(*operands)


WORKLOADS = {w.op: w for w in map(Workload, examples())}
ALL_OPS = tuple(WORKLOADS)
# The public functions the workloads call, in the same order.
FUNCTIONS = tuple(dict.fromkeys(w.function for w in WORKLOADS.values()))


def workloads_of(functions):
    """The workloads (keys of :data:`WORKLOADS`) that call any of the public ``functions``:
    ``solve`` gives ``solve`` and ``solve_pos``, ``solve(assume_a='pos')``."""
    return tuple(op for op, w in WORKLOADS.items() if w.function in functions)


def bytes_per_matrix(op, dims, dtype):
    """Bytes one matrix of ``op`` reads and writes (each operand and output once)."""
    decl = WORKLOADS[op].declaration
    dims = resolve_dims(decl, dict(dims))
    dtype = np.dtype(dtype)
    size_of = {
        "inexact": dtype.itemsize,
        "real": np.finfo(dtype).dtype.itemsize,
        "complex": np.result_type(dtype, np.complex64).itemsize,
        "int32": 4,
        "index": 4,
    }
    elements = lambda core: math.prod(dims[symbol] for symbol in core)  # noqa: E731
    return sum(elements(x.core) * size_of[x.kind] for x in decl.inputs) + sum(
        elements(y.core) * size_of[y.dtype] for y in decl.outputs
    )


def flops_per_matrix(op, dims, dtype):
    """Real floating-point operations LAPACK counts for one matrix of ``op`` (``None``
    where the op's example does not declare them)."""
    decl = WORKLOADS[op].declaration
    if decl.example.flops is None:
        return None
    return _flops.of_dtype(decl.example.flops(resolve_dims(decl, dict(dims))), dtype)


# --------------------------------------------------------------------------- cases and grids


@dataclass(frozen=True)
class Case:
    """One benchmark group: an op on ``batch`` matrices of one size and dtype on one device."""

    op: str
    dtype: str
    size: int
    batch: int
    device: str
    batch_kind: str = "fixed"

    @property
    def workload(self):
        return WORKLOADS[self.op]

    @property
    def dims(self):
        return self.workload.dims(self.size)

    @property
    def bytes(self):
        return self.batch * bytes_per_matrix(self.op, self.dims, self.dtype)

    @property
    def flops(self):
        per_matrix = flops_per_matrix(self.op, self.dims, self.dtype)
        return None if per_matrix is None else self.batch * per_matrix

    @property
    def group(self):
        return f"{self.op} {self.dtype} n={self.size} batch={self.batch} {self.device}"

    @property
    def id(self):
        return f"{self.op}-{self.dtype}-n{self.size}-b{self.batch}-{self.device}"


def batch_for(kind, device, op, size, dtype):
    """Number of matrices for a batch ``kind`` (``'large'``, ``'small'`` or an int)."""
    if not isinstance(kind, str):
        return int(kind)
    if kind == "small":
        return SMALL_BATCH
    per_matrix = bytes_per_matrix(op, WORKLOADS[op].dims(size), dtype)
    if device == "cuda":
        return math.ceil(GPU_BYTES / per_matrix)
    low, high = CPU_BATCH_RANGE
    return min(max(round(CPU_BYTES / per_matrix), low), high)


@dataclass(frozen=True)
class Part:
    """A product of ops x dtypes x sizes x batch kinds."""

    ops: tuple = ALL_OPS
    dtypes: tuple = DTYPES
    sizes: tuple = SIZES
    batches: tuple = ("large", "small")


@dataclass(frozen=True)
class Grid:
    """Named benchmark grid: parts run in order (most important first), and a time per case."""

    parts: tuple
    min_time: float = 0.1

    def override(self, **fields):
        """The same grid with ``ops``/``dtypes``/``sizes``/``batches`` replaced in every part."""
        fields = {k: tuple(v) for k, v in fields.items() if v}
        return replace(self, parts=tuple(replace(p, **fields) for p in self.parts))


_CORE = ("cholesky", "solve", "qr", "lstsq")
_OTHERS = tuple(op for op in ALL_OPS if op not in _CORE)
GRIDS = {
    # For tests of the front ends: seconds, not minutes.
    "tiny": Grid((Part(("cholesky",), ("float64",), (4,), (32,)),), min_time=0.002),
    # `bench --quick`: the README's first command; about a minute on 2 cores, compilation
    # included (less once `python -m blocksolve warm --sizes 4 16 --dtypes float64` has run).
    "quick": Grid(
        (
            Part(_CORE, ("float64",), (4, 16), ("large",)),
            Part(("cholesky", "solve"), ("float64",), (4,), CALL_COST_BATCHES),
        ),
        min_time=0.05,
    ),
    # The per-call cost of every function on one 4x4 matrix and a few more.
    "call-cost": Grid((Part(ALL_OPS, ("float64",), (4,), CALL_COST_BATCHES),), min_time=0.05),
    # Where blocksolve overtakes NumPy as the batch grows (README: the crossover).
    "crossover": Grid(
        (Part(_CORE, ("float64",), (4, 8), (1, 2, 5, 10, 20, 30, 50, 100, 200)),), min_time=0.2
    ),
    # Few mid-size matrices per call, where NumPy's LAPACK takes some calls (cpu/_lapack.py).
    "few-matrices": Grid(
        (
            Part(
                ("cholesky", "solve", "qr", "lstsq", "inv", "det", "eigh"),
                ("float64",),
                (16, 32, 48),
                (1, 4, 16, 64),
            ),
        ),
        min_time=0.05,
    ),
    "full": Grid((Part(), Part(ALL_OPS, ("float64",), (4,), CALL_COST_BATCHES))),
    # How far the kernels are from this machine's limits (docs: performance, the roofline):
    # batches that stream far more than the caches hold where n <= 8, compute-bound from 16.
    "roofline": Grid(
        tuple(
            Part(ops, dtypes, (size,), (batch,))
            for ops, dtypes, sizes_and_batches in (
                (
                    ("cholesky", "inv", "slogdet", "solve"),
                    ("float64",),
                    ((4, 100_000), (8, 50_000), (16, 20_000), (32, 5_000)),
                ),
                (("qr", "eigh"), ("float64",), ((16, 10_000), (32, 2_000))),
                (("cholesky", "solve"), ("float32",), ((16, 20_000), (32, 5_000))),
            )
            for size, batch in sizes_and_batches
        ),
        min_time=0.2,
    ),
    # The GPU check's first comparison with cuSOLVER (tools/gpu-check.sh): under a minute with
    # its kernels compiled.  cupy's QR and least squares loop over the matrices (LOOP_LIMIT),
    # so they take fixed batches that keep a cuSOLVER row.
    "gpu-cusolver": Grid(
        (
            Part(("cholesky",), ("float64",), (4, 8, 16, 32), ("large",)),
            Part(("solve", "eigh"), ("float64",), (8, 32), ("large",)),
            Part(("qr",), ("float64",), (8, 32), (4096,)),
            Part(("lstsq",), ("float64",), (8, 32), (256,)),
        ),
        min_time=0.05,
    ),
    # The one-shot GPU check: most telling cases first, so a time budget cuts the least useful.
    "gpu-check": Grid(
        (
            Part(ALL_OPS, ("float64",), (8, 32), ("large",)),
            Part(_CORE, ("float64",), (2, 4, 16, 64, 128), ("large",)),
            Part(("cholesky", "solve"), ("float32", "complex128"), (8, 32), ("large",)),
            Part(_CORE, ("float64",), (8, 32), ("small",)),
            Part(_OTHERS, ("float64",), (2, 4, 16, 64, 128), ("large",)),
            Part(
                ("cholesky", "solve", "qr"), ("float32", "complex128"), (4, 16, 64, 128), ("large",)
            ),
        ),
        min_time=0.05,
    ),
}


def cases(grid, devices):
    """The cases of ``grid`` on each of ``devices``, in order, without repeats."""
    ordered = {}  # a dict keeps the first occurrence of each case, in order
    for part in grid.parts:
        for device, op, dtype, size, kind in itertools.product(
            devices, part.ops, part.dtypes, part.sizes, part.batches
        ):
            case = Case(
                op,
                np.dtype(dtype).name,
                size,
                batch_for(kind, device, op, size, dtype),
                device,
                kind if isinstance(kind, str) else "fixed",
            )
            ordered.setdefault(case, None)
    return list(ordered)


# --------------------------------------------------------------------------- peers


class Unavailable(Exception):
    """This library cannot run this case here (not installed, not implemented, too slow)."""


class _Loop:
    """Python loop over the matrices of a batch, for libraries that cannot batch."""

    looped = "python"

    def __init__(self, function, arrays, kwargs=None):
        self.function, self.arrays, self.kwargs = function, arrays, kwargs or {}

    def __call__(self):
        batch = len(self.arrays[0])
        return [self.function(*(x[i] for x in self.arrays), **self.kwargs) for i in range(batch)]


class _Internal:
    """A call that takes a stack but loops over its matrices inside (one cuSOLVER call each)."""

    looped = "library"

    def __init__(self, thunk):
        self.thunk = thunk

    def __call__(self):
        return self.thunk()


def _loop(function, *arrays, **kwargs):
    return _Loop(function, arrays, kwargs)


def _per_matrix(make):
    return lambda d: _Internal(make(d))


def _batched_or_loop(function, *arrays, **kwargs):
    """``function`` on the whole batch if it computes stacks (its result on two matrices is
    its result on one, stacked), else a Python loop."""
    try:
        batched = _first(function(*(x[:2] for x in arrays), **kwargs))
        single = _first(function(*(x[0] for x in arrays), **kwargs))
        if batched.shape == (2, *single.shape):
            return functools.partial(function, *arrays, **kwargs)
    except Exception:  # noqa: BLE001 - any refusal of a stack means: loop instead
        pass
    return _Loop(function, arrays, kwargs)


def _first(result):
    return result[0] if isinstance(result, (tuple, list)) else result


def _cla():
    import cupyx.scipy.linalg

    return cupyx.scipy.linalg


def _cupy():
    import cupy

    return cupy


def _torch(d):
    import torch

    return torch, {k: torch.from_dlpack(v) for k, v in d.items()}


def _cupy_cho_solve(c, b):
    solve = _cla().solve_triangular
    return solve(c, solve(c, b, lower=True), lower=True, trans=2)


def _torch_call(name, *keys, prepare=None, **kwargs):
    """Thunk factory for a ``torch`` function on the inputs ``keys`` (zero-copy DLPack)."""

    def make(d):
        torch, t = _torch(d)
        if prepare:
            t = prepare(t)
        function = functools.reduce(getattr, name.split("."), torch)
        return functools.partial(function, *(t[k] for k in keys), **kwargs)

    return make


@dataclass(frozen=True)
class Peer:
    """Another library that computes the same results on the same data.

    Attributes
    ----------
    name : str
        Label in results.
    device : str
        ``'cpu'`` or ``'cuda'``.
    requires : str
        Module that must be importable.
    calls : mapping of str to callable
        Op -> ``make(inputs)`` returning a zero-argument thunk (preparation,
        such as 0- to 1-based pivots, happens here, outside the timing).
    alternative : bool
        A library a user would call instead of blocksolve on a batch, shown in
        ``bench``'s table (SciPy, which loops over a batch in Python, and
        blocksolve's own two-call paths are only in the pytest benchmarks).
    """

    name: str
    device: str
    requires: str
    calls: Mapping = field(default_factory=dict)
    alternative: bool = True

    def supports(self, case):
        return (
            case.device == self.device
            and case.op in self.calls
            and importlib.util.find_spec(self.requires) is not None
        )


def _cupy_solve_pos(a, b):
    return _cupy_cho_solve(_cupy().linalg.cholesky(a), b)


def _torch_solve_pos(d):
    torch, t = _torch(d)
    return lambda: torch.cholesky_solve(t["b"], torch.linalg.cholesky(t["a"]))


def _torch_calls(device):
    """torch.linalg on ``device``: batched, except QR on a GPU (one cuSOLVER call per
    matrix) and lstsq, whose only CUDA driver is ``gels``."""
    cuda = device == "cuda"
    qr = _torch_call("linalg.qr", "a")
    return {
        "cholesky": _torch_call("linalg.cholesky", "a"),
        "cho_factor": _torch_call("linalg.cholesky", "a"),
        "cho_solve": _torch_call("cholesky_solve", "b", "c"),
        "lu_factor": _torch_call("linalg.lu_factor", "a"),
        "lu_solve": _torch_call(
            "linalg.lu_solve", "lu", "piv", "b", prepare=lambda t: {**t, "piv": t["piv"] + 1}
        ),  # 1-based
        "solve": _torch_call("linalg.solve", "a", "b"),
        "solve_triangular": _torch_call("linalg.solve_triangular", "a", "b", upper=False),
        "qr": _per_matrix(qr) if cuda else qr,
        "lstsq": _torch_call("linalg.lstsq", "a", "b", **({"driver": "gels"} if cuda else {})),
        "eigh": _torch_call("linalg.eigh", "a"),
        "eigvalsh": _torch_call("linalg.eigvalsh", "a"),
        "eig": _torch_call("linalg.eig", "a"),
        "eigvals": _torch_call("linalg.eigvals", "a"),
        "svd": _torch_call("linalg.svd", "a"),
        "inv": _torch_call("linalg.inv", "a"),
        "det": _torch_call("linalg.det", "a"),
        "slogdet": _torch_call("linalg.slogdet", "a"),
        "solve_pos": _torch_solve_pos,
    }


@functools.cache
def _jax():
    import jax

    jax.config.update("jax_enable_x64", True)  # float64 and complex128 as asked
    return jax


def _jax_call(function, *keys):
    """Thunk factory: ``function(*inputs[keys])`` for one matrix, vectorised over the batch
    with ``jax.vmap`` and compiled with ``jax.jit`` (the first, untimed call compiles it);
    each call waits for its result (JAX dispatches asynchronously)."""

    def make(d):
        jax = _jax()
        compiled = jax.jit(jax.vmap(function))
        args = [jax.device_put(d[k]) for k in keys]
        return lambda: jax.block_until_ready(compiled(*args))

    return make


def _jnp():
    return _jax().numpy.linalg


def _jsl():
    _jax()
    import jax.scipy.linalg

    return jax.scipy.linalg


_JAX_CALLS = {
    "cholesky": _jax_call(lambda a: _jnp().cholesky(a), "a"),
    "cho_factor": _jax_call(lambda a: _jsl().cho_factor(a)[0], "a"),
    "cho_solve": _jax_call(lambda c, b: _jsl().cho_solve((c, True), b), "c", "b"),
    "lu_factor": _jax_call(lambda a: _jsl().lu_factor(a), "a"),
    "lu_solve": _jax_call(lambda lu, piv, b: _jsl().lu_solve((lu, piv), b), "lu", "piv", "b"),
    "solve": _jax_call(lambda a, b: _jnp().solve(a, b), "a", "b"),
    "solve_triangular": _jax_call(lambda a, b: _jsl().solve_triangular(a, b, lower=True), "a", "b"),
    "qr": _jax_call(lambda a: _jnp().qr(a), "a"),
    "lstsq": _jax_call(lambda a, b: _jnp().lstsq(a, b), "a", "b"),
    "eigh": _jax_call(lambda a: _jnp().eigh(a), "a"),
    "eigvalsh": _jax_call(lambda a: _jnp().eigvalsh(a), "a"),
    "eig": _jax_call(lambda a: _jnp().eig(a), "a"),
    "eigvals": _jax_call(lambda a: _jnp().eigvals(a), "a"),
    "svd": _jax_call(lambda a: _jnp().svd(a), "a"),
    "inv": _jax_call(lambda a: _jnp().inv(a), "a"),
    "det": _jax_call(lambda a: _jnp().det(a), "a"),
    "slogdet": _jax_call(lambda a: _jnp().slogdet(a), "a"),
    "solve_pos": _jax_call(lambda a, b: _jsl().solve(a, b, assume_a="pos"), "a", "b"),
}


def _blocksolve_cho(d):
    """blocksolve's own two-call path, the reference of ``solve(assume_a='pos')``."""
    return lambda: blocksolve.cho_solve(blocksolve.cho_factor(d["a"]), d["b"])


def _reference_calls(library, standins=None):
    """Workload -> thunk maker for the workloads whose reference is ``library``'s
    (``'numpy'``, ``'scipy'``): the reference function itself, called as the workload's
    example calls blocksolve's, on the whole batch where it takes stacks, else in a
    Python loop.  ``standins``: the function to call instead for other workloads
    (NumPy has no positive-definite solve; ``solve_pos`` is timed against its
    ``solve``)."""
    calls = {}
    for key, workload in WORKLOADS.items():
        reference = workload.declaration.reference
        if key in (standins or {}):
            function = standins[key]
            calls[key] = lambda d, f=function: functools.partial(f, d["a"], d["b"])
        elif reference.partition(".")[0] == library:
            function = functools.reduce(getattr, reference.split(".")[1:], _LIBRARIES[library])
            calls[key] = functools.partial(_example_call, workload, function)
    return calls


_LIBRARIES = {"numpy": np, "scipy": scipy}


def _example_call(workload, function, inputs):
    operands = [inputs[spec.name] for spec in workload.declaration.inputs]
    call = workload.declaration.example.call
    if call is not None:
        function = functools.partial(call, function)
    return _batched_or_loop(function, *operands)


PEERS = (
    Peer("numpy", "cpu", "numpy", _reference_calls("numpy", {"solve_pos": np.linalg.solve})),
    # SciPy 1.16+ accepts stacks but loops over them in Python.
    Peer("scipy", "cpu", "scipy", _reference_calls("scipy"), alternative=False),
    # cuSOLVER/cuBLAS through cupy: potrfBatched, getrfBatched+getrsBatched, trsmBatched;
    # QR is one geqrf+orgqr per matrix; lu_factor/lu_solve/lstsq take one matrix at a time.
    Peer(
        "cupy",
        "cuda",
        "cupy",
        {
            "cholesky": lambda d: functools.partial(_cupy().linalg.cholesky, d["a"]),
            "cho_factor": lambda d: functools.partial(_cupy().linalg.cholesky, d["a"]),
            "cho_solve": lambda d: _batched_or_loop(_cupy_cho_solve, d["c"], d["b"]),
            "lu_factor": lambda d: _batched_or_loop(_cla().lu_factor, d["a"]),
            "lu_solve": lambda d: _batched_or_loop(
                lambda lu, piv, b: _cla().lu_solve((lu, piv), b), d["lu"], d["piv"], d["b"]
            ),
            "solve": lambda d: functools.partial(_cupy().linalg.solve, d["a"], d["b"]),
            "solve_triangular": lambda d: _batched_or_loop(
                _cla().solve_triangular, d["a"], d["b"], lower=True
            ),
            "qr": _per_matrix(lambda d: functools.partial(_cupy().linalg.qr, d["a"])),
            "lstsq": lambda d: _loop(_cupy().linalg.lstsq, d["a"], d["b"]),
            # syevjBatched (cupy's batched eigh), getrf/getriBatched, batched getrf for det.
            "eigh": lambda d: functools.partial(_cupy().linalg.eigh, d["a"]),
            "eigvalsh": lambda d: functools.partial(_cupy().linalg.eigvalsh, d["a"]),
            # cuSOLVER's Xgeev, one matrix per call (CuPy 14).
            "eig": _per_matrix(lambda d: functools.partial(_cupy().linalg.eig, d["a"])),
            "eigvals": _per_matrix(lambda d: functools.partial(_cupy().linalg.eigvals, d["a"])),
            "svd": lambda d: functools.partial(_cupy().linalg.svd, d["a"]),
            "inv": lambda d: functools.partial(_cupy().linalg.inv, d["a"]),
            "det": lambda d: functools.partial(_cupy().linalg.det, d["a"]),
            "slogdet": lambda d: functools.partial(_cupy().linalg.slogdet, d["a"]),
            "solve_pos": lambda d: _batched_or_loop(_cupy_solve_pos, d["a"], d["b"]),
        },
    ),
    Peer("torch", "cuda", "torch", _torch_calls("cuda")),
    Peer("torch", "cpu", "torch", _torch_calls("cpu")),
    Peer("jax", "cpu", "jax", _JAX_CALLS),
    # Not a peer but the goal of the fused kernel: cho_factor then cho_solve, two calls.
    Peer("blocksolve-cho", "cpu", "blocksolve", {"solve_pos": _blocksolve_cho}, False),
    Peer("blocksolve-cho", "cuda", "blocksolve", {"solve_pos": _blocksolve_cho}, False),
)
_PEERS = {(p.name, p.device): p for p in PEERS}


def peers(case, alternatives_only=False):
    """Installed peers that compute ``case.op`` on ``case.device``: numpy, scipy, torch and
    jax on the CPU, cupy and torch on the GPU (with ``alternatives_only``, only those a
    user would call instead, see :class:`Peer`)."""
    return [p.name for p in PEERS if p.supports(case) and (p.alternative or not alternatives_only)]


def libraries(case):
    """``'blocksolve'`` and every peer of ``case``."""
    return ["blocksolve", *peers(case)]


@functools.cache
def gpu_available():
    """True when cupy sees a CUDA device (never initialises CUDA without a driver)."""
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        import cupy

        return bool(cupy.cuda.is_available())
    except Exception:
        return False


# --------------------------------------------------------------------------- timing


@functools.lru_cache(maxsize=1)  # one case's data at a time (GPU batches are 200 MB)
def inputs(case):
    """The inputs of ``case`` on its device, identical for every library."""
    rng = np.random.default_rng(20261130)
    count = min(case.batch, POOL)
    host = case.workload.make(rng, count, case.dims, np.dtype(case.dtype))
    xp = _cupy() if case.device == "cuda" else np
    reps = -(-case.batch // count)
    return {
        name: xp.ascontiguousarray(
            xp.broadcast_to(xp.asarray(x), (reps, *x.shape)).reshape(-1, *x.shape[1:])[: case.batch]
        )
        for name, x in host.items()
    }


def _synchronize(device):
    if device == "cuda":
        return _cupy().cuda.runtime.deviceSynchronize
    return lambda: None


@dataclass
class Timed:
    """A call ready to be timed: ``call()`` runs once and waits for the device."""

    call: Callable
    first_call_s: float
    looped: str | bool = False


def _thunk(case, library, data):
    if library == "blocksolve":
        if case.device == "cpu":
            if case.workload.declaration.routine not in CPU_ROUTINES:
                raise Unavailable(f"no CPU kernel for {case.workload.declaration.routine} yet")
        return functools.partial(case.workload.run, blocksolve, data)
    peer = _PEERS.get((library, case.device))
    if peer is None or not peer.supports(case):
        raise Unavailable(f"{library} does not compute {case.op} on {case.device} here")
    thunk = peer.calls[case.op](data)
    looped = getattr(thunk, "looped", False)
    limit = LOOP_LIMIT[case.device].get(looped)
    if limit is not None and case.batch > limit:
        where = "in Python" if looped == "python" else "inside the library"
        raise Unavailable(
            f"{library} {case.op} loops over the matrices {where}; "
            f"timed only up to {limit} matrices"
        )
    return thunk


def prepare(case, library):
    """Build inputs, make the first (compiling) call, and return a :class:`Timed`.

    Raises
    ------
    Unavailable
        If ``library`` cannot run ``case`` here.
    """
    if case.device == "cuda" and not gpu_available():
        raise Unavailable("no GPU")
    data = inputs(case)
    thunk = _thunk(case, library, data)
    sync = _synchronize(case.device)

    def call():
        thunk()
        sync()

    start = time.perf_counter()
    try:
        with _specialised_kernels(library, case.device):
            call()
    except NotImplementedError as error:
        raise Unavailable(f"{library}: {error}") from None
    return Timed(call, time.perf_counter() - start, getattr(thunk, "looped", False))


@contextlib.contextmanager
def _specialised_kernels(library, device):
    """blocksolve's first CPU call compiles (or loads) its kernel, so that the timed calls
    measure it, not NumPy's LAPACK that would answer while it compiles in the background.
    ``BLOCKSOLVE_SPECIALIZE=never`` benchmarks the LAPACK path instead."""
    if library != "blocksolve" or device != "cpu":
        yield
        return
    if _compiled.specialization() == "never":
        yield
        return
    previous = _compiled.set_specialization("wait")
    try:
        yield
    finally:
        _compiled.set_specialization(previous)


def schedule(timed, min_time, *, min_rounds=3, max_rounds=1000, min_round_s=1e-3):
    """``(rounds, iterations)`` so that the timed calls last about ``min_time`` seconds.

    One more (warm) call estimates the time per call; calls shorter than
    ``min_round_s`` are repeated ``iterations`` times per round, calls longer
    than :data:`SLOW_CALL_S` are timed once.
    """
    start = time.perf_counter()
    timed.call()
    warm = max(time.perf_counter() - start, 1e-9)
    if warm > SLOW_CALL_S:
        return 1, 1
    # Rounds of at least min_round_s, and few enough that max_rounds last min_time.
    iterations = max(1, math.ceil(min_round_s / warm), math.ceil(min_time / (warm * max_rounds)))
    rounds = math.ceil(min_time / (warm * iterations))
    return min(max(rounds, min_rounds), max_rounds), iterations


def measure(timed, rounds, iterations):
    """Seconds per call of each round."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(iterations):
            timed.call()
        times.append((time.perf_counter() - start) / iterations)
    return times


def side_by_side(timeds, min_time):
    """Time several libraries on one case in interleaved rounds.

    Each library repeats its call as often per round as :func:`schedule`
    says; all get the same number of rounds, the fewest any of them needs to
    last ``min_time`` (at least 3, unless a call takes over
    :data:`SLOW_CALL_S`).  Round ``r`` runs the libraries in an order rotated
    by ``r``, so a change in the machine's load falls on all of them alike
    and the rounds pair up (:func:`speed_up`).

    Parameters
    ----------
    timeds : dict of str to Timed
        The libraries' prepared calls, blocksolve's first.

    Returns
    -------
    dict of str to (list of float, int)
        Each library's seconds per call of every round, and its calls per round.
    """
    plans = {library: schedule(timed, min_time) for library, timed in timeds.items()}
    rounds = min(r for r, _ in plans.values())
    order = list(timeds)
    times = {library: [] for library in order}
    for r in range(rounds):
        k = r % len(order)
        for library in order[k:] + order[:k]:
            times[library] += measure(timeds[library], 1, plans[library][1])
    return {library: (times[library], plans[library][1]) for library in order}


def speed_up(ours, theirs):
    """blocksolve's speed-up over a peer from paired rounds (:func:`side_by_side`): the
    median of ``theirs[i] / ours[i]``, its quartiles, and the number of rounds."""
    ratios = np.asarray(theirs, dtype=float) / np.asarray(ours, dtype=float)
    q1, median, q3 = np.percentile(ratios, [25, 50, 75])
    return {
        "speed_up": float(median),
        "speed_up_q1": float(q1),
        "speed_up_q3": float(q3),
        "paired_rounds": len(ratios),
    }


# For time estimates: seconds beyond the timed calls per library and case (data, first and
# warm-up calls; a JAX first call compiles), and to compile one CPU kernel of each workload
# (the first call of `bench --compile-only` on an empty cache, mean over n = 4 and 16,
# float64 and complex128, on the project's AMD EPYC VM, times 1.1 for its Intel Xeon VM,
# which compiles about 1.4x slower).  Runs on an empty cache on the AMD VM took 1/1.23 and
# 1/1.17 of the estimate (benchmarks/results/time-to-speed-2026-12-06/README.md).
_SET_UP_S = {"jax": 0.5}
_DEFAULT_SET_UP_S = 0.1
COMPILE_S = {
    "cholesky": 2.4,
    "cho_factor": 2.3,
    "cho_solve": 4.0,
    "solve_pos": 7.3,
    "solve": 2.5,
    "det": 2.0,
    "eig": 9.5,
    "eigvals": 2.0,
    "eigh": 5.0,
    "inv": 2.2,
    "lstsq": 6.0,
    "solve_triangular": 1.25,
    "lu_factor": 2.2,
    "lu_solve": 2.0,
    "svd": 6.0,
    "qr": 3.5,
}
DEFAULT_COMPILE_S = 5.0
# Workloads that call another's kernel (the same routine and options).
_SAME_KERNEL = {"slogdet": "det", "eigvalsh": "eigh"}


def _kernel_of(case):
    """What identifies the kernel a case compiles (sizes above ``SPECIALIZE_UP_TO`` share
    one that reads them at run time), or None where its calls run on LAPACK."""
    op = _SAME_KERNEL.get(case.op, case.op)
    if case.device != "cpu":
        return op, case.dtype, case.size, case.device
    if case.batch < CPU_ROUTINES[case.workload.declaration.routine].fewest(case.dims):
        return None
    size = case.size if case.size <= SPECIALIZE_UP_TO else "run time"
    return op, case.dtype, size, case.device


def case_costs(cases, min_time):
    """Estimated seconds of each case of a run, in order: timing every library, plus
    compiling its kernel where no earlier case of the run compiled it (whether the disk
    cache holds it already is not looked up)."""
    seen, costs = set(), []
    for case in cases:
        timing = sum(
            min_time + _SET_UP_S.get(library, _DEFAULT_SET_UP_S)
            for library in ["blocksolve", *peers(case, alternatives_only=True)]
        )
        kernel = _kernel_of(case)
        compiling = 0.0
        if kernel is not None and kernel not in seen:
            compiling = COMPILE_S.get(kernel[0], DEFAULT_COMPILE_S)
            seen.add(kernel)
        costs.append({"timing_s": timing, "compile_s": compiling})
    return costs


def estimate(cases, min_time):
    """What a run of ``cases`` costs: ``{'timing_s', 'kernels', 'compile_s',
    'cache_empty'}``.

    ``timing_s`` is the measurement itself (every library of every case);
    ``compile_s`` what compiling blocksolve's ``kernels`` adds where none is in the
    disk cache yet (:func:`case_costs`); ``cache_empty`` whether that is so: the disk
    caches of the cases' devices hold no file.
    """
    costs = case_costs(cases, min_time)
    disk = blocksolve.cache_info()["disk"]
    return {
        "timing_s": sum(c["timing_s"] for c in costs),
        "kernels": sum(1 for c in costs if c["compile_s"]),
        "compile_s": sum(c["compile_s"] for c in costs),
        "cache_empty": not any(disk[c.device]["files"] for c in cases),
    }


def summarize(times, iterations=1):
    """Median, min, mean and standard deviation of per-call times."""
    t = np.asarray(times, dtype=float)
    return {
        "time_s": float(np.median(t)),
        "time_min_s": float(t.min()),
        "time_mean_s": float(t.mean()),
        "time_stddev_s": float(t.std(ddof=1)) if len(t) > 1 else 0.0,
        "rounds": len(t),
        "iterations": iterations,
    }


def record(case, library, stats, first_call_s, looped, copy_gbps, gemm_gflops=None):
    """One result row; the same fields in ``bench --json`` and pytest-benchmark's extra_info.

    ``copy_gbps`` and ``gemm_gflops``: the device's copy bandwidth and matrix-product
    rate in the case's dtype (:func:`copy_bandwidth`, :func:`gemm_rate`).
    """
    seconds = stats["time_s"]
    gbps = case.bytes / seconds / 1e9
    flops = case.flops
    gflops = None if flops is None else flops / seconds / 1e9
    return {
        "op": case.op,
        "dtype": case.dtype,
        "n": case.size,
        "dims": case.dims,
        "batch": case.batch,
        "batch_kind": case.batch_kind,
        "device": case.device,
        "library": library,
        "looped": looped,
        "bytes": case.bytes,
        **stats,
        "first_call_s": first_call_s,
        "matrices_per_s": case.batch / seconds,
        "gb_per_s": gbps,
        "copy_gb_per_s": copy_gbps,
        "bandwidth_fraction": gbps / copy_gbps if copy_gbps else None,
        "flops": flops,
        "gflop_per_s": gflops,
        "gemm_gflop_per_s": gemm_gflops,
        "compute_fraction": gflops / gemm_gflops if gflops and gemm_gflops else None,
    }


def _first_call(case):
    try:
        return prepare(case, "blocksolve").first_call_s, None
    except Exception as error:  # noqa: BLE001 - reported per kernel, the others go on
        return None, f"{type(error).__name__}: {error}"


def warm_up(cases, jobs=1):
    """Make blocksolve's first call of each case (on a small batch), in ``jobs`` processes.

    Kernels are specialised on the call pattern, not the batch size, so this
    compiles every kernel the cases need and leaves it in the disk cache;
    with ``jobs > 1`` the compilations run side by side.

    Returns
    -------
    list of (Case, float or None, str or None)
        Each case with its first-call seconds, or the error it raised.
    """
    small = [replace(c, batch=SMALL_BATCH, batch_kind="small") for c in cases]
    if jobs <= 1:
        outcomes = [_first_call(c) for c in small]
    else:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            outcomes = list(pool.map(_first_call, small))
    return [(case, seconds, error) for case, (seconds, error) in zip(cases, outcomes)]


def copy_timed(device):
    """A :class:`Timed` copy of ``GPU_COPY_BYTES``/``CPU_COPY_BYTES`` and the bytes it moves."""
    xp = _cupy() if device == "cuda" else np
    nbytes = GPU_COPY_BYTES if device == "cuda" else CPU_COPY_BYTES
    src = xp.ones(nbytes // 8)
    dst = xp.zeros_like(src)
    sync = _synchronize(device)

    def call():
        xp.copyto(dst, src)
        sync()

    start = time.perf_counter()
    call()
    return Timed(call, time.perf_counter() - start), 2 * nbytes  # read + write


@functools.cache
def copy_bandwidth(device):
    """GB/s (read + write) of a plain copy on ``device``, median of 10; measured once per
    process."""
    timed, moved = copy_timed(device)
    return moved / summarize(measure(timed, 10, 1))["time_s"] / 1e9


def gemm_timed(device, dtype):
    """A :class:`Timed` product of two ``GPU_GEMM_N``/``CPU_GEMM_N`` square matrices of
    ``dtype`` and the real operations it counts."""
    xp = _cupy() if device == "cuda" else np
    n = GPU_GEMM_N if device == "cuda" else CPU_GEMM_N
    a = xp.ones((n, n), dtype)
    b = xp.ones((n, n), dtype)
    out = xp.empty((n, n), dtype)
    sync = _synchronize(device)

    def call():
        xp.matmul(a, b, out=out)
        sync()

    start = time.perf_counter()
    call()
    return Timed(call, time.perf_counter() - start), _flops.of_dtype(_flops.gemm(n), dtype)


@functools.cache
def gemm_rate(device, dtype):
    """GFLOP/s of a large matrix product of ``dtype`` on ``device`` (NumPy's or CuPy's BLAS,
    every core or the whole GPU), median of 5; measured once per process and dtype."""
    timed, flops = gemm_timed(device, np.dtype(dtype).name)
    return flops / summarize(measure(timed, 5, 1))["time_s"] / 1e9


# --------------------------------------------------------------------------- results files


def load_records(data):
    """Result rows from a ``bench --json`` document or a pytest-benchmark JSON (none from
    any other JSON).

    The canonical format is ``bench --json``'s (``{"format": FORMAT,
    "results": [row, ...]}``, rows as :func:`record` makes them);
    pytest-benchmark files are converted: each benchmark's ``extra_info``
    holds the row, and its ``stats`` replace the timing fields.
    """
    if "results" in data:  # another script's JSON may have results too: not ours
        return [dict(r) for r in data["results"]] if data.get("format") == FORMAT else []
    rows = []
    for bench in data.get("benchmarks", []):
        info = dict(bench.get("extra_info") or {})
        stats = bench.get("stats") or {}
        if "op" not in info or "median" not in stats:
            continue  # the copy benchmark, or a run with --benchmark-disable
        seconds = stats["median"]
        info.update(
            time_s=seconds,
            time_min_s=stats["min"],
            time_mean_s=stats["mean"],
            time_stddev_s=stats["stddev"],
            rounds=stats["rounds"],
            matrices_per_s=info["batch"] / seconds,
            gb_per_s=info["bytes"] / seconds / 1e9,
        )
        copy = info.get("copy_gb_per_s")
        info["bandwidth_fraction"] = info["gb_per_s"] / copy if copy else None
        if info.get("flops"):
            info["gflop_per_s"] = info["flops"] / seconds / 1e9
            gemm = info.get("gemm_gflop_per_s")
            info["compute_fraction"] = info["gflop_per_s"] / gemm if gemm else None
        rows.append(info)
    return rows
