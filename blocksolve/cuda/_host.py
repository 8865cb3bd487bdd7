"""Host-side array work of the CUDA backend: no kernels, only ``xp`` calls.

``xp`` is cupy on a GPU (the work stays on the device, on the current
stream) or numpy under numba's CUDA simulator.  Two jobs:

- :func:`zero_sized`: results for problems with an empty core dimension,
  computed without launching cuSolverDx (which has no zero-sized matrices),
  as NumPy/SciPy give them (``det`` of a 0 x 0 matrix is 1);
- :func:`finish_gels`: lstsq after the gels kernel, for every rank.  The
  kernel leaves the ``min(M, N)``-square triangular factor ``T`` of ``A =
  QR`` (or of ``A^H = QR`` when M < N) and ``Q^H b`` (or the first M columns
  of ``Q``).  cuSolverDx has no SVD, so the pseudo-inverse of ``M = T`` (or
  ``T^H``) comes from ``xp.linalg.svd`` -- with cupy, cuSOLVER's batched
  Jacobi SVD (gesvdj) for matrices up to 32 x 32 and a loop of gesvd above
  (cupy's own dispatch) -- and gives NumPy's minimum-norm solution and rank
  (see :mod:`blocksolve.cpu.lstsq` for the algebra).
"""

from __future__ import annotations

import numpy as np

from .._ops import lstsq_cutoff

__all__ = ["zero_sized", "finish_gels"]


def _real(dtype):
    return np.finfo(dtype).dtype


def _adjoint(x, xp):
    return xp.conj(xp.swapaxes(x, -1, -2))


def _ldexp(x, exponents, xp):
    """``x * 2**exponents`` per matrix (exponents of shape ``(batch,)``), exactly."""
    e = exponents.astype(np.int32).reshape((-1,) + (1,) * (x.ndim - 1))
    if x.dtype.kind == "c":
        return (xp.ldexp(x.real, e) + 1j * xp.ldexp(x.imag, e)).astype(x.dtype, copy=False)
    return xp.ldexp(x, e).astype(x.dtype, copy=False)


def _unit_scale_exponents(m, xp):
    """``e`` per matrix with ``m * 2**-e`` peaking in ``[0.5, 1)`` (0 for zero or non-finite)."""
    peak = xp.maximum(xp.abs(m.real), xp.abs(m.imag)).max(axis=(1, 2))
    usable = (peak > 0) & xp.isfinite(peak)
    return xp.where(usable, xp.frexp(xp.where(usable, peak, 1))[1], 0).astype(np.int32)


def finish_gels(outputs, info, xp, pattern, runtime, operands):
    """``(x, residuals, rank, s, info)`` from the gels kernel's outputs.

    ``outputs`` are the triangle ``T`` (batch, p, p) and ``Q^H b`` (batch, M,
    K) when M >= N, or the first M columns of ``Q`` (batch, N, M) when
    M < N; ``info`` is 1 where ``A`` holds an inf or NaN (the one failure).
    ``M = T`` (or ``T^H``) is scaled by a power of two per matrix before its
    SVD, so that the rank is right at any scale.
    """
    triangle, second = outputs
    a, b = operands
    m, n = pattern.dim("m"), pattern.dim("n")
    wide = m < n
    dtype = triangle.dtype
    real = _real(dtype)
    p = min(m, n)
    # The small SVD in double precision, also for single-precision input (as on the CPU).
    factor = (_adjoint(triangle, xp) if wide else triangle).astype(
        np.result_type(dtype, np.float64)
    )
    bad = (info != 0) | ~xp.isfinite(factor).all(axis=(1, 2))
    eye = xp.eye(p, dtype=factor.dtype)
    exponents = _unit_scale_exponents(factor, xp)
    scaled = xp.where(bad[:, None, None], eye, _ldexp(factor, -exponents, xp))
    u, s, vh = xp.linalg.svd(scaled)
    cutoff = lstsq_cutoff(runtime.get("rcond"), m, n, dtype) * s[:, :1]
    keep = s > cutoff
    rank = xp.where(bad, 0, keep.sum(axis=1)).astype(np.int32)
    y = b if wide else second[:, :n, :]
    uy = _adjoint(u, xp) @ y
    inverse = xp.where(keep, 1 / xp.where(keep, s, 1), 0)
    top = _ldexp(_adjoint(vh, xp) @ (uy * inverse[:, :, None]), -exponents, xp)
    x = second @ top if wide else top
    if m > n:  # |Q^H b below row n|^2, plus what the cut-off singular values leave
        dropped = xp.where(keep[:, :, None], 0, xp.abs(uy) ** 2).sum(axis=1)
        residuals = (xp.abs(second[:, n:, :]) ** 2).sum(axis=1) + dropped
    else:
        residuals = xp.zeros((a.shape[0], 0), real)
    nan = xp.asarray(np.nan, dtype=real)
    x = xp.where(bad[:, None, None], xp.asarray(np.nan, dtype=dtype), x)
    residuals = xp.where(bad[:, None], nan, residuals.astype(real, copy=False))
    s = xp.where(bad[:, None], nan, _ldexp(s, exponents, xp).astype(real))
    return x.astype(dtype, copy=False), residuals, rank, s, (info != 0).astype(np.int32)


