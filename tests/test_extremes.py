"""Every CPU kernel at the ends of each dtype's range, against NumPy/SciPy.

Tiny and huge scales, subnormals, mixed scales within one matrix, signed
zeros, infs and NaNs.  What is checked: results are finite exactly where
NumPy's/SciPy's are, the backward error is a modest multiple of ``n * eps``
(plus the absolute rounding of subnormal results), R is exactly upper
triangular with +0.0 below the diagonal, and failures caused by infs or
NaNs say so.  Shapes reuse the kernels the other tests compile (each new
shape and dtype costs a compilation); the examples from issue 9 are kept
exactly as reported.
"""

import warnings

import numpy as np
import pytest
import scipy.linalg

import blocksolve
from _helpers import DTYPES, random_spd

# Both CPU kernel tiers (see conftest): the straight-line kernels have a fast path of
# their own.  The references' own computations overflow where their results do.
pytestmark = [
    pytest.mark.kernel_tiers,
    pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
]

# Shapes the QR and lstsq tests compile anyway: straight-line 6x3 for every
# dtype, the run-time-size kernel at 40x33.
QR_SHAPES = [(6, 3), (40, 33)]


def _scales(dtype):
    """Named scales at the ends of ``dtype``'s range."""
    info = np.finfo(dtype)
    return {
        "tiny": float(info.tiny) * 16,  # just above the smallest normal number
        "subnormal": float(info.smallest_subnormal) * 2.0**20,  # 20 significant bits left
        "huge": float(info.max) / 256,
    }


def _matrix(rng, shape, dtype, scale):
    """Random entries of magnitude about ``scale``, exactly representable at that scale."""
    dtype = np.dtype(dtype)
    real = np.finfo(dtype).dtype
    ints = rng.integers(-64, 65, size=shape).astype(real)
    if dtype.kind == "c":
        ints = ints + 1j * rng.integers(-64, 65, size=shape).astype(real)
    return (ints.astype(dtype) * real.type(scale / 64)).astype(dtype)


def _eps(dtype):
    return float(np.finfo(dtype).eps)


def _norm(x):
    """Frobenius norm without overflow or underflow of the squares."""
    x = np.abs(np.asarray(x, np.complex128))
    big = float(x.max(initial=0.0))
    return big * float(np.sqrt(((x / big) ** 2).sum())) if big and np.isfinite(big) else big


def _assert_backward(residual, a, dtype, n, factor=20):
    """``|residual| <= factor * n * (eps |a| + the spacing of subnormals)`` (Frobenius)."""
    bound = (
        factor * n * (_eps(dtype) * _norm(a) + float(np.finfo(dtype).smallest_subnormal) * a.size)
    )
    assert _norm(residual) <= bound, (_norm(residual), bound)


def _assert_finite_like(got, want):
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))


def _assert_finite_where(got, want):
    """Finite wherever the reference is (it may be finite where the reference overflowed:
    OpenBLAS's triangular solves multiply by reciprocals of subnormal pivots)."""
    assert np.isfinite(got)[np.isfinite(want)].all()


def _assert_solves(a, x, b, dtype, factor=50):
    """``a x = b`` to a backward error of ``factor * n * eps``, in exactly rescaled float64.

    Each row of ``a`` and ``b`` is multiplied by the same power of two
    (exact; the solution does not change), which brings subnormal, huge and
    mixed-scale rows into a range where the residual itself can be
    computed; the rounding of subnormal results counts as an absolute error
    of the spacing of subnormals.
    """
    assert np.isfinite(x).all()
    n = a.shape[-1]
    a, b, x = (np.asarray(v, np.complex128) for v in (a, b, x))
    peaks = np.maximum(abs(a).max(axis=1), abs(b).max(axis=1))
    shifts = -np.frexp(np.where(peaks > 0, peaks, 1))[1]
    row_scaled = lambda v: (
        np.ldexp(v.real, shifts[:, None]) + 1j * np.ldexp(v.imag, shifts[:, None])
    )  # noqa: E731
    a_s, b_s = row_scaled(a), row_scaled(b)
    residual = a_s @ x - b_s
    spacing = np.ldexp(float(np.finfo(dtype).smallest_subnormal), shifts)[:, None]
    bound = factor * n * (_eps(dtype) * np.abs(a_s) @ np.abs(x) + spacing * (np.abs(x).max() + 1))
    assert (np.abs(residual) <= bound).all(), (abs(residual).max(), bound.min())


