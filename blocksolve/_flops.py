"""Floating-point operation counts of the LAPACK routines, for rates and rooflines.

Real operations (each addition and multiplication one) of one matrix, as
LAPACK Working Note 41 and Golub & Van Loan count them for the usual
algorithm, whatever blocksolve's kernels run: a rate in these units says how
much of the machine a call uses for the work the problem needs.  Complex
matrices count four real operations per complex one (:func:`of_dtype`).
Each function takes the op's core dimensions, ``{symbol: size}``.
"""

from __future__ import annotations

import numpy as np


def potrf(d):
    """Cholesky factorisation of an ``n x n`` matrix."""
    n = d["n"]
    return n**3 / 3 + n**2 / 2 + n / 6


def potrs(d):
    """Two triangular solves with ``k`` right-hand sides."""
    return 2 * d["n"] ** 2 * d["k"]


def posv(d):
    return potrf(d) + potrs(d)


def getrf(d):
    """LU factorisation with partial pivoting of an ``m x n`` matrix (``m = n`` if absent)."""
    n = d["n"]
    m = d.get("m", n)
    m, n = max(m, n), min(m, n)
    return m * n**2 - n**3 / 3 - n**2 / 2 + 5 * n / 6


def getrs(d):
    return 2 * d["n"] ** 2 * d["k"] - d["n"] * d["k"]


def gesv(d):
    return getrf(d) + getrs(d)


def getri(d):
    """Inverse from the LU factors, the factorisation included."""
    n = d["n"]
    return getrf(d) + 4 * n**3 / 3 - n**2 + 5 * n / 3


def trsm(d):
    return d["n"] ** 2 * d["k"]


def _tall(d):
    return max(d["m"], d["n"]), min(d["m"], d["n"])


def qr(d):
    """Householder QR (``xGEQRF``) and the reduced ``Q`` (``xORGQR``)."""
    m, n = _tall(d)
    return 4 * m * n**2 - 4 * n**3 / 3


def gels(d):
    """Least squares as NumPy's ``xGELSD`` solves it: QR, the singular values of ``R``,
    and ``Q^H b`` for ``k`` right-hand sides."""
    m, n = _tall(d)
    return 2 * m * n**2 - 2 * n**3 / 3 + 8 * n**3 / 3 + 4 * m * n * d["k"]


def gesvd(d):
    """Singular values and the full ``U`` and ``V^H`` (Golub-Reinsch)."""
    m, n = _tall(d)
    return 4 * m**2 * n + 8 * m * n**2 + 9 * n**3


def heev(d):
    """Eigenvalues and eigenvectors of a Hermitian matrix."""
    return 9 * d["n"] ** 3


def heev_values(d):
    return 4 * d["n"] ** 3 / 3


def geev(d):
    """Eigenvalues and eigenvectors of a general matrix (Hessenberg QR)."""
    return 25 * d["n"] ** 3


def geev_values(d):
    return 10 * d["n"] ** 3


def gemm(n):
    """A product of two ``n x n`` matrices."""
    return 2 * n**3


def of_dtype(real_flops, dtype):
    """Real operations for matrices of ``dtype``: four per complex operation."""
    return real_flops * (4 if np.dtype(dtype).kind == "c" else 1)
