"""The CPU SVD kernels (blocksolve.cpu.kernels.svd) against numpy.linalg.svd and pinv.

Accuracy to LAPACK's standard, with ``n = max(m, n)`` and ``eps`` the
dtype's: singular values within ``C n eps s[0]`` of NumPy's (computed in
double precision), ``U`` and ``V`` orthonormal to ``C n eps``,
``U S V^H`` within ``C n eps s[0]`` of ``a``.

Compilations are kept few: the run-time-size kernel compiles once per
dtype and serves every shape and job; the straight-line kernels (one per
shape, dtype and job) are a short list.
"""

import numpy as np
import pytest

from blocksolve.cpu.kernels import svd

DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
C = 10  # the "small multiple" of n eps

SHAPES = [
    (1, 1),
    (2, 2),
    (3, 3),
    (4, 4),
    (8, 8),
    (16, 16),
    (6, 3),
    (3, 6),
    (32, 8),
    (9, 17),
    (40, 33),
]

# (dtype, m, n, job) of the straight-line kernels compiled here
# Straight-line kernels compile for 10-60 s each: in the exhaustive step (pytest -m exhaustive).
SPECIALISED = [
    pytest.param(*case, marks=pytest.mark.exhaustive)
    for case in [
        (np.float64, 3, 3, "reduced"),
        (np.float64, 3, 3, "values"),
        (np.float64, 3, 3, "pinv"),
        (np.float32, 3, 3, "reduced"),
        (np.complex64, 3, 3, "reduced"),
        (np.float64, 1, 1, "reduced"),
        (np.float64, 5, 3, "full"),
        (np.complex128, 3, 5, "full"),
    ]
]
TIERS = [False, pytest.param(True, marks=pytest.mark.exhaustive)]


