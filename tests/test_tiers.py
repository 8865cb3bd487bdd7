"""The two CPU kernel tiers: the run-time-size kernel that answers a new call
pattern at once, the size-specialised one compiled in the background.

* Both tiers agree to rounding (same algorithm), with identical ``info``, on
  a few patterns per kernel family (the per-family modules check every
  pattern of their grids against NumPy on each tier; the second run is
  ``pytest -m exhaustive``).
* Background compilation: the generic kernel answers while the specialised
  one compiles in another process, which takes over when ready; a kernel is
  compiled once however often it is asked for, and across processes; the
  interpreter exits without waiting for it.
"""

import contextlib
import os
import select
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import blocksolve
from _helpers import (
    assert_close,
    call,
    operands,
    random_general,
    random_matrix,
    random_spd,
    well_conditioned,
)
from blocksolve import _execute
from blocksolve._ops import OPS, QR_MODES
from blocksolve._pattern import CallPattern
from blocksolve.cpu import CACHE, _background, _jit, _tiers, cholesky

ROOT = Path(__file__).resolve().parents[1]
# One real and one complex dtype (the straight-line QR/lstsq code differs
# for complex), single precision for one of them.
TIER_DTYPES = (np.float64, np.complex64)


@contextlib.contextmanager
def tier(mode):
    previous = _tiers.set_specialization(mode)
    try:
        yield
    finally:
        _tiers.set_specialization(previous)


def both_tiers(call):
    """``call()`` on the run-time-size kernels, then on the size-specialised ones."""
    with tier("never"):
        generic = call()
    with tier("wait"):
        specialised = call()
    return generic, specialised


def assert_agree(generic, specialised, dtype, n):
    """Same structure, identical integer arrays (info, pivots, rank), the rest to rounding."""
    generic = generic if isinstance(generic, tuple) else (generic,)
    specialised = specialised if isinstance(specialised, tuple) else (specialised,)
    assert len(generic) == len(specialised)
    for g, s in zip(generic, specialised):
        if isinstance(g, (bool, np.bool_)):
            assert g == s
        elif np.asarray(g).dtype.kind in "iu":
            np.testing.assert_array_equal(s, g)
        else:
            assert np.asarray(s).dtype == np.asarray(g).dtype
            assert_close(s, g, dtype, n=n)


def _spd_with_failure(rng, n, dtype):
    a = random_spd(rng, (4,), n, dtype)
    a[2, n - 2, n - 2] = -10
    return a


def _singular(rng, n, dtype):
    a = random_matrix(rng, (4, n, n), dtype)
    a[1, :, 2] = 0  # exactly singular: column 2 is zero
    return a


CASES = {
    "cholesky": lambda rng, n, dt: (
        lambda a: lambda: blocksolve.cholesky(a, errors="ignore", return_info=True)
    )(_spd_with_failure(rng, n, dt)),
    "cholesky-upper": lambda rng, n, dt: (
        lambda a: lambda: blocksolve.cholesky(a, upper=True, return_info=True, errors="ignore")
    )(_spd_with_failure(rng, n, dt)),
    "cho_solve": lambda rng, n, dt: (
        lambda c, b: lambda: blocksolve.cho_solve((c, True), b, return_info=True)
    )(np.linalg.cholesky(random_spd(rng, (4,), n, dt)), random_matrix(rng, (4, n, 2), dt)),
    "lu_factor": lambda rng, n, dt: (lambda a: lambda: blocksolve.lu_factor(a, return_info=True))(
        _singular(rng, n, dt)
    ),
    "lu_solve": lambda rng, n, dt: (
        lambda a, b: (
            lambda: blocksolve.lu_solve(blocksolve.lu_factor(a), b, trans=2, return_info=True)
        )
    )(random_matrix(rng, (4, n, n), dt), random_matrix(rng, (4, n, 2), dt)),
    "solve": lambda rng, n, dt: (lambda a, b: lambda: blocksolve.solve(a, b, return_info=True))(
        _singular(rng, n, dt), random_matrix(rng, (4, n, 3), dt)
    ),
    "solve_triangular": lambda rng, n, dt: (
        lambda a, b: (
            lambda: blocksolve.solve_triangular(a, b, lower=True, trans=1, return_info=True)
        )
    )(random_general(rng, (4,), n, dt), random_matrix(rng, (4, n, 2), dt)),
    "solve-pos": lambda rng, n, dt: (
        lambda a, b: (
            lambda: blocksolve.solve(a, b, assume_a="pos", return_info=True, errors="ignore")
        )
    )(_spd_with_failure(rng, n, dt), random_matrix(rng, (4, n, 2), dt)),
    "inv": lambda rng, n, dt: (lambda a: lambda: blocksolve.inv(a, return_info=True))(
        _singular(rng, n, dt)
    ),
    "slogdet": lambda rng, n, dt: (lambda a: lambda: blocksolve.slogdet(a, return_info=True))(
        _singular(rng, n, dt)
    ),
    "eigh": lambda rng, n, dt: (lambda a: lambda: blocksolve.eigh(a, UPLO="U", return_info=True))(
        random_spd(rng, (4,), n, dt)
    ),
}


