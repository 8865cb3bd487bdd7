"""The CPU kernels and how a call gets one.

* The kernel that reads its sizes at run time and the one with its sizes baked in
  run the same algorithm: they agree to rounding, with identical ``info``, on a
  few patterns per kernel family (the per-family modules check every pattern of
  their grids against NumPy on each; the second run is ``pytest -m exhaustive``).
* A call whose kernel is not compiled yet runs on NumPy's or SciPy's LAPACK while
  the kernel compiles in a background process; later calls run the kernel.  A
  kernel is compiled once however often it is asked for, and across processes;
  the interpreter exits without waiting for it.
"""

import contextlib
import os
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import blocksolve
from _helpers import (
    assert_close,
    random_general,
    random_matrix,
    random_spd,
    well_conditioned,
)
from blocksolve._cache import Memo
from blocksolve.cpu import _background, _compiled, _jit
from blocksolve.cpu.kernels import cholesky, inverse

ROOT = Path(__file__).resolve().parents[1]
# One real and one complex dtype (the straight-line QR/lstsq code differs
# for complex), single precision for one of them.
TIER_DTYPES = (np.float64, np.complex64)


@contextlib.contextmanager
def run_time_sizes(flag):
    previous = _jit.use_run_time_sizes(flag)
    try:
        yield
    finally:
        _jit.use_run_time_sizes(previous)


def both_tiers(call):
    """``call()`` on the run-time-size kernels, then on the size-specialised ones."""
    with run_time_sizes(True):
        generic = call()
    with run_time_sizes(False):
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


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("function", ["cholesky", "cho_factor"])
def test_cholesky_straight_line_equals_looped_to_the_bit(rng, dtype, function):
    """Matrices up to 8x8 factor as straight-line code across lanes: the looped kernel's
    operations in its order, so the same factors to the bit, and the same partial factors
    and info where a matrix fails (redone alone).  A complex diagonal's imaginary part is
    not read, as in LAPACK."""
    n = 5
    a = random_spd(rng, (40,), n, dtype)  # full blocks of lanes and a partial one
    a[3, n - 1, n - 1] = -1.0
    a[17, 2, 2] = np.nan
    if a.dtype.kind == "c":
        a[8, 1, 1] += 0.25j
    if function == "cholesky":
        call = lambda: blocksolve.cholesky(a, errors="ignore", return_info=True)  # noqa: E731
    else:  # the upper factor, the other triangle kept
        call = lambda: blocksolve.cho_factor(  # noqa: E731
            a, check_finite=False, errors="ignore", return_info=True
        )
    generic, specialised = both_tiers(call)
    (result_g, info_g), (result_s, info_s) = generic, specialised
    factor_g = result_g if function == "cholesky" else result_g[0]
    factor_s = result_s if function == "cholesky" else result_s[0]
    np.testing.assert_array_equal(info_g, (np.arange(40) == 3) * n + (np.arange(40) == 17) * 3)
    np.testing.assert_array_equal(info_s, info_g)
    np.testing.assert_array_equal(factor_s, factor_g)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("lower", [True, False])
def test_cho_solve_straight_line_equals_looped_to_the_bit(rng, dtype, lower):
    """cho_solve with small real factors runs as straight-line code across lanes: the
    looped kernel's two triangular solves in their order, so the same solutions to the
    bit, and the same info where a factor has a zero on its diagonal (infs/NaNs there)."""
    n = 5
    c, _ = blocksolve.cho_factor(random_spd(rng, (40,), n, dtype), lower=lower)
    c[6, 2, 2] = 0
    b = random_matrix(rng, (40, n, 2), dtype)
    generic, specialised = both_tiers(
        lambda: blocksolve.cho_solve((c, lower), b, check_finite=False, return_info=True)
    )
    (x_g, info_g), (x_s, info_s) = generic, specialised
    np.testing.assert_array_equal(info_g, (np.arange(40) == 6) * 3)
    np.testing.assert_array_equal(info_s, info_g)
    np.testing.assert_array_equal(x_s, x_g)
    assert not np.isfinite(x_g[6]).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("lower", [True, False])
