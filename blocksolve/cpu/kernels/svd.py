"""Singular value decomposition on the CPU: ``gesvd`` (``numpy.linalg.svd``) and ``pinv``.

One algorithm for every shape: one-sided (Hestenes) Jacobi (:mod:`._jacobi`)
on the columns of ``G``, where ``G`` is the matrix itself when it is
square, and the triangle ``R`` of a Householder QR (:mod:`._householder`)
of ``a`` (tall) or of ``a^H`` (wide) otherwise.  Rotations ``V`` make the
columns of ``W = G V`` orthogonal; their norms are the singular values, and
``W``'s normalised columns, times ``Q`` after a QR, the left singular
vectors.  For a wide matrix the roles of the two sides swap (``a^H = U S
V^H`` gives ``a = V S U^H``).  The accuracy is LAPACK's: the singular
values to a few ``n * eps * s[0]``, ``U`` and ``V`` orthonormal to a few
``n * eps``.  Single precision is computed in single precision (the
run-time-size kernel forms its rotations' cosines and sines in double).

Every matrix is first scaled by a power of two (exactly, and reversed on
the results) so that its largest entry lies just below ``2**target``
(:func:`scale_target`): high enough that every product the rotations form
stays far from underflow, low enough that the fourth powers of its column
norms do not overflow (LAPACK scales too, outside a narrower range, by a
ratio that rounds).  A column whose squared
norm ends below ``sqrt(tiny) / tol`` (a singular value far below ``eps *
s[0]``, e.g. an exact zero) cannot be kept orthogonal to the others by the
rotations; its left singular vector is completed to an orthonormal basis
instead (Gram-Schmidt on the unit vector that the other columns cover the
least).  A matrix with an inf or NaN entry gets NaN results and ``info =
1``; one whose rotations do not settle in :data:`~._jacobi.MAX_SWEEPS`
sweeps gets ``info`` = the number of column pairs left non-orthogonal.
Both are NumPy's "SVD did not converge".

Singular values come largest first.  Sign and phase: the singular vectors
of a singular value are those the rotations produce (``V`` starts as the
identity), with no normalisation; they agree with LAPACK's up to a common
sign (a common unit phase for complex matrices) of each pair ``u_j, v_j``,
and within repeated singular values up to a unitary mixing of the pairs.

``pinv`` runs the same sweeps and forms ``a^+ = V diag(1/s^2) W^H`` (times
``Q^H`` after a QR) from the singular values above ``rcond * s[0]``, which
keeps ``a x - b`` small even where ``W``'s columns are orthogonal only to
the tolerance (see :mod:`blocksolve.cpu.lstsq`).

As in :mod:`blocksolve.cpu.lstsq` there are two kernels over blocks of
matrices: straight-line code per shape and job up to 5x5
(:mod:`._unrolled`), run-time sizes above (:data:`UNROLL_UP_TO`).  Both are called
``kernel(start, stop, a, s, u, vh, x, info, job, cut, lanes, limits,
target, tol, sweeps)``; :func:`run` allocates the outputs of a job and
launches one.
"""

from __future__ import annotations

import math

import numpy as np

from ..._cache import memo
from ..._compat.numpy import numpy_linalg
from ..._numerics import column_floor, scale_target, tolerance
from .._compiled import Kernel
from .._jit import jit, launch, static_size
from ._householder import (
    HOUSEHOLDER_REAL_ROWS,
    HOUSEHOLDER_VALUE_ROWS,
    abs2,
    apply_reflector,
    block_helper,
    block_lanes,
    fast_limits,
    householder_block,
    load_block,
    narrow_lanes,
)
from ._jacobi import MAX_SWEEPS, identity, jacobi_sweeps, triangle
from ._pow2 import pow2_pair, scale_exponent
from ._unrolled import (
    Entries,
    Source,
    compile_kernel,
    emit_apply,
    emit_block_in,
    emit_careful_redo,
    emit_householder,
    emit_jacobi_sweep,
    emit_load,
    emit_scratch,
    emit_sorted,
    emit_store,
    unrolled,
    unrolled_lanes,
)

__all__ = ["JOBS", "gesvd", "pinv", "run", "svd_kernel"]

# What a kernel computes: singular values only; U, S, Vh reduced or full; the
# pseudo-inverse.  A run-time argument of the run-time-size kernel, baked into
# the straight-line ones.
JOBS = {"values": 0, "reduced": 1, "full": 2, "pinv": 3}
_VALUES, _REDUCED, _FULL, _PINV = JOBS["values"], JOBS["reduced"], JOBS["full"], JOBS["pinv"]

