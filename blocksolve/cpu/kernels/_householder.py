"""Householder QR on blocks of matrices, shared by the QR and least-squares kernels.

A block is ``lanes`` matrices copied into work arrays indexed ``[column,
row, lane]``.  Every innermost loop runs over the matrices of the block, so
LLVM vectorises across matrices while the Householder algorithm reads like
the scalar one: a single small QR is a chain of dependent square roots and
divisions, a block of them is not.  (:mod:`blocksolve.cpu._unrolled` writes
the same algorithm out as straight-line code for the smallest sizes.)

The conventions are LAPACK's: ``xGEQR2`` with ``xLARFG`` reflectors
(``beta = -sign(Re alpha) * norm``, ``v`` scaled by ``1 / (alpha - beta)``,
``tau`` close to ``(beta - alpha) / beta``) and ``xORG2R``/``xUNG2R``, so
results match NumPy's LAPACK to rounding, also at the ends of the
floating-point range.  Each column first takes a fast path -- plain sums of
squares, the same for every matrix of the block, no branches -- and the
matrices whose column it cannot handle exactly (a sum of squares that
underflows or overflows, infs and NaNs) then get LAPACK's careful
``xLARFG`` one by one: a scaled norm, the ``beta = 0`` case and the
rescaling loop for a tiny ``beta`` (:func:`larfg_lane`).  Nothing is scaled
beforehand, so nothing has to be scaled back.

Two steps are more accurate than LAPACK's (see :mod:`._compensated`), which
is what the backward error of badly scaled, nearly collinear columns
depends on: ``tau`` is computed from the stored ``v`` so that each
reflector is unitary to about half a unit in the last place
(:func:`~._compensated.unitary_tau`), and the reflectors reach the trailing
columns with ``tau^* v^H c`` in twice the working precision
(:func:`reflect_trailing`).  Forming ``Q`` and applying ``Q^H`` to
right-hand sides stay plain (:func:`apply_reflector`).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

from ._compensated import (
    add_product,
    add_square,
    from_pair,
    scale_pair,
    subtract_pair_times,
    to_pair,
    unitary_tau,
)

__all__ = [
    "block_helper",
    "block_lanes",
    "narrow_lanes",
    "fast_limits",
    "reciprocal",
    "abs2",
    "load_block",
    "apply_reflector",
    "reflect_trailing",
    "householder_block",
    "HOUSEHOLDER_REAL_ROWS",
    "HOUSEHOLDER_VALUE_ROWS",
    "larfg_lane",
    "form_q_block",
    "scaled_norm",
    "lapy3",
]

# Matrices per block, and the most entries one block's work array may hold.
# Wide blocks pay for themselves even when they outgrow the L1 cache (QR of
# 33x33 float64: 14 us per matrix with 32 lanes, 84 us with 2); the cap only
# keeps the work arrays of large matrices bounded.
_MAX_LANES = 32
_BLOCK_ENTRIES = 1 << 20

# Rows of the scratch arrays, of ``lanes`` each, that :func:`householder_block` takes: real
# ones (the matrices' real dtype), and ones of the matrices' dtype.
HOUSEHOLDER_REAL_ROWS = 5
HOUSEHOLDER_VALUE_ROWS = 3

# LAPACK xLARFG gives up rescaling a tiny beta after this many steps.
_MAX_RESCALES = 20

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


@numba.njit(inline="always")
def narrow_lanes(lanes, start, stop):
    """Lanes of the blocks a kernel given matrices ``[start, stop)`` works in: no more
    than it has matrices.

    Every loop runs across all of a block's lanes, so a block of 32 lanes
    holding one matrix computes 32 (one 32x32 QR took 12x the time per
    matrix of a full block).
    """
    return max(1, min(lanes, stop - start))


def fast_limits(dtype):
    """``[low, high, safmin]`` in ``dtype``'s real type for :func:`householder_block`.

    A column whose sum of squares ``|alpha|^2 + |x|^2`` lies in ``[low, high]``
    is reflected on the fast path: below ``low`` the squares of its entries
    may have underflowed (lost accuracy, or ``beta = 0`` for a nonzero
    column), above ``high`` ``|alpha - beta|^2`` could overflow.  ``low`` is
    ``2**(2 * digits)`` times the smallest normal number, so that the
    squares that underflow weigh less than the rounding of the sum; from
    there ``beta >= sqrt(low)`` is far above LAPACK's ``safmin`` and needs no
    rescaling.  ``safmin`` is LAPACK's ``xLAMCH('S') / xLAMCH('E')``.
    """
    info = np.finfo(dtype)
    low = 2.0 ** (info.minexp + 2 * info.nmant + 2)
    high = 2.0 ** (info.maxexp - 3)
    return np.array([low, high, info.tiny / info.eps], info.dtype)


def reciprocal(x):
    """``1 / x``; in kernels, without numba's ``ZeroDivisionError`` for complex zero.

    For complex ``x`` this is ``conj(x) / |x|^2``: fast, but only for
    ``|x|^2`` inside the floating-point range (callers make sure).
    """
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


@numba.njit(inline="always")
def abs1(x):
    """``|Re x| + |Im x|``: zero exactly when ``x`` is, and never underflows."""
    return abs(x.real) + abs(x.imag)


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
def apply_reflector(w, tau, j, rows, c, col, lanes, dot, adjoint):
    """Apply reflector ``j`` of ``w`` (``H_j``, or ``H_j^H`` when ``adjoint``) to ``c[col]``.

    ``H_j = I - tau_j v v^H`` with ``v = [0.., 1, w[j, j+1:rows]]``; only
    rows ``j:rows`` of the column change.  Where ``tau_j = 0`` (``H_j = I``,
    which LAPACK's ``xLARF`` skips) the multiple of ``v`` taken off is an
    exact 0, so that an inf in the column does not spread NaN into its other
    rows.  ``dot`` is scratch of ``lanes``.
    """
    for l in range(lanes):
        dot[l] = c[col, j, l]
    for i in range(j + 1, rows):
        for l in range(lanes):
            dot[l] += np.conj(w[j, i, l]) * c[col, i, l]
    for l in range(lanes):
        t = np.conj(tau[j, l]) if adjoint else tau[j, l]
        dot[l] = dot[l] * t if t != 0 else 0
        c[col, j, l] -= dot[l]
    for i in range(j + 1, rows):
        for l in range(lanes):
            c[col, i, l] -= dot[l] * w[j, i, l]


@block_helper
def reflect_trailing(w, tau, j, rows, c, col, lanes, hi, lo):
    """Apply ``H_j^H`` (reflector ``j`` of ``w``) to ``c[col]``, as :func:`apply_reflector`
    with ``adjoint`` but with ``conj(tau_j) v^H c`` as a pair ``hi + lo`` in twice the
    working precision.

    When the column lies nearly along ``v`` (the next columns of a
    nearly collinear matrix) the update cancels, and the rounding of that
    scalar would stay in the result at the size of the whole column.
    ``hi`` and ``lo`` are scratch of ``lanes``.
    """
    for l in range(lanes):
        hi[l] = c[col, j, l]
        lo[l] = 0
    for i in range(j + 1, rows):
        for l in range(lanes):
            pair = add_product(to_pair(hi[l], lo[l]), w[j, i, l], c[col, i, l])
            hi[l], lo[l] = from_pair(pair)
    for l in range(lanes):
        t = np.conj(tau[j, l])
        d_hi, d_lo = from_pair(scale_pair(t, to_pair(hi[l], lo[l])))
        hi[l] = d_hi if t != 0 else 0
        lo[l] = d_lo if t != 0 else 0
        c[col, j, l] = subtract_pair_times(c[col, j, l], to_pair(hi[l], lo[l]), 1.0)
    for i in range(j + 1, rows):
        for l in range(lanes):
            d = to_pair(hi[l], lo[l])
            c[col, i, l] = subtract_pair_times(c[col, i, l], d, w[j, i, l])


@block_helper
def _finish_reflector(w, tau, j, rows, l):
    """``tau[j, l]``, ``xLARFG``'s, made unitary for the stored ``v`` (see
    :func:`~._compensated.unitary_tau`); ``H = I`` (``tau = 0``) stays."""
    square = (1.0, 0.0)
    for i in range(j + 1, rows):
        square = add_square(square, w[j, i, l])
    if tau[j, l] != 0:
        tau[j, l] = unitary_tau(tau[j, l], square)


@block_helper
def scaled_norm(w, j, lo, hi, l):
    """2-norm of ``w[j, lo:hi, l]`` without overflow or underflow (as LAPACK ``xNRM2``)."""
    big = 0.0
    nan = False
    for i in range(lo, hi):
        x = w[j, i, l]
        big = max(big, abs(x.real), abs(x.imag))
        nan |= x != x
    if nan:
        return math.nan
    if big == 0 or big == math.inf:
        return big
    ssq = 0.0
    for i in range(lo, hi):
        x = w[j, i, l]
        ssq += (x.real / big) ** 2 + (x.imag / big) ** 2
    return big * math.sqrt(ssq)


@block_helper
def lapy3(x, y, z):
    """``sqrt(x**2 + y**2 + z**2)`` without overflow or underflow (LAPACK ``xLAPY3``)."""
    big = max(abs(x), abs(y), abs(z))
    if big == 0 or not big < math.inf:
        return abs(x) + abs(y) + abs(z)  # also NaN for NaN
    return big * math.sqrt((x / big) ** 2 + (y / big) ** 2 + (z / big) ** 2)


def _tau(alpha, beta):
    """``(beta - alpha) / beta`` for real ``beta``, dividing each part as LAPACK does."""
    return complex((beta - alpha.real) / beta, -alpha.imag / beta)


@overload(_tau, inline="always")
def _tau_impl(alpha, beta):
    if isinstance(alpha, types.Complex):
        return lambda alpha, beta: complex((beta - alpha.real) / beta, -alpha.imag / beta)
    return lambda alpha, beta: (beta - alpha) / beta


@block_helper
def larfg_lane(w, tau, j, rows, l, safmin):
    """LAPACK ``xLARFG`` for column ``j`` of matrix ``l`` of the block, in place.

    ``H^H [alpha; x] = [beta; 0]`` with ``alpha = w[j, j, l]`` and ``x =
    w[j, j+1:rows, l]``: ``beta`` goes to ``w[j, j, l]``, ``v`` (scaled so
    that ``v[0] = 1``) below it, ``tau`` to ``tau[j, l]``.  Exact for every
    finite input: the norm is scaled, ``x = 0`` with real ``alpha`` gives
    ``H = I``, and a ``beta`` below ``safmin`` is rescaled first so that
    ``1 / (alpha - beta)`` cannot overflow.
    """
    alpha = w[j, j, l]
    xnorm = scaled_norm(w, j, j + 1, rows, l)
    if xnorm == 0 and alpha.imag == 0:
        tau[j, l] = 0
        return
    beta = -math.copysign(lapy3(alpha.real, alpha.imag, xnorm), alpha.real)
    rescales = 0
    if abs(beta) < safmin:
        inverse = 1 / safmin
        while abs(beta) < safmin and rescales < _MAX_RESCALES:
            rescales += 1
            for i in range(j + 1, rows):
                w[j, i, l] *= inverse
            beta *= inverse
            alpha *= inverse
        xnorm = scaled_norm(w, j, j + 1, rows, l)
        beta = -math.copysign(lapy3(alpha.real, alpha.imag, xnorm), alpha.real)
    tau[j, l] = _tau(alpha, beta)
    # |alpha - beta| >= |beta| > 0; numba's complex division scales (Smith's
    # method), where reciprocal()'s |.|^2 could underflow.
    scale = 1 / (alpha - beta)
    for i in range(j + 1, rows):
        w[j, i, l] *= scale
    _finish_reflector(w, tau, j, rows, l)
    for _ in range(rescales):
        beta *= safmin
    w[j, j, l] = beta


@block_helper
def householder_block(w, tau, rows, cols, lanes, limits, reals, values):
    """``xGEQR2`` in place on every matrix of the block.

    ``R`` ends up in ``w[j, i]`` for ``i <= j``, the reflectors' vectors
    below, ``tau[j]`` their factors.  ``limits`` is :func:`fast_limits`;
    ``reals`` (real) and ``values`` (of ``w``'s dtype) are scratch of
    :data:`HOUSEHOLDER_REAL_ROWS` and :data:`HOUSEHOLDER_VALUE_ROWS` rows of
    ``lanes``.
    """
    norm2, size, careful, hi, lo = reals[0], reals[1], reals[2], reals[3], reals[4]
    coef, dot, dot_lo = values[0], values[1], values[2]
    low, high, safmin = limits[0], limits[1], limits[2]
    for j in range(min(rows, cols)):
        for l in range(lanes):
            norm2[l] = 0
        for i in range(j + 1, rows):
            for l in range(lanes):
                norm2[l] += abs2(w[j, i, l])
        any_zero = False
        for l in range(lanes):
            size[l] = norm2[l]  # nonzero: x is
            any_zero |= norm2[l] == 0
        if any_zero:  # x == 0 exactly, or only squares that underflowed?
            for i in range(j + 1, rows):
                for l in range(lanes):
                    size[l] += abs1(w[j, i, l])
        any_careful = False
        for l in range(lanes):  # xLARFG's fast path, branch-free across the block
            alpha = w[j, j, l]
            total = abs2(alpha) + norm2[l]
            reflect = size[l] != 0 or alpha.imag != 0
            flagged = reflect and not (total >= low and total <= high)
            careful[l] = flagged
            any_careful |= flagged
            beta = -math.copysign(math.sqrt(total), alpha.real)
            use = reflect and not flagged
            safe_beta = beta if use else 1
            tau[j, l] = (beta - alpha) * (1 / safe_beta) if use else 0
            coef[l] = reciprocal(alpha - safe_beta) if use else 1
            w[j, j, l] = beta if use else alpha
            hi[l] = 1
            lo[l] = 0
        for i in range(j + 1, rows):
            for l in range(lanes):
                v = w[j, i, l] * coef[l]
                w[j, i, l] = v
                hi[l], lo[l] = add_square((hi[l], lo[l]), v)
        for l in range(lanes):
            t = tau[j, l]
            tau[j, l] = unitary_tau(t, (hi[l], lo[l])) if t != 0 else 0
        if any_careful:
            for l in range(lanes):
                if careful[l]:
                    larfg_lane(w, tau, j, rows, l, safmin)
        for col in range(j + 1, cols):
            reflect_trailing(w, tau, j, rows, w, col, lanes, dot, dot_lo)


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
