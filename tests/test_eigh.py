"""eigh and eigvalsh against numpy.linalg.eigh / eigvalsh."""

import numpy as np
import pytest

import blocksolve
from _helpers import DTYPES, assert_close, layouts, random_hermitian, to_numpy

pytestmark = pytest.mark.kernel_tiers  # both CPU kernel tiers (see conftest)


# (dtype, n): every dtype at n = 4 (the size test_bench compiles too), and 1 x 1.
GRID = [*((dtype, 4) for dtype in DTYPES), (np.float64, 1), (np.complex128, 1)]


def check_decomposition(a, w, v, dtype, n):
    """``a v = v diag(w)`` and ``v^H v = I`` for Hermitian ``a``."""
    scale = max(float(np.abs(w).max(initial=0)), 1.0)
    assert_close(a @ v / scale, v * w[..., None, :] / scale, dtype, factor=10, n=n)
    assert_close(
        np.conj(np.swapaxes(v, -1, -2)) @ v,
        np.broadcast_to(np.eye(n), v.shape),
        dtype,
        factor=10,
        n=n,
    )


@pytest.mark.parametrize("dtype, n", GRID)
def test_eigh_matches_numpy(xp, rng, dtype, n):
    a = random_hermitian(rng, (7,), n, dtype)
    w, v = blocksolve.eigh(xp.asarray(a))
    assert type(w) is type(xp.asarray(a)) and type(v) is type(w)
    real = np.finfo(dtype).dtype
    assert w.dtype == real and v.dtype == dtype and w.shape == (7, n) and v.shape == (7, n, n)
    w, v = to_numpy(w), to_numpy(v)
    w_ref = np.linalg.eigvalsh(a)
    assert_close(w, w_ref, dtype, factor=4, n=n)
    assert (np.diff(w, axis=-1) >= 0).all()  # ascending
    check_decomposition(a, w, v, dtype, n)
    w_only = to_numpy(blocksolve.eigvalsh(xp.asarray(a)))
    assert w_only.dtype == real and w_only.shape == (7, n)
    assert_close(w_only, w_ref, dtype, factor=4, n=n)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_eigh_large_sizes_and_the_runtime_size_kernel(rng, dtype):
    """n = 33: the public function runs NumPy's LAPACK (faster there); the Jacobi kernel
    that takes the size at run time (the generic tier, and the fallback) is checked too."""
    from blocksolve._pattern import CallPattern
    from blocksolve.cpu.kernels import eigh as kernels

    n = 33
    a = random_hermitian(rng, (3,), n, dtype)
    for upper in (False, True):
        junk = a + 5 * (np.tril(np.ones((n, n)), -1) if upper else np.triu(np.ones((n, n)), 1))
        junk = junk.astype(dtype)
        w, v = blocksolve.eigh(junk, UPLO="U" if upper else "L")
        assert_close(w, np.linalg.eigvalsh(a), dtype, factor=10, n=n)
        check_decomposition(a, w, v, dtype, n)
        pattern = CallPattern.make(
            "heev", {"n": n}, dtype, {"lower": not upper, "vectors": True}, ["C"], "cpu"
        )
        w, v, info = kernels.heev(pattern)(np.ascontiguousarray(junk))
        assert not info.any()
        assert_close(w, np.linalg.eigvalsh(a), dtype, factor=10, n=n)
        check_decomposition(a, w, v, dtype, n)


@pytest.mark.parametrize("UPLO", ["L", "U", "l", "u"])
def test_eigh_reads_only_the_selected_triangle(rng, UPLO):
    a = random_hermitian(rng, (4,), 4, np.complex128)
    junk = a + 9 * (np.triu(np.ones((4, 4)), 1) if UPLO in "Ll" else np.tril(np.ones((4, 4)), -1))
    junk = junk + 3j * np.eye(4)  # the imaginary part of the diagonal is ignored, as in LAPACK
    w, v = blocksolve.eigh(junk, UPLO=UPLO)
    assert_close(w, np.linalg.eigvalsh(junk, UPLO=UPLO.upper()), np.complex128, factor=4, n=4)
    check_decomposition(a, w, v, np.complex128, 4)
    assert_close(blocksolve.eigvalsh(junk, UPLO=UPLO), w, np.complex128, n=4)


