"""The public functions: validate options, then hand over to :func:`execute`.

Array arguments, dtypes, broadcasting and failures are handled once, in
:mod:`blocksolve._execute`, from the declarations in :mod:`blocksolve._ops`.
Every function also takes the blocksolve keywords ``errors`` (the policy for
matrices that fail), ``return_info`` (return the per-matrix ``info`` array
instead) and ``stream`` (the CUDA stream of a GPU call); :func:`_documented`
writes their entries into each docstring, with what a failure is for that
function (its op's :class:`~blocksolve._ops.Failure`).
"""

from __future__ import annotations

import textwrap
from collections import namedtuple

import numpy as np

from ._execute import execute
from ._ops import OPS, QR_MODES, SOLVE_STRUCTURES, all_ops
from ._options import choice, flag, real_or_none

__all__ = [
    "cholesky",
    "cho_factor",
    "cho_solve",
    "lu_factor",
    "lu_solve",
    "solve",
    "solve_triangular",
    "qr",
    "lstsq",
    "QRResult",
    "LstsqResult",
    "eigh",
    "eigvalsh",
    "inv",
    "det",
    "slogdet",
    "EighResult",
    "SlogdetResult",
]

QRResult = namedtuple("QRResult", ["Q", "R"])
QRResult.__doc__ = "Result of :func:`qr` in modes 'reduced' and 'complete' (like NumPy's)."
LstsqResult = namedtuple("LstsqResult", ["x", "residuals", "rank", "s"])
LstsqResult.__doc__ = "Result of :func:`lstsq`; unpacks like NumPy's 4-tuple."
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
EighResult.__doc__ = "Result of :func:`eigh` (like NumPy's)."
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
SlogdetResult.__doc__ = "Result of :func:`slogdet` (like NumPy's)."

_TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}
_UPLO = {"L": True, "U": False, "l": True, "u": False}


def _entry(name, kind, text):
    """One numpydoc parameter entry, its description wrapped."""
    return (
        f"    {name} : {kind}\n"
        + textwrap.fill(text, 79, initial_indent=" " * 8, subsequent_indent=" " * 8)
        + "\n"
    )


def _policy_doc(function):
    """The ``errors`` and ``return_info`` entries of ``function``'s parameter list, from
    its op's :class:`~blocksolve._ops.Failure`."""
    op = next(op for op in all_ops() if op.name == function)
    fails, meaning = op.failure.what, op.failure.info
    if fails is None:
        return _entry(
            "errors",
            "{'raise', 'warn', 'nan', 'ignore'}, optional",
            f"Accepted as by every blocksolve function; {meaning}, so no policy ever applies.",
        ) + _entry(
            "return_info",
            "bool, default False",
            "Return ``(result, info)``, ``info`` an int32 array of the batch shape, all zeros.",
        )
    filled = [o.name for o in op.outputs if o.nan_on_failure]
    nan = (
        f"``'nan'``: fill {' and '.join(f'``{n}``' for n in filled)} of the failing "
        "matrices with NaN"
        if filled
        else "``'nan'``: as ``'ignore'``"
    )
    warns = " (SciPy warns on an exactly singular matrix)" if op.default_policy == "warn" else ""
    return _entry(
        "errors",
        "{'raise', 'warn', 'nan', 'ignore'}, optional",
        f"What to do when {fails}: ``'raise'`` :class:`LinAlgError`, whose "
        "``indices`` name every failing batch position; ``'warn'`` with "
        f":class:`LinAlgWarning` and return the results; {nan}; ``'ignore'``: return "
        "the results as computed.  Default: the policy of an enclosing "
        f":func:`errstate`, else ``'{op.default_policy}'``{warns}.  "
        "``'raise'`` and ``'warn'`` wait for a GPU to finish.",
    ) + _entry(
        "return_info",
        "bool, default False",
        "Return ``(result, info)`` and apply no policy: ``info`` is an int32 "
        f"array of the batch shape, 0 where a matrix succeeded, else {meaning}.  "
        + _waits_for_a_gpu(op),
    )


def _waits_for_a_gpu(op):
    """What of a ``return_info=True`` call still waits for a GPU."""
    waits = []
    if any(s.kind == "index" for s in op.inputs):
        waits.append("the check of the indices")
    if op.library == "scipy":
        waits.append("``check_finite=True``")
    if not waits:
        return "Nothing waits for a GPU."
    return f"Only {' and '.join(waits)} {'wait' if len(waits) > 1 else 'waits'} for a GPU."


