"""Determinants: ``det`` and ``slogdet`` (``getrf_det``, from an LU factorisation).

Neither ever fails: a singular matrix has determinant 0 (``logabsdet`` -inf), as
in NumPy.
"""

from __future__ import annotations

from collections import namedtuple

from .. import _flops as flops
from .. import cpu, cuda
from .._execute import execute
from .._op import Example, Failure, Op, Output, declare
from ..cpu.kernels import determinant as on_cpu
from ..cuda.kernels import determinant as on_gpu
from ._public import A_SQUARE, array_api, finish, public

__all__ = ["det", "slogdet", "SlogdetResult"]

SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
SlogdetResult.__doc__ = "Result of :func:`slogdet` (like NumPy's)."

DET = Op(
    "det",
    "getrf_det",
    "numpy.linalg.det",
    [A_SQUARE],
    [Output("det", ())],
    Failure(
        "det never fails (info {k})",
        None,
        "an exactly singular matrix has determinant 0, which is not a failure",
    ),
    options=("log",),
    variant=(("log", False),),
    nonfinite="NaN, ±inf where an infinite pivot leaves a sign (as NumPy); never a failure.",
    example=Example(("general",), flops=flops.getrf),
)
SLOGDET = Op(
    "slogdet",
    "getrf_det",
    "numpy.linalg.slogdet",
    [A_SQUARE],
    [Output("sign", ()), Output("logabsdet", (), dtype="real")],
    Failure(
        "slogdet never fails (info {k})",
        None,
        "an exactly singular matrix has sign 0 and logabsdet -inf, which is not a failure",
    ),
    options=("log",),
    variant=(("log", True),),
    nonfinite="NaN ``logabsdet`` (and ``sign`` of a complex matrix); ``(±1, inf)`` where an "
    "infinite pivot leaves a sign (as NumPy); never a failure.",
    example=Example(("general",), flops=flops.getrf),
)
declare(DET, SLOGDET)

cpu.register(
    "getrf_det",
    on_cpu.getrf_det,
    None,
    numpy=on_cpu.getrf_det_numpy,
    lapack_from=64,
    kernel_from_batch=((16, 2), (24, 4), (32, 8), (48, 32)),
    whole_batch_from=0,  # OpenBLAS's own xGETRF: split, 0.6x NumPy at 4x4
)
cuda.register(
    "getrf_det", on_gpu.getrf_det_descriptors, on_gpu.make_getrf_det_kernel, on_gpu.getrf_det_empty
)


@public(DET)
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
        DET, {"a": a}, {"log": False}, errors=errors, return_info=return_info, stream=stream
    )
    return finish(outputs, info)


@public(SLOGDET)
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
        SLOGDET, {"a": a}, {"log": True}, errors=errors, return_info=return_info, stream=stream
    )
    return finish(outputs, info, SlogdetResult._make)


@array_api("det")
def _standard_det(x, /):
    """Determinant of each matrix of ``x`` (see :func:`blocksolve.det`)."""
    return det(x)


@array_api("slogdet")
def _standard_slogdet(x, /):
    """Sign and log of the absolute determinant of each matrix of ``x``
    (see :func:`blocksolve.slogdet`)."""
    return slogdet(x)
