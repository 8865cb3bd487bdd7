"""The benchmark case table: every op covered, sizes and bytes right, peers compute the same
thing."""

from types import SimpleNamespace

import numpy as np
import pytest
import scipy.linalg

import blocksolve
from _helpers import OPS
from blocksolve import _flops as flops
from blocksolve.cli import bench as _bench

N = 4  # one compiled kernel per op, shared with the op tests


def test_every_public_function_has_a_workload():
    assert set(_bench.ALL_OPS) == set(OPS) | {"qr", "svd", "solve_pos"}
    assert all(
        callable(getattr(blocksolve, _bench.WORKLOADS[op].function)) for op in _bench.ALL_OPS
    )
    assert _bench.WORKLOADS["solve_pos"].declaration.routine == "posv"


@pytest.mark.parametrize(
    "op, size, dtype, expected",
    [
        ("cholesky", 4, "float64", 2 * 16 * 8),
        ("cholesky", 4, "complex128", 2 * 16 * 16),
        ("solve", 8, "float32", (64 + 8 + 8) * 4),
        ("lu_factor", 8, "float64", 2 * 64 * 8 + 8 * 4),  # lu and int32 piv
        ("lu_solve", 8, "float64", (64 + 8 + 8) * 8 + 8 * 4),
        ("qr", 4, "float64", 3 * 16 * 8),  # a, Q, R
        # a 8x4, b 8x1 -> x 4x1, residuals (1,), rank (), s (4,) real
        ("lstsq", 8, "complex128", (32 + 8 + 4) * 16 + 1 * 8 + 4 + 4 * 8),
        ("eigh", 4, "complex128", 2 * 16 * 16 + 4 * 8),  # a, v; real eigenvalues
        ("slogdet", 4, "complex64", 16 * 8 + 8 + 4),  # a; complex sign, real log
        ("solve_pos", 8, "float64", (64 + 8 + 8) * 8),
    ],
)
def test_bytes_per_matrix_counts_inputs_and_outputs_once(op, size, dtype, expected):
    assert _bench.bytes_per_matrix(op, _bench.WORKLOADS[op].dims(size), dtype) == expected


def _textbook_cholesky_flops(n):
    """Operations of the column Cholesky algorithm, counted as it runs: per column ``j``,
    ``d = a[j, j] - sum_k c[j, k]^2`` and its square root, then below the diagonal a dot
    product of length ``j``, a subtraction of it and a division each."""
    count = 0
    for j in range(n):
        count += 2 * j + 1
        count += (n - j - 1) * (2 * j + 1)
    return count


def _textbook_lu_flops(n):
    """Right-looking LU as LAPACK's xGETF2: per step ``j`` the pivot's reciprocal and a
    multiplication by it for each entry below, then a multiply and a subtraction for each
    entry of the trailing block."""
    return sum(1 + (n - j - 1) + 2 * (n - j - 1) ** 2 for j in range(n))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_flop_counts_are_lapacks(n):
    dims = {"n": n, "m": n, "k": 3}
    assert flops.potrf(dims) == pytest.approx(_textbook_cholesky_flops(n))
    assert flops.getrf(dims) == pytest.approx(_textbook_lu_flops(n))
    assert flops.trsm(dims) == 3 * n * n  # n^2 per right-hand side: a triangle of mult-adds
    assert flops.gesv(dims) == pytest.approx(flops.getrf(dims) + flops.getrs(dims))
    assert flops.gemm(n) == 2 * n**3
    assert flops.of_dtype(10.0, "complex64") == 40.0 and flops.of_dtype(10.0, "float32") == 10.0


def test_every_workload_counts_its_flops():
    for op, workload in _bench.WORKLOADS.items():
        per_matrix = _bench.flops_per_matrix(op, workload.dims(8), "float64")
        assert per_matrix > 0, op
        assert _bench.flops_per_matrix(op, workload.dims(8), "complex128") == 4 * per_matrix
    case = _bench.Case("qr", "float64", 16, 100, "cpu")
    assert case.flops == 100 * 8 * 16**3 / 3  # Householder QR and the reduced Q, square


