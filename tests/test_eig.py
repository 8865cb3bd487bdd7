"""eig and eigvals against numpy.linalg: values, vectors, dtypes, failures, batching."""

import numpy as np
import pytest

import blocksolve
from _helpers import DTYPES, random_general, tol

pytestmark = pytest.mark.kernel_tiers  # both CPU kernel tiers (see conftest)

GRID = [*((dtype, 4) for dtype in DTYPES), (np.float64, 1), (np.float64, 7), (np.complex128, 3)]


def _sorted(w):
    """Eigenvalues in a canonical order (real part, then imaginary), per matrix."""
    w = np.asarray(w)
    keys = np.round(w.real, 6) + 1e-12 * np.round(w.imag, 6)
    return np.take_along_axis(w, np.lexsort((w.imag, keys), axis=-1), axis=-1)


def _check_pairs(a, w, v, dtype):
    """Each column of ``v`` is a unit eigenvector of ``a`` for ``w``; largest entry real."""
    n = a.shape[-1]
    scale = np.linalg.norm(a, axis=(-2, -1))[..., None, None]
    residual = a @ v - v * w[..., None, :]
    assert np.abs(residual).max() <= tol(dtype, 50, n) * scale.max()
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, rtol=tol(dtype, 10, n))
    largest = np.take_along_axis(v, np.abs(v).argmax(axis=-2)[..., None, :], axis=-2)
    assert np.abs(largest.imag).max() <= tol(dtype, 10, n)


@pytest.mark.parametrize("dtype, n", GRID)
def test_eig_and_eigvals_match_numpy(rng, single_matrices_on_kernels, dtype, n):
    a = random_general(rng, (6,), n, dtype)
    before = a.copy()
    w, v = blocksolve.eig(a)
    w_ref, _ = np.linalg.eig(a)
    assert w.dtype == w_ref.dtype and v.dtype == w_ref.dtype
    assert w.shape == a.shape[:-1] and v.shape == a.shape
    np.testing.assert_allclose(
        _sorted(w), _sorted(w_ref), atol=tol(dtype, 100, n) * np.abs(w_ref).max()
    )
    _check_pairs(a, w, v, dtype)
    values = blocksolve.eigvals(a)
    assert values.dtype == w.dtype
    np.testing.assert_array_equal(values, w)  # the same kernel, without vectors
    np.testing.assert_array_equal(a, before)
    looped = np.stack([blocksolve.eig(matrix[None]).eigenvalues[0] for matrix in a])
    np.testing.assert_array_equal(looped.astype(w.dtype), w)


def test_real_results_exactly_where_numpy_gives_them():
    symmetric = np.array([[[2.0, 1.0], [1.0, 2.0]], [[1.0, 0.0], [0.0, 3.0]]])
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    w, v = blocksolve.eig(symmetric)
    assert w.dtype == v.dtype == np.float64
    mixed = np.stack([symmetric[0], rotation])
    assert blocksolve.eig(mixed).eigenvalues.dtype == np.complex128  # one pair is complex
    assert blocksolve.eigvals(symmetric.astype(np.float32)).dtype == np.float32
    assert blocksolve.eigvals(symmetric.astype(np.complex64)).dtype == np.complex64
    np.testing.assert_array_equal(blocksolve.eigvals(np.eye(3, dtype=int)), np.ones(3))
    w = blocksolve.linalg.eigvals(symmetric)  # the Array API's: complex always
    assert w.dtype == np.complex128
    assert blocksolve.linalg.eig(symmetric).eigenvectors.dtype == np.complex128


@pytest.mark.parametrize(
    "a",
    [
        np.diag([1.0, 2.0, 3.0]),
        np.triu(np.arange(1.0, 17.0).reshape(4, 4)),
        np.zeros((3, 3)),
        np.array([[1e150, 1.0], [1e-150, 2.0]]),
        np.array([[0, 1, 0], [0, 0, 1], [6.0, -11.0, 6.0]]),  # roots 1, 2, 3
    ],
    ids=["diagonal", "triangular", "zero", "badly-scaled", "companion"],
)
def test_structured_and_badly_scaled_matrices(a):
    w, v = blocksolve.eig(np.stack([a, a]))
    w_ref = np.linalg.eigvals(a)
    np.testing.assert_allclose(
        np.sort_complex(w[1]), np.sort_complex(w_ref), rtol=1e-12, atol=1e-12 * np.abs(a).max()
    )
    if np.abs(a).max() < 1e100:
        _check_pairs(np.stack([a, a]), w, v, np.float64)


def test_nonfinite_matrices_fail_under_the_policy():
    a = np.stack([np.eye(3), np.full((3, 3), np.nan), np.diag([1.0, np.inf, 1.0])])
    with pytest.raises(blocksolve.LinAlgError, match="infs or NaNs") as caught:
        blocksolve.eig(a)
    assert caught.value.indices == [1, 2] or list(caught.value.indices) == [(1,), (2,)]
    w, info = blocksolve.eigvals(a, return_info=True)
    assert info[0] == 0 and (info[1:] != 0).all()
    w = blocksolve.eigvals(a, errors="nan")
    assert np.isnan(w[1:]).all() and (w[0] == 1).all()
    with pytest.raises(np.linalg.LinAlgError):
        blocksolve.eigvals(np.full((2, 2), np.nan))  # one matrix, as NumPy


def test_empty_and_bad_shapes():
    w, v = blocksolve.eig(np.zeros((2, 0, 0)))
    assert w.shape == (2, 0) and v.shape == (2, 0, 0)
    assert blocksolve.eigvals(np.zeros((0, 3, 3))).shape == (0, 3)
    with pytest.raises(blocksolve.LinAlgError, match="square"):
        blocksolve.eig(np.zeros((2, 3)))
    with pytest.raises(blocksolve.LinAlgError, match="two-dimensional|at least 2"):
        blocksolve.eigvals(np.zeros(3))


def test_dask_stays_lazy_and_complex(rng):
    da = pytest.importorskip("dask.array")
    a = random_general(rng, (6,), 3, np.float64)
    lazy = blocksolve.eig(da.from_array(a, chunks=(2, 3, 3)))
    assert isinstance(lazy.eigenvalues, da.Array)
    assert lazy.eigenvalues.dtype == np.complex128
    np.testing.assert_allclose(
        _sorted(lazy.eigenvalues.compute()), _sorted(np.linalg.eigvals(a)), rtol=1e-12
    )
