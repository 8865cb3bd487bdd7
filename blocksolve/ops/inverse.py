"""Matrix inverses: ``inv`` (``getri``, from an LU factorisation)."""

from __future__ import annotations

from .. import _flops as flops
from .. import cpu, cuda
from .._execute import execute
from .._op import Example, Failure, Op, Output, declare
from ..cpu.kernels import inverse as on_cpu
from ..cuda.kernels import inverse as on_gpu
from ._public import A_SQUARE, LU_NONFINITE, SINGULAR, array_api, finish, public

__all__ = ["inv"]

INV = Op(
    "inv",
    "getri",
    "numpy.linalg.inv",
    [A_SQUARE],
    [Output("ainv", ("n", "n"))],
    Failure(
        SINGULAR,
        "a matrix is exactly singular",
        "the 1-based index of the first exactly zero diagonal entry of its U",
    ),
    wrap_from="a",
    nonfinite_cause=["a"],
    nonfinite=LU_NONFINITE.format(what="inverse"),
    example=Example(("general",), flops=flops.getri),
)
declare(INV)

cpu.register(
    "getri",
    on_cpu.getri,
    on_cpu.getri_per_matrix,
    numpy=on_cpu.getri_numpy,
    lapack_from=64,
    kernel_from_batch=((16, 8), (24, 12), (32, 32), (48, 64)),
    whole_batch_from=112,
)
cuda.register("getri", on_gpu.getri_descriptors, on_gpu.make_getri_kernel, on_gpu.getri_empty)


@public(INV)
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
        INV, {"a": a}, {}, errors=errors, return_info=return_info, stream=stream
    )
    return finish(outputs, info)


@array_api("inv")
def _standard_inv(x, /):
    """Inverse of each matrix of ``x`` (see :func:`blocksolve.inv`)."""
    return inv(x)
