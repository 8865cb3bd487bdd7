"""The singular value decomposition: ``svd`` (``gesvd``), and what is computed from it,
``svdvals``, ``pinv``, ``matrix_rank`` and ``polar``.

:func:`svd` runs the backends' kernels; the others follow NumPy's and SciPy's
definitions on its results, with the operations of the arrays' own namespace,
so that they take what :func:`svd` takes -- NumPy, CuPy and Dask arrays,
DLPack producers -- and keep the error policy of the decomposition inside them.
"""

from __future__ import annotations

from collections import namedtuple
from types import MappingProxyType

import array_api_compat
import numpy as np

from .. import _flops as flops
from .. import cpu, cuda
from .._execute import apply_policy, execute, is_ndarray_subclass, policy_of
from .._normalize import compute_dtype, numpy_dtype
from .._op import Example, Failure, Op, Operand, Output, declare
from .._options import choice, flag
from ..cpu.kernels import svd as on_cpu
from ..cuda.kernels import svd as on_gpu
from ._public import array_api, finish, namespace, public
from .eigh import eigh, eigvalsh

__all__ = ["svd", "svdvals", "pinv", "matrix_rank", "polar", "SVDResult"]

SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
SVDResult.__doc__ = "Result of :func:`svd` with ``compute_uv=True`` (like NumPy's)."

_NO_VALUE = object()  # pinv's rtol when not given (NumPy's _NoValue)

_S = Output("S", ("p",), dtype="real", wrapped=False)
# numpy.linalg.svd by (compute_uv, full_matrices): the same op but for its outputs.
MODES = MappingProxyType(
    {
        (vectors, full): Op(
            "svd",
            "gesvd",
            "numpy.linalg.svd",
            [Operand("a", ("m", "n"))],
            outputs,
            Failure(
                "SVD did not converge",
                "a matrix holds an inf or NaN (or the iteration does not converge for it)",
                "1",
            ),
            options=("vectors", "full"),
            variant=(("vectors", vectors), ("full", full)),
            derived={"p": lambda dims: min(dims["m"], dims["n"])},
            wrap_from="a",
            nonfinite_cause=["a"],
            nonfinite='An inf or NaN in ``a`` is a failure (NumPy raises "SVD did not '
            'converge"): NaN results for that matrix.',
            example=Example(("rect",), flops=flops.gesvd) if full else None,
            label=f"svd(compute_uv={vectors}, full_matrices={full})",
        )
        for (vectors, full), outputs in {
            (True, True): [Output("U", ("m", "m")), _S, Output("Vh", ("n", "n"))],
            (True, False): [Output("U", ("m", "p")), _S, Output("Vh", ("p", "n"))],
            (False, False): [_S],
        }.items()
    }
)
declare(*MODES.values())

cpu.register(
    "gesvd",
    on_cpu.gesvd_kernel,
    on_cpu.gesvd_per_matrix,
    numpy=on_cpu.gesvd_numpy,
    lapack_from=33,
    whole_batch_from=48,
    deciding=("m", "n"),
)
cuda.register("gesvd", on_gpu.gesvd_descriptors, on_gpu.make_gesvd_kernel, on_gpu.gesvd_empty)


def _unwrapped(a):
    """``(a, wrap)``: an ndarray subclass's data as a plain ndarray, and the function that
    gives a result the subclass back (NumPy's ``_makearray``: ``np.matrix`` multiplies
    with ``*``); any other ``a`` as it is, with ``wrap`` the identity."""
    if is_ndarray_subclass(a):
        return np.asarray(a), a.__array_wrap__
    return a, _as_it_is


def _as_it_is(x):
    return x


def _swap(x):
    """The last two axes swapped, in any namespace."""
    return x.swapaxes(-1, -2) if hasattr(x, "swapaxes") else namespace(x).matrix_transpose(x)


