"""Host-side array work of the CUDA backend: no kernels, only ``xp`` calls.

``xp`` is cupy on a GPU (the work stays on the device, on the current
stream) or numpy under numba's CUDA simulator.  Two jobs:

- :func:`zero_sized`: results for problems with an empty core dimension,
  computed without launching cuSolverDx (which has no zero-sized matrices),
  as NumPy/SciPy give them (``det`` of a 0 x 0 matrix is 1);
- :func:`singular_values` and :func:`lstsq_rank`: lstsq's ``s``, rank and
  ``info``.  cuSolverDx has no SVD, so ``s`` comes from
  ``xp.linalg.svd(t, compute_uv=False)`` of the ``min(M, N)``-square
  triangular factor ``t`` that the gels kernel stores (R of ``A = QR``, or L
  of ``A = LQ``; both have A's singular values).  With cupy that is
  cuSOLVER's batched Jacobi SVD (gesvdj) for matrices up to 32 x 32 and a
  loop of gesvd above (cupy's own dispatch).
"""

from __future__ import annotations

import numpy as np

__all__ = ["zero_sized", "lstsq_rank", "singular_values"]


def _real(dtype):
    return np.finfo(dtype).dtype


def lstsq_rank(s, m, n, rcond, xp):
    """NumPy 2's rank rule; ``info = rank + 1`` for rank-deficient matrices.

    Parameters
    ----------
    s : (batch, min(m, n)) array
        Singular values, in decreasing order.
    rcond : float or None
        Relative cut-off; ``None`` means machine precision times
        ``max(m, n)`` (NumPy 2), a negative value machine precision (LAPACK).

    Returns
    -------
    rank, info : (batch,) int32 arrays
    """
    p = min(m, n)
    eps = np.finfo(s.dtype).eps
    rcond = eps * max(m, n) if rcond is None else (eps if rcond < 0 else rcond)
    if p == 0:
        zeros = xp.zeros(s.shape[0], np.int32)
        return zeros, zeros.copy()
    rank = (s > rcond * s[:, :1]).sum(axis=1).astype(np.int32)
    info = xp.where(rank < p, rank + 1, 0).astype(np.int32)
    return rank, info


def singular_values(a, xp):
    """Singular values of each matrix of ``a``, decreasing, in ``a``'s real dtype."""
    return xp.linalg.svd(a, compute_uv=False).astype(_real(a.dtype), copy=False)


def _first_zero_diagonal(a, xp):
    """1-based index of the first exactly zero diagonal entry per matrix, else 0."""
    zero = xp.diagonal(a, axis1=1, axis2=2) == 0
    return xp.where(zero.any(axis=1), zero.argmax(axis=1) + 1, 0).astype(np.int32)


def _solve_without_work(pattern, operands, xp):
    """potrs/getrs/trsm/gesv/posv with ``n == 0`` or ``k == 0``: x is b, info from A's
    diagonal (posv: none, SciPy does not factor for empty right-hand sides)."""
    a, b = operands[0], operands[-1]
    checks_diagonal = (pattern.routine in ("potrs", "getrs")
                       or (pattern.routine == "trsm" and not pattern.option("unit_diagonal")))
    if checks_diagonal and pattern.dim("n"):
        info = _first_zero_diagonal(a, xp)
    else:
        info = xp.zeros(a.shape[0], np.int32)
    return b.copy(), info


def _qr_empty(pattern, a, xp):
    from .._ops import QR_MODES, resolve_dims
    dims = resolve_dims(QR_MODES[pattern.option("mode")], dict(pattern.dims))
    outputs = []
    for spec in QR_MODES[pattern.option("mode")].outputs:
        out = xp.zeros((a.shape[0], *(dims[s] for s in spec.core)), a.dtype)
        if spec.name == "Q":  # 'complete' mode with n == 0: Q is the identity
            out[...] = xp.eye(out.shape[-2], out.shape[-1], dtype=a.dtype)
        outputs.append(out)
    return (*outputs, xp.zeros(a.shape[0], np.int32))


def _lstsq_degenerate(pattern, a, b, xp, rcond):
    m, n, k = pattern.dim("m"), pattern.dim("n"), pattern.dim("k")
    batch, real = a.shape[0], _real(a.dtype)
    x = xp.zeros((batch, n, k), a.dtype)
    if m > n:  # x = 0 when n == 0; k == 0 leaves nothing to sum
        residuals = (xp.abs(b) ** 2).sum(axis=1).astype(real)
    else:
        residuals = xp.zeros((batch, 0), real)
    if min(m, n) == 0:
        s = xp.zeros((batch, 0), real)
    else:
        s = singular_values(a, xp)
    rank, info = lstsq_rank(s, m, n, rcond, xp)
    return x, residuals, rank, s, info


def _empty_square_results(pattern, a, xp):
    """NumPy's results for 0 x 0 matrices: no eigenvalues, an empty inverse, det 1."""
    batch, real = a.shape[0], _real(a.dtype)
    if pattern.routine == "heev":
        w = xp.zeros((batch, 0), real)
        return (w, a.copy()) if pattern.option("vectors") else (w,)
    if pattern.routine == "getri":
        return (a.copy(),)
    ones = xp.ones(batch, a.dtype)  # getrf_det: the empty product
    return (ones, xp.zeros(batch, real)) if pattern.option("log") else (ones,)


def zero_sized(pattern, operands, xp, runtime):
    """``(*outputs, info)`` when a core dimension is empty, else ``None``.

    Matches NumPy/SciPy: empty factors, ``Q = I`` for a complete QR of an
    ``(m, 0)`` matrix, ``x = 0`` and ``residuals = ||b||^2`` for lstsq with
    ``n == 0``, and -- when only the right-hand sides are empty -- the
    singularity checks of the factor (by :func:`_first_zero_diagonal`; gesv
    needs a factorisation and is handled by the plan).
    """
    from .._ops import has_empty_input, op_for
    dims = dict(pattern.dims)
    routine = pattern.routine
    if not has_empty_input(op_for(routine, pattern.options), dims):
        return None
    batch = operands[0].shape[0]
    if routine in ("potrf", "getrf"):
        a = operands[0]
        outputs = (a.copy(),) if routine == "potrf" else (a.copy(), xp.zeros((batch, 0), np.int32))
        return (*outputs, xp.zeros(batch, np.int32))
    if routine in ("potrs", "getrs", "trsm", "posv") or (routine == "gesv" and dims["n"] == 0):
        return _solve_without_work(pattern, operands, xp)
    if routine in ("heev", "getri", "getrf_det"):  # 0 x 0 matrices
        return (*_empty_square_results(pattern, operands[0], xp), xp.zeros(batch, np.int32))
    if routine == "geqrf":
        return _qr_empty(pattern, operands[0], xp)
    if routine == "gels":
        return _lstsq_degenerate(pattern, *operands, xp, runtime.get("rcond"))
    return None
