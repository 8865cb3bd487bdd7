"""solve against numpy.linalg.solve."""

import numpy as np
import pytest

import blocksolve
from _helpers import DTYPES, assert_close, layouts, random_general, random_matrix, to_numpy

pytestmark = pytest.mark.kernel_tiers  # both CPU kernel tiers (see conftest)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 4, 33])
@pytest.mark.parametrize("k", [1, 3])
def test_solve_matches_numpy(xp, rng, dtype, n, k):
    a = random_general(rng, (6,), n, dtype)
    b = random_matrix(rng, (6, n, k), dtype)
    x = blocksolve.solve(xp.asarray(a), xp.asarray(b))
    assert type(x) is type(xp.asarray(a)) and x.dtype == dtype and x.shape == b.shape
    x = to_numpy(x)
    assert_close(x, np.linalg.solve(a, b), dtype, factor=10, n=n)
    assert_close(a @ x, b, dtype, factor=10, n=n)


def test_solve_pivots_where_needed(rng):
    # Zero leading entries: no solve without row interchanges.
    a = random_matrix(rng, (50, 4, 4), np.float64)
    a[:, 0, 0] = 0.0
    a[:, 1, 1] = 0.0
    b = random_matrix(rng, (50, 4, 2), np.float64)
    x = blocksolve.solve(a, b)
    assert_close(x, np.linalg.solve(a, b), np.float64, factor=1e3, n=4)


@pytest.mark.parametrize(
    "a_shape, b_shape, x_shape",
    [
        ((3, 3), (3,), (3,)),
        ((2, 3, 3), (3,), (2, 3)),  # b is a vector only when b.ndim == 1 (NumPy 2)
        ((3, 3, 3), (3, 3), (3, 3, 3)),  # ... so this b is one (3, 3) matrix
        ((2, 1, 3, 3), (4, 3, 2), (2, 4, 3, 2)),
        ((3, 3), (5, 3, 1), (5, 3, 1)),
        ((2, 3, 3), (2, 3, 0), (2, 3, 0)),
    ],
)
def test_solve_broadcasting_like_numpy(rng, a_shape, b_shape, x_shape):
    n = a_shape[-1]
    a = random_general(rng, a_shape[:-2], n, np.float64)
    b = random_matrix(rng, b_shape, np.float64)
    x = blocksolve.solve(a, b)
    x_ref = np.linalg.solve(a, b)
    assert x.shape == x_ref.shape == x_shape
    assert_close(x, x_ref, np.float64, factor=10, n=n)


@pytest.mark.parametrize("batch", [(), (5,), (2, 3), (0,), (3, 0, 2)])
def test_solve_batched_equals_loop(rng, batch, single_matrices_on_kernels):
    a = random_general(rng, batch, 4, np.float64)
    b = random_matrix(rng, batch + (4, 2), np.float64)
    x = blocksolve.solve(a, b)
    assert x.shape == b.shape
    for idx in np.ndindex(*batch):
        np.testing.assert_array_equal(x[idx], blocksolve.solve(a[idx], b[idx]))


def test_solve_large_batch_crosses_blocks_and_threads(rng, single_matrices_on_kernels):
    a = random_matrix(rng, (20001, 4, 4), np.float32)
    b = random_matrix(rng, (20001, 4, 1), np.float32)
    x = blocksolve.solve(a, b)
    for i in (0, 31, 32, 10000, 20000):
        np.testing.assert_array_equal(x[i], blocksolve.solve(a[i], b[i]))
    assert_close(
        x, np.linalg.solve(a.astype(np.float64), b.astype(np.float64)), np.float32, factor=1e3, n=4
    )


@pytest.mark.parametrize("shape", [(0, 0), (4, 0, 0), (0, 3, 3)])
def test_solve_empty(shape):
    a = np.zeros(shape, np.float32)
    b = np.zeros(shape[:-1], np.float32)
    x = blocksolve.solve(a, b[..., None])
    x_ref = np.linalg.solve(a, b[..., None])
    assert x.shape == x_ref.shape and x.dtype == x_ref.dtype


@pytest.mark.parametrize("layout", ["C", "F", "strided", "negative", "readonly"])
def test_solve_layouts_and_inputs_untouched(rng, layout):
    a0 = random_general(rng, (3,), 4, np.complex64)
    b0 = random_matrix(rng, (3, 4, 2), np.complex64)
    a, b = layouts(a0)[layout], layouts(b0)[layout]
    x = blocksolve.solve(a, b)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)
    np.testing.assert_array_equal(x, blocksolve.solve(a0, b0))
    assert_close(x, np.linalg.solve(a0, b0), np.complex64, factor=10, n=4)


def test_solve_mixed_dtypes_promote(rng):
    a = np.array([[2, 1], [1, 3]])
    b = np.array([1.0, 2.0], np.float32)
    x = blocksolve.solve(a, b)
    assert x.dtype == np.linalg.solve(a, b).dtype == np.float64
    x = blocksolve.solve(a.astype(np.float32), b.astype(np.complex64))
    assert x.dtype == np.complex64
    np.testing.assert_allclose(x, [0.2, 0.6], rtol=1e-6)


def test_solve_singular_raises_like_numpy():
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        np.linalg.solve(a, np.ones(3))
    with pytest.raises(
        blocksolve.LinAlgError, match=r"^solve: Singular matrix \(U\[2, 2\] is exactly zero\)$"
    ) as e:
        blocksolve.solve(a, np.ones(3))
    assert e.value.indices == [()]


