"""The Cholesky family: ``cholesky``, ``cho_factor`` (``potrf``), ``cho_solve`` (``potrs``),
and ``solve(assume_a='pos')`` (``posv``, factor and solve in one kernel)."""

from __future__ import annotations

from .. import _flops as flops
from .. import cpu, cuda
from .._execute import execute
from .._op import Example, Failure, Op, Operand, Output, declare
from .._options import flag
from ..cpu.kernels import cholesky as on_cpu
from ..cuda.kernels import cholesky as on_gpu
from ._public import (
    A_SQUARE,
    B_RHS,
    CHOLESKY_NONFINITE,
    NOT_POSITIVE_DEFINITE,
    SOLVE_NONFINITE,
    X,
    array_api,
    finish,
    flag_per_matrix,
    public,
    same_flag,
)

__all__ = ["cholesky", "cho_factor", "cho_solve"]

CHOLESKY = Op(
    "cholesky",
    "potrf",
    "numpy.linalg.cholesky",
    [A_SQUARE],
    [Output("c", ("n", "n"))],
    NOT_POSITIVE_DEFINITE,
    options=("lower", "clean"),
    wrap_from="a",
    nonfinite_cause=["a"],
    nonfinite=CHOLESKY_NONFINITE,
    example=Example(("spd",), flops=flops.potrf),
)
CHO_FACTOR = Op(
    "cho_factor",
    "potrf",
    "scipy.linalg.cho_factor",
    [A_SQUARE],
    [Output("c", ("n", "n"))],
    NOT_POSITIVE_DEFINITE,
    options=("lower", "clean"),
    nonfinite_cause=["a"],
    nonfinite=CHOLESKY_NONFINITE,
    example=Example(("spd",), flops=flops.potrf),
)
CHO_SOLVE = Op(
    "cho_solve",
    "potrs",
    "scipy.linalg.cho_solve",
    [Operand("c", ("n", "n")), B_RHS],
    [X],
    Failure(
        "Singular matrix (c[{k0}, {k0}] is exactly zero)",
        "a factor has an exactly zero diagonal entry",
        "the 1-based index of the first zero on the diagonal of the factor",
    ),
    options=("lower",),
    nonfinite=SOLVE_NONFINITE,
    example=Example(
        ("factor", "rhs"),
        call=lambda f, c, b, **kw: f((c, True), b, **kw),
        flops=flops.potrs,
    ),
)
# solve(a, b, assume_a='pos'): scipy.linalg.solve's semantics, dtype rule included
POSV = Op(
    "solve",
    "posv",
    "scipy.linalg.solve",
    [A_SQUARE, B_RHS],
    [X],
    NOT_POSITIVE_DEFINITE,
    options=("lower",),
    nonfinite_cause=["a"],
    nonfinite=CHOLESKY_NONFINITE,
    example=Example(
        ("spd", "rhs"),
        call=lambda f, a, b, **kw: f(a, b, assume_a="pos", **kw),
        name="solve_pos",
        flops=flops.posv,
    ),
    label="solve(assume_a='pos')",
    condition_warning=True,
)
declare(CHOLESKY, CHO_FACTOR, CHO_SOLVE, POSV)

cpu.register(
    "potrf",
    on_cpu.potrf,
    on_cpu.potrf_per_matrix,
    numpy=on_cpu.potrf_numpy,
    lapack_from=48,
    whole_batch_from=0,  # OpenBLAS's own xPOTRF: split, 0.5x NumPy at 4x4 and 64x64
)
cpu.register("potrs", on_cpu.potrs, on_cpu.potrs_per_matrix)
cpu.register("posv", on_cpu.posv, on_cpu.posv_per_matrix)
cuda.register("potrf", on_gpu.potrf_descriptors, on_gpu.make_potrf_kernel, on_gpu.potrf_empty)
cuda.register("potrs", on_gpu.potrs_descriptors, on_gpu.make_potrs_kernel, on_gpu.potrs_empty)
cuda.register("posv", on_gpu.posv_descriptors, on_gpu.make_posv_kernel, on_gpu.posv_empty)


