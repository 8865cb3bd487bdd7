"""The kernel templates of eigh/eigvalsh, inv, det/slogdet and solve(assume_a='pos')
under numba's CUDA simulator (see ``test_cuda_sim.py`` for what the simulator checks).

Run with ``NUMBA_ENABLE_CUDASIM=1 python -m pytest -m cudasim``; skipped otherwise.
"""

from __future__ import annotations

import os
import types

import numpy as np
import pytest
import scipy.linalg

# The simulator helpers of the first simulator module.
from test_cuda_sim import (  # noqa: E402
    _layout,
    _pads_of_last_block,
    _plan,
    _run,
    _simulated,
)

from _helpers import assert_close, random_general, random_hermitian, random_matrix, random_spd

pytestmark = [
    pytest.mark.cudasim,
    pytest.mark.skipif(
        os.environ.get("NUMBA_ENABLE_CUDASIM") != "1",
        reason="needs NUMBA_ENABLE_CUDASIM=1 in the environment of pytest (numba's CUDA simulator)",
    ),
]


# --- eigh / eigvalsh: cuSolverDx heev through the generic Solver ---------------------


@pytest.mark.parametrize(
    "dtype, layout, lower", [(np.float64, "C", True), (np.complex64, "F", False)]
)
def test_heev_vectors(rng, dtype, layout, lower):
    n, batch = 3, 5
    a = random_hermitian(rng, (batch,), n, dtype)
    junk = a + 5 * (np.triu(np.ones((n, n)), 1) if lower else np.tril(np.ones((n, n)), -1))
    junk = junk.astype(dtype)
    plan = _plan("heev", {"n": n}, dtype, {"lower": lower, "vectors": True}, layout)
    w, v, info = _run(plan, _layout(junk, layout))
    assert not info.any()
    real = np.finfo(dtype).dtype
    assert w.dtype == real and w.shape == (batch, n) and v.dtype == dtype
    assert_close(w, np.linalg.eigvalsh(a), dtype, n=n)
    assert_close(a @ v, v * w[:, None, :], dtype, factor=10, n=n)
    d = plan.descriptors["solver"]
    assert d.batches_per_block == 2 and len(d.solver.calls) == 3
    method, block, buffers = d.solver.calls[-1]
    assert method == "execute" and buffers["workspace"].shape == (d.workspace_size,)
    np.testing.assert_array_equal(buffers["a"][1:], np.eye(n)[None])  # the pad


def test_heev_values_only_reads_lambda(rng):
    n, batch = 4, 3
    a = random_hermitian(rng, (batch,), n, np.complex128)
    plan = _plan(
        "heev", {"n": n}, np.complex128, {"lower": True, "vectors": False}, "C", batches_per_block=3
    )
    w, info = _run(plan, a)  # the stand-in leaves NaN in A: reading it would show
    assert not info.any() and np.isfinite(w).all()
    assert_close(w, np.linalg.eigvalsh(a), np.complex128, n=n)


def test_heev_info_of_each_matrix_is_stored(rng):
    """A stand-in that reports non-convergence for one matrix: its info comes out."""

    class Failing(_simulated().Solver):
        def _run(self, method, block, block_index, work, buffers, before):
            def failing(**views):
                work(**views)
                views["info"][1] = 2  # slot 1 of each block: 2 elements did not converge

            super()._run(method, block, block_index, failing, buffers, before)

    from blocksolve._pattern import CallPattern
    from blocksolve.cuda import _plan as plans

    api = types.SimpleNamespace(Solver=Failing)
    pattern = CallPattern.make(
        "heev", {"n": 3}, np.float64, {"lower": True, "vectors": False}, ["C"], "sm_90"
    )
    plan = plans.build(pattern, api, batches_per_block=2, block_dim=(32, 1, 1))
    w, info = _run(plan, random_hermitian(rng, (3,), 3, np.float64))
    np.testing.assert_array_equal(info, [0, 2, 0])  # the last block's slot 1 is a pad