def test_eigh_eigenvectors_match_numpy_up_to_phase(rng):
    a = random_hermitian(rng, (6,), 4, np.complex128)
    _, v = blocksolve.eigh(a)
    _, v_ref = np.linalg.eigh(a)
    overlap = np.abs(np.sum(np.conj(v) * v_ref, axis=-2))  # |<v_i, v_ref_i>|, distinct eigenvalues
    assert_close(overlap, np.ones_like(overlap), np.complex128, factor=10, n=4)


def test_eigh_repeated_and_known_eigenvalues():
    q, _ = np.linalg.qr(np.random.default_rng(3).standard_normal((4, 4)))
    a = np.stack(
        [
            np.eye(4),
            2 * np.eye(4),
            (q * [1.0, 1.0, -2.0, 3.0]) @ q.T,
            np.zeros((4, 4)),
            np.diag([3.0, 1.0, 2.0, 4.0]),
        ]
    )
    w, v = blocksolve.eigh(a)
    assert_close(w, [[1] * 4, [2] * 4, [-2, 1, 1, 3], [0] * 4, [1, 2, 3, 4]], np.float64, n=4)
    check_decomposition(a, w, v, np.float64, 4)
    np.testing.assert_array_equal(v[0], np.eye(4))  # already diagonal: no rotation


@pytest.mark.parametrize("scale", [1e-200, 1e200])
def test_eigh_extreme_magnitudes(rng, scale):
    a = random_hermitian(rng, (4,), 4, np.float64) * scale
    w, v = blocksolve.eigh(a)
    assert_close(w / scale, np.linalg.eigvalsh(a / scale), np.float64, factor=4, n=4)
    check_decomposition(a / scale, w / scale, v, np.float64, 4)


@pytest.mark.parametrize("batch", [(), (5,), (2, 3), (0,), (3, 0, 2)])
def test_eigh_batched_equals_loop(rng, batch, single_matrices_on_kernels):
    a = random_hermitian(rng, batch, 4, np.float64)
    w, v = blocksolve.eigh(a)
    assert w.shape == batch + (4,) and v.shape == batch + (4, 4)
    for idx in np.ndindex(*batch):
        w1, v1 = blocksolve.eigh(a[idx])
        np.testing.assert_array_equal(w[idx], w1)
        np.testing.assert_array_equal(v[idx], v1)


def test_eigh_large_batch_is_independent_of_neighbours(rng, single_matrices_on_kernels):
    # 20001 matrices: several blocks and threads; each matrix's result is its own.
    a = random_hermitian(rng, (20001,), 4, np.float64)
    a[7] = np.diag([1.0, 2, 3, 4])  # converges at once, beside matrices that do not
    w, v = blocksolve.eigh(a)
    for i in (0, 7, 31, 32, 10000, 20000):
        w1, v1 = blocksolve.eigh(a[i])
        np.testing.assert_array_equal(w[i], w1)
        np.testing.assert_array_equal(v[i], v1)
    assert_close(w, np.linalg.eigvalsh(a), np.float64, factor=4, n=4)


@pytest.mark.parametrize("layout", ["C", "F", "strided", "negative", "readonly"])
def test_eigh_layouts_and_input_untouched(rng, layout):
    a0 = random_hermitian(rng, (3,), 4, np.complex64)
    a = layouts(a0)[layout]
    w, v = blocksolve.eigh(a)
    np.testing.assert_array_equal(a, a0)
    w0, v0 = blocksolve.eigh(a0)
    np.testing.assert_array_equal(w, w0)
    np.testing.assert_array_equal(v, v0)


def test_eigh_empty_and_tiny():
    for shape in [(0, 0), (3, 0, 0)]:
        w, v = blocksolve.eigh(np.zeros(shape, np.float32))
        w_ref, v_ref = np.linalg.eigh(np.zeros(shape, np.float32))
        assert w.shape == w_ref.shape and v.shape == v_ref.shape
        assert w.dtype == w_ref.dtype and v.dtype == v_ref.dtype
    w, v = blocksolve.eigh(np.array([[2.0 + 5j]]))  # imaginary part of the diagonal ignored
    assert w.dtype == np.float64 and w[0] == 2.0 and v[0, 0] == 1


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_eigh_non_finite_input_gives_nan_without_failing(rng, bad):
    a = random_hermitian(rng, (3,), 3, np.float64)
    a[1, 0, 1] = a[1, 1, 0] = bad  # NumPy returns NaNs for these too, no error
    (w, v), info = blocksolve.eigh(a, return_info=True)
    assert np.isnan(w[1]).all() and np.isnan(v[1]).all() and not info.any()
    assert np.isfinite(w[[0, 2]]).all()
    assert_close(w[[0, 2]], np.linalg.eigvalsh(a[[0, 2]]), np.float64, factor=4, n=3)


