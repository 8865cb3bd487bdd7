"""The argument layout of blocksolve's kernels, as numba-cuda compiles them.

A cached cubin is launched without numba (see :mod:`blocksolve.cuda._launch`),
so blocksolve passes the kernel parameters itself, exactly as numba-cuda
0.30's dispatcher does (``_Kernel._prepare_args``): every array argument
becomes ``meminfo, parent, nitems, itemsize, data, shape..., strides...``
(strides in bytes; meminfo and parent are null), every integer scalar one
int64 -- all 8-byte parameters.

An *ABI* is the JSON-able description of a kernel's arguments,
``[["array", dtype, ndim, layout], ..., ["int64"]]``.  It is derived from
the call pattern and the op table before compiling (:func:`kernel_abi`),
turned into numba types to compile with (:func:`numba_signature`), checked
against the cubin's own parameter table before the cubin is cached
(:func:`check_params`), and used to pack the arguments of every launch
(:func:`pack`).
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.np.numpy_support import from_dtype

from .._op import op_for

__all__ = [
    "kernel_abi",
    "numba_signature",
    "param_count",
    "check_params",
    "pack",
    "AbiMismatch",
    "ABI_VERSION",
]

# Bumped whenever the packing below changes; part of every kernel cache key.
ABI_VERSION = "numba-cuda-0.30-flat-v1"

_POINTER = 8


class AbiMismatch(RuntimeError):
    """The cubin's parameter table is not what :func:`pack` would pass."""


def _operand_ranks(pattern):
    """Dimensions of each flattened operand (batch + core) and whether it is an index."""
    return [
        (1 + len(spec.core), spec.kind == "index")
        for spec in op_for(pattern.routine, pattern.options).inputs
    ]


def kernel_abi(pattern, outputs):
    """The ABI of the kernel of ``pattern`` whose outputs are ``outputs``.

    Parameters
    ----------
    pattern : blocksolve._pattern.CallPattern
        Operand layouts already canonical: ``'C'`` operands are C-contiguous
        as a whole; ``'F'`` stacks of column-major matrices are typed ``'A'``.
    outputs : sequence of (tuple of int, numpy.dtype)
        Core shape and dtype of each output (``KernelSpec.outputs``); outputs
        are allocated C-contiguous.

    Returns
    -------
    list
        Inputs, outputs, ``info`` (int32, 1-D) and ``batch`` (int64).
    """
    abi = []
    for (ndim, is_index), layout in zip(_operand_ranks(pattern), pattern.layouts):
        dtype = np.dtype(np.int32) if is_index else pattern.np_dtype
        abi.append(["array", dtype.name, ndim, "C" if layout == "C" else "A"])
    for core, dtype in outputs:
        abi.append(["array", np.dtype(dtype).name, 1 + len(core), "C"])
    abi.append(["array", "int32", 1, "C"])
    abi.append(["int64"])
    return abi


def numba_signature(abi):
    """numba argument types for ``abi``."""
    return tuple(
        types.Array(from_dtype(np.dtype(a[1])), a[2], a[3]) if a[0] == "array" else types.int64
        for a in abi
    )


def param_count(abi):
    """Number of 8-byte kernel parameters ``abi`` expands to."""
    return sum(5 + 2 * a[2] if a[0] == "array" else 1 for a in abi)


def check_params(abi, params):
    """Raise :class:`AbiMismatch` unless ``params`` (from the cubin) is what :func:`pack` passes.

    Parameters
    ----------
    params : list of (ordinal, offset, size)
        :func:`blocksolve.cuda._elf.kernel_params` of the entry.
    """
    expected = [(i, i * _POINTER, _POINTER) for i in range(param_count(abi))]
    if list(params) != expected:
        raise AbiMismatch(
            f"the cubin's kernel takes {len(params)} parameters "
            f"({params[:4]}...); blocksolve would pass {len(expected)} 8-byte ones for "
            f"{abi}: numba-cuda's kernel ABI has changed, so this kernel cannot be cached"
        )


def pack(abi, arrays, batch, pointer):
    """Kernel parameters for one launch, as numpy scalars.

    Parameters
    ----------
    abi : list
    arrays : sequence of array
        Inputs, outputs and ``info``, in ABI order.
    batch : int
    pointer : callable
        Device address of an array (``lambda x: x.data.ptr`` for cupy).

    Raises
    ------
    AbiMismatch
        If ``arrays`` is not one array per array argument of ``abi``, or an
        array is not of its argument's dtype, rank or layout.
    """
    if len(arrays) != len(abi) - 1 or abi[-1][0] != "int64":
        raise AbiMismatch(
            f"the kernel takes {len(abi) - 1} arrays and the batch size ({abi}); "
            f"given {len(arrays)} arrays"
        )
    params = []
    for spec, x in zip(abi, arrays):
        if (
            x.dtype.name != spec[1]
            or x.ndim != spec[2]
            or (spec[3] == "C" and not x.flags.c_contiguous)
        ):
            raise AbiMismatch(
                f"kernel argument {spec} given a {x.dtype.name} array of "
                f"shape {x.shape} and strides {x.strides}"
            )
        params += [
            np.int64(0),
            np.int64(0),
            np.int64(x.size),
            np.int64(x.itemsize),
            np.uint64(pointer(x) if x.size else 0),
        ]
        params += [np.int64(extent) for extent in x.shape]
        params += [np.int64(stride) for stride in x.strides]
    params.append(np.int64(batch))
    return tuple(params)
