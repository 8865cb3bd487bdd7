"""Triangular solves: ``solve_triangular`` (``trsm``), and ``solve`` of a triangular ``a``."""

from __future__ import annotations

from .. import _flops as flops
from .. import cpu, cuda
from .._execute import execute
from .._op import Example, Failure, Op, declare
from .._options import choice, flag
from ..cpu.kernels import triangular as on_cpu
from ..cuda.kernels import triangular as on_gpu
from ._public import A_SQUARE, B_RHS, SOLVE_NONFINITE, TRANS, X, finish, public

__all__ = ["solve_triangular"]

ZERO_DIAGONAL = Failure(
    "singular matrix: resolution failed at diagonal {k0}",
    "a matrix has an exactly zero diagonal entry",
    "the 1-based index of the first zero on its diagonal",
)
SOLVE_TRIANGULAR = Op(
    "solve_triangular",
    "trsm",
    "scipy.linalg.solve_triangular",
    [A_SQUARE, B_RHS],
    [X],
    ZERO_DIAGONAL,
    options=("lower", "trans", "unit_diagonal", "condition"),
    nonfinite=SOLVE_NONFINITE,
    example=Example(
        ("triangular", "rhs"),
        call=lambda f, a, b, **kw: f(a, b, lower=True, **kw),
        flops=flops.trsm,
    ),
)
# solve(a, b, assume_a='lower triangular' | 'upper triangular'): scipy.linalg.solve's
TRIANGULAR_SOLVE = Op(
    "solve",
    "trsm",
    "scipy.linalg.solve",
    [A_SQUARE, B_RHS],
    [X],
    ZERO_DIAGONAL,
    options=SOLVE_TRIANGULAR.options,
    nonfinite=SOLVE_NONFINITE,
    label="solve(assume_a='lower triangular' or 'upper triangular')",
    condition_warning=True,
)
declare(SOLVE_TRIANGULAR, TRIANGULAR_SOLVE)

cpu.register("trsm", on_cpu.trsm, on_cpu.trsm_per_matrix)
cuda.register("trsm", on_gpu.trsm_descriptors, on_gpu.make_trsm_kernel, on_gpu.trsm_empty)


@public(SOLVE_TRIANGULAR)
def solve_triangular(
    a,
    b,
    trans=0,
    lower=False,
    unit_diagonal=False,
    overwrite_b=False,
    check_finite=True,
    *,
    errors=None,
    return_info=False,
    stream=None,
):
    """Solve ``a x = b`` for triangular ``a``.

    Parameters
    ----------
    a : (..., M, M) array_like
        Triangular matrices; only the triangle selected by ``lower`` is
        read (and not the diagonal when ``unit_diagonal``).
    b : (..., M) or (..., M, K) array_like
        Right-hand sides; a vector only when ``b.ndim == 1``.
    trans : {0, 1, 2, 'N', 'T', 'C'}, default 0
        Solve with ``a`` (0), ``a^T`` (1) or ``a^H`` (2).
    lower : bool, default False
        Use the lower triangle of ``a``.
    unit_diagonal : bool, default False
        Assume the diagonal entries of ``a`` are 1.
    <overwrite_b>
    check_finite : bool, default True
        Raise ``ValueError`` if an input holds infs or NaNs.
    <blocksolve keywords>

    Returns
    -------
    x : (..., M) or (..., M, K) ndarray

    Raises
    ------
    LinAlgError
        If a diagonal entry is exactly zero (policy ``'raise'``).

    See Also
    --------
    scipy.linalg.solve_triangular : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> a = np.array([[2.0, 0.0], [1.0, 4.0]])
    >>> x = blocksolve.solve_triangular(a, [2.0, 9.0], lower=True)
    >>> x
    array([1., 2.])
    """
    options = {
        "lower": flag("solve_triangular", "lower", lower),
        "trans": choice("solve_triangular", "trans", trans, TRANS),
        "unit_diagonal": flag("solve_triangular", "unit_diagonal", unit_diagonal),
        "condition": False,  # SciPy's solve_triangular estimates no condition number
    }
    outputs, info = execute(
        SOLVE_TRIANGULAR,
        {"a": a, "b": b},
        options,
        errors=errors,
        return_info=return_info,
        stream=stream,
        check_finite=check_finite,
    )
    return finish(outputs, info, into=b if overwrite_b else None)
