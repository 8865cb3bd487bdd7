"""solve_triangular against scipy.linalg.solve_triangular."""

import itertools

import numpy as np
import pytest
import scipy.linalg

import blocksolve
from _helpers import (
    DTYPES,
    assert_close,
    layouts,
    random_general,
    random_matrix,
    to_numpy,
    with_good_triangles,
)

pytestmark = pytest.mark.kernel_tiers  # both CPU kernel tiers (see conftest)


def _triangle(a, lower, unit_diagonal):
    """The matrix ``solve_triangular`` sees in ``a``."""
    n = a.shape[-1]
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        t = t - t * np.eye(n, dtype=a.dtype) + np.eye(n, dtype=a.dtype)
    return t


def _op(a, trans):
    if trans == 0:
        return a
    t = np.swapaxes(a, -1, -2)
    return np.conj(t) if trans == 2 else t


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 4, 33])
@pytest.mark.parametrize("lower", [False, True])
def test_solve_triangular_matches_scipy(xp, rng, dtype, n, lower):
    # A full matrix: only the selected triangle may be read.
    a = with_good_triangles(rng, (3,), n, dtype)
    b = random_matrix(rng, (3, n, 2), dtype)
    for trans, unit_diagonal in itertools.product([0, 1, 2], [False, True]):
        x = blocksolve.solve_triangular(
            xp.asarray(a), xp.asarray(b), trans=trans, lower=lower, unit_diagonal=unit_diagonal
        )
        assert type(x) is type(xp.asarray(b)) and x.dtype == dtype and x.shape == b.shape
        x = to_numpy(x)
        for i in range(3):
            x_ref = scipy.linalg.solve_triangular(
                a[i], b[i], trans=trans, lower=lower, unit_diagonal=unit_diagonal
            )
            assert_close(x[i], x_ref, dtype, factor=10, n=n)
        t = _op(_triangle(a, lower, unit_diagonal), trans)
        assert_close(t @ x, b, dtype, factor=10, n=n)


def test_solve_triangular_reads_only_its_triangle(rng):
    a = random_general(rng, (4,), 4, np.float64)
    b = random_matrix(rng, (4, 4, 3), np.float64)
    for lower, unit_diagonal, trans in itertools.product([False, True], [False, True], [0, 1, "C"]):
        used = np.tri(4, k=-1 if unit_diagonal else 0, dtype=bool)
        junk = np.where(used if lower else used.T, a, np.nan)  # any read would show
        kw = dict(lower=lower, unit_diagonal=unit_diagonal, trans=trans)
        np.testing.assert_array_equal(
            blocksolve.solve_triangular(junk, b, check_finite=False, **kw),
            blocksolve.solve_triangular(a, b, **kw),
        )


@pytest.mark.parametrize("trans", ["N", "T", "C"])
def test_solve_triangular_vector_and_trans_names(rng, trans):
    a = random_general(rng, (), 4, np.complex128)
    b = random_matrix(rng, (4,), np.complex128)
    x = blocksolve.solve_triangular(a, b, trans=trans, lower=True)
    assert x.shape == (4,)
    assert_close(
        x,
        scipy.linalg.solve_triangular(a, b, trans=trans, lower=True),
        np.complex128,
        factor=10,
        n=4,
    )


@pytest.mark.parametrize("batch", [(), (5,), (2, 3), (0,)])
def test_solve_triangular_batched_equals_loop(rng, batch, single_matrices_on_kernels):
    a = random_general(rng, batch, 4, np.float64)
    b = random_matrix(rng, batch + (4, 2), np.float64)
    x = blocksolve.solve_triangular(a, b, trans=1)
    assert x.shape == b.shape
    for idx in np.ndindex(*batch):
        np.testing.assert_array_equal(x[idx], blocksolve.solve_triangular(a[idx], b[idx], trans=1))


def test_solve_triangular_broadcasts_batches(rng):
    a = random_general(rng, (2, 1), 4, np.float64)
    b = random_matrix(rng, (3, 4, 2), np.float64)
    x = blocksolve.solve_triangular(a, b, lower=True)
    assert x.shape == (2, 3, 4, 2)
    assert_close(np.tril(a) @ x, np.broadcast_to(b, x.shape), np.float64, n=4)


@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 4, 4)])
def test_solve_triangular_empty(shape):
    a = np.zeros(shape)
    b = np.zeros(shape[:-1] + (2,))
    x = blocksolve.solve_triangular(a, b)
    assert x.shape == b.shape and x.dtype == np.float64


