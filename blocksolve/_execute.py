"""The one path every public function takes.

normalise -> call pattern -> backend kernel (cached) -> reshape -> error
policy -> give back in the caller's array type.
"""

from __future__ import annotations

import numpy as np

from . import _dask
from ._backends import select
from ._errors import raise_or_warn, resolve_policy
from ._normalize import bind, compute_dtype, output_shape, to_native
from ._pattern import CallPattern, layout_of

__all__ = ["execute"]


def _output_dtype(output, dtype):
    if output.dtype == "int32":
        return np.dtype(np.int32)
    if output.dtype == "real":
        return np.finfo(dtype).dtype
    return dtype


def _cast_inputs(op, function, arrays, dtype):
    cast = {}
    for spec in op.inputs:
        x = arrays[spec.name]
        if spec.kind == "index":
            if np.dtype(x.dtype).kind not in "iu":
                raise TypeError(f"{function}: {spec.name} must be an integer array; "
                                f"got dtype {x.dtype}")
            # Row indices into the operand's own last dimension; kernels trust them.
            if x.ndim and x.size and (int(x.min()) < 0 or int(x.max()) >= x.shape[-1]):
                raise ValueError(f"{function}: {spec.name} must hold indices in "
                                 f"[0, {x.shape[-1]}); got values from {int(x.min())} "
                                 f"to {int(x.max())}")
            cast[spec.name] = x.astype(np.int32, copy=False)
        else:
            cast[spec.name] = x.astype(dtype, copy=False)
    return cast


def _check_finite(op, function, arrays, xp):
    for spec in op.inputs:
        if spec.kind == "inexact" and not bool(xp.isfinite(arrays[spec.name]).all()):
            raise ValueError(f"{function}: array must not contain infs or NaNs "
                             f"(argument {spec.name!r})")


def _fill_nan(op, outputs, info, batch_shape, xp):
    failed = info != 0
    filled = []
    for spec, out in zip(op.outputs, outputs):
        if spec.nan_on_failure and out.size:
            mask = failed.reshape(batch_shape + (1,) * (out.ndim - len(batch_shape)))
            out = xp.where(mask, xp.asarray(np.nan, dtype=out.dtype), out)
        filled.append(out)
    return filled


def execute(op, function, args, options, *, errors=None, return_info=False,
            check_finite=False, runtime=None):
    """Run ``op`` on the array arguments ``args``.

    Parameters
    ----------
    op : blocksolve._ops.Op
    function : str
        Public name, for messages.
    args : dict of str to array_like
        Array arguments by operand name.
    options : dict
        Kernel-shaping options (part of the call pattern).
    errors : str or None
        Per-call failure policy.
    return_info : bool
        Append the per-matrix ``info`` array and skip the policy.
    check_finite : bool
        SciPy's input check (synchronises on a GPU).
    runtime : dict, optional
        Scalar arguments passed to the kernel at run time (not part of the
        call pattern, so changing them never recompiles).

    Returns
    -------
    outputs : list of array
        In the caller's array type, shaped ``batch + core``.
    info : array or None
        When ``return_info``.
    """
    if options.keys() != set(op.options):  # the op table is the contract with the backends
        raise TypeError(f"{function}: internal error: options {sorted(options)} do not match "
                        f"the declared {op.options}")
    if _dask.holds_dask(args):  # a lazy graph: one ordinary call per block (see _dask.py)
        return _dask.execute_lazily(op, function, args, options, errors=errors,
                                    return_info=return_info, check_finite=check_finite,
                                    runtime=runtime)
    policy = None if return_info else resolve_policy(errors, op.default_policy, function)
    native, arrays = to_native(function, args)
    xp = native.xp
    dtype = compute_dtype(function, {s.name: arrays[s.name] for s in op.inputs
                                     if s.kind == "inexact"})
    arrays = _cast_inputs(op, function, arrays, dtype)
    if check_finite:
        _check_finite(op, function, arrays, xp)
    bound = bind(op, function, arrays, xp)
    backend, to_backend, from_backend = select(native)

    if bound.batch_size == 0:
        outputs = [xp.empty(output_shape(o, bound), _output_dtype(o, dtype)) for o in op.outputs]
        info = xp.zeros(bound.batch_shape, np.int32)
    else:
        operands = tuple(to_backend(x) for x in bound.operands)
        pattern = CallPattern.make(op.routine, bound.dims, dtype, options,
                                   [layout_of(x) for x in operands], backend.target)
        *outputs, info = backend.execute(pattern, operands, **(runtime or {}))
        outputs = [from_backend(o).reshape(output_shape(spec, bound))
                   for spec, o in zip(op.outputs, outputs)]
        info = from_backend(info).reshape(bound.batch_shape)

    if policy == "nan":
        outputs = _fill_nan(op, outputs, info, bound.batch_shape, xp)
    elif policy in ("raise", "warn"):
        info_host = info if xp is np else xp.asnumpy(info)
        if info_host.any():
            raise_or_warn(policy, info_host, bound.batch_shape, function, op.describe_failure)

    if xp is np and native.wrap is None:  # NumPy gufunc convention: 0-d results are scalars
        outputs = [o[()] if o.ndim == 0 else o for o in outputs]
    outputs = [native.give_back(o) for o in outputs]
    return outputs, (native.give_back(info) if return_info else None)