def random(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def eps(dtype):
    return float(np.finfo(dtype).eps)


def reference_values(a):
    """NumPy's singular values, in double precision."""
    wide = np.result_type(a.dtype, np.float64)
    return np.linalg.svd(a.astype(wide), compute_uv=False)


def adjoint(x):
    return np.conj(np.swapaxes(x, -1, -2))


def check_values(s, a, extra=1.0):
    m, n = a.shape[-2:]
    ref = reference_values(a)
    assert s.shape == ref.shape and s.dtype == np.finfo(a.dtype).dtype
    assert np.all(np.diff(s, axis=-1) <= 0), "not sorted largest first"
    scale = ref[..., :1] if ref.shape[-1] else 0
    bound = C * extra * max(m, n) * eps(a.dtype) * scale + _rounding(a.dtype)
    assert np.all(np.abs(s - ref) <= bound), np.abs(s - ref).max()


def _rounding(dtype):
    """Absolute error of rounding a result into ``dtype`` near its subnormal range."""
    return float(np.finfo(dtype).smallest_subnormal)


def check_orthonormal(q, dtype, columns=True):
    k = q.shape[-1] if columns else q.shape[-2]
    gram = adjoint(q) @ q if columns else q @ adjoint(q)
    bound = C * max(q.shape[-2:]) * eps(dtype)
    assert np.abs(gram - np.eye(k)).max() <= bound


def check_svd(result, a, full, extra=1.0):
    s, u, vh, info = result
    m, n = a.shape[-2:]
    p = min(m, n)
    assert (info == 0).all()
    assert u.shape == a.shape[:-2] + ((m, m) if full else (m, p)) and u.dtype == a.dtype
    assert vh.shape == a.shape[:-2] + ((n, n) if full else (p, n)) and vh.dtype == a.dtype
    check_values(s, a, extra)
    check_orthonormal(u, a.dtype)
    check_orthonormal(vh, a.dtype, columns=False)
    wide = np.result_type(a.dtype, np.float64)  # no underflow in the check itself
    rebuilt = (u[..., :p].astype(wide) * s[..., None, :]) @ vh[..., :p, :].astype(wide)
    scale = reference_values(a)[..., :1, None] if p else 0
    error = np.abs(rebuilt - a)
    bound = C * extra * max(m, n) * (eps(a.dtype) * scale + _rounding(a.dtype))
    assert np.all(error <= bound), error.max()


def check_pinv(x, info, a, rcond):
    """Against numpy.linalg.pinv in double precision, relative to the size of the result
    and the condition number of the part kept (``rcond``: a scalar or one per matrix)."""
    assert (info == 0).all()
    m, n = a.shape[-2:]
    ref = np.linalg.pinv(a.astype(np.result_type(a.dtype, np.float64)), rcond=rcond)
    assert x.shape == ref.shape and x.dtype == a.dtype
    s = reference_values(a)
    kept = np.where(s > np.asarray(rcond)[..., None] * s[..., :1], s, np.inf)
    condition = (s[..., :1] / kept.min(axis=-1, keepdims=True))[..., None]  # of the kept part
    size = np.abs(ref).max(axis=(-2, -1), keepdims=True)
    error = np.abs(x - ref)
    assert np.all(error <= C * max(m, n) * eps(a.dtype) * condition * size), error.max()


# --------------------------------------------------------------------------- both tiers


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, n", SHAPES)
def test_generic_matches_numpy(rng, dtype, m, n):
    a = random(rng, (13, m, n), dtype)
    copy = a.copy()
    for full in (False, True):
        check_svd(svd.gesvd(a, True, full, specialised=False), a, full)
    s, u, vh, info = svd.gesvd(a, False, specialised=False)
    assert u.size == vh.size == 0 and (info == 0).all()
    check_values(s, a)
    x, info = svd.pinv(a, 1e-6, specialised=False)
    check_pinv(x, info, a, 1e-6)
    np.testing.assert_array_equal(a, copy)  # input untouched


@pytest.mark.parametrize("dtype, m, n, job", SPECIALISED)
def test_specialised_matches_numpy(rng, dtype, m, n, job):
    a = random(rng, (21, m, n), dtype)
    copy = a.copy()
    if job == "pinv":
        x, info = svd.pinv(a, 1e-6)
        check_pinv(x, info, a, 1e-6)
        generic = svd.pinv(a, 1e-6, specialised=False)[0]
        np.testing.assert_allclose(x, generic, rtol=0, atol=100 * eps(dtype) * np.abs(x).max())
    elif job == "values":
        s, u, vh, info = svd.gesvd(a, False)
        assert (info == 0).all() and u.size == vh.size == 0
        check_values(s, a)
    else:
        full = job == "full"
        result = svd.gesvd(a, True, full)
        check_svd(result, a, full)
        generic = svd.gesvd(a, True, full, specialised=False)
        bound = C * max(m, n) * eps(dtype) * generic[0][:, :1]  # the tiers agree to rounding
        np.testing.assert_allclose(result[0], generic[0], rtol=0, atol=bound.max())
    np.testing.assert_array_equal(a, copy)


@pytest.mark.parametrize("specialised", TIERS, ids=["generic", "specialised"])
@pytest.mark.parametrize("m, n", [(3, 3), (5, 3), (3, 5)])
def test_batched_equals_loop(rng, specialised, m, n):
    dtype = np.complex128 if n == 5 else np.float64
    full = (m, n) != (3, 3)
    a = random(rng, (19, m, n), dtype)
    a[4] *= 1e-200  # scaled matrices and failures stay in their lane
    a[7, 0, 1] = np.nan
    batched = svd.gesvd(a, True, full, specialised=specialised)
    for b in (0, 4, 7, 11, 18):
        single = svd.gesvd(a[b : b + 1], True, full, specialised=specialised)
        for x, y in zip(batched, single):
            np.testing.assert_array_equal(x[b], y[0])
    assert batched[3][7] == 1 and np.isnan(batched[0][7]).all()
    assert (np.delete(batched[3], 7) == 0).all()


# --------------------------------------------------------------------------- hard matrices


def _with_values(rng, m, n, values, dtype):
    """An ``m x n`` matrix with the given singular values (exactly, up to rounding)."""
    wide = np.result_type(dtype, np.float64)
    q1, _ = np.linalg.qr(random(rng, (m, m), wide))
    q2, _ = np.linalg.qr(random(rng, (n, n), wide))
    d = np.zeros((m, n))
    d[np.arange(len(values)), np.arange(len(values))] = values
    return (q1 @ d @ q2).astype(dtype)


def _hard_cases(rng, dtype):
    """name -> (batch of 3x3 matrices)."""
    info = np.finfo(dtype)
    ints = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [3.0, 6.0, 9.0]])  # rank 1, exact
    rank2 = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 1.0, 2.0]])  # rank 2, exact
    base = random(rng, (5, 3, 3), dtype)
    cases = {
        "zero": np.zeros((2, 3, 3), dtype),
        "rank one": np.stack([ints, ints.T, np.outer([0, 1, 0], [1, 0, 0])]).astype(dtype),
        "rank two": np.stack([rank2, rank2.T]).astype(dtype),
        "zero column and row": np.stack([np.diag([1.0, 0, 2]), np.diag([0.0, 0, 3])]).astype(dtype),
        "identity": np.broadcast_to(np.eye(3, dtype=dtype), (2, 3, 3)),
        "repeated": np.stack([_with_values(rng, 3, 3, [2, 2, 1], dtype) for _ in range(3)]),
        "graded": np.stack(
            [_with_values(rng, 3, 3, [1, 1e-3, 1e-6], dtype), np.diag([1, 1e-4, 1e-9])]
        ).astype(dtype),
        "tiny": base * info.tiny,
        "subnormal": (np.round(base.real * 4) * info.smallest_subnormal).astype(dtype),
        "huge": base / np.abs(base).max(axis=(1, 2), keepdims=True) * (info.max / 8),
        "small": base * float(info.tiny) ** 0.5,
        "large": base * float(info.max) ** 0.5,
        "mixed scales": np.stack(
            [np.diag([info.max / 8, 1.0, info.tiny]), np.diag([1.0, info.smallest_subnormal, 0])]
        ).astype(dtype),
    }
    return {name: np.ascontiguousarray(x) for name, x in cases.items()}


