"""lstsq against numpy.linalg.lstsq, looped over the batch.

Shapes are chosen to keep compilations few (each costs seconds on a cold
cache): up to 8x8 every shape and dtype gets its own straight-line kernel,
so only (6, 3) runs for every dtype, (3, 5), (1, 1) and (4, 4) for two each;
(40, 33) and (33, 40) share the run-time-size kernel of each dtype.
"""

import numpy as np
import pytest

import blocksolve
from _helpers import RECT_GRID as GRID
from _helpers import assert_close, layouts, random_matrix, to_numpy, well_conditioned

# Both CPU kernel tiers; the specialised one's smallest shapes are straight-line code
# generated per dtype (see conftest).
pytestmark = [pytest.mark.kernel_tiers, pytest.mark.straight_line]


def with_singular_values(rng, m, n, values, dtype=np.float64):
    """One ``m x n`` matrix with the given singular values."""
    u, _ = np.linalg.qr(random_matrix(rng, (m, m), dtype))
    v, _ = np.linalg.qr(random_matrix(rng, (n, n), dtype))
    s = np.zeros((m, n))
    s[np.arange(len(values)), np.arange(len(values))] = values
    return (u @ s @ np.conj(v.T)).astype(dtype)


def assert_matches_numpy(result, a, b, dtype, rcond=None):
    x, residuals, rank, s = (to_numpy(r) for r in result)
    size = max(a.shape[-2:])
    for idx in np.ndindex(*a.shape[:-2]):
        x_ref, res_ref, rank_ref, s_ref = np.linalg.lstsq(a[idx], b[idx], rcond=rcond)
        assert rank[idx] == rank_ref
        assert_close(s[idx], s_ref, dtype, n=size)
        assert_close(x[idx], x_ref, dtype, factor=4, n=size)
        if res_ref.size:
            assert_close(residuals[idx], res_ref, dtype, factor=4, n=size)


@pytest.mark.parametrize("dtype, m, n", GRID)
def test_lstsq_matches_numpy(xp, rng, dtype, m, n):
    a = well_conditioned(rng, (4,), m, n, dtype)
    b = random_matrix(rng, (4, m, 2), dtype)
    result = blocksolve.lstsq(xp.asarray(a), xp.asarray(b))
    x, residuals, rank, s = result
    real = np.finfo(dtype).dtype
    assert isinstance(result, blocksolve.LstsqResult)
    assert x.shape == (4, n, 2) and x.dtype == dtype
    assert residuals.shape == ((4, 2) if m > n else (4, 0)) and residuals.dtype == real
    assert rank.shape == (4,) and rank.dtype == np.int32
    assert s.shape == (4, min(m, n)) and s.dtype == real
    assert_matches_numpy(result, a, b, dtype)
    # Residual checks: the normal equations, and residuals == |b - a x|^2.
    x = to_numpy(x)
    r = b - a @ x
    scale = float(np.abs(a).max() * np.abs(b).max())
    assert_close(
        np.conj(np.swapaxes(a, -1, -2)) @ r / scale,
        np.zeros((4, n, 2)),
        dtype,
        factor=8,
        n=max(m, n),
    )
    if m > n:
        assert_close(
            to_numpy(residuals), (np.abs(r) ** 2).sum(axis=-2), dtype, factor=8, n=max(m, n)
        )


@pytest.mark.parametrize("batch", [(), (5,), (2, 3), (0,), (17,)])
@pytest.mark.parametrize("m, n", [(6, 3), (3, 5), (40, 33)])
def test_lstsq_batch_shapes_and_loop(xp, rng, batch, m, n, single_matrices_on_kernels):
    a = well_conditioned(rng, batch, m, n, np.float64)
    b = random_matrix(rng, batch + (m, 3), np.float64)
    got = [to_numpy(r) for r in blocksolve.lstsq(xp.asarray(a), xp.asarray(b))]
    assert [g.shape for g in got] == [
        batch + (n, 3),
        batch + ((3,) if m > n else (0,)),
        batch,
        batch + (min(m, n),),
    ]
    for idx in np.ndindex(*batch):
        one = blocksolve.lstsq(xp.asarray(a[idx]), xp.asarray(b[idx]))
        for g, o in zip(got, one):
            np.testing.assert_array_equal(g[idx], to_numpy(o))
    if batch:
        assert_matches_numpy(got, a, b, np.float64)


