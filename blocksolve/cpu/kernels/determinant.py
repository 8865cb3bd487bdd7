"""Determinants on the CPU: ``getrf_det`` (``det`` and ``slogdet``) from the LU factors.

The builder takes a :class:`~blocksolve._pattern.CallPattern` and returns a
runner ``run(a) -> (det, info)`` (option ``log`` false) or
``run(a) -> (sign, logabsdet, info)`` (``log`` true) over flattened,
C-contiguous ``(batch, n, n)`` operands.  The kernel factors blocks of
matrices with the LU family's :func:`~blocksolve.cpu.lu.getrf_block` and
reads the determinant off ``U``'s diagonal and the pivots, as NumPy does:
``sign`` is the parity of the row interchanges times the signs (phases, for
complex matrices) of the pivots, ``logabsdet`` the log of the product of
their magnitudes, and ``det = sign * exp(logabsdet)``.  An exactly singular
matrix has ``sign = 0``, ``logabsdet = -inf``, ``det = 0``, and ``info`` is
always 0: neither function fails.

The product of the magnitudes is formed directly and its log taken once;
only when it over- or underflows is it replaced by the sum of the logs, so
the common case costs one ``log`` per matrix, and ``det`` no ``exp`` at all.
"""

from __future__ import annotations

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

from ..._cache import memo
from ..._compat.numba import NO_REFERENCE_COUNTS
from ..._compat.numpy import numpy_linalg
from .._compiled import Kernel, batch_kernel
from .._jit import launch
from ._blocks import block_width, load
from ._unrolled import Source, compile_kernel, emit_first_zero, emit_stash, unrolled_lanes
from .lu import (
    emit_lu_kernel,
    getrf_block,
    getrf_work,
    straight_line,
    straight_line_names,
)

__all__ = ["getrf_det"]


def _real_pivot_sign(u):
    return -1.0 if u < 0 else 1.0


def _complex_pivot_sign(u):
    size = abs(u)
    return u / size if size > 0 else u * 0 + 1


def _pivot_sign(u):
    """The sign of a pivot as NumPy takes it: -1 or 1 for a real one (1 for 0, which only
    singular matrices have, and for NaN), ``u / |u|`` for a complex one.

    One implementation per kind (see the overload): ``u / |u|`` for a real pivot that
    overflowed to infinity is NaN, where NumPy's sign is ±1 and its ``det`` ±inf.
    """
    return (_complex_pivot_sign if np.iscomplexobj(u) else _real_pivot_sign)(u)


@overload(_pivot_sign)
def _pivot_sign_kernel(u):
    return _complex_pivot_sign if isinstance(u, types.Complex) else _real_pivot_sign


@numba.njit(inline="always")
def _determinant_block(lu, piv, n, width, singular, sign, magnitude):
    """``sign[m]`` and the product of ``|U[i, i]|`` per matrix, for nonsingular ones."""
    for m in range(width):
        sign[m] = 1
        magnitude[m] = 1
    for i in range(n):
        for m in range(width):
            u = lu[i, i, m]
            flip = piv[i, m] != i
            sign[m] *= (-_pivot_sign(u)) if flip else _pivot_sign(u)
            magnitude[m] *= abs(u)


@numba.njit(inline="always")
def _sum_of_logs(lu, n, m):
    """The log of the product of ``|U[i, i]|`` in lane ``m`` as the sum of their logs:
    for a product that left the normal range."""
    total = 0.0
    for i in range(n):
        total += np.log(abs(lu[i, i, m]))
    return total


@numba.njit(inline="always")
def normal_range(x):
    """``(tiny, huge)``: the smallest and largest normal numbers of ``x``'s dtype (once
    per kernel call: ``np.finfo`` is not free in numba)."""
    return np.finfo(x.dtype).tiny, np.finfo(x.dtype).max


@numba.njit(error_model="numpy", **NO_REFERENCE_COUNTS)
def _store_determinant_outside_range(first_out, logabsdet, s, singular, sign, log, lu, m):
    """:func:`store_determinant` for a singular matrix or one whose product of pivot
    magnitudes left the normal range.  A call of its own: inlined into its caller, it
    made every matrix's call half again as slow."""
    n = lu.shape[0]
    if singular:
        first_out[s] = 0
        logabsdet[s] = -np.inf
    elif log:
        first_out[s] = sign
        logabsdet[s] = _sum_of_logs(lu, n, m)
    else:
        first_out[s] = sign * np.exp(_sum_of_logs(lu, n, m))


