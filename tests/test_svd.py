"""The SVD family against NumPy and SciPy: ``svd``, ``svdvals``, ``pinv``, ``matrix_rank``,
``cond`` and ``polar``.

Singular vectors are unique only up to a sign (a phase) per singular value, so
they are checked through what is unique: the reconstruction, orthonormality,
and ``U diag(S) Vh`` against NumPy's.  A batch runs on the CPU kernels, one
matrix on NumPy's LAPACK.
"""

import itertools

import numpy as np
import pytest
import scipy.linalg

import blocksolve
from _helpers import DTYPES, random_hermitian, random_matrix, to_numpy, tol

# The run-time-size kernels here; the straight-line ones in tests/test_svd_kernels.py's
# exhaustive cases (each compiles for tens of seconds).

SHAPES = [(1, 1), (2, 2), (3, 3), (4, 4), (8, 8), (6, 3), (3, 6), (16, 5)]


def _reconstruct(u, s, vh):
    k = s.shape[-1]
    return (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]


def assert_orthonormal(q, dtype, n, axis):
    """Columns (axis=-2) or rows (axis=-1) of ``q`` orthonormal to ``n * eps``."""
    q = to_numpy(q)
    gram = np.conj(q.swapaxes(-1, -2)) @ q if axis == -2 else q @ np.conj(q.swapaxes(-1, -2))
    eye = np.eye(gram.shape[-1])
    np.testing.assert_allclose(gram, np.broadcast_to(eye, gram.shape), atol=tol(dtype, 4, n))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("full", [True, False])
def test_svd_against_numpy(rng, dtype, shape, full):
    a = random_matrix(rng, (5, *shape), dtype)
    before = a.copy()
    u, s, vh = blocksolve.svd(a, full_matrices=full)
    np.testing.assert_array_equal(a, before)
    m, n = shape
    p = min(m, n)
    assert u.shape == (5, m, m if full else p) and vh.shape == (5, n if full else p, n)
    assert s.shape == (5, p) and s.dtype == np.finfo(dtype).dtype and u.dtype == dtype
    s_ref = np.linalg.svd(a, compute_uv=False)
    scale = s_ref[..., :1]
    assert np.all(np.abs(s - s_ref) <= tol(dtype, 2, max(m, n)) * scale)
    assert np.all(np.diff(s, axis=-1) <= 0)  # descending
    assert_orthonormal(u, dtype, max(m, n), -2)
    assert_orthonormal(vh, dtype, max(m, n), -1)
    err = np.abs(_reconstruct(u, s, vh) - a).max(axis=(-2, -1))
    assert np.all(err <= tol(dtype, 4, max(m, n)) * scale[..., 0])


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_svdvals_and_compute_uv_false(rng, dtype):
    a = random_matrix(rng, (7, 5, 4), dtype)
    s = blocksolve.svdvals(a)
    assert s.dtype == np.finfo(dtype).dtype and s.shape == (7, 4)
    np.testing.assert_allclose(s, np.linalg.svdvals(a), rtol=tol(dtype, 2, 5))
    np.testing.assert_array_equal(blocksolve.svd(a, compute_uv=False), s)


def test_one_matrix_is_numpys_svd_to_the_bit(rng):
    a = random_matrix(rng, (5, 3), np.float64)
    for got, want in zip(blocksolve.svd(a), np.linalg.svd(a)):
        np.testing.assert_array_equal(got, want)


def test_batched_equals_loop(rng, single_matrices_on_kernels):
    a = random_matrix(rng, (2, 3, 4, 4), np.float64)
    u, s, vh = blocksolve.svd(a)
    for idx in np.ndindex(2, 3):
        u1, s1, vh1 = blocksolve.svd(a[idx])
        np.testing.assert_allclose(s[idx], s1, rtol=1e-13)
        np.testing.assert_allclose(_reconstruct(u1, s1, vh1), a[idx], atol=1e-13)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
