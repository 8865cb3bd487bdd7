"""The CUDA backend on a real GPU: every op and dtype on cupy arrays.

Each test compares against NumPy/SciPy on the host copy and, where cupy has
the routine, against cupy/cuSOLVER.  They also check what only a GPU can
show: the simulator's stand-in descriptors lay shared memory out exactly as
nvmath's, no small problem silently takes the CPU fallback, the caller's
stream is used without a host synchronisation, torch tensors round-trip,
and the generated device code is found on disk by a second process.

Cost: every distinct call pattern generates cuSolverDx code (libmathdx +
NVRTC, several seconds each); the grid below needs about 50 of them (every
op in every dtype at one small size, plus a few layouts, modes and sizes), so
run e.g. ``python -m pytest -m gpu tests/test_gpu.py -n 8`` (xdist) on a
fresh machine.  Skipped without a GPU (see ``conftest.py``).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.linalg

import blocksolve
from _helpers import assert_close, random_general, random_matrix, random_spd, to_numpy

pytestmark = pytest.mark.gpu

cupy = pytest.importorskip("cupy", reason="the GPU tests need cupy")

DTYPES = (np.float32, np.float64, np.complex64, np.complex128)


def _dev(a):
    return cupy.asarray(a)


def _dev_column_major(a):
    """The same matrices on the device, each stored column-major (layout 'F')."""
    x = cupy.ascontiguousarray(cupy.asarray(a).swapaxes(-1, -2)).swapaxes(-1, -2)
    assert x.strides[-2] == x.itemsize
    return x


def _is_device_result(x, dtype=None):
    assert isinstance(x, cupy.ndarray), f"expected a cupy array, got {type(x)}"
    assert dtype is None or x.dtype == dtype, (x.dtype, dtype)
    return True


# --- every op against NumPy/SciPy and cuSOLVER -------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_all_dtypes(rng, dtype):
    a = random_spd(rng, (37,), 4, dtype)  # 37: a partial last block
    L = blocksolve.cholesky(_dev(a))
    assert _is_device_result(L, dtype)
    assert_close(L, np.linalg.cholesky(a), dtype, n=4)
    assert_close(L, cupy.linalg.cholesky(_dev(a)), dtype, n=4)  # cuSOLVER potrfBatched


def test_cholesky_upper_column_major_one_matrix_per_block(rng):
    n = 16
    a = random_spd(rng, (5,), n, np.float64)
    U = blocksolve.cholesky(_dev_column_major(a), upper=True)
    assert_close(U, np.linalg.cholesky(a, upper=True), np.float64, n=n)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cho_factor_and_solve(rng, dtype):
    n, k = 4, 2
    a = random_spd(rng, (9,), n, dtype)
    b = random_matrix(rng, (9, n, k), dtype)
    c, lower = blocksolve.cho_factor(_dev(a), lower=True)
    x = blocksolve.cho_solve((c, lower), _dev(b))
    assert _is_device_result(x, dtype)
    assert_close(x, np.linalg.solve(a, b), dtype, factor=10, n=n)
    assert_close(np.tril(to_numpy(c)), np.linalg.cholesky(a), dtype, n=n)
    np.testing.assert_array_equal(np.triu(to_numpy(c), 1), np.triu(a, 1))  # other triangle: a


@pytest.mark.parametrize(
    "dtype, m, n", [(dtype, 5, 5) for dtype in DTYPES] + [(np.float64, 3, 6), (np.complex64, 7, 4)]
)
def test_lu_factor_pivots_match_scipy(rng, dtype, m, n):
    a = random_matrix(rng, (11, m, n), dtype)
    lu, piv = blocksolve.lu_factor(_dev(a))
    assert _is_device_result(piv, np.int32) and piv.shape == (11, min(m, n))
    for i in range(len(a)):
        lu_ref, piv_ref = scipy.linalg.lu_factor(a[i])
        np.testing.assert_array_equal(to_numpy(piv)[i], piv_ref)
        assert_close(to_numpy(lu)[i], lu_ref, dtype, factor=10, n=max(m, n))


@pytest.mark.parametrize(
    "dtype, trans", [(np.float32, 1), (np.float64, 0), (np.complex64, 1), (np.complex128, 2)]
)
def test_lu_solve(rng, dtype, trans):
    n = 5
    a = random_general(rng, (7,), n, dtype)
    b = random_matrix(rng, (7, n, 1), dtype)
    lu, piv = blocksolve.lu_factor(_dev(a))
    x = blocksolve.lu_solve((lu, piv), _dev(b), trans=trans)
    for i in range(len(a)):
        ref = scipy.linalg.lu_solve(scipy.linalg.lu_factor(a[i]), b[i], trans=trans)
        assert_close(to_numpy(x)[i], ref, dtype, factor=10, n=n)


@pytest.mark.parametrize(
    "dtype, n, vector",
    [
        (np.float32, 8, False),
        (np.float64, 8, False),
        (np.complex64, 3, True),
        (np.complex128, 8, False),
    ],
)
def test_solve(rng, dtype, n, vector):
    a = random_general(rng, (50,), n, dtype)
    b = random_matrix(rng, (50, n) if vector else (50, n, 3), dtype)
    x = blocksolve.solve(_dev(a), _dev(b))
    assert x.shape == b.shape
    ref = np.linalg.solve(a, b[..., None])[..., 0] if vector else np.linalg.solve(a, b)
    assert_close(x, ref, dtype, factor=10, n=n)
    cu = cupy.linalg.solve(_dev(a), _dev(b[..., None] if vector else b))  # getrf/getrsBatched
    assert_close(x, cu[..., 0] if vector else cu, dtype, factor=10, n=n)


@pytest.mark.parametrize(
    "dtype, lower, trans, unit",
    [
        (np.float32, False, 1, False),
        (np.float64, True, 0, False),
        (np.complex64, True, 2, False),
        (np.complex128, False, 2, True),
    ],
)
def test_solve_triangular(rng, dtype, lower, trans, unit):
    from cupyx.scipy.linalg import solve_triangular as cu_solve_triangular

    n = 6
    a = random_general(rng, (13,), n, dtype)
    b = random_matrix(rng, (13, n, 2), dtype)
    x = blocksolve.solve_triangular(_dev(a), _dev(b), trans=trans, lower=lower, unit_diagonal=unit)
    for i in range(len(a)):
        ref = scipy.linalg.solve_triangular(
            a[i], b[i], trans=trans, lower=lower, unit_diagonal=unit
        )
        assert_close(to_numpy(x)[i], ref, dtype, factor=10, n=n)
        cu = cu_solve_triangular(
            _dev(a[i]), _dev(b[i]), trans=trans, lower=lower, unit_diagonal=unit
        )
        assert_close(to_numpy(x)[i], cu, dtype, factor=10, n=n)


@pytest.mark.parametrize(
    "mode, m, n, dtype, layout",
    [
        *(("reduced", 6, 4, dtype, "C") for dtype in DTYPES),
        ("complete", 3, 5, np.complex64, "F"),
        ("r", 4, 4, np.float32, "C"),
        ("raw", 5, 3, np.complex128, "C"),
    ],
)
def test_qr(rng, mode, m, n, dtype, layout):
    """Householder signs are the library's choice: check the factorisation, not numbers."""
    a = random_matrix(rng, (10, m, n), dtype)
    result = blocksolve.qr(_dev_column_major(a) if layout == "F" else _dev(a), mode=mode)
    ref = np.linalg.qr(a, mode=mode)
    if mode in ("reduced", "complete"):
        q, r = (to_numpy(x) for x in result)
        assert q.shape == ref[0].shape and r.shape == ref[1].shape
        assert_close(q @ r, a, dtype, factor=10, n=max(m, n))
        eye = np.eye(q.shape[-1])
        assert_close(
            np.conj(q.swapaxes(-1, -2)) @ q,
            np.broadcast_to(eye, (10,) + eye.shape),
            dtype,
            factor=10,
            n=m,
        )
        np.testing.assert_array_equal(np.tril(r, -1), 0)
        assert_close(np.abs(r), np.abs(ref[1]), dtype, factor=10, n=max(m, n))
    elif mode == "r":
        r = to_numpy(result)
        assert_close(np.abs(r), np.abs(ref), dtype, factor=10, n=m)
    else:
        h, tau = (to_numpy(x) for x in result)
        assert h.shape == ref[0].shape and tau.shape == ref[1].shape
        for i in range(len(a)):  # rebuild A from the reflectors, LAPACK convention
            f = h[i].T
            q = np.eye(m, dtype=dtype)
            for j in range(len(tau[i])):
                v = np.concatenate([np.zeros(j), [1], f[j + 1 :, j]]).astype(dtype)
                q = q @ (np.eye(m) - tau[i, j] * np.outer(v, np.conj(v)))
            assert_close(q @ np.triu(f), a[i], dtype, factor=10, n=m)


