"""From whatever the user passed to canonical operands, and back.

Three steps, each one function:

1. :func:`to_native` — find the array namespace (numpy, cupy, or a DLPack
   producer such as torch) without importing any GPU library, and view every
   argument as a numpy or cupy array; remember how to give results back.
2. :func:`compute_dtype` — NumPy's linalg promotion rule (integer and bool
   become float64, float16/longdouble/object are refused), or SciPy's for the
   ``scipy.linalg`` names (``scipy.linalg.solve``'s for ``solve``'s SciPy
   structures).
3. :func:`bind_shapes` — check the core dimensions against the op's signature
   and broadcast the batch dimensions, from the shapes alone (a plan keeps the
   :class:`Binding`, whose :meth:`Binding.operands` flattens every operand to
   ``(batch, *core)`` on each call).
"""

from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import array_api_compat
import numpy as np

from ._errors import LinAlgError, user_stacklevel

__all__ = [
    "Native",
    "to_native",
    "compute_dtype",
    "bind_shapes",
    "Binding",
    "output_shape",
    "stream_handle",
    "gpu_device_of",
    "on_stream",
]

SUPPORTED_DTYPES = tuple(np.dtype(t) for t in ("float32", "float64", "complex64", "complex128"))

# DLPack device types (dlpack.h): where a producer's memory lives.
_DLPACK_CPU, _DLPACK_CUDA, _DLPACK_CUDA_HOST, _DLPACK_CUDA_MANAGED = 1, 2, 3, 13


@dataclass(frozen=True)
class Native:
    """How the arguments were given, and how to hand results back.

    Attributes
    ----------
    xp : module
        ``numpy`` or ``cupy``: the namespace the backends compute in.
    wrap : callable or None
        Converts a result back to the caller's array type (``None``: return
        numpy/cupy arrays unchanged).
    device : cupy.cuda.Device or None
        The GPU the arguments are on (``None`` on the host).
    stream : int or None
        Handle of the call's CUDA stream where it is not cupy's current one: the
        stream the caller named (``stream=``), else the one its arrays' library
        names (torch's current stream on ``device``); ``None``: cupy's current
        stream.
    """

    xp: object
    wrap: object = None
    device: object = None
    stream: int | None = None

    @property
    def on_gpu(self):
        return self.xp is not np

    def give_back(self, array):
        return array if self.wrap is None else self.wrap(array)

    def current(self):
        """A context in which the call runs: the arguments' device current (whatever cupy's
        current device is -- a torch tensor on ``cuda:1``, a cupy array made under
        another ``Device``), and the caller's stream cupy's current one."""
        if self.stream is None:
            return self.device
        return _on_stream(self.device, self.xp.cuda.ExternalStream(self.stream, self.device.id))

    def from_host(self, array):
        """A host result on the arguments' GPU (a call they made on the CPU, under
        ``use_device('cpu')``), whatever cupy's current device is."""
        with self.device:
            return self.xp.asarray(array)


@contextlib.contextmanager
def _on_stream(device, stream):
    with device, stream:
        yield


def _caller_stream(x):
    """The stream a CUDA DLPack producer's own library computes on where it has one that
    cupy does not follow -- torch's current stream on ``x``'s device -- else None.

    A call on torch tensors runs on torch's stream: cupy's (the legacy default
    stream) is not ordered with a ``torch.cuda.Stream``, whose allocator may then
    reuse an input's memory while the kernel still reads it.  torch's default
    stream (handle 0) is the legacy one: nothing to do.
    """
    if not array_api_compat.is_torch_array(x):
        return None
    import torch  # already imported: x is a torch tensor

    return torch.cuda.current_stream(x.device).cuda_stream or None


