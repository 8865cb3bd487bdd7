"""blocksolve.linalg: the Array API standard's linalg spellings, on blocksolve's kernels."""

import inspect

import numpy as np
import pytest

import blocksolve
from _helpers import assert_close, random_general, random_matrix, random_spd, to_numpy
from blocksolve import linalg

array_api_compat = pytest.importorskip("array_api_compat")
compat_linalg = array_api_compat.array_namespace(np.empty(0)).linalg


def gaussian_log_likelihood(linalg, cov, residual):
    """A function written against the standard: ``-0.5 (r^T C^-1 r + log det C)`` per batch."""
    sign, logdet = linalg.slogdet(cov)
    x = linalg.solve(cov, residual[..., None])[..., 0]
    return -0.5 * ((residual * x).sum(-1) + logdet), sign


def test_a_function_written_against_the_standard_runs_on_blocksolve(xp, rng):
    cov = random_spd(rng, (500,), 4, np.float64)
    r = random_matrix(rng, (500, 4), np.float64)
    got, sign = gaussian_log_likelihood(linalg, xp.asarray(cov), xp.asarray(r))
    want, _ = gaussian_log_likelihood(compat_linalg, cov, r)
    assert type(got) is type(xp.asarray(cov))
    assert_close(got, want, np.float64, factor=10, n=4)
    np.testing.assert_array_equal(to_numpy(sign), 1)


def test_results_match_array_api_compat(rng):
    a = random_spd(rng, (6,), 4, np.complex128)
    g = random_general(rng, (6,), 4, np.complex128)
    b = random_matrix(rng, (6, 4, 2), np.complex128)
    assert_close(
        linalg.cholesky(a, upper=True), compat_linalg.cholesky(a, upper=True), np.complex128, n=4
    )
    assert_close(linalg.det(g), compat_linalg.det(g), np.complex128, factor=10, n=4)
    assert_close(linalg.inv(g), compat_linalg.inv(g), np.complex128, factor=10, n=4)
    assert_close(linalg.solve(g, b), compat_linalg.solve(g, b), np.complex128, factor=10, n=4)
    assert_close(
        linalg.solve(g[0], b[0, :, 0]),
        compat_linalg.solve(g[0], b[0, :, 0]),
        np.complex128,
        factor=10,
        n=4,
    )
    assert_close(linalg.eigvalsh(a), compat_linalg.eigvalsh(a), np.complex128, factor=4, n=4)
    for mode in ("reduced", "complete"):
        q, r = linalg.qr(g[..., :3], mode=mode)
        q_ref, r_ref = compat_linalg.qr(g[..., :3], mode=mode)
        assert q.shape == q_ref.shape and r.shape == r_ref.shape
        assert_close(q @ r, g[..., :3], np.complex128, factor=10, n=4)


def test_named_tuple_results():
    a = np.eye(3)
    assert linalg.eigh(a)._fields == ("eigenvalues", "eigenvectors")
    assert linalg.slogdet(a)._fields == ("sign", "logabsdet")
    assert linalg.qr(a)._fields == ("Q", "R")
    assert isinstance(linalg.eigh(a), blocksolve.EighResult)


def test_signatures_follow_the_standard():
    positional = inspect.Parameter.POSITIONAL_ONLY
    keyword = inspect.Parameter.KEYWORD_ONLY
    expected = {
        "cholesky": ["x", ("upper", False)],
        "det": ["x"],
        "eigh": ["x"],
        "eigvalsh": ["x"],
        "inv": ["x"],
        "qr": ["x", ("mode", "reduced")],
        "slogdet": ["x"],
        "solve": ["x1", "x2"],
    }
    for name, params in expected.items():
        got = list(inspect.signature(getattr(linalg, name)).parameters.values())
        assert len(got) == len(params), name
        for p, want in zip(got, params):
            if isinstance(want, tuple):
                assert (p.name, p.default, p.kind) == (*want, keyword), name
            else:
                assert (p.name, p.kind) == (want, positional), name


def test_qr_refuses_modes_outside_the_standard():
    with pytest.raises(ValueError, match=r"qr: mode must be 'reduced' or 'complete' .* got 'r'"):
        linalg.qr(np.eye(2), mode="r")


def test_what_is_not_provided_is_listed_and_absent():
    standard = {n for n in dir(compat_linalg) if not n.startswith("_") and n[0].islower()}
    provided = {n for n in linalg.__all__ if n[0].islower() and n != "NOT_PROVIDED"}
    assert provided <= standard
    assert not set(linalg.NOT_PROVIDED) & provided
    for name in linalg.NOT_PROVIDED:
        assert not hasattr(linalg, name)


def test_failures_follow_errstate(rng):
    a = np.stack([np.eye(2), -np.eye(2)])
    with pytest.raises(blocksolve.LinAlgError, match=r"cholesky: 1 matrix .* \(1,\)"):
        linalg.cholesky(a)
    with blocksolve.errstate("nan"):
        L = linalg.cholesky(a)
    assert np.isnan(L[1]).all() and (L[0] == np.eye(2)).all()


def test_a_strict_array_api_namespace_in_and_out(rng):
    """``array_api_strict`` arrays (DLPack on the host, no NumPy behaviour): every
    function of blocksolve.linalg, and blocksolve's own ones, take them and give them
    back, with NumPy's values -- as the standard's own ``linalg`` of that namespace does."""
    xp = pytest.importorskip("array_api_strict")
    if np.lib.NumpyVersion(np.__version__) < "2.1.0":
        pytest.skip("NumPy 2.0's from_dlpack gives read-only arrays, which it cannot export")
    a = random_spd(rng, (5,), 3, np.float64)
    b = random_matrix(rng, (5, 3, 2), np.float64)
    A, B = xp.asarray(a), xp.asarray(b)
    calls = [
        (linalg.cholesky(A), xp.linalg.cholesky(A)),
        (linalg.inv(A), xp.linalg.inv(A)),
        (linalg.det(A), xp.linalg.det(A)),
        (linalg.solve(A, B), xp.linalg.solve(A, B)),
        (linalg.eigvalsh(A), xp.linalg.eigvalsh(A)),
        (linalg.det(A[0, ...]), xp.linalg.det(A[0, ...])),  # 0-d: an array, as xp's
        *zip(linalg.slogdet(A), xp.linalg.slogdet(A)),
    ]
    for got, want in calls:
        assert type(got) is type(want) and got.shape == want.shape and got.dtype == want.dtype
        assert_close(to_numpy(got), to_numpy(want), np.float64, factor=10, n=3)
    x, residuals, rank, s = blocksolve.lstsq(A, B)
    lu, piv = blocksolve.lu_factor(A)
    for result in (x, residuals, rank, s, lu, piv, blocksolve.cho_factor(A)[0]):
        assert type(result) is type(A)
    assert_close(
        to_numpy(blocksolve.lu_solve((lu, piv), B)),
        np.linalg.solve(a, b),
        np.float64,
        factor=10,
        n=3,
    )
    L, info = blocksolve.cholesky(xp.asarray(-a), return_info=True)
    assert type(info) is type(A) and to_numpy(info).tolist() == [1] * 5