_STREAM_DOC = _entry(
    "stream",
    "CUDA stream, optional",
    "For a call that runs on a GPU: the stream to run it on, a CuPy or torch stream, an "
    "object with ``__cuda_stream__`` or a ``cudaStream_t`` handle (int), on the arrays' "
    "device.  Default: CuPy's current stream (torch's for torch tensors).  Refused for host "
    "arrays computed on the CPU and for Dask arrays.",
)


def _documented(function):
    """Fill in the entries of the blocksolve keywords (``errors``, ``return_info``,
    ``stream``) in a public function's docstring."""

    def decorate(f):
        f.__doc__ = f.__doc__.replace(
            "    <blocksolve keywords>\n", _policy_doc(function) + _STREAM_DOC
        )
        return f

    return decorate


def _same_flag(function, name, value):
    """One bool from a flag that may also be an array of flags (SciPy's batched
    ``cho_factor`` returns ``lower`` as a bool array of the batch shape)."""
    if np.ndim(value) == 0:
        return flag(function, name, value)
    getter = getattr(value, "get", None)  # a flag array on a GPU
    flags = np.asarray(value if getter is None else getter(), dtype=bool)
    true = np.count_nonzero(flags)  # one pass, where any() and all() are two reductions
    if 0 < true < flags.size:
        raise ValueError(
            f"{function}: {name} must be the same for every matrix of the batch; "
            f"got an array with both True and False"
        )
    return true > 0


def _flag_per_matrix(factor, value):
    """The flag ``value`` for a single matrix; for a stack, as SciPy's batched functions
    give it: a NumPy bool array of the batch shape (also for CuPy and Dask factors: it is
    known without looking at them)."""
    batch_shape = tuple(factor.shape[:-2])
    return np.full(batch_shape, value) if batch_shape else value


def _in_place(target, result):
    """``result`` written into ``target`` and ``target`` returned, where SciPy's LAPACK call
    with ``overwrite_*=True`` works in the caller's array: a NumPy array of the
    computation dtype whose every matrix is Fortran-ordered (a contiguous vector is),
    not broadcast against the other argument; else ``result``.  As SciPy's, a batched
    call returns a new array even then.  Unlike SciPy, never into a read-only array."""
    if (
        isinstance(target, np.ndarray)
        and isinstance(result, np.ndarray)
        and target.size
        and target.shape == result.shape
        and target.dtype == result.dtype
        and target.flags.writeable
        and target.flags.aligned
        and _fortran_matrices(target)
    ):
        target[...] = result
        return target if target.ndim <= 2 else result
    return result


def _fortran_matrices(x):
    """Whether each matrix (or the vector) of ``x`` is Fortran-contiguous."""
    if x.ndim <= 2:
        return x.flags.f_contiguous
    rows, cols = x.shape[-2:]
    return (rows <= 1 or x.strides[-2] == x.itemsize) and (
        cols <= 1 or x.strides[-1] == x.itemsize * rows
    )


def _finish(outputs, info, make=None, into=None):
    """The public function's result from ``execute``'s: ``make(outputs)`` (default: the
    one output), with ``info`` when it was asked for; the first output written into the
    array ``into`` where SciPy would have (see :func:`_in_place`)."""
    if into is not None:
        outputs = [_in_place(into, outputs[0]), *outputs[1:]]
    result = outputs[0] if make is None else make(outputs)
    return result if info is None else (result, info)


@_documented("cholesky")
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
    upper = flag("cholesky", "upper", upper)
    outputs, info = execute(
        OPS["cholesky"],
        "cholesky",
        {"a": a},
        {"lower": not upper, "clean": True},
        errors=errors,
        return_info=return_info,
        stream=stream,
    )
    return _finish(outputs, info)


@_documented("cho_factor")
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
    overwrite_a : bool, default False
        Allow the result to be written into ``a`` (and ``a`` returned), as SciPy
        does: where ``a`` is one matrix (or vector), writable, Fortran-ordered and
        of the computation dtype.  Otherwise ``a`` is left as it is.
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
        OPS["cho_factor"],
        "cho_factor",
        {"a": a},
        {"lower": lower, "clean": False},
        errors=errors,
        return_info=return_info,
        stream=stream,
        check_finite=check_finite,
    )
    return _finish(
        outputs,
        info,
        lambda outs: (outs[0], _flag_per_matrix(outs[0], lower)),
        into=a if overwrite_a else None,
    )


