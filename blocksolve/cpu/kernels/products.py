"""Integer powers of a stack's matrices on the CPU, for ``matrix_power`` of an inverse.

NumPy multiplies a stack's small matrices one BLAS call at a time, about 50 ns
for a 4x4 product; the kernel multiplies interleaved blocks
(:mod:`._blocks`), the loops across matrices vectorised, in place in the
stack it is given.  The products come in NumPy's order (``(a @ a) @ a`` for
the cube, binary powering above), each a sum over ``k`` in ascending order.
"""

from __future__ import annotations

import numba
import numpy as np

from .._compiled import NotReady, batch_kernel, specialization
from .._jit import launch
from ._blocks import block_width, load, store

__all__ = ["power_in_place", "FEWEST", "LARGEST"]

# Fewer matrices than this are NumPy's products: the kernel's call costs about 4 us,
# NumPy's product about 1 us and 50 ns a matrix (measured, a cube: the kernel passes
# NumPy's products at 24 matrices of 2x2 or 4x4, at 32-64 of 8x8).
FEWEST = 32
# Larger matrices too: BLAS's blocked product of one 16x16 matrix beats a loop of
# dot products across matrices.
LARGEST = 8


@numba.njit(inline="always")
def _multiply(x, y, out, width):
    """``out[..., m] = x[..., m] @ y[..., m]`` for the first ``width`` matrices.

    One loop across matrices per entry, the sum over ``k`` inside it: with the size
    a constant that sum is unrolled, and the loop vectorises with one store per entry.
    """
    n = x.shape[0]
    for i in range(n):
        for j in range(n):
            for m in range(width):
                total = x[i, 0, m] * y[0, j, m]
                for k in range(1, n):
                    total += x[i, k, m] * y[k, j, m]
                out[i, j, m] = total


@numba.njit(inline="always")
def _copy(x, out, width):
    """``out[..., m] = x[..., m]`` for the first ``width`` matrices (a loop: numba
    compiles a slice assignment's shape check, message and all, into the kernel)."""
    n = x.shape[0]
    for i in range(n):
        for j in range(n):
            for m in range(width):
                out[i, j, m] = x[i, j, m]


@batch_kernel
def _power_kernel(start, stop, n, a, power):
    capacity = block_width(n, stop - start)
    square = np.empty((n, n, capacity), a.dtype)
    result = np.empty((n, n, capacity), a.dtype)
    spare = np.empty((n, n, capacity), a.dtype)
    for first in range(start, stop, capacity):
        width = min(capacity, stop - first)
        load(a, first, width, square)
        if power == 3:  # NumPy's (a @ a) @ a
            _multiply(square, square, spare, width)
            _multiply(spare, square, result, width)
        else:  # NumPy's binary powering: result @ square for each set bit
            remaining, started = power, False
            while True:
                if remaining % 2 == 1:
                    if started:
                        _multiply(result, square, spare, width)
                        result, spare = spare, result
                    else:
                        _copy(square, result, width)
                        started = True
                remaining //= 2
                if remaining == 0:
                    break
                _multiply(square, square, spare, width)
                square, spare = spare, square
        store(result, a, first, width)


def power_in_place(stack, power):
    """Raise every matrix of the C-contiguous, writable ``(batch, n, n)`` float or
    complex ``stack`` to the integer ``power >= 2``, in place.

    Returns False, leaving ``stack`` as it was, where the kernel does not run: while
    it compiles in the background, in the ``'never'`` mode, for fewer than
    :data:`FEWEST` matrices or for matrices larger than :data:`LARGEST`.
    """
    batch, n = stack.shape[0], stack.shape[-1]
    if batch < FEWEST or n > LARGEST or specialization() == "never":
        return False
    products = 2 if power == 3 else power.bit_length() - 1 + power.bit_count() - 1
    try:
        launch(_power_kernel.sized(n), batch, 2 * n**3 * products, stack, power)
    except NotReady:
        return False
    return True
