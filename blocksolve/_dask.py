"""Dask arrays in, Dask arrays out: the adapter between the public functions and the executor.

A call with a Dask array among its operands never computes anything.  It
returns Dask arrays whose every block is one ordinary blocksolve call —
:func:`blocksolve._execute.execute` on that block's NumPy or CuPy chunks — so
the backends below never see Dask, and each block runs where its chunks are
(the CPU kernels for NumPy chunks, the GPU kernels for CuPy chunks).  Built
from the op's declaration (:mod:`blocksolve._op`) alone, so every op has it.

At graph construction, from shapes, dtypes and ``meta`` only:

* the same checks and messages as an eager call (dtypes, core dimensions,
  batch broadcasting, host/GPU mixing);
* core dimensions split into several chunks are merged into one (a rechunk
  that moves data, named in a :class:`dask.array.PerformanceWarning`);
* NumPy/CuPy operands become one-chunk Dask arrays and broadcast against the
  Dask ones along the batch dimensions (``blockwise`` aligns the chunks);
* outputs get the declared shapes and dtypes and a ``meta`` of the chunks'
  array type.

At compute time each block applies the failure policy with *global* batch
indices: every block also receives its position in the batch (one
``arange`` block per batch dimension), so ``'raise'`` raises
:class:`~blocksolve.LinAlgError` naming the failing matrices by their index
in the whole stack, and ``'warn'`` warns likewise (forwarded to the client
by ``distributed.warn`` when the block runs on a worker).  Each block
reports its own failures, so outputs stream block by block; ``'nan'`` and
``'ignore'`` need no check at all, and ``return_info=True`` returns the
per-matrix ``info`` as one more lazy array, aligned with the batch.

Importing blocksolve never imports Dask: :func:`holds_dask` compares types
only when ``dask.array`` is already in ``sys.modules``.
"""

from __future__ import annotations

import contextlib
import math
import sys
import warnings
from dataclasses import dataclass

import numpy as np

from . import _backends, _execute
from ._errors import (
    LinAlgError,
    LinAlgWarning,
    failure_report,
    ill_conditioned_report,
    resolve_policy,
    user_stacklevel,
)
from ._normalize import bind_shapes, compute_dtype, output_shape, to_native
from ._op import all_ops

__all__ = ["holds_dask", "execute_lazily"]


def holds_dask(args):
    """True if one of the array arguments ``args`` (a dict) is a Dask array."""
    dask_array = sys.modules.get("dask.array")
    array_type = getattr(dask_array, "Array", None)
    return array_type is not None and any(isinstance(x, array_type) for x in args.values())


@dataclass(frozen=True)
class BlockCall:
    """One block of a lazy call: an ordinary blocksolve call plus the policy.

    Everything here is plain data (the op is referred to by its position in
    :func:`blocksolve._op.all_ops`), so the task pickles small and a worker
    process compiles or loads its kernels from its own disk cache.

    Attributes
    ----------
    op_index : int
        Position of the op in ``all_ops()``.
    function : str
        Public name, for messages.
    names : tuple of str
        Operand names, in the order their blocks are passed; one ``arange``
        block per batch dimension follows them.
    options, runtime : tuple of (str, object)
        Kernel options and run-time scalars, as sorted items.
    policy : {'raise', 'warn', 'nan', 'ignore'} or None
        ``None`` returns ``info`` as the last element instead.
    check_finite : bool
    device : {'cpu', 'cuda'} or None
        A :func:`~blocksolve.use_device` in force when the graph was built.
    batch_shape : tuple of int
        The whole call's batch shape, for messages.
    single : bool
        Return the one result array itself instead of a tuple.
    """

    op_index: int
    function: str
    names: tuple
    options: tuple
    runtime: tuple
    policy: str | None
    check_finite: bool
    device: str | None
    batch_shape: tuple
    single: bool = False

    def __call__(self, *blocks):
        arrays = {name: _only_block(block) for name, block in zip(self.names, blocks)}
        offset = tuple(int(r[0]) if r.size else 0 for r in blocks[len(self.names) :])
        op = all_ops()[self.op_index]
        checked = self.policy in ("raise", "warn")
        keep_info = checked or self.policy is None
        device = (
            _backends.use_device(self.device)
            if self.device is not None
            else contextlib.nullcontext()
        )
        with device:
            outputs, info = _execute.execute(
                op,
                arrays,
                dict(self.options),
                errors=None if keep_info else self.policy,
                return_info=keep_info,
                check_finite=self.check_finite,
                runtime=dict(self.runtime) or None,
            )
        warning = None
        if checked and op.condition_warning:  # matrices singular to working precision?
            info_host = _execute.failed_info(info)
            if info_host is not None:
                warning, info = ill_conditioned_report(
                    info_host, arrays["a"].shape[-1], info_host.shape, self.function, offset
                )
        if checked:
            self._apply_policy(info, offset, op.describe_failure)
        if warning:
            self._warn(warning)
        results = (*outputs, info) if self.policy is None else tuple(outputs)
        return results[0] if self.single else results

    def _apply_policy(self, info, offset, describe):
        info_host = _execute.failed_info(info)
        if info_host is None:
            return
        message, indices = failure_report(
            info_host, info_host.shape, self.function, describe, offset=offset
        )
        block = tuple(slice(o, o + n) for o, n in zip(offset, info_host.shape))
        if self.batch_shape:
            message += (
                f" [Dask block {_block_text(block)} of batch shape "
                f"{self.batch_shape}; other blocks report their own failures]"
            )
        if self.policy == "raise":
            raise LinAlgError(message, indices, info_host, block)
        self._warn(message)

    def _warn(self, message):
        # On a distributed worker, also show the warning in the client's session.
        warn = getattr(sys.modules.get("distributed"), "warn", warnings.warn)
        warn(message, LinAlgWarning)


