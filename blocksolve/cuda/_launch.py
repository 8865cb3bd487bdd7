"""Launching a kernel: a linked cubin through cupy, or the numba kernel under the simulator.

Both launchers take the same arguments -- inputs, outputs and ``info`` in
kernel order, the batch size and the array namespace -- and run one block
per ``batches_per_block`` matrices, rounded up, with the descriptor's block
shape and the plan's dynamic shared memory.

:class:`CubinKernel`
    On a GPU.  The linked cubin (from :mod:`blocksolve.cuda._compile`, fresh
    or from the disk cache) is loaded with cupy on first use on each device
    -- no numba.cuda, no nvmath -- and launched on cupy's current stream
    (the caller's) with the parameters packed as numba-cuda would
    (:mod:`blocksolve.cuda._abi`).  Above 48 KB of dynamic shared memory the
    function opts in (``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``).
    Nothing synchronises.
:class:`SimulatedKernel`
    Under numba's CUDA simulator: the numba kernel itself, the numpy
    arrays wrapped without a copy as the simulator's device arrays (its own
    host-to-device copy refuses arrays that are neither C- nor F-contiguous
    as a whole, such as a stack of column-major matrices).
"""

from __future__ import annotations

import threading

import numpy as np

from .._compat.numba_cuda import simulator_array
from . import _abi

__all__ = ["CubinKernel", "SimulatedKernel", "max_shared_bytes", "DEFAULT_SHARED_LIMIT"]

# Shared memory (static + dynamic) a kernel may use without opting in.
DEFAULT_SHARED_LIMIT = 48 * 1024


def max_shared_bytes():
    """Largest shared memory per block the current device allows (with the opt-in)."""
    import cupy

    runtime = cupy.cuda.runtime
    return runtime.deviceGetAttribute(
        runtime.cudaDevAttrMaxSharedMemoryPerBlockOptin, cupy.cuda.Device().id
    )


def _outputs(record_outputs):
    return tuple((tuple(core), np.dtype(dtype)) for core, dtype in record_outputs)


class CubinKernel:
    """A linked cubin and its launch record.

    Parameters
    ----------
    record : dict
        The launch record of :func:`blocksolve.cuda._compile.compile_spec`.
    cubin : bytes
    """

    def __init__(self, record, cubin):
        self.record = record
        self.cubin = cubin
        self.entry = record["entry"]
        self.abi = record["abi"]
        self.block_dim = tuple(record["block_dim"])
        self.batches_per_block = record["batches_per_block"]
        self.shared_bytes = record["shared_bytes"]
        self.static_shared_bytes = record["static_shared_bytes"]
        self.registers = record["registers"]
        self.outputs = _outputs(record["outputs"])
        self._functions = {}  # device id -> cupy Function
        self._lock = threading.Lock()

    def function(self, device_id):
        """The loaded kernel on ``device_id`` (loads the module on first use there)."""
        function = self._functions.get(device_id)
        if function is None:
            with self._lock:
                function = self._functions.get(device_id)
                if function is None:
                    function = self._functions[device_id] = self._load()
        return function

    def _load(self):
        import cupy

        module = cupy.cuda.function.Module()
        module.load(self.cubin)
        function = module.get_function(self.entry)
        if self.static_shared_bytes + self.shared_bytes > DEFAULT_SHARED_LIMIT:
            cupy.cuda.driver.funcSetAttribute(
                function.ptr,
                cupy.cuda.driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                self.shared_bytes,
            )
        return function

    def launch(self, arrays, batch, xp):
        """Run the kernel over ``batch`` matrices on cupy's current device and stream."""
        params = _abi.pack(self.abi, arrays, batch, _device_pointer)
        blocks = -(-batch // self.batches_per_block)
        function = self.function(xp.cuda.Device().id)
        function((blocks, 1, 1), self.block_dim, params, shared_mem=self.shared_bytes)


def _device_pointer(x):
    return x.data.ptr


class SimulatedKernel:
    """A kernel run by numba's CUDA simulator.

    Parameters
    ----------
    spec : blocksolve.cuda.kernels._skeleton.KernelSpec
    descriptors : dict
        The stand-in descriptors the kernel was built on (tests inspect
        their recorded calls).
    """

    static_shared_bytes = 0  # the simulator has no static shared memory to report
    registers = None  # nor registers

    def __init__(self, spec, descriptors=None):
        self.spec = spec
        self.descriptors = descriptors
        self.block_dim = tuple(spec.block_dim)
        self.batches_per_block = spec.batches_per_block
        self.shared_bytes = spec.shared_bytes
        self.outputs = tuple(spec.outputs)

    def launch(self, arrays, batch, xp):
        blocks = -(-batch // self.batches_per_block)
        args = [simulator_array(x) for x in arrays]
        self.spec.kernel[blocks, self.block_dim, 0, self.shared_bytes](*args, batch)