@pytest.mark.parametrize(
    "m, n, k, dtype", [*((8, 4, 2, dtype) for dtype in DTYPES), (3, 5, 1, np.complex128)]
)
def test_lstsq(rng, m, n, k, dtype):
    a = random_matrix(rng, (20, m, n), dtype)
    b = random_matrix(rng, (20, m, k), dtype)
    x, residuals, rank, s = blocksolve.lstsq(_dev(a), _dev(b))
    assert _is_device_result(rank, np.int32)
    for i in range(len(a)):
        x_ref, res_ref, rank_ref, s_ref = np.linalg.lstsq(a[i], b[i])
        assert_close(to_numpy(x)[i], x_ref, dtype, factor=10, n=max(m, n))
        assert_close(to_numpy(s)[i], s_ref, dtype, factor=10, n=max(m, n))
        assert int(to_numpy(rank)[i]) == rank_ref
        if m > n:
            assert_close(to_numpy(residuals)[i], res_ref, dtype, factor=10, n=m)


def test_above_48kb_of_shared_memory(rng):
    n = 96  # 72 KB of fp64 in shared memory: needs the opt-in
    a = random_spd(rng, (3,), n, np.float64)
    backend = _backend()
    L = blocksolve.cholesky(_dev(a))
    plan = _plan_of(backend, "potrf", {"n": n}, np.float64, {"lower": True, "clean": True}, "C")
    assert plan.fallback is None and plan.kernel.shared_bytes > 48 * 1024
    assert_close(L, np.linalg.cholesky(a), np.float64, n=n)