def test_extremes(rng, dtype):
    """Rank deficiency, repeated, zero, tiny and huge singular values, subnormal scales."""
    finfo = np.finfo(dtype)
    n = 4
    q1, _ = np.linalg.qr(random_matrix(rng, (n, n), dtype))
    q2, _ = np.linalg.qr(random_matrix(rng, (n, n), dtype))
    singular_values = [
        [3.0, 1.0, 0.0, 0.0],  # rank 2
        [2.0, 2.0, 2.0, 1.0],  # repeated
        [0.0, 0.0, 0.0, 0.0],  # zero
        [1.0, 1e-4, 1e-8, 1e-12],  # graded
    ]
    a = np.stack([q1 @ np.diag(sv) @ q2 for sv in singular_values]).astype(dtype)
    for scale in (1.0, float(finfo.tiny) * 8, float(finfo.max) / 64):
        x = (a * scale).astype(dtype)
        s = blocksolve.svdvals(x)
        s_ref = np.linalg.svd(
            x.astype(np.complex128 if np.iscomplexobj(x) else np.float64), compute_uv=False
        )
        assert np.isfinite(s).all()
        bound = tol(dtype, 4, n) * s_ref[..., :1] + finfo.tiny * 16
        assert np.all(np.abs(s - s_ref) <= bound), (scale, s, s_ref)
        u, s, vh = blocksolve.svd(x)
        assert_orthonormal(u, dtype, n, -2)
        assert_orthonormal(vh, dtype, n, -1)


def test_nan_is_a_failure_named_as_such():
    a = np.stack([np.eye(3)] * 3)
    a[1, 0, 0] = np.nan
    with pytest.raises(
        blocksolve.LinAlgError, match=r"batch index \(1,\) \(a contains infs or NaNs\)"
    ):
        blocksolve.svd(a)
    u, s, vh = blocksolve.svd(a, errors="nan")
    assert np.isnan(s[1]).all() and np.isnan(u[1]).all() and not np.isnan(s[[0, 2]]).any()
    s, info = blocksolve.svdvals(a, return_info=True)
    np.testing.assert_array_equal(info, [0, 1, 0])
    with pytest.raises(np.linalg.LinAlgError):
        blocksolve.svd(a[1])  # one matrix, as NumPy


@pytest.mark.parametrize("mode", ["never", "wait"])
def test_an_inf_fails_its_matrix_on_lapack_as_on_the_kernels(mode):
    """NumPy raises "SVD did not converge" for a NaN but hands an inf to LAPACK, which
    returns NaNs or never returns: on either path an inf fails its matrix, and the
    functions built on the SVD raise for it."""
    a = np.stack([np.eye(3)] * 3)
    a[1] = np.diag([4.0, 3.0, np.inf])
    previous = blocksolve.set_specialization(mode)  # 'never': a stack on LAPACK too
    try:
        s, info = blocksolve.svdvals(a, return_info=True)
        with pytest.raises(blocksolve.LinAlgError, match=r"batch index \(1,\) \(a contains inf"):
            blocksolve.pinv(a)
        for composed in (blocksolve.pinv, blocksolve.polar, blocksolve.matrix_rank):
            with pytest.raises(blocksolve.LinAlgError, match="a contains infs or NaNs"):
                composed(a[1])
    finally:
        blocksolve.set_specialization(previous)
    np.testing.assert_array_equal(info, [0, 1, 0])
    assert np.isnan(s[1]).all() and (s[[0, 2]] == 1).all()


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0)])
def test_empty_matrices(shape):
    a = np.zeros((2, *shape))
    for got, want in zip(blocksolve.svd(a), np.linalg.svd(a)):
        assert got.shape == want.shape and got.dtype == want.dtype
    u, s, vh = blocksolve.svd(a, full_matrices=False)
    assert s.shape == (2, 0)


def test_hermitian(rng):
    x = random_matrix(rng, (4, 5, 5), np.complex128)
    a = x + np.conj(x.swapaxes(-1, -2))
    u, s, vh = blocksolve.svd(a, hermitian=True)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose(_reconstruct(u, s, vh), a, atol=1e-12)
    np.testing.assert_allclose(
        blocksolve.svd(a, compute_uv=False, hermitian=True),
        np.linalg.svd(a, compute_uv=False, hermitian=True),
        rtol=1e-12,
    )