@pytest.mark.parametrize("dtype", TIER_DTYPES)
@pytest.mark.parametrize("case", CASES)
def test_square_families_agree_across_tiers(rng, case, dtype):
    n = 4  # a size the exhaustive grids use too: CI's exhaustive step finds these compiled
    call = CASES[case](rng, n, dtype)
    generic, specialised = both_tiers(call)
    (result_g, info_g), (result_s, info_s) = generic, specialised
    np.testing.assert_array_equal(info_s, info_g)
    failing = case in ("cholesky", "cholesky-upper", "lu_factor", "solve", "solve-pos", "inv")
    assert info_g.any() == failing
    if case in ("solve", "inv"):  # a singular system's x is inf/NaN: compare the others
        result_g, result_s = result_g[info_g == 0], result_s[info_g == 0]
    if case == "eigh":  # eigenvectors by magnitude: a sign may flip at a rounding-level tie
        result_g = (result_g[0], np.abs(result_g[1]))
        result_s = (result_s[0], np.abs(result_s[1]))
    assert_agree(result_g, result_s, dtype, n)


@pytest.mark.parametrize("dtype", TIER_DTYPES)
@pytest.mark.parametrize("m, n", [(5, 3), (3, 5)])
def test_qr_straight_line_and_looped_agree(rng, dtype, m, n):
    a = well_conditioned(rng, (9,), m, n, dtype)  # 9: a full block and a partial one
    for mode in ("reduced", "complete", "r", "raw"):
        generic, specialised = both_tiers(lambda mode=mode: blocksolve.qr(a, mode=mode))
        assert_agree(
            tuple(generic) if mode != "r" else generic,
            tuple(specialised) if mode != "r" else specialised,
            dtype,
            max(m, n),
        )


@pytest.mark.parametrize("dtype", TIER_DTYPES)
@pytest.mark.parametrize("m, n", [(5, 3), (3, 5)])
def test_lstsq_straight_line_and_looped_agree(rng, dtype, m, n):
    a = well_conditioned(rng, (9,), m, n, dtype)
    a[4] = np.outer(a[4, :, 0], a[4, 0, :])  # rank 1: the minimum-norm solution, no failure
    a[7, 0, 0] = np.nan  # the one failure
    b = random_matrix(rng, (9, m, 2), dtype)
    generic, specialised = both_tiers(
        lambda: blocksolve.lstsq(a, b, errors="ignore", return_info=True)
    )
    (result_g, info_g), (result_s, info_s) = generic, specialised
    np.testing.assert_array_equal(info_s, info_g)
    np.testing.assert_array_equal(info_g, np.arange(9) == 7)
    x_g, residuals_g, rank_g, s_g = result_g
    x_s, residuals_s, rank_s, s_s = result_s
    assert rank_g[4] == 1
    keep = np.arange(9) != 7
    assert_agree(
        (rank_g[keep], s_g[keep], x_g[keep], residuals_g[keep]),
        (rank_s[keep], s_s[keep], x_s[keep], residuals_s[keep]),
        dtype,
        max(m, n),
    )


def test_tiered_kernel_is_one_per_specialised_kernel():
    first = _tiers.sized(cholesky._potrf_kernel, 7)
    assert _tiers.sized(cholesky._potrf_kernel, 7) is first
    assert first.generic is cholesky._potrf_kernel(0)
    assert first.specialised is cholesky._potrf_kernel(7)
    # Above the specialisation limit there is only the run-time kernel.
    assert _tiers.sized(
        cholesky._potrf_kernel, _jit.SPECIALIZE_UP_TO + 1
    ) is cholesky._potrf_kernel(0)