@pytest.mark.parametrize(
    "specialised, dtype",
    [(False, dtype) for dtype in DTYPES]
    + [
        pytest.param(True, dtype, marks=pytest.mark.exhaustive)
        for dtype in (np.float32, np.float64, np.complex64)
    ],
)
def test_hard_matrices(rng, specialised, dtype):
    for name, a in _hard_cases(rng, dtype).items():
        # huge entries: NumPy's own result is only good to ~eps of the largest
        extra = 4.0 if name in ("huge", "large") else 1.0
        try:
            check_svd(svd.gesvd(a, True, False, specialised=specialised), a, False, extra)
        except AssertionError as error:
            raise AssertionError(f"{name}: {error}") from None


@pytest.mark.parametrize("specialised", TIERS, ids=["generic", "specialised"])
def test_rank_deficient_tall_and_wide(specialised):
    """Exact zeros after the QR: the completed vectors keep U and V orthonormal."""
    tall = np.zeros((3, 6, 3))
    tall[0, :3] = np.diag([1.0, 0, 2])
    tall[1, :, 0] = 1  # rank one
    tall[2, 2, 1] = 5
    wide = np.ascontiguousarray(np.conj(np.swapaxes(tall, 1, 2))[:, :, :5]).astype(np.complex128)
    check_svd(svd.gesvd(tall, True, True, specialised=specialised), tall, True)
    check_svd(svd.gesvd(wide, True, True, specialised=specialised), wide, True)


