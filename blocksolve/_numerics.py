"""Numerical conventions both backends follow, so that their results agree.

The one-sided Jacobi SVD (``svd``, ``lstsq``'s small SVD) and ``lstsq``'s
cut-off rule, written once for the CPU and the GPU kernels.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "MAX_SWEEPS",
    "scale_target",
    "tolerance",
    "column_floor",
    "lstsq_cutoff",
    "lstsq_residual_count",
]

MAX_SWEEPS = 30  # Jacobi sweeps before a matrix counts as not converged, as LAPACK's xGESVJ


def scale_target(dtype, rows, cols):
    """Exponent ``target``: each ``rows x cols`` matrix is scaled to a largest entry in
    ``[2**(target - 1), 2**target)``.

    Its squared column norms are then below ``2 rows cols 4**target`` and the
    largest intermediate of a rotation below 20 times their square, which
    stays below the largest finite number with a margin.
    """
    maxexp = np.finfo(dtype).maxexp
    return (maxexp - 2 * (2 * rows * cols).bit_length() - 8) // 4


def tolerance(dtype, cols):
    """Relative orthogonality at which the rotations stop: ``cols * eps``."""
    return float(np.finfo(dtype).eps) * max(cols, 1)


def column_floor(dtype, tol):
    """Squared column norm below which a column is completed instead of normalised.

    Two columns above it whose cosine exceeds ``tol`` have a product above the
    sweeps' floor (the smallest normal number), so they are rotated.
    """
    return math.sqrt(float(np.finfo(dtype).tiny)) / tol


def lstsq_cutoff(rcond, m, n, dtype):
    """The relative cut-off ``lstsq``'s kernels (CPU and GPU) apply to the singular
    values, from ``rcond``.

    NumPy 2's rule: ``None`` means machine precision times ``max(m, n)``;
    any other value goes to LAPACK ``xGELSD``, which uses its ``xLAMCH('E')``
    (half of NumPy's ``eps``) for ``rcond <= 0`` and ``rcond >= 1``, and
    whose comparisons with a NaN cut-off cut nothing (here: 0, so that exact
    zeros are still cut rather than divided by).  Singular values at or
    below ``cutoff * s[0]`` count as zero.  Not for NumPy's own ``lstsq``,
    which takes ``rcond`` as the caller gave it (0 is its eps, not NaN's 0).
    """
    eps = float(np.finfo(dtype).eps)
    if rcond is None:
        return eps * max(m, n)
    if math.isnan(rcond):
        return 0.0
    return eps / 2 if rcond <= 0 or rcond >= 1 else float(rcond)


def lstsq_residual_count(dims):
    """Residuals per right-hand side: NumPy returns them only for over-determined systems."""
    return dims["k"] if dims["m"] > dims["n"] else 0