# Largest row or column count with straight-line code.  Measured (float64, 10 000
# matrices, steady state, the run-time-size kernel's time over the straight-line one's):
# 2.1 at 3x3, 1.3 at 4x4, 1.5 at 5x5, 0.9-1.2 from 6x6 to 16x16 -- where the straight-line
# kernel compiled for 31 s at 8x8 (195 s in complex128) and the run-time-size one for
# 12 s (16 s), once for every size.  (complex128 8x8: 1.8x, the price of the 12x faster
# compilation.)
UNROLL_UP_TO = 5


# --------------------------------------------------------------------------- block helpers


@block_helper
def scale_block(work, entries, count, target, exponents, failed, peak, factor):
    """Scale every matrix of the block (``work[:entries, lane]``) into range.

    ``exponents[l]`` = the ``k`` it was scaled by (``2**k``, see
    :func:`~._pow2.scale_exponent`), ``failed[l]`` whether it holds an inf or
    NaN.  ``peak`` (real) and ``factor`` (real, 2 x lanes) are scratch.
    """
    lanes = work.shape[1]
    for l in range(lanes):
        peak[l] = 0
        factor[0, l] = 0  # the sum of 0 * x: 0 unless an entry is inf or NaN
    for e in range(entries):
        for l in range(lanes):
            x = work[e, l]
            peak[l] = max(peak[l], max(abs(x.real), abs(x.imag)))
            factor[0, l] += x.real * 0 + x.imag * 0
    for l in range(count):
        failed[l] = not factor[0, l] == 0
        exponents[l] = scale_exponent(peak[l], target)
    for l in range(lanes):
        f1, f2 = pow2_pair(exponents[l] if l < count else 0)
        factor[0, l] = f1
        factor[1, l] = f2
    for e in range(entries):
        for l in range(lanes):
            work[e, l] = work[e, l] * factor[0, l] * factor[1, l]


@block_helper
def rescale_block(work, entries, count, at):
    """``work[:entries, l] *= 2**k`` with ``k = work[at, l]`` (as :func:`scale_block`)."""
    for l in range(count):
        f1, f2 = pow2_pair(int(work[at, l].real))
        for e in range(entries):
            work[e, l] = work[e, l] * f1 * f2


@block_helper
def complete_columns(g, norms, p, lane, floor, y):
    """Replace the columns ``j`` of matrix ``lane`` whose squared norm ``norms[j, lane]``
    is below ``floor`` by unit vectors orthogonal to every other column.

    The columns above ``floor`` are orthogonal (to the tolerance) but not
    normalised; each replaced column is the unit vector ``e_k`` that they and
    the columns replaced before cover least, orthogonalised twice
    (Gram-Schmidt) and normalised.  ``y`` is scratch of ``p + 1`` entries.
    """
    for j in range(p):
        if norms[j, lane].real >= floor:
            continue
        best, best_left = 0, -1.0
        for k in range(p):
            left = 1.0
            for c in range(p):
                size = norms[c, lane].real
                if size >= floor:
                    left -= abs2(g[c, k, lane]) / size
                elif c < j:  # replaced before: a unit vector
                    left -= abs2(g[c, k, lane])
            if left > best_left:
                best, best_left = k, left
        for i in range(p):
            y[i] = 1 if i == best else 0
        for _ in range(2):
            for c in range(p):
                size = norms[c, lane].real
                if size < floor and c >= j:
                    continue
                weight = 1 / size if size >= floor else 1.0
                y[p] = 0
                for i in range(p):
                    y[p] += np.conj(g[c, i, lane]) * y[i]
                y[p] *= weight
                for i in range(p):
                    y[i] -= y[p] * g[c, i, lane]
        size = 0.0
        for i in range(p):
            size += abs2(y[i])
        inverse = 1 / math.sqrt(size)
        for i in range(p):
            g[j, i, lane] = y[i] * inverse


@block_helper
def needs_completion(norms, p, lane, floor):
    """Whether a column of matrix ``lane`` has a squared norm below ``floor`` (not NaN)."""
    below = False
    for j in range(p):
        below |= norms[j, lane].real < floor
    return below


@block_helper
def unorthogonal_pairs(g, p, lane, tol, floor, d):
    """Number of column pairs of matrix ``lane`` that a sweep would still rotate
    (``d``: scratch of one entry of ``g``'s dtype)."""
    count = 0
    for pc in range(p - 1):
        for qc in range(pc + 1, p):
            ap, aq = 0.0, 0.0
            d[0] = 0
            for i in range(p):
                ap += abs2(g[pc, i, lane])
                aq += abs2(g[qc, i, lane])
                d[0] += np.conj(g[pc, i, lane]) * g[qc, i, lane]
            off2 = abs2(d[0])
            count += off2 > tol * tol * ap * aq and off2 > floor
    return count