def test_solve_pos_straight_line_equals_looped_to_the_bit(rng, dtype, lower):
    """solve(assume_a='pos') of small real matrices runs as straight-line code across
    lanes: the looped kernel's factorization and solves in their order, so the same
    solutions to the bit; ``b`` back and the failing minor's order where a matrix is not
    positive definite (a NaN included), and ``n + 1`` where one is singular to working
    precision, as the looped kernel's condition estimate says."""
    n = 5
    a = random_spd(rng, (40,), n, dtype)
    a[3, 2, 2] = -1.0  # not positive definite at the third minor
    a[7, 1, 1] = np.nan
    a[12] = np.diag([1.0] * (n - 1) + [np.finfo(dtype).eps / 16])  # singular to precision
    factor = np.eye(n) - 1000 * np.tri(n, k=-1)  # ... through its factor's off-diagonals
    a[15] = factor @ factor.T
    b = random_matrix(rng, (40, n, 2), dtype)
    generic, specialised = both_tiers(
        lambda: blocksolve.solve(
            a, b, assume_a="pos", lower=lower, errors="ignore", return_info=True
        )
    )
    (x_g, info_g), (x_s, info_s) = generic, specialised
    assert info_g[3] == 3 and info_g[7] == 2 and info_g[12] == info_g[15] == n + 1
    np.testing.assert_array_equal(info_s, info_g)
    np.testing.assert_array_equal(x_s, x_g)
    np.testing.assert_array_equal(x_g[3], b[3])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_solve_triangular_straight_line_equals_looped_to_the_bit(
    rng, dtype, lower, trans, unit_diagonal
):
    """solve_triangular with small real triangles runs as straight-line code across lanes:
    the looped kernel's substitution on ``op(a)`` in its order, so the same solutions to
    the bit, and the same info where the diagonal holds a zero (infs/NaNs there)."""
    n = 5
    a = random_matrix(rng, (40, n, n), dtype) + 2 * n * np.eye(n, dtype=dtype)
    a[6, 2, 2] = 0  # ignored with a unit diagonal
    a[9, 3, 1 if lower else 4] = np.nan  # in the triangle read
    b = random_matrix(rng, (40, n, 3), dtype)
    generic, specialised = both_tiers(
        lambda: blocksolve.solve_triangular(
            a,
            b,
            lower=lower,
            trans=trans,
            unit_diagonal=unit_diagonal,
            check_finite=False,
            return_info=True,
        )
    )
    (x_g, info_g), (x_s, info_s) = generic, specialised
    expected_info = 0 if unit_diagonal else (np.arange(40) == 6) * 3
    np.testing.assert_array_equal(info_g, expected_info)
    np.testing.assert_array_equal(info_s, info_g)
    np.testing.assert_array_equal(x_s, x_g)
    assert not np.isfinite(x_g[9]).all()
    assert unit_diagonal or not np.isfinite(x_g[6]).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("trans", [0, 1, 2])
def test_lu_solve_straight_line_equals_looped_to_the_bit(rng, dtype, trans):
    """lu_solve with small real factors runs as straight-line code across lanes, each
    lane's row swaps as selects: the looped kernel's swaps and triangular solves in their
    order, so the same solutions to the bit -- pivots LAPACK would not produce (a row
    above the step's) and a zero on U's diagonal included -- and the same info."""
    n = 5
    (lu, piv), _ = blocksolve.lu_factor(random_general(rng, (40,), n, dtype), return_info=True)
    piv[3] = [4, 0, 4, 1, 2]  # any row, above the step's too
    lu[6, 2, 2] = 0
    lu[9, 1, 3] = np.nan
    b = random_matrix(rng, (40, n, 2), dtype)
    generic, specialised = both_tiers(
        lambda: blocksolve.lu_solve(
            (lu, piv), b, trans=trans, check_finite=False, errors="ignore", return_info=True
        )
    )
    (x_g, info_g), (x_s, info_s) = generic, specialised
    np.testing.assert_array_equal(info_g, (np.arange(40) == 6) * 3)
    np.testing.assert_array_equal(info_s, info_g)
    np.testing.assert_array_equal(x_s, x_g)
    assert not np.isfinite(x_g[9]).all()