def test_scales_do_not_change_results(rng):
    """Scaling by a power of two scales the singular values and leaves the vectors."""
    a = random(rng, (8, 3, 3), np.float64)
    s, u, vh, _ = svd.gesvd(a, True, False)
    for power in (-1000, -600, 600, 1000):
        s2, u2, vh2, _ = svd.gesvd(a * 2.0**power, True, False)
        np.testing.assert_array_equal(s2, s * 2.0**power)
        np.testing.assert_array_equal(u2, u)
        np.testing.assert_array_equal(vh2, vh)


@pytest.mark.parametrize("specialised", TIERS, ids=["generic", "specialised"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_inf_and_nan_fail_alone(rng, specialised, bad):
    a = random(rng, (12, 3, 3), np.float64)
    a[5, 1, 2] = bad
    s, u, vh, info = svd.gesvd(a, True, False, specialised=specialised)
    assert info[5] == 1 and (np.delete(info, 5) == 0).all()
    assert np.isnan(s[5]).all() and np.isnan(u[5]).all() and np.isnan(vh[5]).all()
    ok = np.delete(np.arange(12), 5)
    check_svd((s[ok], u[ok], vh[ok], info[ok]), a[ok], False)
    x, info = svd.pinv(a, 1e-6, specialised=specialised)
    assert info[5] == 1 and np.isnan(x[5]).all() and np.isfinite(np.delete(x, 5, 0)).all()


@pytest.mark.parametrize("specialised", TIERS, ids=["generic", "specialised"])
def test_too_few_sweeps_is_a_failure(rng, specialised):
    a = random(rng, (9, 3, 3), np.float64)
    a[0] = np.diag([3.0, 2.0, 1.0])  # orthogonal columns: converged at once
    info = svd.gesvd(a, True, False, specialised=specialised, sweeps=1)[3]
    assert info[0] == 0
    assert (info[1:] >= 1).all() and (info[1:] <= 3).all()


@pytest.mark.parametrize("specialised", TIERS, ids=["generic", "specialised"])
def test_sign_convention(specialised):
    """V is a product of rotations from the identity, sorted; ``u_j = a v_j / s_j``."""
    a = np.array([[[3.0, 0, 0], [0, -1, 0], [0, 0, 2]]])
    s, u, vh, info = svd.gesvd(a, True, False, specialised=specialised)
    np.testing.assert_array_equal(s, [[3, 2, 1]])
    np.testing.assert_array_equal(vh, [[[1, 0, 0], [0, 0, 1], [0, 1, 0]]])
    np.testing.assert_array_equal(u, [[[1, 0, 0], [0, 0, -1], [0, 1, 0]]])


@pytest.mark.parametrize("m, n", [(3, 0), (0, 3), (0, 0)])
def test_zero_sized(m, n):
    a = np.zeros((2, m, n))
    for full in (False, True):
        s, u, vh, info = svd.gesvd(a, True, full)
        ref = np.linalg.svd(a, full_matrices=full)
        for x, y in zip((u, s, vh), ref):
            np.testing.assert_array_equal(x, y)
    x, info = svd.pinv(a, 1e-15)
    np.testing.assert_array_equal(x, np.linalg.pinv(a))
    s, u, vh, info = svd.gesvd(np.zeros((0, 3, 3)), True, False)
    assert s.shape == (0, 3) and u.shape == (0, 3, 3) and info.shape == (0,)


@pytest.mark.parametrize("specialised", TIERS, ids=["generic", "specialised"])
def test_pinv_rank_deficient(rng, specialised):
    """Singular values at or below ``rcond * s[0]`` are dropped, as NumPy's pinv drops them."""
    values = ([1, 1e-3, 0], [2, 1, 1e-12], [1, 0, 0], [0, 0, 0], [1, 1, 1e-7])
    a = np.stack([_with_values(rng, 3, 3, v, np.float64) for v in values])
    a[2] = np.outer([1.0, 2, 3], [3.0, 2, 1])  # exact rank one
    for rcond in (1e-15, 1e-5, 0.01, np.array([1e-15, 0.1, 1e-15, 0.5, 1e-9])):
        x, info = svd.pinv(a, rcond, specialised=specialised)
        check_pinv(x, info, a, rcond)
