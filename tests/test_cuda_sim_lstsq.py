"""GPU lstsq (``gels``, blocksolve.cuda.kernels.lstsq) under numba's CUDA simulator, at the ends of
the floating-point range.

The cases are the CPU's extreme-scale lstsq tests (``tests/test_extremes.py``,
``tests/test_lstsq.py``), run on the GPU plan: the gels kernel scales each
``A`` and ``b`` by a power of two and factors them (cuSolverDx's QR and
multiply: numpy stand-ins here), the SVD kernel (``gesvd`` of the ``p x p``
triangle in double precision) gives the pseudo-inverse, and the host step
scales ``x``, the residuals and the singular values back.  Compared with
NumPy as the CPU tests compare the CPU kernels.  Small shapes only (6x3 and
3x5, a few blocks of two matrices): each simulated thread and barrier is
slow.  See ``test_cuda_sim.py`` for what the simulator checks and what it
cannot.

Run with ``NUMBA_ENABLE_CUDASIM=1 python -m pytest -m cudasim``; skipped otherwise.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

# The simulator helpers and the ``simulated_gpu`` fixture of the first simulator module.
from test_cuda_sim import _layout, _plan, _run
from test_extremes import _assert_finite_like, _eps, _matrix, _scales
from test_lstsq import with_singular_values

from _helpers import DTYPES, assert_close, random_matrix, well_conditioned

pytestmark = [
    pytest.mark.cudasim,
    pytest.mark.skipif(
        os.environ.get("NUMBA_ENABLE_CUDASIM") != "1",
        reason="needs NUMBA_ENABLE_CUDASIM=1 in the environment of pytest (numba's CUDA simulator)",
    ),
    # NumPy's own lstsq overflows where its results do.
    pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
]


def _gels(a, b, rcond=None, layouts="CC", **plan_options):
    """``(x, residuals, rank, s, info)`` of the GPU plan for ``a`` and ``b``."""
    m, n = a.shape[-2:]
    plan = _plan("gels", {"m": m, "n": n, "k": b.shape[-1]}, a.dtype, {}, layouts, **plan_options)
    operands = [_layout(x, layout) for x, layout in zip((a, b), layouts)]
    return _run(plan, *operands, rcond=rcond)


# --- the ends of the range (tests/test_extremes.py) -------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, n", [(6, 3), (3, 5)])
def test_rank_and_solution_at_the_ends_of_the_range(rng, dtype, m, n):
    """Tiny, subnormal and huge matrices (one launch): NumPy's rank, finite results where
    NumPy's are, the singular values to ``50 p eps`` and the fit ``a x`` to NumPy's."""
    p, cases = min(m, n), []
    for where in ("tiny", "subnormal", "huge"):
        scale = _scales(dtype)[where] / (2.0**12 if where == "huge" else 1)  # s stays finite
        a = _matrix(rng, (3, m, n), dtype, scale) + (scale * 16 * np.eye(m, n)).astype(dtype)
        a[1, :, -1] = a[1, :, 0]  # rank p - 1 (tall), p (wide)
        cases.append(a)
    a = np.concatenate(cases)
    b = _matrix(rng, (len(a), m, 2), dtype, 1.0)
    x, residuals, rank, s, info = _gels(a, b, batches_per_block=4)  # the last block: 3 pads
    assert not info.any()
    for i in range(len(a)):
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
def test_subnormal_matrix_has_numpys_rank(dtype):
    scale = 1e-310 if np.dtype(dtype) == np.float64 else 1e-40
    a = np.zeros((1, 6, 3), dtype)
    a[0, :3, :2] = np.array([[1, 2], [3, 1], [0, 0.125]]) * scale  # rank 2: the last column is 0
    b = np.ones((1, 6, 1), dtype)
    x, residuals, rank, s, info = _gels(a, b)
    x_ref, _, rank_ref, s_ref = np.linalg.lstsq(a[0], b[0])
    assert rank[0] == rank_ref == 2
    np.testing.assert_allclose(
        s[0], s_ref, rtol=1e-3, atol=float(np.finfo(dtype).smallest_subnormal) * 8
    )
    _assert_finite_like(x[0], x_ref)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_graded_columns_with_a_tiny_rcond_stay_finite(rng, dtype):
    """Singular values the SVD kernel does not resolve (1e-158 of the largest) are never
    kept, whatever ``rcond``; the default ``rcond`` gives NumPy's rank and solution."""
    a = (rng.standard_normal((1, 6, 3)) * np.array([1, 1e-80, 1e-158])).astype(dtype)
    b = rng.standard_normal((1, 6, 1)).astype(dtype)
    x, _, rank, s, _ = _gels(a, b, rcond=1e-300)
    assert np.isfinite(x).all() and np.isfinite(s).all()
    assert rank[0] == 2  # 1 and 1e-80 resolved, 1e-158 not
    x, _, rank, s, _ = _gels(a, b)
    x_ref, _, rank_ref, s_ref = np.linalg.lstsq(a[0], b[0])
    assert rank[0] == rank_ref
    np.testing.assert_allclose(s[0, :2], s_ref[:2], rtol=1e-12)
    np.testing.assert_allclose(x[0], x_ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
@pytest.mark.parametrize("m, n", [(6, 3), (3, 5)])
def test_huge_and_tiny_right_hand_sides(rng, dtype, m, n):
    """``b`` near overflow and in the subnormal range, scaled in the kernel (M >= N) or on
    the device before ``Q`` applies (M < N)."""
    scales = _scales(dtype)
    a = _matrix(rng, (2, m, n), dtype, 1.0) + 4 * np.eye(m, n, dtype=dtype)
    b = np.stack(
        [
            _matrix(rng, (m, 1), dtype, scales["huge"] / 64),
            _matrix(rng, (m, 1), dtype, scales["subnormal"]),
        ]
    )
    x, residuals, rank, s, info = _gels(a, b)
    for i in range(2):
        x_ref, res_ref, _, _ = np.linalg.lstsq(a[i], b[i])
        _assert_finite_like(x[i], x_ref)
        if m > n:
            _assert_finite_like(residuals[i], res_ref)
        np.testing.assert_allclose(
            x[i], x_ref, rtol=1e3 * _eps(dtype), atol=float(np.finfo(dtype).smallest_subnormal) * 64
        )


# --- extreme magnitudes (tests/test_lstsq.py) ---------------------------------------------


@pytest.mark.parametrize(
    "dtype, scale",
    [
        (np.float64, 1e200),
        (np.float64, 1e70),
        (np.float64, 1e-200),
        (np.float32, 1e30),
        (np.complex64, 1e-30),
    ],
)
@pytest.mark.parametrize("m, n", [(6, 3), (3, 5)])
def test_extreme_magnitudes(rng, dtype, scale, m, n):
    a = (well_conditioned(rng, (3,), m, n, dtype) * scale).astype(dtype)
    b = random_matrix(rng, (3, m, 1), dtype)
    x, residuals, rank, s, info = _gels(a, b)
    np.testing.assert_array_equal(rank, min(m, n))
    for i in range(3):
        x_ref, res_ref, _, s_ref = np.linalg.lstsq(a[i], b[i])
        assert_close(s[i] / scale, s_ref / scale, dtype, n=max(m, n))
        assert_close(x[i] * scale, x_ref * scale, dtype, factor=4, n=max(m, n))


def test_a_huge_b_gives_x_where_x_is_representable(rng):
    """Issue 44: ``b`` near 1e305 and a matrix of 1e10 whose smallest singular value is
    1e5 (kept by the default ``rcond``): ``x`` is near 1e300.  With ``b`` unscaled its
    products with the inverse singular values of the scaled triangle overflowed."""
    a = np.stack([with_singular_values(rng, 6, 3, [1e10, 1e7, 1e5]) for _ in range(3)])
    b = random_matrix(rng, (3, 6, 1), np.float64) * 1e305
    x, residuals, rank, s, info = _gels(a, b)
    np.testing.assert_array_equal(rank, 3)
    for i in range(3):
        x_ref, _, _, s_ref = np.linalg.lstsq(a[i], b[i])
        assert np.isfinite(x[i]).all() and np.isfinite(x_ref).all()
        # x is as ill-conditioned as the smallest singular value: 1e5
        np.testing.assert_allclose(x[i], x_ref, rtol=0, atol=1e3 * 1e5 * _eps(np.float64) * 1e300)
        assert_close(s[i] / 1e10, s_ref / 1e10, np.float64, n=6)


def test_residuals_of_a_huge_b_are_finite_where_numpys_are(rng):
    """Residuals near 1e306 (``|b|`` near 1e153, partly outside the range of ``A``,
    one matrix rank deficient): the squares are taken of the scaled ``Q^H b'``."""
    a = well_conditioned(rng, (2,), 6, 3, np.float64)
    a[1, :, 2] = a[1, :, 0]  # rank 2: a cut singular value's share of b is a residual too
    b = random_matrix(rng, (2, 6, 2), np.float64) * 1e152
    x, residuals, rank, s, info = _gels(a, b)
    np.testing.assert_array_equal(rank, [3, 2])
    for i in range(2):
        x_ref = np.linalg.lstsq(a[i], b[i])[0]
        expected = (np.abs((b[i] - a[i] @ x_ref) / 1e152) ** 2).sum(axis=0)
        assert np.isfinite(residuals[i]).all()
        assert_close(residuals[i] / 1e304, expected, np.float64, factor=10, n=6)


# --- the pseudo-inverse step runs on the SVD kernel ---------------------------------------


@pytest.mark.parametrize(
    "m, n, dtype, layouts", [(5, 3, np.float32, "CF"), (3, 5, np.complex64, "FC")]
)
def test_the_pseudo_inverse_is_the_svd_kernels(rng, m, n, dtype, layouts):
    """The triangle's SVD is the ``gesvd`` kernel of ``p x p`` in double precision (the
    pattern ``svd`` of such matrices makes), launched once per call."""
    a = random_matrix(rng, (3, m, n), dtype)
    b = random_matrix(rng, (3, m, 1), dtype)
    plan = _plan("gels", {"m": m, "n": n, "k": 1}, dtype, {}, layouts)
    assert type(plan).__name__ == "GelsPlan" and plan.fallback is None
    svd = plan.svd
    assert type(svd).__name__ == "KernelPlan"
    p = min(m, n)
    assert svd.pattern.routine == "gesvd" and dict(svd.pattern.dims) == {"m": p, "n": p, "p": p}
    assert svd.pattern.np_dtype == np.result_type(dtype, np.float64)
    assert dict(svd.pattern.options) == {"vectors": True, "full": False}
    result = _run(plan, *(_layout(x, layout) for x, layout in zip((a, b), layouts)), rcond=None)
    assert not result[-1].any()
    x_ref = [np.linalg.lstsq(a[i], b[i])[0] for i in range(3)]
    assert_close(result[0], np.stack(x_ref), dtype, factor=10, n=max(m, n))
    blocks = {block for _, block, _ in svd.descriptors["factorize"].calls}
    assert blocks == {0, 1}  # three triangles, two per block


def test_an_svd_kernel_too_large_for_the_device_is_not_built(rng):
    """Where the triangle's SVD kernel cannot fit the device's shared memory (by a bound
    from its pattern), the step is ``xp.linalg.svd`` on the device's arrays; the gels
    kernel still runs."""
    m, n, dtype = 5, 4, np.complex64
    a = random_matrix(rng, (3, m, n), dtype)
    a[1, :, 3] = a[1, :, 0]  # rank 3
    b = random_matrix(rng, (3, m, 1), dtype)
    plan = _plan("gels", {"m": m, "n": n, "k": 1}, dtype, {}, "CC", shared_limit=600)
    assert type(plan.factor).__name__ == "KernelPlan" and plan.fallback is None
    assert plan.factor.kernel.shared_bytes <= 600
    assert type(plan.svd).__name__ == "FallbackPlan" and "shared memory" in plan.svd.fallback
    assert "descriptors_s" not in plan.svd.timings  # nothing was built for it
    x, residuals, rank, s, info = _run(plan, a, b, rcond=None)
    np.testing.assert_array_equal(rank, [4, 3, 4])
    for i in range(3):
        x_ref, _, _, s_ref = np.linalg.lstsq(a[i], b[i])
        assert_close(x[i], x_ref, dtype, factor=10, n=m)
        assert_close(s[i], s_ref, dtype, n=m)


def test_public_api_at_the_ends_of_the_range(rng, simulated_gpu):  # noqa: F811 (the fixture)
    """Through ``blocksolve.lstsq``, ``b`` near 1e300: ``x`` near 1e300 for ``A`` near 1;
    for ``A`` near 1e-300 it overflows, and so do the residuals, as NumPy's do."""
    import blocksolve

    a = well_conditioned(rng, (2,), 6, 3, np.float64) * np.array([[[1.0]], [[1e-300]]])
    b = random_matrix(rng, (2, 6), np.float64) * 1e300
    x, residuals, rank, s = blocksolve.lstsq(a, b[..., None])
    np.testing.assert_array_equal(rank, 3)
    for i in range(2):
        x_ref, res_ref, _, s_ref = np.linalg.lstsq(a[i], b[i])
        _assert_finite_like(x[i, :, 0], x_ref)
        _assert_finite_like(residuals[i], res_ref)
        assert_close(s[i], s_ref, np.float64, n=6)
    assert np.isfinite(x[0]).all() and not np.isfinite(x[1]).any()
    x_ref = np.linalg.lstsq(a[0], b[0])[0]
    assert_close(x[0, :, 0] / 1e300, x_ref / 1e300, np.float64, factor=10, n=6)