@pytest.mark.parametrize("structure", ["lower triangular", "upper triangular"])
def test_triangular_solve_condition_straight_line_equals_looped(rng, structure):
    """scipy.linalg.solve of a small real triangle: the straight-line kernel flags the
    matrices singular to working precision (``info = n + 1``) as the looped one does."""
    n = 4
    a = random_matrix(rng, (24, n, n), np.float64) + 2 * n * np.eye(n)
    a[5, 1, 1] = 1e-30  # singular to working precision
    a[8, 2, 2] = 0  # exactly singular
    b = random_matrix(rng, (24, n, 1), np.float64)
    generic, specialised = both_tiers(
        lambda: blocksolve.solve(a, b, assume_a=structure, errors="ignore", return_info=True)
    )
    (x_g, info_g), (x_s, info_s) = generic, specialised
    np.testing.assert_array_equal(info_g, (np.arange(24) == 5) * (n + 1) + (np.arange(24) == 8) * 3)
    np.testing.assert_array_equal(info_s, info_g)
    np.testing.assert_array_equal(x_s, x_g)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "function", ["lu_factor", "solve", "solve-gen", "inv", "inv-in-place", "det", "slogdet"]
)
def test_lu_straight_line_equals_looped_to_the_bit(rng, monkeypatch, dtype, function):
    """Small real matrices factor, solve, invert and take determinants as straight-line code
    across lanes, the pivots chosen per lane by selects: the looped kernel's operations
    in its order, so the same results to the bit -- singular matrices, a pivot below the
    smallest normal number, NaNs, determinants that over- and underflow included -- and
    the same info (SciPy's ``n + 1`` for an ill-conditioned matrix too).  The larger
    inverses' variant, the identity left in place, skips its zeros' products: the same
    bits where the factors are finite."""
    if function == "inv-in-place":
        monkeypatch.setattr(inverse, "IDENTITY_IN_PLACE_FROM", 3)
    n, tiny = 3, np.finfo(dtype).tiny
    a = random_general(rng, (40,), n, dtype)  # full blocks of lanes and a partial one
    a[2] = 0
    a[5, :, 1] = a[5, :, 0]  # singular: a zero pivot or an ill-conditioned factor
    a[7, :, 0] = [tiny / 4, tiny / 8, 0]  # a subnormal pivot: its multiplier divides
    a[11, 1, 2] = np.nan
    a[13] *= np.sqrt(np.finfo(dtype).max)  # the product of the pivots overflows
    a[17] *= np.sqrt(tiny)  # ... and underflows
    b = random_matrix(rng, (40, n, 2), dtype)
    calls = {
        "lu_factor": lambda: (lambda factors, info: (*factors, info))(
            *blocksolve.lu_factor(a, check_finite=False, errors="ignore", return_info=True)
        ),
        "solve": lambda: blocksolve.solve(a, b, errors="ignore", return_info=True),
        "solve-gen": lambda: blocksolve.solve(
            a, b, assume_a="gen", errors="ignore", return_info=True
        ),
        "inv": lambda: blocksolve.inv(a, errors="ignore", return_info=True),
        "inv-in-place": lambda: blocksolve.inv(a, errors="ignore", return_info=True),
        "det": lambda: (blocksolve.det(a),),
        "slogdet": lambda: tuple(blocksolve.slogdet(a)),
    }
    generic, specialised = both_tiers(calls[function])
    for g, s in zip(generic, specialised, strict=True):
        np.testing.assert_array_equal(s, g)
    if function in ("lu_factor", "solve", "solve-gen", "inv"):
        info = generic[-1]
        assert info[2] == 1 and not info[[0, 1, 3]].any()
        assert info[5] in ((n + 1,) if function == "solve-gen" else (0, 2))


def test_one_kernel_per_size_up_to_the_limit_then_one_for_every_size():
    with run_time_sizes(False):
        assert cholesky._potrf_kernel.sized(7, lower=True, clean=False).key == (7, True, False)
        large = cholesky._potrf_kernel.sized(_jit.SPECIALIZE_UP_TO + 1, lower=False, clean=True)
        assert large.key == (0, False, True)
    with run_time_sizes(True):
        assert cholesky._potrf_kernel.sized(7, lower=True, clean=True).key == (0, True, True)
    with pytest.raises(TypeError, match=r"_potrf_kernel: options \['lower'\], not"):
        cholesky._potrf_kernel.sized(7, lower=True)


def test_numpy_scalar_options_name_the_same_kernel():
    with run_time_sizes(False):
        kernel = cholesky._potrf_kernel.sized(7, lower=np.True_, clean=np.False_)
    assert kernel.key == (7, True, False)
    assert all(type(value) is bool for value in kernel.key[1:])
    with pytest.raises(TypeError, match="bool or an int"):
        cholesky._potrf_kernel.sized(7, lower="L", clean=False)


