"""The svd kernel template (``gesvd``, blocksolve.cuda.kernels.svd) under numba's CUDA simulator.

The real kernel runs -- scaling, cuSolverDx's QR and multiply (numpy
stand-ins), the one-sided Jacobi sweeps in shared memory, completion,
sorting and stores -- on several matrices per block with a partial last
block, and is held to the CPU kernels' accuracy standard
(``tests/test_svd_kernels.py``: singular values within ``C n eps s[0]`` of
NumPy's, ``U`` and ``V`` orthonormal to ``C n eps``) and compared with the
CPU kernels (up to a sign or phase per pair of singular vectors).  See
``test_cuda_sim.py`` for what the simulator checks and what it cannot.

Run with ``NUMBA_ENABLE_CUDASIM=1 python -m pytest -m cudasim``; skipped otherwise.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

# The simulator helpers of the first simulator module.
from test_cuda_sim import (  # noqa: E402
    _layout,
    _pads_of_last_block,
    _plan,
    _run,
)
from test_svd_kernels import _hard_cases, check_svd, check_values

from _helpers import assert_close, canonical_svd, random_matrix

pytestmark = [
    pytest.mark.cudasim,
    pytest.mark.skipif(
        os.environ.get("NUMBA_ENABLE_CUDASIM") != "1",
        reason="needs NUMBA_ENABLE_CUDASIM=1 in the environment of pytest (numba's CUDA simulator)",
    ),
]


def _gesvd_plan(
    m, n, dtype, vectors=True, full=False, layout="C", batches_per_block=2, block_dim=None
):
    options = {"vectors": vectors, "full": full and vectors}
    dims = {"m": m, "n": n, "p": min(m, n)}
    return _plan(
        "gesvd",
        dims,
        dtype,
        options,
        layout,
        batches_per_block=batches_per_block,
        block_dim=block_dim,
    )


def _svd(plan, a):
    """``(s, u, vh, info)`` as the CPU kernels' ``gesvd`` returns them."""
    results = _run(plan, a)
    if len(results) == 2:
        return results[0], None, None, results[1]
    u, s, vh, info = results
    return s, u, vh, info


def _cpu(a, vectors, full):
    """The CPU kernels' ``(s, u, vh, info)`` (``u``, ``vh`` empty without vectors)."""
    from blocksolve.cpu.kernels import svd

    return svd.gesvd(np.ascontiguousarray(a), vectors, full)


def assert_like_cpu(result, a, full, factor=10.0):
    """Singular values and (canonical) singular vectors as the CPU kernels'."""
    s, u, vh, info = result
    want = _cpu(a, u is not None, full)
    np.testing.assert_array_equal(info, want[3])
    ok = info == 0
    size = max(a.shape[-2:])
    assert_close(s[ok], want[0][ok], a.dtype, factor, size)
    if u is not None:
        for got, ref in zip(canonical_svd(u, s, vh), canonical_svd(want[1], want[0], want[2])):
            assert_close(got[ok], ref[ok], a.dtype, factor, size)


# --- every dtype, shape, layout and job, several matrices per block -------------------


@pytest.mark.parametrize(
    "m, n, dtype, layout, vectors, full",
    [
        (4, 4, np.float64, "C", True, False),
        (5, 3, np.complex128, "F", True, True),
        (3, 5, np.float32, "C", True, True),
        (2, 5, np.complex64, "F", True, False),
        (3, 3, np.complex64, "C", False, False),
        (6, 4, np.float32, "F", False, False),
        (1, 3, np.complex128, "C", True, True),
    ],
)
def test_gesvd_matches_numpy_and_the_cpu_kernels(rng, m, n, dtype, layout, vectors, full):
    batch = 5  # three blocks of two, the last holding one matrix and an identity pad
    a = random_matrix(rng, (batch, m, n), dtype)
    plan = _gesvd_plan(m, n, dtype, vectors, full, layout)
    assert plan.fallback is None
    result = _svd(plan, _layout(a, layout))
    s, u, vh, info = result
    assert not info.any() and info.dtype == np.int32
    if vectors:
        check_svd(result, a, full)
    else:
        check_values(s, a)
    assert_like_cpu(result, a, full)  # the CPU kernels have NumPy's accuracy too
    factorize = plan.descriptors["factorize"]
    rows, p = max(m, n), min(m, n)
    pads = _pads_of_last_block(factorize, batch)  # the identity, scaled as any matrix
    assert pads.shape[0] == 1 and pads[0, 0, 0] > 0
    np.testing.assert_array_equal(pads, pads[0, 0, 0] * np.eye(rows, p)[None])
    methods = [call[0] for call in factorize.calls]
    assert methods == ["factorize"] * 3
    if vectors:  # Q [W / s, 0; 0, I]: the columns of C are orthonormal before Q
        multiply = plan.descriptors["multiply"]
        assert multiply.c_shape[1:] == (rows, rows if full else p)
        for _, _, buffers in multiply.calls:
            c = buffers["c"]
            gram = np.conj(np.swapaxes(c, -1, -2)) @ c
            assert_close(gram, np.broadcast_to(np.eye(c.shape[-1]), gram.shape), dtype, n=rows)
    else:
        assert set(plan.descriptors) == {"factorize"}