def stream_handle(function, stream):
    """``(handle, device_id)`` of a ``stream=`` argument: its ``cudaStream_t`` as an int,
    and the id of its device where the object names one (else None).

    Accepted, as nvmath-python accepts them: a CuPy stream, a torch CUDA stream, any
    object of the CUDA stream protocol (``__cuda_stream__()`` returning ``(version,
    handle)``, as ``cuda.core`` streams do), or a raw handle as an int (0: the legacy
    default stream).
    """
    if isinstance(stream, (bool, np.bool_)):
        raise TypeError(
            f"{function}: stream must be a CUDA stream or a cudaStream_t handle; got {stream!r}"
        )
    if isinstance(stream, (int, np.integer)):
        if stream < 0:
            raise ValueError(f"{function}: a stream handle is not negative; got {stream}")
        return int(stream), None
    module = type(stream).__module__.partition(".")[0]
    if module == "cupy" and hasattr(stream, "ptr"):
        return int(stream.ptr), getattr(stream, "device_id", None)
    if module == "torch" and hasattr(stream, "cuda_stream"):
        return int(stream.cuda_stream), stream.device.index
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        return int(protocol()[1]), None
    raise TypeError(
        f"{function}: stream must be a CuPy or torch CUDA stream, an object with "
        f"__cuda_stream__, or a cudaStream_t handle (int); got "
        f"{type(stream).__module__}.{type(stream).__qualname__}"
    )


def gpu_device_of(args):
    """Id of the GPU the array arguments ``args`` (a dict) are on, read without importing
    them; None when they are host arrays (the first GPU argument's device is taken:
    :func:`to_native` checks that they agree)."""
    for x in args.values():
        kind = _kind_of(x)
        if kind == "cupy":
            return x.device.id
        if kind == "dlpack-cuda":
            return int(x.__dlpack_device__()[1])
    return None


def on_stream(handle, device_id):
    """A context in which GPU work goes to the stream ``handle`` on device ``device_id``
    (None: the current device), both made current with CuPy and given back after."""
    import cupy  # only reached for a call given stream=

    device = cupy.cuda.Device(device_id) if device_id is not None else cupy.cuda.Device()
    return _on_stream(device, cupy.cuda.ExternalStream(handle, device.id))


def _kind_of(x):
    """``'numpy'``, ``'cupy'`` or ``'dlpack-cpu'``/``'dlpack-cuda'`` for one argument."""
    if isinstance(x, np.ndarray) or np.isscalar(x) or isinstance(x, (list, tuple)):
        return "numpy"
    if array_api_compat.is_cupy_array(x):
        return "cupy"
    if hasattr(x, "__dlpack_device__"):
        device_type = int(x.__dlpack_device__()[0])
        if device_type in (_DLPACK_CPU, _DLPACK_CUDA_HOST):
            return "dlpack-cpu"
        if device_type in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED):
            return "dlpack-cuda"
    return "numpy"  # anything else numpy can convert (memoryview, __array__, ...)