def _typed_in_full(args):
    kernel = cholesky._potrf_kernel(0, True, True)
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
    kernel = cholesky._potrf_kernel(0, True, True)
    for x in kinds:
        assert _jit.signature_of(kernel, (x,)) == _typed_in_full((x,)), repr(x)
    # Arguments that differ only in their sizes share one memo entry: the same tuple.
    small = (0, 1, np.zeros((1, 5, 5)), np.zeros((1, 5, 5)), np.zeros(1, np.int32))
    large = (0, 9, np.zeros((9, 8, 8)), np.zeros((9, 8, 8)), np.zeros(9, np.int32))
    assert _jit.signature_of(kernel, small) is _jit.signature_of(kernel, large)
    assert _jit.signature_of(kernel, large) == _typed_in_full(large)


def test_bad_mode_refused():
    with pytest.raises(
        ValueError,
        match="set_specialization: mode must be one of 'background', 'wait', 'never'; got 'later'",
    ):
        blocksolve.set_specialization("later")


@contextlib.contextmanager
def mode(name):
    previous = blocksolve.set_specialization(name)
    try:
        yield
    finally:
        blocksolve.set_specialization(previous)


def _potrf_arguments(rng, n, batch=3):
    a = random_spd(rng, (batch,), n, np.float64)
    return a, np.empty_like(a), np.zeros(batch, np.int32)


def _never_compiled(monkeypatch):
    """Whatever this process and the shared disk cache hold, the kernels here are new and
    compiled by the worker."""
    monkeypatch.setattr(_compiled, "_ENTRIES", Memo("test-compilations", register=False))
    monkeypatch.setattr(_background, "load_cached", lambda dispatcher, sig: False)


def test_background_compilation_takes_over(rng, monkeypatch):
    """Not ready: NotReady (the caller runs LAPACK) and one job for the worker, however
    often it is asked for; then the kernel itself from the next launch on."""
    _never_compiled(monkeypatch)
    kernel = _compiled.Kernel(cholesky._potrf_kernel, (7, True, True))
    args = (0, 3, *_potrf_arguments(rng, 7))
    with mode("background"):
        before = _background.statistics()
        with pytest.raises(_compiled.NotReady):
            kernel.pick(args)
        entry = kernel._entry
        with pytest.raises(_compiled.NotReady):  # again while pending: no second job
            _compiled.Kernel(cholesky._potrf_kernel, (7, True, True)).pick(args)
        assert _background.statistics()["pending"] == before["pending"] + 1
        if hasattr(os, "getpriority"):  # the worker yields to its caller
            while _background._Worker.current is None:
                time.sleep(0.01)
            worker = _background._Worker.current.process.pid
            assert os.getpriority(os.PRIO_PROCESS, worker) >= 10
        assert blocksolve.wait_for_kernels(timeout=600)
        assert entry.ready is cholesky._potrf_kernel(7, True, True), entry.error
        assert _background.statistics()["compiled"] == before["compiled"] + 1
        assert kernel.pick(args) is entry.ready


def test_a_call_runs_lapack_until_its_kernel_is_ready(rng):
    """The public path: NumPy's result at once, the kernel's (to rounding) once ready."""
    a = random_spd(rng, (5,), 13, np.float64)
    with mode("background"), run_time_sizes(False):
        first = blocksolve.cholesky(a)
        assert blocksolve.wait_for_kernels(timeout=600)
        later = blocksolve.cholesky(a)
    np.testing.assert_array_equal(first, np.linalg.cholesky(a))
    assert_close(later, first, np.float64, n=13)


