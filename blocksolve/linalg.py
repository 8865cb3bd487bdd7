"""The Python Array API standard's ``linalg`` spellings, for the functions blocksolve has.

A library written against the standard calls ``xp.linalg.cholesky(x, upper=...)``,
``xp.linalg.solve(x1, x2)`` and so on; passing it this module as ``linalg``
(or using it where it takes one) runs those calls on blocksolve's batched
kernels, on NumPy or CuPy arrays alike.  The functions follow the standard's
signatures (positional-only arrays, keyword-only options) and the
conventions of ``array_api_compat``'s NumPy wrapper (named-tuple results),
and blocksolve's semantics otherwise: every function takes stacks
``(..., M, N)``, ``solve``'s ``x2`` is a vector only when ``x2.ndim == 1``,
and a failing matrix raises :class:`~blocksolve.LinAlgError` naming it (or
follows the policy of an enclosing :func:`blocksolve.errstate`).

Provided: ``cholesky``, ``det``, ``eigh``, ``eigvalsh``, ``inv``,
``matrix_rank``, ``pinv``, ``qr`` (modes ``'reduced'`` and ``'complete'``),
``slogdet``, ``solve``, ``svd`` and ``svdvals``.  The
standard's other ``linalg`` functions are not (:data:`NOT_PROVIDED`); use
the array library's own for those.

Examples
--------
>>> import numpy as np
>>> from blocksolve import linalg
>>> rng = np.random.default_rng(7)
>>> x = rng.standard_normal((100, 3, 3))
>>> cov = x @ x.mT + np.eye(3)
>>> sign, logdet = linalg.slogdet(cov)
>>> L = linalg.cholesky(cov)
>>> np.allclose(logdet, 2 * np.log(np.diagonal(L, axis1=-2, axis2=-1)).sum(-1))
True
"""

from __future__ import annotations

from . import _linalg, _linalg_svd
from ._linalg import EighResult, QRResult, SlogdetResult
from ._linalg_svd import SVDResult

__all__ = [
    "cholesky",
    "det",
    "eigh",
    "eigvalsh",
    "inv",
    "matrix_rank",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "EighResult",
    "QRResult",
    "SlogdetResult",
    "SVDResult",
    "NOT_PROVIDED",
]

#: The standard's ``linalg`` functions blocksolve does not implement.
NOT_PROVIDED = (
    "cross",
    "diagonal",
    "eig",
    "eigvals",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_transpose",
    "outer",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
)


def cholesky(x, /, *, upper=False):
    """Cholesky factor of each matrix of ``x`` (see :func:`blocksolve.cholesky`)."""
    return _linalg.cholesky(x, upper=upper)


def det(x, /):
    """Determinant of each matrix of ``x`` (see :func:`blocksolve.det`)."""
    return _linalg.det(x)


def eigh(x, /):
    """Eigenvalues and eigenvectors of each Hermitian matrix of ``x``, from its lower
    triangle (see :func:`blocksolve.eigh`)."""
    return _linalg.eigh(x)


def eigvalsh(x, /):
    """Eigenvalues of each Hermitian matrix of ``x``, from its lower triangle
    (see :func:`blocksolve.eigvalsh`)."""
    return _linalg.eigvalsh(x)


def inv(x, /):
    """Inverse of each matrix of ``x`` (see :func:`blocksolve.inv`)."""
    return _linalg.inv(x)


_QR_MODES = ("reduced", "complete")


def qr(x, /, *, mode="reduced"):
    """QR decomposition of each matrix of ``x``; ``mode`` is ``'reduced'`` or
    ``'complete'`` (see :func:`blocksolve.qr`)."""
    if mode not in _QR_MODES:
        raise ValueError(
            f"qr: mode must be 'reduced' or 'complete' (the Array API's modes); got {mode!r}"
        )
    return _linalg.qr(x, mode=mode)


def slogdet(x, /):
    """Sign and log of the absolute determinant of each matrix of ``x``
    (see :func:`blocksolve.slogdet`)."""
    return _linalg.slogdet(x)


def solve(x1, x2, /):
    """Solve ``x1 @ x = x2`` for each matrix of ``x1``; ``x2`` is a vector only when
    ``x2.ndim == 1`` (see :func:`blocksolve.solve`)."""
    return _linalg.solve(x1, x2)


def svd(x, /, *, full_matrices=True):
    """Singular value decomposition ``(U, S, Vh)`` of each matrix of ``x``
    (see :func:`blocksolve.svd`)."""
    return _linalg_svd.svd(x, full_matrices=full_matrices)


def svdvals(x, /):
    """Singular values of each matrix of ``x``, in descending order
    (see :func:`blocksolve.svdvals`)."""
    return _linalg_svd.svdvals(x)


def pinv(x, /, *, rtol=None):
    """Pseudo-inverse of each matrix of ``x``; singular values at or below ``rtol`` times
    the largest count as zero (default ``max(M, N)`` times the machine precision; see
    :func:`blocksolve.pinv`)."""
    return _linalg_svd.pinv(x, rtol=rtol)


def matrix_rank(x, /, *, rtol=None):
    """Rank of each matrix of ``x`` (see :func:`blocksolve.matrix_rank`)."""
    return _linalg_svd.matrix_rank(x, rtol=rtol)
