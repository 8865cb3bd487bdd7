"""cholesky, cho_factor and cho_solve against NumPy/SciPy."""

import numpy as np
import pytest
import scipy.linalg

import blocksolve
from _helpers import DTYPES, assert_close, layouts, random_spd, to_numpy

pytestmark = pytest.mark.kernel_tiers  # both CPU kernel tiers (see conftest)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 3, 4, 16, 33])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_matches_numpy(xp, rng, dtype, n, upper):
    a = random_spd(rng, (6,), n, dtype)
    L = blocksolve.cholesky(xp.asarray(a), upper=upper)
    assert type(L) is type(xp.asarray(a)) and L.dtype == dtype and L.shape == a.shape
    assert_close(L, np.linalg.cholesky(a, upper=upper), dtype, n=n)
    L = to_numpy(L)
    rebuilt = np.conj(L.swapaxes(-1, -2)) @ L if upper else L @ np.conj(L.swapaxes(-1, -2))
    assert_close(rebuilt, a, dtype, n=n)


@pytest.mark.parametrize("batch", [(), (5,), (2, 3), (0,), (3, 0, 2)])
def test_cholesky_batch_shapes_and_loop(xp, rng, batch, single_matrices_on_kernels):
    a = random_spd(rng, batch, 4, np.float64)
    L = to_numpy(blocksolve.cholesky(xp.asarray(a)))
    assert L.shape == a.shape
    for idx in np.ndindex(*batch):
        np.testing.assert_array_equal(L[idx], to_numpy(blocksolve.cholesky(xp.asarray(a[idx]))))


@pytest.mark.parametrize("layout", ["C", "F", "strided", "negative", "readonly"])
def test_cholesky_layouts_and_input_untouched(rng, layout):
    a = layouts(random_spd(rng, (4,), 4, np.complex128))[layout]  # a pattern of the grid above
    before = a.copy()
    L = blocksolve.cholesky(a)
    np.testing.assert_array_equal(a, before)
    assert_close(L, np.linalg.cholesky(before), np.complex128, n=4)


def test_cholesky_reads_one_triangle(rng):
    a = random_spd(rng, (3,), 4, np.float64)
    junk = a + np.triu(np.full((4, 4), 7.0), 1)
    np.testing.assert_array_equal(blocksolve.cholesky(junk), blocksolve.cholesky(a))
    junk = a + np.tril(np.full((4, 4), 7.0), -1)
    np.testing.assert_array_equal(
        blocksolve.cholesky(junk, upper=True), blocksolve.cholesky(a, upper=True)
    )


@pytest.mark.parametrize("n", [0, 1])
def test_cholesky_tiny(n):
    a = np.full((2, n, n), 4.0)
    np.testing.assert_array_equal(blocksolve.cholesky(a), np.linalg.cholesky(a))


def test_cholesky_integer_promotes():
    a = np.array([[4, 2], [2, 3]])
    L = blocksolve.cholesky(a)
    assert L.dtype == np.float64
    np.testing.assert_allclose(L, np.linalg.cholesky(a.astype(float)))


def test_cholesky_failure_names_every_batch_index(rng):
    a = random_spd(rng, (2, 3), 3, np.float64)
    a[0, 1] = -a[0, 1]
    a[1, 2, 2, 2] = -100.0
    with pytest.raises(blocksolve.LinAlgError, match=r"Matrix is not positive definite") as e:
        blocksolve.cholesky(a)
    assert e.value.indices == [(0, 1), (1, 2)]
    assert isinstance(e.value, np.linalg.LinAlgError)
    assert "(0, 1)" in str(e.value) and "(1, 2)" in str(e.value)


def test_cholesky_single_failure_message_like_numpy():
    with pytest.raises(np.linalg.LinAlgError, match="Matrix is not positive definite"):
        blocksolve.cholesky(-np.eye(3))