@block_helper
def _descending(norms, p, lane, order):
    """``order[r]`` = the column with the ``r``-th largest norm (ties: lower index first)."""
    for j in range(p):
        rank = 0
        for k in range(p):
            x, y = norms[k, lane], norms[j, lane]
            rank += x > y or (x == y and k < j)
        order[rank] = j


@block_helper
def fill_nan(b, s, u, vh, x):
    """NaN in every output of matrix ``b``."""
    for j in range(s.shape[1]):
        s[b, j] = np.nan
    for out in (u, vh, x):
        for i in range(out.shape[1]):
            for j in range(out.shape[2]):
                out[b, i, j] = np.nan


@block_helper
def _store_svd(first, count, job, is_wide, p, rows, v, big, norms, order, exps, s, u, vh):
    """Write the block's ``s`` (sorted), ``u`` and ``vh``: ``big`` holds the columns of ``U``
    (of ``V`` when wide) in the order of ``norms``, the squared singular values, ``v`` those
    of the other side; columns of ``big`` beyond the ``p``-th complete it (full_matrices)."""
    for l in range(count):
        b = first + l
        _descending(norms, p, l, order)
        f1, f2 = pow2_pair(-exps[l])
        for r in range(p):
            s[b, r] = math.sqrt(norms[order[r], l]) * f1 * f2
        if job == _VALUES:
            continue
        left = v if is_wide else big  # columns of U
        right = big if is_wide else v  # columns of V
        for r in range(p):
            j = order[r]
            for i in range(u.shape[1]):
                u[b, i, r] = left[j, i, l]
            for i in range(vh.shape[2]):
                vh[b, r, i] = np.conj(right[j, i, l])
        for c in range(p, big.shape[0]):
            for i in range(rows):
                if is_wide:
                    vh[b, c, i] = np.conj(big[c, i, l])
                else:
                    u[b, i, c] = big[c, i, l]


@block_helper
def _store_pinv(first, count, is_wide, p, v, big, norms, cut, col_floor, exps, x, t):
    """``x = V diag(w) big^H`` (``big diag(w) V^H`` when wide), ``w = 1/s^2`` for the
    singular values above ``cut * s[0]`` (and the column floor), times the scale
    (``t``: scratch of one entry of ``x``'s dtype)."""
    weights = np.zeros(p)
    for l in range(count):
        b = first + l
        largest = 0.0
        for j in range(p):
            largest = max(largest, norms[j, l])
        cutoff = cut[b] * cut[b] * largest
        for j in range(p):
            size = norms[j, l]
            weights[j] = 1 / size if size > cutoff and size >= col_floor else 0
        f1, f2 = pow2_pair(exps[l])
        for i in range(x.shape[1]):
            for c in range(x.shape[2]):
                t[0] = 0
                for j in range(p):
                    if is_wide:
                        t[0] += big[j, i, l] * weights[j] * np.conj(v[j, c, l])
                    else:
                        t[0] += v[j, i, l] * weights[j] * np.conj(big[j, c, l])
                x[b, i, c] = t[0] * f1 * f2