# --- inv: getrf + getrs against the identity ----------------------------------------


@pytest.mark.parametrize("dtype, layout", [(np.float64, "C"), (np.complex64, "F")])
def test_getri(rng, dtype, layout):
    n, batch = 4, 5
    a = random_general(rng, (batch,), n, dtype)
    a[3, :, 2] = 0  # exactly singular
    plan = _plan("getri", {"n": n}, dtype, {}, layout)
    ainv, info = _run(plan, _layout(a, layout))
    np.testing.assert_array_equal(info, [0, 0, 0, 3, 0])
    good = [0, 1, 2, 4]
    assert_close(ainv[good], np.linalg.inv(a[good]), dtype, factor=10, n=n)
    np.testing.assert_array_equal(
        _pads_of_last_block(plan.descriptors["factor"], batch), np.eye(n)[None]
    )
    solve_calls = plan.descriptors["solver"].calls
    np.testing.assert_array_equal(solve_calls[0][2]["b"], np.broadcast_to(np.eye(n), (2, n, n)))


# --- det / slogdet: getrf's diagonal and pivots ------------------------------------


@pytest.mark.parametrize("dtype, layout", [(np.float32, "C"), (np.complex128, "F")])
def test_slogdet_and_det(rng, dtype, layout):
    n, batch = 4, 5
    a = random_matrix(rng, (batch, n, n), dtype)
    a[2, 1] = 0  # singular: sign 0, logabsdet -inf, det 0
    sign_ref, log_ref = np.linalg.slogdet(a)
    plan = _plan("getrf_det", {"n": n}, dtype, {"log": True}, layout)
    sign, logabsdet, info = _run(plan, _layout(a, layout))
    assert not info.any()  # never a failure
    assert sign.dtype == dtype and logabsdet.dtype == np.finfo(dtype).dtype
    assert_close(sign, sign_ref, dtype, n=n)
    assert logabsdet[2] == -np.inf and sign[2] == 0
    ok = [0, 1, 3, 4]
    assert_close(logabsdet[ok], log_ref[ok], dtype, n=n)
    plan = _plan("getrf_det", {"n": n}, dtype, {"log": False}, layout)
    det, info = _run(plan, _layout(a, layout))
    assert not info.any() and det[2] == 0 and det.dtype == dtype
    assert_close(det, np.linalg.det(a), dtype, factor=10, n=n)


def test_det_sign_counts_row_interchanges():
    a = np.stack([np.eye(3)[[1, 0, 2]], np.eye(3)[[1, 2, 0]], -np.eye(3)])
    plan = _plan("getrf_det", {"n": 3}, np.float64, {"log": True}, "C")
    sign, logabsdet, info = _run(plan, a)
    np.testing.assert_array_equal(sign, [-1, 1, -1])
    np.testing.assert_array_equal(logabsdet, 0)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_det_of_infinite_and_nan_pivots_as_numpy(dtype):
    """A real pivot that overflows to inf (or is inf) has sign ±1, so ``det`` is ±inf; a
    complex one has NumPy's NaN phase; a NaN pivot gives a NaN ``logabsdet``."""
    a = np.stack([np.eye(3)] * 3)
    a[0, :2, :2] = [[1e308, 1e308], [-1e308, 1e308]]  # U[1, 1] = 2e308
    a[1, :2, :2] = [[np.inf, 0], [0, -1]]
    a[2, 1, 1] = np.nan
    a = a.astype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        want_sign, want_log = np.linalg.slogdet(a)
        want_det = np.linalg.det(a)
    sign, logabsdet, info = _run(_plan("getrf_det", {"n": 3}, dtype, {"log": True}, "C"), a)
    np.testing.assert_array_equal(sign, want_sign)
    np.testing.assert_array_equal(logabsdet, want_log)
    det, info = _run(_plan("getrf_det", {"n": 3}, dtype, {"log": False}, "C"), a)
    np.testing.assert_array_equal(det, want_det)
    if dtype == np.float64:
        np.testing.assert_array_equal(det[:2], [np.inf, -np.inf])