def _typed_in_full(args):
    kernel = cholesky._potrf_kernel(0)
    return tuple(kernel.typeof_pyval(x) for x in args)


def test_signatures_memoised_by_fingerprint_are_numbas_types():
    """A new pattern types its arguments through a memo keyed on numba's fingerprints;
    every argument kind a kernel takes must come out as numba's full typing says."""
    base = np.zeros((2, 3, 3))
    read_only = base.copy()
    read_only.flags.writeable = False
    kinds = [
        base,
        np.asfortranarray(base),
        base[:, ::2],
        read_only,
        base.astype(np.float32),
        base.astype(np.complex64),
        base.astype(np.complex128),
        np.zeros(2, np.int32),
        np.zeros((0, 3, 3)),
        0,
        7,
        2.5,
        True,
        False,
        np.int32(3),
        np.float64(1.0),
    ]
    kernel = cholesky._potrf_kernel(0)
    for x in kinds:
        assert _jit.signature_of(kernel, (x,)) == _typed_in_full((x,)), repr(x)
    # Arguments that differ only in their sizes share one memo entry: the same tuple.
    small = (0, 1, np.zeros((1, 5, 5)), np.zeros((1, 5, 5)), np.zeros(1, np.int32), True, True)
    large = (0, 9, np.zeros((9, 8, 8)), np.zeros((9, 8, 8)), np.zeros(9, np.int32), False, True)
    assert _jit.signature_of(kernel, small) is _jit.signature_of(kernel, large)
    assert _jit.signature_of(kernel, large) == _typed_in_full(large)


@pytest.fixture
def fresh_cpu_backend(monkeypatch):
    """No plan, built runner, tiered kernel or first call remembered; submissions recorded."""
    monkeypatch.setattr(_execute, "_PLANS", {})
    monkeypatch.setattr(_execute, "_FAMILIES", {})
    monkeypatch.setattr(CACHE, "_kernels", {})
    monkeypatch.setattr(_tiers, "_TIERED", {})
    submitted = []
    monkeypatch.setattr(_background, "submit", submitted.append)
    return submitted


def _sizes_built():
    return sorted(dict(p.dims).get("n") for p in CACHE.patterns())


def test_a_sizes_first_call_takes_its_familys_runner(rng, fresh_cpu_backend):
    """The first call of a new size runs the family's run-time-size runner; its own runner,
    and the hand-off of its specialised kernel, come with the second call.  Both calls run
    the generic kernel: identical results."""
    a = random_spd(rng, (3,), 11, np.float64)
    with tier("background"):
        first = blocksolve.cholesky(a)
        assert _sizes_built() == [0] and fresh_cpu_backend == []
        second = blocksolve.cholesky(a)
        assert _sizes_built() == [0, 11]
        assert [kernel.key for kernel in fresh_cpu_backend] == [(11,)]
        third = blocksolve.cholesky(a)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(first, third)
    assert_close(first, np.linalg.cholesky(a), np.float64, n=11)


def test_calls_not_remembered_take_their_familys_runner_once_per_size_too(rng, fresh_cpu_backend):
    """A list argument (planned anew at every call) goes the same way: the family's runner
    at the first call of its sizes, its own runner from the second."""
    a = random_spd(rng, (2,), 9, np.float64)
    with tier("background"):
        first = blocksolve.cholesky(a.tolist())
        assert _sizes_built() == [0] and fresh_cpu_backend == []
        second = blocksolve.cholesky(a.tolist())
        assert _sizes_built() == [0, 9]
    np.testing.assert_array_equal(first, second)


