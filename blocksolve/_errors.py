"""Per-matrix failures: the exception, the warning, and the error policy.

Every blocksolve call computes one integer ``info`` per matrix: ``0`` is
success, anything else a failure whose meaning the op table declares
(:class:`blocksolve._ops.Failure`) -- for the factorisations and solves the
1-based column at which the matrix failed (leading minor not positive
definite, exactly zero pivot or diagonal entry), for ``eigh`` the number of
off-diagonal elements that did not converge, for ``lstsq`` 1 for a matrix
holding an inf or NaN.  One code is no failure: ``n + 1`` from ``solve`` with a named
structure marks a matrix singular to working precision, whose results stand, and warns
(:attr:`blocksolve._op.Op.condition_warning`).  What happens next is the *policy*:

``'raise'``
    raise :class:`LinAlgError` naming every failing batch position
    (synchronises with the device).
``'warn'``
    emit :class:`LinAlgWarning` with the same text and return the results
    (synchronises with the device).
``'nan'``
    fill the outputs of the failing matrices with NaN; no synchronisation.
``'ignore'``
    return what the kernel produced; no synchronisation.

The policy is chosen per call (``errors=``), per scope (:func:`errstate`), or
falls back to the reference library's own behaviour for that function.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import warnings

import numpy as np

from ._options import choice

__all__ = ["LinAlgError", "LinAlgWarning", "CacheWarning", "errstate", "geterrors", "POLICIES"]

POLICIES = ("raise", "warn", "nan", "ignore")

scoped_policy: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "blocksolve_errors", default=None
)


class LinAlgError(np.linalg.LinAlgError):
    """A matrix of the batch could not be factored or solved.

    Subclass of :class:`numpy.linalg.LinAlgError`, so existing ``except``
    clauses keep working.

    Attributes
    ----------
    indices : list of tuple of int
        Batch multi-index of every failing matrix (``()`` for an unbatched
        call).
    info : numpy.ndarray or None
        The per-matrix status array the message was built from: the whole
        batch's, or under Dask the failing block's (see ``block``).
    block : tuple of slice or None
        Under Dask, where the failing block lies in the batch (``indices``
        are positions in the whole batch, ``info`` is the block's: the status
        of ``indices[0]`` is ``info[tuple(i - s.start for i, s in zip(indices[0],
        block))]``); ``None`` when ``info`` covers the whole batch.
    """

    def __init__(self, message, indices=(), info=None, block=None):
        super().__init__(message)
        self.indices = list(indices)
        self.info = info
        self.block = block

    def __reduce__(self):
        # Keep the attributes when pickled (a Dask worker raising it).
        return type(self), (str(self), self.indices, self.info, self.block)


class LinAlgWarning(RuntimeWarning):
    """Issued instead of :class:`LinAlgError` under the ``'warn'`` policy."""


class CacheWarning(RuntimeWarning):
    """The kernel disk cache could not be read or written: the kernel was compiled in
    memory instead and the call went on (once per process and kind)."""


# Tracebacks and reprs name the public location.
LinAlgError.__module__ = LinAlgWarning.__module__ = CacheWarning.__module__ = "blocksolve"


def _check_policy(policy, where):
    return choice(where, "errors", policy, {p: p for p in POLICIES})


# The tokens of the errstate blocks entered in this context, innermost last: one errstate
# object may be entered again, nested, or from several threads at once (as a decorator).
_entered_tokens: contextvars.ContextVar[tuple] = contextvars.ContextVar(
    "blocksolve_errstate_tokens", default=()
)


class errstate(contextlib.ContextDecorator):
    """Set the failure policy for every blocksolve call in a ``with`` block.

    Parameters
    ----------
    errors : {'raise', 'warn', 'nan', 'ignore'}
        Policy for matrices that fail (see the module documentation).  A
        per-call ``errors=`` argument still takes precedence.

    Notes
    -----
    Also a decorator.  One object may be used for several ``with`` blocks,
    nested ones included; the policy is per thread and per asyncio task.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> a = np.stack([np.eye(2), -np.eye(2)])
    >>> with blocksolve.errstate("nan"):
    ...     L = blocksolve.cholesky(a)
    >>> bool(np.isnan(L[1]).all()), bool(np.allclose(L[0], np.eye(2)))
    (True, True)
    """

    def __init__(self, errors):
        self.errors = _check_policy(errors, "errstate")

    def __repr__(self):
        return f"blocksolve.errstate({self.errors!r})"

    def __enter__(self):
        token = scoped_policy.set(self.errors)
        _entered_tokens.set((*_entered_tokens.get(), token))
        return self

    def __exit__(self, *exc_info):
        *outer, token = _entered_tokens.get()
        _entered_tokens.set(tuple(outer))
        scoped_policy.reset(token)
        return False


def geterrors():
    """Return the policy set by the innermost :func:`errstate`, or ``None``."""
    return scoped_policy.get()


def resolve_policy(errors, default, where):
    """The policy in force: per call, else per scope, else the op's default."""
    if errors is not None:
        return _check_policy(errors, where)
    return scoped_policy.get() or default


