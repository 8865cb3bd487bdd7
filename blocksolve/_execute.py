"""The one path every public function takes: normalise, plan, run on a backend, apply
the error policy.

A call is split in two.  A :class:`_Plan` holds everything the call's
*signature* decides -- array namespace, computation dtype, core and batch
dimensions, backend, call pattern, output shapes -- and building it raises the
errors that depend only on that.  :meth:`_Plan.call` does what depends on the
values: index-range and finiteness checks, casting, flattening, the backend's
kernel, the error policy, the hand-back.

A plan depends only on the op, the options, the device :func:`use_device` forces
and, per array argument, its type, device, shape, dtype and strides; for NumPy
and CuPy arrays it is kept in the ``plans`` memo keyed on exactly that
(:func:`_signature`), so a call whose signature has been seen goes straight to
:meth:`_Plan.call`.  Lazy arrays (Dask) go to the adapter that registered for
them (:func:`register_lazy`), which calls :func:`execute` once per block.
"""

from __future__ import annotations

import warnings

import numpy as np
from array_api_compat import is_cupy_array

from ._backends import forced_device, identity, select
from ._cache import Memo
from ._errors import (
    LinAlgWarning,
    ill_conditioned_report,
    raise_or_warn,
    resolve_policy,
    scoped_policy,
    user_stacklevel,
)
from ._normalize import (
    bind_shapes,
    compute_dtype,
    gpu_device_of,
    on_stream,
    output_shape,
    stream_handle,
    to_native,
)
from ._op import NONFINITE
from ._pattern import CallPattern, layout_of

__all__ = ["execute", "register_lazy", "apply_policy", "policy_of", "failed_info", "PLANS"]

# Plans of the signatures seen.  Bounded: a program that keeps producing new shapes
# must not grow it without end.
PLANS = Memo("plans", maxsize=4096)

# (holds(args), execute(op, args, options, **keywords)) of each lazy array library
_LAZY = []


def register_lazy(holds, execute_lazily):
    """Send calls whose arguments ``holds(args)`` says are lazy arrays to
    ``execute_lazily`` (same parameters and contract as :func:`execute`)."""
    _LAZY.append((holds, execute_lazily))


def _output_dtype(output, dtype):
    if output.dtype == "int32":
        return np.dtype(np.int32)
    if output.dtype == "real":
        return np.finfo(dtype).dtype
    if output.dtype == "complex":
        return np.result_type(dtype, np.complex64)
    return dtype


def _check_index_dtypes(op, function, arrays):
    for spec in op.inputs:
        x = arrays[spec.name]
        # An empty array (SciPy's own tests pass np.array([])) holds no wrong index.
        if spec.kind == "index" and np.dtype(x.dtype).kind not in "iu" and x.size:
            raise TypeError(
                f"{function}: {spec.name} must be an integer array; got dtype {x.dtype}"
            )


def _kernel_dtypes(op, dtype):
    """Operand name -> the dtype kernels take it in: int32 indices, ``dtype`` otherwise."""
    return {s.name: np.dtype(np.int32) if s.kind == "index" else dtype for s in op.inputs}


def _cast_inputs(op, function, arrays, dtype):
    """Every input as the kernels take it, index operands checked (also used by ``_dask``)."""
    _check_index_dtypes(op, function, arrays)
    for name in _index_names(op):
        _check_index_range(function, name, arrays[name])
    return {
        name: _as_kernel_dtype(arrays[name], target)
        for name, target in _kernel_dtypes(op, dtype).items()
    }


def _as_kernel_dtype(x, dtype):
    # An empty index operand of another dtype casts without a ComplexWarning.
    if x.size == 0 and x.dtype != dtype:
        return x.real.astype(dtype) if x.dtype.kind == "c" else x.astype(dtype)
    return x.astype(dtype, copy=False)


def _index_names(op):
    return tuple(s.name for s in op.inputs if s.kind == "index")


_UNSIGNED = {np.dtype(f"i{size}"): np.dtype(f"u{size}") for size in (1, 2, 4, 8)}


def _check_index_range(function, name, x):
    # Row indices into the operand's own last dimension; kernels trust them.
    if not (x.ndim and x.size):
        return
    # One reduction (on a GPU: one wait): a negative index read as unsigned is larger
    # than any valid one.  The slower two below only find the values for the message.
    unsigned = _UNSIGNED.get(x.dtype)
    if type(x) is np.ndarray and unsigned is not None:
        if np.maximum.reduce(x.view(unsigned), axis=None) < x.shape[-1]:
            return
    elif is_cupy_array(x) and unsigned is not None:
        if int(x.view(unsigned).max()) < x.shape[-1]:
            return
    low, high = x.min(), x.max()
    if low < 0 or high >= x.shape[-1]:
        raise ValueError(
            f"{function}: {name} must hold indices in [0, {x.shape[-1]}); "
            f"got values from {int(low)} to {int(high)}"
        )


