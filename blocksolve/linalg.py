"""The Python Array API standard's ``linalg`` extension, on blocksolve's functions.

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

Each op family declares its functions' spellings beside them
(:func:`blocksolve.ops._public.array_api`): every function of the standard's
extension is here (:data:`STANDARD`), ``qr`` with modes ``'reduced'`` and
``'complete'``, ``eig`` and ``eigvals`` with complex results always, as the
standard's draft specifies.  The functions that factorise nothing
(``matmul``, ``tensordot``, ``vecdot``, ``outer``, ``cross``, ``trace``,
``diagonal``, ``matrix_transpose``, ``vector_norm``) are the array library's
own.

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

from .ops import EighResult, EigResult, QRResult, SlogdetResult, SVDResult
from .ops._public import ARRAY_API

# The Array API standard's linalg extension, every function of it (2023.12's 23, and the
# eig and eigvals of array-api-strict's newest draft).
STANDARD = (
    "cholesky",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
)

#: The standard's ``linalg`` functions blocksolve does not implement (none).
NOT_PROVIDED = tuple(name for name in STANDARD if name not in ARRAY_API)

globals().update(ARRAY_API)

__all__ = [
    *sorted(ARRAY_API),
    "EighResult",
    "EigResult",
    "QRResult",
    "SlogdetResult",
    "SVDResult",
    "STANDARD",
    "NOT_PROVIDED",
]