def test_cholesky_policies(xp, rng):
    a = random_spd(rng, (4,), 3, np.float64)
    a[2, 1, 1] = -5.0
    good = np.linalg.cholesky(np.delete(a, 2, axis=0))
    L = to_numpy(blocksolve.cholesky(xp.asarray(a), errors="nan"))
    assert np.isnan(L[2]).all()
    assert_close(np.delete(L, 2, axis=0), good, np.float64)
    with pytest.warns(blocksolve.LinAlgWarning, match=r"batch index \(2,\)"):
        blocksolve.cholesky(xp.asarray(a), errors="warn")
    L = to_numpy(blocksolve.cholesky(xp.asarray(a), errors="ignore"))
    assert np.isfinite(np.delete(L, 2, axis=0)).all()
    with blocksolve.errstate("nan"):
        assert np.isnan(to_numpy(blocksolve.cholesky(xp.asarray(a)))[2]).all()
        with pytest.raises(blocksolve.LinAlgError):
            blocksolve.cholesky(xp.asarray(a), errors="raise")


def test_cholesky_return_info(xp, rng):
    a = random_spd(rng, (3,), 3, np.float64)
    a[1, 2, 2] = -10.0
    L, info = blocksolve.cholesky(xp.asarray(a), return_info=True)
    np.testing.assert_array_equal(to_numpy(info), [0, 3, 0])
    assert to_numpy(info).dtype == np.int32
    assert_close(to_numpy(L)[[0, 2]], np.linalg.cholesky(a[[0, 2]]), np.float64)


def test_cholesky_nan_input_is_a_failure_named_as_such():
    a = np.stack([np.eye(3)] * 3)
    a[1, 1, 1] = np.nan
    a[2, 2, 0] = np.inf
    with pytest.raises(
        blocksolve.LinAlgError,
        match=r"at batch indices \(1,\) \(a contains infs or NaNs\), "
        r"\(2,\) \(a contains infs or NaNs\)$",
    ):
        blocksolve.cholesky(a)
    with pytest.raises(blocksolve.LinAlgError, match=r"^cho_factor: a contains infs or NaNs$"):
        blocksolve.cho_factor(a[1], check_finite=False)
    with pytest.raises(blocksolve.LinAlgError, match=r"not positive definite"):
        blocksolve.cholesky(np.stack([-np.eye(3), a[1]]))  # the finite one is reported as before


