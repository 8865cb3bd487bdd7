"""Least squares on the CPU: ``gels`` (``numpy.linalg.lstsq``), for every rank.

One algorithm for every matrix, whatever its rank: a QR factorisation of
``a`` when ``m >= n``, of ``a^H`` when ``m < n`` (``a = L Q^H`` with ``L =
R^H``), then the pseudo-inverse of the small triangular factor ``M`` (``R``,
or ``L``) from its singular value decomposition.  Since ``Q`` has orthonormal
columns, ``a^+ b = M^+ Q^H b`` (tall) or ``Q M^+ b`` (wide), the singular
values of ``M`` are those of ``a``, and the result is NumPy's (LAPACK
``xGELSD``): the minimum-norm least-squares solution, with singular values
at or below ``rcond * s[0]`` treated as zero, and ``rank`` the number of
the others.

The SVD of ``M`` is a one-sided (Hestenes) Jacobi SVD (:mod:`._jacobi`): rotations ``V`` make
the columns of ``W = M V`` orthogonal, their norms are the singular values
``s``, and ``M^+ y = V diag(1/s^2) W^H y`` over the singular values above
the cut-off.  It runs in double precision also for single-precision input:
it is small, and the error of ``s`` is then that of the QR alone, where
single-precision rotations added up to ``condition number * eps``.  LAPACK
is not reachable from numba without SciPy, and the QR is already the
preconditioning that makes Jacobi converge in a few sweeps.

Squared singular values cannot overflow or lose the rank decision to
underflow: a matrix (and a right-hand side) whose largest entry lies outside
``scaling_limits`` is scaled by a power of two first, exactly, and the
results are scaled back (``xGELSD`` scales the same way).  A matrix with an
inf or NaN entry is the one failure (``info = 1``), as NumPy raises there.

As in :mod:`blocksolve.cpu.qr` there are two kernels over blocks of
matrices: straight-line code per shape up to 8x8 (:mod:`._unrolled`), run-time
sizes above.
"""

from __future__ import annotations

import math

import numpy as np

from ..._cache import memo
from ..._numerics import lstsq_cutoff, lstsq_residual_count
from .._jit import jit, launch
from ._householder import (
    HOUSEHOLDER_REAL_ROWS,
    HOUSEHOLDER_VALUE_ROWS,
    abs2,
    apply_reflector,
    block_helper,
    fast_limits,
    householder_block,
    load_block,
    narrow_lanes,
)
from ._jacobi import MAX_SWEEPS, jacobi_sweeps, triangle
from ._pow2 import pow2_factors, times_pow2
from ._unrolled import (
    Entries,
    Source,
    _product,
    _sum,
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
    kernels_for,
    unrolled_lanes,
)

__all__ = ["gels", "scaling_limits"]