def test_gemm_rate_is_a_measured_matrix_product(monkeypatch):
    monkeypatch.setattr(_bench, "CPU_GEMM_N", 64)
    timed, count = _bench.gemm_timed("cpu", "complex128")
    assert count == 4 * 2 * 64**3 and timed.first_call_s > 0
    timed.call()
    rate = _bench.gemm_rate.__wrapped__("cpu", "float64")
    assert 0.01 < rate < 1e5  # GFLOP/s of a real machine


def test_gpu_batches_move_200_mb_and_cpu_batches_stay_small():
    gpu = _bench.cases(_bench.GRIDS["full"], ["cuda"])
    cpu = _bench.cases(_bench.GRIDS["full"], ["cpu"])
    call_cost = len(_bench.ALL_OPS) * len(_bench.CALL_COST_BATCHES)
    assert len(gpu) == len(cpu) == len(_bench.ALL_OPS) * 3 * 7 * 2 + call_cost
    for case in gpu:
        if case.batch_kind == "large":
            assert _bench.GPU_BYTES <= case.bytes < _bench.GPU_BYTES * 1.01, case
        elif case.batch_kind == "small":
            assert case.batch == _bench.SMALL_BATCH
        else:
            assert case.batch in _bench.CALL_COST_BATCHES and case.size == 4
    low, high = _bench.CPU_BATCH_RANGE
    assert all(low <= c.batch <= high for c in cpu if c.batch_kind == "large")
    fp64_n8 = next(
        c
        for c in gpu
        if (c.op, c.dtype, c.size, c.batch_kind) == ("cholesky", "float64", 8, "large")
    )
    assert fp64_n8.batch >= 195_000  # 200 MB of fp64 8x8 Cholesky (read a, write L)


def test_quick_grid_measures_the_cost_of_a_call():
    cases = _bench.cases(_bench.GRIDS["quick"], ["cpu"])
    small = {(c.op, c.batch) for c in cases if c.batch_kind == "fixed"}
    assert small == {(op, b) for op in ("cholesky", "solve") for b in (1, 10, 100)}
    assert {c.op for c in cases if c.batch_kind == "large"} == {"cholesky", "solve", "qr", "lstsq"}


def test_grid_override_and_no_repeats():
    grid = _bench.GRIDS["gpu-check"].override(ops=["cholesky"], dtypes=["float64"])
    cases = _bench.cases(grid, ["cuda"])
    assert {c.op for c in cases} == {"cholesky"} and len(cases) == len(set(cases))
    assert cases[0].size == 8 and cases[0].batch_kind == "large"  # most telling case first


def test_cusolver_grid_has_a_cusolver_row_for_every_case():
    """The GPU check's first comparison: no case may lose its peer to a loop limit."""
    pytest.importorskip("cupy")
    cases = _bench.cases(_bench.GRIDS["gpu-cusolver"], ["cuda"])
    assert {c.op for c in cases} == {"cholesky", "solve", "qr", "lstsq", "eigh"}
    assert {c.size for c in cases if c.op == "cholesky"} == {4, 8, 16, 32}
    cupy = next(p for p in _bench.PEERS if (p.name, p.device) == ("cupy", "cuda"))
    for case in cases:
        assert case.op in cupy.calls, case
        data = {k: np.zeros((1,)) for k in ("a", "b")}
        looped = getattr(cupy.calls[case.op](data), "looped", False)
        assert case.batch <= _bench.LOOP_LIMIT["cuda"].get(looped, case.batch), case


def _first_array(result, thunk):
    if getattr(thunk, "looped", False) == "python":  # a list of per-matrix results
        return np.stack([_first_array(r, None) for r in result])
    while isinstance(result, (tuple, list)):
        result = result[0]
    return np.asarray(result)


