"""The LU family: ``lu_factor`` (``getrf``), ``lu_solve`` (``getrs``) and ``solve``
(``gesv``; its other structures run on the Cholesky and triangular families)."""

from __future__ import annotations

from types import MappingProxyType

from .. import _flops as flops
from .. import cpu, cuda
from .._execute import execute
from .._op import Example, Failure, Op, Operand, Output, declare
from .._options import choice, flag
from ..cpu.kernels import lu as on_cpu
from ..cuda.kernels import lu as on_gpu
from ._public import (
    A_SQUARE,
    B_RHS,
    LU_NONFINITE,
    SINGULAR,
    SOLVE_NONFINITE,
    TRANS,
    X,
    array_api,
    finish,
    public,
)
from .cholesky import POSV
from .triangular import TRIANGULAR_SOLVE

__all__ = ["lu_factor", "lu_solve", "solve"]


def _min_mn(dims):
    return min(dims["m"], dims["n"])


LU_FACTOR = Op(
    "lu_factor",
    "getrf",
    "scipy.linalg.lu_factor",
    [Operand("a", ("m", "n"))],
    [
        Output("lu", ("m", "n"), nan_on_failure=False),
        Output("piv", ("p",), dtype="int32", nan_on_failure=False),
    ],
    Failure(
        "Diagonal number {k} is exactly zero. Singular matrix.",
        "a matrix is exactly singular",
        "the 1-based index of the first exactly zero diagonal entry of U (the "
        "factorisation is completed)",
    ),
    default_policy="warn",
    derived={"p": _min_mn},
    nonfinite_cause=["a"],
    nonfinite=LU_NONFINITE.format(what="factor"),
    example=Example(("general",), flops=flops.getrf),
)
LU_SOLVE = Op(
    "lu_solve",
    "getrs",
    "scipy.linalg.lu_solve",
    [
        Operand("lu", ("n", "n"), finite_checked=False),
        Operand("piv", ("n",), kind="index"),
        B_RHS,
    ],
    [X],
    Failure(
        SINGULAR,
        "U has an exactly zero diagonal entry",
        "the 1-based index of the first zero on the diagonal of U",
    ),
    options=("trans",),
    nonfinite=SOLVE_NONFINITE,
    example=Example(
        ("lu", "pivots", "rhs"),
        call=lambda f, lu, piv, b, **kw: f((lu, piv), b, **kw),
        flops=flops.getrs,
    ),
)
SOLVE = Op(
    "solve",
    "gesv",
    "numpy.linalg.solve",
    [A_SQUARE, B_RHS],
    [X],
    Failure(
        SINGULAR,
        "a matrix is exactly singular (with ``assume_a='pos'``: not positive "
        "definite; triangular: has an exactly zero diagonal entry)",
        "the 1-based index of the first exactly zero diagonal entry of its U (with "
        "``assume_a='pos'``: the order of the leading minor that is not positive "
        "definite; triangular: the index of the first zero on the diagonal)",
    ),
    options=("condition",),
    wrap_from="b",
    nonfinite_cause=["a"],
    nonfinite=LU_NONFINITE.format(what="solution"),
    example=Example(("general", "rhs"), flops=flops.gesv),
    condition_warning=True,
)
declare(LU_FACTOR, LU_SOLVE, SOLVE)

cpu.register("getrf", on_cpu.getrf, on_cpu.getrf_per_matrix)
cpu.register("getrs", on_cpu.getrs, on_cpu.getrs_per_matrix)
cpu.register(
    "gesv",
    on_cpu.gesv,
    on_cpu.gesv_per_matrix,
    numpy=on_cpu.gesv_numpy,
    lapack_from=64,
    kernel_from_batch=((24, 8), (32, 12), (48, 128)),
    whole_batch_from=112,
)
cuda.register("getrf", on_gpu.getrf_descriptors, on_gpu.make_getrf_kernel, on_gpu.getrf_empty)
cuda.register("getrs", on_gpu.getrs_descriptors, on_gpu.make_getrs_kernel, on_gpu.getrs_empty)
cuda.register(
    "gesv",
    on_gpu.gesv_descriptors,
    on_gpu.make_gesv_kernel,
    on_gpu.gesv_empty,
    plan=on_gpu.gesv_plan,
)

# solve(a, b, assume_a=...): the op each structure runs, with the options it fixes (SciPy
# 1.17's spellings; 'pos' reads the triangle ``lower`` selects).  'general' is
# numpy.linalg.solve; the others are scipy.linalg.solve, its dtype rule included.
STRUCTURES = MappingProxyType(
    {
        "general": (SOLVE, {}),
        "positive definite": (POSV, {}),
        "lower triangular": (
            TRIANGULAR_SOLVE,
            {"lower": True, "trans": 0, "unit_diagonal": False, "condition": True},
        ),
        "upper triangular": (
            TRIANGULAR_SOLVE,
            {"lower": False, "trans": 0, "unit_diagonal": False, "condition": True},
        ),
    }
)
_ASSUME_A = {**{name: name for name in STRUCTURES}, "gen": "general", "pos": "positive definite"}
_ASSUME_A[None] = "general"
# Structures SciPy has and blocksolve does not: named in the error message.
_STRUCTURES_ELSEWHERE = (
    "diagonal",
    "tridiagonal",
    "banded",
    "symmetric",
    "sym",
    "hermitian",
    "her",
)