def _only_block(block):
    # Core dimensions are not in the output's index, so blockwise hands over the
    # operand's blocks along them as nested lists; there is exactly one of each
    # (``concatenate=True`` would copy it).
    while isinstance(block, list):
        (block,) = block
    return block


def _block_text(block):
    return "[" + ", ".join(f"{s.start}:{s.stop}" for s in block) + "]"


def _pick(result, i):
    return result[i]


def _op_index(op):
    for i, declared in enumerate(all_ops()):
        if declared is op:
            return i
    raise TypeError(f"internal error: {op.name} is not declared in blocksolve._ops")


def _single_chunk_core(function, name, x, core_ndim):
    """``x`` with its last ``core_ndim`` axes in one chunk each (warn if that moves data)."""
    split = [axis for axis in range(x.ndim - core_ndim, x.ndim) if len(x.chunks[axis]) > 1]
    if not split:
        return x
    from dask.array import PerformanceWarning

    core = slice(x.ndim - core_ndim, x.ndim)
    warnings.warn(
        f"{function}: {name} is split into several chunks along its core (matrix) dimensions "
        f"(shape {x.shape[core]}, chunks {x.chunks[core]}); each block needs whole matrices, so "
        f"blocksolve rechunks {name} to one chunk there, which moves data. Chunk along the "
        f"batch dimensions only to avoid this.",
        PerformanceWarning,
        stacklevel=user_stacklevel(),
    )
    return x.rechunk({axis: -1 for axis in split})


def execute_lazily(
    op, args, options, *, errors=None, return_info=False, check_finite=False, runtime=None
):
    """:func:`blocksolve._execute.execute` for arguments that include Dask arrays.

    Same parameters and the same ``(outputs, info)`` contract, with Dask
    arrays for the outputs and for ``info`` (when ``return_info``).
    Nothing is computed.
    """
    import dask.array as da
    from dask.array.utils import meta_from_array
    from dask.base import tokenize

    function = op.name
    policy = resolve_policy(errors, op.default_policy, function)  # errors= checked anyway
    if return_info:
        policy = None
    lazy, operands, dtype, bound = _check(op, function, args, da.Array)
    batch_ind = tuple(f"batch{d}" for d in range(len(bound.batch_shape)))
    arginds, aligned = _block_arguments(op, function, lazy, operands, bound, batch_ind)

    # What the caller gets: the declared outputs, then info when asked for.
    results = [
        (spec.name, output_shape(spec, bound), _execute._output_dtype(spec, dtype))
        for spec in op.outputs
    ]
    if return_info:
        results.append(("info", bound.batch_shape, np.dtype(np.int32)))
    call = BlockCall(
        op_index=_op_index(op),
        function=function,
        names=tuple(s.name for s in op.inputs),
        options=tuple(sorted(options.items())),
        runtime=tuple(sorted((runtime or {}).items())),
        policy=policy,
        check_finite=bool(check_finite),
        device=_backends.forced_device(),
        batch_shape=bound.batch_shape,
        single=len(results) == 1,
    )
    token = tokenize(call, *aligned)

    likes = _result_likes(op, operands, lazy, return_info)

    def lazy_result(name, shape, result_dtype, like, func, *args, **kwargs):
        core_ind = tuple(f"out.{name}.{axis}" for axis in range(len(shape) - len(batch_ind)))
        return da.blockwise(
            func,
            batch_ind + core_ind,
            *args,
            new_axes=dict(zip(core_ind, shape[len(batch_ind) :])),
            name=f"blocksolve-{function}-{name}-{token}",
            meta=meta_from_array(like, len(shape), result_dtype),
            **kwargs,
        )

    if call.single:  # one task per block
        arrays = [lazy_result(*results[0], likes[0], call, *arginds, concatenate=False)]
    else:  # one task per block computes a tuple; each result picks its part
        blocks = da.blockwise(
            call,
            batch_ind,
            *arginds,
            name=f"blocksolve-{function}-{token}",
            concatenate=False,
            meta=np.empty((0,) * len(batch_ind), object),
        )
        arrays = [
            lazy_result(*result, like, _pick, blocks, batch_ind, i=i)
            for i, (result, like) in enumerate(zip(results, likes))
        ]
    return arrays[: len(op.outputs)], (arrays[-1] if return_info else None)


