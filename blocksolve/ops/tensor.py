"""Tensor equations: ``tensorsolve`` and ``tensorinv``, as one matrix for :func:`solve` and
:func:`inv`.

Both reshape the tensor into a square matrix, as NumPy does, and run the one
matrix on blocksolve's :func:`blocksolve.solve` or :func:`blocksolve.inv`
(where a single matrix goes to LAPACK; see :doc:`/guide/kernels`).
"""

from __future__ import annotations

import math

import numpy as np

from .._errors import LinAlgError
from .inverse import inv
from .lu import solve

__all__ = ["tensorsolve", "tensorinv"]


def tensorsolve(a, b, axes=None):
    """Solve the tensor equation ``tensordot(a, x, x.ndim) = b`` for ``x``.

    Parameters
    ----------
    a : array_like
        Coefficient tensor, of shape ``b.shape + Q``, ``Q`` a tuple whose product
        is ``b.size``.
    b : array_like
        Right-hand tensor.
    axes : tuple of int, optional
        Axes of ``a`` moved to the right before solving.

    Returns
    -------
    x : ndarray of shape ``Q``

    Raises
    ------
    LinAlgError
        If ``a`` is not square once reshaped, or is singular.

    See Also
    --------
    numpy.linalg.tensorsolve : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> a = np.eye(6).reshape(6, 2, 3)
    >>> blocksolve.tensorsolve(a, np.arange(6.0)).shape
    (2, 3)
    """
    a = np.asanyarray(a)
    b = np.asarray(b)
    if axes is not None:
        order = [axis for axis in range(a.ndim) if axis not in axes] + list(axes)
        a = a.transpose(order)
    shape = a.shape[-(a.ndim - b.ndim) :]
    size = math.prod(shape)
    if a.size != size**2:
        raise LinAlgError(
            "Input arrays must satisfy the requirement "
            "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])"
        )
    return solve(a.reshape(size, size), b.ravel()).reshape(shape)


def tensorinv(a, ind=2):
    """Inverse of an N-dimensional array, with respect to ``tensordot``.

    Parameters
    ----------
    a : array_like
        Tensor whose first ``ind`` dimensions multiply to the product of the others.
    ind : int, default 2
        Number of the first indices in the inverse's sum.

    Returns
    -------
    ndarray of shape ``a.shape[ind:] + a.shape[:ind]``

    Raises
    ------
    LinAlgError
        If ``a`` is singular or not square once reshaped.
    ValueError
        If ``ind`` is not positive.

    See Also
    --------
    numpy.linalg.tensorinv : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> a = np.eye(24).reshape(4, 6, 8, 3)
    >>> blocksolve.tensorinv(a, ind=2).shape
    (8, 3, 4, 6)
    """
    a = np.asarray(a)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    shape = a.shape[ind:] + a.shape[:ind]
    return inv(a.reshape(math.prod(a.shape[ind:]), -1)).reshape(shape)