# --- solve(assume_a='pos'): potrf + potrs in one kernel -----------------------------


@pytest.mark.parametrize(
    "dtype, layouts, lower", [(np.float64, "CC", True), (np.complex128, "FC", False)]
)
def test_posv(rng, dtype, layouts, lower):
    n, k, batch = 4, 2, 5
    a = random_spd(rng, (batch,), n, dtype)
    a[3, n - 1, n - 1] = -1  # not positive definite at the last minor
    b = random_matrix(rng, (batch, n, k), dtype)
    plan = _plan("posv", {"n": n, "k": k}, dtype, {"lower": lower}, layouts)
    x, info = _run(plan, _layout(a, layouts[0]), _layout(b, layouts[1]))
    np.testing.assert_array_equal(info, [0, 0, 0, n, 0])
    np.testing.assert_array_equal(x[3], b[3])  # failed: b back, like the CPU backend
    good = [0, 1, 2, 4]
    ref = np.stack([scipy.linalg.solve(a[i], b[i], assume_a="pos", lower=lower) for i in good])
    assert_close(x[good], ref, dtype, factor=10, n=n)


# --- problems with an empty core dimension launch nothing ------------------------------


def test_empty_matrices_give_numpys_results():
    from blocksolve.cuda._plan import HostPlan

    a = np.zeros((2, 0, 0), np.complex64)
    for routine, options, expected in [
        ("heev", {"lower": True, "vectors": True}, [(2, 0), (2, 0, 0)]),
        ("getri", {}, [(2, 0, 0)]),
        ("getrf_det", {"log": True}, [(2,), (2,)]),
    ]:
        plan = _plan(routine, {"n": 0}, np.complex64, options, "C")
        assert isinstance(plan, HostPlan)
        *outputs, info = plan.run((a,), np, {})
        assert [o.shape for o in outputs] == expected and not info.any()
    sign, logabsdet, info = _plan("getrf_det", {"n": 0}, np.complex64, {"log": True}, "C").run(
        (a,), np, {}
    )
    np.testing.assert_array_equal(sign, 1)
    np.testing.assert_array_equal(logabsdet, 0)
    plan = _plan("posv", {"n": 3, "k": 0}, np.float64, {"lower": False}, "CC")
    x, info = plan.run((-np.eye(3)[None], np.zeros((1, 3, 0))), np, {})
    assert x.shape == (1, 3, 0) and not info.any()  # SciPy does not factor for empty b


# --- the public API on the simulated backend ---------------------------------------


def test_public_api(rng, simulated_gpu):
    import blocksolve

    a = random_hermitian(rng, (4,), 3, np.float64)
    w, v = blocksolve.eigh(a)
    assert_close(w, np.linalg.eigvalsh(a), np.float64, n=3)
    assert_close(blocksolve.eigvalsh(a, UPLO="U"), np.linalg.eigvalsh(a, UPLO="U"), np.float64, n=3)
    g = random_general(rng, (2, 2), 3, np.complex128)
    assert_close(blocksolve.inv(g), np.linalg.inv(g), np.complex128, factor=10, n=3)
    assert_close(blocksolve.det(g), np.linalg.det(g), np.complex128, factor=10, n=3)
    d = blocksolve.det(g[0, 0])
    assert np.ndim(d) == 0
    spd = random_spd(rng, (3,), 3, np.float64)
    b = random_matrix(rng, (3,), np.float64)
    x = blocksolve.solve(spd, b, assume_a="pos")
    assert_close(x, np.linalg.solve(spd, b[:, None])[..., 0], np.float64, factor=10, n=3)
    with pytest.raises(blocksolve.LinAlgError, match="not positive definite"):
        blocksolve.solve(-spd, b, assume_a="pos")
    routines = {p.pattern.routine for p in simulated_gpu.plans()}
    assert {"heev", "getri", "getrf_det", "posv"} <= routines
