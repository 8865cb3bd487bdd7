"""SciPy's LinAlgWarning for ill-conditioned systems: ``solve`` with a named structure
estimates each matrix's reciprocal condition number as LAPACK's xGECON/xPOCON do and
warns, naming the batch positions, where it is below the machine epsilon."""

import contextlib
import warnings

import numba
import numpy as np
import pytest
import scipy.linalg
from scipy.linalg import lapack

import blocksolve
from _helpers import DTYPES, assert_close, random_general, random_matrix, random_spd
from blocksolve.cpu.kernels import _condition

PREFIX = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}


@numba.njit(error_model="numpy")  # as the kernels: a division by zero is inf, no exception
def _kernel_estimate(factor, kind, norm):
    """The kernels' estimate of rcond, and their verdict (with the cheap bound first)."""
    vector, signs = _condition.condition_work(factor)
    rcond = _condition.reciprocal_condition(factor, kind, norm, vector, signs)
    return rcond, _condition.singular_to_working_precision(factor, kind, norm, vector, signs)


def _kernel_rcond(factor, kind, norm):
    return _kernel_estimate(factor, kind, norm)[0]


def _kernel_verdict(factor, kind, norm):
    return _kernel_estimate(factor, kind, norm)[1]


@numba.njit
def _kernel_norms(a, lower):
    return _condition.one_norm(a, a.shape[0]), _condition.hermitian_one_norm(a, a.shape[0], lower)


@numba.njit
def _kernel_triangular_norm(a, lower):
    return _condition.triangular_one_norm(a, a.shape[0], lower)


def _badly_scaled(rng, n, dtype, spread):
    """A general matrix with columns scaled over ``spread`` orders of magnitude."""
    a = random_general(rng, (), n, dtype)
    return (a * np.logspace(0, -spread, n)).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 12])
def test_estimates_are_lapacks(rng, dtype, n):
    """The kernels' estimator takes LAPACK's steps: xGECON's and xPOCON's numbers."""
    p = PREFIX[dtype]
    for trial in range(12):
        a = _badly_scaled(rng, n, dtype, spread=trial)
        lu, _, info = getattr(lapack, p + "getrf")(a)
        assert info == 0
        norm, _ = _kernel_norms(a, True)
        assert_close(norm, getattr(lapack, p + "lange")("1", a), dtype, n=n)
        expected = getattr(lapack, p + "gecon")(lu, norm)[0]
        assert_close(_kernel_rcond(lu, _condition.LU, norm), expected, dtype, factor=10, n=n)

        h = random_spd(rng, (), n, dtype) * np.outer(*2 * [np.logspace(0, -trial / 2, n)])
        h = h.astype(dtype)
        for lower, kind in ((True, _condition.CHOLESKY_LOWER), (False, _condition.CHOLESKY_UPPER)):
            c, info = getattr(lapack, p + "potrf")(h, lower=lower)
            assert info == 0
            norm = _kernel_norms(h, lower)[1]
            assert_close(norm, getattr(lapack, p + "lange")("1", h), dtype, n=n)
            expected = getattr(lapack, p + "pocon")(c, norm, uplo="L" if lower else "U")[0]
            assert_close(_kernel_rcond(c, kind, norm), expected, dtype, factor=10, n=n)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 4, 7])
@pytest.mark.parametrize("lower", [True, False])
def test_triangular_estimates_are_lapacks(rng, dtype, n, lower):
    p = PREFIX[dtype]
    kind = _condition.TRIANGULAR_LOWER if lower else _condition.TRIANGULAR_UPPER
    for trial in range(8):
        a = _badly_scaled(rng, n, dtype, spread=trial)
        inside = np.tri(n, dtype=bool) if lower else np.tri(n, dtype=bool).T
        tri = np.where(inside, a, 1e3).astype(dtype)  # the other triangle is never read
        t = np.where(inside, a, 0).astype(dtype)
        norm = _kernel_triangular_norm(tri, lower)
        assert_close(norm, getattr(lapack, p + "lange")("1", t), dtype, n=n)
        expected = getattr(lapack, p + "trcon")(t, uplo="L" if lower else "U")[0]
        assert_close(_kernel_rcond(tri, kind, norm), expected, dtype, factor=10, n=n)


def test_estimate_edge_cases():
    eye = np.eye(3)
    assert _kernel_rcond(eye, _condition.LU, 0.0) == 0
    assert _kernel_rcond(eye, _condition.LU, np.inf) == 0
    assert np.isnan(_kernel_rcond(eye, _condition.LU, np.nan))
    assert _kernel_rcond(np.empty((0, 0)), _condition.LU, 0.0) == 1
    singular = np.diag([1.0, 0.0, 1.0])  # its solves overflow: flagged all the same
    assert not _kernel_rcond(singular, _condition.LU, 1.0) >= np.finfo(np.float64).eps