def _all_finite(x, xp):
    finite = xp.isfinite(x)
    return bool(np.logical_and.reduce(finite, axis=None) if xp is np else finite.all())


def _check_finite(op, function, arrays, xp):
    for spec in op.inputs:
        if (
            spec.kind == "inexact"
            and spec.finite_checked
            and not _all_finite(arrays[spec.name], xp)
        ):
            raise ValueError(
                f"{function}: array must not contain infs or NaNs (argument {spec.name!r})"
            )


def _nonfinite_reasons(op, arrays, binding, xp):
    """``reason(flat_index)``: words for a failing matrix whose ``nonfinite_cause``
    arguments hold infs or NaNs, else ``None`` (called on the failure path only).

    ``arrays`` are the native arguments, before broadcasting and flattening.
    """
    if not op.nonfinite_cause:
        return None
    specs = {s.name: s for s in op.inputs}

    def matrix(name, flat):
        x = arrays[name]
        core = x.shape[x.ndim - len(specs[name].core) :]
        whole = xp.broadcast_to(x, binding.batch_shape + core)
        return whole[np.unravel_index(flat, binding.batch_shape)] if binding.batch_shape else whole

    def reason(flat):
        bad = [name for name in op.nonfinite_cause if not _all_finite(matrix(name, flat), xp)]
        return f"{' and '.join(bad)} {NONFINITE}" if bad else None

    return reason


def _fill_nan(op, outputs, info, batch_shape, xp):
    failed = info != 0
    filled = []
    for spec, out in zip(op.outputs, outputs):
        if spec.nan_on_failure and out.size:
            mask = failed.reshape(batch_shape + (1,) * (out.ndim - len(batch_shape)))
            out = xp.where(mask, xp.asarray(np.nan, dtype=out.dtype), out)
        filled.append(out)
    return filled