def test_a_kernel_of_many_threads_launches_within_a_blocks_registers(rng):
    """512 threads of complex128 least squares: the launch bounds keep its registers within
    a block's (204 per thread without them: a launch failure); not a fallback."""
    m, n, k, dtype = 128, 64, 4, np.complex128
    a = random_matrix(rng, (3, m, n), dtype)
    b = random_matrix(rng, (3, m, k), dtype)
    x = blocksolve.lstsq(_dev(a), _dev(b))[0]
    plan = _plan_of(_backend(), "gels", {"m": m, "n": n, "k": k, "p": n, "r": k}, dtype, {}, "CC")
    assert plan.fallback is None and plan.kernel.registers <= 128
    for i in range(3):
        assert_close(to_numpy(x)[i], np.linalg.lstsq(a[i], b[i])[0], dtype, factor=10, n=m)


def test_a_call_runs_on_the_device_of_its_arrays(rng):
    """Arrays on device 1 while device 0 is current (a torch tensor on cuda:1, say): the
    casts, checks, broadcasts, empty results and the policy's look at ``info`` run there
    too, not only the kernel -- cupy would otherwise work across devices (a warning with
    peer access, which the test makes an error; an illegal address without)."""
    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    import warnings

    a = random_spd(rng, (5,), 4, np.float64)
    b = rng.standard_normal((5, 4, 1))
    with cupy.cuda.Device(1):  # the inputs made there, every cupy operation of the test too
        on_one, b32_on_one, b64_on_one = _dev(a), _dev(b.astype(np.float32)), _dev(b[None])
        negative_on_one = -on_one
    assert cupy.cuda.Device().id == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", cupy._util.PerformanceWarning)
        L = blocksolve.cholesky(on_one)
        c = blocksolve.cho_factor(on_one)  # check_finite
        x = blocksolve.solve(on_one, b32_on_one)  # b cast to float64
        nans = blocksolve.cholesky(negative_on_one, errors="nan")
        broadcast = blocksolve.solve(on_one[:, None], b64_on_one)  # batch (5, 1) with (1, 5)
        empty = blocksolve.cholesky(on_one[:0])
        with pytest.raises(blocksolve.LinAlgError, match="cholesky: 5 matrices"):
            blocksolve.cholesky(negative_on_one)
    for result in (L, c[0], x, nans, broadcast, empty):
        assert result.device.id == 1
    assert cupy.cuda.Device().id == 0
    assert_close(L, np.linalg.cholesky(a), np.float64, n=4)
    assert_close(x, np.linalg.solve(a, b.astype(np.float32).astype(np.float64)), np.float64, n=4)
    assert np.isnan(to_numpy(nans)).all() and to_numpy(broadcast).shape == (5, 5, 4, 1)
    with pytest.raises(
        ValueError,
        match=r"solve: arrays must all be on one GPU; got a on "
        r"device 1, b on device 0",
    ):
        blocksolve.solve(on_one, _dev(np.ones((5, 4, 1))))


