"""The real CUDA kernel templates under numba's CUDA simulator.

The routines' kernels (the family modules of ``blocksolve.cuda`` on the
skeleton of ``blocksolve.cuda.kernels._skeleton``) run unchanged; only the cuSolverDx
descriptors are the numpy stand-ins of ``tests/_cuda_simulated.py``
(same attributes, layouts and device methods; they also check that every
thread reaches every device call).  This covers loading and storing in
both arrangements, several matrices per block and a partial last block,
the identity padding, pivots (1-based inside, 0-based out), the info codes
blocksolve derives, the host-side plans (empty dimensions, lstsq's rank,
the CPU fallback) and the whole public API path on the simulated backend.

Run with ``NUMBA_ENABLE_CUDASIM=1 python -m pytest -m cudasim``; skipped
otherwise.  Each launch is a few blocks of 32 threads (the simulator costs
about 0.16 ms per thread and 10-70 ms per syncthreads).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.linalg

if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    pytest.importorskip(
        "numba_cuda", reason="the simulator tests need numba-cuda: pip install -e '.[sim]'"
    )
from numba import cuda  # module level: the simulator swaps this name while a kernel runs

import blocksolve
from _helpers import assert_close, gpu_available, random_general, random_matrix, random_spd

pytestmark = [
    pytest.mark.cudasim,
    pytest.mark.skipif(
        os.environ.get("NUMBA_ENABLE_CUDASIM") != "1",
        reason="needs NUMBA_ENABLE_CUDASIM=1 in the environment of pytest (numba's CUDA simulator)",
    ),
]


def _simulated():
    import numba

    assert numba.config.ENABLE_CUDASIM, "numba was imported before NUMBA_ENABLE_CUDASIM=1"
    import _cuda_simulated as api

    return api


def _plan(
    routine, dims, dtype, options, layouts, batches_per_block=2, block_dim=None, shared_limit=None
):
    from blocksolve._pattern import CallPattern
    from blocksolve.cuda import _plan as plans

    pattern = CallPattern.make(routine, dims, dtype, options, list(layouts), "sm_90")
    return plans.build(
        pattern,
        _simulated(),
        batches_per_block=batches_per_block,
        block_dim=block_dim,
        shared_limit=shared_limit,
    )


def _layout(a, layout):
    """The same matrices with C-ordered or column-major (F) cores."""
    if layout == "C":
        return np.ascontiguousarray(a)
    return np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)


def _run(plan, *operands, **runtime):
    before = [x.copy() for x in operands]
    results = plan.run(operands, np, runtime)
    for x, x0 in zip(operands, before):
        np.testing.assert_array_equal(x, x0)  # inputs untouched
    return results


def _pads_of_last_block(descriptor, batch):
    """Matrices the device saw in the spare slots of the last block."""
    bpb = descriptor.batches_per_block
    spare = -batch % bpb
    method, block, buffers = descriptor.calls[-1]
    assert block == (batch - 1) // bpb
    return buffers["a"][bpb - spare :]


def test_simulator_is_not_a_gpu():
    assert not gpu_available()


# --- Cholesky -------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, layout, lower, clean",
    [
        (np.float64, "C", True, True),
        (np.complex64, "F", False, False),
        (np.float32, "C", False, True),
        (np.complex128, "F", True, False),
    ],
)
def test_potrf(rng, dtype, layout, lower, clean):
    n, batch = 3, 5
    a = random_spd(rng, (batch,), n, dtype)
    a[1, 2, 2] = -4  # fails at the last leading minor
    a[3] = -a[3]  # fails at the first
    plan = _plan("potrf", {"n": n}, dtype, {"lower": lower, "clean": clean}, layout)
    c, info = _run(plan, _layout(a, layout))
    np.testing.assert_array_equal(info, [0, 3, 0, 1, 0])
    good = [0, 2, 4]
    L = np.linalg.cholesky(a[good])
    if lower:
        factor, other, input_other = np.tril(c[good]), np.triu(c[good], 1), np.triu(a[good], 1)
    else:
        factor, other, input_other = np.triu(c[good]), np.tril(c[good], -1), np.tril(a[good], -1)
        L = np.conj(np.swapaxes(L, -1, -2))
    assert_close(factor, L, dtype, n=n)
    np.testing.assert_array_equal(other, 0 if clean else input_other)
    d = plan.descriptors["solver"]
    assert d.batches_per_block == 2 and len(d.calls) == 3
    np.testing.assert_array_equal(_pads_of_last_block(d, batch), np.eye(n)[None])


def test_potrs_and_zero_diagonal(rng):
    n, k, batch = 4, 2, 3
    a = random_spd(rng, (batch,), n, np.complex128)
    c = np.linalg.cholesky(a)
    c[2, 1, 1] = 0
    b = random_matrix(rng, (batch, n, k), np.complex128)
    plan = _plan("potrs", {"n": n, "k": k}, np.complex128, {"lower": True}, "FC")
    x, info = _run(plan, _layout(c, "F"), b)
    np.testing.assert_array_equal(info, [0, 0, 2])
    assert_close(x[:2], np.linalg.solve(a[:2], b[:2]), np.complex128, n=n)
    np.testing.assert_array_equal(x[2], b[2])  # failed: b back, like the CPU backend


def test_potrs_upper_float32(rng):
    n, k, batch = 3, 1, 3
    a = random_spd(rng, (batch,), n, np.float32)
    u = np.swapaxes(np.linalg.cholesky(a), -1, -2)
    b = random_matrix(rng, (batch, n, k), np.float32)
    plan = _plan("potrs", {"n": n, "k": k}, np.float32, {"lower": False}, "CF", batches_per_block=3)
    x, info = _run(plan, u, _layout(b, "F"))
    assert not info.any()
    assert_close(x, np.linalg.solve(a, b), np.float32, n=n)


# --- LU ------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Diagonal number:scipy.linalg.LinAlgWarning")
@pytest.mark.parametrize(
    "m, n, dtype, layout",
    [
        (4, 4, np.float64, "C"),
        (4, 4, np.complex64, "F"),
        (5, 3, np.float64, "F"),
        (2, 4, np.complex128, "C"),
    ],
)
def test_getrf_pivots_are_zero_based(rng, m, n, dtype, layout):
    batch, p = 5, min(m, n)
    a = random_matrix(rng, (batch, m, n), dtype)
    a[2, :, 1] = 0  # exactly singular: U[1, 1] == 0
    plan = _plan("getrf", {"m": m, "n": n, "p": p}, dtype, {}, layout)
    lu, piv, info = _run(plan, _layout(a, layout))
    assert piv.dtype == np.int32 and lu.shape == a.shape and piv.shape == (batch, p)
    np.testing.assert_array_equal(info, [0, 0, 2, 0, 0])
    for i in range(batch):
        lu_ref, piv_ref = scipy.linalg.lu_factor(a[i], check_finite=False)
        np.testing.assert_array_equal(piv[i], piv_ref)
        if i != 2:
            assert_close(lu[i], lu_ref, dtype, n=max(m, n))
    d = plan.descriptors["solver"]
    np.testing.assert_array_equal(_pads_of_last_block(d, batch), np.eye(m, n)[None])


@pytest.mark.parametrize("trans", [0, 1, 2])
def test_getrs_trans(rng, trans):
    n, k, batch = 3, 2, 3
    dtype = np.complex128
    a = random_general(rng, (batch,), n, dtype)
    factors = [scipy.linalg.lu_factor(x) for x in a]
    lu = np.stack([f[0] for f in factors])
    piv = np.stack([f[1] for f in factors]).astype(np.int32)
    b = random_matrix(rng, (batch, n, k), dtype)
    plan = _plan("getrs", {"n": n, "k": k}, dtype, {"trans": trans}, "CCF")
    # cuSolverDx takes no plain transpose of complex data: A^T x = b is A^H conj(x) = conj(b)
    assert plan.fallback is None
    assert (
        plan.kernel.descriptors["solver"].transpose_mode
        == ("non_transposed", "conj_transposed", "conj_transposed")[trans]
    )
    x, info = _run(plan, lu, piv, _layout(b, "F"))
    assert not info.any()
    for i in range(batch):
        assert_close(x[i], scipy.linalg.lu_solve(factors[i], b[i], trans=trans), dtype, n=n)


def test_getrs_zero_diagonal_returns_b(rng):
    n, k, batch = 3, 1, 3
    a = random_general(rng, (batch,), n, np.float32)
    lu = np.stack([scipy.linalg.lu_factor(x)[0] for x in a])
    piv = np.stack([scipy.linalg.lu_factor(x)[1] for x in a]).astype(np.int32)
    lu[0, 2, 2] = 0
    b = random_matrix(rng, (batch, n, k), np.float32)
    plan = _plan("getrs", {"n": n, "k": k}, np.float32, {"trans": 0}, "FCC")
    x, info = _run(plan, _layout(lu, "F"), piv, b)
    np.testing.assert_array_equal(info, [3, 0, 0])
    np.testing.assert_array_equal(x[0], b[0])
    assert_close(x[1:], np.linalg.solve(a[1:], b[1:]), np.float32, n=n)


@pytest.mark.parametrize("dtype, layouts", [(np.float64, "CC"), (np.complex64, "FF")])
def test_gesv(rng, dtype, layouts):
    n, k, batch = 3, 2, 5
    a = random_general(rng, (batch,), n, dtype)
    a[4, 1] = 0  # singular
    b = random_matrix(rng, (batch, n, k), dtype)
    plan = _plan("gesv", {"n": n, "k": k}, dtype, {}, layouts)
    x, info = _run(plan, _layout(a, layouts[0]), _layout(b, layouts[1]))
    assert info[4] > 0 and not info[:4].any()
    assert_close(x[:4], np.linalg.solve(a[:4], b[:4]), dtype, n=n)
    np.testing.assert_array_equal(x[4], b[4])


# --- triangular ------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, layouts, lower, trans, unit",
    [
        (np.float64, "CC", True, 0, False),
        (np.complex128, "FC", False, 2, True),
        (np.complex64, "CF", True, 1, False),
    ],
)
def test_trsm(rng, dtype, layouts, lower, trans, unit):
    n, k, batch = 4, 3, 3
    a = random_general(rng, (batch,), n, dtype)
    a += 7 * np.triu(np.ones((n, n)), 1) if lower else 7 * np.tril(np.ones((n, n)), -1)  # junk
    b = random_matrix(rng, (batch, n, k), dtype)
    plan = _plan(
        "trsm",
        {"n": n, "k": k},
        dtype,
        {"lower": lower, "trans": trans, "unit_diagonal": unit},
        layouts,
        batches_per_block=2,
        block_dim=(16, 2, 1),
    )
    assert plan.fallback is None
    x, info = _run(plan, _layout(a, layouts[0]), _layout(b, layouts[1]))
    assert not info.any()
    for i in range(batch):
        ref = scipy.linalg.solve_triangular(
            a[i], b[i], trans=trans, lower=lower, unit_diagonal=unit
        )
        assert_close(x[i], ref, dtype, n=n)


def test_trsm_zero_diagonal_info(rng):
    n, k, batch = 3, 1, 3
    a = np.triu(random_general(rng, (batch,), n, np.float64))
    a[1, 0, 0] = 0
    b = random_matrix(rng, (batch, n, k), np.float64)
    options = {"lower": False, "trans": 0, "unit_diagonal": False}
    x, info = _run(_plan("trsm", {"n": n, "k": k}, np.float64, options, "CC"), a, b)
    np.testing.assert_array_equal(info, [0, 1, 0])
    np.testing.assert_array_equal(x[1], b[1])
    unit = {**options, "unit_diagonal": True}
    x, info = _run(_plan("trsm", {"n": n, "k": k}, np.float64, unit, "CC"), a, b)
    assert not info.any()  # the diagonal is not read


# --- QR --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mode, m, n, dtype, layout",
    [
        ("reduced", 5, 3, np.float64, "C"),
        ("complete", 3, 4, np.complex128, "F"),
        ("r", 4, 4, np.float32, "C"),
        ("raw", 4, 3, np.complex64, "F"),
    ],
)
def test_geqrf_modes_match_numpy(rng, mode, m, n, dtype, layout):
    batch = 3
    a = random_matrix(rng, (batch, m, n), dtype)
    plan = _plan("geqrf", {"m": m, "n": n}, dtype, {"mode": mode}, layout)
    *outputs, info = _run(plan, _layout(a, layout))
    assert not info.any()
    expected = np.linalg.qr(a, mode=mode)
    expected = (expected,) if mode == "r" else tuple(expected)
    assert len(outputs) == len(expected)
    for out, ref in zip(outputs, expected):
        assert out.shape == ref.shape and out.dtype == dtype
        assert_close(out, ref, dtype, n=max(m, n))


# --- least squares -------------------------------------------------------------------


def _assert_lstsq_like_numpy(a, b, result, dtype, rcond=None):
    x, residuals, rank, s, info = result
    m, n = a.shape[-2:]
    for i in range(a.shape[0]):
        x_ref, res_ref, rank_ref, s_ref = np.linalg.lstsq(a[i], b[i], rcond=rcond)
        assert rank[i] == rank_ref
        assert_close(x[i], x_ref, dtype, factor=10, n=max(m, n))
        assert_close(s[i], s_ref, dtype, n=max(m, n))
        if m > n:  # also for rank-deficient matrices, where NumPy has none
            expected = (np.abs(b[i] - a[i] @ x_ref) ** 2).sum(axis=0)
            assert_close(residuals[i], expected, dtype, factor=10, n=max(m, n))


@pytest.mark.parametrize(
    "m, n, k, dtype, layouts",
    [
        (6, 4, 2, np.float64, "CC"),
        (3, 5, 1, np.complex128, "FC"),
        (4, 4, 1, np.float32, "CF"),
        (2, 5, 2, np.complex64, "CF"),
    ],
)
def test_gels_matches_numpy(rng, m, n, k, dtype, layouts):
    batch = 3
    a = random_matrix(rng, (batch, m, n), dtype)
    b = random_matrix(rng, (batch, m, k), dtype)
    plan = _plan("gels", {"m": m, "n": n, "k": k}, dtype, {}, layouts)
    result = _run(plan, _layout(a, layouts[0]), _layout(b, layouts[1]), rcond=None)
    x, residuals, rank, s, info = result
    assert not info.any()
    real = np.finfo(dtype).dtype
    assert residuals.shape == (batch, k if m > n else 0) and residuals.dtype == real
    assert x.dtype == dtype and s.dtype == real and rank.dtype == np.int32
    _assert_lstsq_like_numpy(a, b, result, dtype)


@pytest.mark.parametrize("m, n", [(5, 3), (3, 5)])
def test_gels_every_rank_like_numpy(rng, m, n):
    k, batch = 2, 5
    a = random_matrix(rng, (batch, m, n), np.float64)
    if m > n:
        a[1, :, 2] = a[1, :, 0] + a[1, :, 1]  # rank 2
    else:
        a[1, 2] = a[1, 0] - a[1, 1]
    a[2] = 0  # rank 0: x = 0
    a[3] *= 1e-300  # full rank at the bottom of the range
    a[4] = np.round(a[4] * 64) * 2.0**-1040  # subnormal: the factor is scaled before its SVD
    b = random_matrix(rng, (batch, m, k), np.float64)
    b[4] *= 2.0**-1000  # x ~ 2**40: finite (with b ~ 1, x overflows in NumPy too)
    plan = _plan("gels", {"m": m, "n": n, "k": k}, np.float64, {}, "CC")
    result = _run(plan, a, b, rcond=None)
    np.testing.assert_array_equal(result[2], [3, 2, 0, 3, 3])
    assert not result[4].any()  # rank deficiency is no failure
    _assert_lstsq_like_numpy(a[:3], b[:3], [r[:3] for r in result], np.float64)
    for i, scale in [(3, 1e-300), (4, 2.0**-40)]:
        assert np.isfinite(result[0][i]).all()
        x_ref, _, _, s_ref = np.linalg.lstsq(a[i], b[i])
        assert_close(result[0][i] * scale, x_ref * scale, np.float64, factor=10, n=5)
        np.testing.assert_allclose(result[3][i], s_ref, rtol=1e-6)
    *_, rank, s, info = _run(plan, a, b, rcond=0.9)  # cut-off relative to s[0]
    reference = np.linalg.svd(a, compute_uv=False)
    np.testing.assert_array_equal(rank, (reference > 0.9 * reference[:, :1]).sum(axis=1))


def test_gels_nonfinite_input_is_the_failure(rng):
    m, n, k, batch = 4, 3, 1, 3
    a = random_matrix(rng, (batch, m, n), np.complex128)
    a[1, 2, 0] = np.nan
    a[2, 0, 1] = np.inf
    b = random_matrix(rng, (batch, m, k), np.complex128)
    plan = _plan("gels", {"m": m, "n": n, "k": k}, np.complex128, {}, "CC")
    x, residuals, rank, s, info = _run(plan, a, b, rcond=None)
    np.testing.assert_array_equal(info, [0, 1, 1])
    assert np.isfinite(x[0]).all() and np.isnan(x[1:]).all() and np.isnan(s[1:]).all()


# --- shared-memory alignment ----------------------------------------------------------


def test_odd_sized_float32_buffers_start_on_16_byte_boundaries(rng):
    """float32 17 x 5 at one matrix per block (the real choice from 16 rows on): an odd
    ``a`` of 85 elements ends off a 16-byte boundary, and the stand-ins check that ``tau``
    and every other buffer handed to cuSolverDx still starts on one -- for qr, lstsq and
    svd (whose gels and gesvd kernels both run)."""
    m, n, dtype = 17, 5, np.float32
    a = random_matrix(rng, (2, m, n), dtype)
    b = random_matrix(rng, (2, m, 1), dtype)
    plan = _plan("geqrf", {"m": m, "n": n}, dtype, {"mode": "reduced"}, "C", batches_per_block=1)
    assert plan.descriptors["factorize"].a_size() % 4  # not a whole number of 16 bytes
    q, r, info = _run(plan, a)
    assert_close(q @ r, a, dtype, n=m)
    plan = _plan("gels", {"m": m, "n": n, "k": 1}, dtype, {}, "CC", batches_per_block=1)
    x, residuals, rank, s, info = _run(plan, a, b, rcond=None)
    _assert_lstsq_like_numpy(a, b, (x, residuals, rank, s, info), dtype)
    plan = _plan(
        "gesvd",
        {"m": m, "n": n, "p": n},
        dtype,
        {"vectors": True, "full": False},
        "C",
        batches_per_block=1,
    )
    u, s, vh, info = _run(plan, a)
    assert_close(s, np.linalg.svd(a, compute_uv=False), dtype, n=m)
    assert_close((u * s[:, None, :]) @ vh, a, dtype, n=m)


# --- plans that launch nothing, or launch something else ---------------------------


def test_empty_core_dimensions_launch_nothing():
    from blocksolve.cuda._plan import HostPlan

    plan = _plan("geqrf", {"m": 3, "n": 0}, np.float64, {"mode": "complete"}, "C")
    assert isinstance(plan, HostPlan)
    q, r, info = plan.run((np.zeros((2, 3, 0)),), np, {})
    np.testing.assert_array_equal(q, np.broadcast_to(np.eye(3), (2, 3, 3)))
    assert r.shape == (2, 3, 0) and not info.any()
    plan = _plan("gels", {"m": 3, "n": 0, "k": 2}, np.complex64, {}, "CC")
    b = np.arange(12, dtype=np.complex64).reshape(2, 3, 2)
    x, residuals, rank, s, info = plan.run((np.zeros((2, 3, 0), np.complex64), b), np, {})
    assert x.shape == (2, 0, 2) and s.shape == (2, 0) and residuals.dtype == np.float32
    np.testing.assert_allclose(residuals, (np.abs(b) ** 2).sum(axis=1))
    plan = _plan(
        "trsm",
        {"n": 2, "k": 0},
        np.float64,
        {"lower": True, "trans": 0, "unit_diagonal": False},
        "CC",
    )
    x, info = plan.run((np.array([[[1.0, 0], [1, 0]]]), np.zeros((1, 2, 0))), np, {})
    assert x.shape == (1, 2, 0) and list(info) == [2]


def test_solve_without_right_hand_sides_still_factors(rng):
    a = random_general(rng, (3,), 3, np.float64)
    a[1] = 0
    plan = _plan("gesv", {"n": 3, "k": 0}, np.float64, {}, "CC")
    x, info = plan.run((a, np.zeros((3, 3, 0))), np, {})
    assert x.shape == (3, 3, 0)
    np.testing.assert_array_equal(info, [0, 1, 0])


def test_too_large_for_shared_memory_falls_back_to_cpu(rng):
    from blocksolve.cuda._plan import FallbackPlan

    a = random_spd(rng, (3,), 4, np.float64)
    plan = _plan(
        "potrf", {"n": 4}, np.float64, {"lower": True, "clean": True}, "C", shared_limit=64
    )
    assert isinstance(plan, FallbackPlan)
    assert "shared memory" in plan.fallback
    c, info = plan.run((a,), np, {})
    assert_close(c, np.linalg.cholesky(a), np.float64, n=4)
    assert not info.any()


def test_eig_runs_on_the_host_with_its_reason(rng):
    from blocksolve.cuda._plan import FallbackPlan

    a = random_general(rng, (3,), 4, np.float64)
    plan = _plan("geev", {"n": 4}, np.float64, {"vectors": False}, "C")
    assert isinstance(plan, FallbackPlan)
    assert "no eig kernel" in plan.fallback
    w, info = plan.run((a,), np, {})
    np.testing.assert_allclose(
        np.sort_complex(w), np.sort_complex(np.linalg.eigvals(a)), rtol=1e-12, atol=1e-12
    )
    assert not info.any()


def test_every_thread_must_reach_the_solver():
    """The stand-ins catch a kernel whose threads skip a device call."""
    api = _simulated()
    d = api.CholeskySolver(size=(2, 2), precision=np.float64, execution="Block", fill_mode="lower")

    @cuda.jit
    def early_return(a, info):
        values = cuda.shared.array(0, dtype=d.value_type)
        flags = cuda.shared.array(0, dtype=d.info_type)
        if cuda.threadIdx.x >= 16:
            return
        d.factorize(values[0:4], flags[8:9])

    with pytest.raises(AssertionError, match=r"only 16 of 32 threads reached the call"):
        early_return[1, 32, 0, 64](np.eye(2), np.zeros(1, np.int32))


# --- the public API on the simulated backend ---------------------------------------


def test_public_api_cholesky_and_solve(rng, simulated_gpu):
    a = random_spd(rng, (2, 3), 3, np.float64)
    strided = np.zeros((2, 3, 3, 6))
    strided[..., ::2] = a
    L = blocksolve.cholesky(strided[..., ::2])  # strided input: made contiguous first
    assert_close(L, np.linalg.cholesky(a), np.float64, n=3)
    b = random_matrix(rng, (3,), np.float64)
    x = blocksolve.solve(a[0, 0], b)  # vector right-hand side, unbatched
    assert x.shape == (3,)
    assert_close(x, np.linalg.solve(a[0, 0], b), np.float64, n=3)
    with pytest.raises(blocksolve.LinAlgError, match="not positive definite") as e:
        blocksolve.cholesky(-a)
    assert len(e.value.indices) == 6


def test_public_api_lstsq_qr_lu(rng, simulated_gpu):
    a = random_matrix(rng, (2, 5, 3), np.complex128)
    b = random_matrix(rng, (2, 5), np.complex128)
    x, residuals, rank, s = blocksolve.lstsq(a, b[..., None])
    for i in range(2):
        x_ref, res_ref, rank_ref, s_ref = np.linalg.lstsq(a[i], b[i])
        assert_close(x[i, :, 0], x_ref, np.complex128, n=5)
        assert_close(residuals[i], res_ref, np.complex128, factor=10, n=5)
        assert rank[i] == rank_ref
    q, r = blocksolve.qr(a)
    assert_close(q @ r, a, np.complex128, n=5)
    for rows in (3, 5):  # square, and rectangular as in SciPy
        lu, piv = blocksolve.lu_factor(a[:, :rows, :])
        for i in range(2):
            lu_ref, piv_ref = scipy.linalg.lu_factor(a[i, :rows, :])
            np.testing.assert_array_equal(piv[i], piv_ref)
            assert_close(lu[i], lu_ref, np.complex128, n=rows)
    a[1, :, 2] = a[1, :, 0]  # rank deficient: the minimum-norm solution
    x, residuals, rank, s = blocksolve.lstsq(a, b[..., None])
    assert list(rank) == [3, 2]
    x_ref, *_ = np.linalg.lstsq(a[1], b[1])
    assert_close(x[1, :, 0], x_ref, np.complex128, n=5)
    with pytest.raises(
        blocksolve.LinAlgError, match=r"batch index \(0,\) \(a contains infs or NaNs\)"
    ):
        blocksolve.lstsq(np.where(np.arange(2)[:, None, None] == 0, np.nan, a), b[..., None])


def test_public_api_underdetermined_lstsq_runs_the_kernel(rng, simulated_gpu):
    """No residuals (a derived dimension of 0) is not an empty problem."""
    a = random_matrix(rng, (3, 2, 4), np.float64)
    b = random_matrix(rng, (3, 2, 1), np.float64)
    x, residuals, rank, s = blocksolve.lstsq(a, b)
    assert residuals.shape == (3, 0)
    for i in range(3):
        assert_close(x[i], np.linalg.lstsq(a[i], b[i])[0], np.float64, factor=10, n=4)
    plans = [p for p in simulated_gpu.plans() if p.pattern.routine == "gels"]
    assert plans and all(type(p).__name__ == "GelsPlan" for p in plans)
    assert all(type(part).__name__ == "KernelPlan" for p in plans for part in p.parts)