@jit
def _gesvd_kernel(start, stop, a, s, u, vh, x, info, job, cut, lanes, limits, target, tol, sweeps):
    lanes = narrow_lanes(lanes, start, stop)
    m, n = a.shape[1], a.shape[2]
    is_wide = m < n
    rows, p = max(m, n), min(m, n)
    factored = rows > p
    vectors = job != _VALUES
    big_cols = (rows if job == _FULL else p) if vectors and factored else 0
    floor = np.finfo(limits.dtype).tiny
    col_floor = math.sqrt(floor) / tol
    w = np.zeros((p, rows, lanes), a.dtype)
    t = np.zeros((p, lanes), a.dtype)
    g = np.zeros((p, p, lanes), a.dtype)
    v = np.zeros((p if vectors else 0, p, lanes), a.dtype)
    big = np.zeros((big_cols, rows, lanes), a.dtype)
    norms = np.zeros((p, lanes), limits.dtype)
    cosine = np.zeros(lanes, limits.dtype)
    reflector_reals = np.zeros((HOUSEHOLDER_REAL_ROWS, lanes), limits.dtype)
    reflector_values = np.zeros((HOUSEHOLDER_VALUE_ROWS, lanes), a.dtype)
    peak = np.zeros(lanes, limits.dtype)
    factors = np.zeros((2, lanes), limits.dtype)
    dot = reflector_values[0]
    sine = np.zeros(lanes, a.dtype)
    scratch = np.zeros(p + 1, a.dtype)
    exps = np.zeros(lanes, np.int64)
    failed = np.zeros(lanes, np.bool_)
    unconverged = np.zeros(lanes, np.int64)
    order = np.zeros(p, np.int64)
    for first in range(start, stop, lanes):
        count = min(lanes, stop - first)
        load_block(a, first, count, w, rows, p, is_wide)
        scale_block(
            w.reshape((p * rows, lanes)), p * rows, count, target, exps, failed, peak, factors
        )
        if factored:
            householder_block(w, t, rows, p, lanes, limits, reflector_reals, reflector_values)
            triangle(w, g, v, p, lanes, False)
        else:  # a loop: a slice assignment compiles numba's shape-error message (~3 s)
            for j in range(p):
                for i in range(p):
                    for l in range(lanes):
                        g[j, i, l] = w[j, i, l]
            identity(v, p, lanes)
        jacobi_sweeps(g, v, p, lanes, norms, dot, cosine, sine, tol, floor, unconverged, sweeps)
        if job == _REDUCED or job == _FULL:  # normalise W's columns; complete the tiny ones
            for l in range(count):
                if not failed[l] and needs_completion(norms, p, l, col_floor):
                    complete_columns(g, norms, p, l, col_floor, scratch)
            for j in range(p):
                for l in range(lanes):
                    size = norms[j, l]
                    cosine[l] = 1 / math.sqrt(size) if size >= col_floor else 1
                for i in range(p):
                    for l in range(lanes):
                        g[j, i, l] *= cosine[l]
        if big_cols:  # big = Q [g, 0; 0, I]
            for c in range(big_cols):
                for i in range(rows):
                    for l in range(lanes):
                        big[c, i, l] = g[c, i, l] if c < p and i < p else (1 if i == c else 0)
            for j in range(p - 1, -1, -1):
                for c in range(big_cols):
                    apply_reflector(w, t, j, rows, big, c, lanes, dot, False)
        if job == _PINV:
            _store_pinv(
                first, count, is_wide, p, v, big if factored else g, norms, cut, col_floor,
                exps, x, scratch,
            )  # fmt: skip
        else:
            _store_svd(
                first, count, job, is_wide, p, rows, v, big if factored else g, norms, order,
                exps, s, u, vh,
            )  # fmt: skip
        for l in range(count):
            if failed[l]:
                info[first + l] = 1
                fill_nan(first + l, s, u, vh, x)
            elif unconverged[l]:  # the last sweep still rotated: what is left?
                info[first + l] = unorthogonal_pairs(g, p, l, tol, floor, scratch)
            else:
                info[first + l] = 0


# --------------------------------------------------------------------------- straight-line code


def _layout(m, n, job):
    """First rows of the sections of a straight-line kernel's work array."""
    rows, p = max(m, n), min(m, n)
    factored = rows > p
    out = {_VALUES: 0, _REDUCED: rows * p, _FULL: rows * rows, _PINV: m * n}[job]
    sizes = {
        "a": rows * p,
        "tau": p if factored else 0,
        "g": p * p,
        "v": p * p if job != _VALUES else 0,
        "out": out,
        "norm": p,
        "rank": p,
        "k": 1,
        "bad": 1,
        "flag": 1,
        "cut": 1,
    }
    at, row = {}, 0
    for name, size in sizes.items():
        at[name] = row
        row += size
    at["end"] = row
    return at