def _launch_streams(monkeypatch):
    """The stream of every cubin launch from now on (cupy's current one at the launch)."""
    from blocksolve.cuda import _launch

    launched_on = []
    real_launch = _launch.CubinKernel.launch

    def recording(self, arrays, batch, xp):
        launched_on.append(cupy.cuda.get_current_stream().ptr)
        return real_launch(self, arrays, batch, xp)

    monkeypatch.setattr(_launch.CubinKernel, "launch", recording)
    return launched_on


def test_torch_tensors_on_a_side_stream_run_on_that_stream(rng, monkeypatch):
    """A call on torch tensors under ``torch.cuda.stream(s)`` launches on ``s``: on cupy's
    legacy stream torch's allocator could hand an input's memory to the next tensor on
    ``s`` while the kernel still reads it."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    launched_on = _launch_streams(monkeypatch)
    a = random_spd(rng, (9,), 4, np.float64)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        t = torch.from_numpy(a).cuda()
        L = blocksolve.cholesky(t)
        side.synchronize()
    assert launched_on == [side.cuda_stream]
    assert_close(L.cpu().numpy(), np.linalg.cholesky(a), np.float64, n=4)


def test_the_stream_keyword_runs_the_call_on_that_stream(rng, monkeypatch):
    """``stream=`` as a cupy stream, a raw handle and a torch stream (over torch's current
    one), and for NumPy arrays inside ``use_device('cuda')``; cupy's current stream is
    left as it was."""
    launched_on = _launch_streams(monkeypatch)
    a = random_spd(rng, (9,), 4, np.float64)
    b = rng.standard_normal((9, 4, 2))
    a_dev, b_dev = _dev(a), _dev(b)
    cupy.cuda.Device().synchronize()
    side = cupy.cuda.Stream(non_blocking=True)
    before = cupy.cuda.get_current_stream().ptr
    L = blocksolve.cholesky(a_dev, stream=side)
    x = blocksolve.solve(a_dev, b_dev, stream=side.ptr)
    with blocksolve.use_device("cuda"):
        L_host = blocksolve.cholesky(a, stream=side)
    side.synchronize()
    assert launched_on == [side.ptr] * 3
    assert cupy.cuda.get_current_stream().ptr == before
    assert_close(L, np.linalg.cholesky(a), np.float64, n=4)
    assert_close(x, np.linalg.solve(a, b), np.float64, n=4)
    assert isinstance(L_host, np.ndarray)
    assert_close(L_host, np.linalg.cholesky(a), np.float64, n=4)
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    t = torch.from_numpy(a).cuda()
    torch.cuda.synchronize()
    torch_side = torch.cuda.Stream()
    L_torch = blocksolve.cholesky(t, stream=torch_side)  # torch's current stream: default
    torch_side.synchronize()
    assert launched_on[3:] == [torch_side.cuda_stream]
    assert_close(L_torch.cpu().numpy(), np.linalg.cholesky(a), np.float64, n=4)


def test_the_stream_keyword_on_another_device_is_refused(rng):
    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    with cupy.cuda.Device(1):
        other = cupy.cuda.Stream(non_blocking=True)
    with pytest.raises(
        ValueError,
        match=r"cholesky: the stream is on device 1, the arrays "
        r"on device 0",
    ):
        blocksolve.cholesky(_dev(np.eye(3)), stream=other)


def test_too_large_falls_back_to_cpu_with_a_reason(rng):
    n = 200  # 320 KB of fp64: more than any GPU's shared memory per block
    a = random_spd(rng, (2,), n, np.float64)
    L = blocksolve.cholesky(_dev(a))
    plan = _plan_of(_backend(), "potrf", {"n": n}, np.float64, {"lower": True, "clean": True}, "C")
    assert plan.fallback, "expected the CPU fallback"
    assert _is_device_result(L, np.float64)
    assert_close(L, np.linalg.cholesky(a), np.float64, n=n)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_all_dtypes(rng, dtype):
    """heev through the generic Solver: eigenvalues against NumPy and cuSOLVER (syevj)."""
    n = 5
    x = random_matrix(rng, (37, n, n), dtype)
    a = ((x + np.conj(x.swapaxes(-1, -2))) / 2).astype(dtype)
    w, v = blocksolve.eigh(_dev(a))
    real = np.finfo(dtype).dtype
    assert _is_device_result(w, real) and _is_device_result(v, dtype)
    w, v = to_numpy(w), to_numpy(v)
    assert_close(w, np.linalg.eigvalsh(a), dtype, factor=4, n=n)
    assert_close(w, cupy.linalg.eigvalsh(_dev(a)), dtype, factor=4, n=n)
    scale = np.abs(w).max()
    assert_close(a @ v / scale, v * w[:, None, :] / scale, dtype, factor=10, n=n)
    assert_close(
        np.conj(v.swapaxes(-1, -2)) @ v, np.broadcast_to(np.eye(n), v.shape), dtype, factor=10, n=n
    )
    w_only = blocksolve.eigvalsh(_dev_column_major(a), UPLO="U")
    assert_close(w_only, np.linalg.eigvalsh(a, UPLO="U"), dtype, factor=4, n=n)


@pytest.mark.parametrize("dtype", DTYPES)
def test_inv_det_slogdet_all_dtypes(rng, dtype):
    n = 5
    a = random_general(rng, (37,), n, dtype)
    a[5, :, 1] = 0  # exactly singular
    ainv, info = blocksolve.inv(_dev(a), return_info=True)
    assert _is_device_result(ainv, dtype)
    np.testing.assert_array_equal(to_numpy(info), np.where(np.arange(37) == 5, 2, 0))
    ok = np.arange(37) != 5
    assert_close(to_numpy(ainv)[ok], np.linalg.inv(a[ok]), dtype, factor=10, n=n)
    assert_close(to_numpy(ainv)[ok], cupy.linalg.inv(_dev(a[ok])), dtype, factor=10, n=n)
    d = blocksolve.det(_dev(a))
    assert _is_device_result(d, dtype) and to_numpy(d)[5] == 0
    assert_close(d, np.linalg.det(a), dtype, factor=10, n=n)
    sign, logabsdet = blocksolve.slogdet(_dev_column_major(a))
    sign_ref, log_ref = np.linalg.slogdet(a)
    assert _is_device_result(logabsdet, np.finfo(dtype).dtype)
    assert_close(sign, sign_ref, dtype, n=n)
    assert to_numpy(logabsdet)[5] == -np.inf
    assert_close(to_numpy(logabsdet)[ok], log_ref[ok], dtype, n=n)
    assert_close(to_numpy(logabsdet)[ok], cupy.linalg.slogdet(_dev(a[ok]))[1], dtype, n=n)


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_positive_definite(rng, dtype):
    """posv: cho_factor's potrf and cho_solve's potrs in one kernel; cho_solve's numbers."""
    n, k = 6, 2
    a = random_spd(rng, (37,), n, dtype)
    a[9, n - 1, n - 1] = -10.0  # not positive definite
    b = random_matrix(rng, (37, n, k), dtype)
    x, info = blocksolve.solve(_dev(a), _dev(b), assume_a="pos", lower=True, return_info=True)
    assert _is_device_result(x, dtype)
    np.testing.assert_array_equal(to_numpy(info), np.where(np.arange(37) == 9, n, 0))
    ok = np.arange(37) != 9
    assert_close(to_numpy(x)[ok], np.linalg.solve(a[ok], b[ok]), dtype, factor=10, n=n)
    c = blocksolve.cho_factor(_dev(a[ok]), lower=True)
    assert_close(to_numpy(x)[ok], blocksolve.cho_solve(c, _dev(b[ok])), dtype, factor=2, n=n)
    with pytest.raises(
        blocksolve.LinAlgError,
        match=r"solve: 1 matrix .*\(9,\) \(Matrix is "
        r"not positive definite",
    ):
        blocksolve.solve(_dev(a), _dev(b), assume_a="pos")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, n, full", [(6, 4, True), (3, 5, False), (5, 5, False)])