def test_the_gpu_fallback_runs_a_new_size_as_a_cpu_call_does(rng, fresh_cpu_backend):
    """A configuration cuSolverDx refuses runs on the CPU backend as a CPU call would: the
    family's runner at the first run of its sizes (nothing built or submitted), the size's
    own runner, with the hand-off of its specialised kernel, from the second."""
    from blocksolve.cuda._plan import FallbackPlan

    pattern = CallPattern.make(
        "potrf", {"n": 11}, np.float64, {"lower": True, "clean": True}, ["C"], "sm_90"
    )
    a = random_spd(rng, (3,), 11, np.float64)
    plan = FallbackPlan(pattern, "refused")
    with tier("background"):
        first, _ = plan.run((a,), np, {})
        assert _sizes_built() == [0] and fresh_cpu_backend == []
        second, info = plan.run((a,), np, {})
        assert _sizes_built() == [0, 11]
        assert [kernel.key for kernel in fresh_cpu_backend] == [(11,)]
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(info, 0)
    assert_close(first, np.linalg.cholesky(a), np.float64, n=11)


# name -> (op, options): every op, and the ones options send to another routine
_ALL_ROUTINES = {
    **{name: (op, {}) for name, op in OPS.items()},
    "solve_pos": (OPS["solve"], {"assume_a": "pos"}),
    **{f"qr_{mode}": (op, {"mode": mode}) for mode, op in QR_MODES.items()},
}


@pytest.mark.parametrize("name", sorted(_ALL_ROUTINES))
def test_every_family_runner_gives_the_sizes_own_results(name, fresh_cpu_backend):
    """For every op, the family's runner (first call) and the size's own runner (second
    call, its specialised kernel still pending) run the same kernel: identical results,
    at a size other than any the family was built for (8x7: QR's and least squares'
    straight-line tier); the first call builds and submits nothing for the size, whether
    its plan is the family's first (5x6) or one resized from it (8x7)."""
    op, options = _ALL_ROUTINES[name]
    args = operands(op, batch=(3,), sizes={"n": 7, "m": 8, "k": 2})
    with tier("background"):
        call(op, operands(op, batch=(2,), sizes={"n": 5, "m": 6, "k": 2}), **options)
        assert _sizes_built() == [0] and fresh_cpu_backend == []
        first = call(op, args, **options)
        assert _sizes_built() == [0] and fresh_cpu_backend == []  # nothing built for 8x7
        second = call(op, args, **options)
    assert _sizes_built() == [0, 7]
    for x, y in zip(
        first if isinstance(first, tuple) else (first,),
        second if isinstance(second, tuple) else (second,),
    ):
        np.testing.assert_array_equal(x, y)


def test_waiting_for_specialised_kernels_a_first_call_takes_its_own_runner(rng, fresh_cpu_backend):
    a = random_spd(rng, (2,), 5, np.float64)
    with tier("wait"):
        blocksolve.cholesky(a)
    assert _sizes_built() == [5]


@pytest.mark.parametrize(
    "call, numpy_call, size",
    [
        (blocksolve.cholesky, np.linalg.cholesky, 64),  # NumPy's LAPACK from 64
        (
            lambda a: blocksolve.solve(a, a[..., :1]),  # and for few matrices
            lambda a: np.linalg.solve(a, a[..., :1]),
            32,
        ),
    ],
    ids=["cholesky-64", "solve-32"],
)
def test_a_lapack_sized_first_call_takes_lapack_on_its_familys_runner(
    rng, fresh_cpu_backend, call, numpy_call, size
):
    """The family's runner chooses LAPACK by the operands' sizes where the size's own runner
    does: both calls give NumPy's results bit for bit, and the first builds nothing."""
    a = random_spd(rng, (2,), size, np.float64)
    with tier("background"):
        first = call(a)
        assert _sizes_built() == [0] and fresh_cpu_backend == []
        second = call(a)
        assert _sizes_built() == [0, size]
    np.testing.assert_array_equal(first, numpy_call(a))
    np.testing.assert_array_equal(second, first)


def test_a_lapack_sized_first_call_with_a_failing_matrix_gets_the_kernels_info(
    rng, fresh_cpu_backend
):
    """LAPACK raises for the whole call; the family's runner redoes it on its generic kernel,
    as the size's own runner does on its kernel: the same info and partial results."""
    a = random_spd(rng, (3,), 32, np.float64)
    a[1, :, 5] = 0  # exactly singular
    b = a[..., :1].copy()
    with tier("background"):
        first = blocksolve.solve(a, b, return_info=True)
        assert _sizes_built() == [0]
        second = blocksolve.solve(a, b, return_info=True)
        assert _sizes_built() == [0, 32]
    np.testing.assert_array_equal(first[1], [0, 6, 0])
    for x, y in zip(first, second):
        np.testing.assert_array_equal(x, y)