@memo("cpu-straight-line-svd", maxsize=256)
def _unrolled_gesvd_kernel(m, n, dtype, job):
    """:func:`_gesvd_kernel` as straight-line code for ``m x n`` matrices and ``job``.

    Passes over each block, each a loop over its matrices: scale, QR (for
    non-square shapes), the first sweep from what is known of ``G``
    (triangular after a QR) and ``V = I``, further sweeps until no matrix of
    the block rotates, the results, and their stores; rare cases (inf or
    NaN, completion, no convergence) go through the block helpers.
    """
    dtype = np.dtype(dtype)
    real = np.finfo(dtype).dtype
    rows, p = max(m, n), min(m, n)
    vectors = job != _VALUES
    lanes = unrolled_lanes(dtype)
    at = _layout(m, n, job)
    literals = {"0": "R0", "1": "R1", "1/": "R1", "2": "R2", "4": "R4"}
    src = Source(dtype.kind == "c")

    def load(prefix, at_row, r, c):
        entries = Entries(prefix)
        emit_load(src, entries, r, c, at_row)
        return entries

    with src.block(
        "def KERNEL(start, stop, a, s, u, vh, x, info, job, cut, lanes, limits, target, tol, "
        "sweeps):"
    ):
        src("tol2 = tol * tol")
        src("low, high = limits[0], limits[1]")
        src(f"work = np.zeros(({at['end']}, {lanes}), a.dtype)")
        src(f"w = work[:{rows * p}].reshape(({p}, {rows}, {lanes}))")
        src(f"gv = work[{at['g']}:{at['g'] + p * p}].reshape(({p}, {p}, {lanes}))")
        src(f"nv = work[{at['norm']}:{at['norm'] + p}]")
        emit_scratch(src, lanes)
        src(f"scratch = np.zeros({p + 1}, a.dtype)")
        src(f"stuck = np.zeros({lanes}, np.int64)")
        with src.block(f"for first in range(start, stop, {lanes}):"):
            src(f"count = min({lanes}, stop - first)")
            emit_block_in(src, rows, p, m < n)
            if job == _PINV:
                with src.block("for l in range(count):"):
                    src(f"work[{at['cut']}, l] = cut[first + l]")
            _emit_scale(src, rows * p, scale_target(dtype, rows, p), at)
            if rows > p:
                with src.block("for l in range(count):"):
                    a = load("a", 0, rows, p)
                    taus, careful = emit_householder(src, a, rows, p, [])
                    emit_store(src, a, rows, p, 0)
                    for j, tau in enumerate(taus):
                        src(f"work[{at['tau'] + j}, l] = {tau}")
                    src(f"work[{at['flag']}, l] = {careful}")
                emit_careful_redo(
                    src,
                    rows,
                    p,
                    m < n,
                    at["flag"],
                    at["tau"],
                    f"rescale_block(work, {rows * p}, count, {at['k']})",
                )
            src("rotated = 0")
            with src.block("for l in range(count):"):  # G, V = I, the first sweep
                g = Entries("g")
                for col in range(p):
                    for row in range(p):
                        if rows > p and row > col:
                            g.set_constant(row, col, "0")
                        else:
                            g.assign(src, row, col, f"work[{col * rows + row}, l]")
                v = None
                if vectors:
                    v = Entries("v")
                    for col in range(p):
                        for row in range(p):
                            v.set_constant(row, col, "1" if row == col else "0")
                src(f"rotated += {emit_jacobi_sweep(src, g, p, v, 'FLOOR', literals)}")
                _store_known(src, g, p, p, at["g"])
                if vectors:
                    _store_known(src, v, p, p, at["v"])
            with src.block("for sweep in range(sweeps - 1):"):
                with src.block("if rotated == 0:"):
                    src("break")
                src("rotated = 0")
                with src.block("for l in range(count):"):
                    g = load("g", at["g"], p, p)
                    v = load("v", at["v"], p, p) if vectors else None
                    src(f"rotated += {emit_jacobi_sweep(src, g, p, v, 'FLOOR', literals)}")
                    emit_store(src, g, p, p, at["g"])
                    if vectors:
                        emit_store(src, v, p, p, at["v"])
            with src.block(f"for l in range({lanes}):"):
                src("stuck[l] = 0")
            with src.block("if rotated:"):  # the last sweep still rotated: what is left?
                with src.block("for l in range(count):"):
                    src(f"stuck[l] = unorthogonal_pairs(gv, {p}, l, tol, FLOOR, scratch)")
            _emit_results(src, m, n, job, at, load)
            _emit_stores(src, m, n, job, at)
    extra = {
        "R0": real.type(0),
        "R1": real.type(1),
        "R2": real.type(2),
        "R4": real.type(4),
        "REAL": real.type,
        "FLOOR": real.type(np.finfo(real).tiny),
        "COL_FLOOR": real.type(column_floor(real, tolerance(dtype, p))),
        "scale_exponent": scale_exponent,
        "pow2_pair": pow2_pair,
        "rescale_block": rescale_block,
        "complete_columns": complete_columns,
        "unorthogonal_pairs": unorthogonal_pairs,
        "fill_nan": fill_nan,
    }
    return compile_kernel(f"gesvd_{m}x{n}_{dtype.name}_{job}", src.text(), dtype, extra)


def _store_known(src, entries, rows, cols, offset):
    """:func:`emit_store` of entries that may still be the literals '0' or '1'."""
    for j in range(cols):
        for i in range(rows):
            value = entries.get(i, j)
            value = {"0": "ZERO", "1": "ONE"}.get(value, value)
            src(f"work[{offset + j * rows + i}, l] = {value}")


def _emit_scale(src, entries, target, at):
    """Scale each matrix (``work[:entries]``) as :func:`scale_block`, branch-free; its
    exponent to ``work[at['k']]``, whether it holds an inf or NaN to ``work[at['bad']]``."""
    with src.block("for l in range(count):"):
        values = [src.let("e", f"work[{e}, l]") for e in range(entries)]
        parts = [f"abs({e}.real)" for e in values]
        if src.complex:
            parts += [f"abs({e}.imag)" for e in values]
        peak = parts[0]
        for part in parts[1:]:
            peak = src.let("peak", f"max({peak}, {part})")
        probe = " + ".join(
            f"{e}.real * R0 + {e}.imag * R0" if src.complex else f"{e} * R0" for e in values
        )
        src(f"k = scale_exponent({peak}, {target})")
        src("f1, f2 = pow2_pair(k)")
        src("r1 = REAL(f1)")
        src("r2 = REAL(f2)")
        for row, e in enumerate(values):
            once = src.let("e", src.scaled("r1", e))
            src(f"work[{row}, l] = {src.scaled('r2', once)}")
        src(f"work[{at['k']}, l] = k")
        src(f"work[{at['bad']}, l] = select(({probe}) == R0, R0, R1)")


