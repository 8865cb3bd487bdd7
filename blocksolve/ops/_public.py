"""What the public functions of every op family share.

Their keyword entries in the docstrings (``errors``, ``return_info``,
``stream``, written from the op's :class:`~blocksolve._op.Failure` by
:func:`public`), how results are handed back (:func:`finish`, SciPy's
``overwrite_*`` in :func:`in_place`), the spellings of the options several
functions take, and the operands and failures several families declare.
"""

from __future__ import annotations

import textwrap

import array_api_compat
import numpy as np

from .._op import Failure, Operand, Output, bind
from .._options import flag

__all__ = [
    "public",
    "delegated",
    "library_linalg",
    "own_linalg",
    "namespace",
    "array_api",
    "ARRAY_API",
    "finish",
    "same_flag",
    "flag_per_matrix",
    "TRANS",
    "UPLO",
    "A_SQUARE",
    "B_RHS",
    "X",
    "NOT_POSITIVE_DEFINITE",
    "SINGULAR",
    "CHOLESKY_NONFINITE",
    "SOLVE_NONFINITE",
    "LU_NONFINITE",
]

TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}
UPLO = {"L": True, "U": False, "l": True, "u": False}

A_SQUARE = Operand("a", ("n", "n"))
B_RHS = Operand("b", ("n", "k"), vector_ok=True)
X = Output("x", ("n", "k"))
NOT_POSITIVE_DEFINITE = Failure(
    "Matrix is not positive definite (leading minor of order {k})",
    "a matrix is not positive definite",
    "the order of the leading minor that is not positive definite",
)
SINGULAR = "Singular matrix (U[{k0}, {k0}] is exactly zero)"
CHOLESKY_NONFINITE = (
    "Non-finite factor. A NaN never passes the positive-definiteness test, so "
    "the matrix usually fails, and is reported as non-finite input."
)
SOLVE_NONFINITE = (
    "Non-finite solution, not a failure (only an exact zero on the factor's diagonal is)."
)
LU_NONFINITE = (
    "Non-finite {what}, not a failure unless a pivot is exactly zero; that matrix "
    "is then reported as non-finite input."
)


def _entry(name, kind, text):
    """One numpydoc parameter entry, its description wrapped."""
    return (
        f"    {name} : {kind}\n"
        + textwrap.fill(
            text, 79, initial_indent=" " * 8, subsequent_indent=" " * 8, break_on_hyphens=False
        )
        + "\n"
    )


def _policy_doc(op):
    """The ``errors`` and ``return_info`` entries of ``op``'s function, from its failure."""
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


def _overwrite_doc(name):
    return _entry(
        f"overwrite_{name}",
        "bool, default False",
        f"Allow the result to be written into ``{name}`` (and ``{name}`` returned), as SciPy "
        f"does: where ``{name}`` is one matrix (or vector), writable, Fortran-ordered and of "
        f"the computation dtype.  Otherwise ``{name}`` is left as it is.",
    )


def public(*ops):
    """Decorator of the public function that runs ``ops``: record it as theirs, and write
    the entries its docstring names in angle brackets: ``<blocksolve keywords>``
    (``errors``, ``return_info``, ``stream``, from the first op's failure),
    ``<overwrite_a>`` and ``<overwrite_b>`` (SciPy's flags)."""
    entries = {
        "<blocksolve keywords>": _policy_doc(ops[0]) + _STREAM_DOC,
        "<overwrite_a>": _overwrite_doc("a"),
        "<overwrite_b>": _overwrite_doc("b"),
    }

    def decorate(function):
        for op in ops:
            bind(op, function)
        for placeholder, text in entries.items():
            function.__doc__ = function.__doc__.replace(f"    {placeholder}\n", text)
        return function

    return decorate


# The Array API standard's spelling of each function that has one, by name (for
# blocksolve.linalg), in the order the families declare them.
ARRAY_API = {}


def array_api(name):
    """Decorator: the function is the Array API standard's ``linalg.<name>``, which
    :mod:`blocksolve.linalg` provides."""

    def register(function):
        function.__name__ = function.__qualname__ = name
        function.__module__ = "blocksolve.linalg"
        ARRAY_API[name] = function
        return function

    return register


def same_flag(function, name, value):
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


def flag_per_matrix(factor, value):
    """The flag ``value`` for a single matrix; for a stack, as SciPy's batched functions
    give it: a NumPy bool array of the batch shape (also for CuPy and Dask factors: it is
    known without looking at them)."""
    batch_shape = tuple(factor.shape[:-2])
    return np.full(batch_shape, value) if batch_shape else value


def in_place(target, result):
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


def finish(outputs, info, make=None, into=None):
    """The public function's result from ``execute``'s: ``make(outputs)`` (default: the
    one output), with ``info`` when it was asked for; the first output written into the
    array ``into`` where SciPy would have (see :func:`in_place`)."""
    if into is not None:
        outputs = [in_place(into, outputs[0]), *outputs[1:]]
    result = outputs[0] if make is None else make(outputs)
    return result if info is None else (result, info)


def namespace(x):
    """NumPy for NumPy arrays (so that results are NumPy's to the type), else the array's
    own Array API namespace."""
    if isinstance(x, (np.ndarray, np.generic)):
        return np
    return array_api_compat.array_namespace(x)


# What numpy.linalg takes as it is (the common case, checked first: it must stay cheap).
_NUMPY_INPUTS = (np.ndarray, np.generic, list, tuple, int, float, complex)


def library_linalg(*arrays):
    """The ``linalg`` namespace of the arrays' own library: ``numpy.linalg`` for NumPy arrays
    and array likes, else the Array API namespace of the first other array."""
    for x in arrays:
        if not isinstance(x, _NUMPY_INPUTS) and array_api_compat.is_array_api_obj(x):
            return array_api_compat.array_namespace(x).linalg
    return np.linalg


def own_linalg(x1, x2=None):
    """:func:`library_linalg` of one or two arrays, NumPy arrays answered first (the
    delegated functions' common case: it must cost next to nothing)."""
    if type(x1) is np.ndarray and (x2 is None or type(x2) is np.ndarray):
        return np.linalg
    return library_linalg(x1) if x2 is None else library_linalg(x1, x2)


def delegated(function):
    """Decorator of a function the arrays' own library computes: its docstring says so."""
    function.__doc__ = (
        f"{function.__doc__}\n\n"
        "The arrays' own library computes it: ``numpy.linalg`` for NumPy arrays and array\n"
        "likes, the Array API namespace's ``linalg`` for CuPy, Dask and torch arrays.\n\n"
        f"See Also\n--------\nnumpy.linalg.{function.__name__} : The reference semantics.\n"
    )
    return function