def _scipy_warns(a, b, assume_a, lower=False):
    """Whether ``scipy.linalg.solve`` warns LinAlgWarning for this one matrix."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scipy.linalg.solve(a, b, assume_a=assume_a, lower=lower)
    return any(issubclass(w.category, scipy.linalg.LinAlgWarning) for w in caught)


def _mixed_batch(rng, structure, dtype, n=4, batch=9):
    """Well- and ill-conditioned matrices, and the borderline ones of SciPy's threshold."""
    eps = np.finfo(dtype).eps
    scales = [1, 1e-3, 0.3 * eps, 3 * eps, 1e-30, 1, 0.7 * eps, 1.5 * eps, 1e-2][:batch]
    matrices = []
    for s in scales:
        d = np.ones(n)
        d[1] = s  # one small direction, kept exact: rcond is s up to the rest's conditioning
        if structure.endswith("triangular"):
            m = random_general(rng, (), n, np.float64) * d
            m = np.tril(m) if structure.startswith("lower") else np.triu(m)
        elif structure == "pos":
            q = np.linalg.qr(random_general(rng, (), n, np.float64))[0]
            m = q.T @ np.diag(np.linspace(1, 2, n)) @ q
            m = m * np.sqrt(np.outer(d, d))  # D^1/2 M D^1/2: positive definite for any s
        else:
            m = random_general(rng, (), n, np.float64) * d
        matrices.append(m)
    return np.stack(matrices).astype(dtype)


@contextlib.contextmanager
def _runner(which):
    """Run the calls on the generated kernel (``'kernel'``) or on LAPACK."""
    previous = blocksolve.set_specialization("wait" if which == "kernel" else "never")
    try:
        yield
    finally:
        blocksolve.set_specialization(previous)