def _structure(assume_a):
    hint = ""
    if assume_a in _STRUCTURES_ELSEWHERE:
        hint = (
            " (SciPy solves symmetric/Hermitian indefinite, diagonal, tridiagonal and banded "
            "systems with dedicated LAPACK routines blocksolve does not have: 'pos' is for "
            "Hermitian positive-definite matrices, 'gen' for any other)"
        )
    return choice("solve", "assume_a", assume_a, _ASSUME_A, hint)


@public(LU_FACTOR)
def lu_factor(
    a, overwrite_a=False, check_finite=True, *, errors=None, return_info=False, stream=None
):
    """LU factorisation with partial pivoting, for :func:`lu_solve`.

    Parameters
    ----------
    a : (..., M, N) array_like
        Matrices to factor; rectangular ones too, as in SciPy (only square
        factors can be passed to :func:`lu_solve`).
    <overwrite_a>
    check_finite : bool, default True
        Raise ``ValueError`` if ``a`` holds infs or NaNs.
    <blocksolve keywords>

    Returns
    -------
    lu : (..., M, N) ndarray
        ``U`` (upper trapezoidal) on and above the diagonal, the unit lower
        trapezoidal ``L`` below it: ``a = P L U``.
    piv : (..., K) ndarray of int32
        ``K = min(M, N)`` 0-based pivot indices: row ``i`` was swapped with
        row ``piv[i]``.

    Notes
    -----
    Infs and NaNs (with ``check_finite=False``) give a non-finite factor; a
    matrix is a failure only where a pivot is exactly zero, and is then
    reported as non-finite input.

    See Also
    --------
    scipy.linalg.lu_factor : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> a = np.array([[[1.0, 2.0], [3.0, 4.0]]] * 4)
    >>> lu, piv = blocksolve.lu_factor(a)
    >>> piv[0]
    array([1, 1], dtype=int32)
    >>> b = np.ones((4, 2, 1))
    >>> np.allclose(blocksolve.lu_solve((lu, piv), b), np.linalg.solve(a, b))
    True
    >>> lu, piv = blocksolve.lu_factor(np.arange(6.0).reshape(2, 3))
    >>> lu.shape, piv
    ((2, 3), array([1, 1], dtype=int32))
    """
    outputs, info = execute(
        LU_FACTOR,
        {"a": a},
        {},
        errors=errors,
        return_info=return_info,
        stream=stream,
        check_finite=check_finite,
    )
    return finish(outputs, info, tuple, into=a if overwrite_a else None)


@public(LU_SOLVE)
def lu_solve(
    lu_and_piv,
    b,
    trans=0,
    overwrite_b=False,
    check_finite=True,
    *,
    errors=None,
    return_info=False,
    stream=None,
):
    """Solve ``a x = b``, ``a^T x = b`` or ``a^H x = b`` from :func:`lu_factor`.

    Parameters
    ----------
    lu_and_piv : tuple of ((..., M, M) array_like, (..., M) array_like)
        Factorisation and 0-based pivots as returned by :func:`lu_factor`.
    b : (..., M) or (..., M, K) array_like
        Right-hand sides; a vector only when ``b.ndim == 1``.
    trans : {0, 1, 2, 'N', 'T', 'C'}, default 0
        Solve with ``a`` (0), its transpose (1) or conjugate transpose (2).
    <overwrite_b>
    check_finite : bool, default True
        Raise ``ValueError`` if ``b`` holds infs or NaNs (the factor is not checked, as in
        SciPy).
    <blocksolve keywords>

    Returns
    -------
    x : (..., M) or (..., M, K) ndarray

    Raises
    ------
    LinAlgError
        If ``U`` has an exactly zero diagonal entry (policy ``'raise'``).
        SciPy returns infs/NaNs there instead.

    See Also
    --------
    scipy.linalg.lu_solve : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> a = np.array([[2.0, 1.0], [1.0, 3.0]])
    >>> x = blocksolve.lu_solve(blocksolve.lu_factor(a), [3.0, 4.0], trans=1)
    >>> np.allclose(a.T @ x, [3.0, 4.0])
    True
    """
    try:
        lu, piv = lu_and_piv
    except (TypeError, ValueError):
        raise TypeError(
            "lu_solve: lu_and_piv must be an (lu, piv) pair as returned by "
            f"lu_factor; got {type(lu_and_piv).__name__}"
        ) from None
    outputs, info = execute(
        LU_SOLVE,
        {"lu": lu, "piv": piv, "b": b},
        {"trans": choice("lu_solve", "trans", trans, TRANS)},
        errors=errors,
        return_info=return_info,
        stream=stream,
        check_finite=check_finite,
    )
    return finish(outputs, info, into=b if overwrite_b else None)


