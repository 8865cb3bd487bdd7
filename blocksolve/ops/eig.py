"""General eigenproblems: ``eig`` and ``eigvals`` (``geev``).

On the CPU, blocksolve's kernel: balancing, Hessenberg reduction and the
Francis QR iteration, as LAPACK's ``geev``.  The CUDA backend has no kernel
for ``geev`` yet: a call on GPU arrays copies them to the host, runs the CPU
kernel and copies the results back (``blocksolve info`` and the plan say so).
"""

from __future__ import annotations

from collections import namedtuple

from .. import _flops as flops
from .. import cpu, cuda
from .._execute import execute
from .._normalize import numpy_dtype
from .._op import Example, Failure, Op, Output, declare
from ..cpu.kernels import eig as on_cpu
from ._public import A_SQUARE, array_api, finish, namespace, public

__all__ = ["eig", "eigvals", "EigResult"]

EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
EigResult.__doc__ = "Result of :func:`eig` (like NumPy's)."

_NO_CONVERGENCE = Failure(
    "Eigenvalues did not converge (LAPACK info {k})",
    "the QR iteration does not converge for a matrix (not seen for finite input), or "
    "the matrix holds an inf or NaN (NumPy refuses such input)",
    "``i > 0``: the QR iteration failed, eigenvalues ``i+1..n`` converged (LAPACK's "
    "meaning); ``n`` for a matrix with an inf or NaN",
)
_NONFINITE = "A failure, reported as non-finite input (NumPy raises for any inf or NaN)."
EIG = Op(
    "eig",
    "geev",
    "numpy.linalg.eig",
    [A_SQUARE],
    [
        Output("eigenvalues", ("n",), dtype="complex", wrapped=False),
        Output("eigenvectors", ("n", "n"), dtype="complex"),
    ],
    _NO_CONVERGENCE,
    options=("vectors",),
    variant=(("vectors", True),),
    wrap_from="a",
    nonfinite_cause=["a"],
    nonfinite=_NONFINITE,
    example=Example(("general",), flops=flops.geev),
)
EIGVALS = Op(
    "eigvals",
    "geev",
    "numpy.linalg.eigvals",
    [A_SQUARE],
    [Output("eigenvalues", ("n",), dtype="complex")],
    _NO_CONVERGENCE,
    options=("vectors",),
    variant=(("vectors", False),),
    nonfinite_cause=["a"],
    nonfinite=_NONFINITE,
    example=Example(("general",), flops=flops.geev_values),
)
declare(EIG, EIGVALS)

cpu.register(
    "geev",
    on_cpu.geev,
    on_cpu.geev_per_matrix,
    numpy=on_cpu.geev_numpy,
    lapack_from=32,
    whole_batch_from=96,
)
cuda.register_on_host(
    "geev", "the CUDA backend has no eig kernel yet: the CPU kernel runs on a host copy"
)


def _real_if_possible(a, arrays):
    """NumPy's rule: for real input, real results when every eigenvalue of the batch is
    real (one check over the batch; Dask arrays stay complex, so that they stay lazy)."""
    if numpy_dtype(a).kind == "c" or type(arrays[0]).__module__.startswith("dask"):
        return arrays
    xp = namespace(arrays[0])
    if not bool(xp.all(xp.imag(arrays[0]) == 0)):
        return arrays
    return [xp.real(x) for x in arrays]


@public(EIG)
def eig(a, *, errors=None, return_info=False, stream=None):
    """Eigenvalues and right eigenvectors of every square matrix of a stack.

    Parameters
    ----------
    a : (..., M, M) array_like
    <blocksolve keywords>

    Returns
    -------
    EigResult
        ``eigenvalues`` (..., M) and ``eigenvectors`` (..., M, M), the eigenvector
        of ``eigenvalues[..., i]`` in column ``i``, of unit norm with its largest
        component real.  Complex, except for real input whose eigenvalues are all
        real (over the whole batch), as NumPy's; Dask arrays give complex results.

    Raises
    ------
    LinAlgError
        If the QR iteration does not converge for a matrix, or a matrix holds an
        inf or NaN (policy ``'raise'``).

    See Also
    --------
    numpy.linalg.eig : The reference semantics.

    Notes
    -----
    On the CPU, blocksolve's kernel (balancing, Hessenberg reduction, Francis QR,
    back-substitution for the eigenvectors, as LAPACK ``geev``); GPU arrays are
    copied to the host for it.  Eigenvalues come in LAPACK's order; an
    eigenvector is unique only up to a unit-modulus factor (and within a repeated
    eigenvalue), so it may differ from NumPy's by those.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> rotations = np.array([[[0.0, -1.0], [1.0, 0.0]], [[0.0, -2.0], [2.0, 0.0]]])
    >>> blocksolve.eig(rotations).eigenvalues
    array([[0.+1.j, 0.-1.j],
           [0.+2.j, 0.-2.j]])
    """
    outputs, info = execute(
        EIG, {"a": a}, {"vectors": True}, errors=errors, return_info=return_info, stream=stream
    )
    return finish(_real_if_possible(a, outputs), info, EigResult._make)


@public(EIGVALS)
def eigvals(a, *, errors=None, return_info=False, stream=None):
    """Eigenvalues of every square matrix of a stack.

    Parameters
    ----------
    a : (..., M, M) array_like
    <blocksolve keywords>

    Returns
    -------
    w : (..., M) ndarray
        In LAPACK's order; complex, except for real input whose eigenvalues are all
        real (over the whole batch), as NumPy's.

    Raises
    ------
    LinAlgError
        If the QR iteration does not converge for a matrix, or a matrix holds an
        inf or NaN (policy ``'raise'``).

    See Also
    --------
    numpy.linalg.eigvals : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> blocksolve.eigvals(np.array([[[2.0, 1.0], [0.0, 3.0]]]))
    array([[2., 3.]])
    """
    outputs, info = execute(
        EIGVALS, {"a": a}, {"vectors": False}, errors=errors, return_info=return_info, stream=stream
    )
    return finish(_real_if_possible(a, outputs), info)


@array_api("eig")
def _standard_eig(x, /):
    """Eigenvalues and right eigenvectors of each matrix of ``x``, always complex
    (see :func:`blocksolve.eig`)."""
    outputs, _ = execute(EIG, {"a": x}, {"vectors": True})
    return EigResult._make(outputs)


@array_api("eigvals")
def _standard_eigvals(x, /):
    """Eigenvalues of each matrix of ``x``, always complex (see :func:`blocksolve.eigvals`)."""
    (w,), _ = execute(EIGVALS, {"a": x}, {"vectors": False})
    return w