@pytest.mark.parametrize(
    "m, n, dtype, full, block_dim",
    [(11, 7, np.float64, True, (16, 2, 1)), (6, 9, np.complex128, False, (64, 1, 1))],
)
def test_larger_matrices_one_per_block(rng, m, n, dtype, full, block_dim):
    """An odd ``p`` above the unrolled sizes, more threads than pairs, a 2-D block."""
    a = random_matrix(rng, (2, m, n), dtype)
    plan = _gesvd_plan(m, n, dtype, full=full, batches_per_block=1, block_dim=block_dim)
    assert plan.kernel.block_dim == block_dim
    result = _svd(plan, a)
    check_svd(result, a, full)
    assert_like_cpu(result, a, full)


def test_batched_equals_loop(rng):
    """Each matrix's results do not depend on the others in its block."""
    a = random_matrix(rng, (4, 3, 3), np.float64)
    a[1] = np.diag([2.0, 1.0, 0.0])  # converges at once, beside ones that sweep
    plan = _gesvd_plan(3, 3, np.float64, batches_per_block=4)
    batched = _svd(plan, a)
    single_plan = _gesvd_plan(3, 3, np.float64, batches_per_block=1)
    for i in (0, 1):
        single = _svd(single_plan, a[i : i + 1])
        for x, y in zip(batched, single):
            np.testing.assert_array_equal(x[i : i + 1], y)


# --- hard matrices: scales, rank deficiency, repeated and tiny singular values ----------


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_hard_matrices(rng, dtype):
    """The CPU kernels' hard 3x3 cases, all in one launch of a few blocks."""
    cases = _hard_cases(rng, dtype)
    a = np.concatenate(list(cases.values()))
    plan = _gesvd_plan(3, 3, dtype, batches_per_block=8)
    s, u, vh, info = _svd(plan, a)
    at = 0
    for name, x in cases.items():
        part = slice(at, at + len(x))
        at += len(x)
        extra = 4.0 if name in ("huge", "large") else 1.0
        try:
            check_svd((s[part], u[part], vh[part], info[part]), x, False, extra)
        except AssertionError as error:
            raise AssertionError(f"{name}: {error}") from None


def test_rank_deficient_tall_and_wide():
    """Exact zeros after the QR: completed vectors keep U and V orthonormal, for every
    column Q [W / s, 0; 0, I] gives."""
    tall = np.zeros((3, 6, 3))
    tall[0, :3] = np.diag([1.0, 0, 2])
    tall[1, :, 0] = 1  # rank one
    tall[2, 2, 1] = 5
    wide = np.ascontiguousarray(np.conj(np.swapaxes(tall, 1, 2))[:, :, :5]).astype(np.complex128)
    check_svd(_svd(_gesvd_plan(6, 3, np.float64, full=True), tall), tall, True)
    check_svd(_svd(_gesvd_plan(3, 5, np.complex128, full=True), wide), wide, True)
    zero = np.zeros((2, 4, 2), np.float32)
    s, u, vh, info = _svd(_gesvd_plan(4, 2, np.float32, full=True), zero)
    np.testing.assert_array_equal(s, 0)
    check_svd((s, u, vh, info), zero, True)


def test_scales_do_not_change_results(rng):
    """Each matrix is scaled by a power of two before its sweeps: one scaled by ``2**k``
    has the singular values times ``2**k`` and the same vectors, to the bit."""
    a = random_matrix(rng, (1, 3, 3), np.float64)
    powers = np.array([0, -1000, -600, 600, 1000])
    scaled = a * np.exp2(powers)[:, None, None]
    s, u, vh, info = _svd(_gesvd_plan(3, 3, np.float64, batches_per_block=3), scaled)
    assert not info.any()
    np.testing.assert_array_equal(s, s[:1] * np.exp2(powers)[:, None])
    np.testing.assert_array_equal(u, np.broadcast_to(u[:1], u.shape))
    np.testing.assert_array_equal(vh, np.broadcast_to(vh[:1], vh.shape))


