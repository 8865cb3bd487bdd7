"""Least squares on the GPU: ``gels`` (lstsq), for every rank.

The kernel scales each matrix ``A`` and right-hand side ``b`` by a power of
two (exactly: ``A' = 2**-ea A`` and ``b' = 2**-eb b`` with largest entries in
``[0.5, 1)``), factors ``A' = QR`` (M >= N) or ``A'^H = QR`` (M < N) and
applies ``Q``: it leaves the ``p x p`` triangular factor ``T`` (``p = min(M,
N)``), ``Q^H b'`` (or the first M columns of ``Q``) and the exponents.  The
pseudo-inverse of ``T`` comes from the library's own SVD kernel
(:mod:`blocksolve.cuda.kernels.svd`, ``gesvd`` of ``p x p`` in double precision, also
for single-precision input, as on the CPU), planned beside the kernel
(:class:`GelsPlan`), and a few batched array operations on the device give
NumPy's minimum-norm solution and rank (see :mod:`blocksolve.cpu.kernels.lstsq` for
the algebra).  ``x = 2**(eb - ea) x'``, the residuals ``4**eb`` times those
of the scaled problem and the singular values ``2**ea`` times those of
``T``: every intermediate stays in range, so ``x`` overflows only where it is
not representable.  Where the SVD kernel of ``p x p`` does not fit the
device, that step is ``xp.linalg.svd`` (cuSOLVER, through cupy).
"""

from __future__ import annotations

import math

import numpy as np

from ..._numerics import column_floor, lstsq_cutoff, scale_target, tolerance
from ..._op import op_for, resolve_dims
from ..._pattern import CallPattern
from ._descriptors import arrangement, transpose_mode
from ._host import no_failures, real_dtype
from .svd import least_shared_bytes


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
    """The scaled problem's ``p x p`` triangular factor ``T`` (``p = min(M, N)``) and ``Q^H
    b'`` (M >= N; M x K) or the first M columns of ``Q`` (M < N; N x M); the exponents
    ``(ea, eb)`` of each matrix's scaling; and ``info = 1`` where ``A`` holds an inf or NaN
    (that ``A`` is replaced by the identity inside, so nothing non-finite reaches the
    solver)."""
    from . import _jacobi
    from . import _skeleton as kernel

    f, q, dtype = descriptors["factorize"], descriptors["multiply"], pattern.np_dtype
    m, n, k = pattern.dim("m"), pattern.dim("n"), pattern.dim("k")
    bpb = f.batches_per_block
    wide, p = m < n, min(m, n)
    value, real_one = np.dtype(dtype).type, real_dtype(dtype).type(1)
    zero, one, real_zero = value(0), value(1), real_dtype(dtype).type(0)
    a_layout = kernel.layout(f.a_shape, f.a_strides(), f.a_arrangement, dtype)
    c_layout = kernel.layout(q.c_shape, q.c_strides(), q.b_arrangement, dtype)
    triangle_layout = kernel.layout((bpb, p, p), f.a_strides(), f.a_arrangement, dtype)
    rows, cols = f.a_shape[1:]
    a0, a1, a2 = f.a_strides()
    c0, c1, c2 = q.c_strides()
    largest_a = _jacobi.largest_entries(dtype, bpb, (rows, cols), (a0, a1, a2))
    largest_b = _jacobi.largest_entries(dtype, bpb, (m, k), (c0, c1, c2))
    # eigenvalues: [largest entry of A | of b] per slot; ipiv: [ea | eb]; info: [A has an
    # inf or NaN | b has one (not a failure)].
    sizes = {
        "a": f.a_size(),
        "tau": f.tau_size,
        "c": q.c_size(),
        "eigenvalues": 2 * bpb,
        "ipiv": 2 * bpb,
        "info": 2 * bpb,
    }

    @kernel.device
    def exponent(peak):
        """``e`` with ``peak * 2**-e`` in ``[0.5, 1)``; 0 for a zero peak."""
        return math.frexp(peak)[1] if peak > 0 else 0

    @kernel.device
    def times_pow2(x, e):
        """``x * 2**e``, exactly (two factors: ``2**e`` itself may be out of range)."""
        half = e // 2
        return x * math.ldexp(real_one, int(half)) * math.ldexp(real_one, int(e - half))

    @kernel.device
    def load(shared, first, count, a, b, triangle, second, exponents, info):
        """The block's matrices into shared memory, and each ``b``'s largest entry where
        ``b`` stays in global memory (M < N); the other largest entries zero."""
        if wide:  # A^H = QR; the first M columns of Q from Q applied to I
            kernel.load_adjoint(a, first, count, shared.a, a_layout)
            kernel.fill_identity(shared.c, c_layout)
        else:  # A = QR; Q^H b
            kernel.load_matrix(a, first, count, shared.a, a_layout, m)
            kernel.load_matrix(b, first, count, shared.c, c_layout, m)
        for s in range(kernel.thread_rank(), bpb, kernel.block_threads()):
            shared.eigenvalues[s] = real_zero
            in_global = wide and s < count
            shared.eigenvalues[bpb + s] = (
                kernel.peak_of(b, first + s, real_zero) if in_global else real_zero
            )
            shared.info[s] = 0
            shared.info[bpb + s] = 0

    @kernel.device
    def measure(shared):
        """The largest entry of each ``A`` (and ``b`` in shared memory), and which ``A``
        hold an inf or NaN."""
        largest_a(shared.a, shared.eigenvalues[0:bpb], shared.info[0:bpb])
        if not wide:
            largest_b(shared.c, shared.eigenvalues[bpb : 2 * bpb], shared.info[bpb : 2 * bpb])

    @kernel.device
    def scale(shared):
        """``A *= 2**-ea``, ``b *= 2**-eb`` (M >= N: in ``c``); an ``A`` with an inf or NaN
        becomes the identity."""
        tid, threads = kernel.thread_rank(), kernel.block_threads()
        peaks = shared.eigenvalues
        for idx in range(tid, bpb * rows * cols, threads):
            s, i, j = idx // (rows * cols), (idx // cols) % rows, idx % cols
            at = s * a0 + i * a1 + j * a2
            if shared.info[s]:
                shared.a[at] = one if i == j else zero
            else:
                shared.a[at] = times_pow2(value(shared.a[at]), -exponent(peaks[s]))
        if not wide:
            for idx in range(tid, bpb * m * k, threads):
                s, i, j = idx // (m * k), (idx // k) % m, idx % k
                at = s * c0 + i * c1 + j * c2
                shared.c[at] = times_pow2(value(shared.c[at]), -exponent(peaks[bpb + s]))
        for s in range(tid, bpb, threads):
            shared.ipiv[s] = 0 if shared.info[s] else exponent(peaks[s])
            shared.ipiv[bpb + s] = exponent(peaks[bpb + s])

    @kernel.device
    def factorize(shared):
        f.factorize(shared.a, shared.tau)

    @kernel.device
    def multiply(shared):
        q.multiply(shared.a, shared.tau, shared.c)

    @kernel.device
    def store(shared, first, count, a, b, triangle, second, exponents, info):
        kernel.store_triangle(
            shared.a, triangle, triangle, first, count, triangle_layout, False, True
        )
        kernel.store_matrix(shared.c, second, first, count, c_layout)
        kernel.store_vectors(shared.ipiv, exponents, first, count, (bpb, 2), (1, bpb))
        kernel.store_info(shared.info, info, first, count)

    steps = [measure, scale, factorize, multiply]
    program = kernel.block_program(f, dtype, load, steps, store, **sizes)
    run = program.run

    def gels_kernel(a, b, triangle, second, exponents, info, batch):
        run(batch, a, b, triangle, second, exponents, info)

    return program.spec(
        gels_kernel,
        [((p, p), dtype), (tuple(q.c_shape[1:]), dtype), ((2,), np.int32)],
    )