def _emit_results(src, m, n, job, at, load):
    """The passes after the sweeps: singular values, and ``U`` (``V`` when wide) or the
    pseudo-inverse, into the work array."""
    rows, p = max(m, n), min(m, n)
    factored = rows > p
    if job != _PINV:
        src("unreliable = 0")
    with src.block("for l in range(count):"):
        g = load("g", at["g"], p, p)
        squares = [
            src.let("square", " + ".join(src.abs2(g.get(i, j)) for i in range(p))) for j in range(p)
        ]
        if job == _VALUES:
            roots = [src.let("sv", f"math.sqrt({q})") for q in squares]
            for j, root in enumerate(emit_sorted(src, roots)):
                src(f"work[{at['norm'] + j}, l] = {root}")
            return
        for j, q in enumerate(squares):
            src(f"work[{at['norm'] + j}, l] = {q}")
        if job != _PINV:
            src("unreliable += " + " + ".join(f"int({q} < COL_FLOOR)" for q in squares))
    if job != _PINV:
        with src.block("if unreliable:"), src.block("for l in range(count):"):
            with src.block(f"if work[{at['bad']}, l].real == 0:"):
                src(f"complete_columns(gv, nv, {p}, l, COL_FLOOR, scratch)")
    with src.block("for l in range(count):"):
        g = load("g", at["g"], p, p)
        squares = [src.let("square", f"work[{at['norm'] + j}, l].real") for j in range(p)]
        if job == _PINV:
            largest = squares[0]
            for q in squares[1:]:
                largest = src.let("largest", f"max({largest}, {q})")
            cut = src.let("cut", f"work[{at['cut']}, l].real")
            cutoff = src.let("cutoff", f"{cut} * {cut} * {largest}")
            weights = [
                src.let(
                    "weight",
                    f"select(({q} > {cutoff}) & ({q} >= COL_FLOOR), R1 / {q}, R0)",
                )
                for q in squares
            ]
            columns = g
        else:
            roots = [src.let("sv", f"math.sqrt({q})") for q in squares]
            scales = [
                src.let("scale", f"select({q} >= COL_FLOOR, R1 / {r}, R1)")
                for q, r in zip(squares, roots)
            ]
            columns = Entries("us")
            for j in range(p):
                for i in range(p):
                    columns.assign(src, i, j, src.scaled(scales[j], g.get(i, j)))
            for j in range(p):  # the rank of each singular value, ties in column order
                later = [f"int({squares[k]} > {squares[j]})" for k in range(j + 1, p)]
                earlier = [f"int({squares[k]} >= {squares[j]})" for k in range(j)]
                src(f"work[{at['rank'] + j}, l] = {' + '.join(earlier + later) or '0'}")
                src(f"work[{at['norm'] + j}, l] = {roots[j]}")
        cols = (rows if job == _FULL else p) if factored else p
        if factored:  # Q [columns, 0; 0, I]
            big = Entries("q")
            for c in range(cols):
                for i in range(rows):
                    if c < p and i < p:
                        big.names[(i, c)] = columns.get(i, c)
                    else:
                        big.set_constant(i, c, "1" if i == c else "0")
            reflectors = Entries("h")
            for j in range(p):
                for i in range(j + 1, rows):
                    reflectors.assign(src, i, j, f"work[{j * rows + i}, l]")
            for j in range(p - 1, -1, -1):
                tau = src.let("tau", f"work[{at['tau'] + j}, l]")
                for c in range(cols):
                    emit_apply(src, reflectors, j, rows, big, c, tau, adjoint=False)
            columns = big
        if job != _PINV:
            _store_known(src, columns, rows if factored else p, cols, at["out"])
        else:
            v = load("v", at["v"], p, p)
            for i in range(n):  # x = V diag(w) columns^H, or columns diag(w) V^H when wide
                for c in range(m):
                    terms = [
                        f"{src.scaled(weights[j], columns.get(i, j))} * {src.conj(v.get(c, j))}"
                        if m < n
                        else f"{src.scaled(weights[j], v.get(i, j))} * "
                        f"{src.conj(columns.get(c, j))}"
                        for j in range(p)
                        if (columns.get(i, j) if m < n else columns.get(c, j)) != "0"
                    ]
                    src(f"work[{at['out'] + i * m + c}, l] = {' + '.join(terms) or 'ZERO'}")


