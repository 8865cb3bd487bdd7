"""Reciprocal condition numbers in the 1-norm from a factorisation, as LAPACK's
``xGECON`` (LU factors), ``xPOCON`` (Cholesky factors) and ``xTRCON`` (triangular
matrices, their own factors) estimate them.

``rcond = 1 / (||a||_1 ||a^-1||_1)``, with ``||a^-1||_1`` estimated by Higham's
iteration (LAPACK ``xLACN2``: a few solves with ``a`` and ``a^H`` through the
factors, no inverse formed).  SciPy's ``solve`` warns when it is below the
machine epsilon; the kernels report such a matrix with ``info = n + 1``, as
LAPACK's expert drivers ``xGESVX``/``xPOSVX`` do.  The triangular solves are
unscaled (``xLATRS`` scales to avoid overflow): where they overflow, ``rcond``
is 0 or NaN instead of tiny, and the matrix is flagged all the same.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import overload

from .._jit import jit

__all__ = [
    "LU",
    "CHOLESKY_LOWER",
    "CHOLESKY_UPPER",
    "TRIANGULAR_LOWER",
    "TRIANGULAR_UPPER",
    "condition_work",
    "one_norm",
    "hermitian_one_norm",
    "triangular_one_norm",
    "reciprocal_condition",
    "singular_to_working_precision",
    "flagged_if",
    "condition_names",
    "emit_one_norm",
    "emit_bound_decides",
    "emit_condition_flag",
    "emit_condition_check",
]

# How a factor applies a^-1 (the factor kinds of reciprocal_condition).
LU = 0  # unit lower L below the diagonal, U on and above it (getrf; pivots not needed)
CHOLESKY_LOWER = 1  # a = L L^H, L in the lower triangle
CHOLESKY_UPPER = 2  # a = U^H U, U in the upper triangle
TRIANGULAR_LOWER = 3  # a is the lower triangle (non-unit diagonal)
TRIANGULAR_UPPER = 4  # a is the upper triangle (non-unit diagonal)

_ITERATIONS = 5  # xLACN2's ITMAX


@numba.njit(inline="always", error_model="numpy")
def condition_work(a):
    """Scratch ``(x, signs)`` for :func:`reciprocal_condition` on factors like the
    ``(..., n, n)`` array ``a``."""
    n = a.shape[-1]
    return np.empty(n, a.dtype), np.empty(n, np.float64)


@numba.njit(inline="always", error_model="numpy")
def one_norm(a, n):
    """``||a||_1``, the largest column sum of absolute values (``xLANGE('1')``)."""
    norm = 0.0
    for j in range(n):
        column = 0.0
        for i in range(n):
            column += abs(a[i, j])
        norm = column if column > norm or column != column else norm
    return norm


@numba.njit(inline="always", error_model="numpy")
def hermitian_one_norm(a, n, lower):
    """``||a||_1`` of the Hermitian matrix stored in the triangle ``lower`` selects
    (``xLANHE('1')``: the diagonal's real part)."""
    norm = 0.0
    for j in range(n):
        column = abs(a[j, j].real)
        for i in range(n):
            if i != j:
                column += abs(a[i, j] if (i > j) == lower else a[j, i])
        norm = column if column > norm or column != column else norm
    return norm


@numba.njit(inline="always", error_model="numpy")
def triangular_one_norm(a, n, lower):
    """``||T||_1`` of the triangle ``lower`` selects of ``a``, diagonal included
    (``xLANTR('1')``)."""
    norm = 0.0
    for j in range(n):
        column = 0.0
        for i in range(n):
            if (i >= j) if lower else (i <= j):
                column += abs(a[i, j])
        norm = column if column > norm or column != column else norm
    return norm


@numba.njit(error_model="numpy")
def _solve_triangular(t, x, n, lower, unit, adjoint):
    """``x = op(T)^-1 x`` in place, ``T`` the triangle ``lower`` selects of ``t``
    (``op(T) = T^H`` when ``adjoint``; unit diagonal when ``unit``)."""
    forward = lower != adjoint
    for step in range(n):
        i = step if forward else n - 1 - step
        v = x[i]
        for j in range(n):
            before = j < i if forward else j > i
            if before:
                v -= (np.conj(t[j, i]) if adjoint else t[i, j]) * x[j]
        if not unit:  # no zero: the kernels estimate matrices that did not fail
            v /= np.conj(t[i, i]) if adjoint else t[i, i]
        x[i] = v


@numba.njit(error_model="numpy")
def _apply_inverse(factor, x, n, kind, adjoint):
    """``x = a^-1 x`` (``a^-H x`` when ``adjoint``) in place, through ``a``'s factor."""
    if kind == LU:
        if adjoint:
            _solve_triangular(factor, x, n, False, False, True)
            _solve_triangular(factor, x, n, True, True, True)
        else:
            _solve_triangular(factor, x, n, True, True, False)
            _solve_triangular(factor, x, n, False, False, False)
    elif kind >= TRIANGULAR_LOWER:
        _solve_triangular(factor, x, n, kind == TRIANGULAR_LOWER, False, adjoint)
    else:  # Hermitian: a^-H = a^-1
        lower = kind == CHOLESKY_LOWER
        _solve_triangular(factor, x, n, lower, False, not lower)
        _solve_triangular(factor, x, n, lower, False, lower)


@numba.njit(inline="always", error_model="numpy")
def _sum_abs(x, n):
    total = 0.0
    for i in range(n):
        total += abs(x[i])
    return total


@numba.njit(inline="always", error_model="numpy")
def _largest(x, n):
    """First index of the largest ``|x[i]|`` (``IxAMAX``; ``IZMAX1`` for complex)."""
    best, at = abs(x[0]), 0
    for i in range(1, n):
        if abs(x[i]) > best:
            best, at = abs(x[i]), i
    return at


@numba.njit(inline="always", error_model="numpy")
def _to_signs(x, n, tiny):
    """``x[i] = sign(x[i])``: ``+-1`` (``+1`` for 0) for real ``x``, ``x / |x|`` (1 when
    ``|x|`` is not above the safe minimum) for complex."""
    for i in range(n):
        if np.iscomplexobj(x):
            size = abs(x[i])
            x[i] = x[i] / size if size > tiny else 1
        else:
            x[i] = 1 if x[i].real >= 0 else -1


@numba.njit(inline="always", error_model="numpy")
def _same_signs(x, signs, n):
    """Whether the signs of real ``x`` are ``signs`` (``xLACN2``'s convergence test)."""
    for i in range(n):
        if (1 if x[i].real >= 0 else -1) != signs[i]:
            return False
    return True


@jit
def _inverse_one_norm(factor, n, kind, x, signs):
    """Estimate ``||a^-1||_1`` from ``a``'s factor: LAPACK ``xLACN2`` with its caller's
    solves in place of the reverse communication.  ``x`` and ``signs`` are scratch of
    ``n`` entries.

    Compiled once per dtype and layout into the disk cache, with ``n`` read at run
    time, and called by the kernels: inlined into each, it would add seconds to the
    compilation of every size.
    """
    complex_ = np.iscomplexobj(x)
    tiny = np.finfo(x.real.dtype).tiny
    for i in range(n):
        x[i] = 1 / n
    _apply_inverse(factor, x, n, kind, False)
    if n == 1:
        return abs(x[0])
    estimate = _sum_abs(x, n)
    _to_signs(x, n, tiny)
    for i in range(n):
        signs[i] = x[i].real
    _apply_inverse(factor, x, n, kind, True)
    j = _largest(x, n)
    iteration = 2
    while True:
        for i in range(n):
            x[i] = 0
        x[j] = 1
        _apply_inverse(factor, x, n, kind, False)
        previous, estimate = estimate, _sum_abs(x, n)
        if not complex_ and _same_signs(x, signs, n):
            break  # a repeated sign vector: converged
        if estimate <= previous:
            break  # no progress (cycling)
        _to_signs(x, n, tiny)
        for i in range(n):
            signs[i] = x[i].real
        _apply_inverse(factor, x, n, kind, True)
        last, j = j, _largest(x, n)
        moved = abs(x[last]) != abs(x[j]) if complex_ else x[last].real != abs(x[j])
        if not (moved and iteration < _ITERATIONS):
            break
        iteration += 1
    # Higham's extra test vector, alternating in sign and growing.
    sign = 1.0
    for i in range(n):
        x[i] = sign * (1 + i / (n - 1))
        sign = -sign
    _apply_inverse(factor, x, n, kind, False)
    alternative = 2 * _sum_abs(x, n) / (3 * n)
    return alternative if alternative > estimate else estimate


@numba.njit(inline="always", error_model="numpy")
def reciprocal_condition(factor, kind, norm, x, signs):
    """``1 / (||a||_1 ||a^-1||_1)`` estimated from ``a``'s factor (``xGECON`` for
    ``kind`` :data:`LU`, ``xPOCON`` for the Cholesky kinds, ``xTRCON`` for the
    triangular ones); ``norm`` is ``||a||_1``.

    ``x`` and ``signs`` are scratch from :func:`condition_work`.  0 for a zero or
    infinite ``norm``, NaN for a NaN one, as LAPACK.
    """
    n = factor.shape[0]
    if n == 0:
        return 1.0
    if norm != norm:
        return norm
    if norm == 0 or norm == np.inf:
        return 0.0
    inverse_norm = _inverse_one_norm(factor, n, kind, x, signs)
    return 1 / inverse_norm / norm if inverse_norm != 0 else 0.0


@numba.njit(inline="always", error_model="numpy")
def _comparison_bound(t, n, lower, unit, transpose, y):
    """``||M(T)^-1||_1`` (``transpose``) or ``||M(T)^-1||_inf``: an upper bound on the same
    norm of ``T^-1``, ``T`` the triangle ``lower`` selects of ``t``.

    ``M(T)``, the comparison matrix (``|t_ii|`` on the diagonal, ``-|t_ij|`` off it),
    has a non-negative inverse at least ``|T^-1|`` entrywise, so its norms are one
    solve by the ones vector: ``M^T y = e`` (column sums) or ``M y = e`` (row sums).
    ``y`` is real scratch of ``n`` entries.
    """
    forward = lower != transpose
    largest = 0.0
    for step in range(n):
        i = step if forward else n - 1 - step
        v = 1.0
        for j in range(n):
            if j < i if forward else j > i:
                v += abs(t[j, i] if transpose else t[i, j]) * y[j]
        y[i] = v if unit else v / abs(t[i, i])
        largest = y[i] if y[i] > largest or y[i] != y[i] else largest  # NaN sticks
    return largest


def condition_names(dtype, kind):
    """The names a straight-line kernel's condition check uses (for
    :func:`~._unrolled.compile_kernel`): the factor ``KIND``, the dtype's ``EPS``, and the
    functions it calls per matrix after the block."""
    return {
        "KIND": kind,
        "EPS": np.finfo(dtype).eps,
        "condition_work": condition_work,
        "one_norm": one_norm,
        "hermitian_one_norm": hermitian_one_norm,
        "triangular_one_norm": triangular_one_norm,
        "singular_to_working_precision": singular_to_working_precision,
    }


def emit_condition_flag(src, norm, factor, n, kind, at):
    """In a straight-line kernel's loop across lanes: row ``at`` of ``work`` says whether
    :func:`emit_bound_decides` clears the lane (1) or leaves it in doubt (0)."""
    decided = emit_bound_decides(src, norm, factor, n, kind)
    src(f"work[{at}, l] = select({decided}, ONE, ZERO)")


def emit_condition_check(src, at, n, norm, factor):
    """In the loop over a block's matrices, after ``info`` is stored: where it is 0 and row
    ``at`` (:func:`emit_condition_flag`) left the matrix in doubt, ``info = n + 1`` if
    :func:`singular_to_working_precision` says so, as the looped kernels do; ``norm`` and
    ``factor`` are the expressions of the matrix's 1-norm and of its factor."""
    with src.block(f"if info[first + l] == 0 and work[{at}, l] == 0:"):
        src(f"norm = {norm}")
        ill = f"singular_to_working_precision({factor}, KIND, norm, vector, signs)"
        src(f"info[first + l] = {n + 1} if {ill} else 0")


def emit_comparison_bound(src, t, n, lower, unit, transpose):
    """:func:`_comparison_bound` on one real matrix per lane, written out for a
    straight-line kernel (its operations in its order, so the same bound to the bit):
    ``t(i, j)`` names entry ``(i, j)``; returns the name of the bound."""
    forward = lower != transpose
    largest, y = "0.0", {}
    for step in range(n):
        i = step if forward else n - 1 - step
        v = "1.0"
        for j in range(i) if forward else range(i + 1, n):
            v = src.let("v", f"{v} + abs({t(j, i) if transpose else t(i, j)}) * {y[j]}")
        y[i] = v if unit else src.let("y", f"{v} / abs({t(i, i)})")
        bigger = f"({y[i]} > {largest}) | ({y[i]} != {y[i]})"  # NaN sticks
        largest = src.let("largest", f"select({bigger}, {y[i]}, {largest})")
    return largest


def emit_one_norm(src, a, n, kind=None):
    """:func:`one_norm` (``kind`` None) of a real matrix per lane, or the norm the factor
    ``kind`` pairs with -- :func:`hermitian_one_norm` for a Cholesky kind,
    :func:`triangular_one_norm` for a triangular one -- written out, their operations in
    their order; ``a(i, j)`` names entry ``(i, j)``.  Returns the norm's name."""
    norm = "0.0"
    for j in range(n):
        if kind in (CHOLESKY_LOWER, CHOLESKY_UPPER):
            lower = kind == CHOLESKY_LOWER
            column = src.let("column", f"abs({a(j, j)})")
            terms = [a(i, j) if (i > j) == lower else a(j, i) for i in range(n) if i != j]
        else:
            column = "0.0"
            lower = kind == TRIANGULAR_LOWER
            triangle = kind in (TRIANGULAR_LOWER, TRIANGULAR_UPPER)
            rows = [i for i in range(n) if not triangle or ((i >= j) if lower else (i <= j))]
            terms = [a(i, j) for i in rows]
        for term in terms:
            column = src.let("column", f"{column} + abs({term})")
        bigger = f"({column} > {norm}) | ({column} != {column})"
        norm = src.let("norm", f"select({bigger}, {column}, {norm})")
    return norm


def emit_bound_decides(src, norm, factor, n, kind):
    """The name of the flag that :func:`singular_to_working_precision`'s cheap bound
    alone clears a real matrix per lane -- ``norm`` the name of its 1-norm,
    ``factor(i, j)`` of entry ``(i, j)`` of its factor of ``kind`` -- computed as that
    function does, written out, so that a lane without the flag gets the same answer from
    the full call.  Needs ``EPS`` (the dtype's) and ``INF``."""
    if kind == LU:  # as _inverse_norm_bound
        upper = emit_comparison_bound(src, factor, n, False, False, True)
        lower = emit_comparison_bound(src, factor, n, True, True, True)
    elif kind >= TRIANGULAR_LOWER:
        upper, lower = (
            emit_comparison_bound(src, factor, n, kind == TRIANGULAR_LOWER, False, True),
            None,
        )
    else:
        rows = emit_comparison_bound(src, factor, n, kind == CHOLESKY_LOWER, False, False)
        upper, lower = (
            rows,
            emit_comparison_bound(src, factor, n, kind == CHOLESKY_LOWER, False, True),
        )
    bound = upper if lower is None else src.let("bound", f"{upper} * {lower}")
    return src.let("decided", f"(0 < {norm}) & ({norm} < INF) & ({norm} * {bound} * EPS <= 0.5)")


@numba.njit(inline="always", error_model="numpy")
def _inverse_norm_bound(factor, n, kind, y):
    """An upper bound on ``||a^-1||_1`` from ``a``'s factor: the comparison matrices'
    (:func:`_comparison_bound`) of its triangular factors, multiplied."""
    if kind == LU:  # ||U^-1 L^-1||_1
        upper = _comparison_bound(factor, n, False, False, True, y)
        return upper * _comparison_bound(factor, n, True, True, True, y)
    if kind >= TRIANGULAR_LOWER:
        return _comparison_bound(factor, n, kind == TRIANGULAR_LOWER, False, True, y)
    lower = kind == CHOLESKY_LOWER  # ||L^-H L^-1||_1 <= ||L^-1||_inf ||L^-1||_1 (and for U)
    rows = _comparison_bound(factor, n, lower, False, False, y)
    return rows * _comparison_bound(factor, n, lower, False, True, y)


@numba.njit(inline="always", error_model="numpy")
def singular_to_working_precision(factor, kind, norm, x, signs):
    """Whether the reciprocal condition number :func:`reciprocal_condition` estimates
    is below the machine epsilon (or NaN): where SciPy's ``solve`` warns.

    A cheap bound decides first: ``rcond >= 1 / (||a||_1 B)`` for the upper bound ``B``
    on ``||a^-1||_1`` of :func:`_inverse_norm_bound` (one or two triangular solves, no
    iteration), and the estimate is never smaller than the true ``rcond``.  Only the
    matrices that bound leaves in doubt -- the ill-conditioned ones, and some badly
    scaled ones -- run the estimate, several solves each.
    """
    eps = np.finfo(x.dtype).eps
    n = factor.shape[0]
    if 0 < norm < np.inf and norm * _inverse_norm_bound(factor, n, kind, signs) * eps <= 0.5:
        return False  # rcond >= 2 eps: the estimate cannot be below eps
    return not reciprocal_condition(factor, kind, norm, x, signs) >= eps


def flagged_if(condition, factor, kind, norm, x, signs):
    """In a kernel: :func:`singular_to_working_precision` where its option ``condition``
    is True, and False where it is False -- with nothing of the estimate compiled then
    (numba types the option as a literal here; an ``if condition:`` in the kernel would
    still compile the branch it never takes, seconds for the estimate)."""
    raise TypeError("flagged_if is for numba-compiled kernels")


@overload(flagged_if, prefer_literal=True)
def _flagged_if(condition, factor, kind, norm, x, signs):
    if isinstance(condition, types.BooleanLiteral) and not condition.literal_value:
        return lambda condition, factor, kind, norm, x, signs: False
    return lambda condition, factor, kind, norm, x, signs: singular_to_working_precision(
        factor, kind, norm, x, signs
    )