@pytest.mark.parametrize("UPLO", ["L", "U"])
def test_eigh_on_lapack_ignores_a_nan_in_the_triangle_it_does_not_read(rng, UPLO):
    """A NaN another matrix holds in the triangle read makes NumPy raise for the whole
    stack, and LAPACK is called per matrix: a NaN outside the triangle read stays unread."""
    a = random_hermitian(rng, (3,), 4, np.float64)
    unread, read = ((0, 3), (3, 0)) if UPLO == "L" else ((3, 0), (0, 3))
    a[1][unread] = a[2][read] = np.nan
    previous = blocksolve.set_specialization("never")
    try:
        w = blocksolve.eigvalsh(a, UPLO=UPLO)
    finally:
        blocksolve.set_specialization(previous)
    on_kernels = blocksolve.eigvalsh(a, UPLO=UPLO)
    assert np.isnan(w[2]).all() and np.isnan(on_kernels[2]).all()
    np.testing.assert_array_equal(w[[0, 1]], np.linalg.eigvalsh(a[[0, 1]], UPLO=UPLO))
    assert_close(on_kernels[[0, 1]], w[[0, 1]], np.float64, factor=4, n=4)


def test_eigh_non_convergence_is_a_per_matrix_failure(rng, monkeypatch):
    from blocksolve.cpu.kernels import eigh as kernels

    a = random_hermitian(rng, (2, 3), 4, np.float64)
    a[1, 2] = np.diag([1.0, 2, 3, 4])  # diagonal: converged without a sweep
    monkeypatch.setattr(kernels, "MAX_SWEEPS", 1)  # one sweep cannot converge a dense 4x4
    (w, v), info = blocksolve.eigh(a, return_info=True)
    assert info.shape == (2, 3) and info[1, 2] == 0 and (np.delete(info.ravel(), 5) > 0).all()
    with pytest.raises(
        blocksolve.LinAlgError,
        match=r"eigh: 5 matrices of the batch failed, at batch indices \(0, 0\) "
        r"\(Eigenvalues did not converge \(\d+ off-diagonal elements",
    ) as e:
        blocksolve.eigh(a)
    assert (1, 2) not in e.value.indices and len(e.value.indices) == 5
    w, v = blocksolve.eigh(a, errors="nan")
    assert np.isnan(w[0, 0]).all() and np.isnan(v[0, 0]).all()
    np.testing.assert_array_equal(w[1, 2], [1, 2, 3, 4])
    with pytest.warns(blocksolve.LinAlgWarning, match="eigvalsh: 5 matrices"):
        blocksolve.eigvalsh(a, errors="warn")


def test_eigh_bad_arguments():
    with pytest.raises(ValueError, match=r"eigh: UPLO must be one of 'L', 'U', .*; got 'X'"):
        blocksolve.eigh(np.eye(2), UPLO="X")
    with pytest.raises(ValueError, match=r"eigvalsh: UPLO must be one of 'L', 'U', .*; got 1"):
        blocksolve.eigvalsh(np.eye(2), UPLO=1)
    with pytest.raises(np.linalg.LinAlgError, match=r"eigh: a must be square"):
        blocksolve.eigh(np.ones((2, 3)))


def test_eigh_tolerance_scaling_is_tight(rng):
    # The Jacobi result agrees with LAPACK to a few ulps of the largest eigenvalue.
    a = random_hermitian(rng, (50,), 4, np.float64)
    w = blocksolve.eigvalsh(a)
    err = np.abs(w - np.linalg.eigvalsh(a)).max() / np.abs(w).max()
    assert err < 20 * np.finfo(np.float64).eps, err
