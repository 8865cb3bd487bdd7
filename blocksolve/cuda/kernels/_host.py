"""Host-side array work shared by the CUDA routines: no kernels, only ``xp`` calls.

``xp`` is cupy on a GPU (the work stays on the device, on the current
stream) or numpy under numba's CUDA simulator.  The routines' results for
problems with an empty core dimension (a routine's registered ``empty``), which
cuSolverDx cannot take, are built from these, as NumPy and SciPy give them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["real_dtype", "no_failures", "unsolved"]


def real_dtype(dtype):
    """The real dtype of ``dtype``'s precision."""
    return np.finfo(dtype).dtype


def no_failures(a, xp):
    """An ``info`` of zeros, one per matrix of ``a``."""
    return xp.zeros(a.shape[0], np.int32)


def _first_zero_diagonal(a, xp):
    """1-based index of the first exactly zero diagonal entry per matrix, else 0."""
    zero = xp.diagonal(a, axis1=1, axis2=2) == 0
    return xp.where(zero.any(axis=1), zero.argmax(axis=1) + 1, 0).astype(np.int32)


def unsolved(a, b, xp, check_diagonal):
    """A solve with nothing to compute (``n == 0`` or ``k == 0``): ``x`` is ``b``, and
    ``info`` the first zero on A's diagonal where ``check_diagonal`` (as the kernels
    report a singular triangular factor), else zeros."""
    checked = check_diagonal and a.shape[-1] > 0
    info = _first_zero_diagonal(a, xp) if checked else no_failures(a, xp)
    return b.copy(), info