@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6)])
@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_pinv(rng, shape, dtype):
    a = random_matrix(rng, (6, *shape), dtype)
    a[2, :, 0] = 0  # rank deficient
    got = blocksolve.pinv(a)
    assert got.shape == (6, shape[1], shape[0]) and got.dtype == dtype
    np.testing.assert_allclose(got, np.linalg.pinv(a), atol=tol(dtype, 10, max(shape)))
    for kwargs in ({"rcond": 0.3}, {"rtol": None}, {"rtol": np.full(6, 0.5)}):
        np.testing.assert_allclose(
            blocksolve.pinv(a, **kwargs),
            np.linalg.pinv(a, **kwargs),
            atol=tol(dtype, 10, max(shape)),
        )
    with pytest.raises(ValueError, match="`rtol` and `rcond` can't be both set"):
        blocksolve.pinv(a, rcond=0.1, rtol=0.1)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_pinv_decomposes_single_precision_in_double(rng, dtype):
    """As NumPy: a repeated column's zero singular value, which a single-precision SVD
    leaves near ``eps * s[0]``, falls below the default cut-off and is not inverted."""
    a = random_matrix(rng, (4, 5, 3), dtype)
    a[..., 2] = a[..., 0]
    got = blocksolve.pinv(a)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, np.linalg.pinv(a), atol=tol(dtype, 10, 5))


def test_composed_functions_treat_subclasses_as_numpy_and_scipy_do():
    """pinv and svd(hermitian=True) compute on the data and give NumPy's subclass back
    (``np.matrix`` multiplies with ``*``); polar gives base-class arrays, as SciPy's."""
    m = np.asmatrix(np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]]))
    got = blocksolve.pinv(m)
    assert type(got) is np.matrix
    np.testing.assert_allclose(got, np.linalg.pinv(m), atol=1e-14)
    ours, theirs = blocksolve.svd(m, hermitian=True), np.linalg.svd(m, hermitian=True)
    assert [type(x) for x in ours] == [type(x) for x in theirs]
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(np.abs(x), np.abs(y), atol=1e-14)
    u, p = blocksolve.polar(m)
    u_ref, p_ref = scipy.linalg.polar(m)
    assert type(u) is type(p) is type(u_ref) is type(p_ref) is np.ndarray
    np.testing.assert_allclose(u, u_ref, atol=1e-14)
    np.testing.assert_allclose(p, p_ref, atol=1e-14)


def test_pinv_empty_and_hermitian(rng):
    assert blocksolve.pinv(np.zeros((2, 0, 3))).shape == (2, 3, 0)
    # As NumPy: empty matrices give an empty result of the input's own dtype, even one
    # linalg does not compute in; an empty batch of matrices is decomposed as any.
    shapes, dtypes = ((0, 0), (3, 0, 0), (2, 4, 0)), (np.int64, bool, np.float16, np.float32)
    for shape, dtype in [*itertools.product(shapes, dtypes), ((0, 2, 2), np.int64)]:
        a = np.zeros(shape, dtype)
        got, want = blocksolve.pinv(a), np.linalg.pinv(a)
        assert (got.shape, got.dtype) == (want.shape, want.dtype)
    assert want.dtype == np.float64 and got.shape == (0, 2, 2)
    x = random_matrix(rng, (3, 4, 4), np.float64)
    a = x + x.mT
    np.testing.assert_allclose(blocksolve.pinv(a, hermitian=True), np.linalg.pinv(a), atol=1e-10)


def test_matrix_rank(rng):
    a = random_matrix(rng, (5, 6, 4), np.float64)
    a[1, :, 3] = a[1, :, 0] - a[1, :, 2]
    a[3] = 0
    np.testing.assert_array_equal(blocksolve.matrix_rank(a), np.linalg.matrix_rank(a))
    np.testing.assert_array_equal(
        blocksolve.matrix_rank(a, tol=1.0), np.linalg.matrix_rank(a, tol=1.0)
    )
    np.testing.assert_array_equal(
        blocksolve.matrix_rank(a, rtol=0.5), np.linalg.matrix_rank(a, rtol=0.5)
    )
    assert blocksolve.matrix_rank(np.zeros(3)) == 0 and blocksolve.matrix_rank(5.0) == 1
    with pytest.raises(ValueError, match="`tol` and `rtol` can't be both set"):
        blocksolve.matrix_rank(a, tol=1, rtol=1)


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"])
def test_cond(rng, p):
    """A singular matrix has condition number inf (0 for p=-2); NumPy raises "SVD did not
    converge" for one with p='nuc', where the inverse is all inf."""
    a = random_matrix(rng, (4, 3, 3), np.float64)
    a[2] = np.diag([1.0, 1.0, 0.0])
    got = blocksolve.cond(a, p)
    regular = [0, 1, 3]
    np.testing.assert_allclose(got[regular], np.linalg.cond(a[regular], p), rtol=1e-10)
    assert got[2] == (0 if p == -2 else np.inf)
    single = blocksolve.cond(a[0], p)
    assert type(single) is type(np.linalg.cond(a[0], p)) is np.float64  # a scalar, as NumPy's
    with pytest.raises(ValueError, match="cond: p must be one of"):
        blocksolve.cond(a, 3)


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("shape", [(3, 3), (4, 2)])
def test_polar_against_scipy(rng, side, shape):
    a = random_matrix(rng, (5, *shape), np.float64)
    u, p = blocksolve.polar(a, side=side)
    for i in range(5):
        u_ref, p_ref = scipy.linalg.polar(a[i], side=side)
        np.testing.assert_allclose(u[i], u_ref, atol=1e-12)
        np.testing.assert_allclose(p[i], p_ref, atol=1e-12)
    with pytest.raises(ValueError, match="polar: side must be one of"):
        blocksolve.polar(a, side="up")