def scaling_limits(dtype):
    """``[small, big]``: a matrix whose largest ``|Re|, |Im|`` lies outside is scaled.

    Inside, squared singular values down to ``eps * small`` and up to
    ``big * sqrt(n)`` are normal numbers, so the Jacobi sweeps on squared
    norms keep the rank decision exact; a quarter of the exponent range
    each way.
    """
    info = np.finfo(dtype)
    return np.array([2.0 ** (info.minexp // 4), 2.0 ** (info.maxexp // 4)], info.dtype)


@block_helper
def peak_exponents(work, entries, count, limits, exponents, failed):
    """How to scale each lane of ``work[:entries, lane]``, and whether it holds an inf or NaN.

    ``exponents[l]`` is 0 when the lane's largest ``|Re|, |Im|`` lies within
    ``limits`` (or is 0, inf or NaN), else the ``e`` with that peak in
    ``[2**(e-1), 2**e)``: scaled by ``2**-e``, it lies in ``[0.5, 1)``.
    """
    peak = np.zeros(work.shape[1], limits.dtype)
    bad = np.zeros(work.shape[1], np.bool_)
    for e in range(entries):
        for l in range(work.shape[1]):
            x = work[e, l]
            size = max(abs(x.real), abs(x.imag))
            peak[l] = max(peak[l], size)
            bad[l] |= not size < math.inf  # also NaN
    for l in range(count):
        p = peak[l]
        inside = (p >= limits[0] and p <= limits[1]) or p == 0
        exponents[l] = 0 if inside or bad[l] else math.frexp(p)[1]
        failed[l] = bad[l]


@block_helper
def apply_exponents(work, entries, count, exponents):
    """``work[:entries, l] *= 2**-exponents[l]`` for the lanes that need it."""
    for l in range(count):
        if exponents[l] != 0:
            f1, f2, f3 = pow2_factors(-exponents[l])
            for e in range(entries):
                work[e, l] = work[e, l] * f1 * f2 * f3


@block_helper
def rhs_exponents(b, first, count, limits, exponents):
    """:func:`peak_exponents` of the right-hand sides ``b[first + l]`` (infs and NaNs ignored)."""
    for l in range(count):
        peak = 0.0
        for i in range(b.shape[1]):
            for col in range(b.shape[2]):
                x = b[first + l, i, col]
                size = max(abs(x.real), abs(x.imag))
                peak = max(peak, size) if size < math.inf else peak
        inside = (peak >= limits[0] and peak <= limits[1]) or peak == 0
        exponents[l] = 0 if inside else math.frexp(peak)[1]


@block_helper
def _load_rhs(b, first, count, c, m, rows, k):
    """``c[col, i, l] = b[first + l, i, col]``; rows ``m:rows`` are zero."""
    for l in range(count):
        for i in range(m):
            for col in range(k):
                c[col, i, l] = b[first + l, i, col]
    for col in range(k):
        for i in range(m, rows):
            for l in range(c.shape[2]):
                c[col, i, l] = 0


@block_helper
def _pseudo_inverse_weights(norms, p, lanes, rcond, weights, found):
    """``weights[j] = 1 / s_j^2`` for the singular values above ``rcond * max(s)``, else 0;
    ``found`` = their number (the rank).

    A value whose square ``norms[j]`` is not a normal number (below ``sqrt(tiny)``, about
    1e-154 of the largest after scaling) is never kept, whatever ``rcond``: the Jacobi SVD
    does not resolve it, and its weight would be infinite.
    """
    floor = math.sqrt(np.finfo(norms.dtype).tiny)
    for l in range(lanes):
        largest = 0.0
        for j in range(p):
            largest = max(largest, norms[j, l])
        cutoff = max(rcond * math.sqrt(largest), floor)
        found[l] = 0
        for j in range(p):
            keep = math.sqrt(norms[j, l]) > cutoff
            weights[j, l] = 1 / norms[j, l] if keep else 0
            found[l] += keep


@block_helper
def _apply_pseudo_inverse(g, v, weights, y, p, lanes, z):
    """``y[:p] <- V diag(weights) W^H y[:p]`` in place (``M^+ y`` for ``M V = W``).

    ``z`` is scratch ``(p, lanes)``.  With ``W``'s columns orthogonal only to
    the Jacobi tolerance, this form keeps ``M x - y`` at that tolerance
    times ``|y|``; ``W diag(weights) V^H`` for ``M^H V = W`` would multiply
    it by the condition number.
    """
    for j in range(p):
        for l in range(lanes):
            z[j, l] = 0
        for i in range(p):
            for l in range(lanes):
                z[j, l] += np.conj(g[j, i, l]) * y[i, l]
        for l in range(lanes):
            z[j, l] *= weights[j, l]
    for i in range(p):
        for l in range(lanes):
            y[i, l] = 0
        for j in range(p):
            for l in range(lanes):
                y[i, l] += v[j, i, l] * z[j, l]


@block_helper
def _triangular_residual(w, y, x, n, lanes, total):
    """``total += |y - R x|^2`` for the upper triangle ``R`` of ``w`` (n x n)."""
    for i in range(n):
        for l in range(lanes):
            r = y[i, l]
            for j in range(i, n):
                r -= w[j, i, l] * x[j, l]
            total[l] += abs2(r)


@block_helper
def _sorted_descending(norms, p, lanes, out):
    """``out[:p]`` = square roots of ``norms[:p]``, largest first (the whole block at once)."""
    for j in range(p):
        for l in range(lanes):
            out[j, l] = math.sqrt(norms[j, l])
    for top in range(p - 1, 0, -1):
        for j in range(top):
            for l in range(lanes):
                x, y = out[j, l], out[j + 1, l]
                out[j, l] = x if x >= y else y
                out[j + 1, l] = y if x >= y else x


@block_helper
def _store_results(
    first,
    count,
    n,
    p,
    c,
    dropped_or_tail,
    values,
    found,
    failed,
    ea,
    eb,
    x,
    residuals,
    rank,
    s,
    info,
):
    """Scale back and store one block's results (``x`` from ``c[col, :n]``)."""
    for l in range(count):
        bi = first + l
        f1, f2, f3 = pow2_factors(eb[l] - ea[l])
        for i in range(n):
            for col in range(c.shape[0]):
                x[bi, i, col] = c[col, i, l] * f1 * f2 * f3
        for col in range(residuals.shape[1]):
            residuals[bi, col] = times_pow2(dropped_or_tail[col, l], 2 * eb[l])
        for j in range(p):
            s[bi, j] = times_pow2(values[j, l], ea[l])
        rank[bi] = found[l]
        info[bi] = 1 if failed[l] else 0


@jit
def _gels_kernel(
    start, stop, a, b, x, residuals, rank, s, info, rcond, lanes, limits, scaling, tol, wide
):
    lanes = narrow_lanes(lanes, start, stop)
    m, n, k = a.shape[1], a.shape[2], b.shape[2]
    is_wide = m < n
    rows, p = max(m, n), min(m, n)
    real = limits.dtype
    w = np.zeros((p, rows, lanes), a.dtype)
    t = np.zeros((p, lanes), a.dtype)
    c = np.zeros((k, rows, lanes), a.dtype)
    y = np.zeros((p, lanes), a.dtype)
    reflector_reals = np.zeros((HOUSEHOLDER_REAL_ROWS, lanes), real)
    reflector_values = np.zeros((HOUSEHOLDER_VALUE_ROWS, lanes), a.dtype)
    dot = reflector_values[0]
    # The p x p SVD in double precision (``wide``'s dtype), also for single-precision input.
    g = np.zeros((p, p, lanes), wide.dtype)
    v = np.zeros((p, p, lanes), wide.dtype)
    z = np.zeros((p, lanes), wide.dtype)
    wdot = np.zeros(lanes, wide.dtype)
    sine = np.zeros(lanes, wide.dtype)
    cosine = np.zeros(lanes, wide.real.dtype)
    norms = np.zeros((p, lanes), wide.real.dtype)
    weights = np.zeros((p, lanes), wide.real.dtype)
    values = np.zeros((p, lanes), wide.real.dtype)
    tail = np.zeros((max(k, 1), lanes), real)
    found = np.zeros(lanes, np.int64)
    ea = np.zeros(lanes, np.int64)
    eb = np.zeros(lanes, np.int64)
    failed = np.zeros(lanes, np.bool_)
    unconverged = np.zeros(lanes, np.int64)
    for first in range(start, stop, lanes):
        count = min(lanes, stop - first)
        load_block(a, first, count, w, rows, p, is_wide)
        peak_exponents(w.reshape((p * rows, lanes)), p * rows, count, scaling, ea, failed)
        apply_exponents(w.reshape((p * rows, lanes)), p * rows, count, ea)
        householder_block(w, t, rows, p, lanes, limits, reflector_reals, reflector_values)
        triangle(w, g, v, p, lanes, is_wide)
        jacobi_sweeps(g, v, p, lanes, norms, wdot, cosine, sine, tol, 0.0, unconverged, MAX_SWEEPS)
        _pseudo_inverse_weights(norms, p, lanes, rcond, weights, found)
        _sorted_descending(norms, p, lanes, values)

        _load_rhs(b, first, count, c, m, rows, k)
        rhs_exponents(b, first, count, scaling, eb)
        apply_exponents(c.reshape((k * rows, lanes)), k * rows, count, eb)
        for col in range(k):
            for l in range(lanes):
                tail[col, l] = 0
            if not is_wide:  # c <- Q^H c; what lies below row n is the residual
                for j in range(n):
                    apply_reflector(w, t, j, m, c, col, lanes, dot, True)
                for i in range(n, m):
                    for l in range(lanes):
                        tail[col, l] += abs2(c[col, i, l])
            for i in range(p):
                for l in range(lanes):
                    y[i, l] = c[col, i, l]
            _apply_pseudo_inverse(g, v, weights, c[col], p, lanes, z)
            if m > n:
                _triangular_residual(w, y, c[col], n, lanes, tail[col])
            if is_wide:  # x = Q [M^+ b; 0]
                for i in range(m, n):
                    for l in range(lanes):
                        c[col, i, l] = 0
                for j in range(m - 1, -1, -1):
                    apply_reflector(w, t, j, n, c, col, lanes, dot, False)
        _store_results(
            first, count, n, p, c, tail, values, found, failed, ea, eb, x, residuals, rank, s, info
        )


def _emit_solve(src, m, n, p, at):
    """One right-hand side ``work[c:c + m]`` -> solution ``work[c:c + n]`` and residual
    ``work[res]``, straight-line; as the loop over ``col`` in :func:`_gels_kernel`.

    ``at`` maps the names of the work-array sections to their first rows.
    """
    rows = max(m, n)
    a = Entries("a")
    emit_load(src, a, rows, p, 0)
    taus = [src.let("tau", f"work[{at['tau'] + j}, l]") for j in range(p)]
    c = Entries("c")
    for i in range(rows):
        if i < m:
            c.assign(src, i, 0, f"work[{at['c'] + i}, l]")
        else:
            c.set_constant(i, 0, "0")
    tail = []
    if m >= n:  # c <- Q^H c; what lies below row n is the residual
        for j in range(p):
            emit_apply(src, a, j, m, c, 0, taus[j], adjoint=True)
        tail = [src.abs2(c.get(i, 0)) for i in range(n, m)]
    g, v = Entries("g"), Entries("v")
    emit_load(src, g, p, p, at["g"], "svd")
    emit_load(src, v, p, p, at["v"], "svd")
    weights = [src.let("weight", f"svd[{at['weight'] + j}, l].real") for j in range(p)]
    y = [c.get(i, 0) for i in range(p)]
    z = []
    for j in range(p):
        dot = _sum(_product(src.conj(g.get(i, j)), y[i]) for i in range(p))
        z.append(src.let("z", f"({dot}) * {weights[j]}") if dot else "0")
    for i in range(p):
        c.assign(src, i, 0, _sum(_product(v.get(i, j), z[j]) for j in range(p)) or "0.0")
    if m > n:  # |Q^H b below row n|^2 + |y - R x|^2
        for i in range(n):
            fit = _sum(_product(a.get(i, j), c.get(j, 0)) for j in range(i, n))
            tail.append(src.abs2(src.let("r", f"{y[i]} - ({fit})")))
        src(f"work[{at['res']}, l] = {' + '.join(tail)}")
    if m < n:  # x = Q [M^+ b; 0]
        for i in range(m, n):
            c.set_constant(i, 0, "0")
        for j in range(p - 1, -1, -1):
            emit_apply(src, a, j, n, c, 0, taus[j], adjoint=False)
    for i in range(n):
        src(f"work[{at['c'] + i}, l] = {c.get(i, 0)}")


@memo("cpu-straight-line-lstsq", maxsize=256)
def _unrolled_gels_kernel(m, n, dtype):
    """:func:`_gels_kernel` as straight-line code for ``m x n`` matrices.

    Right-hand sides are solved one column at a time; the Jacobi sweeps run
    until no matrix of the block rotates.
    """
    wide = m < n
    rows, p = max(m, n), min(m, n)
    lanes = unrolled_lanes(dtype)
    # work rows: the factored matrix (column-major), tau, one right-hand side, its
    # residual, the careful-path flag; svd rows (double precision): W = G V and V
    # (column-major), the pseudo-inverse weights
    at = {"tau": rows * p}
    at["c"] = at["tau"] + p
    at["res"] = at["c"] + rows
    at["flag"] = at["res"] + 1
    at["g"] = 0
    at["v"] = p * p
    at["weight"] = 2 * p * p

    def load(prefix, at_row):
        entries = Entries(prefix)
        emit_load(src, entries, p, p, at_row, "svd")
        return entries

    src = Source(dtype.kind == "c")
    with src.block(
        "def KERNEL(start, stop, a, b, x, residuals, rank, s, info, rcond, lanes, "
        "limits, scaling, tol, wide):"
    ):
        src("k = b.shape[2]")
        src("tol2 = tol * tol")
        src("low, high = limits[0], limits[1]")
        src(f"work = np.zeros(({at['flag'] + 1}, {lanes}), a.dtype)")
        src(f"svd = np.zeros(({2 * p * p + p}, {lanes}), wide.dtype)")
        src(f"w = work[:{rows * p}].reshape(({p}, {rows}, {lanes}))")
        emit_scratch(src, lanes)
        src(f"values = np.zeros(({p}, {lanes}), wide.real.dtype)")
        src("sv_floor = math.sqrt(np.finfo(values.dtype).tiny)  # see _pseudo_inverse_weights")
        src(f"found = np.zeros({lanes}, np.int64)")
        src(f"ea = np.zeros({lanes}, np.int64)")
        src(f"eb = np.zeros({lanes}, np.int64)")
        src(f"failed = np.zeros({lanes}, np.bool_)")
        with src.block(f"for first in range(start, stop, {lanes}):"):
            src(f"count = min({lanes}, stop - first)")
            emit_block_in(src, rows, p, wide)
            src(f"peak_exponents(work, {rows * p}, count, scaling, ea, failed)")
            src(f"apply_exponents(work, {rows * p}, count, ea)")
            with src.block("for l in range(count):"):
                a = Entries("a")
                emit_load(src, a, rows, p, 0)
                taus, careful = emit_householder(src, a, rows, p, [])
                emit_store(src, a, rows, p, 0)
                for j, tau in enumerate(taus):
                    src(f"work[{at['tau'] + j}, l] = {tau}")
                src(f"work[{at['flag']}, l] = {careful}")
            emit_careful_redo(
                src,
                rows,
                p,
                wide,
                at["flag"],
                at["tau"],
                f"apply_exponents(work, {rows * p}, count, ea)",
            )
            with src.block("for l in range(count):"):  # G = M, V = I
                g, v = Entries("g"), Entries("v")
                for col in range(p):
                    for row in range(p):
                        if (row < col) if wide else (row > col):
                            g.set_constant(row, col, "0")
                        elif wide:  # M = L = R^H
                            g.assign(src, row, col, src.conj(f"work[{row * rows + col}, l]"))
                        else:  # M = R
                            g.assign(src, row, col, f"work[{col * rows + row}, l]")
                        v.set_constant(row, col, "1" if row == col else "0")
                emit_store(src, g, p, p, at["g"], "svd")
                emit_store(src, v, p, p, at["v"], "svd")
            with src.block(f"for sweep in range({MAX_SWEEPS}):"):
                src("rotated = 0")
                with src.block("for l in range(count):"):
                    g, v = load("g", at["g"]), load("v", at["v"])
                    src(f"rotated += {emit_jacobi_sweep(src, g, p, v)}")
                    emit_store(src, g, p, p, at["g"], "svd")
                    emit_store(src, v, p, p, at["v"], "svd")
                with src.block("if rotated == 0:"):
                    src("break")
            with src.block("for l in range(count):"):
                g = load("g", at["g"])
                squares = [
                    src.let("square", " + ".join(src.abs2(g.get(i, j)) for i in range(p)))
                    for j in range(p)
                ]
                roots = [src.let("sv", f"math.sqrt({q})") for q in squares]
                ordered = emit_sorted(src, roots)
                cutoff = src.let("cutoff", f"max(rcond * {ordered[0]}, sv_floor)")
                for j, (q, r) in enumerate(zip(squares, roots)):
                    src(f"svd[{at['weight'] + j}, l] = select({r} > {cutoff}, 1 / {q}, 0.0)")
                    src(f"values[{j}, l] = {ordered[j]}")
                src("found[l] = " + " + ".join(f"int({r} > {cutoff})" for r in roots))
            src("rhs_exponents(b, first, count, scaling, eb)")
            with src.block("for col in range(k):"):
                with src.block("for l in range(count):"):
                    src("f1, f2, f3 = pow2_factors(-eb[l])")
                    with src.block(f"for i in range({m}):"):
                        src(f"work[{at['c']} + i, l] = b[first + l, i, col] * f1 * f2 * f3")
                with src.block("for l in range(count):"):
                    _emit_solve(src, m, n, p, at)
                with src.block("for l in range(count):"):
                    src("f1, f2, f3 = pow2_factors(eb[l] - ea[l])")
                    with src.block(f"for i in range({n}):"):
                        src(f"x[first + l, i, col] = work[{at['c']} + i, l] * f1 * f2 * f3")
                    if m > n:
                        src(
                            f"residuals[first + l, col] = "
                            f"times_pow2(work[{at['res']}, l].real, 2 * eb[l])"
                        )
            with src.block("for l in range(count):"):
                with src.block(f"for j in range({p}):"):
                    src("s[first + l, j] = times_pow2(values[j, l], ea[l])")
                src("rank[first + l] = found[l]")
                src("info[first + l] = select(failed[l], 1, 0)")
    return compile_kernel(
        f"gels_{m}x{n}_{dtype.name}",
        src.text(),
        dtype,
        {
            "peak_exponents": peak_exponents,
            "apply_exponents": apply_exponents,
            "rhs_exponents": rhs_exponents,
            "pow2_factors": pow2_factors,
            "times_pow2": times_pow2,
        },
    )


def _zero_sized(b, x, residuals, m, n):
    """``m == 0`` or ``n == 0``: ``x = 0``, rank 0, residuals ``|b|^2`` when ``m > n``."""
    x[...] = 0
    if residuals.shape[-1]:
        residuals[...] = (b.real**2 + b.imag**2).sum(axis=1)


def gels(pattern):
    """Least-squares solve with rank and singular values; run-time ``rcond``.

    The sizes are read from the operands (a pattern with sizes 0 runs every size).
    """
    dtype = pattern.np_dtype
    real = np.finfo(dtype).dtype
    limits, scaling = fast_limits(dtype), scaling_limits(dtype)
    eps = float(np.finfo(dtype).eps)
    wide = np.zeros(0, np.result_type(dtype, np.float64))  # the small SVD's dtype
    kernel_for = kernels_for(pattern, _gels_kernel, _unrolled_gels_kernel)

    def run(a, b, rcond=None):
        batch, m, n = a.shape
        k = b.shape[2]
        p = min(m, n)
        x = np.empty((batch, n, k), dtype)
        residuals = np.empty((batch, lstsq_residual_count({"m": m, "n": n, "k": k})), real)
        rank = np.zeros(batch, np.int32)
        s = np.empty((batch, p), real)
        info = np.zeros(batch, np.int32)
        if not p:
            _zero_sized(b, x, residuals, m, n)
        else:
            kernel, lanes = kernel_for(m, n)
            launch(
                kernel,
                batch,
                4 * m * n * p + 40 * p**3 + 4 * m * n * k,
                a,
                b,
                x,
                residuals,
                rank,
                s,
                info,
                lstsq_cutoff(rcond, m, n, dtype),
                lanes,
                limits,
                scaling,
                eps * p,
                wide,
            )
        return x, residuals, rank, s, info

    return run


def gels_per_matrix(pattern):
    """``numpy.linalg.lstsq`` (LAPACK ``xGELSD``): NumPy's lstsq takes no stacks.

    ``rcond`` goes to NumPy as the caller gave it (not as :func:`lstsq_cutoff`, the
    kernels' reading, which makes NaN 0: ``xGELSD`` takes 0 for its eps), so that
    ``x``, ``rank`` and ``s`` are NumPy's, and ``residuals`` where NumPy returns them.
    NumPy leaves ``residuals`` empty for a rank-deficient matrix; blocksolve's are
    the squared norms of ``b - a x`` then.  A matrix with an inf or NaN fails (NumPy
    raises "SVD did not converge"): NaN ``x``, ``residuals`` and ``s``, rank 0.
    """
    dtype = pattern.np_dtype
    real = np.finfo(dtype).dtype

    def run(a, b, rcond=None):
        (m, n), k = a.shape, b.shape[1]
        count = lstsq_residual_count({"m": m, "n": n, "k": k})
        if not np.isfinite(a).all():
            nan = np.nan
            x, residuals, s = (
                np.full((n, k), nan, dtype),
                np.full(count, nan, real),
                np.full(min(m, n), nan, real),
            )
            return x, residuals, np.int32(0), s, 1
        x, residuals, rank, s = np.linalg.lstsq(a, b, rcond=rcond)
        if count and not residuals.size:
            residuals = np.sum(np.abs(b - a @ x) ** 2, 0)
        return x, residuals, np.int32(rank), s, 0

    return run