def _from_dlpack(function, name, xp, x):
    """``x`` as an ``xp`` array, zero-copy.  A tensor that requires grad is detached with a
    warning (no gradient flows through blocksolve); a dtype DLPack or ``xp`` cannot carry
    (torch's bfloat16, say) raises blocksolve's dtype error, not DLPack's."""
    if getattr(x, "requires_grad", False):
        warnings.warn(
            f"{function}: argument {name!r} requires grad, but no gradient flows through "
            "blocksolve (autograd does not see its computation); pass a detached tensor to "
            "silence this warning",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
        x = x.detach()
    try:
        return xp.from_dlpack(x)
    except (BufferError, RuntimeError, TypeError, ValueError) as error:
        if "dtype" not in str(error).lower():
            raise
        message = _unsupported_dtype(function, getattr(x, "dtype", "unknown"), name)
        raise TypeError(message) from error


def _unsupported_dtype(function, dtype, name):
    return (
        f"{function}: array type {dtype} is unsupported in linalg "
        f"(argument {name!r}); use float32, float64, complex64 or complex128"
    )


def to_native(function, args, stream=None):
    """View every array argument as numpy or cupy.

    Parameters
    ----------
    function : str
        Public function name, for error messages.
    args : dict of str to object
        The array arguments by name.
    stream : int, optional
        Handle of the stream the caller named (``stream=``): the call's stream,
        whatever the arrays' library's current one.

    Returns
    -------
    native : Native
    arrays : dict of str to array
    """
    kinds = {name: _kind_of(x) for name, x in args.items()}
    on_gpu = {kinds[n] in ("cupy", "dlpack-cuda") for n in args}
    if len(on_gpu) > 1:
        got = ", ".join(f"{n}: {type(x).__module__}.{type(x).__name__}" for n, x in args.items())
        raise TypeError(f"{function}: arrays must all be on the host or all on a GPU; got {got}")
    gpu = on_gpu.pop()
    if gpu:
        import cupy  # only reached when the caller already holds GPU arrays

        xp = cupy
    else:
        xp = np
    arrays, wrap, caller_stream = {}, None, stream
    for name, x in args.items():
        if kinds[name].startswith("dlpack"):
            arrays[name] = _from_dlpack(function, name, xp, x)
            if wrap is None:
                wrap = _dlpack_wrapper(x)
            if caller_stream is None and kinds[name] == "dlpack-cuda":
                caller_stream = _caller_stream(x)
        else:
            arrays[name] = xp.asarray(x)
    device = None
    if gpu:
        _check_one_device(function, arrays)
        device = next(iter(arrays.values())).device
    return Native(xp, wrap, device, caller_stream if gpu else None), arrays


def _check_one_device(function, arrays):
    """GPU arrays of one call must be on one device (the kernel runs on it)."""
    devices = {name: x.device.id for name, x in arrays.items()}
    if len(set(devices.values())) > 1:
        where = ", ".join(f"{name} on device {device}" for name, device in devices.items())
        raise ValueError(f"{function}: arrays must all be on one GPU; got {where}")


def _dlpack_wrapper(example):
    """Convert results back into ``example``'s namespace, zero-copy."""
    try:
        namespace = array_api_compat.array_namespace(example)
    except TypeError:
        return None
    return namespace.from_dlpack


def numpy_dtype(x):
    """The NumPy dtype of the array (or array like) ``x``: also for arrays whose dtypes are
    their own objects, such as ``array_api_strict``'s, read through DLPack."""
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return np.asarray(x).dtype
    try:
        return np.dtype(dtype)
    except TypeError:
        return np.from_dlpack(x).dtype


def _numpy_dtype(dt):
    """NumPy's linalg: integers and bool count as float64; only the four inexact dtypes."""
    if dt.kind in "biu":
        return np.dtype(np.float64)
    return dt if dt in SUPPORTED_DTYPES else None


def _scipy_dtype(dt):
    """SciPy's linalg (its LAPACK type choice): bool, 8- and 16-bit integers and float16
    count as float32, other integers and long double as float64, complex long double as
    complex128."""
    if dt.kind in "biuf" and dt.itemsize <= 2:
        return np.dtype(np.float32)
    if dt.kind in "iu" or (dt.kind == "f" and dt.itemsize > 8):
        return np.dtype(np.float64)
    if dt.kind == "c" and dt.itemsize > 16:
        return np.dtype(np.complex128)
    return dt if dt in SUPPORTED_DTYPES else None


def _scipy_solve_dtype(dt):
    """``scipy.linalg.solve``'s choice for the promoted dtype ``dt`` of its operands (its
    ``_ensure_dtype_cdsz``): integers and bool as float64, half and single precision as
    float32 (complex64), double and long double as float64 (complex128)."""
    if dt.kind in "biu":
        return np.dtype(np.float64)
    single = dt.itemsize <= (4 if dt.kind == "f" else 8)
    if dt.kind == "f":
        return np.dtype(np.float32 if single else np.float64)
    return np.dtype(np.complex64 if single else np.complex128)


# Rules that count each operand's dtype, then promote.
_DTYPE_RULES = {"numpy": _numpy_dtype, "scipy": _scipy_dtype}
# Rules that promote the operands' dtypes first, then choose from the result: int8 with
# int8 is float64 there, int8 with float32 float32 (SciPy's per-operand rule: float32,
# NumPy's: float64).  Each operand must still have a LAPACK type by SciPy's rule.
_PROMOTE_FIRST_RULES = {"scipy.linalg.solve": _scipy_solve_dtype}


def compute_dtype(function, arrays, reference="numpy"):
    """The computation dtype of the inexact operands, by the dtype rule of the function
    whose semantics are followed (``reference``: its name, ``'scipy.linalg.solve'``
    say, or just its library's, ``'numpy'`` or ``'scipy'``; an op's ``reference``).

    NumPy's and SciPy's rules count each operand's dtype as they say (NumPy:
    integers and bool as float64; SciPy: small integers, bool and float16 as
    float32, see :func:`_scipy_dtype`), then promote; ``scipy.linalg.solve``
    promotes the operands' own dtypes first, then chooses (see
    :func:`_scipy_solve_dtype`).  Byte order does not matter (non-native input
    is converted, as both libraries do).  A dtype the rule has no place for
    raises ``TypeError``, as NumPy does.
    """
    choose = _PROMOTE_FIRST_RULES.get(reference)
    count = _scipy_dtype if choose else _DTYPE_RULES[reference.partition(".")[0]]
    natives, counted = [], []
    for name, x in arrays.items():
        dt = np.dtype(x.dtype)
        natives.append(dt if dt.isnative else dt.newbyteorder("="))
        counted.append(count(natives[-1]))
        if counted[-1] is None:
            raise TypeError(_unsupported_dtype(function, dt, name))
    if choose:
        return choose(np.result_type(*natives))
    return np.result_type(*counted)


class _Flatten(NamedTuple):
    """How one operand of a given shape becomes ``(batch, *core)``."""

    expand: bool  # a vector right-hand side: append the ``k = 1`` axis first
    broadcast: tuple  # full shape to broadcast to first, or () when it has the batch shape
    flat: tuple  # ``(batch_size, *core)``


class Binding(NamedTuple):
    """The checked core and batch dimensions of a call; depends only on the shapes.

    Attributes
    ----------
    batch_shape : tuple of int
        The broadcast batch shape.
    dims : dict of str to int
        Size of every core dimension symbol (derived ones included).
    vector : bool
        A ``vector_ok`` operand was given as a vector; outputs drop ``k``.
    flatten : tuple of _Flatten
        Per operand, in signature order: how it becomes ``(batch, *core)`` (applied by
        :meth:`blocksolve._execute._Plan.run`).
    """

    batch_shape: tuple
    dims: dict
    vector: bool
    flatten: tuple

    @property
    def batch_size(self):
        return math.prod(self.batch_shape)


def _shapes(shapes):
    return ", ".join(f"{n} {tuple(shape)}" for n, shape in shapes.items())


def bind_shapes(op, function, shapes):
    """Check core dimensions and broadcast batch dimensions, from the shapes alone.

    Parameters
    ----------
    op : blocksolve._ops.Op
    function : str
        Public function name for error messages.
    shapes : dict of str to tuple of int
        Shape of every array argument, by operand name.

    Returns
    -------
    Binding

    Raises
    ------
    LinAlgError
        An operand has too few dimensions, is not square where it must be,
        or its core dimensions disagree with another's (NumPy's exception;
        it is also a ``ValueError``, SciPy's).
    ValueError
        Batch dimensions do not broadcast.
    """
    dims, batch_shapes, cores, expands, vector = {}, [], [], [], False
    for spec in op.inputs:
        shape = shapes[spec.name]
        core = spec.core
        expand = spec.vector_ok and len(shape) == 1
        if expand:
            shape = (*shape, 1)
            vector = True
        split = len(shape) - len(core)
        if split < 0:
            raise LinAlgError(
                f"{function}: {spec.name} must be at least {len(core)}-D; "
                f"got shape {tuple(shapes[spec.name])}"
            )
        core_shape = shape[split:]
        for axis, symbol in enumerate(core):
            if dims.setdefault(symbol, core_shape[axis]) != core_shape[axis]:
                _raise_mismatch(op, function, shapes, spec, shape, axis, dims)
        if expand:
            shapes = {**shapes, spec.name: shape}
        batch_shapes.append(shape[:split])
        cores.append(core_shape)
        expands.append(expand)
    try:
        batch_shape = (
            batch_shapes[0]
            if len(set(batch_shapes)) == 1
            else tuple(np.broadcast_shapes(*batch_shapes))
        )
    except ValueError:
        raise ValueError(
            f"{function}: batch dimensions do not broadcast; got shapes {_shapes(shapes)}"
        ) from None
    batch_size = math.prod(batch_shape)
    flatten = tuple(
        _Flatten(expand, () if own == batch_shape else batch_shape + core, (batch_size,) + core)
        for own, core, expand in zip(batch_shapes, cores, expands)
    )
    if vector:
        dims["k"] = 1
    for name, rule in op.derived.items():
        dims[name] = rule(dims)
    return Binding(batch_shape, dims, vector, flatten)


def _raise_mismatch(op, function, shapes, spec, shape, axis, dims):
    """Raise the error for ``spec``'s core ``axis`` disagreeing with the size already
    bound to its symbol (``shape``: the operand's shape, a vector made a column).

    The operand that bound the symbol first is looked up only here, when raising, so
    that binding keeps no record of it."""
    symbol = spec.core[axis]
    first, first_axis = next(
        (s.name, a) for s in op.inputs for a, c in enumerate(s.core) if c == symbol
    )
    if first == spec.name:
        raise LinAlgError(
            f"{function}: {spec.name} must be square in its last two dimensions; got shape {shape}"
        )
    size, known = shape[len(shape) - len(spec.core) + axis], dims[symbol]
    raise LinAlgError(  # NumPy's lstsq words; a ValueError, as NumPy's solve raises
        f"{function}: {spec.name}.shape[{axis - len(spec.core)}] = {size} does not match "
        f"{first}.shape[{first_axis - len(op_core(op, first))}] = {known} "
        f"(Incompatible dimensions); got shapes {_shapes(shapes)}"
        + _vector_hint(op, spec, tuple(shapes[spec.name]), dims)
    )


def op_core(op, name):
    """Core dimension symbols of ``op``'s input ``name``."""
    return next(spec.core for spec in op.inputs if spec.name == name)


def _rhs_spec(op):
    """The right-hand-side operand of ``op`` (a ``vector_ok`` one), or None."""
    return next((spec for spec in op.inputs if spec.vector_ok), None)


def _vector_hint(op, spec, shape, dims):
    """Advice for a stack of right-hand-side vectors ``b`` of shape ``(..., n)``.

    NumPy 2 reads ``b`` as a vector only when ``b.ndim == 1``; a batch of
    vectors must be given as ``(..., n, 1)``.
    """
    rhs = _rhs_spec(op)
    if spec is not rhs or len(shape) < 2:
        return ""
    rows = rhs.core[0]
    if shape[-1] != dims.get(rows):
        return ""
    return (
        f"; {spec.name} is a vector only when {spec.name}.ndim == 1 (the NumPy 2 rule): "
        f"for a batch of vectors pass {spec.name}[..., None]"
    )


def output_shape(output, bound):
    """Full shape of one declared output for a bound call."""
    core = tuple(bound.dims[s] for s in output.core)
    if bound.vector and output.core and output.core[-1] == "k":
        core = core[:-1]
    return bound.batch_shape + core