def _result_likes(op, operands, lazy, return_info):
    """An array of each result's type, for its ``meta``: what the blocks, eager calls on
    the chunks, return.  That is the chunks' array type (NumPy, CuPy; ``use_device``
    moves results back), except for the outputs an eager call wraps
    (:func:`blocksolve._execute._subclass_wrap`) when the argument it takes them from
    is an ndarray subclass or a Dask array of one."""
    plain = next(iter(lazy.values()))._meta
    if _execute.is_ndarray_subclass(plain):
        plain = np.empty((0,) * plain.ndim, plain.dtype)
    source = lazy[op.wrap_from]._meta if op.wrap_from in lazy else operands.get(op.wrap_from)
    wrapped = source if _execute.is_ndarray_subclass(source) else plain
    likes = [wrapped if spec.wrapped else plain for spec in op.outputs] + [plain] * return_info
    return [
        like.real if like.dtype.kind == "c" else like  # no ComplexWarning from astype
        for like in likes
    ]


def _check(op, function, args, dask_array):
    """The eager call's checks and binding, from shapes, dtypes and ``meta`` only.

    NumPy/CuPy ``meta`` stand in for the Dask operands where the array type
    matters (host/GPU mixing), zero-stride arrays of the full shapes where the
    shapes do (:func:`~blocksolve._normalize.bind`), so the messages are the
    eager call's and nothing is allocated or computed.

    Returns
    -------
    lazy : dict
        The Dask operands by name.
    operands : dict
        Every operand: Dask arrays, the others as NumPy/CuPy arrays (an ndarray
        subclass as given).
    dtype : numpy.dtype
        The computation dtype.
    bound : blocksolve._normalize.Binding
        Batch shape and core dimensions.
    """
    lazy = {name: x for name, x in args.items() if isinstance(x, dask_array)}
    for name, x in lazy.items():
        if any(math.isnan(size) for size in x.shape):
            raise ValueError(
                f"{function}: {name} has unknown chunk sizes (shape {x.shape}); "
                f"call {name}.compute_chunk_sizes() first"
            )
    _, converted = to_native(
        function, {name: lazy[name]._meta if name in lazy else x for name, x in args.items()}
    )
    # A NumPy subclass (a masked array, say) goes into the graph as it is, so that its
    # blocks reach the eager call, which wraps the results, as the caller gave them.
    operands = {
        name: lazy.get(name, args[name] if _execute.is_ndarray_subclass(args[name]) else x)
        for name, x in converted.items()
    }
    dtype = compute_dtype(
        function,
        {spec.name: operands[spec.name] for spec in op.inputs if spec.kind == "inexact"},
        op.reference,
    )
    # One entry (0, a valid index) where the operand has any: an empty pivot
    # array may have any dtype, a non-empty one must be integer.
    _execute._cast_inputs(
        op,
        function,
        {name: np.zeros(min(math.prod(x.shape), 1), x.dtype) for name, x in operands.items()},
        dtype,
    )
    shapes = {spec.name: tuple(operands[spec.name].shape) for spec in op.inputs}
    return lazy, operands, dtype, bind_shapes(op, function, shapes)


def _block_arguments(op, function, lazy, operands, bound, batch_ind):
    """``blockwise`` arguments: every operand with its index, then the block positions.

    Batch dimensions share the indices ``batch_ind`` (right-aligned, as in
    broadcasting); each operand's core dimensions get indices of their own,
    in one chunk.  NumPy/CuPy operands become one-chunk Dask arrays, and the
    chunks are unified along the batch.  One ``arange`` per batch dimension,
    chunked like it, tells each block where it starts.

    Returns
    -------
    arginds : list
        ``[array, index, array, index, ...]`` for ``blockwise``.
    aligned : list of dask.array.Array
        The operands after rechunking.
    """
    import dask.array as da
    from dask.array.core import unify_chunks

    batch_ndim = len(batch_ind)
    arginds = []
    for spec in op.inputs:
        x = operands[spec.name]
        core_ndim = len(spec.core) - int(bound.vector and spec.vector_ok)
        if spec.name in lazy:
            x = _single_chunk_core(function, spec.name, x, core_ndim)
        else:
            x = da.from_array(x, chunks=x.shape)
        ind = batch_ind[batch_ndim - (x.ndim - core_ndim) :] + tuple(
            f"in.{spec.name}.{axis}" for axis in range(core_ndim)
        )
        arginds += [x, ind]
    chunks, aligned = unify_chunks(*arginds)
    arginds[::2] = aligned
    for d, index in enumerate(batch_ind):
        arginds += [
            da.arange(bound.batch_shape[d], chunks=(chunks[index],), dtype=np.int64),
            (index,),
        ]
    return arginds, aligned


_execute.register_lazy(holds_dask, execute_lazily)