def test_svd_all_dtypes(rng, dtype, m, n, full):
    """gesvd: geqrf, the Jacobi sweeps and unmqr in one kernel; LAPACK's accuracy standard
    (the CPU kernels' checks) and cuSOLVER's singular values."""
    from test_svd_kernels import check_svd, check_values

    a = random_matrix(rng, (37, m, n), dtype)
    u, s, vh = blocksolve.svd(_dev(a), full_matrices=full)
    real = np.finfo(dtype).dtype
    assert _is_device_result(u, dtype) and _is_device_result(s, real)
    result = (to_numpy(s), to_numpy(u), to_numpy(vh), np.zeros(37, np.int32))
    check_svd(result, a, full)
    assert_close(s, cupy.linalg.svd(_dev(a), compute_uv=False), dtype, factor=4, n=max(m, n))
    check_values(to_numpy(blocksolve.svdvals(_dev_column_major(a))), a)


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_svd_at_the_ends_of_the_range(rng, dtype):
    """The CPU kernels' hard 3x3 cases (zero, rank-deficient, repeated, graded, tiny,
    subnormal, huge): each matrix is scaled before cuSolverDx's QR sees it."""
    from test_svd_kernels import _hard_cases, check_svd

    cases = _hard_cases(rng, dtype)
    (u, s, vh), info = blocksolve.svd(
        _dev(np.concatenate(list(cases.values()))), full_matrices=False, return_info=True
    )
    s, u, vh, info = to_numpy(s), to_numpy(u), to_numpy(vh), to_numpy(info)
    assert not info.any()
    at = 0
    for name, x in cases.items():
        part = slice(at, at + len(x))
        at += len(x)
        extra = 4.0 if name in ("huge", "large") else 1.0
        try:
            check_svd((s[part], u[part], vh[part], info[part]), x, False, extra)
        except AssertionError as error:
            raise AssertionError(f"{name}: {error}") from None


