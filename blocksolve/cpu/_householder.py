"""Householder QR on blocks of matrices, shared by the QR and least-squares kernels.

A block is ``lanes`` matrices copied into work arrays indexed ``[column,
row, lane]``.  Every innermost loop runs over the matrices of the block, so
LLVM vectorises across matrices while the Householder algorithm reads like
the scalar one: a single small QR is a chain of dependent square roots and
divisions, a block of them is not.  (:mod:`blocksolve.cpu._unrolled` writes
the same algorithm out as straight-line code for the smallest sizes.)

The arithmetic is LAPACK's: ``xGEQR2`` with ``xLARFG`` reflectors
(``beta = -sign(Re alpha) * norm``, ``tau = (beta - alpha) / beta``, ``v``
scaled by ``1 / (alpha - beta)``) and ``xORG2R``/``xUNG2R``, so results
match NumPy's LAPACK to rounding.  Instead of LAPACK's scaled norms, a
matrix whose squared entries could overflow or underflow is first scaled by
a power of two (exactly); callers scale the results back.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

__all__ = ["block_helper", "block_lanes", "scaling_limits", "reciprocal", "abs2", "load_block",
           "scale_block", "rescale_block", "apply_reflector", "householder_block",
           "form_q_block"]

# Matrices per block, and the most entries one block's work array may hold.
# Wide blocks pay for themselves even when they outgrow the L1 cache (QR of
# 33x33 float64: 14 us per matrix with 32 lanes, 84 us with 2); the cap only
# keeps the work arrays of large matrices bounded.
_MAX_LANES = 32
_BLOCK_ENTRIES = 1 << 20

# Decorator of the helpers a kernel calls.  Plain njit functions, which LLVM
# inlines, come out about twice as fast here as numba's IR-level
# ``inline="always"`` (measured on the Jacobi sweeps).
block_helper = numba.njit(error_model="numpy")


def block_lanes(m, n):
    """Matrices per block of the run-time-size kernels: 32, fewer for large matrices."""
    lanes = _MAX_LANES
    while lanes > 1 and lanes * m * n > _BLOCK_ENTRIES:
        lanes //= 2
    return lanes


def scaling_limits(dtype):
    """``[small, big]`` in ``dtype``'s real type: a matrix whose largest entry lies outside
    is scaled by a power of two so that sums of squares neither overflow nor underflow."""
    info = np.finfo(dtype)
    return np.array([2.0 ** (info.minexp // 2 + 16), 2.0 ** (info.maxexp // 2 - 16)], info.dtype)


def reciprocal(x):
    """``1 / x``; in kernels, without numba's ``ZeroDivisionError`` for complex zero."""
    return 1 / x


@overload(reciprocal, inline="always")
def _reciprocal_impl(x):
    if isinstance(x, types.Complex):
        return lambda x: np.conj(x) * (1 / (x.real * x.real + x.imag * x.imag))
    return lambda x: 1 / x


@numba.njit(inline="always")
def abs2(x):
    """``|x|**2`` for real and complex ``x``."""
    return x.real * x.real + x.imag * x.imag


@block_helper
def load_block(a, first, count, w, rows, cols, adjoint):
    """Copy ``count`` matrices into ``w[column, row, lane]``.

    ``w[j, i, l] = a[first + l, i, j]``, or ``conj(a[first + l, j, i])`` when
    ``adjoint`` (then ``rows``/``cols`` are those of the adjoint).
    """
    for l in range(count):
        if adjoint:
            for j in range(cols):
                for i in range(rows):
                    w[j, i, l] = np.conj(a[first + l, j, i])
        else:
            for i in range(rows):
                for j in range(cols):
                    w[j, i, l] = a[first + l, i, j]


@block_helper
def scale_block(w, rows, cols, lanes, limits, peak, scale):
    """Scale each matrix of the block by a power of two if its entries are extreme.

    ``scale[l]`` (float64) receives the factor applied to matrix ``l``
    (1 for nearly every matrix); ``peak`` is real scratch of ``lanes``.
    """
    for l in range(lanes):
        peak[l] = 0
    for j in range(cols):
        for i in range(rows):
            for l in range(lanes):
                x = w[j, i, l]
                p = max(abs(x.real), abs(x.imag))
                peak[l] = p if p > peak[l] else peak[l]
    rescale_block(w, rows, cols, lanes, limits, peak, scale)


