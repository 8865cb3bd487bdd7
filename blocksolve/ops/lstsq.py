"""Least squares: ``lstsq`` (``gels``), batched, for matrices of every shape and rank."""

from __future__ import annotations

from collections import namedtuple

from .. import _flops as flops
from .. import cpu, cuda
from .._execute import execute
from .._numerics import lstsq_residual_count
from .._op import NONFINITE, Example, Failure, Op, Operand, Output, declare
from .._options import real_or_none
from ..cpu.kernels import lstsq as on_cpu
from ..cuda.kernels import lstsq as on_gpu
from ._public import finish, public

__all__ = ["lstsq", "LstsqResult"]

LstsqResult = namedtuple("LstsqResult", ["x", "residuals", "rank", "s"])
LstsqResult.__doc__ = "Result of :func:`lstsq`; unpacks like NumPy's 4-tuple."

LSTSQ = Op(
    "lstsq",
    "gels",
    "numpy.linalg.lstsq",
    [Operand("a", ("m", "n")), Operand("b", ("m", "k"), vector_ok=True)],
    [
        Output("x", ("n", "k")),
        Output("residuals", ("r",), dtype="real"),
        Output("rank", (), dtype="int32", nan_on_failure=False, wrapped=False),
        Output("s", ("p",), dtype="real", nan_on_failure=False, wrapped=False),
    ],
    Failure(
        f"matrix {NONFINITE}",
        "``a`` holds an inf or NaN (a rank-deficient matrix is no failure: it gets "
        "the minimum-norm solution and its rank)",
        "1",
    ),
    derived={"p": lambda dims: min(dims["m"], dims["n"]), "r": lstsq_residual_count},
    wrap_from="b",
    nonfinite_cause=["a"],
    nonfinite='An inf or NaN in ``a`` is a failure (NumPy raises "SVD did not converge"); '
    "in ``b`` only, it gives non-finite ``x`` and ``residuals`` for that matrix, not a "
    "failure.",
    # over-determined: size x size/2, one right-hand side
    example=Example(
        ("rect", "rhs"),
        dims=lambda s: {"m": s, "n": max(1, s // 2), "k": 1},
        flops=flops.gels,
    ),
)
declare(LSTSQ)

cpu.register(
    "gels",
    on_cpu.gels,
    on_cpu.gels_per_matrix,
    lapack_from=32,
    kernel_from_batch=((12, 6), (16, 16), (24, 32)),
    deciding=("m", "n"),
)
cuda.register(
    "gels",
    on_gpu.gels_descriptors,
    on_gpu.make_gels_kernel,
    on_gpu.gels_empty,
    plan=on_gpu.gels_plan,
)


@public(LSTSQ)
def lstsq(a, b, rcond=None, *, errors=None, return_info=False, stream=None):
    """Least-squares solution of ``a x = b`` for every matrix of a stack.

    The minimum-norm least-squares solution, for matrices of every rank, as
    :func:`numpy.linalg.lstsq` computes it: singular values at or below
    ``rcond`` times the largest count as zero.

    Parameters
    ----------
    a : (..., M, N) array_like
    b : (M,) or (..., M, K) array_like
        Right-hand sides; a vector only when ``b.ndim == 1``.
    rcond : float, optional
        Singular values at or below ``rcond`` times the largest count as
        zero, for the rank and the solution.  Default: machine precision
        times ``max(M, N)`` (NumPy 2).  As in NumPy (LAPACK ``xGELSD``),
        ``rcond <= 0`` and ``rcond >= 1`` mean half the machine precision,
        and NaN cuts no singular value.  A single matrix (as any call the
        kernels do not take) runs NumPy's own ``lstsq`` with ``rcond`` as
        given, and gets its results; under NaN the kernels still cut an
        exactly zero singular value, which NumPy keeps.
    <blocksolve keywords>

    Returns
    -------
    x : (..., N) or (..., N, K) ndarray
        Minimum-norm least-squares solutions.
    residuals : (..., K) or (..., 0) ndarray
        When M > N, the squared 2-norm of each column of ``b - a x`` (also
        for rank-deficient matrices); an empty last axis otherwise.
        ``K = 1`` for a vector ``b``, as in NumPy.
    rank : (...) ndarray of int32
        Numerical rank of each matrix (a scalar for a single matrix).
    s : (..., min(M, N)) ndarray
        Singular values of each matrix, in decreasing order.

    Raises
    ------
    LinAlgError
        If ``a`` holds infs or NaNs (policy ``'raise'``), or the core
        dimensions of ``a`` and ``b`` disagree ("Incompatible dimensions").

    Notes
    -----
    One algorithm for every matrix: a QR factorisation of ``a`` (M >= N) or
    of its adjoint (M < N), then a Jacobi SVD of the small triangular
    factor, whose singular values are those of ``a``, to apply its
    pseudo-inverse.  Matrices are scaled by powers of two where needed, as
    LAPACK's ``xGELSD`` does, so the rank is right at every scale.

    Differences from NumPy: the shapes of all outputs depend only on the
    input shapes -- NumPy returns an empty ``residuals`` for a
    rank-deficient matrix, blocksolve its squared residual norms.

    See Also
    --------
    numpy.linalg.lstsq : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> rng = np.random.default_rng(3)
    >>> a, b = rng.standard_normal((200, 8, 4)), rng.standard_normal((200, 8))
    >>> x, residuals, rank, s = blocksolve.lstsq(a, b[..., None])
    >>> x0 = np.linalg.lstsq(a[0], b[0])[0]
    >>> np.allclose(x[0, :, 0], x0), rank[0], residuals.shape
    (True, np.int32(4), (200, 1))
    >>> a[:, :, 3] = a[:, :, 0]                      # rank 3: the minimum-norm solution
    >>> x, residuals, rank, s = blocksolve.lstsq(a, b[..., None])
    >>> rank[0], np.allclose(x[0, :, 0], np.linalg.lstsq(a[0], b[0])[0])
    (np.int32(3), True)
    """
    outputs, info = execute(
        LSTSQ,
        {"a": a, "b": b},
        {},
        errors=errors,
        return_info=return_info,
        stream=stream,
        runtime={"rcond": real_or_none("lstsq", "rcond", rcond)},
    )
    return finish(outputs, info, LstsqResult._make)