@public(CHOLESKY)
def cholesky(a, /, *, upper=False, errors=None, return_info=False, stream=None):
    """Cholesky factor of every matrix of a stack.

    Parameters
    ----------
    a : (..., M, M) array_like
        Hermitian positive-definite matrices.  Only the lower triangle is
        read (the upper one when ``upper=True``).
    upper : bool, default False
        Return the upper factor ``U`` with ``a = U^H U`` instead of the lower
        factor ``L`` with ``a = L L^H``.
    <blocksolve keywords>

    Returns
    -------
    L : (..., M, M) ndarray
        The factor; the other triangle is zero.  Same array type as ``a``.

    Raises
    ------
    LinAlgError
        If a matrix is not positive definite (policy ``'raise'``); its
        ``indices`` name every failing batch position.

    See Also
    --------
    numpy.linalg.cholesky : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((1000, 4, 4))
    >>> a = x @ x.mT + 4 * np.eye(4)
    >>> L = blocksolve.cholesky(a)
    >>> np.allclose(L @ L.mT, a)
    True
    """
    lower = not flag("cholesky", "upper", upper)
    outputs, info = execute(
        CHOLESKY,
        {"a": a},
        {"lower": lower, "clean": True},
        errors=errors,
        return_info=return_info,
        stream=stream,
    )
    return finish(outputs, info)


@public(CHO_FACTOR)
def cho_factor(
    a,
    lower=False,
    overwrite_a=False,
    check_finite=True,
    *,
    errors=None,
    return_info=False,
    stream=None,
):
    """Cholesky factorisation for :func:`cho_solve`.

    Parameters
    ----------
    a : (..., M, M) array_like
        Hermitian positive-definite matrices; only the triangle selected by
        ``lower`` is read.
    lower : bool, default False
        Compute the lower factor instead of the upper one.
    <overwrite_a>
    check_finite : bool, default True
        Raise ``ValueError`` if ``a`` holds infs or NaNs.
    <blocksolve keywords>

    Returns
    -------
    c : (..., M, M) ndarray
        The factor in the selected triangle; the other triangle holds the
        entries of ``a`` (as in SciPy, do not rely on it).
    lower : bool or (...) ndarray of bool
        The ``lower`` flag, for :func:`cho_solve`: a bool for a single
        matrix, a NumPy array of the batch shape for a stack (whatever the
        array type of ``a``), as SciPy's batched ``cho_factor`` returns it.

    See Also
    --------
    scipy.linalg.cho_factor : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> a = np.array([[[4.0, 2.0], [2.0, 3.0]]] * 3)
    >>> c_and_lower = blocksolve.cho_factor(a)
    >>> x = blocksolve.cho_solve(c_and_lower, np.ones((3, 2, 1)))
    >>> np.allclose(a @ x, 1)
    True
    """
    lower = flag("cho_factor", "lower", lower)
    outputs, info = execute(
        CHO_FACTOR,
        {"a": a},
        {"lower": lower, "clean": False},
        errors=errors,
        return_info=return_info,
        stream=stream,
        check_finite=check_finite,
    )
    return finish(
        outputs,
        info,
        lambda outs: (outs[0], flag_per_matrix(outs[0], lower)),
        into=a if overwrite_a else None,
    )


@public(CHO_SOLVE)
def cho_solve(
    c_and_lower,
    b,
    overwrite_b=False,
    check_finite=True,
    *,
    errors=None,
    return_info=False,
    stream=None,
):
    """Solve ``a x = b`` given the Cholesky factorisation from :func:`cho_factor`.

    Parameters
    ----------
    c_and_lower : tuple of ((..., M, M) array_like, bool)
        Factor and triangle flag as returned by :func:`cho_factor`; the flag
        may be an array, all of whose entries must then agree.
    b : (..., M) or (..., M, K) array_like
        Right-hand sides; a vector only when ``b.ndim == 1``.
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
        If a factor has an exactly zero diagonal entry (policy ``'raise'``).

    See Also
    --------
    scipy.linalg.cho_solve : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> a = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> x = blocksolve.cho_solve(blocksolve.cho_factor(a), [1.0, 2.0])
    >>> np.allclose(a @ x, [1.0, 2.0])
    True
    """
    try:
        c, lower = c_and_lower
    except (TypeError, ValueError):
        raise TypeError(
            "cho_solve: c_and_lower must be a (c, lower) pair as returned by "
            f"cho_factor; got {type(c_and_lower).__name__}"
        ) from None
    outputs, info = execute(
        CHO_SOLVE,
        {"c": c, "b": b},
        {"lower": same_flag("cho_solve", "lower", lower)},
        errors=errors,
        return_info=return_info,
        stream=stream,
        check_finite=check_finite,
    )
    return finish(outputs, info, into=b if overwrite_b else None)


@array_api("cholesky")
def _standard_cholesky(x, /, *, upper=False):
    """Cholesky factor of each matrix of ``x`` (see :func:`blocksolve.cholesky`)."""
    return cholesky(x, upper=upper)
