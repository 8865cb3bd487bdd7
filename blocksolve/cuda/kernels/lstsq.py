"""Least squares on the GPU: ``gels`` (lstsq), for every rank.

The kernel factors ``A = QR`` (M >= N) or ``A^H = QR`` (M < N) and applies
``Q``: it leaves the ``min(M, N)``-square triangular factor ``T`` and ``Q^H b``
(or the first M columns of ``Q``).  cuSolverDx has no SVD, so the host step
(:func:`gels_finish`) takes the pseudo-inverse of ``T`` (or ``T^H``) from
``xp.linalg.svd`` -- with cupy, cuSOLVER's batched Jacobi SVD (gesvdj) for
matrices up to 32 x 32 and a loop of gesvd above (cupy's own dispatch) -- and
gives NumPy's minimum-norm solution and rank (see :mod:`blocksolve.cpu.lstsq`
for the algebra).
"""

from __future__ import annotations

import numpy as np

from ..._numerics import lstsq_cutoff
from ._descriptors import arrangement, transpose_mode
from ._host import no_failures, real_dtype


def gels_descriptors(api, pattern, common):
    """QR factors of ``A`` (M >= N) or ``A^H`` (M < N), and a multiplier applying ``Q``.

    M >= N: ``Q^H`` applied to ``b`` (in ``b``'s arrangement).  M < N: ``Q``
    applied to an N x M identity block (row-major), which gives the first M
    columns of ``Q``.  ``A^H`` is read element by element, so its shared copy
    takes the arrangement in which consecutive threads read consecutive
    addresses of ``A``.  The multiplier reads the factored matrix in place:
    same ``lda``, batches per block and block shape.
    """
    m, n, k = pattern.dim("m"), pattern.dim("n"), pattern.dim("k")
    wide = m < n
    arr_a = arrangement(pattern.layouts[0])
    if wide:
        arr_a = "row_major" if arr_a == "col_major" else "col_major"
    factorize = api.QRFactorize(size=(max(m, n), min(m, n)), arrangement=arr_a, **common)
    pinned = {
        **common,
        "batches_per_block": factorize.batches_per_block,
        "block_dim": factorize.block_dim,
    }
    if wide:
        multiply = api.QRMultiply(
            size=(n, m, m),
            side="left",
            transpose_mode="non_transposed",
            arrangement=(arr_a, "row_major"),
            leading_dimensions=(factorize.lda, m),
            **pinned,
        )
    else:
        arr_b = arrangement(pattern.layouts[1])
        multiply = api.QRMultiply(
            size=(m, k, n),
            side="left",
            transpose_mode=transpose_mode(2, pattern.np_dtype.kind == "c"),
            arrangement=(arr_a, arr_b),
            leading_dimensions=(factorize.lda, m if arr_b == "col_major" else k),
            **pinned,
        )
    return {"factorize": factorize, "multiply": multiply}


def make_gels_kernel(descriptors, pattern):
    """The ``p x p`` triangular factor (``p = min(M, N)``) and ``Q^H b`` (M >= N; M x K)
    or the first M columns of ``Q`` (M < N; N x M), and ``info = 1`` where ``A`` holds
    an inf or NaN."""
    from . import _skeleton as kernel

    f, q, dtype = descriptors["factorize"], descriptors["multiply"], pattern.np_dtype
    m, n, bpb = pattern.dim("m"), pattern.dim("n"), f.batches_per_block
    wide, p = m < n, min(m, n)
    a_layout = kernel.layout(f.a_shape, f.a_strides(), f.a_arrangement, dtype)
    c_layout = kernel.layout(q.c_shape, q.c_strides(), q.b_arrangement, dtype)
    triangle_layout = kernel.layout((bpb, p, p), f.a_strides(), f.a_arrangement, dtype)

    @kernel.device
    def load(shared, first, count, a, b, triangle, second, info):
        if wide:  # A^H = QR; the first M columns of Q from Q applied to I
            kernel.load_adjoint(a, first, count, shared.a, a_layout)
            kernel.fill_identity(shared.c, c_layout)
        else:  # A = QR; Q^H b
            kernel.load_matrix(a, first, count, shared.a, a_layout, m)
            kernel.load_matrix(b, first, count, shared.c, c_layout, m)
        kernel.nonfinite_info(a, info, first, count, m, n)

    @kernel.device
    def factorize(shared):
        f.factorize(shared.a, shared.tau)

    @kernel.device
    def multiply(shared):
        q.multiply(shared.a, shared.tau, shared.c)

    @kernel.device
    def store(shared, first, count, a, b, triangle, second, info):
        kernel.store_triangle(
            shared.a, triangle, triangle, first, count, triangle_layout, False, True
        )
        kernel.store_matrix(shared.c, second, first, count, c_layout)

    sizes = {"a": f.a_size(), "tau": f.tau_size, "c": q.c_size()}
    program = kernel.block_program(f, dtype, load, [factorize, multiply], store, **sizes)
    run = program.run

    def gels_kernel(a, b, triangle, second, info, batch):
        run(batch, a, b, triangle, second, info)

    return program.spec(gels_kernel, [((p, p), dtype), (tuple(q.c_shape[1:]), dtype)])


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


def gels_finish(outputs, info, xp, pattern, runtime, operands):
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
    real = real_dtype(dtype)
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


def gels_empty(pattern, operands, xp, runtime):
    """An empty core dimension: ``x = 0``, rank 0, ``residuals = |b|^2`` (M > N)."""
    a, b = operands
    m, n, k = pattern.dim("m"), pattern.dim("n"), pattern.dim("k")
    batch, real = a.shape[0], real_dtype(a.dtype)
    x = xp.zeros((batch, n, k), a.dtype)
    if m > n:  # x = 0 when n == 0; k == 0 leaves nothing to sum
        residuals = (xp.abs(b) ** 2).sum(axis=1).astype(real)
    else:
        residuals = xp.zeros((batch, 0), real)
    rank = no_failures(a, xp)
    return x, residuals, rank, xp.zeros((batch, 0), real), no_failures(a, xp)