def test_array_api_spellings(rng):
    from blocksolve import linalg

    a = random_matrix(rng, (3, 4, 4), np.float64)
    u, s, vh = linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(s, linalg.svdvals(a))
    np.testing.assert_allclose(linalg.pinv(a), np.linalg.pinv(a, rtol=None), atol=1e-10)
    np.testing.assert_array_equal(linalg.matrix_rank(a), np.linalg.matrix_rank(a))


def test_dask_arrays_stay_lazy(rng):
    da = pytest.importorskip("dask.array")
    a = random_matrix(rng, (6, 4, 3), np.float64)
    lazy = da.from_array(a, chunks=(2, 4, 3))
    u, s, vh = blocksolve.svd(lazy, full_matrices=False)
    assert isinstance(s, da.Array)
    np.testing.assert_allclose(s.compute(), np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose(blocksolve.pinv(lazy).compute(), np.linalg.pinv(a), atol=1e-12)
    np.testing.assert_array_equal(blocksolve.matrix_rank(lazy).compute(), np.linalg.matrix_rank(a))
    np.testing.assert_allclose(blocksolve.cond(lazy).compute(), np.linalg.cond(a), rtol=1e-10)
    square = lazy[:, :3, :]
    u, p = blocksolve.polar(square)
    np.testing.assert_allclose((u @ p).compute(), a[:, :3, :], atol=1e-12)


@pytest.mark.parametrize("compute_uv", [True, False])
def test_hermitian_svd_of_a_non_finite_matrix_fails_as_numpys(rng, compute_uv):
    """NumPy's ``svd(hermitian=True)`` raises for a NaN in the triangle its eigh reads (the
    other triangle is not read): a failure of the SVD, under its policy, here too."""
    a = random_hermitian(rng, (3,), 4, np.float64)
    a[1, 2, 1] = np.nan
    a[2, 1, 2] = np.nan  # the upper triangle: not read
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.svd(a[1], hermitian=True, compute_uv=compute_uv)
    expected = np.linalg.svd(a[2], hermitian=True, compute_uv=compute_uv)
    with pytest.raises(blocksolve.LinAlgError, match="SVD did not converge") as raised:
        blocksolve.svd(a, hermitian=True, compute_uv=compute_uv)
    assert raised.value.indices == [(1,)]
    with pytest.raises(blocksolve.LinAlgError, match="SVD did not converge"):
        blocksolve.svd(a[1], hermitian=True, compute_uv=compute_uv)
    result, info = blocksolve.svd(a, hermitian=True, compute_uv=compute_uv, return_info=True)
    np.testing.assert_array_equal(info, [0, 1, 0])
    filled = blocksolve.svd(a, hermitian=True, compute_uv=compute_uv, errors="nan")
    s = filled[1] if compute_uv else filled
    assert np.isnan(s[1]).all() and np.isfinite(np.delete(s, 1, axis=0)).all()
    np.testing.assert_allclose(s[2], expected[1] if compute_uv else expected, rtol=1e-12)


def test_dask_hermitian_singular_values_stay_lazy(rng):
    da = pytest.importorskip("dask.array")
    a = random_hermitian(rng, (6,), 4, np.float64)
    lazy = da.from_array(a, chunks=(2, 4, 4))
    s = blocksolve.svd(lazy, compute_uv=False, hermitian=True)
    assert isinstance(s, da.Array)
    expected = np.linalg.svd(a, compute_uv=False, hermitian=True)
    np.testing.assert_allclose(s.compute(), expected, rtol=1e-12)
    s, info = blocksolve.svd(lazy, compute_uv=False, hermitian=True, return_info=True)
    assert isinstance(info, da.Array)
    np.testing.assert_array_equal(info.compute(), np.zeros(6, np.int32))