def test_subnormal_and_huge_singular_values_keep_their_accuracy():
    """Singular values in the subnormal range and near overflow come out exactly where
    the matrix is diagonal (single precision, where the range is narrow)."""
    info32 = np.finfo(np.float32)
    a = np.stack(
        [
            np.diag([3.0, 2.0, 1.0]) * float(info32.smallest_subnormal) * 4,
            np.diag([3.0, -2.0, 1.0]) * float(info32.max) / 4,
        ]
    ).astype(np.float32)
    s, u, vh, info = _svd(_gesvd_plan(3, 3, np.float32), a)
    assert not info.any()
    np.testing.assert_array_equal(s, np.sort(np.abs(np.diagonal(a, axis1=1, axis2=2)))[:, ::-1])


# --- failures ------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_inf_and_nan_fail_alone(rng, bad):
    a = random_matrix(rng, (5, 4, 3), np.complex128)
    a[1, 3, 2] = bad
    a[4, 0, 0] = complex(0, bad)
    s, u, vh, info = _svd(_gesvd_plan(4, 3, np.complex128), a)
    np.testing.assert_array_equal(info, [0, 1, 0, 0, 1])
    for x in (s, u, vh):
        assert np.isnan(x[[1, 4]]).all() and np.isfinite(x[[0, 2, 3]]).all()
    ok = [0, 2, 3]  # matrix 0 shares its block with the failing matrix 1
    check_svd((s[ok], u[ok], vh[ok], info[ok]), a[ok], False)


def test_too_few_sweeps_is_a_failure(rng, monkeypatch):
    """``info`` counts the pairs left non-orthogonal after the last sweep."""
    from blocksolve.cuda.kernels import svd

    monkeypatch.setattr(svd, "MAX_SWEEPS", 1)
    a = random_matrix(rng, (5, 3, 3), np.float64)
    a[0] = np.diag([3.0, 2.0, 1.0])  # orthogonal columns: converged at once
    s, u, vh, info = _svd(_gesvd_plan(3, 3, np.float64, vectors=False), a)
    assert info[0] == 0
    assert (info[1:] >= 1).all() and (info[1:] <= 3).all()


# --- conventions, and problems without a launch -----------------------------------------


def test_sign_convention_is_the_cpus():
    """``V`` is a product of rotations from the identity, sorted; ``u_j = a v_j / s_j``."""
    a = np.array([[[3.0, 0, 0], [0, -1, 0], [0, 0, 2]]])
    s, u, vh, info = _svd(_gesvd_plan(3, 3, np.float64), a)
    np.testing.assert_array_equal(s, [[3, 2, 1]])
    np.testing.assert_array_equal(vh, [[[1, 0, 0], [0, 0, 1], [0, 1, 0]]])
    np.testing.assert_array_equal(u, [[[1, 0, 0], [0, 0, -1], [0, 1, 0]]])
    for x, y in zip((s, u, vh, info), _cpu(a, True, False)):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("m, n", [(3, 0), (0, 3), (0, 0)])
def test_empty_matrices_give_numpys_results(m, n):
    from blocksolve.cuda._plan import HostPlan

    a = np.zeros((2, m, n), np.complex64)
    for vectors, full in [(True, True), (True, False), (False, False)]:
        plan = _gesvd_plan(m, n, np.complex64, vectors, full)
        assert isinstance(plan, HostPlan)
        *outputs, info = plan.run((a,), np, {})
        ref = np.linalg.svd(a, full_matrices=full, compute_uv=vectors)
        ref = ref if vectors else (ref,)
        assert len(outputs) == len(ref) and not info.any()
        for x, y in zip(outputs, ref):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)


# --- the public API on the simulated backend -----------------------------------------


def test_public_api(rng, simulated_gpu):
    import blocksolve

    a = random_matrix(rng, (2, 2, 4, 3), np.complex128)
    u, s, vh = blocksolve.svd(a, full_matrices=False)
    assert_close((u * s[..., None, :]) @ vh, a, np.complex128, n=4)
    assert_close(s, np.linalg.svd(a, compute_uv=False), np.complex128, n=4)
    assert_close(blocksolve.svdvals(a), s, np.complex128, n=4)
    x = random_matrix(rng, (3, 3, 4), np.float64)
    assert_close(blocksolve.pinv(x), np.linalg.pinv(x), np.float64, factor=10, n=4)
    x[1, 2] = 0  # rank 2, exactly
    np.testing.assert_array_equal(blocksolve.matrix_rank(x), [3, 2, 3])
    with pytest.raises(
        blocksolve.LinAlgError, match=r"batch index \(1,\) \(a contains infs or NaNs\)"
    ):
        blocksolve.svd(np.where(np.arange(3)[:, None, None] == 1, np.nan, x))
    plans = [p for p in simulated_gpu.plans() if p.pattern.routine == "gesvd"]
    assert {p.pattern.option("vectors") for p in plans} == {True, False}
    assert all(type(p).__name__ == "KernelPlan" for p in plans)