_SHOWN = 5  # batch positions a message lists


def failure_report(info, batch_shape, function, describe, offset=None, nonfinite=None):
    """Build the message and multi-indices for the failing matrices.

    Parameters
    ----------
    info : numpy.ndarray
        Host copy of the per-matrix status, shape ``batch_shape``.
    batch_shape : tuple of int
    function : str
        Public function name, for the message.
    describe : callable
        ``describe(k) -> str`` turns one positive ``info`` code into words.
    offset : tuple of int, optional
        Batch position of ``info[0, ..., 0]`` in a larger batch (a Dask
        block): added to every index, so that message and indices are global.
    nonfinite : callable, optional
        ``nonfinite(flat_index) -> str or None``: the words for a failing
        matrix whose input holds infs or NaNs (they, not ``info``, are then
        the reason given).

    Returns
    -------
    message : str or None
        ``None`` when nothing failed.
    indices : list of tuple of int
    """
    flat = np.flatnonzero(info.reshape(-1))
    if flat.size == 0:
        return None, []
    indices = _positions(flat, batch_shape, offset)
    codes = info.reshape(-1)[flat]

    def reason(position, k):
        return (nonfinite and nonfinite(int(flat[position]))) or describe(int(k))

    if batch_shape == ():
        return f"{function}: {reason(0, codes[0])}", indices
    parts = [f"{idx} ({reason(i, k)})" for i, (idx, k) in enumerate(zip(indices[:_SHOWN], codes))]
    noun = "matrix" if len(indices) == 1 else "matrices"
    message = (
        f"{function}: {len(indices)} {noun} of the batch failed, at batch "
        f"{'index' if len(indices) == 1 else 'indices'} {_listed(parts, len(indices))}"
    )
    return message, indices


def ill_conditioned_report(info, size, batch_shape, function, offset=None):
    """The warning for the matrices whose ``info`` is ``size + 1`` -- singular to working
    precision, results computed (:attr:`blocksolve._op.Op.condition_warning`) -- and
    ``info`` without those codes.

    Returns
    -------
    message : str or None
        ``None`` when no matrix is ill-conditioned (``info`` is then returned as is).
    info : numpy.ndarray
    """
    ill = info == size + 1
    flat = np.flatnonzero(ill.reshape(-1))
    if flat.size == 0:
        return None, info
    what = "reciprocal condition number below the machine epsilon"
    if batch_shape == ():
        message = f"{function}: ill-conditioned matrix ({what}): the result may not be accurate"
    else:
        indices = _positions(flat, batch_shape, offset)
        many = len(indices) > 1
        message = (
            f"{function}: {len(indices)} ill-conditioned {'matrices' if many else 'matrix'} "
            f"({what}) at batch {'indices' if many else 'index'} "
            f"{_listed([str(i) for i in indices[:_SHOWN]], len(indices))}: the results may "
            "not be accurate"
        )
    return message, np.where(ill, 0, info).astype(info.dtype, copy=False)


def _positions(flat, batch_shape, offset):
    """The batch multi-indices of the flat positions ``flat``, shifted by ``offset``."""
    offset = offset or (0,) * len(batch_shape)
    return [
        tuple(int(i) + o for i, o in zip(np.unravel_index(f, batch_shape), offset)) for f in flat
    ]


def _listed(parts, total):
    """The first ``parts`` of ``total`` joined for a message."""
    more = f" and {total - len(parts)} more" if total > len(parts) else ""
    return ", ".join(parts) + more


def raise_or_warn(policy, info_host, batch_shape, function, describe, nonfinite=None):
    """Apply the ``'raise'`` or ``'warn'`` policy given a host ``info`` array."""
    message, indices = failure_report(
        info_host, batch_shape, function, describe, nonfinite=nonfinite
    )
    if message is None:
        return
    if policy == "raise":
        raise LinAlgError(message, indices, info_host)
    warnings.warn(message, LinAlgWarning, stacklevel=user_stacklevel())


def ignore_setting(variable, text, accepted, default):
    """Warn that environment ``variable``'s value ``text`` is not one it takes
    (``accepted``, in words) and return ``default``, which is used instead -- as numba
    treats its own variables."""
    warnings.warn(
        f"${variable} must be {accepted}; got {text!r}, using {default!r}",
        RuntimeWarning,
        stacklevel=user_stacklevel(),
    )
    return default


def user_stacklevel():
    """The ``stacklevel`` with which the caller's ``warnings.warn`` points at the first
    frame outside blocksolve (the user's call, however many of blocksolve's own
    functions -- :mod:`blocksolve.linalg`'s wrappers, say -- lie between)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and _is_blocksolve(frame.f_globals.get("__name__", "")):
        frame, level = frame.f_back, level + 1
    return level


def _is_blocksolve(module):
    return module == "blocksolve" or module.startswith("blocksolve.")
