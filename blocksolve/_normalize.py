"""From whatever the user passed to canonical operands, and back.

Three steps, each one function:

1. :func:`to_native` — find the array namespace (numpy, cupy, or a DLPack
   producer such as torch) without importing any GPU library, and view every
   argument as a numpy or cupy array; remember how to give results back.
2. :func:`compute_dtype` — NumPy's linalg promotion rule: integer and bool
   become float64, float16/longdouble/object are refused.
3. :func:`bind` — check the core dimensions against the op's signature,
   broadcast the batch dimensions, and flatten every operand to
   ``(batch, *core)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import array_api_compat

from ._errors import LinAlgError

__all__ = ["Native", "to_native", "compute_dtype", "bind", "Bound"]

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
    """

    xp: object
    wrap: object = None

    @property
    def on_gpu(self):
        return self.xp is not np

    def give_back(self, array):
        return array if self.wrap is None else self.wrap(array)


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


def _from_dlpack(xp, x):
    detach = getattr(x, "detach", None)  # torch tensors that require grad
    if detach is not None:
        x = detach()
    return xp.from_dlpack(x)


def to_native(function, args):
    """View every array argument as numpy or cupy.

    Parameters
    ----------
    function : str
        Public function name, for error messages.
    args : dict of str to object
        The array arguments by name.

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
    arrays, wrap = {}, None
    for name, x in args.items():
        if kinds[name].startswith("dlpack"):
            arrays[name] = _from_dlpack(xp, x)
            if wrap is None:
                wrap = _dlpack_wrapper(x)
        else:
            arrays[name] = xp.asarray(x)
    return Native(xp, wrap), arrays


def _dlpack_wrapper(example):
    """Convert results back into ``example``'s namespace, zero-copy."""
    try:
        namespace = array_api_compat.array_namespace(example)
    except TypeError:
        return None
    return namespace.from_dlpack


def compute_dtype(function, arrays):
    """NumPy's linalg dtype rule for the inexact operands.

    Integer and bool arrays count as float64; the result is the promotion
    of all operands.  Anything else outside float32/float64/complex64/
    complex128 raises ``TypeError`` as NumPy does.
    """
    dtypes = []
    for name, x in arrays.items():
        dt = np.dtype(x.dtype)
        if dt.kind in "biu":
            dt = np.dtype(np.float64)
        elif dt not in SUPPORTED_DTYPES:
            raise TypeError(f"{function}: array type {dt} is unsupported in linalg "
                            f"(argument {name!r}); use float32, float64, complex64 or complex128")
        dtypes.append(dt)
    return np.result_type(*dtypes)


@dataclass(frozen=True)
class Bound:
    """Operands checked against an op's signature and flattened.

    Attributes
    ----------
    operands : tuple of array
        Each operand as ``(batch, *core)``, in signature order.
    batch_shape : tuple of int
        The broadcast batch shape.
    dims : dict of str to int
        Size of every core dimension symbol (derived ones included).
    vector : bool
        A ``vector_ok`` operand was given as a vector; outputs drop ``k``.
    """

    operands: tuple
    batch_shape: tuple
    dims: dict
    vector: bool

    @property
    def batch_size(self):
        return math.prod(self.batch_shape)


def _shapes(arrays):
    return ", ".join(f"{n} {tuple(x.shape)}" for n, x in arrays.items())


def bind(op, function, arrays, xp):
    """Check core dimensions, broadcast batch dimensions, flatten.

    Parameters
    ----------
    op : blocksolve._ops.Op
    function : str
        Public function name for error messages.
    arrays : dict of str to array
        Native arrays by operand name (already cast).
    xp : module

    Returns
    -------
    Bound

    Raises
    ------
    LinAlgError
        An operand has too few dimensions or is not square where it must be
        (NumPy's exception; it is also a ``ValueError``, SciPy's).
    ValueError
        Core dimensions disagree or batch dimensions do not broadcast.
    """
    dims, owner, batch_shapes, cores, vector = {}, {}, [], [], False
    for spec in op.inputs:
        x = arrays[spec.name]
        core = spec.core
        if spec.vector_ok and x.ndim == 1:
            x = x[:, None]
            vector = True
        if x.ndim < len(core):
            raise LinAlgError(f"{function}: {spec.name} must be at least {len(core)}-D; "
                             f"got shape {tuple(arrays[spec.name].shape)}")
        core_shape = tuple(x.shape[x.ndim - len(core):])
        for axis, (symbol, size) in enumerate(zip(core, core_shape)):
            where = f"{spec.name}.shape[{axis - len(core)}]"
            if symbol not in dims:
                dims[symbol], owner[symbol] = size, where
            elif dims[symbol] != size:
                if owner[symbol].startswith(f"{spec.name}."):
                    raise LinAlgError(f"{function}: {spec.name} must be square in its last two "
                                     f"dimensions; got shape {tuple(x.shape)}")
                raise ValueError(
                    f"{function}: {where} = {size} does not match {owner[symbol]} = "
                    f"{dims[symbol]}; got shapes {_shapes(arrays)}")
        arrays = {**arrays, spec.name: x}
        batch_shapes.append(tuple(x.shape[:x.ndim - len(core)]))
        cores.append(core_shape)
    try:
        batch_shape = (batch_shapes[0] if len(set(batch_shapes)) == 1
                       else tuple(np.broadcast_shapes(*batch_shapes)))
    except ValueError:
        raise ValueError(f"{function}: batch dimensions do not broadcast; got shapes "
                         f"{_shapes(arrays)}") from None
    batch_size = math.prod(batch_shape)
    operands = tuple(
        _flatten(arrays[spec.name], own, batch_shape, batch_size, core, xp)
        for spec, own, core in zip(op.inputs, batch_shapes, cores))
    if vector:
        dims["k"] = 1
    for name, rule in op.derived.items():
        dims[name] = rule(dims)
    return Bound(operands, batch_shape, dims, vector)


def _flatten(x, own_batch, batch_shape, batch_size, core, xp):
    """``x`` as ``(batch_size, *core)``: a view when possible, a copy when broadcast."""
    if own_batch != batch_shape:
        x = xp.broadcast_to(x, batch_shape + core)
    return x.reshape((batch_size,) + core)


def output_shape(output, bound):
    """Full shape of one declared output for a bound call."""
    core = tuple(bound.dims[s] for s in output.core)
    if bound.vector and output.core and output.core[-1] == "k":
        core = core[:-1]
    return bound.batch_shape + core