def test_solve_singular_policies(xp, rng):
    a = random_general(rng, (2, 3), 4, np.float64)
    a[0, 1, :, 2] = 0.0
    a[1, 2] = 0.0
    b = random_matrix(rng, (2, 3, 4, 1), np.float64)
    good = np.ones((2, 3), bool)
    good[0, 1] = good[1, 2] = False
    with pytest.raises(
        blocksolve.LinAlgError,
        match=r"solve: 2 matrices of the batch failed, at batch indices "
        r"\(0, 1\) \(Singular matrix \(U\[2, 2\].*\), \(1, 2\) "
        r"\(Singular matrix \(U\[0, 0\]",
    ) as e:
        blocksolve.solve(xp.asarray(a), xp.asarray(b))
    assert e.value.indices == [(0, 1), (1, 2)]
    x, info = blocksolve.solve(xp.asarray(a), xp.asarray(b), return_info=True)
    np.testing.assert_array_equal(to_numpy(info), [[0, 3, 0], [0, 0, 1]])
    assert_close(to_numpy(x)[good], np.linalg.solve(a[good], b[good]), np.float64, factor=10)
    x = to_numpy(blocksolve.solve(xp.asarray(a), xp.asarray(b), errors="nan"))
    assert np.isnan(x[~good]).all()
    assert_close(x[good], np.linalg.solve(a[good], b[good]), np.float64, factor=10)
    with pytest.warns(blocksolve.LinAlgWarning, match=r"batch indices \(0, 1\)"):
        blocksolve.solve(xp.asarray(a), xp.asarray(b), errors="warn")
    x = to_numpy(blocksolve.solve(xp.asarray(a), xp.asarray(b), errors="ignore"))
    assert np.isfinite(x[good]).all()
    with blocksolve.errstate("nan"):
        assert np.isnan(to_numpy(blocksolve.solve(xp.asarray(a), xp.asarray(b)))[1, 2]).all()


def test_solve_nan_input_propagates():
    # NumPy has no check_finite here either: NaNs come out, nothing raises.
    a = np.eye(3)
    a[1, 1] = np.nan
    x = blocksolve.solve(a, np.ones(3))
    assert np.isnan(x).any()


def test_solve_bad_arguments():
    with pytest.raises(ValueError, match=r"solve: a must be square .* got shape \(3, 4\)"):
        blocksolve.solve(np.ones((3, 4)), np.ones(3))
    with pytest.raises(ValueError, match=r"solve: b.shape\[-2\] = 4 does not match a.shape"):
        blocksolve.solve(np.eye(3), np.ones(4))
    with pytest.raises(ValueError, match=r"solve: b.shape\[-2\] = 4 does not match a.shape"):
        blocksolve.solve(np.eye(3), np.ones((2, 4, 1)))
    with pytest.raises(ValueError, match="solve: batch dimensions do not broadcast"):
        blocksolve.solve(np.ones((2, 3, 3)), np.ones((4, 3, 1)))
    with pytest.raises(ValueError, match=r"solve: b must be at least"):
        blocksolve.solve(np.eye(1), np.float64(1.0))
    with pytest.raises(
        TypeError,
        match="solve: array type float16 is unsupported in linalg "
        r"\(argument 'a'\)",
    ):
        blocksolve.solve(np.eye(3, dtype=np.float16), np.ones(3))
    with pytest.raises(TypeError, match="solve: array type object is unsupported"):
        blocksolve.solve(np.eye(2), np.array([1, None]))


def test_large_matrices_take_lapack_and_fall_back_on_failure(rng):
    from blocksolve.cpu._backend import ROUTINES

    n = ROUTINES["gesv"].lapack_from + 1
    a = random_general(rng, (3,), n, np.complex128)
    b = random_matrix(rng, (3, n, 2), np.complex128)
    x = blocksolve.solve(a, b)
    assert_close(x, np.linalg.solve(a, b), np.complex128, factor=10, n=n)
    a[1, :, 5] = 0
    with pytest.raises(blocksolve.LinAlgError, match="Singular matrix") as e:
        blocksolve.solve(a, b)
    assert e.value.indices == [(1,)]
    x = blocksolve.solve(a, b, errors="nan")
    assert np.isnan(x[1]).all()
    assert_close(x[[0, 2]], np.linalg.solve(a[[0, 2]], b[[0, 2]]), np.complex128, factor=10, n=n)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_singular_reported_not_crashing(dtype):
    """numba raises on complex division by zero; the kernels must report instead."""
    a = np.stack([np.eye(3), np.diag([1.0, 0.0, 2.0])]).astype(dtype)
    b = np.ones((2, 3, 1), dtype)
    x, info = blocksolve.solve(a, b, return_info=True)
    np.testing.assert_array_equal(info, [0, 2])
    np.testing.assert_array_equal(x[0], b[0])
    lu, piv = blocksolve.lu_factor(a, errors="ignore")
    _, info = blocksolve.lu_solve((lu, piv), b, return_info=True)
    np.testing.assert_array_equal(info, [0, 2])
    _, info = blocksolve.solve_triangular(a, b, return_info=True)
    np.testing.assert_array_equal(info, [0, 2])