@_documented("cho_solve")
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
    overwrite_b : bool, default False
        Allow the result to be written into ``b`` (and ``b`` returned), as SciPy
        does: where ``b`` is one matrix (or vector), writable, Fortran-ordered and
        of the computation dtype.  Otherwise ``b`` is left as it is.
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
    lower = _same_flag("cho_solve", "lower", lower)
    outputs, info = execute(
        OPS["cho_solve"],
        "cho_solve",
        {"c": c, "b": b},
        {"lower": lower},
        errors=errors,
        return_info=return_info,
        stream=stream,
        check_finite=check_finite,
    )
    return _finish(outputs, info, into=b if overwrite_b else None)


@_documented("lu_factor")
def lu_factor(
    a, overwrite_a=False, check_finite=True, *, errors=None, return_info=False, stream=None
):
    """LU factorisation with partial pivoting, for :func:`lu_solve`.

    Parameters
    ----------
    a : (..., M, N) array_like
        Matrices to factor; rectangular ones too, as in SciPy (only square
        factors can be passed to :func:`lu_solve`).
    overwrite_a : bool, default False
        Allow the result to be written into ``a`` (and ``a`` returned), as SciPy
        does: where ``a`` is one matrix (or vector), writable, Fortran-ordered and
        of the computation dtype.  Otherwise ``a`` is left as it is.
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
        OPS["lu_factor"],
        "lu_factor",
        {"a": a},
        {},
        errors=errors,
        return_info=return_info,
        stream=stream,
        check_finite=check_finite,
    )
    return _finish(outputs, info, tuple, into=a if overwrite_a else None)


@_documented("lu_solve")
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
    overwrite_b : bool, default False
        Allow the result to be written into ``b`` (and ``b`` returned), as SciPy
        does: where ``b`` is one matrix (or vector), writable, Fortran-ordered and
        of the computation dtype.  Otherwise ``b`` is left as it is.
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
        OPS["lu_solve"],
        "lu_solve",
        {"lu": lu, "piv": piv, "b": b},
        {"trans": choice("lu_solve", "trans", trans, _TRANS)},
        errors=errors,
        return_info=return_info,
        stream=stream,
        check_finite=check_finite,
    )
    return _finish(outputs, info, into=b if overwrite_b else None)


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


# assume_a -> structure: SciPy 1.17's spellings of the ones blocksolve has.
_STRUCTURES = {
    **{name: name for name in SOLVE_STRUCTURES},
    "gen": "general",
    "pos": "positive definite",
    None: "general",
}


def _structure(assume_a):
    hint = ""
    if assume_a in _STRUCTURES_ELSEWHERE:
        hint = (
            " (SciPy solves symmetric/Hermitian indefinite, diagonal, tridiagonal and banded "
            "systems with dedicated LAPACK routines blocksolve does not have: 'pos' is for "
            "Hermitian positive-definite matrices, 'gen' for any other)"
        )
    return choice("solve", "assume_a", assume_a, _STRUCTURES, hint)


@_documented("solve")
def solve(a, b, *, assume_a="gen", lower=False, errors=None, return_info=False, stream=None):
    """Solve ``a x = b`` for every matrix of a stack.

    Parameters
    ----------
    a : (..., M, M) array_like
        Coefficient matrices.
    b : (M,) or (..., M, K) array_like
        Right-hand sides.  NumPy 2 rule: ``b`` is a vector only when
        ``b.ndim == 1``; batch dimensions of ``a`` and ``b`` broadcast.
    assume_a : str, default 'gen'
        The structure of ``a``, with :func:`scipy.linalg.solve`'s spellings:

        ``'gen'`` or ``'general'``
            LU factorisation with partial pivoting (``numpy.linalg.solve``).
        ``'pos'`` or ``'positive definite'``
            Hermitian positive definite: Cholesky factorisation and solve in
            one kernel, reading only the triangle ``lower`` selects; a
            matrix that is not positive definite is a failure.
        ``'lower triangular'``, ``'upper triangular'``
            Triangular solve reading only that triangle (as
            :func:`solve_triangular`); an exactly zero diagonal entry is a
            failure.

        ``None`` means ``'gen'``.  SciPy's ``'sym'``, ``'her'``,
        ``'diagonal'``, ``'tridiagonal'`` and ``'banded'`` raise
        ``ValueError``.
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
    ``'gen'``, which is right for every nonsingular matrix), no
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
    op, fixed = SOLVE_STRUCTURES[_structure(assume_a)]
    options = dict(fixed)
    if "lower" in op.options and "lower" not in fixed:
        options["lower"] = flag("solve", "lower", lower)
    outputs, info = execute(
        op,
        "solve",
        {"a": a, "b": b},
        options,
        errors=errors,
        return_info=return_info,
        stream=stream,
    )
    return _finish(outputs, info)


