"""Norms and condition numbers: ``norm``, ``matrix_norm``, ``vector_norm`` and ``cond``.

The matrix norms of the singular values (``ord`` 2, -2 and ``'nuc'``) run on
:func:`blocksolve.svd`'s kernels, with its error policy; the others are sums
and maxima, computed by the arrays' own library (``numpy.linalg.norm`` for
NumPy arrays), as is :func:`vector_norm`.  :func:`cond` divides singular
values, or multiplies the norms of a matrix and of its :func:`blocksolve.inv`.
"""

from __future__ import annotations

import numpy as np

from ._public import ARRAY_API, delegated, library_linalg, namespace, own_linalg
from .inverse import inv
from .svd import svd

__all__ = ["norm", "matrix_norm", "vector_norm", "cond"]

_SINGULAR_VALUE_NORMS = {2: "max", -2: "min", "nuc": "sum"}


@delegated
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """Vector norm ``ord`` of ``x`` along ``axis`` (``None``: all of ``x``)."""
    return own_linalg(x).vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)


def norm(x, ord=None, axis=None, keepdims=False, *, errors=None, stream=None):
    """Matrix or vector norm, as :func:`numpy.linalg.norm`.

    The matrix norms of the singular values, ``ord`` in ``2``, ``-2`` and ``'nuc'``
    over two axes (``axis`` a pair, or ``None`` for a 2-D ``x``), run on
    :func:`blocksolve.svd`; every other norm is the arrays' own library's.

    Parameters
    ----------
    x : array_like
    ord : {None, int, float, inf, -inf, 'fro', 'nuc'}, optional
    axis : None, int or 2-tuple of int, optional
    keepdims : bool, default False
    errors, stream
        As for :func:`svd`, whose policy applies to the singular-value norms.

    Returns
    -------
    float or ndarray

    See Also
    --------
    numpy.linalg.norm : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> blocksolve.norm(np.stack([np.diag([3.0, 1.0]), np.eye(2)]), 2, axis=(1, 2))
    array([3., 1.])
    """
    axes = _matrix_axes(x, ord, axis)
    if axes is None:
        return own_linalg(x).norm(x, ord=ord, axis=axis, keepdims=keepdims)
    return _singular_value_norm(x, ord, axes, keepdims, errors, stream)


def matrix_norm(x, /, *, keepdims=False, ord="fro", errors=None, stream=None):
    """Norm ``ord`` of every matrix of a stack, as :func:`numpy.linalg.matrix_norm`.

    ``ord`` 2, -2 and ``'nuc'`` run on :func:`blocksolve.svd` (see :func:`norm`).

    Parameters
    ----------
    x : (..., M, N) array_like
    keepdims : bool, default False
    ord : {'fro', 'nuc', inf, -inf, 1, -1, 2, -2}, default 'fro'
    errors, stream
        As for :func:`svd`, whose policy applies to the singular-value norms.

    Returns
    -------
    (...) array

    See Also
    --------
    numpy.linalg.matrix_norm : The reference semantics.
    """
    if ord in _SINGULAR_VALUE_NORMS and not isinstance(ord, bool):
        return _singular_value_norm(x, ord, (-2, -1), keepdims, errors, stream)
    return own_linalg(x).matrix_norm(x, keepdims=keepdims, ord=ord)


def _matrix_axes(x, ord, axis):
    """The (row, column) axes of a singular-value matrix norm, else None."""
    if isinstance(ord, str) or ord is None:
        if ord != "nuc":
            return None
    elif ord not in (2, -2):
        return None
    ndim = np.ndim(x)
    if axis is None:
        return (0, 1) if ndim == 2 else None
    if not isinstance(axis, tuple) or len(axis) != 2:
        return None
    row, column = (np.lib.array_utils.normalize_axis_index(a, ndim) for a in axis)
    if row == column:
        raise ValueError("Duplicate axes given.")
    return row, column


