"""qr (all four modes) against numpy.linalg.qr.

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

MODES = ("reduced", "complete", "r", "raw")


def adjoint(x):
    return np.conj(np.swapaxes(x, -1, -2))


def as_tuple(result, mode):
    return (result,) if mode == "r" else tuple(result)


@pytest.mark.parametrize("dtype, m, n", GRID)
def test_qr_matches_numpy_in_every_mode(xp, rng, dtype, m, n):
    a = well_conditioned(rng, (3,), m, n, dtype)
    size = max(m, n)
    for mode in MODES:
        got = as_tuple(blocksolve.qr(xp.asarray(a), mode=mode), mode)
        ref = as_tuple(np.linalg.qr(a, mode=mode), mode)
        assert len(got) == len(ref)
        for g, r in zip(got, ref):
            assert type(g) is type(xp.asarray(a)) and g.dtype == r.dtype, (mode, g.dtype, r.dtype)
            assert_close(g, r, dtype, factor=2, n=size)
        if mode in ("reduced", "complete"):
            Q, R = (to_numpy(x) for x in got)
            eye = np.eye(Q.shape[-1], dtype=dtype)
            assert_close(adjoint(Q) @ Q, np.broadcast_to(eye, (3,) + eye.shape), dtype, n=size)
            assert_close(Q @ R, a, dtype, n=size)
            np.testing.assert_array_equal(np.tril(R, -1), 0)


@pytest.mark.parametrize("batch", [(), (5,), (2, 3), (0,), (3, 0, 2), (17,)])
@pytest.mark.parametrize("m, n", [(4, 4), (40, 33)])
def test_qr_batch_shapes_and_loop(xp, rng, batch, m, n, single_matrices_on_kernels):
    # 17 matrices: two full blocks and a partial one for the 4x4 kernel.
    a = well_conditioned(rng, batch, m, n, np.float64)
    for mode in MODES:
        got = [to_numpy(x) for x in as_tuple(blocksolve.qr(xp.asarray(a), mode=mode), mode)]
        ref = as_tuple(np.linalg.qr(a, mode=mode), mode)
        assert [g.shape for g in got] == [r.shape for r in ref]
        for idx in np.ndindex(*batch):
            one = as_tuple(blocksolve.qr(xp.asarray(a[idx]), mode=mode), mode)
            for g, o in zip(got, one):
                np.testing.assert_array_equal(g[idx], to_numpy(o))


@pytest.mark.parametrize("layout", ["C", "F", "strided", "negative", "readonly"])
@pytest.mark.parametrize("m, n", [(6, 3), (33, 40)])
def test_qr_layouts_and_input_untouched(rng, layout, m, n):
    a = layouts(well_conditioned(rng, (4,), m, n, np.complex128))[layout]
    before = a.copy()
    Q, R = blocksolve.qr(a)
    np.testing.assert_array_equal(a, before)
    Q_ref, R_ref = np.linalg.qr(before)
    assert_close(Q, Q_ref, np.complex128, n=max(m, n))
    assert_close(R, R_ref, np.complex128, n=max(m, n))


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0), (2, 0, 3), (2, 3, 0), (1, 1)])
def test_qr_empty_and_tiny_like_numpy(shape):
    a = np.full(shape, 2.0)
    for mode in MODES:
        got = as_tuple(blocksolve.qr(a, mode=mode), mode)
        ref = as_tuple(np.linalg.qr(a, mode=mode), mode)
        for g, r in zip(got, ref):
            assert g.shape == r.shape and g.dtype == r.dtype, (mode, g.shape, r.shape)
            np.testing.assert_allclose(g, r)


def test_qr_result_types_and_integer_input():
    a = np.array([[2, 1, 0], [1, 3, 1], [0, 1, 4], [1, 0, 1], [5, 0, 0], [0, 0, 1]])
    result = blocksolve.qr(a)
    assert isinstance(result, blocksolve.QRResult) and result.Q.dtype == np.float64
    Q, R = result
    Q_ref, R_ref = np.linalg.qr(a)
    np.testing.assert_allclose(Q, Q_ref, atol=1e-14)
    np.testing.assert_allclose(R, R_ref, atol=1e-13)
    assert isinstance(blocksolve.qr(a, mode="raw"), tuple)
    assert isinstance(blocksolve.qr(a, mode="r"), np.ndarray)


@pytest.mark.parametrize(
    "dtype, scale",
    [
        (np.float64, 1e200),
        (np.float64, 1e-200),
        (np.complex128, 1e-300),
        (np.float32, 1e30),
        (np.complex64, 1e-30),
    ],
)
@pytest.mark.parametrize("m, n", [(6, 3), (40, 33)])
def test_qr_extreme_magnitudes(rng, dtype, scale, m, n):
    # Sums of squares of these entries over- or underflow: the kernels scale first.
    a = (well_conditioned(rng, (3,), m, n, dtype) * scale).astype(dtype)
    size = max(m, n)
    Q, R = blocksolve.qr(a, mode="complete")
    Q_ref, R_ref = np.linalg.qr(a, mode="complete")
    assert_close(Q, Q_ref, dtype, factor=2, n=size)
    assert_close(R / scale, R_ref / scale, dtype, factor=2, n=size)
    h, tau = blocksolve.qr(a, mode="raw")
    h_ref, tau_ref = np.linalg.qr(a, mode="raw")
    r_part = np.tril(np.ones((n, m), bool))  # h is transposed: R where row >= column
    assert_close(
        np.where(r_part, h / scale, h),
        np.where(r_part, h_ref / scale, h_ref),
        dtype,
        factor=2,
        n=size,
    )
    assert_close(tau, tau_ref, dtype, factor=2, n=size)


def test_qr_nan_stays_in_its_matrix(rng):
    a = well_conditioned(rng, (3,), 4, 4, np.float64)
    a[1, 2, 0] = np.nan
    Q, R = blocksolve.qr(a)
    assert np.isnan(R[1]).any()
    Q_ref, R_ref = np.linalg.qr(a[[0, 2]])
    assert_close(Q[[0, 2]], Q_ref, np.float64, n=4)
    assert_close(R[[0, 2]], R_ref, np.float64, n=4)


def test_qr_rank_deficient_is_not_a_failure(rng):
    a = np.zeros((2, 6, 3))
    a[0, :, 0] = 1.0
    (Q, R), info = blocksolve.qr(a, return_info=True)
    np.testing.assert_array_equal(info, 0)
    assert info.dtype == np.int32 and info.shape == (2,)
    assert_close(Q @ R, a, np.float64, n=6)
    Q_ref, R_ref = np.linalg.qr(a)
    assert_close(R, R_ref, np.float64, n=6)


def test_qr_bad_arguments():
    with pytest.raises(
        ValueError, match="qr: mode must be one of 'reduced', 'complete', 'r', 'raw'; got 'bogus'"
    ):
        blocksolve.qr(np.eye(3), mode="bogus")
    with pytest.raises(ValueError, match=r"qr: a must be at least 2-D; got shape \(3,\)"):
        blocksolve.qr(np.ones(3))
    with pytest.raises(TypeError, match="qr: array type float16 is unsupported"):
        blocksolve.qr(np.eye(3, dtype=np.float16))


try:
    from hypothesis import given
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    given = None

if given is not None:

    @given(data=st.data())
    def test_qr_property_reconstructs(data):
        # Only (dtype, shape) pairs of GRID: every draw reuses a compiled kernel.
        dtype, m, n = data.draw(st.sampled_from(GRID), label="dtype, shape")
        batch = data.draw(st.integers(0, 20), label="batch")
        exponent = data.draw(st.integers(-30, 30), label="exponent")
        rank = data.draw(st.integers(0, min(m, n)), label="rank")
        seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
        rng = np.random.default_rng(seed)
        # Random matrices of a chosen rank (0 included), scaled by 10**exponent.
        a = random_matrix(rng, (batch, m, rank), dtype) @ random_matrix(
            rng, (batch, rank, n), dtype
        )
        a = (a * 10.0**exponent).astype(dtype)
        scale = max(float(np.abs(a).max(initial=0)), np.finfo(dtype).tiny)
        Q, R = blocksolve.qr(a)
        assert_close(Q @ R / scale, a / scale, dtype, factor=4, n=max(m, n))
        eye = np.eye(min(m, n), dtype=dtype)
        assert_close(
            adjoint(Q) @ Q, np.broadcast_to(eye, (batch,) + eye.shape), dtype, factor=4, n=max(m, n)
        )
        np.testing.assert_array_equal(np.tril(R, -1), 0)


@pytest.mark.parametrize("mode", MODES)
def test_large_matrices_take_lapack(rng, mode):
    from blocksolve.cpu._backend import ROUTINES

    size = ROUTINES["geqrf"].lapack_from
    a = well_conditioned(rng, (2,), size + 6, size, np.float64)
    got, want = blocksolve.qr(a, mode=mode), np.linalg.qr(a, mode=mode)
    for g, w in zip(
        got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)
    ):
        assert_close(g, w, np.float64, n=size)