def test_svd_failures_pinv_and_rank(rng):
    a = random_matrix(rng, (20, 4, 3), np.complex128)
    a[5, 1, 2] = np.nan
    (u, s, vh), info = blocksolve.svd(_dev(a), return_info=True, errors="nan")
    np.testing.assert_array_equal(to_numpy(info), np.where(np.arange(20) == 5, 1, 0))
    assert np.isnan(to_numpy(s)[5]).all() and np.isfinite(np.delete(to_numpy(s), 5, 0)).all()
    g = random_matrix(rng, (20, 3, 5), np.float64)
    assert_close(blocksolve.pinv(_dev(g)), np.linalg.pinv(g), np.float64, factor=10, n=5)
    g[3, 2] = 0  # rank 2, exactly
    np.testing.assert_array_equal(
        to_numpy(blocksolve.matrix_rank(_dev(g))), np.where(np.arange(20) == 3, 2, 3)
    )


def test_eigh_and_inv_one_matrix_per_block(rng):
    n = 24  # one matrix per block, more threads than rows
    x = random_matrix(rng, (5, n, n), np.float64)
    a = x + x.swapaxes(-1, -2)
    w, v = blocksolve.eigh(_dev(a))
    assert_close(w, np.linalg.eigvalsh(a), np.float64, factor=10, n=n)
    g = random_general(rng, (5,), n, np.complex128)
    assert_close(
        blocksolve.inv(_dev_column_major(g)), np.linalg.inv(g), np.complex128, factor=10, n=n
    )


# --- failures, policies, info ---------------------------------------------------------


def test_failures_and_info_codes(rng):
    a = random_spd(rng, (6,), 4, np.float64)
    a[2, 3, 3] = -100.0
    L, info = blocksolve.cholesky(_dev(a), return_info=True)
    assert _is_device_result(info, np.int32)
    np.testing.assert_array_equal(to_numpy(info), [0, 0, 4, 0, 0, 0])
    with pytest.raises(blocksolve.LinAlgError, match="not positive definite") as e:
        blocksolve.cholesky(_dev(a))
    assert e.value.indices == [(2,)]
    assert np.isnan(to_numpy(blocksolve.cholesky(_dev(a), errors="nan"))[2]).all()

    g = random_general(rng, (50,), 8, np.float64)
    g[7, :, 2] = 0.0
    x, info = blocksolve.solve(_dev(g), _dev(np.ones((50, 8, 3))), return_info=True)
    assert to_numpy(info)[7] > 0 and not np.delete(to_numpy(info), 7).any()

    t = random_general(rng, (13,), 6, np.float64)
    t[4, 5, 5] = 0.0
    x, info = blocksolve.solve_triangular(
        _dev(t), _dev(np.ones((13, 6, 2))), lower=True, return_info=True
    )
    np.testing.assert_array_equal(to_numpy(info), np.where(np.arange(13) == 4, 6, 0))

    d = random_matrix(rng, (20, 8, 4), np.float64)
    d[3, :, 3] = d[3, :, 0]  # rank 3: no failure, NumPy's minimum-norm solution
    d[5, 2, 1] = np.nan  # the one lstsq failure
    b = random_matrix(rng, (20, 8, 2), np.float64)
    (x, residuals, rank, s), info = blocksolve.lstsq(_dev(d), _dev(b), return_info=True)
    np.testing.assert_array_equal(to_numpy(info), np.where(np.arange(20) == 5, 1, 0))
    assert int(to_numpy(rank)[3]) == 3
    assert_close(to_numpy(x)[3], np.linalg.lstsq(d[3], b[3])[0], np.float64, factor=10, n=8)