@pytest.mark.parametrize("m, n", [(6, 3), (3, 5), (1, 1)])
def test_lstsq_vector_b_like_numpy(rng, m, n):
    a = well_conditioned(rng, (), m, n, np.float64)
    b = rng.standard_normal(m)
    x, residuals, rank, s = blocksolve.lstsq(a, b)
    x_ref, res_ref, rank_ref, s_ref = np.linalg.lstsq(a, b)
    assert x.shape == (n,) and residuals.shape == res_ref.shape
    assert isinstance(rank, np.int32) and rank == rank_ref
    np.testing.assert_allclose(x, x_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(residuals, res_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s, s_ref, rtol=1e-13)


def test_lstsq_broadcasts_batches(rng):
    a = well_conditioned(rng, (2, 1), 6, 3, np.float64)
    b = rng.standard_normal((4, 6, 2))
    x, residuals, rank, s = blocksolve.lstsq(a, b)
    assert x.shape == (2, 4, 3, 2) and residuals.shape == (2, 4, 2) and rank.shape == (2, 4)
    assert s.shape == (2, 4, 3)
    for i in range(2):
        for j in range(4):
            np.testing.assert_allclose(x[i, j], np.linalg.lstsq(a[i, 0], b[j])[0], atol=1e-13)


@pytest.mark.parametrize("layout", ["C", "F", "strided", "negative", "readonly"])
@pytest.mark.parametrize("m, n", [(6, 3), (33, 40)])
def test_lstsq_layouts_and_inputs_untouched(rng, layout, m, n):
    a = layouts(well_conditioned(rng, (3,), m, n, np.complex128))[layout]
    b = layouts(random_matrix(rng, (3, m, 2), np.complex128))[layout]
    a_before, b_before = a.copy(), b.copy()
    result = blocksolve.lstsq(a, b)
    np.testing.assert_array_equal(a, a_before)
    np.testing.assert_array_equal(b, b_before)
    assert_matches_numpy(result, a_before, b_before, np.complex128)


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [
        ((0, 3), (0, 2)),
        ((3, 0), (3, 2)),
        ((0, 0), (0, 1)),
        ((3, 2), (3, 0)),
        ((40, 33), (40, 0)),
        ((1, 1), (1,)),
        ((2, 0, 3), (2, 0, 1)),
    ],
)
def test_lstsq_empty_and_tiny_like_numpy(rng, a_shape, b_shape):
    a = rng.standard_normal(a_shape) + 2 * np.eye(*a_shape[-2:])
    b = rng.standard_normal(b_shape)
    got = blocksolve.lstsq(a, b)
    if len(a_shape) == 2:
        ref = np.linalg.lstsq(a, b)
        for g, r in zip(got, ref):
            assert np.shape(g) == np.shape(r)
            np.testing.assert_allclose(g, r, atol=1e-12)
    else:
        assert [np.shape(g) for g in got] == [(2, 3, 1), (2, 0), (2,), (2, 0)]


@pytest.mark.parametrize("m, n", [(6, 3), (3, 5), (40, 33), (33, 40)])
def test_lstsq_rank_deficient_like_numpy(rng, m, n):
    # Every rank from 0 to full: NumPy's minimum-norm solution, no failure.
    p = min(m, n)
    a = well_conditioned(rng, (5,), m, n, np.float64)
    a[1] = with_singular_values(rng, m, n, [1.0] * (p - 2) + [0.0, 0.0])
    a[2] = with_singular_values(rng, m, n, [3.0, 1e-20])  # rank 1: 1e-20 is below the cut-off
    a[3] = 0
    a[4, :, -1] = a[4, :, 0]  # two equal columns
    b = rng.standard_normal((5, m, 2))
    (x, residuals, rank, s), info = blocksolve.lstsq(a, b, return_info=True)
    assert not info.any()
    np.testing.assert_array_equal(rank, [p, p - 2, 1, 0, p - (m > n)])
    np.testing.assert_array_equal(x[3], 0)
    for i in range(5):
        x_ref, _, rank_ref, s_ref = np.linalg.lstsq(a[i], b[i])
        assert rank[i] == rank_ref
        assert_close(x[i], x_ref, np.float64, factor=4, n=max(m, n))
        assert_close(s[i], s_ref, np.float64, n=max(m, n))
        if m > n:  # NumPy returns none for rank-deficient matrices; blocksolve |b - a x|^2
            assert_close(
                residuals[i],
                (np.abs(b[i] - a[i] @ x[i]) ** 2).sum(axis=0),
                np.float64,
                factor=8,
                n=max(m, n),
            )
    # The minimum norm: x is orthogonal to the null space of a.
    null = np.linalg.svd(a[1])[2][p - 2 :]
    assert_close(null @ x[1], np.zeros((null.shape[0], 2)), np.float64, factor=4, n=max(m, n))


