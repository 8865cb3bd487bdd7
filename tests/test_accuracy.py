"""LAPACK-grade accuracy of qr and lstsq on badly scaled, ill-conditioned data.

Householder QR is backward stable whatever the rounding; these tests hold
blocksolve to LAPACK's constant (or better) where it shows most: columns of
very different scales that lie nearly along one direction.

* NIST's Longley data (16 observations of six regressors and the constant,
  condition number 4.9e9), in both column orders: the backward error of
  ``qr`` against NumPy's, and the least-squares coefficients (``lstsq``, and
  the QR route ``R x = Q^T y`` as statsmodels takes it) against NIST's
  certified values.
* Random matrices with columns scaled from 1e-8 to 1e8, some nearly
  collinear, against LAPACK's backward error in the same precision.

Every call passes a batch of 64 matrices, and NumPy's and SciPy's QR and
least squares raise meanwhile (:func:`kernel_only`): the generated kernel
answers, not the LAPACK runner that takes calls of few matrices.
"""

import contextlib

import numpy as np
import pytest
import scipy.linalg

import blocksolve

# Both CPU kernel tiers (see conftest); the specialised tier's smallest shapes are
# straight-line code generated per dtype.
pytestmark = [pytest.mark.kernel_tiers, pytest.mark.straight_line]

BATCH = 64

# NIST StRD, linear least squares, "Longley" (Longley.dat, higher level of difficulty):
# https://www.itl.nist.gov/div898/strd/lls/data/LINKS/DATA/Longley.dat -- the response
# (total employment) and the six predictors (GNP deflator, GNP, unemployed, armed
# forces, population, year), 1947-1962.  The certified values below are NIST's (500-digit
# arithmetic); statsmodels' regression tests carry the same numbers
# (statsmodels/regression/tests/results/results_regression.py, class Longley).
_LONGLEY = """
60323  83.0 234289 2356 1590 107608 1947
61122  88.5 259426 2325 1456 108632 1948
60171  88.2 258054 3682 1616 109773 1949
61187  89.5 284599 3351 1650 110929 1950
63221  96.2 328975 2099 3099 112075 1951
63639  98.1 346999 1932 3594 113270 1952
64989  99.0 365385 1870 3547 115094 1953
63761 100.0 363112 3578 3350 116219 1954
66019 101.2 397469 2904 3048 117388 1955
67857 104.6 419180 2822 2857 118734 1956
68169 108.4 442769 2936 2798 120445 1957
66513 110.8 444546 4681 2637 121950 1958
68655 112.6 482704 3813 2552 123366 1959
69564 114.2 502601 3931 2514 125368 1960
69331 115.7 518173 4806 2572 127852 1961
70551 116.9 554894 4007 2827 130081 1962
"""
# beta(0) (the constant), then beta(1) ... beta(6) for the predictors in the order above.
_CERTIFIED = np.array(
    [
        -3482258.63459582,
        15.0618722713733,
        -0.358191792925910e-01,
        -2.02022980381683,
        -1.03322686717359,
        -0.511041056535807e-01,
        1829.15146461355,
    ]
)


def longley(constant):
    """``(a, y, certified)``: the design matrix with the constant column ``'first'`` or
    ``'last'``, the response, and NIST's coefficients in the matching order."""
    data = np.array([row.split() for row in _LONGLEY.split("\n") if row], dtype=np.float64)
    y, predictors = data[:, 0], data[:, 1:]
    ones = np.ones((len(y), 1))
    if constant == "first":
        return np.hstack([ones, predictors]), y, _CERTIFIED
    return np.hstack([predictors, ones]), y, np.roll(_CERTIFIED, -1)


def stack(x):
    """``BATCH`` copies of ``x``."""
    return np.ascontiguousarray(np.broadcast_to(x, (BATCH, *x.shape)))


def backward_error(a, q, r):
    """``||a - q r||_2 / ||a||_2`` per matrix, in double precision at least."""
    wide = np.result_type(a.dtype, np.float64)
    a, q, r = (np.asarray(x, wide) for x in (a, q, r))
    return np.linalg.norm(a - q @ r, 2, axis=(-2, -1)) / np.linalg.norm(a, 2, axis=(-2, -1))