def _canonical(op, x):
    """Make results comparable across libraries: QR signs, eigenvalue order, and the upper
    Cholesky factor."""
    if op in ("qr", "svd"):  # Q's and U's columns: each up to a sign
        return np.abs(x)
    if op in ("eig", "eigvals"):  # eigenvalues: LAPACK's order is not promised
        return np.sort_complex(x)
    if op == "cho_factor":  # scipy/blocksolve: U in the upper triangle; cupy/numpy: clean L
        lower_factor = np.allclose(np.triu(x, 1), 0)
        return np.conj(x.swapaxes(-1, -2)) if lower_factor else np.triu(x)
    return x


def _compare_with_blocksolve(case, peer):
    data = _bench.inputs(case)
    expected = _canonical(case.op, _first_array(case.workload.run(blocksolve, data), None))
    thunk = peer.calls[case.op](data)
    actual = _canonical(case.op, _first_array(thunk(), thunk))
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("op", _bench.ALL_OPS)
def test_cpu_peers_compute_what_blocksolve_computes(op):
    case = _bench.Case(op, "float64", N, 5, "cpu")
    peers = [p for p in _bench.PEERS if p.supports(case)]
    assert peers and _bench.peers(case) == [p.name for p in peers]
    for peer in peers:
        _compare_with_blocksolve(case, peer)


@pytest.mark.parametrize("op", _bench.ALL_OPS)
def test_cupy_peer_calls_with_numpy_standing_in(monkeypatch, op):
    """The GPU peer table, run on the CPU with numpy for cupy and scipy for cupyx.scipy."""
    monkeypatch.setattr(_bench, "_cupy", lambda: np)
    monkeypatch.setattr(_bench, "_cla", lambda: scipy.linalg)
    _compare_with_blocksolve(
        _bench.Case(op, "float64", N, 5, "cpu"), next(p for p in _bench.PEERS if p.name == "cupy")
    )


def test_loop_limits_keep_slow_gpu_peers_out_of_large_batches(monkeypatch):
    monkeypatch.setattr(_bench, "_cupy", lambda: np)
    monkeypatch.setattr(_bench, "_cla", lambda: scipy.linalg)
    case = _bench.Case("lstsq", "float64", N, _bench.LOOP_LIMIT["cuda"]["python"] + 1, "cuda")
    data = {"a": np.zeros((case.batch, 4, 2)), "b": np.zeros((case.batch, 4, 1))}
    monkeypatch.setattr(
        _bench.importlib.util, "find_spec", lambda name: object()
    )  # "cupy is there"
    with pytest.raises(_bench.Unavailable, match="loops over the matrices in Python"):
        _bench._thunk(case, "cupy", data)


def test_schedule_times_slow_calls_once(monkeypatch):
    timed = _bench.Timed(call=lambda: None, first_call_s=0.0)
    clock = iter([0.0, 5.0])
    monkeypatch.setattr(_bench.time, "perf_counter", lambda: next(clock))
    assert _bench.schedule(timed, min_time=10.0) == (1, 1)


def test_schedule_honours_a_long_min_time_for_fast_calls(monkeypatch):
    """--min-time 60 on a 10 µs call: about 60 s of calls, within max_rounds rounds."""
    timed = _bench.Timed(call=lambda: None, first_call_s=0.0)
    clock = iter([0.0, 1e-5])
    monkeypatch.setattr(_bench.time, "perf_counter", lambda: next(clock))
    rounds, iterations = _bench.schedule(timed, min_time=60.0, max_rounds=1000)
    assert rounds <= 1000 and 60.0 <= rounds * iterations * 1e-5 < 61.0


def test_schedule_repeats_short_calls():
    timed = _bench.Timed(call=lambda: None, first_call_s=0.0)
    rounds, iterations = _bench.schedule(timed, min_time=0.01)
    assert rounds >= 3 and iterations > 1
    times = _bench.measure(timed, rounds, iterations)
    assert len(times) == rounds and all(t >= 0 for t in times)