def test_bad_mode_refused():
    with pytest.raises(
        ValueError,
        match="set_specialization: specialization must be one of "
        "'background', 'wait', 'never'; got 'later'",
    ):
        blocksolve.set_specialization("later")


def as_if_never_compiled(monkeypatch):
    """No marker of an earlier compilation counts, here or in the worker."""
    monkeypatch.setattr(_tiers, "compiled_before", lambda factory, key, sig: False)
    message = _background._message
    monkeypatch.setattr(
        _background, "_message", lambda job_id, kernel, check_marker: message(job_id, kernel, False)
    )


def _potrf_arguments(rng, n, batch=3):
    a = random_spd(rng, (batch,), n, np.float64)
    return a, np.empty_like(a), np.zeros(batch, np.int32)


def test_background_compilation_takes_over(rng, monkeypatch):
    """A kernel not compiled before: the generic one answers, the worker compiles, the
    specialised one is used from then on; asking again while it compiles sends no second
    job.  With the worker running, the caller writes the job itself: no thread of this
    process is woken (one would wait for the caller's interpreter lock)."""
    kernel = _tiers.Tiered(cholesky._potrf_kernel(0), cholesky._potrf_kernel, (7,))
    as_if_never_compiled(monkeypatch)
    to_thread = []
    monkeypatch.setattr(_background, "_hand_to_thread", to_thread.append)
    blocksolve.set_specialization("background")
    _background.start()  # as a family's first call does
    before = _background.statistics()
    a, c, info = _potrf_arguments(rng, 7)
    kernel(0, 3, a, c, info, True, True)
    assert kernel.state == "pending" and kernel.ready is None
    job = next(job for job, pending in _background._pending.items() if pending is kernel)
    assert _background._sent[job] is _background._worker and to_thread == []
    expected = np.empty_like(c)
    cholesky._potrf_kernel(0)(0, 3, a, expected, info, True, True)
    np.testing.assert_array_equal(c, expected)  # the generic kernel ran
    kernel(0, 3, a, c, info, True, True)  # again while pending: no second job
    if hasattr(os, "getpriority"):  # the worker yields to its caller from its start
        ours = os.getpriority(os.PRIO_PROCESS, 0)
        assert os.getpriority(os.PRIO_PROCESS, _background._worker.process.pid) == min(
            ours + 10, 19
        )
    assert blocksolve.wait_for_kernels(timeout=600)
    assert kernel.state == "ready", kernel.error
    assert kernel.ready is cholesky._potrf_kernel(7)
    after = _background.statistics()
    assert after["compiled"] == before["compiled"] + 1 and after["pending"] == 0
    assert kernel.pick((0, 3, a, c, info, True, True)) is kernel.ready
    kernel(0, 3, a, c, info, True, True)
    assert_close(c, expected, np.float64, n=7)
    with tier("never"):  # 'never' means the generic kernel, even once the other is ready
        assert kernel.pick((0, 3, a, c, info, True, True)) is kernel.generic


def test_the_callers_write_never_waits_the_threads_waits_for_room():
    """A full pipe (the worker far behind): the caller's write gives up at once, writing
    nothing, and its job goes to the thread, whose write waits until there is room."""
    read_end, write_end = os.pipe()
    worker = object.__new__(_background._Worker)
    worker._jobs, worker._nonblocking, worker._writing = write_end, True, threading.Lock()
    try:
        os.set_blocking(write_end, False)
        filled = 0
        with contextlib.suppress(BlockingIOError):
            while True:
                filled += os.write(write_end, b"x" * 4096)
        assert not worker.try_send(b"job")
        assert not worker.try_send(b"y" * (_background._PIPE_BUF + 1))  # could not be whole
        sender = threading.Thread(target=worker.send, args=(b"job",))
        sender.start()
        sender.join(0.2)
        assert sender.is_alive()  # waiting for room
        drained = b""
        while len(drained) < filled + 3 and select.select([read_end], [], [], 10)[0]:
            drained += os.read(read_end, 65536)
        sender.join(10)
        assert not sender.is_alive() and drained == b"x" * filled + b"job"
    finally:
        os.close(read_end)
        os.close(write_end)