@public(*MODES.values())
def svd(
    a,
    full_matrices=True,
    compute_uv=True,
    hermitian=False,
    *,
    errors=None,
    return_info=False,
    stream=None,
):
    """Singular value decomposition ``a = U @ diag(S) @ Vh`` of every matrix of a stack.

    Parameters
    ----------
    a : (..., M, N) array_like
    full_matrices : bool, default True
        ``U`` (..., M, M) and ``Vh`` (..., N, N); otherwise (..., M, K) and
        (..., K, N) with ``K = min(M, N)``.
    compute_uv : bool, default True
        Compute ``U`` and ``Vh``; otherwise return ``S`` alone.
    hermitian : bool, default False
        ``a`` is Hermitian: the decomposition comes from :func:`eigh` (the
        singular values are the eigenvalues' magnitudes), as in NumPy.
    <blocksolve keywords>

    Returns
    -------
    SVDResult or ndarray
        ``(U, S, Vh)``; ``S`` (..., K) real, in descending order.  ``S`` alone
        without ``compute_uv``.

    See Also
    --------
    numpy.linalg.svd : The reference semantics.

    Notes
    -----
    The singular vectors of a singular value are unique up to a sign (a phase
    for complex matrices), and the vectors of a repeated one up to a rotation
    among them; blocksolve's kernels may choose other ones than LAPACK's.  A call
    of one matrix runs LAPACK's own routine (see the docs' *Which code runs*).

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> a = np.random.default_rng(5).standard_normal((1000, 3, 3))
    >>> U, S, Vh = blocksolve.svd(a)
    >>> np.allclose((U * S[..., None, :]) @ Vh, a)
    True
    >>> np.allclose(S, np.linalg.svd(a, compute_uv=False))
    True
    """
    compute_uv = flag("svd", "compute_uv", compute_uv)
    full = flag("svd", "full_matrices", full_matrices) and compute_uv
    if flag("svd", "hermitian", hermitian):
        return _hermitian_svd(a, compute_uv, errors, return_info, stream)
    outputs, info = execute(
        MODES[compute_uv, full],
        {"a": a},
        {"vectors": compute_uv, "full": full},
        errors=errors,
        return_info=return_info,
        stream=stream,
    )
    return finish(outputs, info, SVDResult._make if compute_uv else None)


def _hermitian_svd(a, compute_uv, errors, return_info, stream):
    """NumPy's ``svd(hermitian=True)``: from the eigen-decomposition, singular values the
    eigenvalues' magnitudes in descending order, ``Vh`` the eigenvectors signed by them.

    A matrix whose eigenvalues are not finite (an inf or NaN in the triangle read) is a
    failure of the SVD, as NumPy raises for it; the SVD's policy applies.
    """
    op = MODES[compute_uv, compute_uv]
    policy = policy_of(op, errors, return_info)
    a, wrap = _unwrapped(a)
    # Dask stays lazy: eigh's own policy applies, block by block (NaN is no failure there).
    lazy = array_api_compat.is_dask_array(a)
    keywords = {"errors": errors if lazy else "ignore", "return_info": return_info or not lazy}
    found = (eigh if compute_uv else eigvalsh)(a, stream=stream, **keywords)
    found, info = found if keywords["return_info"] else (found, None)
    if compute_uv:
        w, v = found
        xp = namespace(w)
        order = xp.flip(xp.argsort(xp.abs(w), axis=-1), axis=-1)
        w = xp.take_along_axis(w, order, axis=-1)
        u = xp.take_along_axis(v, order[..., None, :], axis=-1)
        vh = _swap(u * xp.copysign(xp.ones_like(w), w)[..., None, :]).conj()  # sign(0) is 1
        outputs = [u, xp.abs(w), vh]
    else:
        w, xp = found, namespace(found)
        outputs = [xp.flip(xp.sort(xp.abs(w), axis=-1), axis=-1)]
    if not lazy:
        failed = (info != 0) | ~xp.all(xp.isfinite(w), axis=-1)
        info = xp.astype(failed, xp.int32)
        outputs = apply_policy(op, outputs, info, policy, tuple(info.shape), xp)
    if compute_uv:
        result = SVDResult(wrap(outputs[0]), outputs[1], wrap(outputs[2]))
    else:
        result = outputs[0]
    return (result, info) if return_info else result


def svdvals(x, /, *, errors=None, return_info=False, stream=None):
    """Singular values of every matrix of a stack, in descending order (the Array API's
    ``svdvals``: ``svd(x, compute_uv=False)``).

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> blocksolve.svdvals(np.diag([1.0, 3.0, 2.0]))
    array([3., 2., 1.])
    """
    return svd(x, compute_uv=False, errors=errors, return_info=return_info, stream=stream)