def test_numpy_inputs_inside_use_device_cuda(rng):
    a = random_spd(rng, (37,), 4, np.float64)
    with blocksolve.use_device("cuda"):
        L = blocksolve.cholesky(a)
    assert isinstance(L, np.ndarray)
    assert_close(L, np.linalg.cholesky(a), np.float64, n=4)


_SPIN = r"""
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""


@pytest.mark.parametrize("named", [False, True], ids=["current-stream", "stream-keyword"])
def test_runs_on_the_callers_stream_without_host_sync(rng, named):
    """On cupy's current stream, or on the one ``stream=`` names with another current:
    the call neither waits for the host nor runs before the work queued on its stream."""
    a0 = random_spd(rng, (37,), 4, np.float64)
    blocksolve.cholesky(_dev(a0), return_info=True)  # warm: compiled and cached
    spin = cupy.RawKernel(_SPIN, "spin")
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        source = _dev(a0)
        stream.synchronize()
        spin((1,), (1,), (np.int64(2_000_000_000),))  # about a second of GPU time
        a = source * 1.0  # produced on `stream` after the spin
    with contextlib.nullcontext() if named else stream:
        start = time.perf_counter()
        L, info = blocksolve.cholesky(a, return_info=True, stream=stream if named else None)
        elapsed = time.perf_counter() - start
    assert not stream.done, "the spin kernel should still be running"
    stream.synchronize()
    assert elapsed < 0.5, f"the call blocked for {elapsed:.2f} s: it synchronised the host"
    # Right only if the kernel waited for `a`, i.e. ran on `stream`.
    assert_close(L, np.linalg.cholesky(a0), np.float64, n=4)
    assert not to_numpy(info).any()


def test_torch_cuda_tensors_round_trip(rng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    a = random_spd(rng, (9,), 4, np.float64)
    t = torch.from_numpy(a).cuda()
    L = blocksolve.cholesky(t)
    assert isinstance(L, torch.Tensor) and L.is_cuda and L.dtype == torch.float64
    assert_close(L.cpu().numpy(), np.linalg.cholesky(a), np.float64, n=4)


# --- the backend itself ------------------------------------------------------------------


def _backend():
    from blocksolve.cuda import gpu_backend

    return gpu_backend()


def _plan_of(backend, routine, dims, dtype, options, layouts):
    from blocksolve._pattern import CallPattern

    pattern = CallPattern.make(routine, dims, dtype, options, list(layouts), backend.target)
    return backend.plan(pattern)


# The small patterns the tests above use: none may take the CPU fallback, and
# the simulator's stand-ins must lay them out exactly as nvmath does.
_SMALL = [
    ("potrf", {"n": 4}, np.complex128, {"lower": True, "clean": True}, "C"),
    ("potrf", {"n": 16}, np.float64, {"lower": False, "clean": True}, "F"),
    ("potrs", {"n": 4, "k": 2}, np.complex64, {"lower": True}, "CC"),
    ("getrf", {"m": 5, "n": 5, "p": 5}, np.float32, {}, "C"),
    ("getrs", {"n": 5, "k": 1}, np.complex128, {"trans": 2}, "CCC"),
    ("getrs", {"n": 5, "k": 1}, np.complex64, {"trans": 1}, "CCC"),  # conj_transposed
    ("gesv", {"n": 8, "k": 3}, np.float64, {}, "CC"),
    (
        "trsm",
        {"n": 6, "k": 2},
        np.complex128,
        {"lower": False, "trans": 2, "unit_diagonal": True},
        "CC",
    ),
    (
        "trsm",
        {"n": 6, "k": 2},
        np.complex64,
        {"lower": True, "trans": 1, "unit_diagonal": False},
        "CC",
    ),
    ("geqrf", {"m": 6, "n": 4}, np.float64, {"mode": "reduced"}, "C"),
    ("geqrf", {"m": 3, "n": 5}, np.complex64, {"mode": "complete"}, "F"),
    ("geqrf", {"m": 5, "n": 3}, np.complex128, {"mode": "raw"}, "C"),
    ("gels", {"m": 8, "n": 4, "k": 2}, np.float64, {}, "CC"),
    ("gels", {"m": 3, "n": 5, "k": 1}, np.complex128, {}, "CC"),
    ("heev", {"n": 4}, np.float64, {"lower": True, "vectors": True}, "C"),
    ("heev", {"n": 5}, np.complex64, {"lower": False, "vectors": False}, "F"),
    ("getri", {"n": 5}, np.complex128, {}, "C"),
    ("getrf_det", {"n": 5}, np.float32, {"log": True}, "F"),
    ("posv", {"n": 6, "k": 2}, np.float64, {"lower": False}, "CC"),
    ("gesvd", {"m": 6, "n": 4, "p": 4}, np.complex64, {"vectors": True, "full": True}, "C"),
    ("gesvd", {"m": 3, "n": 5, "p": 3}, np.float64, {"vectors": True, "full": False}, "F"),
    ("gesvd", {"m": 5, "n": 5, "p": 5}, np.float32, {"vectors": False, "full": False}, "C"),
]

_LAYOUT_ATTRIBUTES = (
    "a_shape",
    "a_strides",
    "a_size",
    "b_shape",
    "b_strides",
    "b_size",
    "lda",
    "ldb",
    "info_shape",
    "info_strides",
    "ipiv_shape",
    "ipiv_strides",
    "ipiv_size",
    "tau_shape",
    "tau_strides",
    "tau_size",
    "c_shape",
    "c_strides",
    "c_size",
    "x_shape",
    "bx_strides",
    "bx_size",
    "m",
    "n",
    "k",
    "a_arrangement",
    "b_arrangement",
    "batches_per_block",
    "block_dim",
    "workspace_size",
    "lambda_shape",
    "lambda_size",
)


@pytest.mark.parametrize("case", _SMALL, ids=lambda c: f"{c[0]}-{c[2].__name__}")
def test_small_patterns_use_the_kernel(case):
    plan = _plan_of(_backend(), *case)
    assert plan.fallback is None, plan.fallback


@pytest.mark.parametrize("case", _SMALL, ids=lambda c: f"{c[0]}-{c[2].__name__}")
def test_simulator_stand_ins_match_nvmath_layouts(case):
    import _cuda_simulated as _simulated

    from blocksolve._pattern import CallPattern
    from blocksolve.cuda.kernels import _descriptors

    routine, dims, dtype, options, layouts = case
    pattern = CallPattern.make(routine, dims, dtype, options, list(layouts), _backend().target)
    traits = _descriptors.resolve_traits(pattern)
    real = _descriptors.build(pattern, traits)
    stand_in = _descriptors.build(pattern, traits, _simulated)
    assert real.keys() == stand_in.keys()
    for role, descriptor in real.items():
        for name in _LAYOUT_ATTRIBUTES:
            if not hasattr(descriptor, name):
                continue
            want = getattr(descriptor, name)
            got = getattr(stand_in[role], name)
            want, got = (want(), got()) if callable(want) else (want, got)
            assert tuple(np.atleast_1d(got)) == tuple(np.atleast_1d(want)), (
                f"{role}.{name}: stand-in {got}, nvmath {want}"
            )


def test_a_new_process_launches_the_cached_cubin_without_compiling(rng):
    """The first thing a GPU run checks: the cached cubin, launched through cupy with the
    argument layout blocksolve packs, computes what NumPy does -- in a process that never
    imports numba.cuda or nvmath (a compile there would import both)."""
    a = random_spd(rng, (3,), 4, np.float64)
    blocksolve.cholesky(_dev(a))  # this process compiled (or loaded) the kernel
    code = (
        "import sys, numpy as np, cupy, blocksolve\n"
        "rng = np.random.default_rng(1)\n"
        "for batch in (1, 31, 32, 33, 1000):\n"
        "    x = rng.standard_normal((batch, 4, 4))\n"
        "    a = x @ x.transpose(0, 2, 1) + 4 * np.eye(4)\n"
        "    if batch > 2:\n"
        "        a[2] = -np.eye(4)\n"
        "    L, info = blocksolve.cholesky(cupy.asarray(a), return_info=True)\n"
        "    L, info = L.get(), info.get()\n"
        "    ok = info == 0\n"
        "    assert (np.flatnonzero(~ok) == ([2] if batch > 2 else [])).all(), info\n"
        "    assert np.allclose(L[ok], np.linalg.cholesky(a[ok]), rtol=1e-12, atol=1e-12)\n"
        "print(sorted(m for m in ('numba.cuda', 'nvmath.device') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", result.stdout


def test_cubin_shared_memory_is_what_the_driver_reports(rng):
    """The static shared memory read from the cubin's ELF is the driver's own figure."""
    backend = _backend()
    plan = _plan_of(backend, "potrf", {"n": 4}, np.float64, {"lower": True, "clean": True}, "C")
    function = plan.kernel.function(cupy.cuda.Device().id)
    driver = cupy.cuda.driver
    static = driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function.ptr)
    assert static == plan.kernel.static_shared_bytes
    assert blocksolve.cache_info()["disk"]["cuda"]["files"] >= 1