@numba.njit(error_model="numpy", **NO_REFERENCE_COUNTS)  # a call per matrix
def store_determinant(first_out, logabsdet, s, singular, sign, magnitude, log, lu, m, limits):
    """``first_out[s]`` (the determinant, or its sign when ``log``) and ``logabsdet[s]``
    of the matrix in lane ``m`` of the factored block ``lu``, from its ``sign`` and the
    product ``magnitude`` of its pivots' magnitudes; ``singular``: a pivot is zero.
    ``limits``: :func:`normal_range` of ``logabsdet``'s dtype.

    Not inlined into the kernels: their reference counts on the arrays it is passed
    would then cost more than the call.
    """
    tiny, huge = limits
    if singular or not tiny <= magnitude <= huge:
        _store_determinant_outside_range(first_out, logabsdet, s, singular, sign, log, lu, m)
    elif log:
        first_out[s] = sign
        logabsdet[s] = np.log(magnitude)
    else:
        first_out[s] = sign * magnitude


@batch_kernel
def _det_kernel(start, stop, n, a, first_out, logabsdet, info, log):
    capacity = block_width(n, stop - start)
    block = np.empty((n, n, capacity), a.dtype)
    no_rhs = np.empty((n, 0, capacity), a.dtype)
    piv_block = np.empty((n, capacity), np.int32)
    singular = np.empty(capacity, np.int32)
    sign = np.empty(capacity, a.dtype)
    magnitude = np.empty(capacity, logabsdet.dtype)
    work = getrf_work(block)
    limits = normal_range(logabsdet)
    for first in range(start, stop, capacity):
        width = min(capacity, stop - first)
        load(a, first, width, block)
        getrf_block(block, no_rhs, n, n, width, piv_block, singular, work)
        _determinant_block(block, piv_block, n, width, singular, sign, magnitude)
        for m in range(width):
            info[first + m] = 0
            store_determinant(
                first_out,
                logabsdet,
                first + m,
                singular[m],
                sign[m],
                magnitude[m],
                log,
                block,
                m,
                limits,
            )


@memo("cpu-straight-line-det", maxsize=256)
def _unrolled_det_kernel(n, dtype):
    """:func:`_det_kernel` as straight-line code for real ``n x n`` matrices: the same
    operations in the same order, so the same determinants to the bit.  Rows of the work
    array: ``U``'s diagonal where a block's ``(n, n)`` view has it, then each lane's
    sign, product of magnitudes and first zero pivot."""
    sign_at, magnitude_at, singular_at = n * n, n * n + 1, n * n + 2
    src = Source(complex_values=False)

    def lane(e, pivots, zero_pivots):
        sign, magnitude = "ONE", "REAL_ONE"
        for i in range(n):  # as _determinant_block
            u = e[i, i]
            own = src.let("own", f"select({u} < 0, -1.0, 1.0)")
            flip = f"{pivots[i]} != {i}"
            sign = src.let("sign", f"{sign} * select({flip}, -{own}, {own})")
            magnitude = src.let("magnitude", f"{magnitude} * abs({u})")
            src(f"work[{i * n + i}, l] = {u}")
        emit_stash(src, [sign, magnitude, emit_first_zero(src, zero_pivots)], sign_at)

    def finish():
        src("info[first + l] = 0")
        src(
            f"store_determinant(first_out, logabsdet, first + l, work[{singular_at}, l] "
            f"!= 0, work[{sign_at}, l], work[{magnitude_at}, l], log, w, l, limits)"
        )

    setup = (
        f"w = work[:{n * n}].reshape(({n}, {n}, {unrolled_lanes(dtype, n)}))",
        "limits = normal_range(logabsdet)",
    )
    arguments = "a, first_out, logabsdet, info, log"
    emit_lu_kernel(src, dtype, arguments, n, 0, singular_at + 1, lane, finish, setup=setup)
    names = {
        **straight_line_names(dtype),
        "store_determinant": store_determinant,
        "normal_range": normal_range,
    }
    return compile_kernel(f"det_{n}_{dtype.name}", src.text(), dtype, names)


def getrf_det(pattern):
    """``det`` (option ``log`` false) or ``slogdet`` (``log`` true) of every matrix."""
    n, dtype = pattern.dim("n"), pattern.np_dtype
    if straight_line(pattern, n):
        kernel = Kernel(_unrolled_det_kernel, (n, dtype))
    else:
        kernel = _det_kernel.sized(n)
    log = pattern.option("log")
    real = np.finfo(dtype).dtype

    def run(a):
        batch = a.shape[0]
        first = np.empty(batch, dtype)
        logabsdet = np.empty(batch, real)  # scratch for det
        info = np.empty(batch, np.int32)
        launch(kernel, batch, a.shape[1] ** 3, a, first, logabsdet, info, log)
        return (first, logabsdet, info) if log else (first, info)

    return run


def getrf_det_numpy(pattern):
    """``numpy.linalg.det`` or ``slogdet``: they never fail (a singular matrix has
    determinant 0)."""
    return numpy_linalg("slogdet" if pattern.option("log") else "det", pattern.np_dtype)