@pytest.mark.parametrize("m, n", [(6, 3), (3, 5), (40, 33)])
def test_lstsq_nonfinite_a_is_the_failure(rng, m, n):
    a = well_conditioned(rng, (4,), m, n, np.float64)
    a[1, 0, 0] = np.nan
    a[2, -1, -1] = -np.inf
    b = rng.standard_normal((4, m, 2))
    b[3, 0, 0] = np.nan  # non-finite b: a non-finite x, as in NumPy, no failure
    good = [0]
    with pytest.raises(
        blocksolve.LinAlgError,
        match=r"lstsq: 2 matrices of the batch failed, at batch indices "
        r"\(1,\) \(a contains infs or NaNs\), \(2,\) \(a contains",
    ) as e:
        blocksolve.lstsq(a, b)
    assert e.value.indices == [(1,), (2,)] and isinstance(e.value, np.linalg.LinAlgError)
    with pytest.raises(np.linalg.LinAlgError, match=r"^lstsq: a contains infs or NaNs$"):
        blocksolve.lstsq(a[1], b[1])

    result, info = blocksolve.lstsq(a, b, return_info=True)
    np.testing.assert_array_equal(info, [0, 1, 1, 0])
    assert info.dtype == np.int32
    assert np.isnan(result.x[3, :, 0]).all() and np.isfinite(result.x[3, :, 1]).all()
    assert_matches_numpy([r[good] for r in result], a[good], b[good], np.float64)

    x, residuals, rank, s = blocksolve.lstsq(a, b, errors="nan")
    assert np.isnan(x[1:3]).all() and np.isnan(residuals[1:3]).all()
    with pytest.warns(blocksolve.LinAlgWarning, match=r"batch indices \(1,\)"):
        blocksolve.lstsq(a, b, errors="warn")
    x, residuals, rank, s = blocksolve.lstsq(a, b, errors="ignore")
    assert np.isfinite(x[0]).all()


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_lstsq_zero_matrix_like_numpy(dtype):
    x, residuals, rank, s = blocksolve.lstsq(np.zeros((3, 4, 4), dtype), np.ones((3, 4, 1), dtype))
    np.testing.assert_array_equal(x, 0)
    np.testing.assert_array_equal(rank, 0)
    np.testing.assert_array_equal(s, 0)


def test_lstsq_nan_rcond_cuts_nothing_like_numpy(rng):
    """LAPACK's comparisons with a NaN cut-off keep every singular value: the full-rank
    answer, not rank 0 and x = 0."""
    a, b = rng.standard_normal((3, 5, 3)), rng.standard_normal((3, 5, 2))
    result = blocksolve.lstsq(a, b, rcond=np.nan)
    for i in range(3):
        x_ref, res_ref, rank_ref, s_ref = np.linalg.lstsq(a[i], b[i], rcond=np.nan)
        assert result.rank[i] == rank_ref == 3
        assert_close(result.x[i], x_ref, np.float64, n=5)
        assert_close(result.residuals[i], res_ref, np.float64, n=5)


def _two_equal_columns(batch):
    """``(a, b)``: ``5 x 3`` matrices whose last column is their first, so that their
    smallest singular value is rounding noise (1e-17 to 1e-16 of the largest): NaN keeps
    it (rank 3), ``xGELSD``'s eps for ``rcond <= 0`` cuts it (rank 2)."""
    a = np.random.default_rng(8).standard_normal((*batch, 5, 3))
    a[..., 2] = a[..., 0]
    return a, np.ones((*batch, 5, 1))


@pytest.mark.parametrize("rcond", [None, np.nan, -1, 0, 1e-20, 0.5, 1, 2, np.inf])
def test_lstsq_on_lapack_is_numpys_for_every_rcond(rcond):
    """A single matrix, and a stack on LAPACK, run NumPy's own lstsq with ``rcond`` as
    the caller gave it (NaN must not reach it as 0, its eps): its results to the bit."""
    a, b = _two_equal_columns((2,))
    alone = blocksolve.lstsq(a[0], b[0], rcond=rcond)
    previous = blocksolve.set_specialization("never")
    try:
        stacked = blocksolve.lstsq(a, b, rcond=rcond)
    finally:
        blocksolve.set_specialization(previous)
    for i, result in [(0, alone), *((i, [r[i] for r in stacked]) for i in range(2))]:
        x_ref, res_ref, rank_ref, s_ref = np.linalg.lstsq(a[i], b[i], rcond=rcond)
        np.testing.assert_array_equal(result[0], x_ref)
        assert result[2] == rank_ref, (i, rcond)
        np.testing.assert_array_equal(result[3], s_ref)
        if res_ref.size:  # NumPy's are empty for a rank-deficient matrix
            np.testing.assert_array_equal(result[1], res_ref)