def test_unavailable_kernel_is_skipped_not_failed(monkeypatch):
    from blocksolve.cpu import _backend as cpu

    monkeypatch.delitem(cpu.ROUTINES, "gels")
    with pytest.raises(_bench.Unavailable, match="no CPU kernel for gels"):
        _bench.prepare(_bench.Case("lstsq", "float64", N, 5, "cpu"), "blocksolve")


def test_load_records_converts_pytest_benchmark_json():
    row = {
        "op": "solve",
        "dtype": "float64",
        "n": 4,
        "batch": 100,
        "bytes": 64_000,
        "device": "cpu",
        "library": "numpy",
        "batch_kind": "large",
        "copy_gb_per_s": 10.0,
        "flops": 6_600.0,
        "gemm_gflop_per_s": 50.0,
    }
    data = {
        "benchmarks": [
            {
                "group": "solve",
                "extra_info": row,
                "stats": {"median": 1e-3, "min": 9e-4, "mean": 1.1e-3, "stddev": 1e-4, "rounds": 7},
            },
            {
                "group": "copy cpu",
                "extra_info": {"device": "cpu", "library": "copy"},
                "stats": {"median": 1e-3},
            },
        ]
    }
    (converted,) = _bench.load_records(data)
    assert converted["time_s"] == 1e-3 and converted["rounds"] == 7
    assert converted["matrices_per_s"] == pytest.approx(1e5)
    assert converted["gb_per_s"] == pytest.approx(0.064)
    assert converted["bandwidth_fraction"] == pytest.approx(0.0064)
    assert converted["gflop_per_s"] == pytest.approx(0.0066)
    assert converted["compute_fraction"] == pytest.approx(0.0066 / 50)
    assert _bench.load_records({"format": _bench.FORMAT, "results": [converted]}) == [converted]
    assert _bench.load_records({"results": [{"case": "svd-3x3", "ratio": 14.8}]}) == []


def test_cli_names_are_public_functions_and_variants_are_labelled():
    assert set(_bench.FUNCTIONS) == {_bench.WORKLOADS[op].function for op in _bench.ALL_OPS}
    assert "solve_pos" not in _bench.FUNCTIONS
    assert set(_bench.workloads_of(["solve"])) == {"solve", "solve_pos"}
    assert set(_bench.workloads_of(["qr", "det"])) == {"qr", "det"}
    assert _bench.WORKLOADS["solve_pos"].label == "solve(assume_a='pos')"
    assert _bench.WORKLOADS["cholesky"].label == "cholesky"


def test_bench_compares_with_alternatives_only():
    case = _bench.Case("solve_pos", "float64", N, 5, "cpu")
    assert _bench.peers(case)[:2] == ["numpy", "scipy"] and "blocksolve-cho" in _bench.peers(case)
    alternatives = _bench.peers(case, alternatives_only=True)
    assert alternatives[0] == "numpy" and "scipy" not in alternatives
    assert "blocksolve-cho" not in alternatives


class _Recorder:
    """A Timed whose calls log their library's name and take ``seconds`` of a fake clock."""

    def __init__(self, name, log, clock, seconds):
        self.name, self.log, self.clock, self.seconds = name, log, clock, seconds
        self.first_call_s, self.looped = 0.0, False

    def call(self):
        self.log.append(self.name)
        self.clock[0] += self.seconds


def test_side_by_side_interleaves_rotating_rounds(monkeypatch):
    clock, log = [0.0], []
    monkeypatch.setattr(_bench.time, "perf_counter", lambda: clock[0])
    timeds = {
        "blocksolve": _Recorder("blocksolve", log, clock, 0.002),
        "numpy": _Recorder("numpy", log, clock, 0.004),
    }
    timings = _bench.side_by_side(timeds, min_time=0.02)
    # numpy needs the fewest rounds to last 0.02 s: 5 rounds of one call; every library
    # gets those, each with its own calls per round.
    assert [len(t) for t, _ in timings.values()] == [5, 5]
    assert timings["blocksolve"][0] == pytest.approx([0.002] * 5)
    assert timings["numpy"][0] == pytest.approx([0.004] * 5)
    assert timings["blocksolve"][1] == timings["numpy"][1] == 1
    timed_rounds = log[2:]  # each schedule() makes one warm-up call first
    assert timed_rounds[:4] == ["blocksolve", "numpy", "numpy", "blocksolve"]