@_documented("solve_triangular")
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
    overwrite_b : bool, default False
        Allow the result to be written into ``b`` (and ``b`` returned), as SciPy
        does: where ``b`` is one matrix (or vector), writable, Fortran-ordered and
        of the computation dtype.  Otherwise ``b`` is left as it is.
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
        "trans": choice("solve_triangular", "trans", trans, _TRANS),
        "unit_diagonal": flag("solve_triangular", "unit_diagonal", unit_diagonal),
    }
    outputs, info = execute(
        OPS["solve_triangular"],
        "solve_triangular",
        {"a": a, "b": b},
        options,
        errors=errors,
        return_info=return_info,
        stream=stream,
        check_finite=check_finite,
    )
    return _finish(outputs, info, into=b if overwrite_b else None)


@_documented("qr")
def qr(a, mode="reduced", *, errors=None, return_info=False, stream=None):
    """QR decomposition of every matrix of a stack.

    Parameters
    ----------
    a : (..., M, N) array_like
    mode : {'reduced', 'complete', 'r', 'raw'}, default 'reduced'
        ``'reduced'``: ``Q`` (..., M, K), ``R`` (..., K, N) with
        ``K = min(M, N)``; ``'complete'``: ``Q`` (..., M, M), ``R`` (..., M, N);
        ``'r'``: ``R`` only; ``'raw'``: LAPACK's Householder form
        ``(h, tau)`` with ``h`` (..., N, M) (transposed, as in NumPy) and
        ``tau`` (..., K).
    <blocksolve keywords>

    Returns
    -------
    QRResult or ndarray or tuple
        As :func:`numpy.linalg.qr` for the mode.

    See Also
    --------
    numpy.linalg.qr : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> a = np.random.default_rng(2).standard_normal((100, 5, 3))
    >>> Q, R = blocksolve.qr(a)
    >>> Q.shape, R.shape, np.allclose(Q @ R, a)
    ((100, 5, 3), (100, 3, 3), True)
    """
    op = choice("qr", "mode", mode, QR_MODES)
    outputs, info = execute(
        op, "qr", {"a": a}, {"mode": mode}, errors=errors, return_info=return_info, stream=stream
    )
    make = {
        "reduced": lambda o: QRResult(*o),
        "complete": lambda o: QRResult(*o),
        "r": lambda o: o[0],
        "raw": tuple,
    }[mode]
    return _finish(outputs, info, make)


@_documented("lstsq")
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
    rcond = real_or_none("lstsq", "rcond", rcond)
    outputs, info = execute(
        OPS["lstsq"],
        "lstsq",
        {"a": a, "b": b},
        {},
        errors=errors,
        return_info=return_info,
        stream=stream,
        runtime={"rcond": rcond},
    )
    return _finish(outputs, info, lambda o: LstsqResult(*o))


@_documented("eigh")
def eigh(a, UPLO="L", *, errors=None, return_info=False, stream=None):
    """Eigenvalues and eigenvectors of every Hermitian (real symmetric) matrix of a stack.

    Parameters
    ----------
    a : (..., M, M) array_like
        Hermitian matrices; only the triangle ``UPLO`` selects is read, and
        the imaginary part of the diagonal is ignored.
    UPLO : {'L', 'U'}, default 'L'
        Read the lower or the upper triangle.
    <blocksolve keywords>

    Returns
    -------
    EighResult
        ``eigenvalues`` (..., M), real, in ascending order, and
        ``eigenvectors`` (..., M, M), the normalised eigenvector of
        ``eigenvalues[..., i]`` in column ``i``.

    Raises
    ------
    LinAlgError
        If the iteration does not converge for a matrix (policy ``'raise'``).

    See Also
    --------
    numpy.linalg.eigh : The reference semantics.

    Notes
    -----
    On the CPU each matrix is diagonalised by cyclic Jacobi rotations, to
    high relative accuracy; on the GPU by cuSolverDx ``heev`` (QR
    algorithm).  Eigenvectors are unique only up to a sign (a phase for
    complex matrices), or a rotation within repeated eigenvalues, and may
    differ from NumPy's by those.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> rng = np.random.default_rng(4)
    >>> x = rng.standard_normal((1000, 3, 3))
    >>> a = x + x.mT
    >>> w, v = blocksolve.eigh(a)
    >>> np.allclose(a @ v, v * w[..., None, :]), np.allclose(w, np.linalg.eigvalsh(a))
    (True, True)
    """
    options = {"lower": choice("eigh", "UPLO", UPLO, _UPLO), "vectors": True}
    outputs, info = execute(
        OPS["eigh"],
        "eigh",
        {"a": a},
        options,
        errors=errors,
        return_info=return_info,
        stream=stream,
    )
    return _finish(outputs, info, lambda o: EighResult(*o))