def test_cho_solve_takes_scipys_batched_flag(rng):
    a = random_spd(rng, (2, 3), 3, np.float64)
    c, lower = blocksolve.cho_factor(a, lower=True)
    assert lower.shape == (2, 3) and lower.all()
    b = rng.standard_normal((2, 3, 3, 1))
    np.testing.assert_allclose(
        blocksolve.cho_solve((c, lower), b), np.linalg.solve(a, b), atol=1e-12
    )
    with pytest.raises(ValueError, match="cho_solve: lower must be the same for every matrix"):
        blocksolve.cho_solve((c, np.array([[True] * 3, [False] * 3])), b)
    upper, flags = blocksolve.cho_factor(a, lower=False)
    assert flags.shape == (2, 3) and not flags.any()
    np.testing.assert_allclose(
        blocksolve.cho_solve((upper, flags), b), np.linalg.solve(a, b), atol=1e-12
    )
    empty, flags = blocksolve.cho_factor(a[:0], lower=True)
    assert blocksolve.cho_solve((empty, flags), b[:0]).shape == (0, 3, 3, 1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("n", [1, 3, 8, 40])
def test_cho_factor_and_solve_match_scipy(xp, rng, dtype, lower, n):
    a = random_spd(rng, (3,), n, dtype)
    c, low = blocksolve.cho_factor(xp.asarray(a), lower=lower)
    # SciPy's batched cho_factor gives the flag per matrix, as an array of the batch shape.
    assert isinstance(low, np.ndarray) and low.dtype == bool and low.shape == (3,)
    assert (low == lower).all()
    assert blocksolve.cho_factor(xp.asarray(a[0]), lower=lower)[1] is lower
    for i in range(3):
        c_ref, _ = scipy.linalg.cho_factor(a[i], lower=lower)
        tri = np.tril if lower else np.triu
        assert_close(tri(to_numpy(c)[i]), tri(c_ref), dtype, n=n)
    b = rng.standard_normal((3, n, 2)).astype(dtype)
    x = blocksolve.cho_solve((c, low), xp.asarray(b))
    assert_close(np.asarray(a) @ to_numpy(x), b, dtype, factor=10, n=n)
    xv = blocksolve.cho_solve((c, low), xp.asarray(b[0, :, 0]))
    assert xv.shape == (3, n)


def test_cho_factor_keeps_other_triangle_like_scipy(rng):
    a = random_spd(rng, (), 4, np.float64)
    c, _ = blocksolve.cho_factor(a)
    c_ref, _ = scipy.linalg.cho_factor(a)
    np.testing.assert_allclose(c, c_ref, atol=1e-14)


def test_cho_solve_broadcasts_batches(rng):
    a = random_spd(rng, (2, 1), 3, np.float64)
    b = rng.standard_normal((4, 3, 1))
    x = blocksolve.cho_solve(blocksolve.cho_factor(a), b)
    assert x.shape == (2, 4, 3, 1)
    np.testing.assert_allclose(a @ x, np.broadcast_to(b, x.shape), atol=1e-12)


def test_cho_solve_bad_arguments(rng):
    c = blocksolve.cho_factor(random_spd(rng, (), 3, np.float64))
    with pytest.raises(ValueError, match=r"cho_solve: b.shape\[-2\] = 4 does not match c.shape"):
        blocksolve.cho_solve(c, np.ones(4))
    with pytest.raises(TypeError, match="cho_solve: c_and_lower must be a"):
        blocksolve.cho_solve(c[0], np.ones(3))
    with pytest.raises(ValueError, match="cho_factor: array must not contain infs or NaNs"):
        blocksolve.cho_factor(np.full((2, 2), np.inf))
    with pytest.raises(blocksolve.LinAlgError, match="cho_solve: Singular matrix"):
        blocksolve.cho_solve((np.zeros((2, 2)), False), np.ones(2))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("n", [3, 40])  # sizes the other tests compile: blocks, one at a time
def test_solves_across_blocks_equal_single_solves(rng, dtype, lower, n, single_matrices_on_kernels):
    """From 8 matrices up to n = 24 the solves run across blocks of matrices, otherwise one
    matrix at a time: the same operations in the same order, so a batch and each of its
    matrices alone agree to the bit, and solve(assume_a='pos') equals cho_factor then
    cho_solve.  A zero on a factor's diagonal gives non-finite solutions, as LAPACK's potrs,
    and its info; a matrix that is not positive definite gets b back from solve."""
    a = random_spd(rng, (20,), n, dtype)
    b = rng.standard_normal((20, n, 2)).astype(dtype)
    c, _ = blocksolve.cho_factor(a, lower=lower)
    c[5, n - 1, n - 1] = 0
    x, info = blocksolve.cho_solve((c, lower), b, return_info=True)
    assert info[5] == n and not np.count_nonzero(np.delete(info, 5))
    assert not np.isfinite(x[5]).any()
    for i in range(20):
        one, one_info = blocksolve.cho_solve((c[i], lower), b[i], return_info=True)
        np.testing.assert_array_equal(one, x[i])
        assert one_info == info[i]
    a[7] = -a[7]
    x, info = blocksolve.solve(a, b, assume_a="pos", lower=lower, return_info=True)
    assert info[7] == 1 and not np.count_nonzero(np.delete(info, 7))
    np.testing.assert_array_equal(x[7], b[7])
    good = np.delete(np.arange(20), 7)
    factors = blocksolve.cho_factor(a[good], lower=lower)
    np.testing.assert_array_equal(x[good], blocksolve.cho_solve(factors, b[good]))
    assert_close(a[good] @ x[good], b[good], dtype, factor=10, n=n)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [3, 8])
def test_factoring_across_blocks_equals_single_matrices(
    rng, dtype, upper, n, single_matrices_on_kernels
):
    """From 8 real matrices of 6x6 on the kernel factors across interleaved blocks of up to
    32 (n = 8 here; n = 3 and complex ones one at a time; real ones up to 8x8 as
    straight-line code across lanes where the sizes are baked in): the same operations in
    the same order as one matrix at a time, so each matrix of a batch equals its own call
    to the bit, failures (redone alone for LAPACK's partial factor) included, in the
    triangle either function keeps."""
    a = random_spd(rng, (40,), n, dtype)
    a[5, n - 1, n - 1] = -1.0  # the last pivot fails, in the first block
    a[33, 1, 0] = a[33, 0, 1] = np.nan  # in the second block, a NaN in either triangle
    before = a.copy()
    L, info = blocksolve.cholesky(a, upper=upper, errors="ignore", return_info=True)
    finite = a.copy()
    finite[33] = a[32]  # cho_factor refuses NaNs, as SciPy's
    c, _ = blocksolve.cho_factor(finite, lower=not upper, errors="ignore")
    np.testing.assert_array_equal(a, before)
    assert info[5] == n and info[33] == 2 and np.count_nonzero(info) == 2
    for i in range(40):
        one, one_info = blocksolve.cholesky(a[i], upper=upper, errors="ignore", return_info=True)
        np.testing.assert_array_equal(L[i], one)
        assert one_info == info[i]
        alone = blocksolve.cho_factor(finite[i], lower=not upper, errors="ignore")[0]
        np.testing.assert_array_equal(c[i], alone)
    good = np.flatnonzero(info == 0)
    assert_close(L[good], np.linalg.cholesky(a[good], upper=upper), dtype, n=n)
    kept = np.tril(finite, -1) if upper else np.triu(finite, 1)  # cho_factor leaves it
    np.testing.assert_array_equal(np.tril(c, -1) if upper else np.triu(c, 1), kept)