def _singular_value_norm(x, ord, axes, keepdims, errors, stream):
    """Largest, smallest or summed singular value over ``axes`` (NumPy's _multi_svd_norm)."""
    if library_linalg(x) is np.linalg:
        x = np.asarray(x)
        if not np.issubdtype(x.dtype, np.inexact):
            x = x.astype(float)
    xp = namespace(x)
    s = svd(xp.moveaxis(x, axes, (-2, -1)), compute_uv=False, errors=errors, stream=stream)
    if ord == 2 and s.shape[-1] == 0:  # NumPy's max starts from 0; min has no start
        result = xp.zeros(s.shape[:-1], dtype=s.dtype)
    else:
        result = getattr(xp, _SINGULAR_VALUE_NORMS[ord])(s, axis=-1)
    if keepdims:
        shape = list(x.shape)
        shape[axes[0]] = shape[axes[1]] = 1
        result = xp.reshape(result, tuple(shape))
    return result


_NORMS = {None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"}


def cond(x, p=None, *, errors=None, stream=None):
    """Condition number of every matrix of a stack.

    ``p`` in ``None``, ``2`` and ``-2`` from the singular values (the ratio of the
    largest to the smallest, or its inverse); NumPy's other norms (``1``, ``-1``,
    ``inf``, ``-inf``, ``'fro'``, ``'nuc'``) as ``norm(x, p) * norm(inv(x), p)``,
    with :func:`inv`, for square matrices.  A singular matrix has condition number
    ``inf`` (NaN only where ``x`` holds a NaN), as in NumPy.

    Parameters
    ----------
    x : (..., M, N) array_like
    p : {None, 1, -1, 2, -2, inf, -inf, 'fro', 'nuc'}, optional
    errors, stream
        As for :func:`svd` (``p`` of the singular values), whose policy applies.

    Returns
    -------
    (...) array of float

    See Also
    --------
    numpy.linalg.cond : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> blocksolve.cond(np.stack([np.diag([1.0, 10.0]), np.diag([2.0, 2.0])]))
    array([10.,  1.])
    """
    if p not in _NORMS:
        raise ValueError(
            f"cond: p must be one of None, 1, -1, 2, -2, inf, -inf, 'fro', 'nuc'; got {p!r}"
        )
    shape = np.shape(x)
    if len(shape) >= 2 and 0 in shape[-2:]:
        raise np.linalg.LinAlgError("cond is not defined on empty arrays")
    if p in (None, 2, -2):
        s = svd(x, compute_uv=False, errors=errors, stream=stream)
        xp = namespace(s)
        with np.errstate(all="ignore"):
            r = s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    else:
        inverse, info = inv(x, errors="ignore", return_info=True, stream=stream)
        xp = namespace(inverse)
        with np.errstate(all="ignore"):
            r = xp.where(info == 0, _norm(xp, x, p) * _norm(xp, inverse, p), xp.nan)
    nan = xp.isnan(r)
    if bool(xp.any(nan)):  # NaN from a singular matrix: inf, unless x held a NaN
        r = xp.where(nan & ~xp.any(xp.isnan(xp.asarray(x)), axis=(-2, -1)), xp.inf, r)
    if xp is np and r.ndim == 0:
        r = r[()]  # NumPy's convention: a scalar for one matrix
    return r


def _norm(xp, x, p):
    """NumPy's matrix norm ``p`` of every matrix of a stack (not 2 or -2)."""
    x = xp.asarray(x)
    magnitude = xp.abs(x)
    if p == "fro":
        return xp.sqrt(xp.sum(magnitude * magnitude, axis=(-2, -1)))
    if p == "nuc":
        return _singular_value_norm(x, p, (-2, -1), False, "nan", None)  # inf in, NaN out
    along = -2 if p in (1, -1) else -1  # column sums for 1, row sums for inf
    sums = xp.sum(magnitude, axis=along)
    return xp.max(sums, axis=-1) if p > 0 else xp.min(sums, axis=-1)


ARRAY_API.update(matrix_norm=matrix_norm, vector_norm=vector_norm)
