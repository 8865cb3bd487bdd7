"""Exact scaling by powers of two beyond what one floating-point factor can hold.

``2.0 ** e`` overflows from ``e = 1024`` and underflows below ``-1074``, yet a
matrix whose largest entry is subnormal needs a scale-up by more than
``2**1022`` (and float32 data, computed in float64 factors, would be fine
with one factor).  Three factors of about ``2**(e/3)`` each stay in range for
``|e| <= 3000``; multiplying by each in turn is exact whenever the results are
normal numbers.

:func:`scale_exponent` and :func:`pow2_pair` do the same with bit arithmetic
instead of ``frexp`` and powers: cheap enough to scale every matrix of a
batch, and vectorised across matrices.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

__all__ = ["pow2_factors", "times_pow2", "scale_exponent", "pow2_pair"]


@numba.njit(error_model="numpy")
def pow2_factors(e):
    """Three factors whose product is ``2**e`` (``|e| <= 3000``), none overflowing."""
    third = e // 3
    factor = 2.0**third
    return factor, factor, 2.0 ** (e - 2 * third)


@numba.njit(error_model="numpy")
def times_pow2(x, e):
    """``x * 2**e`` for ``|e| <= 3000``: exact unless the result under- or overflows."""
    f1, f2, f3 = pow2_factors(e)
    return x * f1 * f2 * f3


@intrinsic
def _bits_of(typingctx, x):
    """The IEEE bits of a float64 as an int64 (a bit cast, which LLVM vectorises)."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def _float_of(typingctx, bits):
    """The float64 with the IEEE bits ``bits`` (an int64)."""
    if bits != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


_TINY = 2.0**-1022


@numba.njit(inline="always", error_model="numpy")
def scale_exponent(peak, target):
    """``k`` with ``peak * 2**k`` in ``[2**(target - 1), 2**target)``; 0 where ``peak`` is
    0, inf or NaN.

    Branch-free bit arithmetic (no ``frexp`` call), so a loop of it over the
    matrices of a block vectorises.  ``peak`` is any finite non-negative
    number, subnormals included.
    """
    x = np.float64(peak)
    small = x < _TINY
    y = x * 18446744073709551616.0 if small else x  # 2**64: subnormals become normal
    exponent = ((_bits_of(y) >> 52) & 0x7FF) - 1022 - (64 if small else 0)
    regular = x > 0 and x < math.inf
    return target - exponent if regular else 0


@numba.njit(inline="always", error_model="numpy")
def pow2_pair(k):
    """Two float64 factors whose product is ``2**k`` (``|k| <= 2044``), each a normal number."""
    half = k >> 1
    return _float_of((half + 1023) << 52), _float_of((k - half + 1023) << 52)