def pinv(a, rcond=None, hermitian=False, *, rtol=_NO_VALUE, errors=None, stream=None):
    """Moore-Penrose pseudo-inverse of every matrix of a stack, from its SVD.

    Parameters
    ----------
    a : (..., M, N) array_like
    rcond : (...) array_like of float, optional
        Singular values at or below ``rcond`` times the largest are taken as zero.
        Default: ``1e-15`` when ``rtol`` is not given either (NumPy 2's default).
    hermitian : bool, default False
        ``a`` is Hermitian (see :func:`svd`).
    rtol : (...) array_like of float or None, optional
        As ``rcond`` (the Array API's name); ``None`` means ``max(M, N)`` times
        the machine precision.  Not both.
    errors, stream
        As for :func:`svd`, whose policy applies.

    Returns
    -------
    (..., N, M) ndarray

    See Also
    --------
    numpy.linalg.pinv : The reference semantics.

    Notes
    -----
    Single-precision input is decomposed in double precision, and the rest
    computed in single, as NumPy does: a single-precision SVD leaves the zero
    singular values of a rank-deficient matrix near ``eps * S[0]``, far above the
    default cut-off, and would invert them.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> a = np.random.default_rng(6).standard_normal((500, 5, 3))
    >>> np.allclose(blocksolve.pinv(a) @ a, np.eye(3))
    True
    """
    if rcond is None:
        if rtol is _NO_VALUE:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(np.shape(a)[-2:]) * _eps(a)
        else:
            rcond = rtol
    elif rtol is not _NO_VALUE:
        raise ValueError("pinv: `rtol` and `rcond` can't be both set.")
    a, wrap = _unwrapped(np.asarray(a) if isinstance(a, (list, tuple)) else a)
    shape = np.shape(a)
    if 0 in shape[-2:]:  # as NumPy: nothing to decompose, an empty result of a's dtype
        empty = namespace(a).empty((*shape[:-2], shape[-1], shape[-2]), dtype=a.dtype)
        return wrap(empty)
    single = _single_precision(a)
    if single is not None:
        a = _astype(a, _DOUBLE[single])
    u, s, vh = svd(_conj(a), full_matrices=False, hermitian=hermitian, errors=errors, stream=stream)
    if single is not None:  # and the rest in single precision, as NumPy's
        u, s, vh = _astype(u, single), _astype(s, np.finfo(single).dtype), _astype(vh, single)
    xp = namespace(s)
    large = s > xp.asarray(rcond)[..., None] * _max_or_zero(xp, s)
    inverse = xp.where(large, 1 / xp.where(large, s, 1), 0)
    return wrap(_swap(vh) @ (inverse[..., None] * _swap(u)))


# NumPy computes the SVD of single-precision input in double precision.
_DOUBLE = {
    np.dtype(np.float32): np.dtype(np.float64),
    np.dtype(np.complex64): np.dtype(np.complex128),
}


def _single_precision(a):
    """``a``'s dtype if it is float32 or complex64, else None."""
    dtype = numpy_dtype(a)
    return dtype if dtype in _DOUBLE else None


def _astype(x, dtype):
    """``x`` cast to the NumPy ``dtype``, in ``x``'s own namespace (and its dtype object)."""
    xp = namespace(x)
    return xp.astype(x, getattr(xp, np.dtype(dtype).name))


def _max_or_zero(xp, s):
    """``max(s, axis=-1, keepdims=True)``, 0 where the last axis is empty."""
    if s.shape[-1] == 0:
        return xp.zeros((*s.shape[:-1], 1), dtype=s.dtype)
    return xp.max(s, axis=-1, keepdims=True)


def _conj(a):
    """``a`` conjugated (NumPy's pinv takes the SVD of the conjugate)."""
    a = np.asarray(a) if isinstance(a, (list, tuple)) else a
    return a.conj() if hasattr(a, "conj") else namespace(a).conj(a)