@block_helper
def rescale_block(w, rows, cols, lanes, limits, peak, scale):
    """Second half of :func:`scale_block`, given each matrix's largest ``|Re|, |Im|``."""
    scaled = False
    for l in range(lanes):
        factor = 1.0
        p = peak[l]
        if (p > limits[1] and p < np.inf) or (p < limits[0] and p > 0):
            factor = math.ldexp(1.0, -math.frexp(p)[1])
            scaled = True
        scale[l] = factor
    if scaled:
        for j in range(cols):
            for i in range(rows):
                for l in range(lanes):
                    w[j, i, l] = w[j, i, l] * scale[l]


@block_helper
def apply_reflector(w, tau, j, rows, c, col, lanes, dot, adjoint):
    """Apply reflector ``j`` of ``w`` (``H_j``, or ``H_j^H`` when ``adjoint``) to ``c[col]``.

    ``H_j = I - tau_j v v^H`` with ``v = [0.., 1, w[j, j+1:rows]]``; only
    rows ``j:rows`` of the column change.  ``dot`` is scratch of ``lanes``.
    """
    for l in range(lanes):
        dot[l] = c[col, j, l]
    for i in range(j + 1, rows):
        for l in range(lanes):
            dot[l] += np.conj(w[j, i, l]) * c[col, i, l]
    for l in range(lanes):
        dot[l] *= np.conj(tau[j, l]) if adjoint else tau[j, l]
        c[col, j, l] -= dot[l]
    for i in range(j + 1, rows):
        for l in range(lanes):
            c[col, i, l] -= dot[l] * w[j, i, l]


@block_helper
def householder_block(w, tau, rows, cols, lanes, norm2, coef):
    """``xGEQR2`` in place on every matrix of the block.

    ``R`` ends up in ``w[j, i]`` for ``i <= j``, the reflectors' vectors
    below, ``tau[j]`` their factors.  ``norm2`` (real) and ``coef`` are
    scratch of ``lanes``.
    """
    for j in range(min(rows, cols)):
        for l in range(lanes):
            norm2[l] = 0
        for i in range(j + 1, rows):
            for l in range(lanes):
                norm2[l] += abs2(w[j, i, l])
        for l in range(lanes):  # xLARFG, branch-free across the block
            alpha = w[j, j, l]
            reflect = norm2[l] != 0 or alpha.imag != 0
            beta = -math.copysign(math.sqrt(abs2(alpha) + norm2[l]), alpha.real)
            safe_beta = beta if reflect else 1
            tau[j, l] = (beta - alpha) * (1 / safe_beta) if reflect else 0
            coef[l] = reciprocal(alpha - safe_beta) if reflect else 1
            w[j, j, l] = beta if reflect else alpha
        for i in range(j + 1, rows):
            for l in range(lanes):
                w[j, i, l] *= coef[l]
        for col in range(j + 1, cols):
            apply_reflector(w, tau, j, rows, w, col, lanes, coef, True)


@block_helper
def form_q_block(w, tau, k, rows, q, q_cols, lanes, dot):
    """``xORG2R``: ``q[c, :, l]`` = column ``c`` of ``H_0 ... H_{k-1}`` for ``c < q_cols``."""
    for c in range(q_cols):
        for i in range(rows):
            for l in range(lanes):
                q[c, i, l] = 1 if i == c else 0
    for j in range(k - 1, -1, -1):
        for c in range(j + 1, q_cols):
            apply_reflector(w, tau, j, rows, q, c, lanes, dot, False)
        for l in range(lanes):  # H_j e_j; rows above j stay zero
            q[j, j, l] = 1 - tau[j, l]
        for i in range(j + 1, rows):
            for l in range(lanes):
                q[j, i, l] = -tau[j, l] * w[j, i, l]