def coefficient_error(x, certified):
    """The largest relative error of a coefficient (NIST's log relative error, undone)."""
    return np.max(np.abs(x - certified) / np.abs(certified), axis=-1)


@pytest.fixture
def kernel_only(monkeypatch):
    """A context in which NumPy's and SciPy's QR and least squares raise: what runs in
    it is answered by blocksolve's kernels."""

    def refuse(*args, **kwargs):
        raise AssertionError("LAPACK answered a call meant for the generated kernel")

    @contextlib.contextmanager
    def context():
        with monkeypatch.context() as patch:
            for module in (np.linalg, scipy.linalg):
                patch.setattr(module, "qr", refuse)
                patch.setattr(module, "lstsq", refuse)
            yield

    return context


@pytest.mark.parametrize("constant", ["last", "first"])
def test_longley_qr_backward_error_is_lapacks(kernel_only, constant):
    a, _, _ = longley(constant)
    reference = backward_error(a, *np.linalg.qr(a))
    with kernel_only():
        q, r = blocksolve.qr(stack(a))
    errors = backward_error(stack(a), q, r)
    assert errors.max() <= 2 * reference, (errors.max(), reference)


@pytest.mark.parametrize("constant", ["last", "first"])
def test_longley_lstsq_matches_the_certified_values_as_numpy_does(kernel_only, constant):
    a, y, certified = longley(constant)
    reference = coefficient_error(np.linalg.lstsq(a, y, rcond=None)[0], certified)
    assert reference < 1e-9  # the data and the certified values above belong together
    with kernel_only():
        x, _, rank, _ = blocksolve.lstsq(stack(a), stack(y[:, None]))
    assert (rank == 7).all()
    errors = coefficient_error(x[..., 0], certified)
    assert errors.max() <= 4 * reference, (errors.max(), reference)


@pytest.mark.parametrize("constant", ["last", "first"])
def test_longley_coefficients_through_qr_as_numpys(kernel_only, constant):
    # statsmodels' OLS(method="qr"): x = R^-1 Q^T y.
    a, y, certified = longley(constant)
    q_ref, r_ref = np.linalg.qr(a)
    reference = coefficient_error(scipy.linalg.solve_triangular(r_ref, q_ref.T @ y), certified)
    with kernel_only():
        q, r = blocksolve.qr(stack(a))
    x = [scipy.linalg.solve_triangular(r[i], q[i].T @ y) for i in range(BATCH)]
    errors = coefficient_error(np.array(x), certified)
    assert errors.max() <= 4 * reference, (errors.max(), reference)


def graded(rng, m, n, dtype, collinear):
    """``BATCH`` random ``m x n`` matrices whose columns are scaled by 10^-8 ... 10^8;
    ``collinear``: columns within 10^-6 ... 10^-1 of one common direction first."""
    x = rng.standard_normal((BATCH, m, n))
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal((BATCH, m, n))
    if collinear:
        x = x[:, :, :1] + 10.0 ** rng.uniform(-6, -1, (BATCH, 1, n)) * x
    return (x * 10.0 ** rng.uniform(-8, 8, (BATCH, 1, n))).astype(dtype)


@pytest.mark.parametrize("collinear", [False, True], ids=["scaled", "collinear"])
@pytest.mark.parametrize("m, n", [(6, 3), (4, 4), (40, 33)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_graded_columns_backward_error_against_lapack(kernel_only, rng, dtype, m, n, collinear):
    # LAPACK in the input's precision: SciPy's (NumPy computes float32 in double).
    a = graded(rng, m, n, dtype, collinear)
    reference = backward_error(a, *zip(*(scipy.linalg.qr(x, mode="economic") for x in a)))
    with kernel_only():
        q, r = blocksolve.qr(a)
    errors = backward_error(a, q, r)
    eps = np.finfo(dtype).eps
    assert errors.mean() <= 1.25 * reference.mean(), (errors.mean() / eps, reference.mean() / eps)
    assert errors.max() <= 1.5 * reference.max(), (errors.max() / eps, reference.max() / eps)
