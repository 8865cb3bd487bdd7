"""inv, det and slogdet against numpy.linalg."""

import numpy as np
import pytest

import blocksolve
from _helpers import DTYPES, assert_close, layouts, random_general, random_matrix, to_numpy

# (dtype, n): every dtype at n = 4 (the size test_bench compiles too), and 1 x 1.
GRID = [*((dtype, 4) for dtype in DTYPES), (np.float64, 1), (np.complex128, 1)]

pytestmark = pytest.mark.kernel_tiers  # both CPU kernel tiers (see conftest)


@pytest.mark.parametrize("dtype, n", GRID)
def test_inv_det_slogdet_match_numpy(xp, rng, dtype, n):
    a = random_general(rng, (7,), n, dtype)
    ainv = blocksolve.inv(xp.asarray(a))
    assert type(ainv) is type(xp.asarray(a)) and ainv.dtype == dtype and ainv.shape == a.shape
    ainv = to_numpy(ainv)
    assert_close(ainv, np.linalg.inv(a), dtype, factor=10, n=n)
    assert_close(ainv @ a, np.broadcast_to(np.eye(n), a.shape), dtype, factor=10, n=n)

    d = to_numpy(blocksolve.det(xp.asarray(a)))
    d_ref = np.linalg.det(a)
    assert d.dtype == dtype and d.shape == (7,)
    np.testing.assert_allclose(d, d_ref, rtol=10 * n * np.finfo(dtype).eps * 50)

    sign, logabsdet = blocksolve.slogdet(xp.asarray(a))
    sign, logabsdet = to_numpy(sign), to_numpy(logabsdet)
    sign_ref, log_ref = np.linalg.slogdet(a)
    assert sign.dtype == dtype and logabsdet.dtype == np.finfo(dtype).dtype
    assert_close(sign, sign_ref, dtype, n=n)
    assert_close(logabsdet, log_ref, dtype, n=n)


def test_inv_8x8_matches_numpy(rng):
    """8x8: the largest straight-line inverse in the specialised tier, its identity left in
    place through the row swaps and each column stored where the swaps say."""
    a = random_general(rng, (37,), 8, np.float64)
    a[3] = np.eye(8)[[5, 2, 7, 0, 1, 6, 3, 4]]  # a permutation: its inverse is its transpose
    ainv = blocksolve.inv(a)
    assert_close(ainv, np.linalg.inv(a), np.float64, factor=10, n=8)
    assert_close(ainv @ a, np.broadcast_to(np.eye(8), a.shape), np.float64, factor=10, n=8)
    np.testing.assert_array_equal(ainv[3], a[3].T)


def test_det_of_permutations_and_triangles():
    p = np.eye(4)[[1, 0, 3, 2]]  # two swaps: +1
    q = np.eye(4)[[1, 2, 3, 0]]  # a 4-cycle: -1
    t = np.triu(np.arange(1.0, 17).reshape(4, 4)) * [1, -1, 1, 1]
    a = np.stack([p, q, t, -np.eye(4)])
    np.testing.assert_allclose(blocksolve.det(a), [1, -1, -1 * 6 * 11 * 16, 1])
    sign, logabsdet = blocksolve.slogdet(a)
    np.testing.assert_array_equal(sign, [1, -1, -1, 1])
    np.testing.assert_allclose(logabsdet, [0, 0, np.log(6 * 11 * 16), 0], atol=1e-15)


def test_complex_sign_is_a_phase():
    a = np.array([[1j, 0], [0, 2]])
    sign, logabsdet = blocksolve.slogdet(a)
    assert sign == 1j and np.isclose(logabsdet, np.log(2))
    assert blocksolve.det(a) == 2j


def test_singular_matrices_do_not_raise_in_det_and_slogdet():
    a = np.stack([np.eye(3), np.ones((3, 3)), np.zeros((3, 3))])
    np.testing.assert_array_equal(blocksolve.det(a), [1, 0, 0])
    sign, logabsdet = blocksolve.slogdet(a)
    np.testing.assert_array_equal(sign, [1, 0, 0])
    np.testing.assert_array_equal(logabsdet, [0, -np.inf, -np.inf])
    (sign, logabsdet), info = blocksolve.slogdet(a, return_info=True)
    assert not info.any()  # never a failure


@pytest.mark.filterwarnings("ignore:overflow encountered in det:RuntimeWarning")  # NumPy's own
def test_det_overflow_and_underflow_like_numpy():
    a = np.stack(
        [
            np.diag([1e200, 1e200, 1e-300]),
            np.diag([1e200, 1e200, 1e10]),
            np.diag([1e-200, 1e-200, 1e-10]),
        ]
    )
    np.testing.assert_allclose(blocksolve.det(a), np.linalg.det(a), rtol=1e-13)
    sign, logabsdet = blocksolve.slogdet(a)
    np.testing.assert_allclose(logabsdet, np.linalg.slogdet(a)[1], rtol=1e-14)
    np.testing.assert_array_equal(sign, 1)


def test_inv_singular_policies(xp, rng):
    a = random_general(rng, (2, 3), 4, np.float64)
    a[0, 1, :, 2] = 0.0
    with pytest.raises(
        blocksolve.LinAlgError,
        match=r"^inv: 1 matrix of the batch failed, at batch index \(0, 1\) "
        r"\(Singular matrix \(U\[2, 2\] is exactly zero\)\)$",
    ) as e:
        blocksolve.inv(xp.asarray(a))
    assert e.value.indices == [(0, 1)]
    ainv = to_numpy(blocksolve.inv(xp.asarray(a), errors="nan"))
    assert np.isnan(ainv[0, 1]).all() and np.isfinite(np.delete(ainv.reshape(6, 16), 1, 0)).all()
    ainv, info = blocksolve.inv(xp.asarray(a), return_info=True)
    np.testing.assert_array_equal(to_numpy(info), [[0, 3, 0], [0, 0, 0]])
    with pytest.raises(np.linalg.LinAlgError, match="^inv: Singular matrix"):
        blocksolve.inv(np.zeros((3, 3)))