def _first_zero_diagonal(a, xp):
    """1-based index of the first exactly zero diagonal entry per matrix, else 0."""
    zero = xp.diagonal(a, axis1=1, axis2=2) == 0
    return xp.where(zero.any(axis=1), zero.argmax(axis=1) + 1, 0).astype(np.int32)


def _solve_without_work(pattern, operands, xp):
    """potrs/getrs/trsm/gesv/posv with ``n == 0`` or ``k == 0``: x is b, info from A's
    diagonal (posv: none, SciPy does not factor for empty right-hand sides)."""
    a, b = operands[0], operands[-1]
    checks_diagonal = pattern.routine in ("potrs", "getrs") or (
        pattern.routine == "trsm" and not pattern.option("unit_diagonal")
    )
    if checks_diagonal and pattern.dim("n"):
        info = _first_zero_diagonal(a, xp)
    else:
        info = xp.zeros(a.shape[0], np.int32)
    return b.copy(), info


def _qr_empty(pattern, a, xp):
    from .._ops import QR_MODES, resolve_dims

    dims = resolve_dims(QR_MODES[pattern.option("mode")], dict(pattern.dims))
    outputs = []
    for spec in QR_MODES[pattern.option("mode")].outputs:
        out = xp.zeros((a.shape[0], *(dims[s] for s in spec.core)), a.dtype)
        if spec.name == "Q":  # 'complete' mode with n == 0: Q is the identity
            out[...] = xp.eye(out.shape[-2], out.shape[-1], dtype=a.dtype)
        outputs.append(out)
    return (*outputs, xp.zeros(a.shape[0], np.int32))


def _lstsq_degenerate(pattern, a, b, xp, rcond):
    """lstsq with an empty core dimension: ``x = 0``, rank 0, ``residuals = |b|^2`` (M > N)."""
    m, n, k = pattern.dim("m"), pattern.dim("n"), pattern.dim("k")
    batch, real = a.shape[0], _real(a.dtype)
    x = xp.zeros((batch, n, k), a.dtype)
    if m > n:  # x = 0 when n == 0; k == 0 leaves nothing to sum
        residuals = (xp.abs(b) ** 2).sum(axis=1).astype(real)
    else:
        residuals = xp.zeros((batch, 0), real)
    zeros = xp.zeros(batch, np.int32)
    return x, residuals, zeros, xp.zeros((batch, 0), real), zeros.copy()


def _empty_square_results(pattern, a, xp):
    """NumPy's results for 0 x 0 matrices: no eigenvalues, an empty inverse, det 1."""
    batch, real = a.shape[0], _real(a.dtype)
    if pattern.routine == "heev":
        w = xp.zeros((batch, 0), real)
        return (w, a.copy()) if pattern.option("vectors") else (w,)
    if pattern.routine == "getri":
        return (a.copy(),)
    ones = xp.ones(batch, a.dtype)  # getrf_det: the empty product
    return (ones, xp.zeros(batch, real)) if pattern.option("log") else (ones,)


def zero_sized(pattern, operands, xp, runtime):
    """``(*outputs, info)`` when a core dimension is empty, else ``None``.

    Matches NumPy/SciPy: empty factors, ``Q = I`` for a complete QR of an
    ``(m, 0)`` matrix, ``x = 0`` and ``residuals = ||b||^2`` for lstsq with
    ``n == 0``, and -- when only the right-hand sides are empty -- the
    singularity checks of the factor (by :func:`_first_zero_diagonal`; gesv
    needs a factorisation and is handled by the plan).
    """
    from .._ops import has_empty_input, op_for

    dims = dict(pattern.dims)
    routine = pattern.routine
    if not has_empty_input(op_for(routine, pattern.options), dims):
        return None
    batch = operands[0].shape[0]
    if routine in ("potrf", "getrf"):
        a = operands[0]
        outputs = (a.copy(),) if routine == "potrf" else (a.copy(), xp.zeros((batch, 0), np.int32))
        return (*outputs, xp.zeros(batch, np.int32))
    if routine in ("potrs", "getrs", "trsm", "posv") or (routine == "gesv" and dims["n"] == 0):
        return _solve_without_work(pattern, operands, xp)
    if routine in ("heev", "getri", "getrf_det"):  # 0 x 0 matrices
        return (*_empty_square_results(pattern, operands[0], xp), xp.zeros(batch, np.int32))
    if routine == "geqrf":
        return _qr_empty(pattern, operands[0], xp)
    if routine == "gels":
        return _lstsq_degenerate(pattern, *operands, xp, runtime.get("rcond"))
    return None
