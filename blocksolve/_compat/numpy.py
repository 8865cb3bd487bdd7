"""NumPy's private API that blocksolve uses: ``numpy.linalg``'s gufuncs, called as
``numpy.linalg`` calls them, for operands already checked.

Each ``numpy.linalg`` function below is a Python layer around one gufunc of
``numpy.linalg._umath_linalg``: it converts and checks the arguments, chooses
the gufunc's signature (always double precision) and error state, and casts
the results back to the arguments' precision.  A plan has checked and cast the
operands once for every call of its signature, so the runners here call the
gufunc exactly as ``numpy.linalg`` does -- same signature, error state and
casts -- which gives its results to the bit without the 1-2 microseconds its
checks take, about half of its time on a small matrix.

Checked on NumPy 2.0.2 and 2.1.0 through 2.4.6: the gufuncs and signatures of
:data:`CALLS` are those of ``numpy.linalg._umath_linalg`` from 2.1 on (NumPy 2.0
names its SVD gufuncs by shape; there the public function answers instead).
``tests/test_compat.py`` checks every row on the installed NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["CHECKED", "CALLS", "numpy_linalg"]

CHECKED = ("2.0.2", "2.4.6")

try:
    from numpy.linalg import _umath_linalg
except ImportError:  # pragma: no cover - every NumPy 2 has it
    _umath_linalg = None


@dataclass(frozen=True)
class _Call:
    """How ``numpy.linalg.<public>(..., **keywords)`` calls its gufunc.

    ``real`` and ``complex`` are the gufunc signatures for real and complex
    operands; ``failure`` is the ``LinAlgError`` message NumPy raises when
    LAPACK reports a failed matrix, None where it never raises.
    ``complex_results``: the results are complex whatever the operands (the
    gufunc's), where the public function makes them real when every value is.
    """

    gufunc: str
    real: str
    complex: str
    failure: str | None
    public: str
    keywords: dict = field(default_factory=dict)
    complex_results: bool = False


_SINGULAR = "Singular matrix"
_NOT_POSITIVE = "Matrix is not positive definite"
_NO_CONVERGENCE = "Eigenvalues did not converge"
_SVD_NO_CONVERGENCE = "SVD did not converge"

CALLS = {
    call.gufunc: call
    for call in (
        _Call("solve", "dd->d", "DD->D", _SINGULAR, "solve"),
        _Call("inv", "d->d", "D->D", _SINGULAR, "inv"),
        _Call("det", "d->d", "D->D", None, "det"),
        _Call("slogdet", "d->dd", "D->Dd", None, "slogdet"),
        _Call("cholesky_lo", "d->d", "D->D", _NOT_POSITIVE, "cholesky"),
        _Call("cholesky_up", "d->d", "D->D", _NOT_POSITIVE, "cholesky", {"upper": True}),
        _Call("eigh_lo", "d->dd", "D->dD", _NO_CONVERGENCE, "eigh"),
        _Call("eigh_up", "d->dd", "D->dD", _NO_CONVERGENCE, "eigh", {"UPLO": "U"}),
        _Call("eigvalsh_lo", "d->d", "D->d", _NO_CONVERGENCE, "eigvalsh"),
        _Call("eigvalsh_up", "d->d", "D->d", _NO_CONVERGENCE, "eigvalsh", {"UPLO": "U"}),
        _Call("eig", "d->DD", "D->DD", _NO_CONVERGENCE, "eig", complex_results=True),
        _Call("eigvals", "d->D", "D->D", _NO_CONVERGENCE, "eigvals", complex_results=True),
        _Call("svd_f", "d->ddd", "D->DdD", _SVD_NO_CONVERGENCE, "svd"),
        _Call("svd_s", "d->ddd", "D->DdD", _SVD_NO_CONVERGENCE, "svd", {"full_matrices": False}),
        _Call("svd", "d->d", "D->d", _SVD_NO_CONVERGENCE, "svd", {"compute_uv": False}),
    )
}


def numpy_linalg(gufunc, dtype):
    """``compute(*operands) -> tuple of outputs``: ``numpy.linalg``'s call of ``gufunc``
    (a name of :data:`CALLS`) on operands of ``dtype`` (float32, float64, complex64 or
    complex128), raising its ``LinAlgError`` when a matrix fails."""
    call = CALLS[gufunc]
    dtype = np.dtype(dtype)
    function = getattr(_umath_linalg, gufunc, None)
    if function is None:  # NumPy 2.0's SVD gufuncs, say (named by shape there)
        return _public(call)
    signature = call.complex if dtype.kind == "c" else call.real
    results = signature.partition("->")[2]
    several = len(results) > 1  # then the gufunc returns a tuple
    if dtype == np.dtype(signature[0]):  # double precision, the gufunc's own

        def compute(*operands):
            found = function(*operands, signature=signature)
            return found if several else (found,)

    else:  # single precision: computed in double, as numpy.linalg does, then cast back
        real = np.finfo(dtype).dtype
        casts = [np.result_type(real, np.complex64) if code.isupper() else real for code in results]

        def compute(*operands):
            found = function(*operands, signature=signature)
            found = found if several else (found,)
            return tuple([f.astype(t, copy=False) for f, t in zip(found, casts)])

    if call.failure is None:
        return compute
    failing = np.errstate(
        call=_raiser(call.failure), invalid="call", over="ignore", divide="ignore", under="ignore"
    )
    return failing(compute)  # a fresh error state per call, as a decorator makes it


def _raiser(message):
    def raise_linalg_error(err, flag):
        raise np.linalg.LinAlgError(message)

    return raise_linalg_error


def _public(call):
    function = getattr(np.linalg, call.public)

    def compute(*operands):
        found = function(*operands, **call.keywords)
        found = tuple(found) if isinstance(found, tuple) else (found,)
        if call.complex_results:
            found = tuple(f.astype(np.result_type(f, np.complex64), copy=False) for f in found)
        return found

    return compute