def _eps(a):
    """Machine precision of ``a``'s dtype as the SVD computes it (float64 for integers)."""
    dtype = numpy_dtype(a)
    return float(np.finfo(dtype if dtype.kind in "fc" else np.float64).eps)


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None, errors=None, stream=None):
    """Rank of every matrix of a stack: the number of singular values above a tolerance.

    Parameters
    ----------
    A : (..., M, N) array_like
        A stack of matrices (a 0-D or 1-D array counts as rank 1 unless all zero).
    tol : (...) array_like of float, optional
        Singular values at or below it count as zero.  Default: ``rtol`` times the
        largest singular value.
    hermitian : bool, default False
        ``A`` is Hermitian (see :func:`svd`).
    rtol : (...) array_like of float, optional
        Relative tolerance; default ``max(M, N)`` times the machine precision.  Not
        both ``tol`` and ``rtol``.
    errors, stream
        As for :func:`svd`, whose policy applies.

    Returns
    -------
    (...) array of int

    See Also
    --------
    numpy.linalg.matrix_rank : The reference semantics.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> a = np.random.default_rng(8).standard_normal((4, 5, 3))
    >>> a[1, :, 2] = a[1, :, 0] + a[1, :, 1]
    >>> blocksolve.matrix_rank(a)
    array([3, 2, 3, 3])
    """
    if rtol is not None and tol is not None:
        raise ValueError("matrix_rank: `tol` and `rtol` can't be both set.")
    if np.ndim(A) < 2:
        return int(not np.all(np.asarray(A) == 0))
    S = svd(A, compute_uv=False, hermitian=hermitian, errors=errors, stream=stream)
    xp = namespace(S)
    if tol is None:
        if rtol is None:
            rtol = max(np.shape(A)[-2:]) * float(np.finfo(numpy_dtype(S)).eps)
        else:
            rtol = xp.asarray(rtol)[..., None]
        tol = _max_or_zero(xp, S) * rtol
    else:
        tol = xp.asarray(tol)[..., None]
    return xp.count_nonzero(S > tol, axis=-1)


_SIDES = {"right": "right", "left": "left"}


def polar(a, side="right", *, errors=None, stream=None):
    """Polar decomposition of every matrix of a stack: ``a = u p`` (``side='right'``) or
    ``a = p u`` (``'left'``), ``u`` with orthonormal columns (or rows), ``p`` Hermitian
    positive semi-definite.

    Parameters
    ----------
    a : (..., M, N) array_like
    side : {'right', 'left'}, default 'right'
    errors, stream
        As for :func:`svd`, whose policy applies.

    Returns
    -------
    u : (..., M, N) ndarray
    p : (..., N, N) ndarray for ``'right'``, (..., M, M) for ``'left'``

    See Also
    --------
    scipy.linalg.polar : The reference semantics (from the SVD, as here).

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> F = np.eye(3) + 0.1 * np.random.default_rng(9).standard_normal((1000, 3, 3))
    >>> R, U = blocksolve.polar(F)          # deformation gradients: rotation and stretch
    >>> np.allclose(R @ U, F), np.allclose(R.mT @ R, np.eye(3))
    (True, True)
    """
    side = choice("polar", "side", side, _SIDES)
    if isinstance(a, (list, tuple)) or is_ndarray_subclass(a):  # SciPy's: base-class results
        a = np.asarray(a)
    if isinstance(getattr(a, "dtype", None), np.dtype):  # SciPy's dtype rule, not NumPy's
        dtype = compute_dtype("polar", {"a": a}, "scipy")
        if a.dtype != dtype:
            a = a.astype(dtype)
    w, s, vh = svd(a, full_matrices=False, errors=errors, stream=stream)
    u = w @ vh
    if side == "right":
        p = (_swap(vh).conj() * s[..., None, :]) @ vh
    else:
        p = (w * s[..., None, :]) @ _swap(w).conj()
    return u, p


@array_api("svd")
def _standard_svd(x, /, *, full_matrices=True):
    """Singular value decomposition ``(U, S, Vh)`` of each matrix of ``x``
    (see :func:`blocksolve.svd`)."""
    return svd(x, full_matrices=full_matrices)


@array_api("svdvals")
def _standard_svdvals(x, /):
    """Singular values of each matrix of ``x``, in descending order
    (see :func:`blocksolve.svdvals`)."""
    return svdvals(x)


@array_api("pinv")
def _standard_pinv(x, /, *, rtol=None):
    """Pseudo-inverse of each matrix of ``x``; singular values at or below ``rtol`` times
    the largest count as zero (default ``max(M, N)`` times the machine precision; see
    :func:`blocksolve.pinv`)."""
    return pinv(x, rtol=rtol)


@array_api("matrix_rank")
def _standard_matrix_rank(x, /, *, rtol=None):
    """Rank of each matrix of ``x`` (see :func:`blocksolve.matrix_rank`)."""
    return matrix_rank(x, rtol=rtol)
