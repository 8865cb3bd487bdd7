"""One-sided (Hestenes) Jacobi on blocks of matrices, shared by least squares and the SVD.

The columns ``g[j, :p, lane]`` of every matrix of a block (the layout of
:mod:`blocksolve.cpu._householder`) are rotated in pairs until every pair is
orthogonal to a relative tolerance; the same rotations applied to the
columns of ``v`` (the identity at first) accumulate ``V`` with ``G V = W``.
The norms of ``W``'s columns are then the singular values of ``G``, and
``W``'s normalised columns its left singular vectors.  Orthogonality is
relative, pair by pair, so small singular values keep their accuracy
(Demmel and Veselic).

:func:`emit_jacobi_sweep` in :mod:`blocksolve.cpu._unrolled` writes the same
sweep out as straight-line code (its pairs in rounds of disjoint pairs
instead of cyclic order, so the two agree to rounding, not to the bit).
"""

from __future__ import annotations

import math

import numpy as np

from ..._numerics import MAX_SWEEPS
from ._householder import abs2, block_helper

__all__ = ["MAX_SWEEPS", "column_norms", "jacobi_sweeps", "triangle", "identity"]


@block_helper
def column_norms(g, p, lanes, norms):
    """``norms[j, l]`` = squared 2-norm of column ``j`` of matrix ``l`` (``g[j, :p, l]``)."""
    for j in range(p):
        for l in range(lanes):
            norms[j, l] = 0
        for i in range(p):
            for l in range(lanes):
                norms[j, l] += abs2(g[j, i, l])


@block_helper
def jacobi_sweeps(g, v, p, lanes, norms, dot, cosine, sine, tol, floor, unconverged, sweeps):
    """Rotate pairs of columns of ``g`` (and of ``v``, unless it has no columns) until
    every pair of every matrix of the block is orthogonal to ``tol`` (relative).

    A pair is rotated while ``|g_p^H g_q|^2 > max(tol^2 |g_p|^2 |g_q|^2, floor)``:
    ``floor`` (0, or the smallest normal number of the computing type) keeps
    the rotation's square roots of tiny products from underflowing.  Every
    intermediate stays within the fourth power of the largest column norm,
    so matrices scaled into range cannot overflow.  On return ``norms[j, l]``
    holds the squared norms of the final columns (unsorted) and
    ``unconverged[l]`` the number of pairs of matrix ``l`` still rotated in
    the last of at most ``sweeps`` sweeps (0 when it converged).
    """
    tol2 = tol * tol
    for l in range(lanes):
        unconverged[l] = 0
    for _ in range(sweeps):
        column_norms(g, p, lanes, norms)  # fresh each sweep: the updates below drift
        rotated = 0
        for l in range(lanes):
            unconverged[l] = 0
        for pc in range(p - 1):
            for qc in range(pc + 1, p):
                for l in range(lanes):
                    dot[l] = 0
                for i in range(p):
                    for l in range(lanes):
                        dot[l] += np.conj(g[pc, i, l]) * g[qc, i, l]
                pair_rotated = 0
                for l in range(lanes):
                    off2 = abs2(dot[l])
                    rotate = off2 > tol2 * norms[pc, l] * norms[qc, l] and off2 > floor
                    pair_rotated += rotate
                    unconverged[l] += rotate
                if not pair_rotated:  # common in the last sweeps: skip the square roots
                    continue
                for l in range(lanes):
                    # Rutishauser's rotation for the Gram matrix [[ap, dot], [conj(dot), aq]]:
                    # with d = aq - ap, r = sqrt(d^2 + 4|dot|^2), u = |d| + r and
                    # inv = 1 / sqrt(2 r u): cos = u inv, sin = 2 |dot| inv, and the norms
                    # move by tan |dot| = 2 |dot|^2 / u = 4 |dot|^2 (r inv) inv.
                    ap, aq = norms[pc, l], norms[qc, l]
                    off2 = abs2(dot[l])
                    rotate = off2 > tol2 * ap * aq and off2 > floor
                    d = aq - ap
                    r = math.sqrt(d * d + 4 * off2)
                    u = abs(d) + r
                    inv = 1 / math.sqrt(2 * r * u if rotate else 1)
                    sign_inv = math.copysign(inv, d)
                    shift = 4 * off2 * (r * inv) * sign_inv
                    cosine[l] = u * inv if rotate else 1
                    sine[l] = dot[l] * (2 * sign_inv) if rotate else 0
                    norms[pc, l] = ap - shift if rotate else ap
                    norms[qc, l] = aq + shift if rotate else aq
                rotated += pair_rotated
                for columns in (g, v):
                    if columns.shape[0] == 0:
                        continue
                    for i in range(p):
                        for l in range(lanes):
                            x, y = columns[pc, i, l], columns[qc, i, l]
                            columns[pc, i, l] = cosine[l] * x - np.conj(sine[l]) * y
                            columns[qc, i, l] = sine[l] * x + cosine[l] * y
        if not rotated:
            break
    column_norms(g, p, lanes, norms)


@block_helper
def triangle(w, g, v, p, lanes, adjoint):
    """``g`` = columns of the triangle ``R`` of a factored block ``w`` (of ``L = R^H`` when
    ``adjoint``); ``v`` = I (unless it has no columns)."""
    for j in range(p):
        for i in range(p):
            for l in range(lanes):
                if adjoint:  # M[i, j] = conj(R[j, i]) = conj(w[i, j])
                    g[j, i, l] = np.conj(w[i, j, l]) if j <= i else 0
                else:  # M[i, j] = R[i, j] = w[j, i]
                    g[j, i, l] = w[j, i, l] if i <= j else 0
    identity(v, p, lanes)


@block_helper
def identity(v, p, lanes):
    """``v[j, :p, l]`` = column ``j`` of the identity, for every column ``j`` of ``v``."""
    for j in range(v.shape[0]):
        for i in range(p):
            for l in range(lanes):
                v[j, i, l] = 1 if i == j else 0