def _assert_exactly_upper(r):
    below = np.tril(np.ones(r.shape[-2:], bool), -1)
    lower = r[..., below]
    assert (
        (lower == 0).all() and not np.signbit(lower.real).any() and not np.signbit(lower.imag).any()
    ), "R must hold +0.0 below the diagonal"


# --- QR ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "a, dtype",
    [
        ([[1e-30j, 1]], np.complex64),
        ([[1e-200j, 1]], np.complex128),
        (np.diag([1e-200j, 1]), np.complex128),
        ([[1, 0], [1e308, 1e308]], np.float64),
    ],
    ids=["1e-30j-c64", "1e-200j-c128", "diag-1e-200j", "1e308-f64"],
)
def test_qr_issue_examples_match_numpy(a, dtype):
    a = np.asarray(a, dtype)
    q, r = blocksolve.qr(a)
    q_ref, r_ref = np.linalg.qr(a)
    assert np.isfinite(q).all() and np.isfinite(r).all()
    _assert_exactly_upper(r)
    np.testing.assert_allclose(r, r_ref, rtol=4 * _eps(dtype), atol=8 * _eps(dtype) * abs(a).max())
    np.testing.assert_allclose(q, q_ref, rtol=0, atol=8 * _eps(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, n", QR_SHAPES)
@pytest.mark.parametrize("where", ["tiny", "subnormal", "huge"])
def test_qr_at_the_ends_of_the_range(rng, dtype, m, n, where):
    scale = _scales(dtype)[where]
    a = _matrix(rng, (3, m, n), dtype, scale)
    q, r = blocksolve.qr(a)
    q_ref, r_ref = np.linalg.qr(a)
    _assert_finite_like(q, q_ref)
    _assert_finite_like(r, r_ref)
    assert np.isfinite(r).all()
    _assert_exactly_upper(r)
    for i in range(3):
        _assert_backward(q[i] @ r[i] - a[i], a[i], dtype, max(m, n))
        eye = np.eye(n, dtype=dtype)
        _assert_backward(np.conj(q[i].T) @ q[i] - eye, eye, dtype, max(m, n))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, n", QR_SHAPES)
def test_qr_mixed_scales_keep_every_column_accurate(rng, dtype, m, n):
    # Columns from the bottom to the top of the range in one matrix, and a
    # column whose sum of squares underflows under an O(1) diagonal entry.
    scales = _scales(dtype)
    a = _matrix(rng, (2, m, n), dtype, 1.0)
    a[0, :, 0] *= scales["tiny"] * 2**30
    a[0, :, 1] *= scales["huge"] / 2**10
    a[1, 1:, 0] = _matrix(rng, (m - 1,), dtype, scales["tiny"] * 4)
    a[1, 0, 0] = 1
    q, r = blocksolve.qr(a)
    q_ref, r_ref = np.linalg.qr(a)
    assert np.isfinite(q).all() and np.isfinite(r).all()
    _assert_exactly_upper(r)
    for i in range(2):
        # Column by column: the tiny column's backward error is relative to itself.
        for j in range(n):
            column = (q[i] @ r[i])[:, j] - a[i, :, j]
            _assert_backward(column, a[i, :, j], dtype, max(m, n))
    np.testing.assert_allclose(
        np.abs(np.diagonal(r, axis1=-2, axis2=-1)),
        np.abs(np.diagonal(r_ref, axis1=-2, axis2=-1)),
        rtol=100 * max(m, n) * _eps(dtype),
    )


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_qr_signed_zeros_and_zero_columns_like_numpy(dtype):
    # Signs of zeros are compared only below the diagonal of R: +0.0 there.
    a = np.zeros((2, 6, 3), dtype)
    a[0] = -0.0
    a[1, :, 1] = 1  # zero columns around a nonzero one
    for mode in ("reduced", "raw"):
        got = blocksolve.qr(a, mode=mode)
        ref = np.linalg.qr(a, mode=mode)
        for g, w in zip(got, ref):
            np.testing.assert_array_equal(g[0], w[0])  # H = I exactly (zeros of either sign)
            np.testing.assert_allclose(g[1], w[1], rtol=4 * _eps(dtype), atol=4 * _eps(dtype))
    _assert_exactly_upper(blocksolve.qr(a)[1])


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("m, n", QR_SHAPES)
def test_qr_with_infs_and_nans_keeps_r_triangular(dtype, m, n):
    a = np.stack([np.eye(m, n, dtype=dtype)] * 3)
    a[0, 1, 1] = np.nan
    a[1, 0, 2] = np.inf  # above the diagonal: NumPy's R stays finite but for that entry
    a[2, m - 1, 0] = -np.inf
    r = blocksolve.qr(a, mode="r")
    _assert_exactly_upper(r)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r_ref = np.linalg.qr(a, mode="r")
    _assert_finite_like(r[1], r_ref[1])


# --- lstsq ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, m, n",
    [(d, m, n) for d in DTYPES for m, n in [(6, 3), (40, 33)]]
    + [(d, 3, 5) for d in (np.float64, np.complex128)],
)
@pytest.mark.parametrize("where", ["tiny", "subnormal", "huge"])
def test_lstsq_rank_and_solution_at_the_ends_of_the_range(rng, dtype, m, n, where):
    scale = _scales(dtype)[where] / (2.0**12 if where == "huge" else 1)  # s stays finite
    p = min(m, n)
    a = _matrix(rng, (3, m, n), dtype, scale) + (scale * 16 * np.eye(m, n)).astype(dtype)
    a[1, :, -1] = a[1, :, 0]  # rank p - 1 (tall), p (wide)
    b = _matrix(rng, (3, m, 2), dtype, 1.0)
    x, residuals, rank, s = blocksolve.lstsq(a, b)
    for i in range(3):
        x_ref, _, rank_ref, s_ref = np.linalg.lstsq(a[i], b[i])
        assert rank[i] == rank_ref, (i, rank[i], rank_ref)
        _assert_finite_like(x[i], x_ref)
        np.testing.assert_allclose(
            s[i], s_ref, rtol=50 * p * _eps(dtype), atol=50 * p * _eps(dtype) * s_ref[0]
        )
        # x is at scale 1 / scale: compare the fit a x, which is at scale 1.
        fit = a[i].astype(np.complex128) @ x[i]
        fit_ref = a[i].astype(np.complex128) @ x_ref.astype(np.complex128)
        if np.isfinite(fit_ref).all():
            np.testing.assert_allclose(fit, fit_ref, atol=1e3 * p * _eps(dtype) * abs(b).max())


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_lstsq_subnormal_matrix_has_numpys_rank(dtype):
    # Issue 9: at subnormal scale the rank was 0 where NumPy finds the full rank.
    scale = 1e-310 if np.dtype(dtype) == np.float64 else 1e-40
    a = np.zeros((6, 3), dtype)
    a[:3, :2] = np.array([[1, 2], [3, 1], [0, 0.125]]) * scale  # rank 2: the last column is 0
    b = np.ones((6, 1), dtype)
    x, residuals, rank, s = blocksolve.lstsq(a, b)
    x_ref, _, rank_ref, s_ref = np.linalg.lstsq(a, b)
    assert rank == rank_ref == 2
    np.testing.assert_allclose(
        s, s_ref, rtol=1e-3, atol=float(np.finfo(dtype).smallest_subnormal) * 8
    )
    _assert_finite_like(x, x_ref)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_lstsq_graded_columns_with_a_tiny_rcond_stay_finite(rng, dtype, single_matrices_on_kernels):
    """Numerics audit: graded columns and ``rcond=1e-300`` kept a singular value whose
    square was subnormal: an infinite weight and an all-NaN ``x``.  Values below ~1e-154 of
    the largest are now never kept; the default ``rcond`` gives NumPy's rank and solution."""
    a = (rng.standard_normal((6, 3)) * np.array([1, 1e-80, 1e-158])).astype(dtype)
    b = rng.standard_normal((6, 1)).astype(dtype)
    x, _, rank, s = blocksolve.lstsq(a, b, rcond=1e-300)
    assert np.isfinite(x).all() and np.isfinite(s).all()
    assert rank == 2  # 1 and 1e-80 resolved, 1e-158 not
    x, _, rank, s = blocksolve.lstsq(a, b)
    x_ref, _, rank_ref, s_ref = np.linalg.lstsq(a, b)
    assert rank == rank_ref
    np.testing.assert_allclose(s[:2], s_ref[:2], rtol=1e-12)
    np.testing.assert_allclose(x, x_ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_lstsq_huge_and_tiny_right_hand_sides(rng, dtype):
    scales = _scales(dtype)
    a = _matrix(rng, (2, 6, 3), dtype, 1.0) + 4 * np.eye(6, 3, dtype=dtype)
    b = np.stack(
        [
            _matrix(rng, (6, 1), dtype, scales["huge"] / 64),
            _matrix(rng, (6, 1), dtype, scales["subnormal"]),
        ]
    )
    x, residuals, rank, s = blocksolve.lstsq(a, b)
    for i in range(2):
        x_ref, res_ref, _, _ = np.linalg.lstsq(a[i], b[i])
        _assert_finite_like(x[i], x_ref)
        _assert_finite_like(residuals[i], res_ref)
        np.testing.assert_allclose(
            x[i], x_ref, rtol=1e3 * _eps(dtype), atol=float(np.finfo(dtype).smallest_subnormal) * 64
        )


# --- LU ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("where", ["tiny", "subnormal", "huge"])
def test_lu_factor_at_the_ends_of_the_range(rng, dtype, where):
    scale = _scales(dtype)[where]
    a = _matrix(rng, (4, 4, 4), dtype, scale) + (scale * 100 * np.eye(4)).astype(dtype)
    lu, piv = blocksolve.lu_factor(a)
    for i in range(4):
        lu_ref, piv_ref = scipy.linalg.lu_factor(a[i])
        np.testing.assert_array_equal(piv[i], piv_ref)
        assert np.isfinite(lu[i]).all(), "multipliers stay finite (xGETF2 divides by tiny pivots)"
        L = np.tril(lu[i], -1) + np.eye(4, dtype=dtype)
        U = np.triu(lu[i])
        perm = np.arange(4)
        for k, p in enumerate(piv[i]):
            perm[k], perm[p] = perm[p], perm[k]
        _assert_backward(L @ U - a[i][perm], a[i], dtype, 4)


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_mixed_scales_and_subnormal_pivots(rng, dtype):
    scales = _scales(dtype)
    a = np.stack(
        [
            np.diag([scales["huge"], 1, scales["tiny"], 1]).astype(dtype),
            np.diag([scales["subnormal"]] * 4).astype(dtype),
        ]
    )
    a[0, 3, 0] = 1  # below a huge pivot: multiplier 1 / huge
    a[1] += _matrix(rng, (4, 4), dtype, scales["subnormal"] / 8)
    b = np.stack(
        [_matrix(rng, (4, 1), dtype, 1.0), _matrix(rng, (4, 1), dtype, scales["subnormal"])]
    )  # x of order 1
    x = blocksolve.solve(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        x_ref = np.linalg.solve(a, b)
    _assert_finite_where(x, x_ref)
    for i in range(2):
        _assert_solves(a[i], x[i], b[i], dtype)


def test_lu_zero_pivots_of_either_sign_are_singular():
    a = np.array([[[-0.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [-0.0, -0.0]]])
    (lu, piv), info = blocksolve.lu_factor(a, return_info=True)
    np.testing.assert_array_equal(info, [1, 2])
    with pytest.raises(blocksolve.LinAlgError, match=r"\(0,\) \(Singular matrix"):
        blocksolve.solve(a, np.ones((2, 2, 1)))


def test_lu_failures_from_infs_and_nans_are_named():
    a = np.array([[[0.0, 0.0], [np.nan, 0.0]], [[1.0, 0.0], [0.0, 0.0]]])
    with pytest.warns(
        blocksolve.LinAlgWarning,
        match=r"\(0,\) \(a contains infs or NaNs\), \(1,\) \(Diagonal number 2",
    ):
        blocksolve.lu_factor(a, check_finite=False)
    with pytest.raises(blocksolve.LinAlgError, match=r"^solve: a contains infs or NaNs$"):
        blocksolve.solve(a[0], np.ones(2))


# --- Cholesky and triangular solves ------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("where", ["tiny", "subnormal", "huge"])
def test_cholesky_at_the_ends_of_the_range(rng, dtype, where):
    scale = _scales(dtype)[where]
    n = 4
    a = (
        random_spd(rng, (3,), n, np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
        * scale
        / 2
    ).astype(dtype)
    L = blocksolve.cholesky(a)
    L_ref = np.linalg.cholesky(a)
    _assert_finite_like(L, L_ref)
    assert np.isfinite(L).all()
    for i in range(3):
        _assert_backward(L[i] @ np.conj(L[i].T) - a[i], a[i], dtype, n)


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_cholesky_mixed_scales_and_signed_zeros(dtype):
    scales = _scales(dtype)
    a = np.stack(
        [
            np.diag([scales["huge"], scales["tiny"], 1.0, scales["subnormal"]]),
            np.diag([1.0, -0.0, 1.0, 1.0]),
            np.diag([1.0, 0.0, 1.0, 1.0]),
        ]
    ).astype(dtype)
    L, info = blocksolve.cholesky(a, return_info=True)
    np.testing.assert_array_equal(info, [0, 2, 2])
    np.testing.assert_allclose(L[0], np.linalg.cholesky(a[0]), rtol=4 * _eps(dtype))
    with pytest.raises(blocksolve.LinAlgError, match=r"\(1,\) \(Matrix is not positive definite"):
        blocksolve.cholesky(a)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("where", ["tiny", "subnormal", "huge"])
def test_triangular_solves_at_the_ends_of_the_range(rng, dtype, where):
    scale = _scales(dtype)[where]
    n = 4
    t = np.tril(_matrix(rng, (3, n, n), dtype, scale / 8)) + (scale * np.eye(n)).astype(dtype)
    b = _matrix(rng, (3, n, 2), dtype, scale)  # x of order 1
    for trans in (0, 2):
        x = blocksolve.solve_triangular(t, b, lower=True, trans=trans)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            x_ref = np.stack(
                [
                    scipy.linalg.solve_triangular(t[i], b[i], lower=True, trans=trans)
                    for i in range(3)
                ]
            )
        _assert_finite_where(x, x_ref)
        op = np.conj(np.swapaxes(t, -1, -2)) if trans else t
        for i in range(3):
            _assert_solves(op[i], x[i], b[i], dtype)
    c = np.linalg.cholesky(random_spd(rng, (3,), n, np.complex128)) * np.sqrt(scale)
    c = (c if np.dtype(dtype).kind == "c" else c.real).astype(dtype)
    x = blocksolve.cho_solve((c, True), b)
    for i in range(3):
        _assert_solves(c[i] @ np.conj(c[i].T), x[i], b[i], dtype, factor=200)


# --- eigh -------------------------------------------------------------------------------


def _assert_eigh(a, w, v, dtype):
    """``v`` unitary and ``a v = v diag(w)`` to ``n eps |a|`` (subnormal rounding counted)."""
    n = a.shape[-1]
    assert np.isfinite(w).all() and np.isfinite(v).all()
    _assert_backward(np.conj(v.T) @ v - np.eye(n), np.eye(n), dtype, n)
    _assert_backward(a @ v - v * w, a, dtype, n)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("where", ["tiny", "subnormal", "huge"])
def test_eigh_at_the_ends_of_the_range(rng, dtype, where):
    """Issue: a matrix whose largest entry is below 2**-1022 was scaled by an infinite
    factor (eigenvalues inf, eigenvectors the identity)."""
    n = 4  # the size test_eigh compiles
    x = _matrix(rng, (3, n, n), dtype, _scales(dtype)[where])
    a = (x + np.conj(np.swapaxes(x, -1, -2))) / 2
    w, v = blocksolve.eigh(a)
    w_ref = np.linalg.eigvalsh(a)
    np.testing.assert_array_equal(blocksolve.eigvalsh(a), w)
    for i in range(3):
        _assert_eigh(a[i], w[i], v[i], dtype)
        _assert_backward(w[i] - w_ref[i], a[i], dtype, n)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_pairs_far_below_the_largest_entry(dtype):
    """Issue: a Jacobi rotation computed from |a_pq|^2 wiped two eigenvectors (c = 0) or was
    not orthogonal where that square is subnormal -- a pair far below the matrix's largest
    entry.  The cases of the numerics audit: a 2x2 block beside 1, and a matrix whose
    largest entry is just inside the range the kernel leaves unscaled."""
    info = np.finfo(dtype)
    pair = np.sqrt(float(info.tiny)) * 2.0**-20  # float64: 1.4e-160, its square subnormal
    beside_one = np.diag([1.0, 0, 0, 0.5])
    beside_one[1, 2] = beside_one[2, 1] = pair
    unscaled = np.sqrt(float(info.tiny) / float(info.eps)) * 16  # the kernel leaves it be
    r = 1e-8 if info.dtype.itemsize == 4 else 1e-10  # (2 r unscaled)^2: subnormal
    near_the_bottom = unscaled * np.array(
        [[1, 0, 0, 0], [0, r, 2 * r, 0], [0, 2 * r, 3 * r, 0], [0, 0, 0, 0.5]]
    )
    for a in (beside_one, near_the_bottom):  # 4 x 4: the size test_eigh compiles
        a = a.astype(dtype)
        w, v = blocksolve.eigh(a)
        _assert_eigh(a, w, v, dtype)
        _assert_backward(w - np.linalg.eigvalsh(a), a, dtype, 4)