class _Plan:
    """What a call's signature decides; :meth:`call` applies it to the arrays."""

    __slots__ = (
        "op",
        "estimates",
        "function",
        "native",
        "dtype",
        "options",
        "casts",
        "index_names",
        "binding",
        "empty",
        "backend",
        "to_backend",
        "from_backend",
        "host",
        "pattern",
        "runner",
        "one",
        "names",
        "one_reshapes",
        "given_flat",
        "zero_d_arrays",
        "output_shapes",
        "output_dtypes",
        "scalars",
        "wrap",
    )

    def __init__(self, op, native, arrays, options, wrap=None):
        function = self.function = op.name
        self.op, self.native, self.options, self.wrap = op, native, options, wrap
        # Whether the kernels may report matrices singular to working precision: not
        # where the option that asks for the estimate is off (numpy.linalg.solve's calls).
        self.estimates = op.condition_warning and options.get("condition", True)
        dtype = self.dtype = compute_dtype(
            function,
            {s.name: arrays[s.name] for s in op.inputs if s.kind == "inexact"},
            op.reference,
        )
        # (operand name, dtype) of the operands to cast
        self.casts = tuple(
            (name, t) for name, t in _kernel_dtypes(op, dtype).items() if arrays[name].dtype != t
        )
        self.index_names = _index_names(op)
        if self.index_names:  # an empty index array of floats is fine, a full one is not
            _check_index_dtypes(op, function, arrays)
        self.output_dtypes = tuple(_output_dtype(o, dtype) for o in op.outputs)
        # Shape errors before the backend's (no GPU, say).
        self.binding = bind_shapes(
            op, function, {s.name: tuple(arrays[s.name].shape) for s in op.inputs}
        )
        self.output_shapes = tuple(output_shape(o, self.binding) for o in op.outputs)
        self.empty = self.binding.batch_size == 0
        # NumPy gufunc convention: 0-d results are scalars.  (The ranks decide it.)
        self.scalars = (
            native.xp is np
            and native.wrap is None
            and any(len(shape) == 0 for shape in self.output_shapes)
        )
        # 0-d results handed back as arrays (to a DLPack namespace, an ndarray subclass)
        self.zero_d_arrays = not self.scalars and any(not s for s in self.output_shapes)
        self.backend, self.to_backend, self.from_backend = select(native)
        self.host = self.to_backend is identity and self.from_backend is identity
        # made on the first run: the layouts are those of the operands
        self.pattern = self.runner = self.one = None
        self.names = tuple(spec.name for spec in op.inputs)
        # (index, core shape) of the operands a call of one matrix reshapes: every one of a
        # stack of one (its matrix), else those given as vectors (their k = 1 axis)
        self.one_reshapes = tuple(
            (i, how.flat[1:])
            for i, how in enumerate(self.binding.flatten)
            if self.binding.batch_shape or how.expand
        )
        # whether every operand comes as (batch, *core) already (a plan serves one shape)
        self.given_flat = all(
            not how.expand and not how.broadcast and arrays[name].shape == how.flat
            for name, how in zip(self.names, self.binding.flatten)
        )

    def call(self, arrays, policy, check_finite, runtime, return_info):
        """The call's results in the caller's types, the error policy applied; ``arrays``
        are native arrays of the planned signature."""
        if self.native.device is None:
            return self._call(arrays, policy, check_finite, runtime, return_info)
        # Everything on the arguments' device and stream: casts, checks, the policy's
        # reduction and the hand-back too, not only the kernel.
        with self.native.current():
            return self._call(arrays, policy, check_finite, runtime, return_info)

    def _call(self, arrays, policy, check_finite, runtime, return_info):
        outputs, info = self.run(arrays, check_finite, runtime)
        if info is None:  # one matrix, which did not fail: nothing for the policy to do
            zeros = np.zeros(self.binding.batch_shape, np.int32) if return_info else None
            return self.give_back(outputs, zeros)
        if type(info) is np.ndarray and not np.count_nonzero(info):  # none failed, none warns
            return self.give_back(outputs, info if return_info else None)
        xp, binding = self.native.xp, self.binding
        warning, checked = None, info
        if self.estimates and policy is not None:
            warning, checked = _ill_conditioned(self.op, info, policy, binding)
        outputs = apply_policy(
            self.op,
            outputs,
            checked,
            policy,
            binding.batch_shape,
            xp,
            lambda: _nonfinite_reasons(self.op, arrays, binding, xp),
        )
        if warning:  # after the failures: a call that raises does not warn first
            warnings.warn(warning, LinAlgWarning, stacklevel=user_stacklevel())
        return self.give_back(outputs, info if return_info else None)

    def run(self, arrays, check_finite, runtime):
        """Compute the call on ``arrays`` (native arrays of the planned signature).

        Returns ``(outputs, info)`` in the native namespace, before the
        error policy; ``info`` is None for one matrix that did not fail.
        """
        op, function, binding = self.op, self.function, self.binding
        xp = self.native.xp
        for name in self.index_names:
            _check_index_range(function, name, arrays[name])
        if self.casts:
            arrays = dict(arrays)
            for name, dtype in self.casts:
                arrays[name] = _as_kernel_dtype(arrays[name], dtype)
        if check_finite:
            _check_finite(op, function, arrays, xp)
        if self.empty:
            outputs = [xp.empty(s, d) for s, d in zip(self.output_shapes, self.output_dtypes)]
            return outputs, xp.zeros(binding.batch_shape, np.int32)
        if self.one is not None:
            return self._run_one(arrays, runtime)
        if self.given_flat:
            operands = [arrays[name] for name in self.names]
        else:
            operands = self._flattened(arrays, xp)
        if not self.host:
            operands = [self.to_backend(x) for x in operands]
        if self.runner is None:
            self._make_runner(operands)
            if self.one is not None:
                return self._run_one(arrays, runtime)
        *outputs, info = self.runner(operands, runtime or {})
        if not self.host:
            outputs = [self.from_backend(o) for o in outputs]
            info = self.from_backend(info)
        for i, shape in enumerate(self.output_shapes):
            if outputs[i].shape != shape:
                outputs[i] = outputs[i].reshape(shape)
        return outputs, info if info.shape == binding.batch_shape else info.reshape(
            binding.batch_shape
        )

    def _flattened(self, arrays, xp):
        """The operands, each as ``(batch, *core)`` (in the arrays' namespace)."""
        operands = []  # a loop, which costs no Python frames
        for name, (expand, broadcast, flat) in zip(self.names, self.binding.flatten):
            x = arrays[name]
            if expand:
                x = x[:, None]
            if broadcast:
                x = xp.broadcast_to(x, broadcast)
            operands.append(x if x.shape == flat else x.reshape(flat))
        return operands

    def _make_runner(self, operands):
        """The call pattern and the backend's runner, from the first call's ``operands``
        (flattened, on the backend)."""
        self.pattern = CallPattern.make(
            self.op.routine,
            self.binding.dims,
            self.dtype,
            self.options,
            [layout_of(x) for x in operands],
            self.backend.target_of(operands),
        )
        self.runner = self.backend.runner(self.pattern)
        # One matrix on the host (a stack of one too): answered by the runner's ``one``, if
        # it has one, on the matrix as it is (no batch reductions to check).
        if self.host and self.binding.batch_size == 1:
            self.one = getattr(self.runner, "one", None)

    def _run_one(self, arrays, runtime):
        """:meth:`run` of a call of one matrix on the host, by the runner's ``one``;
        ``info`` is None when the matrix did not fail."""
        operands = [arrays[name] for name in self.names]
        for i, core in self.one_reshapes:  # the batch axes of a stack of one go, vectors
            operands[i] = operands[i].reshape(core)  # get their k = 1 axis
        *outputs, info = self.one(*operands, **runtime) if runtime else self.one(*operands)
        if self.one_reshapes:  # put back
            outputs = [o.reshape(shape) for o, shape in zip(outputs, self.output_shapes)]
        elif self.zero_d_arrays:  # NumPy gives scalars for one matrix's det, say
            outputs = [np.asarray(o) for o in outputs]
        return outputs, np.full(self.binding.batch_shape, info, np.int32) if info else None

    def give_back(self, outputs, info):
        """``(outputs, info)`` in the caller's array type (NumPy scalars for 0-d NumPy
        results; the ndarray subclass of the argument NumPy takes it from, see
        :func:`_subclass_wrap`); ``info`` None unless it was asked for."""
        if self.wrap is not None:
            outputs = [
                self.wrap(o) if spec.wrapped else o for spec, o in zip(self.op.outputs, outputs)
            ]
        if self.scalars:
            outputs = [o[()] if o.ndim == 0 else o for o in outputs]
        native = self.native
        if native.wrap is not None:
            outputs = [native.give_back(o) for o in outputs]
            info = native.give_back(info) if info is not None else None
        return outputs, info