@pytest.mark.parametrize("upper", [False, True])
def test_failures_inside_lockstep_pairs_match_single_calls(rng, upper, single_matrices_on_kernels):
    """From n = 6 the kernel factors matrices two at a time; a failure in a pair
    must give the same info and partial factor as factoring alone."""
    a = random_spd(rng, (7,), 8, np.float64)
    a[1, 5, 5] = -50.0
    a[4, 0, 0] = -1.0
    a[6, 7, 7] = np.nan
    L, info = blocksolve.cholesky(a, upper=upper, return_info=True)
    np.testing.assert_array_equal(info, [0, 6, 0, 0, 1, 0, 8])
    for i in range(7):
        one, one_info = blocksolve.cholesky(a[i], upper=upper, return_info=True)
        assert one_info == info[i]
        np.testing.assert_array_equal(L[i], one)


@pytest.mark.parametrize("n", [4, 8])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_a_failing_matrix_leaves_the_same_partial_factor_in_either_triangle(rng, n, dtype):
    """The upper factor is the adjoint of the lower one, also where a matrix fails: its
    unfactored columns hold ``a``'s entries in the triangle read and zeros in the other
    (the kernels once left the other triangle's entries there for the upper factor)."""
    a = random_spd(rng, (6,), n, dtype)
    a[2, n // 2, n // 2] = -1.0
    a[5, 0, 0] = np.nan
    lower, info_lower = blocksolve.cholesky(a, errors="ignore", return_info=True)
    upper, info_upper = blocksolve.cholesky(a, upper=True, errors="ignore", return_info=True)
    np.testing.assert_array_equal(info_lower, info_upper)
    assert info_lower[2] == n // 2 + 1 and info_lower[5] == 1
    np.testing.assert_array_equal(upper, np.conj(np.swapaxes(lower, -1, -2)))
    assert not np.triu(lower, 1).any() and not np.tril(upper, -1).any()
    np.testing.assert_array_equal(np.tril(lower[2])[:, n // 2 :], np.tril(a[2])[:, n // 2 :])


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
@pytest.mark.parametrize("upper", [False, True])
def test_large_matrices_take_lapack_and_fall_back_on_failure(rng, dtype, upper):
    """From n = 48 NumPy's LAPACK runs the batch (SciPy's for cho_factor); a failing
    matrix makes SciPy's LAPACK redo it one matrix at a time, for its info."""
    from blocksolve.cpu._backend import ROUTINES

    n = ROUTINES["potrf"].lapack_from + 3
    a = random_spd(rng, (4,), n, dtype)
    L = blocksolve.cholesky(a, upper=upper)
    assert_close(L, np.linalg.cholesky(a, upper=upper), dtype, n=n)
    c, _ = blocksolve.cho_factor(a, lower=not upper)
    tri = np.triu if upper else np.tril
    other = np.tril(a, -1) if upper else np.triu(a, 1)
    assert_close(tri(c), np.linalg.cholesky(a, upper=upper), dtype, n=n)
    np.testing.assert_array_equal(c - tri(c), other)
    a[2, 10, 10] = -1e3
    L, info = blocksolve.cholesky(a, upper=upper, return_info=True)
    np.testing.assert_array_equal(info, [0, 0, 11, 0])
    assert_close(
        np.delete(L, 2, axis=0),
        np.linalg.cholesky(np.delete(a, 2, axis=0), upper=upper),
        dtype,
        n=n,
    )