def test_background_failure_warns_and_keeps_lapack(rng, monkeypatch):
    _never_compiled(monkeypatch)
    monkeypatch.setattr(_compiled, "load_cached", lambda dispatcher, sig: False)
    kernel = _compiled.Kernel(cholesky._potrf_kernel, (6, True, True))
    args = (0, 3, *_potrf_arguments(rng, 6))
    with mode("background"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(_compiled.NotReady):
            kernel.pick(args)
        assert blocksolve.wait_for_kernels(timeout=600)
        with pytest.raises(_compiled.NotReady):
            kernel.pick(args)
    assert kernel._entry.state == "failed" and "not found in the disk cache" in kernel._entry.error
    assert any("failed to compile" in str(w.message) for w in caught)


def test_never_runs_every_call_on_lapack(rng):
    a = random_spd(rng, (6,), 5, np.float64)
    with mode("never"):
        np.testing.assert_array_equal(blocksolve.cholesky(a), np.linalg.cholesky(a))


def test_a_kernel_compiled_before_is_loaded_not_compiled(rng):
    """A new process finds the kernel in the disk cache: loaded by the background thread,
    no worker started."""
    a, c, info = _potrf_arguments(rng, 9)
    from blocksolve.cpu import _numba_cache

    kernel = cholesky._potrf_kernel(9, True, True)  # what cholesky(a) runs
    _numba_cache.compile_locked(kernel, _jit.signature_of(kernel, (0, 3, a, c, info)))
    script = """
        import numpy as np, blocksolve
        from blocksolve.cpu import _background
        blocksolve.set_specialization("background")
        blocksolve.cholesky(np.eye(9)[None].repeat(3, axis=0))
        assert blocksolve.wait_for_kernels(timeout=300)
        stats = _background.statistics()
        print(stats["loaded"], stats["compiled"], _background._Worker.current is None)
    """
    process = _run(script)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    assert out.split() == ["1", "0", "True"]


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
        from blocksolve.cpu import _jit, _numba_cache
        from blocksolve.cpu.kernels import cholesky, inverse
        kernel = cholesky._potrf_kernel(3, True, True)
        a = np.eye(3)[None]
        _numba_cache.compile_locked(kernel, _jit.signature_of(
            kernel, (0, 1, a, a.copy(), np.zeros(1, np.int32))))
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


_QUEUE_TWO_AND_EXIT = """
    import time
    import numpy as np
    import blocksolve
    from blocksolve.cpu import _background
    blocksolve.set_specialization("background")
    blocksolve.cholesky(np.eye(11)[None].repeat(2, axis=0))
    blocksolve.qr(np.eye(11)[None].repeat(2, axis=0))
    while _background._Worker.current is None:  # started by the background thread
        time.sleep(0.01)
    print(_background.statistics()["pending"], _background._Worker.current.process.pid)
"""

_LOAD_OR_COMPILE_THE_TWO = """
    import numpy as np
    import blocksolve
    from blocksolve.cpu import _background
    blocksolve.set_specialization("background")
    blocksolve.cholesky(np.eye(11)[None].repeat(2, axis=0))
    blocksolve.qr(np.eye(11)[None].repeat(2, axis=0))
    assert blocksolve.wait_for_kernels(timeout=300)
    stats = _background.statistics()
    print(stats["loaded"], stats["compiled"])
"""


def _exit_with_two_kernels_queued(env):
    process = _run(_QUEUE_TWO_AND_EXIT, env)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    pending, worker = map(int, out.split())
    assert pending == 2  # the interpreter exited with both kernels unfinished
    return worker


def test_nothing_runs_after_the_program_exits(tmp_path):
    """By default the worker is stopped when the program ends, however much it had
    left: within 2 s no blocksolve process is alive; the next run compiles again."""
    env = {"BLOCKSOLVE_CACHE_DIR": str(tmp_path)}
    worker = _exit_with_two_kernels_queued(env)
    assert _gone_within(worker, 2, poll=0.05), "the background compiler outlived the program"
    assert _loaded_and_compiled(env) == ["0", "2"]


def test_finish_at_exit_hands_the_queued_kernels_to_the_worker(tmp_path):
    """With ``$BLOCKSOLVE_FINISH_AT_EXIT=1`` the interpreter exits without waiting for the
    compiler, which finishes the kernels still queued into the disk cache on its own
    and ends; the next process loads them."""
    env = {"BLOCKSOLVE_CACHE_DIR": str(tmp_path), "BLOCKSOLVE_FINISH_AT_EXIT": "1"}
    worker = _exit_with_two_kernels_queued(env)
    assert _gone_within(worker, 600, poll=0.2), "the worker did not end after its last job"
    assert _loaded_and_compiled(env) == ["2", "0"]


def _gone_within(pid, seconds, poll):
    """Whether process ``pid`` has ended within ``seconds``."""
    deadline = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(poll)
    return not _alive(pid)


def _loaded_and_compiled(env):
    """How many of the two kernels a new process loads from the cache, and compiles."""
    process = _run(_LOAD_OR_COMPILE_THE_TWO, env)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    return out.split()


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
