"""One-sided Jacobi on the small square matrices of a block, in shared memory.

The device code of :mod:`blocksolve.cuda.svd`, the parts that synchronise
the block, use atomics or declare their own memory.  Each block holds
``bpb`` matrices ``G`` of ``p x p`` (column-major, one after the other)
and, when singular vectors are wanted, as many matrices ``V`` after them
(the identity at first).  Pairs of columns of ``G`` (and the same pairs of ``V``) are rotated
until every pair of every matrix is orthogonal to a relative tolerance; then
``G V = W`` with orthogonal columns, whose norms are the singular values of
``G``.  The rotations and their tests are those of
:mod:`blocksolve.cpu._jacobi` (Rutishauser's formulas, the same tolerance and
underflow floor), so small singular values keep their relative accuracy.

Parallel order: a sweep is ``p - 1`` rounds (``p`` rounds for odd ``p``) of
the round-robin tournament, each round ``p / 2`` disjoint pairs per matrix;
one thread rotates one pair of one matrix, and the block synchronises
between rounds.  Whether to sweep again is read by every thread from one
shared flag after a ``syncthreads``, so all threads leave the loop together
and reach every barrier.

The buffers hold cuSolverDx's value type, which for complex matrices is a
vector of two reals without arithmetic: every value read for arithmetic is
converted to numba's type of the matrices (``value(x)``, a no-op for real
ones) and converted back as it is stored.

Importing this module imports numba.cuda: only the gesvd kernel factory does.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from ._skeleton import block_threads, device, thread_rank

__all__ = ["largest_entries", "jacobi_sweeps", "column_norms", "complete_columns"]


def _constants(dtype):
    real = np.finfo(dtype).dtype.type
    return real, np.dtype(dtype).type


@device
def _abs2(x):
    return x.real * x.real + x.imag * x.imag


def largest_entries(dtype, bpb, shape, strides):
    """``largest(a, peaks, failed)``: ``peaks[s]`` = the largest ``|re|`` or ``|im|`` of the
    finite entries of matrix ``s`` of ``a`` (``shape`` = (rows, cols), element
    ``strides``), ``failed[s]`` = 1 where an entry is inf or NaN.

    Every thread takes entries of the block; ``peaks`` and ``failed`` must be
    zero on entry (a barrier earlier).
    """
    _, value = _constants(dtype)
    rows, cols = shape
    s0, s1, s2 = strides
    entries = rows * cols

    @device
    def largest(a, peaks, failed):
        for idx in range(thread_rank(), bpb * entries, block_threads()):
            s, i, j = idx // entries, (idx // cols) % rows, idx % cols
            x = value(a[s * s0 + i * s1 + j * s2])
            re, im = abs(x.real), abs(x.imag)
            if re < math.inf and im < math.inf:
                big = max(re, im)
                if big > peaks[s]:
                    cuda.atomic.max(peaks, s, big)
            else:
                failed[s] = 1

    return largest


def _gram(dtype, p):
    """``(|g_x|^2, |g_y|^2, g_x^H g_y)`` of columns ``x`` and ``y`` of matrix ``s``."""
    real, value = _constants(dtype)
    zero_real, zero_value, size = real(0), value(0), p * p

    @device
    def gram(g, s, x, y):
        gx, gy = s * size + x * p, s * size + y * p
        ax, ay, dot = zero_real, zero_real, zero_value
        for i in range(p):
            u, w = value(g[gx + i]), value(g[gy + i])
            ax += _abs2(u)
            ay += _abs2(w)
            dot += u.conjugate() * w
        return ax, ay, dot

    return gram


def jacobi_sweeps(dtype, p, bpb, vectors, max_sweeps, tol, floor):
    """The sweeps, as a device function ``sweeps(g, flags, unorthogonal)`` that every
    thread of the block calls.

    ``g`` holds the block's ``G`` (and ``V`` after them when ``vectors``);
    ``flags`` two int32 entries, zero on entry; ``unorthogonal`` one int32 per
    matrix, zero on entry.  A pair is rotated while ``|g_x^H g_y|^2 >
    max(tol^2 |g_x|^2 |g_y|^2, floor)`` (norms computed afresh for each pair).
    After at most ``max_sweeps`` sweeps, if the last one still rotated,
    ``unorthogonal[s]`` counts the pairs of matrix ``s`` still not orthogonal
    (0 for a matrix that converged).  The caller synchronises after it.
    """
    real, value = _constants(dtype)
    tol2, floor = real(tol * tol), real(floor)
    one, two, four = real(1), real(2), real(4)
    size, v_at = p * p, bpb * p * p
    players = p + p % 2  # an odd p plays against a dummy column, p itself
    half, rounds = players // 2, players - 1
    gram = _gram(dtype, p)

    @device
    def pair(r, k):
        """The ``k``-th pair of round ``r`` of the circle method, smaller column first."""
        if k == 0:
            x, y = r, players - 1
        else:
            x, y = (r + k) % rounds, (r - k + rounds) % rounds
        return min(x, y), max(x, y)

    @device
    def needs_rotation(ax, ay, dot):
        off2 = _abs2(dot)
        return off2 > tol2 * ax * ay and off2 > floor

    @device
    def rotate_columns(g, at_x, at_y, cosine, sine):
        for i in range(p):
            u, w = value(g[at_x + i]), value(g[at_y + i])
            g[at_x + i] = cosine * u - sine.conjugate() * w
            g[at_y + i] = sine * u + cosine * w

    @device
    def rotate(g, s, x, y):
        """Rotate columns ``x < y`` of matrix ``s`` orthogonal; whether it had to."""
        ax, ay, dot = gram(g, s, x, y)
        if not needs_rotation(ax, ay, dot):
            return False
        # Rutishauser's rotation for the Gram matrix [[ax, dot], [conj(dot), ay]], as
        # blocksolve.cpu._jacobi.jacobi_sweeps forms it.
        off2 = _abs2(dot)
        d = ay - ax
        r = math.sqrt(d * d + four * off2)
        u = abs(d) + r
        inv = one / math.sqrt(two * r * u)
        sign_inv = math.copysign(inv, d)
        cosine = u * inv
        sine = dot * (two * sign_inv)
        at = s * size
        rotate_columns(g, at + x * p, at + y * p, cosine, sine)
        if vectors:
            rotate_columns(g, v_at + at + x * p, v_at + at + y * p, cosine, sine)
        return True

    @device
    def sweeps(g, flags, unorthogonal):
        tid, threads = thread_rank(), block_threads()
        done = False
        for sweep in range(max_sweeps):
            # flags[sweep % 2] says whether this sweep rotated; the other one is cleared
            # for the next sweep between two barriers, after everyone has read it.
            now = sweep % 2
            for r in range(rounds):
                for item in range(tid, bpb * half, threads):
                    x, y = pair(r, item % half)
                    if y < p and rotate(g, item // half, x, y):
                        flags[now] = 1
                cuda.syncthreads()
            done = flags[now] == 0
            if tid == 0:
                flags[1 - now] = 0
            cuda.syncthreads()
            if done:
                break
        if not done:  # the same for every thread
            for item in range(tid, bpb * size, threads):
                s, x, y = item // size, (item % size) // p, item % p
                if x < y:
                    ax, ay, dot = gram(g, s, x, y)
                    if needs_rotation(ax, ay, dot):
                        cuda.atomic.add(unorthogonal, s, 1)

    return sweeps


def column_norms(dtype, p, bpb):
    """``norms(g, out)``: ``out[s * p + j]`` = the squared norm of column ``j`` of matrix
    ``s`` of ``g``, for every matrix of the block."""
    real, value = _constants(dtype)
    zero = real(0)

    @device
    def norms(g, out):
        for item in range(thread_rank(), bpb * p, block_threads()):
            total = zero
            for i in range(p):
                total += _abs2(value(g[item * p + i]))
            out[item] = total

    return norms


def complete_columns(dtype, p, bpb, floor):
    """``complete(g, norms, failed)``: in each matrix ``s`` of ``g`` (not ``failed[s]``),
    replace the columns whose squared norm is below ``floor`` by unit vectors orthogonal
    to every other column.

    The rule of :func:`blocksolve.cpu.svd.complete_columns`: each replaced
    column is the unit vector ``e_k`` that the columns above ``floor`` (by
    their normalised squares) and those replaced before cover least,
    orthogonalised against them twice (Gram-Schmidt) and normalised.  One
    thread per matrix; columns above ``floor`` are read, not written, so
    their normalisation must come after (a barrier later).
    """
    real, value = _constants(dtype)
    floor, zero, one = real(floor), real(0), real(1)
    zero_value, one_value = value(0), value(1)
    size = p * p
    dtype = np.dtype(dtype)

    @device
    def coverage_left(g, norms, s, j, k):
        """How much of ``e_k`` the kept columns and those replaced before ``j`` leave."""
        left = one
        for c in range(p):
            weight = norms[s * p + c]
            entry = _abs2(value(g[s * size + c * p + k]))
            if weight >= floor:
                left -= entry / weight
            elif c < j:
                left -= entry
        return left

    @device
    def complete_one(g, norms, s, j, y):
        best, best_left = 0, -one
        for k in range(p):
            left = coverage_left(g, norms, s, j, k)
            if left > best_left:
                best, best_left = k, left
        for i in range(p):
            y[i] = one_value if i == best else zero_value
        for _ in range(2):
            for c in range(p):
                weight = norms[s * p + c]
                if weight < floor and c >= j:
                    continue
                column = s * size + c * p
                t = zero_value
                for i in range(p):
                    t += value(g[column + i]).conjugate() * y[i]
                if weight >= floor:
                    t = t / weight
                for i in range(p):
                    y[i] -= t * value(g[column + i])
        total = zero
        for i in range(p):
            total += _abs2(y[i])
        inverse = one / math.sqrt(total)
        for i in range(p):
            g[s * size + j * p + i] = y[i] * inverse

    @device
    def complete(g, norms, failed):
        y = cuda.local.array(p, dtype)
        for s in range(thread_rank(), bpb, block_threads()):
            if failed[s]:
                continue
            for j in range(p):
                if norms[s * p + j] < floor:
                    complete_one(g, norms, s, j, y)

    return complete
