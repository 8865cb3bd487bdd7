"""Launching a :class:`~blocksolve.cuda._kernels.KernelSpec`.

- grid: one block per ``batches_per_block`` matrices, rounded up; block:
  the descriptor's ``block_dim``; dynamic shared memory: the spec's size.
  On the first launch on a device the kernel is compiled for the argument
  types, its static shared memory (what cuSolverDx may declare itself) is
  added, the total is checked against the device's limit
  (:class:`SharedMemoryExceeded`) and, above 48 KB, the kernel opts in
  (``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``);
- stream: cupy's current stream (the caller's), through
  :func:`numba.cuda.external_stream`, on cupy's current device;
- arrays: cupy arrays are viewed as numba device arrays without copying and
  without the host synchronisation numba would otherwise do
  (``as_cuda_array(..., sync=False)`` -- kernel and producer share the
  stream).

Under numba's CUDA simulator (``xp`` is numpy) the numpy arrays are wrapped,
without a copy, as the simulator's device arrays (its own host-to-device
copy refuses arrays that are neither C- nor F-contiguous as a whole, such as
a stack of column-major matrices).
"""

from __future__ import annotations

import numpy as np

__all__ = ["launch", "max_shared_bytes", "SharedMemoryExceeded", "DEFAULT_SHARED_LIMIT"]

# Shared memory (static + dynamic) a kernel may use without opting in.
DEFAULT_SHARED_LIMIT = 48 * 1024


class SharedMemoryExceeded(RuntimeError):
    """The compiled kernel needs more shared memory per block than the device has."""


def max_shared_bytes():
    """Largest shared memory per block the current device allows (with the opt-in)."""
    import cupy
    runtime = cupy.cuda.runtime
    return runtime.deviceGetAttribute(runtime.cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                      cupy.cuda.Device().id)


def launch(spec, arrays, batch, xp, prepared=None):
    """Run ``spec.kernel(*arrays, batch)`` over ``batch`` matrices.

    Parameters
    ----------
    spec : blocksolve.cuda._kernels.KernelSpec
    arrays : sequence of array
        Inputs, outputs and ``info``, in kernel argument order.
    batch : int
    xp : module
        cupy, or numpy under the simulator.
    prepared : set, optional
        Device ids on which the kernel is compiled and its shared memory
        checked (updated here; kept by the caller with the kernel).

    Raises
    ------
    SharedMemoryExceeded
        On the first launch on a device, if the kernel's static shared memory
        (cuSolverDx's own, if any) plus ``spec.shared_bytes`` exceed the
        device's limit.
    """
    blocks = -(-batch // spec.batches_per_block)
    if xp is np:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        args = [FakeCUDAArray(x) for x in arrays]
        spec.kernel[blocks, spec.block_dim, 0, spec.shared_bytes](*args, batch)
        return
    import cupy
    from numba import cuda

    device_id = cupy.cuda.Device().id
    with cuda.gpus[device_id]:
        args = [_as_numba(x, xp) for x in arrays]
        if prepared is None or device_id not in prepared:
            _prepare(spec, args, batch, device_id)
            if prepared is not None:
                prepared.add(device_id)
        stream = _current_stream(cupy, cuda)
        spec.kernel[blocks, spec.block_dim, stream, spec.shared_bytes](*args, batch)


def _as_numba(x, xp):
    from numba import cuda
    if x.size == 0:  # never read or written; avoids null device pointers
        x = xp.empty((1,) * x.ndim, x.dtype)
    return cuda.as_cuda_array(x, sync=False)


def _current_stream(cupy, cuda):
    ptr = cupy.cuda.get_current_stream().ptr
    return cuda.legacy_default_stream() if ptr == 0 else cuda.external_stream(ptr)


def _prepare(spec, args, batch, device_id):
    """Compile for these argument types, check the shared memory, opt in above 48 KB."""
    import numba
    from numba.cuda.cudadrv.driver import binding, driver

    signature = tuple(numba.typeof(a) for a in args) + (numba.typeof(batch),)
    function = spec.kernel.compile(signature).library.get_cufunc()
    static = function.attrs.shared
    limit = max_shared_bytes()
    if static + spec.shared_bytes > limit:
        raise SharedMemoryExceeded(
            f"the kernel needs {static} bytes of static and {spec.shared_bytes} bytes of "
            f"dynamic shared memory per block; the device allows {limit}")
    if static + spec.shared_bytes > DEFAULT_SHARED_LIMIT:
        attribute = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        driver.cuKernelSetAttribute(attribute, spec.shared_bytes, function.handle, device_id)
