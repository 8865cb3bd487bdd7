"""QR decomposition: ``qr`` (``geqrf``), in NumPy's four modes."""

from __future__ import annotations

from collections import namedtuple
from types import MappingProxyType

from .. import _flops as flops
from .. import cpu, cuda
from .._execute import execute
from .._op import Example, Failure, Op, Operand, Output, declare
from .._options import choice
from ..cpu.kernels import qr as on_cpu
from ..cuda.kernels import qr as on_gpu
from ._public import array_api, finish, public

__all__ = ["qr", "QRResult"]

QRResult = namedtuple("QRResult", ["Q", "R"])
QRResult.__doc__ = "Result of :func:`qr` in modes 'reduced' and 'complete' (like NumPy's)."


def _min_mn(dims):
    return min(dims["m"], dims["n"])


def _qr(mode, outputs, derived=None, example=None):
    """``numpy.linalg.qr`` in one ``mode``: the same op but for its outputs."""
    return Op(
        "qr",
        "geqrf",
        "numpy.linalg.qr",
        [Operand("a", ("m", "n"))],
        outputs,
        Failure("QR never fails (info {k})", None, "QR never fails"),
        derived=derived or {},
        options=("mode",),
        variant=(("mode", mode),),
        wrap_from="a",
        nonfinite="Non-finite ``Q`` and ``R`` (``R`` still exactly upper triangular); never a "
        "failure.",
        example=example,
        label=f"qr(mode='{mode}')",
    )


MODES = MappingProxyType(
    {
        "reduced": _qr(
            "reduced",
            [Output("Q", ("m", "p")), Output("R", ("p", "n"))],
            {"p": _min_mn},
            Example(("rect",), flops=flops.qr),
        ),
        "complete": _qr("complete", [Output("Q", ("m", "m")), Output("R", ("m", "n"))]),
        "r": _qr("r", [Output("R", ("p", "n"))], {"p": _min_mn}),
        "raw": _qr(
            "raw", [Output("h", ("n", "m")), Output("tau", ("p",), wrapped=False)], {"p": _min_mn}
        ),
    }
)
declare(*MODES.values())

cpu.register(
    "geqrf",
    on_cpu.geqrf,
    None,
    numpy=on_cpu.geqrf_numpy,
    lapack_from=48,
    kernel_from_batch=((16, 8), (24, 12), (32, 48)),
    whole_batch_from=96,
    deciding=("m", "n"),
)
cuda.register("geqrf", on_gpu.geqrf_descriptors, on_gpu.make_geqrf_kernel, on_gpu.geqrf_empty)

_RESULTS = {"reduced": QRResult._make, "complete": QRResult._make, "r": None, "raw": tuple}


@public(*MODES.values())
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
    op = choice("qr", "mode", mode, MODES)
    outputs, info = execute(
        op, {"a": a}, {"mode": mode}, errors=errors, return_info=return_info, stream=stream
    )
    return finish(outputs, info, _RESULTS[mode])


_STANDARD_MODES = ("reduced", "complete")


@array_api("qr")
def _standard_qr(x, /, *, mode="reduced"):
    """QR decomposition of each matrix of ``x``; ``mode`` is ``'reduced'`` or
    ``'complete'`` (see :func:`blocksolve.qr`)."""
    if mode not in _STANDARD_MODES:
        raise ValueError(
            f"qr: mode must be 'reduced' or 'complete' (the Array API's modes); got {mode!r}"
        )
    return qr(x, mode=mode)
