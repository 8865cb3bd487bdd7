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

from ..._compat.numpy import numpy_linalg
from .._compiled import batch_kernel
from .._jit import launch
from ._blocks import block_width, load
from .lu import getrf_block, getrf_work

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
def _log_magnitude(lu, n, m, product, tiny, huge):
    """``log(product)``, or the sum of the logs when the product left the normal range."""
    if tiny <= product <= huge:
        return np.log(product)
    total = 0.0
    for i in range(n):
        total += np.log(abs(lu[i, i, m]))
    return total


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
    tiny = np.finfo(logabsdet.dtype).tiny
    huge = np.finfo(logabsdet.dtype).max
    for first in range(start, stop, capacity):
        width = min(capacity, stop - first)
        load(a, first, width, block)
        getrf_block(block, no_rhs, n, n, width, piv_block, singular, work)
        _determinant_block(block, piv_block, n, width, singular, sign, magnitude)
        for m in range(width):
            s = first + m
            info[s] = 0
            if singular[m]:
                first_out[s] = 0
                logabsdet[s] = -np.inf
            elif log:
                first_out[s] = sign[m]
                logabsdet[s] = _log_magnitude(block, n, m, magnitude[m], tiny, huge)
            elif tiny <= magnitude[m] <= huge:
                first_out[s] = sign[m] * magnitude[m]
            else:
                first_out[s] = sign[m] * np.exp(
                    _log_magnitude(block, n, m, magnitude[m], tiny, huge)
                )


def getrf_det(pattern):
    """``det`` (option ``log`` false) or ``slogdet`` (``log`` true) of every matrix."""
    kernel = _det_kernel.sized(pattern.dim("n"))
    log = pattern.option("log")
    dtype = pattern.np_dtype
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