def _adjoint(x, xp):
    return xp.conj(xp.swapaxes(x, -1, -2))


def _ldexp(x, exponents, xp):
    """``x * 2**exponents`` per matrix (exponents of shape ``(batch,)``), exactly (real and
    imaginary parts apart: a complex product would turn an infinite part into NaN)."""
    e = exponents.astype(np.int32).reshape((-1,) + (1,) * (x.ndim - 1))
    if x.dtype.kind != "c":
        return xp.ldexp(x, e)
    out = xp.empty_like(x)
    out.real[...] = xp.ldexp(x.real, e)
    out.imag[...] = xp.ldexp(x.imag, e)
    return out


def _pseudo_inverse_pattern(pattern):
    """The SVD of the ``p x p`` triangle: ``gesvd`` with (reduced) singular vectors, in
    double precision for every dtype, C-ordered -- the pattern ``svd`` of such matrices
    makes, so the two share a kernel."""
    p = min(pattern.dim("m"), pattern.dim("n"))
    options = {"vectors": True, "full": False}
    dims = resolve_dims(op_for("gesvd", options), {"m": p, "n": p})
    dtype = np.result_type(pattern.np_dtype, np.float64)
    return CallPattern.make("gesvd", dims, dtype, options, ("C",), pattern.target)


def _resolution(p):
    """Smallest ``s[j] / s[0]`` the ``p x p`` SVD kernel resolves (double precision).

    It completes instead of normalising the columns whose squared norm ends below
    its column floor after scaling the matrix to a largest entry in ``[2**(target -
    1), 2**target)`` (:mod:`blocksolve.cuda.kernels.svd`, the CPU kernels' rules); since
    ``s[0]`` is at least that largest entry, a singular value above this fraction
    of ``s[0]`` is never such a column (about 1e-144).  Below it a singular value
    is never kept, whatever ``rcond``, as the CPU kernels do below theirs.
    """
    real = np.dtype(np.float64)
    floor = column_floor(real, tolerance(real, p))
    return math.sqrt(floor) * 2.0 ** (1 - scale_target(real, p, p))


