"""Products and views: ``matmul``, ``tensordot``, ``vecdot``, ``outer``, ``cross``, ``trace``,
``diagonal``, ``matrix_transpose``, ``multi_dot`` and ``matrix_power``.

None of these factorises a matrix, so most are the arrays' own library's
function: ``numpy.linalg``'s for NumPy arrays and array likes, the Array API
namespace's ``linalg`` for CuPy, Dask and torch arrays, so the result stays on
the arrays' device and of their type.  ``multi_dot``
chooses the cheapest order of its products as NumPy's does;
``matrix_power`` with a negative exponent inverts on :func:`blocksolve.inv` and raises
the inverses of a NumPy stack to the power on blocksolve's kernel.
"""

from __future__ import annotations

import operator

import array_api_compat
import numpy as np

from .._errors import LinAlgError
from ..cpu.kernels.products import power_in_place
from ._public import ARRAY_API, delegated, library_linalg, own_linalg
from .inverse import inv

__all__ = [
    "matmul",
    "tensordot",
    "vecdot",
    "outer",
    "cross",
    "trace",
    "diagonal",
    "matrix_transpose",
    "multi_dot",
    "matrix_power",
]


@delegated
def matmul(x1, x2, /):
    """Matrix product of two arrays, stacks broadcast (``x1 @ x2``)."""
    return own_linalg(x1, x2).matmul(x1, x2)


@delegated
def tensordot(x1, x2, /, *, axes=2):
    """Tensor contraction of two arrays over ``axes``."""
    return own_linalg(x1, x2).tensordot(x1, x2, axes=axes)


@delegated
def vecdot(x1, x2, /, *, axis=-1):
    """Dot product of vectors along ``axis``, the first conjugated."""
    return own_linalg(x1, x2).vecdot(x1, x2, axis=axis)


@delegated
def outer(x1, x2, /):
    """Outer product of two vectors."""
    return own_linalg(x1, x2).outer(x1, x2)


@delegated
def cross(x1, x2, /, *, axis=-1):
    """Cross product of 3-element vectors along ``axis``."""
    return own_linalg(x1, x2).cross(x1, x2, axis=axis)


@delegated
def trace(x, /, *, offset=0, dtype=None):
    """Sum along the ``offset`` diagonal of every matrix of a stack."""
    return own_linalg(x).trace(x, offset=offset, dtype=dtype)


@delegated
def diagonal(x, /, *, offset=0):
    """The ``offset`` diagonal of every matrix of a stack."""
    return own_linalg(x).diagonal(x, offset=offset)


@delegated
def matrix_transpose(x, /):
    """Every matrix of a stack transposed."""
    return own_linalg(x).matrix_transpose(x)


def multi_dot(arrays, *, out=None):
    """Product of two or more matrices, in the order of multiplications that costs least.

    As :func:`numpy.linalg.multi_dot`: the first array may be a vector (taken as a
    row), the last a vector (a column), the others are 2-D; for more than three,
    the order comes from the matrix-chain dynamic program, for three from the
    cheaper of ``(AB)C`` and ``A(BC)``.

    Parameters
    ----------
    arrays : sequence of array_like
    out : ndarray, optional
        For NumPy arrays only: where the result is written, as ``numpy.dot``'s ``out``.

    Returns
    -------
    ndarray

    See Also
    --------
    numpy.linalg.multi_dot : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> a, b, c = np.ones((10, 100)), np.ones((100, 5)), np.ones((5, 2))
    >>> blocksolve.multi_dot([a, b, c]).shape
    (10, 2)
    """
    if library_linalg(*arrays) is np.linalg:
        return np.linalg.multi_dot(arrays, out=out)
    if out is not None:
        raise TypeError("multi_dot: out is only supported for NumPy arrays")
    count = len(arrays)
    if count < 2:
        raise ValueError("Expecting at least two arrays.")
    first, last = arrays[0], arrays[-1]
    matrices = [
        first[None, :] if first.ndim == 1 else first,
        *arrays[1:-1],
        last[:, None] if last.ndim == 1 else last,
    ]
    for x in matrices:
        if x.ndim != 2:
            raise LinAlgError(f"{x.ndim}-dimensional array given. Array must be two-dimensional")
    result = _chain_product(
        matrices,
        _chain_order([x.shape[0] for x in matrices] + [matrices[-1].shape[1]]),
        0,
        count - 1,
    )
    if first.ndim == 1 and last.ndim == 1:
        return result[0, 0]
    if first.ndim == 1:
        return result[0]
    return result[:, 0] if last.ndim == 1 else result


