"""Exact scaling by powers of two beyond what one floating-point factor can hold.

``2.0 ** e`` overflows from ``e = 1024`` and underflows below ``-1074``, yet a
matrix whose largest entry is subnormal needs a scale-up by more than
``2**1022`` (and float32 data, computed in float64 factors, would be fine
with one factor).  Three factors of about ``2**(e/3)`` each stay in range for
``|e| <= 3000``; multiplying by each in turn is exact whenever the results are
normal numbers.
"""

from __future__ import annotations

import numba

__all__ = ["pow2_factors", "times_pow2"]


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