def _subclass_wrap(op, args):
    """``__array_wrap__`` of the ndarray subclass the results take, as in NumPy, or None.

    NumPy's linalg functions wrap with the ``__array_wrap__`` of one argument
    (``a``; ``b`` for ``solve`` and ``lstsq``); SciPy's return base-class
    arrays (``op.wrap_from`` is None).  Calls with a subclass are never in
    :data:`PLANS` (see :func:`_signature`), so the wrap belongs to the plan.
    """
    x = args.get(op.wrap_from) if op.wrap_from else None
    return x.__array_wrap__ if is_ndarray_subclass(x) else None


def is_ndarray_subclass(x):
    """Whether ``x`` is an instance of a strict subclass of ``numpy.ndarray``."""
    return isinstance(x, np.ndarray) and type(x) is not np.ndarray


def _signature(op, args, options):
    """Key of a call whose plan may be remembered, or None.

    NumPy and CuPy arrays qualify, keyed on type, device, shape, dtype and
    strides; subclasses, lists, scalars and DLPack producers are re-planned
    every call (their conversion is part of the call).
    """
    key = (id(op), forced_device(), *options.items())  # ops are module-level constants
    for x in args.values():
        kind = type(x)
        if kind is np.ndarray:
            key += (x.shape, x.dtype, x.strides)
        elif kind.__module__ == "cupy":
            key += (kind, x.device.id, x.shape, x.dtype, x.strides)
        else:
            return None
    return key


def apply_policy(op, outputs, info, policy, batch_shape, xp, reasons=None):
    """``outputs`` after ``op``'s error ``policy`` for the per-matrix ``info`` (of
    ``batch_shape``): filled with NaN (``'nan'``) where a matrix failed, or as they are,
    after raising or warning (``'raise'``, ``'warn'``).  ``reasons()``, called only when
    a matrix failed, gives what :func:`blocksolve._errors.raise_or_warn` takes as its
    ``nonfinite``."""
    if policy == "nan":
        return _fill_nan(op, outputs, info, batch_shape, xp)
    if policy in ("raise", "warn"):
        info_host = failed_info(info)
        if info_host is not None:
            nonfinite = reasons() if reasons is not None else None
            raise_or_warn(policy, info_host, batch_shape, op.name, op.describe_failure, nonfinite)
    return outputs