def _emit_stores(src, m, n, job, at):
    """Copy each matrix's results from the work array to the outputs (a loop per matrix:
    these are scattered stores), scaled back; NaN for a matrix with an inf or NaN."""
    rows, p = max(m, n), min(m, n)
    conj = src.conj
    with src.block("for l in range(count):"):
        src("b = first + l")
        src(f"f1, f2 = pow2_pair({'' if job == _PINV else '-'}int(work[{at['k']}, l].real))")
        if job == _VALUES:
            with src.block(f"for j in range({p}):"):
                src(f"s[b, j] = work[{at['norm']} + j, l].real * f1 * f2")
        elif job == _PINV:
            with src.block(f"for i in range({n}):"), src.block(f"for c in range({m}):"):
                src(f"x[b, i, c] = work[{at['out']} + i * {m} + c, l] * f1 * f2")
        else:
            for j in range(p):  # written out: loops here cost more than their stores
                r = src.let("r", f"int(work[{at['rank'] + j}, l].real)")
                src(f"s[b, {r}] = work[{at['norm'] + j}, l].real * f1 * f2")
                for i in range(rows if m >= n else p):
                    source = at["out"] + j * rows + i if m >= n else at["v"] + j * p + i
                    src(f"u[b, {i}, {r}] = work[{source}, l]")
                for i in range(p if m >= n else rows):
                    source = at["v"] + j * p + i if m >= n else at["out"] + j * rows + i
                    src(f"vh[b, {r}, {i}] = {conj(f'work[{source}, l]')}")
            if job == _FULL and rows > p:
                with (
                    src.block(f"for c in range({p}, {rows}):"),
                    src.block(f"for i in range({rows}):"),
                ):
                    extra = f"work[{at['out']} + c * {rows} + i, l]"
                    if m < n:
                        src(f"vh[b, c, i] = {conj(extra)}")
                    else:
                        src(f"u[b, i, c] = {extra}")
        src(f"failed = work[{at['bad']}, l].real != 0")
        src("info[b] = select(failed, 1, stuck[l])")
        with src.block("if failed:"):
            src("fill_nan(b, s, u, vh, x)")


# --------------------------------------------------------------------------- running


def svd_kernel(m, n, dtype, job, specialised=None):
    """``(kernel, lanes)`` for ``m x n`` matrices of ``dtype`` and ``job`` (a :data:`JOBS`
    value): ``specialised`` (default: with sizes baked in, :func:`~._jit.static_size`),
    straight-line code up to :data:`UNROLL_UP_TO`; else the kernel that takes the sizes
    at run time, also for sizes 0 (any size; ``lanes`` None: :func:`run` chooses)."""
    if specialised is None:
        specialised = bool(m and n and static_size(max(m, n)))
    if specialised and m and n and unrolled(m, n, UNROLL_UP_TO):
        if m == n and job == _FULL:
            job = _REDUCED  # the same thing for square matrices
        return Kernel(_unrolled_gesvd_kernel, (m, n, np.dtype(dtype), job)), 0
    return Kernel(_gesvd_kernel), (block_lanes(max(m, n), min(m, n)) if m and n else None)


def run(kernel, lanes, a, job, cut=None, sweeps=MAX_SWEEPS):
    """Launch ``kernel`` (from :func:`svd_kernel`) on ``a`` (batch, m, n), C-contiguous.

    Returns ``(s, u, vh, info)``, or ``(x, info)`` for the pseudo-inverse
    (``cut``: per-matrix ``rcond``, shape (batch,)).  ``u`` and ``vh`` are
    ``(batch, 0, 0)`` for singular values only.  ``sweeps``: the most Jacobi
    sweeps (a test lowers it to see a failure).
    """
    batch, m, n = a.shape
    dtype = a.dtype
    real = np.finfo(dtype).dtype
    p, rows = min(m, n), max(m, n)
    s = np.empty((batch, p if job != _PINV else 0), real)
    vectors = job in (_REDUCED, _FULL)
    u = np.empty((batch, m, m if job == _FULL else p) if vectors else (batch, 0, 0), dtype)
    vh = np.empty((batch, n if job == _FULL else p, n) if vectors else (batch, 0, 0), dtype)
    x = np.empty((batch, n, m) if job == _PINV else (batch, 0, 0), dtype)
    info = np.zeros(batch, np.int32)
    if lanes is None:
        lanes = block_lanes(rows, p) if p else 1
    if cut is None:
        cut = np.zeros(batch if job == _PINV else 0, real)
    if batch == 0:
        return (x, info) if job == _PINV else (s, u, vh, info)
    if p == 0:
        _zero_sized(u, vh, x)
    else:
        launch(
            kernel,
            batch,
            20 * rows * p * p + 60 * p**3,
            a,
            s,
            u,
            vh,
            x,
            info,
            job,
            np.ascontiguousarray(cut, real),
            lanes,
            fast_limits(dtype),
            scale_target(dtype, rows, p),
            tolerance(dtype, p),
            sweeps,
        )
    return (x, info) if job == _PINV else (s, u, vh, info)