@public(SOLVE, POSV, TRIANGULAR_SOLVE)
def solve(a, b, *, assume_a=None, lower=False, errors=None, return_info=False, stream=None):
    """Solve ``a x = b`` for every matrix of a stack.

    Parameters
    ----------
    a : (..., M, M) array_like
        Coefficient matrices.
    b : (M,) or (..., M, K) array_like
        Right-hand sides.  NumPy 2 rule: ``b`` is a vector only when
        ``b.ndim == 1``; batch dimensions of ``a`` and ``b`` broadcast.
    assume_a : str, optional
        The structure of ``a``, with :func:`scipy.linalg.solve`'s spellings:

        ``'gen'`` or ``'general'``
            LU factorisation with partial pivoting.
        ``'pos'`` or ``'positive definite'``
            Hermitian positive definite: Cholesky factorisation and solve in
            one kernel, reading only the triangle ``lower`` selects; a
            matrix that is not positive definite is a failure.
        ``'lower triangular'``, ``'upper triangular'``
            Triangular solve reading only that triangle (as
            :func:`solve_triangular`); an exactly zero diagonal entry is a
            failure.

        ``None`` (the default) is ``numpy.linalg.solve``: ``'gen'`` without
        the condition estimate.  Under a named structure a matrix whose
        reciprocal condition number (the 1-norm estimate of LAPACK's
        ``xGECON``, ``xPOCON`` or ``xTRCON``) is below the machine epsilon
        is solved and reported by a :class:`LinAlgWarning`, as SciPy does
        (policies ``'raise'`` and ``'warn'``; ``info = M + 1`` with
        ``return_info``).  SciPy's
        ``'sym'``, ``'her'``, ``'diagonal'``, ``'tridiagonal'`` and
        ``'banded'`` raise ``ValueError``.
    lower : bool, default False
        With ``assume_a='pos'``: read the lower triangle of ``a`` instead of
        the upper one (SciPy's default).  Ignored otherwise, as in SciPy.
    <blocksolve keywords>

    Returns
    -------
    x : (..., M) or (..., M, K) ndarray

    Raises
    ------
    LinAlgError
        If a matrix is exactly singular, or not positive definite with
        ``assume_a='pos'`` (policy ``'raise'``).
    ValueError
        ``assume_a`` is not one of the structures above.

    Warns
    -----
    LinAlgWarning
        With a named structure: a matrix is singular to working precision
        (its results are returned).

    See Also
    --------
    numpy.linalg.solve : The reference semantics (``assume_a='gen'``).
    scipy.linalg.solve : The reference for ``assume_a`` and ``lower``.

    Notes
    -----
    The computation dtype is NumPy's with ``'gen'`` and
    :func:`scipy.linalg.solve`'s with the other structures, which promotes
    ``a`` and ``b`` first: integers and bool compute in float64 under every
    structure, but ``int8`` with ``float32`` in float32 under the others
    (float64 under ``'gen'``), and ``float16``, which ``'gen'`` refuses, in
    float32.

    Differences from SciPy: no structure detection (``assume_a=None`` is
    ``'gen'``, which is right for every nonsingular matrix, and warns of
    no ill-conditioned matrix, as ``numpy.linalg.solve``), no condition
    estimate on GPU arrays (no warning there), no
    ``transposed``, ``overwrite_*`` or ``check_finite`` (NumPy's ``solve``
    has none either), and empty right-hand sides skip the factorisation
    only with ``'pos'`` (as SciPy) -- ``'gen'`` still reports singular
    matrices, as NumPy does.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> rng = np.random.default_rng(1)
    >>> a = rng.standard_normal((500, 4, 4)) + 4 * np.eye(4)
    >>> b = rng.standard_normal((500, 4, 2))
    >>> x = blocksolve.solve(a, b)
    >>> np.allclose(a @ x, b)
    True
    >>> spd = a @ a.mT
    >>> x = blocksolve.solve(spd, b, assume_a="pos")
    >>> np.allclose(spd @ x, b)
    True
    """
    op, fixed = STRUCTURES[_structure(assume_a)]
    options = dict(fixed)
    if "condition" in op.options and "condition" not in fixed:  # SciPy's where named
        options["condition"] = assume_a is not None
    if "lower" in op.options and "lower" not in fixed:
        options["lower"] = flag("solve", "lower", lower)
    outputs, info = execute(
        op, {"a": a, "b": b}, options, errors=errors, return_info=return_info, stream=stream
    )
    return finish(outputs, info)


@array_api("solve")
def _standard_solve(x1, x2, /):
    """Solve ``x1 @ x = x2`` for each matrix of ``x1``; ``x2`` is a vector only when
    ``x2.ndim == 1`` (see :func:`blocksolve.solve`)."""
    return solve(x1, x2)