def test_speed_up_is_the_median_of_paired_ratios_with_quartiles():
    ours = [1.0, 1.0, 2.0, 1.0, 1.0]
    theirs = [2.0, 3.0, 2.0, 4.0, 2.0]  # ratios 2, 3, 1, 4, 2
    assert _bench.speed_up(ours, theirs) == {
        "speed_up": 2.0,
        "speed_up_q1": 2.0,
        "speed_up_q3": 3.0,
        "paired_rounds": 5,
    }


def _per_matrix_stack(function):
    """A per-matrix function applied to each matrix of stacks, results stacked."""

    def stacked(*arrays, **kwargs):
        results = [function(*(x[i] for x in arrays), **kwargs) for i in range(len(arrays[0]))]
        if isinstance(results[0], tuple):
            return tuple(np.stack(parts) for parts in zip(*results))
        return np.stack(results)

    return stacked


def _torch_stand_in():
    """numpy/scipy under torch's names and conventions (1-based pivots, ``upper=``)."""
    sla = scipy.linalg

    def lu_factor(a):
        lu, piv = sla.lu_factor(a)
        return lu, piv + 1

    linalg = SimpleNamespace(
        cholesky=np.linalg.cholesky,
        lu_factor=_per_matrix_stack(lu_factor),
        lu_solve=_per_matrix_stack(lambda lu, piv, b: sla.lu_solve((lu, piv - 1), b)),
        solve=np.linalg.solve,
        solve_triangular=lambda a, b, upper: _per_matrix_stack(sla.solve_triangular)(
            a, b, lower=not upper
        ),
        qr=np.linalg.qr,
        lstsq=lambda a, b, driver=None: _per_matrix_stack(np.linalg.lstsq)(a, b),
        eigh=np.linalg.eigh,
        eigvalsh=np.linalg.eigvalsh,
        eig=np.linalg.eig,
        eigvals=np.linalg.eigvals,
        inv=np.linalg.inv,
        det=np.linalg.det,
        slogdet=np.linalg.slogdet,
        svd=np.linalg.svd,
    )
    return SimpleNamespace(
        linalg=linalg,
        cholesky_solve=lambda b, c: _per_matrix_stack(lambda b, c: sla.cho_solve((c, True), b))(
            b, c
        ),
    )


def _jax_stand_in():
    """numpy/scipy in place of JAX: jit does nothing, vmap loops over the batch."""
    return SimpleNamespace(
        config=SimpleNamespace(update=lambda *args: None),
        jit=lambda f: f,
        vmap=_per_matrix_stack,
        device_put=lambda x: x,
        block_until_ready=lambda x: x,
        numpy=SimpleNamespace(linalg=np.linalg),
    )


@pytest.mark.parametrize("op", _bench.ALL_OPS)
@pytest.mark.parametrize("peer", [("torch", "cpu"), ("torch", "cuda"), ("jax", "cpu")])
def test_torch_and_jax_peer_calls_with_stand_ins(monkeypatch, peer, op):
    """The torch and JAX peer tables, run with numpy/scipy standing in for the libraries
    (the real ones: test_cpu_peers_compute_what_blocksolve_computes, where installed)."""
    torch = _torch_stand_in()
    monkeypatch.setattr(_bench, "_torch", lambda d: (torch, dict(d)))
    monkeypatch.setattr(_bench, "_jax", _jax_stand_in)
    monkeypatch.setattr(_bench, "_jsl", lambda: scipy.linalg)
    _compare_with_blocksolve(
        _bench.Case(op, "float64", N, 5, "cpu"),
        next(p for p in _bench.PEERS if p.name == peer[0] and p.device == peer[1]),
    )
