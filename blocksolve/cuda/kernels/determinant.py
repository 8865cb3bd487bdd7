"""Determinants on the GPU: ``getrf_det`` (det, and slogdet with option ``log``) from
``lu_factor``'s factorisation."""

from __future__ import annotations

import math

import numpy as np

from ._host import no_failures, real_dtype
from .lu import getrf_descriptors


def getrf_det_descriptors(api, pattern, common):
    """``lu_factor``'s factorisation, described as it is (its generated code is shared)."""
    return getrf_descriptors(api, pattern, common)


def _slogdet_device(is_complex):
    """The device function ``slogdet_of`` for one kind of pivot (real or complex).

    Each kind gets its own, chosen when the kernel is built: shared memory
    holds complex numbers as nvmath's vector type, on which the real kind's
    comparison does not type.
    """
    from . import _skeleton as kernel

    @kernel.device
    def times_real_sign(sign, u, size):
        """``sign`` times the sign of a real pivot: ±1, also when ``u`` overflowed to ±inf
        (where ``u/|u|`` is NaN and NumPy's sign is ±1)."""
        return -sign if u < 0 else sign

    @kernel.device
    def times_complex_phase(sign, u, size):
        """``sign`` times the phase ``u/|u|`` of a complex pivot (NaN when ``u`` is
        infinite or NaN, as in NumPy); a zero pivot leaves it (the matrix is singular:
        info > 0)."""
        return sign * (u / size) if size != 0 else sign

    times_pivot_sign = times_complex_phase if is_complex else times_real_sign

    @kernel.device
    def slogdet_of(sa, sipiv, s, n, a_strides, ipiv_strides, one, real_zero, minus_inf):
        """``(sign, logabsdet)`` of slot ``s`` from getrf's factors, by NumPy's rule: the
        parity of the row interchanges (1-based ``ipiv``) times the signs (phases) of
        ``U``'s diagonal, and the sum of the logs of their magnitudes (NaN from a NaN
        pivot; a zero pivot means info > 0, which the caller reports itself)."""
        sign = one
        total = real_zero
        for i in range(n):
            u = sa[s * a_strides[0] + i * a_strides[1] + i * a_strides[2]]
            size = abs(u)
            sign = times_pivot_sign(sign, u, size)
            # The simulator's math.log(0) raises where CUDA's returns -inf.
            total += math.log(size) if size != 0 else minus_inf
            if sipiv[s * ipiv_strides[0] + i * ipiv_strides[1]] != i + 1:
                sign = -sign
        return sign, total

    return slogdet_of


def make_getrf_det_kernel(descriptors, pattern):
    """``det`` (or ``(sign, logabsdet)``) from getrf's diagonal and pivots; 0 (or ``(0,
    -inf)``) for an exactly singular matrix, whose info stays 0 as in NumPy."""
    from . import _skeleton as kernel

    d, dtype = descriptors["solver"], pattern.np_dtype
    n, real = d.n, real_dtype(dtype)
    a_layout = kernel.layout(d.a_shape, d.a_strides(), d.a_arrangement, dtype)
    a_strides, ipiv_strides = d.a_strides(), d.ipiv_strides
    one, zero = dtype.type(1), dtype.type(0)
    real_zero, minus_inf = real.type(0), real.type(-np.inf)
    slogdet_of = _slogdet_device(dtype.kind == "c")

    @kernel.device
    def load(shared, first, count, a, *results):
        kernel.load_matrix(a, first, count, shared.a, a_layout, n)

    @kernel.device
    def factorize(shared):
        d.factorize(shared.a, shared.ipiv, shared.info)

    @kernel.device
    def store_slogdet(shared, first, count, a, sign, logabsdet, info):
        for s in range(kernel.thread_rank(), count, kernel.block_threads()):
            sign_s, log_s = slogdet_of(
                shared.a, shared.ipiv, s, n, a_strides, ipiv_strides, one, real_zero, minus_inf
            )
            singular = shared.info[s] != 0  # exactly singular: NumPy's (0, -inf)
            sign[first + s] = zero if singular else sign_s
            logabsdet[first + s] = minus_inf if singular else log_s

    @kernel.device
    def store_det(shared, first, count, a, det, info):
        for s in range(kernel.thread_rank(), count, kernel.block_threads()):
            sign_s, log_s = slogdet_of(
                shared.a, shared.ipiv, s, n, a_strides, ipiv_strides, one, real_zero, minus_inf
            )
            det[first + s] = zero if shared.info[s] != 0 else sign_s * math.exp(log_s)

    sizes = {"a": d.a_size(), "ipiv": d.ipiv_size, "info": d.info_shape[0]}
    if pattern.option("log"):
        program = kernel.block_program(d, dtype, load, [factorize], store_slogdet, **sizes)
        run = program.run

        def slogdet_kernel(a, sign, logabsdet, info, batch):
            run(batch, a, sign, logabsdet, info)

        return program.spec(slogdet_kernel, [((), dtype), ((), real)])

    program = kernel.block_program(d, dtype, load, [factorize], store_det, **sizes)
    run = program.run

    def det_kernel(a, det, info, batch):
        run(batch, a, det, info)

    return program.spec(det_kernel, [((), dtype)])


def getrf_det_empty(pattern, operands, xp, runtime):
    """0 x 0 matrices: the empty product, det 1 (slogdet ``(1, 0)``)."""
    (a,) = operands
    ones = xp.ones(a.shape[0], a.dtype)
    if pattern.option("log"):
        return ones, xp.zeros(a.shape[0], real_dtype(a.dtype)), no_failures(a, xp)
    return ones, no_failures(a, xp)