def test_lstsq_nan_rcond_keeps_a_rounding_noise_singular_value():
    """The kernels keep it too: a stack's rank is that of its matrices alone."""
    a, b = _two_equal_columns((4,))
    rank = blocksolve.lstsq(a, b, rcond=np.nan).rank
    np.testing.assert_array_equal(rank, 3)
    for i in range(4):
        assert blocksolve.lstsq(a[i], b[i], rcond=np.nan).rank == 3
        assert np.linalg.lstsq(a[i], b[i], rcond=np.nan)[2] == 3


@pytest.mark.parametrize("rcond", [None, -1, 0, 1e-8, 0.5, 1, 2])
def test_lstsq_rcond_like_numpy(rng, rcond):
    # Singular values 1, 1e-6, 1e-12 and 1, 0.9, 0.8, 1e-16: the rank depends on rcond.
    # rcond <= 0 and rcond >= 1 mean LAPACK's eps / 2 (NumPy passes them to xGELSD).
    a = np.stack(
        [
            with_singular_values(rng, 6, 4, [1.0, 1e-6, 1e-12]),
            with_singular_values(rng, 6, 4, [1.0, 0.9, 0.8, 1.6e-16]),
        ]
    )
    b = rng.standard_normal((2, 6, 1))
    result, info = blocksolve.lstsq(a, b, rcond=rcond, return_info=True)
    assert not info.any()
    for i in range(2):
        x_ref, _, rank_ref, s_ref = np.linalg.lstsq(a[i], b[i], rcond=rcond)
        assert result.rank[i] == rank_ref, (i, rcond)
        # x is as ill-conditioned as the smallest singular value kept
        condition = s_ref[0] / s_ref[rank_ref - 1]
        np.testing.assert_allclose(
            result.x[i],
            x_ref,
            rtol=0,
            atol=1e3 * np.finfo(float).eps * condition * abs(x_ref).max(),
        )


@pytest.mark.parametrize(
    "dtype, scale",
    [
        (np.float64, 1e200),
        (np.float64, 1e70),  # not scaled: the rotations' products must not overflow
        (np.float64, 1e-200),
        (np.float32, 1e30),
        (np.complex64, 1e-30),
    ],
)
@pytest.mark.parametrize("m, n", [(6, 3), (33, 40)])
def test_lstsq_extreme_magnitudes(rng, dtype, scale, m, n):
    a = (well_conditioned(rng, (3,), m, n, dtype) * scale).astype(dtype)
    b = random_matrix(rng, (3, m, 1), dtype)
    x, residuals, rank, s = blocksolve.lstsq(a, b)
    np.testing.assert_array_equal(rank, min(m, n))
    for i in range(3):
        x_ref, res_ref, _, s_ref = np.linalg.lstsq(a[i], b[i])
        assert_close(s[i] / scale, s_ref / scale, dtype, n=max(m, n))
        assert_close(x[i] * scale, x_ref * scale, dtype, factor=4, n=max(m, n))


def test_lstsq_integer_input_promotes():
    a = np.array([[1, 0, 0], [1, 1, 1], [1, 2, 4], [1, 3, 9], [1, 4, 16], [1, 5, 25]])
    b = np.array([1, 2, 2, 4, 3, 5])
    x, residuals, rank, s = blocksolve.lstsq(a, b)
    x_ref, res_ref, _, s_ref = np.linalg.lstsq(a.astype(float), b.astype(float))
    assert x.dtype == np.float64
    np.testing.assert_allclose(x, x_ref, atol=1e-14)
    np.testing.assert_allclose(residuals, res_ref, atol=1e-14)


def test_lstsq_bad_arguments():
    with pytest.raises(
        np.linalg.LinAlgError,
        match=r"lstsq: b.shape\[-2\] = 4 does not match "
        r"a.shape\[-2\] = 3 \(Incompatible dimensions\)",
    ):
        blocksolve.lstsq(np.eye(3), np.ones((4, 1)))
    with pytest.raises(ValueError, match=r"lstsq: a must be at least 2-D; got shape \(3,\)"):
        blocksolve.lstsq(np.ones(3), np.ones(3))
    with pytest.raises(TypeError, match="lstsq: array type float16 is unsupported"):
        blocksolve.lstsq(np.eye(3, dtype=np.float16), np.ones(3))
    with pytest.raises(TypeError, match="lstsq: rcond must be a float or None"):
        blocksolve.lstsq(np.eye(3), np.ones(3), rcond="small")
