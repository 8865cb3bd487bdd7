"""Hermitian eigenproblems: ``eigh`` and ``eigvalsh`` (``heev``)."""

from __future__ import annotations

from collections import namedtuple

from .. import _flops as flops
from .. import cpu, cuda
from .._execute import execute
from .._op import Example, Failure, Op, Output, declare
from .._options import choice
from ..cpu.kernels import eigh as on_cpu
from ..cuda.kernels import eigh as on_gpu
from ._public import A_SQUARE, array_api, finish, public
from ._public import UPLO as UPLO_SPELLINGS

__all__ = ["eigh", "eigvalsh", "EighResult"]

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
EighResult.__doc__ = "Result of :func:`eigh` (like NumPy's)."

_NO_CONVERGENCE = Failure(
    "Eigenvalues did not converge ({k} off-diagonal elements did not converge to zero)",
    "the iteration does not converge for a matrix (not seen for finite input)",
    "the number of off-diagonal elements that did not converge to zero",
)
_NONFINITE = (
    "All-NaN eigenvalues (and eigenvectors) for that matrix on the CPU kernels; not a failure."
)
EIGH = Op(
    "eigh",
    "heev",
    "numpy.linalg.eigh",
    [A_SQUARE],
    [
        Output("eigenvalues", ("n",), dtype="real", wrapped=False),
        Output("eigenvectors", ("n", "n")),
    ],
    _NO_CONVERGENCE,
    options=("lower", "vectors"),
    variant=(("vectors", True),),
    wrap_from="a",
    nonfinite=_NONFINITE,
    example=Example(("hermitian",), flops=flops.heev),
)
EIGVALSH = Op(
    "eigvalsh",
    "heev",
    "numpy.linalg.eigvalsh",
    [A_SQUARE],
    [Output("eigenvalues", ("n",), dtype="real")],
    _NO_CONVERGENCE,
    options=("lower", "vectors"),
    variant=(("vectors", False),),
    nonfinite=_NONFINITE,
    example=Example(("hermitian",), flops=flops.heev_values),
)
declare(EIGH, EIGVALSH)

cpu.register(
    "heev",
    on_cpu.heev,
    on_cpu.heev_per_matrix,
    numpy=on_cpu.heev_numpy,
    lapack_from=24,
    kernel_from_batch=((8, 6), (12, 16), (16, 64)),
    whole_batch_from=64,  # eigvalsh's; with eigenvectors from 32 (on_cpu.heev_numpy)
)
cuda.register("heev", on_gpu.heev_descriptors, on_gpu.make_heev_kernel, on_gpu.heev_empty)


@public(EIGH)
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
    options = {"lower": choice("eigh", "UPLO", UPLO, UPLO_SPELLINGS), "vectors": True}
    outputs, info = execute(
        EIGH, {"a": a}, options, errors=errors, return_info=return_info, stream=stream
    )
    return finish(outputs, info, EighResult._make)


@public(EIGVALSH)
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
    options = {"lower": choice("eigvalsh", "UPLO", UPLO, UPLO_SPELLINGS), "vectors": False}
    outputs, info = execute(
        EIGVALSH, {"a": a}, options, errors=errors, return_info=return_info, stream=stream
    )
    return finish(outputs, info)


@array_api("eigh")
def _standard_eigh(x, /):
    """Eigenvalues and eigenvectors of each Hermitian matrix of ``x``, from its lower
    triangle (see :func:`blocksolve.eigh`)."""
    return eigh(x)


@array_api("eigvalsh")
def _standard_eigvalsh(x, /):
    """Eigenvalues of each Hermitian matrix of ``x``, from its lower triangle
    (see :func:`blocksolve.eigvalsh`)."""
    return eigvalsh(x)