@_documented("eigvalsh")
def eigvalsh(a, UPLO="L", *, errors=None, return_info=False, stream=None):
    """Eigenvalues of every Hermitian (real symmetric) matrix of a stack.

    Parameters
    ----------
    a : (..., M, M) array_like
        Hermitian matrices; only the triangle ``UPLO`` selects is read.
    UPLO : {'L', 'U'}, default 'L'
        Read the lower or the upper triangle.
    <blocksolve keywords>

    Returns
    -------
    w : (..., M) ndarray
        Real eigenvalues in ascending order.

    Raises
    ------
    LinAlgError
        If the iteration does not converge for a matrix (policy ``'raise'``).

    See Also
    --------
    numpy.linalg.eigvalsh : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> a = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> blocksolve.eigvalsh(np.stack([a, 2 * a]))
    array([[1., 3.],
           [2., 6.]])
    """
    options = {"lower": choice("eigvalsh", "UPLO", UPLO, _UPLO), "vectors": False}
    outputs, info = execute(
        OPS["eigvalsh"],
        "eigvalsh",
        {"a": a},
        options,
        errors=errors,
        return_info=return_info,
        stream=stream,
    )
    return _finish(outputs, info)


@_documented("inv")
def inv(a, *, errors=None, return_info=False, stream=None):
    """Inverse of every matrix of a stack.

    Parameters
    ----------
    a : (..., M, M) array_like
    <blocksolve keywords>

    Returns
    -------
    ainv : (..., M, M) ndarray

    Raises
    ------
    LinAlgError
        If a matrix is exactly singular (policy ``'raise'``).

    See Also
    --------
    numpy.linalg.inv : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> a = np.random.default_rng(5).standard_normal((100, 4, 4)) + 3 * np.eye(4)
    >>> np.allclose(blocksolve.inv(a) @ a, np.eye(4))
    True
    """
    outputs, info = execute(
        OPS["inv"], "inv", {"a": a}, {}, errors=errors, return_info=return_info, stream=stream
    )
    return _finish(outputs, info)


@_documented("det")
def det(a, *, errors=None, return_info=False, stream=None):
    """Determinant of every matrix of a stack.

    Parameters
    ----------
    a : (..., M, M) array_like
    <blocksolve keywords>

    Returns
    -------
    det : (...) ndarray
        A scalar for a single matrix, as in NumPy.

    See Also
    --------
    numpy.linalg.det : The reference semantics.
    slogdet : Sign and log of the magnitude, free of over- and underflow.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> a = np.array([[[1.0, 2.0], [3.0, 4.0]], [[2.0, 0.0], [0.0, 3.0]]])
    >>> np.allclose(blocksolve.det(a), [-2.0, 6.0])
    True
    """
    outputs, info = execute(
        OPS["det"],
        "det",
        {"a": a},
        {"log": False},
        errors=errors,
        return_info=return_info,
        stream=stream,
    )
    return _finish(outputs, info)


@_documented("slogdet")
def slogdet(a, *, errors=None, return_info=False, stream=None):
    """Sign and natural log of the absolute value of the determinant, per matrix.

    Parameters
    ----------
    a : (..., M, M) array_like
    <blocksolve keywords>

    Returns
    -------
    SlogdetResult
        ``sign`` (...), of ``a``'s dtype: +1 or -1 for real matrices,
        ``det / |det|`` for complex ones, 0 for singular ones; ``logabsdet``
        (...), real: ``log |det|``, ``-inf`` for singular matrices.
        ``det = sign * exp(logabsdet)``.

    See Also
    --------
    numpy.linalg.slogdet : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> rng = np.random.default_rng(6)
    >>> x = rng.standard_normal((200, 5, 5))
    >>> sign, logdet = blocksolve.slogdet(x @ x.mT + np.eye(5))
    >>> bool((sign == 1).all()), np.allclose(logdet, np.linalg.slogdet(x @ x.mT + np.eye(5))[1])
    (True, True)
    """
    outputs, info = execute(
        OPS["slogdet"],
        "slogdet",
        {"a": a},
        {"log": True},
        errors=errors,
        return_info=return_info,
        stream=stream,
    )
    return _finish(outputs, info, lambda o: SlogdetResult(*o))
