"""Random, well-conditioned inputs of every kind blocksolve's functions take.

One set of generators for the tests (``tests/_helpers.py``), the benchmarks
(``benchmarks/``) and ``python -m blocksolve bench``, so that what is tested is
what is timed.  Each takes a NumPy ``Generator``, the batch shape (a tuple),
the core sizes and a dtype, and returns host arrays of that dtype.  Complex
dtypes get independent normal real and imaginary parts.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "random_matrix",
    "spd_from",
    "random_spd",
    "random_hermitian",
    "random_general",
    "well_conditioned",
    "with_good_triangles",
    "random_triangular",
    "identity_pivots",
    "KINDS",
    "example_inputs",
]


def random_matrix(rng, shape, dtype):
    """Standard normal entries (real and imaginary parts for complex)."""
    dtype = np.dtype(dtype)
    x = rng.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def spd_from(x):
    """``x xᴴ / n + I``: a well-conditioned Hermitian positive-definite matrix from any
    square ``x`` (NumPy, Dask or CuPy; the eigenvalues are at least 1).

    Made exactly Hermitian: a BLAS may round the product's ``(i, j)`` and ``(j, i)``
    entries differently (OpenBLAS's complex product on AMD Zen does), and the two
    triangles of the result would then be two slightly different matrices.
    """
    n = x.shape[-1]
    product = x @ np.conj(x.swapaxes(-1, -2))
    hermitian = (product + np.conj(product.swapaxes(-1, -2))) / 2
    return hermitian / max(n, 1) + np.eye(n, dtype=x.dtype)


def random_spd(rng, batch, n, dtype):
    """Well-conditioned Hermitian positive-definite ``n x n`` matrices (:func:`spd_from`)."""
    return spd_from(random_matrix(rng, (*batch, n, n), dtype)).astype(dtype)


def random_hermitian(rng, batch, n, dtype):
    """Hermitian (real symmetric) ``n x n`` matrices, indefinite: ``(x + xᴴ) / 2``."""
    x = random_matrix(rng, (*batch, n, n), dtype)
    return ((x + np.conj(x.swapaxes(-1, -2))) / 2).astype(dtype)


def well_conditioned(rng, batch, m, n, dtype):
    """Random ``m x n`` matrices plus ``2 sqrt(max(m, n))`` times the rectangular
    identity: full rank and well conditioned, square or not."""
    a = random_matrix(rng, (*batch, m, n), dtype)
    return (a + 2 * np.sqrt(max(m, n)) * np.eye(m, n)).astype(dtype)


def random_general(rng, batch, n, dtype):
    """Well-conditioned general square matrices (:func:`well_conditioned` with m = n)."""
    return well_conditioned(rng, batch, n, n, dtype)


def with_good_triangles(rng, batch, n, dtype):
    """Full ``n x n`` matrices whose every triangle, with its diagonal or a unit one, is
    well conditioned (random triangular matrices are not: their conditioning grows
    exponentially with n).  Also a valid packed LU factorisation."""
    x = random_matrix(rng, (*batch, n, n), dtype) / (2 * max(n, 1))
    return (x + np.eye(n)).astype(dtype)


def random_triangular(rng, batch, n, dtype, lower=True):
    """Well-conditioned lower (or upper) triangular matrices (:func:`with_good_triangles`)."""
    a = with_good_triangles(rng, batch, n, dtype)
    return np.tril(a) if lower else np.triu(a)


def identity_pivots(batch, n):
    """0-based ``int32`` LU pivots that swap nothing, of shape ``(*batch, n)``."""
    return np.broadcast_to(np.arange(n, dtype=np.int32), (*batch, n)).copy()


def _rhs(rng, batch, core, dtype):
    return random_matrix(rng, (*batch, *core), dtype)


def _lower_factor(rng, batch, core, dtype):
    return np.linalg.cholesky(random_spd(rng, batch, core[-1], dtype))


# An op's example names, per input, which of these makes it (see blocksolve._op.Example).
KINDS = {
    "spd": lambda rng, batch, core, dtype: random_spd(rng, batch, core[-1], dtype),
    "hermitian": lambda rng, batch, core, dtype: random_hermitian(rng, batch, core[-1], dtype),
    "general": lambda rng, batch, core, dtype: well_conditioned(rng, batch, *core, dtype),
    "rect": lambda rng, batch, core, dtype: well_conditioned(rng, batch, *core, dtype),
    "triangular": lambda rng, batch, core, dtype: random_triangular(rng, batch, core[-1], dtype),
    "factor": _lower_factor,
    "lu": lambda rng, batch, core, dtype: with_good_triangles(rng, batch, core[-1], dtype),
    "pivots": lambda rng, batch, core, dtype: identity_pivots(batch, core[-1]),
    "rhs": _rhs,
}


def example_inputs(op, rng, batch, dims, dtype):
    """Random inputs of ``op``'s example call for the batch shape ``batch`` and the core
    dimensions ``dims``: host arrays by operand name."""
    return {
        spec.name: KINDS[kind](rng, batch, [dims[s] for s in spec.core], np.dtype(dtype))
        for spec, kind in zip(op.inputs, op.example.inputs)
    }