def _chain_order(dims):
    """``split[i][j]``: where the cheapest product of matrices ``i..j`` splits (the
    textbook matrix-chain program, as NumPy's ``_multi_dot_matrix_chain_order``)."""
    count = len(dims) - 1
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                here = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or here < cost[i][j]:
                    cost[i][j], split[i][j] = here, k
    return split


def _chain_product(matrices, split, i, j):
    if i == j:
        return matrices[i]
    k = split[i][j]
    return _chain_product(matrices, split, i, k) @ _chain_product(matrices, split, k + 1, j)


def matrix_power(a, n):
    """Every square matrix of a stack raised to the integer power ``n``.

    ``n == 0`` gives identities; ``n < 0`` inverts first, on :func:`blocksolve.inv`
    (whose default policy raises :class:`LinAlgError` for an exactly singular
    matrix), then multiplies by repeated squaring, as NumPy does: NumPy's products
    for ``n > 0``, to its bits; for ``n < 0`` the same products in the same order on
    blocksolve's kernel for stacks of 32 or more float or complex matrices up to 8×8.

    Parameters
    ----------
    a : (..., M, M) array_like
    n : int

    Returns
    -------
    (..., M, M) ndarray
        ``a`` itself for ``n == 1``, as in NumPy.

    Raises
    ------
    LinAlgError
        If ``a`` is not a stack of square matrices, or (``n < 0``) a matrix is singular.
    TypeError
        If ``n`` is not an integer.

    See Also
    --------
    numpy.linalg.matrix_power : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> a = np.stack([np.diag([2.0, 4.0]), np.eye(2)])
    >>> blocksolve.matrix_power(a, -2)[0]
    array([[0.25  , 0.    ],
           [0.    , 0.0625]])
    """
    if library_linalg(a) is np.linalg:
        a = np.asanyarray(a)
    if a.ndim < 2:
        raise LinAlgError(
            f"matrix_power: {a.ndim}-dimensional array given; a must be at least two-dimensional"
        )
    if a.shape[-1] != a.shape[-2]:
        raise LinAlgError(
            f"matrix_power: the last two dimensions of a must be square; got {tuple(a.shape)}"
        )
    try:
        n = operator.index(n)
    except TypeError as error:
        raise TypeError("exponent must be an integer") from error
    if n == 0:
        if isinstance(a, np.ndarray):
            identity = np.empty_like(a)
            identity[...] = np.eye(a.shape[-1], dtype=a.dtype)
            return identity
        xp = array_api_compat.array_namespace(a)
        return xp.zeros_like(a) + xp.eye(a.shape[-1], dtype=a.dtype)
    if n < 0:
        a, n = inv(a), -n
        if n > 1 and _power_own_inverse(a, n):
            return a
    if n <= 3:  # NumPy's products, in its order
        return a if n == 1 else a @ a if n == 2 else (a @ a) @ a
    square = power = None
    while n:  # binary powering
        square = a if square is None else square @ square
        n, bit = divmod(n, 2)
        if bit:
            power = square if power is None else power @ square
    return power


def _power_own_inverse(ainv, n):
    """Raise the matrices of ``ainv``, :func:`inv`'s new result, to the power ``n`` in place
    on the CPU kernel, where it runs (a float or complex NumPy stack); else False."""
    return (
        type(ainv) is np.ndarray
        and ainv.ndim > 2
        and ainv.size  # (the batch of an empty stack of empty matrices has no size)
        and ainv.dtype.kind in "fc"
        and ainv.flags.c_contiguous
        and ainv.flags.writeable
        and power_in_place(ainv.reshape(-1, *ainv.shape[-2:]), n)
    )


ARRAY_API.update(
    matmul=matmul,
    tensordot=tensordot,
    vecdot=vecdot,
    outer=outer,
    cross=cross,
    trace=trace,
    diagonal=diagonal,
    matrix_transpose=matrix_transpose,
    matrix_power=matrix_power,
)