@pytest.mark.parametrize("batch", [(), (5,), (2, 3), (0,), (3, 0, 2)])
def test_batched_equals_loop(rng, batch, single_matrices_on_kernels):
    a = random_general(rng, batch, 4, np.float64)
    ainv, d = blocksolve.inv(a), blocksolve.det(a)
    sign, logabsdet = blocksolve.slogdet(a)
    assert ainv.shape == a.shape and np.shape(d) == np.shape(sign) == batch
    for idx in np.ndindex(*batch):
        np.testing.assert_array_equal(ainv[idx], blocksolve.inv(a[idx]))
        assert d[idx] == blocksolve.det(a[idx])
        assert (sign[idx], logabsdet[idx]) == tuple(blocksolve.slogdet(a[idx]))


def test_scalars_for_one_matrix_like_numpy():
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    d, (sign, logabsdet) = blocksolve.det(a), blocksolve.slogdet(a)
    assert type(d) is type(np.linalg.det(a)) is np.float64
    assert type(sign) is np.float64 and type(logabsdet) is np.float64
    assert isinstance(blocksolve.slogdet(a), blocksolve.SlogdetResult)


@pytest.mark.parametrize("layout", ["C", "F", "strided", "negative", "readonly"])
def test_layouts_and_input_untouched(rng, layout):
    a0 = random_general(rng, (3,), 4, np.complex64)
    a = layouts(a0)[layout]
    ainv = blocksolve.inv(a)
    sign, logabsdet = blocksolve.slogdet(a)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(ainv, blocksolve.inv(a0))
    np.testing.assert_array_equal(sign, blocksolve.slogdet(a0).sign)


def test_empty_like_numpy():
    for shape in [(0, 0), (3, 0, 0), (0, 2, 2)]:
        a = np.zeros(shape, np.float32)
        assert blocksolve.inv(a).shape == np.linalg.inv(a).shape
        np.testing.assert_array_equal(blocksolve.det(a), np.linalg.det(a))
        for got, want in zip(blocksolve.slogdet(a), np.linalg.slogdet(a)):
            np.testing.assert_array_equal(got, want)
            assert np.asarray(got).dtype == np.asarray(want).dtype


def test_large_sizes_take_numpys_lapack_with_the_same_semantics(rng):
    a = random_general(rng, (4,), 64, np.float64)
    a[1, :, 5] = 0  # exactly singular
    np.testing.assert_allclose(blocksolve.det(a), np.linalg.det(a), rtol=1e-10)
    sign, logabsdet = blocksolve.slogdet(a)
    assert sign[1] == 0 and logabsdet[1] == -np.inf
    with pytest.raises(blocksolve.LinAlgError, match=r"inv: 1 matrix .* \(1,\) \(Singular"):
        blocksolve.inv(a)  # NumPy raised for the chunk: the kernel redid it for the info
    ainv = blocksolve.inv(a, errors="nan")
    assert np.isnan(ainv[1]).all()
    assert_close(ainv[[0, 2, 3]], np.linalg.inv(a[[0, 2, 3]]), np.float64, factor=10, n=64)


def test_large_batch_crosses_blocks_and_threads(rng, single_matrices_on_kernels):
    a = random_matrix(rng, (20001, 4, 4), np.float64)
    ainv, (sign, logabsdet) = blocksolve.inv(a), blocksolve.slogdet(a)
    for i in (0, 31, 32, 10000, 20000):
        np.testing.assert_array_equal(ainv[i], blocksolve.inv(a[i]))
        assert sign[i] == blocksolve.slogdet(a[i]).sign
    sign_ref, log_ref = np.linalg.slogdet(a)
    np.testing.assert_array_equal(sign, sign_ref)
    assert_close(logabsdet, log_ref, np.float64, factor=10, n=4)


@pytest.mark.parametrize("n", [2, 8, 64])  # straight into the kernel, in a block, on LAPACK
def test_an_infinite_pivot_has_numpys_sign(n):
    """A real pivot that overflows to inf (or is inf in the input) has sign ±1 as in NumPy:
    ``det`` is ±inf and ``slogdet`` (±1, inf), not NaN; a complex one has NumPy's NaN
    phase."""
    overflowing = np.eye(n)
    overflowing[:2, :2] = [[1e308, 1e308], [-1e308, 1e308]]  # U[1, 1] = 2e308
    infinite = np.eye(n)
    infinite[:2, :2] = [[np.inf, 0], [0, -1]]
    with np.errstate(over="ignore", invalid="ignore"):
        for a in (overflowing, infinite, np.stack([overflowing, infinite])):
            np.testing.assert_array_equal(blocksolve.det(a), np.linalg.det(a))
            for got, want in zip(blocksolve.slogdet(a), np.linalg.slogdet(a)):
                np.testing.assert_array_equal(got, want)
            for got, want in zip(
                blocksolve.slogdet(a.astype(complex)), np.linalg.slogdet(a.astype(complex))
            ):
                np.testing.assert_array_equal(got, want)
    assert blocksolve.det(infinite) == -np.inf