def _zero_sized(u, vh, x):
    """An empty core dimension: identities where full_matrices asks for square factors."""
    x[...] = 0
    for out in (u, vh):
        if out.shape[1] and out.shape[1] == out.shape[2]:
            out[...] = np.eye(out.shape[1], dtype=out.dtype)


def gesvd(a, compute_uv=True, full_matrices=True, *, specialised=True, sweeps=MAX_SWEEPS):
    """``(s, u, vh, info)`` of every matrix of ``a`` (batch, m, n), as ``numpy.linalg.svd``.

    ``u`` and ``vh`` are empty when not ``compute_uv``.  ``specialised``:
    the kernel for these sizes (straight-line code up to 5x5) rather than the
    one that takes the sizes at run time.
    """
    a = np.ascontiguousarray(a)
    job = (_FULL if full_matrices else _REDUCED) if compute_uv else _VALUES
    m, n = a.shape[1:]
    return run(*svd_kernel(m, n, a.dtype, job, specialised), a, job, sweeps=sweeps)


def pinv(a, rcond, *, specialised=True):
    """``(x, info)``: the pseudo-inverse of every matrix of ``a`` (batch, m, n), singular
    values at or below ``rcond * s[0]`` (a scalar or one per matrix) treated as zero."""
    a = np.ascontiguousarray(a)
    m, n = a.shape[1:]
    cut = np.broadcast_to(np.asarray(rcond, np.finfo(a.dtype).dtype), a.shape[:1])
    return run(*svd_kernel(m, n, a.dtype, _PINV, specialised), a, _PINV, cut)


# --------------------------------------------------------------------------- the routine


def _job(pattern):
    if not pattern.option("vectors"):
        return _VALUES
    return _FULL if pattern.option("full") else _REDUCED


def _outputs(s, u, vh, info, vectors):
    return (u, s, vh, info) if vectors else (s, info)


def gesvd_kernel(pattern):
    """``numpy.linalg.svd`` on the generated kernels; options ``vectors`` (compute_uv)
    and ``full`` (full_matrices)."""
    job, vectors = _job(pattern), pattern.option("vectors")
    kernel, lanes = svd_kernel(pattern.dim("m"), pattern.dim("n"), pattern.np_dtype, job)

    def run_kernel(a):
        return _outputs(*run(kernel, lanes, a, job), vectors)

    return run_kernel


def gesvd_per_matrix(pattern):
    """``numpy.linalg.svd`` of one matrix: one with an inf or NaN gets NaN results and
    ``info = 1``, as on the kernels (NumPy raises "SVD did not converge" for a NaN; on an
    inf LAPACK may return NaNs or never return, so it is not called)."""
    vectors, full, dtype = pattern.option("vectors"), pattern.option("full"), pattern.np_dtype
    svd = _numpy_svd(pattern)

    def run(a):
        if _all_finite(a):
            try:
                found = svd(a)
            except np.linalg.LinAlgError:  # did not converge
                pass
            else:
                return (*found, 0)
        (m, n), nan = a.shape, np.nan
        p = min(m, n)
        s = np.full(p, nan, np.finfo(dtype).dtype)
        if not vectors:
            return s, 1
        return (
            np.full((m, m if full else p), nan, dtype),
            s,
            np.full((n if full else p, n), nan, dtype),
            1,
        )

    return run


def gesvd_numpy(pattern):
    """``numpy.linalg.svd``; ``LinAlgError`` for infs or NaNs, before LAPACK sees them (see
    :func:`gesvd_per_matrix`)."""
    svd = _numpy_svd(pattern)

    def compute(a):
        if not _all_finite(a):
            raise np.linalg.LinAlgError("SVD of a matrix with infs or NaNs")
        return svd(a)

    return compute


def _numpy_svd(pattern):
    """``numpy.linalg.svd``'s call in the pattern's mode, outputs as a tuple."""
    if not pattern.option("vectors"):
        return numpy_linalg("svd", pattern.np_dtype)
    return numpy_linalg("svd_f" if pattern.option("full") else "svd_s", pattern.np_dtype)


def _all_finite(a):
    return bool(np.logical_and.reduce(np.isfinite(a), axis=None))