@pytest.mark.parametrize("layout", ["C", "F", "strided", "negative", "readonly"])
def test_solve_triangular_layouts_and_inputs_untouched(rng, layout):
    a0 = random_general(rng, (3,), 4, np.complex64)
    b0 = random_matrix(rng, (3, 4, 2), np.complex64)
    a, b = layouts(a0)[layout], layouts(b0)[layout]
    x = blocksolve.solve_triangular(a, b, trans=2)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)
    np.testing.assert_array_equal(x, blocksolve.solve_triangular(a0, b0, trans=2))


def test_solve_triangular_singular_like_scipy():
    a = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    with pytest.raises(
        np.linalg.LinAlgError, match="singular matrix: resolution failed at diagonal 1"
    ):
        scipy.linalg.solve_triangular(a, np.ones(3))
    with pytest.raises(
        blocksolve.LinAlgError,
        match="^solve_triangular: singular matrix: resolution failed at diagonal 1$",
    ):
        blocksolve.solve_triangular(a, np.ones(3))
    # A unit diagonal is never singular.
    x = blocksolve.solve_triangular(a, np.ones(3), unit_diagonal=True)
    np.testing.assert_array_equal(
        x, scipy.linalg.solve_triangular(a, np.ones(3), unit_diagonal=True)
    )


def test_solve_triangular_singular_policies(xp, rng):
    a = random_general(rng, (4,), 3, np.float64)
    a[1, 2, 2] = 0.0
    a[3, 0, 0] = 0.0
    b = random_matrix(rng, (4, 3, 1), np.float64)
    with pytest.raises(
        blocksolve.LinAlgError,
        match=r"batch indices \(1,\) \(singular matrix: "
        r"resolution failed at diagonal 2\), "
        r"\(3,\) \(.* diagonal 0\)",
    ) as e:
        blocksolve.solve_triangular(xp.asarray(a), xp.asarray(b))
    assert e.value.indices == [(1,), (3,)]
    x, info = blocksolve.solve_triangular(
        xp.asarray(a), xp.asarray(b), lower=True, return_info=True
    )
    np.testing.assert_array_equal(to_numpy(info), [0, 3, 0, 1])
    good = [0, 2]
    assert_close(to_numpy(x)[good], np.linalg.solve(np.tril(a[good]), b[good]), np.float64)
    x = to_numpy(blocksolve.solve_triangular(xp.asarray(a), xp.asarray(b), errors="nan"))
    assert np.isnan(x[[1, 3]]).all() and np.isfinite(x[good]).all()
    with pytest.warns(blocksolve.LinAlgWarning, match="diagonal 2"):
        blocksolve.solve_triangular(xp.asarray(a), xp.asarray(b), errors="warn")
    x, info = blocksolve.solve_triangular(
        xp.asarray(a), xp.asarray(b), unit_diagonal=True, return_info=True
    )
    assert not to_numpy(info).any()


def test_solve_triangular_bad_arguments():
    with pytest.raises(
        ValueError,
        match=r"solve_triangular: a must be square .* "
        r"got shape \(3, 4\)",
    ):
        blocksolve.solve_triangular(np.ones((3, 4)), np.ones(3))
    with pytest.raises(ValueError, match=r"solve_triangular: b.shape\[-2\] = 2 does not match"):
        blocksolve.solve_triangular(np.eye(3), np.ones(2))
    with pytest.raises(
        ValueError,
        match=r"solve_triangular: trans must be one of 0, 1, 2, 'N', 'T', 'C'; got 'X'",
    ):
        blocksolve.solve_triangular(np.eye(3), np.ones(3), trans="X")
    with pytest.raises(TypeError, match="solve_triangular: lower must be a bool; got 'yes'"):
        blocksolve.solve_triangular(np.eye(3), np.ones(3), lower="yes")
    with pytest.raises(TypeError, match="solve_triangular: unit_diagonal must be a bool"):
        blocksolve.solve_triangular(np.eye(3), np.ones(3), unit_diagonal=None)
    with pytest.raises(TypeError, match="solve_triangular: array type object is unsupported"):
        blocksolve.solve_triangular(np.eye(3, dtype=object), np.ones(3))
    with pytest.raises(ValueError, match="solve_triangular: array must not contain infs or NaNs"):
        blocksolve.solve_triangular(np.eye(3), np.array([1.0, np.nan, 0.0]))