def _ill_conditioned(op, info, policy, binding):
    """``(warning or None, info)``: the :class:`LinAlgWarning` text for the matrices
    singular to working precision (``info = n + 1``, see
    :attr:`~blocksolve._op.Op.condition_warning`) under the policies that look at
    ``info`` on the host, and ``info`` without those codes, which are no failure."""
    size = binding.dims["n"]
    if policy in ("raise", "warn"):
        info_host = failed_info(info)
        if info_host is None:
            return None, info
        return ill_conditioned_report(info_host, size, binding.batch_shape, op.name)
    if policy == "nan":  # no synchronisation: the codes cleared where they are
        return None, info * (info <= size)
    return None, info


def policy_of(op, errors, return_info):
    """The policy a call applies (None: it returns ``info`` instead)."""
    if return_info:
        if errors is not None:
            resolve_policy(errors, op.default_policy, op.name)  # checked anyway
        return None
    if errors is None:
        return scoped_policy.get() or op.default_policy
    return resolve_policy(errors, op.default_policy, op.name)


def execute(
    op,
    args,
    options,
    *,
    errors=None,
    return_info=False,
    check_finite=False,
    runtime=None,
    stream=None,
):
    """Run ``op`` on the array arguments ``args``.

    Parameters
    ----------
    op : blocksolve._op.Op
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
    stream : optional
        The CUDA stream the caller named (see :func:`_normalize.stream_handle`),
        or None: the current one of the arrays' library.

    Returns
    -------
    outputs : list of array
        In the caller's array type, shaped ``batch + core``.
    info : array or None
        When ``return_info``.
    """
    policy = policy_of(op, errors, return_info)
    if stream is not None:
        return _execute_on_stream(
            op, args, options, stream, policy, check_finite, runtime, return_info
        )
    key = _signature(op, args, options)
    plan = PLANS.lookup(key) if key is not None else None
    if plan is None:
        for holds, execute_lazily in _LAZY:
            if holds(args):  # a lazy graph: one ordinary call per block
                _check_options(op, options)
                return execute_lazily(
                    op,
                    args,
                    options,
                    errors=errors,
                    return_info=return_info,
                    check_finite=check_finite,
                    runtime=runtime,
                )
        plan, args = _new_plan(op, args, options)
        if key is not None:
            PLANS.put(key, plan)
    return plan.call(args, policy, check_finite, runtime, return_info)


def _check_options(op, options):
    if options.keys() != set(op.options):  # the op table is the backends' contract
        raise TypeError(
            f"{op.name}: internal error: options {sorted(options)} do "
            f"not match the declared {op.options}"
        )


def _new_plan(op, args, options, stream=None):
    """``(plan, native arrays)`` for a call no remembered plan serves (``stream``: the
    handle of the stream the caller named)."""
    _check_options(op, options)
    wrap = _subclass_wrap(op, args)
    native, arrays = to_native(op.name, args, stream)
    return _Plan(op, native, arrays, options, wrap), arrays


def _execute_on_stream(op, args, options, stream, policy, check_finite, runtime, return_info):
    """:func:`execute` for a call given ``stream=``: all of it on that stream, from the
    arrays' hand-over on (a DLPack producer orders its pending work before it).

    Such calls are not remembered: entering the stream is part of each.
    """
    function = op.name
    handle, stream_device = stream_handle(function, stream)
    if any(holds(args) for holds, _ in _LAZY):
        raise ValueError(
            f"{function}: stream= does not apply to Dask arrays (each block runs "
            f"where Dask schedules it)"
        )
    device = gpu_device_of(args)
    if device is None and forced_device() != "cuda":
        raise ValueError(
            f"{function}: stream= applies to a call that runs on a GPU; these "
            f"are host arrays, computed on the CPU (inside "
            f"use_device('cuda') they are computed on the GPU)"
        )
    if None not in (device, stream_device) and device != stream_device:
        raise ValueError(
            f"{function}: the stream is on device {stream_device}, the arrays on device {device}"
        )
    with on_stream(handle, device if device is not None else stream_device):
        plan, arrays = _new_plan(op, args, options, handle)
        return plan._call(arrays, policy, check_finite, runtime, return_info)


def failed_info(info):
    """``info`` on the host if a matrix failed, else None.

    On a GPU one reduction and a one-byte copy: the whole array crosses only when
    something failed (for millions of small matrices it is larger than the kernel's
    own traffic).
    """
    if isinstance(info, np.ndarray):  # count_nonzero: no ufunc machinery on every call
        return info if np.count_nonzero(info) else None
    if not hasattr(info, "get"):  # another library's host array (a torch tensor's info)
        return failed_info(np.asarray(info))
    with info.device:  # a Dask block's policy runs outside its call
        return info.get() if bool(info.any()) else None