@pytest.mark.parametrize("structure", ["gen", "pos", "lower triangular", "upper triangular"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("which", ["kernel", "lapack"])
def test_warns_where_scipy_warns(rng, structure, dtype, which):
    a = _mixed_batch(rng, structure, dtype)
    b = random_matrix(rng, (a.shape[0], 4, 2), dtype)
    flagged = [i for i in range(len(a)) if _scipy_warns(a[i], b[i], structure)]
    assert 3 <= len(flagged) < len(a)  # the batch has both kinds
    with _runner(which):
        x, info = blocksolve.solve(a, b, assume_a=structure, return_info=True)
        np.testing.assert_array_equal(np.flatnonzero(info), flagged)
        assert (info[flagged] == 5).all()  # n + 1, LAPACK xGESVX's and xPOSVX's code
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # solve_triangular never estimates, as SciPy's
            if structure.endswith("triangular"):
                lower = structure.startswith("lower")
                np.testing.assert_array_equal(blocksolve.solve_triangular(a, b, lower=lower), x)
        positions = ", ".join(f"\\({i},\\)" for i in flagged[:5])
        with pytest.warns(blocksolve.LinAlgWarning, match=f"at batch indices {positions}"):
            again = blocksolve.solve(a, b, assume_a=structure)
    np.testing.assert_array_equal(again, x)
    a_copy = a.copy()
    for i in set(range(len(a))) - set(flagged):  # the others' results are SciPy's
        expected = scipy.linalg.solve(a[i], b[i], assume_a=structure)
        assert_close(x[i], expected, dtype, factor=100, n=4)
    assert np.isfinite(x).all()  # the flagged ones' results stand too
    np.testing.assert_array_equal(a, a_copy)


@pytest.mark.parametrize("structure", ["gen", "pos", "lower triangular", "upper triangular"])
def test_one_matrix_warns_as_scipy(structure):
    a = np.diag([1.0, 1e-20, 3.0])
    b = np.ones(3)
    with pytest.warns(blocksolve.LinAlgWarning, match="solve: ill-conditioned matrix"):
        x = blocksolve.solve(a, b, assume_a=structure)
    with pytest.warns(scipy.linalg.LinAlgWarning):
        expected = scipy.linalg.solve(a, b, assume_a=structure)
    np.testing.assert_array_equal(x, expected)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        blocksolve.solve(np.eye(3), b, assume_a=structure)


def test_lower_triangle_is_the_matrix(rng):
    """With ``lower=True`` the norm is the Hermitian matrix's the lower triangle holds."""
    a = np.diag([1.0, 1e-20, 2.0, 1.0])
    a[0, 1:] = 1e6  # never read
    b = np.ones((2, 4, 1))
    x, info = blocksolve.solve(
        np.stack([a, np.eye(4)]), b, assume_a="pos", lower=True, return_info=True
    )
    np.testing.assert_array_equal(info, [5, 0])
    assert np.isfinite(x).all()


def test_numpy_semantics_do_not_estimate():
    """``solve(a, b)`` is numpy.linalg.solve: no condition estimate, no warning."""
    a = np.stack([np.diag([1.0, 1e-20, 3.0])] * 4)
    b = np.ones((4, 3, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x, info = blocksolve.solve(a, b, return_info=True)
        blocksolve.linalg.solve(a, b)
    np.testing.assert_array_equal(info, 0)
    np.testing.assert_array_equal(x, np.linalg.solve(a, b))


def test_policies():
    a = np.stack([np.eye(3), np.diag([1.0, 1e-20, 3.0]), np.zeros((3, 3))])
    b = np.ones((3, 3, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for policy in ("ignore", "nan"):  # no warning, and an ill-conditioned matrix is no failure
            x = blocksolve.solve(a, b, assume_a="gen", errors=policy)
            assert np.isfinite(x[:2]).all()
        assert np.isnan(x[2]).all()  # the singular one, under 'nan'
        # A call that raises for a singular matrix does not warn first.
        with pytest.raises(blocksolve.LinAlgError, match=r"at batch index \(2,\)"):
            blocksolve.solve(a, b, assume_a="gen")
    with pytest.warns(blocksolve.LinAlgWarning) as record:
        blocksolve.solve(a, b, assume_a="gen", errors="warn")
    failed, ill = (str(w.message) for w in record)  # the failures first
    assert "1 matrix of the batch failed, at batch index (2,)" in failed
    assert "1 ill-conditioned matrix (reciprocal condition number below the machine " in ill
    with blocksolve.errstate("ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        blocksolve.solve(a[:2], b[:2], assume_a="pos")


def test_no_right_hand_sides_no_estimate():
    """SciPy returns at once for an empty ``b``: nothing to warn about."""
    a = np.stack([np.diag([1.0, 1e-20, 3.0])] * 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for structure in ("gen", "pos", "upper triangular"):
            x = blocksolve.solve(a, np.ones((4, 3, 0)), assume_a=structure)
            assert x.shape == (4, 3, 0)


def test_dask_names_global_positions():
    da = pytest.importorskip("dask.array")
    a = np.stack([np.eye(3)] * 6)
    a[4] = np.diag([1.0, 1e-20, 3.0])
    b = np.ones((6, 3, 1))
    lazy = blocksolve.solve(da.from_array(a, chunks=(3, 3, 3)), b, assume_a="pos")
    with pytest.warns(blocksolve.LinAlgWarning, match=r"at batch index \(4,\)"):
        x = lazy.compute(scheduler="synchronous")
    np.testing.assert_array_equal(x, blocksolve.solve(a, b, assume_a="pos", errors="ignore"))


@numba.njit
def _kernel_bound(factor, kind):
    return _condition._inverse_norm_bound(factor, factor.shape[0], kind, np.empty(factor.shape[0]))


def _assert_bounds(bound, a):
    """``bound >= ||a^-1||_1`` (``a`` the product of the factors the bound read), where
    double precision gives that norm to 0.1 %."""
    if np.linalg.cond(a, 1) < 1e12:
        assert bound >= np.linalg.norm(np.linalg.inv(a), 1) * (1 - 1e-3)


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_cheap_bound_never_changes_the_verdict(rng, dtype):
    """The comparison-matrix bound is at least ||a^-1||_1, so where it clears a matrix the
    estimate (a lower bound of ||a^-1||_1) would have too."""
    eps = np.finfo(dtype).eps
    verdicts = set()
    for n in (1, 2, 4, 8, 16):
        for spread in np.linspace(0, -np.log10(eps) + 2, 12):
            a = _badly_scaled(rng, n, dtype, spread)
            lu, _, _ = getattr(lapack, PREFIX[dtype] + "getrf")(a)
            norm = _kernel_norms(a, True)[0]
            lu128 = lu.astype(np.complex128)
            product = (np.tril(lu128, -1) + np.eye(n)) @ np.triu(lu128)  # P^T a, as factored
            _assert_bounds(_kernel_bound(lu, _condition.LU), product)
            verdict = _kernel_verdict(lu, _condition.LU, norm)
            estimate = _kernel_rcond(lu, _condition.LU, norm)
            assert verdict == (not estimate >= eps)
            verdicts.add(verdict)
            h = (a @ a.conj().T).astype(dtype)
            c, info = getattr(lapack, PREFIX[dtype] + "potrf")(h, lower=True)
            if info == 0:
                kind, norm = _condition.CHOLESKY_LOWER, _kernel_norms(h, True)[1]
                c128 = np.tril(c).astype(np.complex128)
                _assert_bounds(_kernel_bound(c, kind), c128 @ c128.conj().T)
                assert _kernel_verdict(c, kind, norm) == (not _kernel_rcond(c, kind, norm) >= eps)
    assert verdicts == {True, False}