class GelsPlan:
    """``lstsq``: the gels kernel, then the pseudo-inverse of its triangle.

    Attributes
    ----------
    pattern : CallPattern
    factor : KernelPlan
        The gels kernel's plan (its outputs unfinished).
    svd : KernelPlan or FallbackPlan
        The plan of :func:`_pseudo_inverse_pattern`; where it is not a kernel
        (too large for the device), the SVD is ``xp.linalg.svd`` instead (the
        data stays on the device).
    timings : dict of str to float
        Both plans' planning seconds, added per step.
    """

    fallback = None

    def __init__(self, factor, svd):
        self.pattern = factor.pattern
        self.factor = factor
        self.svd = svd
        self.timings = {
            step: factor.timings.get(step, 0.0) + svd.timings.get(step, 0.0)
            for step in {**factor.timings, **svd.timings}
        }

    @property
    def parts(self):
        """The plans it runs: the gels kernel's, then the SVD's."""
        return (self.factor, self.svd)

    @property
    def kernel(self):
        return self.factor.kernel

    @property
    def descriptors(self):
        return self.factor.descriptors

    def run(self, operands, xp, runtime):
        *outputs, info = self.factor.run(operands, xp, runtime)
        return _gels_finish(outputs, info, xp, self.pattern, runtime, operands, self.svd)


def gels_plan(pattern, build):
    """:class:`GelsPlan` where the pattern has its kernel (else its own plan: empty
    problems, or the CPU fallback for all of it).

    An SVD kernel that cannot fit the device's shared memory, by a bound from its
    pattern alone, is not built (building its descriptors would import nvmath in
    every process that plans the pattern).
    """
    factor = build(pattern)
    if getattr(factor, "kernel", None) is None:  # not a kernel: empty, or the CPU fallback
        return factor
    svd_pattern = _pseudo_inverse_pattern(pattern)
    needed, limit = least_shared_bytes(svd_pattern), build.shared_limit
    if limit is not None and needed > limit:
        reason = (
            f"needs at least {needed} bytes of shared memory per block; the device allows {limit}"
        )
        return GelsPlan(factor, build.fallback(svd_pattern, reason))
    return GelsPlan(factor, build(svd_pattern))


def _small_svd(triangle, xp, svd):
    """``(u, s, vh)`` of each ``p x p`` triangle, in double precision."""
    factor = triangle.astype(np.result_type(triangle.dtype, np.float64), copy=False)
    if svd.fallback is None:
        u, s, vh, _ = svd.run((factor,), xp, {})  # no failure: every factor is finite
        return u, s, vh
    return xp.linalg.svd(factor)


def _gels_finish(outputs, info, xp, pattern, runtime, operands, svd):
    """``(x, residuals, rank, s, info)`` from the gels kernel's outputs.

    ``outputs`` are the triangle ``T`` (batch, p, p), ``Q^H b'`` (batch, M, K)
    when M >= N or the first M columns of ``Q`` (batch, N, M) when M < N, and
    the exponents ``(ea, eb)`` (batch, 2) of the scaled ``A' = 2**-ea A``, ``b' =
    2**-eb b``; ``info`` is 1 where ``A`` holds an inf or NaN (the one failure).
    With ``T = U S V^H`` (the plan ``svd``): ``A'^+ = V S^+ U^H Q^H`` (M >= N) or
    ``Q U S^+ V^H`` (M < N, ``A' = T^H Q^H``), over the singular values above
    the cut-off; the scaled problem's results are scaled back, in double
    precision, before they take the input's precision.
    """
    triangle, second, exponents = outputs
    a, b = operands
    m, n = pattern.dim("m"), pattern.dim("n")
    wide = m < n
    dtype = triangle.dtype
    real = real_dtype(dtype)
    bad = info != 0
    ea, eb = exponents[:, 0], exponents[:, 1]
    u, s, vh = _small_svd(triangle, xp, svd)
    relative = max(lstsq_cutoff(runtime.get("rcond"), m, n, dtype), _resolution(min(m, n)))
    keep = s > relative * s[:, :1]
    rank = xp.where(bad, 0, keep.sum(axis=1)).astype(np.int32)
    into, out_of = (vh, u) if wide else (_adjoint(u, xp), _adjoint(vh, xp))
    y = _ldexp(b, -eb, xp) if wide else second[:, :n, :]
    uy = into @ y
    inverse = xp.where(keep, 1 / xp.where(keep, s, 1), 0)
    top = out_of @ (uy * inverse[:, :, None])
    x = _ldexp(second @ top if wide else top, eb - ea, xp)
    if m > n:  # |Q^H b' below row n|^2, plus what the cut-off singular values leave
        dropped = xp.where(keep[:, :, None], 0, xp.abs(uy) ** 2).sum(axis=1)
        residuals = _ldexp((xp.abs(second[:, n:, :]) ** 2).sum(axis=1) + dropped, 2 * eb, xp)
    else:
        residuals = xp.zeros((a.shape[0], 0), real)
    nan = xp.asarray(np.nan, dtype=real)
    x = xp.where(bad[:, None, None], xp.asarray(np.nan, dtype=dtype), x.astype(dtype))
    residuals = xp.where(bad[:, None], nan, residuals.astype(real, copy=False))
    s = xp.where(bad[:, None], nan, _ldexp(s, ea, xp).astype(real))
    return x, residuals, rank, s, (info != 0).astype(np.int32)


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