def test_background_failure_keeps_the_generic_kernel(rng, monkeypatch):
    kernel = _tiers.Tiered(cholesky._potrf_kernel(0), cholesky._potrf_kernel, (7,))
    as_if_never_compiled(monkeypatch)
    monkeypatch.setattr(_tiers, "load_cached", lambda dispatcher, sig: False)
    blocksolve.set_specialization("background")
    a, c, info = _potrf_arguments(rng, 7)
    kernel(0, 3, a, c, info, True, True)
    assert blocksolve.wait_for_kernels(timeout=600)
    assert kernel.state == "failed" and "not found in the disk cache" in kernel.error
    assert kernel.pick((0, 3, a, c, info, True, True)) is kernel.generic


def test_a_kernel_compiled_before_is_loaded_not_compiled(rng):
    """The worker, started ahead of need, finds the marker and answers at once, without
    importing numba (a process whose kernels are all cached keeps a bare interpreter);
    this process loads the kernel."""
    a, c, info = _potrf_arguments(rng, 9)
    sig = _jit.signature_of(cholesky._potrf_kernel(9), (0, 3, a, c, info, True, True))
    _tiers.compile_specialised(cholesky._potrf_kernel, (9,), sig)
    assert _tiers.compiled_before(cholesky._potrf_kernel, (9,), sig)
    # Another key is another marker (33: above SPECIALIZE_UP_TO, no call compiles it, so the
    # answer does not depend on what the shared cache holds).
    assert not _tiers.compiled_before(cholesky._potrf_kernel, (33,), sig)
    script = """
        import numpy as np, blocksolve
        from blocksolve.cpu import _background, _tiers
        blocksolve.set_specialization("background")
        for _ in range(2):  # the second call hands the specialised kernel over
            blocksolve.cholesky(np.eye(9)[None].repeat(3, axis=0))
        assert blocksolve.wait_for_kernels(timeout=300)
        stats = _background.statistics()
        try:
            with open(f"/proc/{_background._worker.process.pid}/maps") as maps:
                numba_in_worker = "llvmlite" in maps.read()
        except OSError:  # no /proc here
            numba_in_worker = False
        print(stats["loaded"], stats["compiled"], numba_in_worker,
              [k.state for k in _tiers.tiered_kernels()])
    """
    process = _run(script)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    assert out.split() == ["1", "0", "False", "['ready']"]


def _run(script, env=None, timeout=300):
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def test_two_processes_compile_a_kernel_once(tmp_path):
    """Both ask for the same kernel at the same time: one compiles, the other waits
    for it and loads it from the disk cache."""
    script = """
        import numpy as np
        from blocksolve.cpu import _jit, _numba_cache, cholesky
        kernel = cholesky._potrf_kernel(3)
        a = np.eye(3)[None]
        _numba_cache.compile_locked(kernel, _jit.signature_of(
            kernel, (0, 1, a, a.copy(), np.zeros(1, np.int32), True, True)))
        print(sum(kernel._cache_misses.values()), sum(kernel._cache_hits.values()))
    """
    env = {"BLOCKSOLVE_CACHE_DIR": str(tmp_path)}
    processes = [_run(script, env) for _ in range(2)]
    counts = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        counts.append(tuple(map(int, out.split())))
    assert sorted(counts) == [(0, 1), (1, 0)]  # (compiled, loaded from disk) per process


def test_exit_does_not_wait_for_background_compilation():
    script = """
        import time
        import numpy as np
        from blocksolve.cpu import _background, _jit, _tiers, cholesky
        _tiers.set_specialization("background")
        _tiers.compiled_before = lambda factory, key, sig: False  # as if never compiled
        kernel = _tiers.Tiered(cholesky._potrf_kernel(0), cholesky._potrf_kernel, (11,))
        a = np.eye(11)[None]
        kernel(0, 1, a, a.copy(), np.zeros(1, np.int32), True, True)
        while _background._worker is None:  # started by the background thread
            time.sleep(0.01)
        print(_background.statistics()["pending"], _background._worker.process.pid)
    """
    process = _run(script)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    pending, worker = map(int, out.split())
    assert pending == 1  # the interpreter exited with the job still queued
    deadline = time.monotonic() + 60
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(worker), "the background compiler outlived its interpreter"


def _alive(pid):
    """Running (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # pragma: no cover - no /proc
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True
