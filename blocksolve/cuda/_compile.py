"""Kernel spec -> linked cubin and the record needed to launch it without numba.

This is the slow path of the CUDA backend (numba typing, libmathdx code
generation, NVVM, nvJitLink), taken once per call pattern and cached by
:mod:`blocksolve.cuda._kernel_store`.  It needs numba-cuda and, for real
descriptors, nvmath-python; it never needs a GPU -- the architecture comes
from the call pattern's target -- which is what lets the ``codegen`` tests
run it on a machine without one.
"""

from __future__ import annotations

import hashlib
import time

import numpy as np

from .._compat.numba_cuda import compile_kernel, needs_launch_setup
from . import _abi, _elf

__all__ = ["compile_spec", "target_cc", "CompileError"]


class CompileError(RuntimeError):
    """The kernel compiled into something blocksolve cannot launch as a cached cubin."""


def target_cc(target):
    """``'sm_90'`` -> ``(9, 0, 'a')``: numba-cuda's code-generation target for that device.

    From sm_90 on numba-cuda links architecture-specific ('a') code, as
    ``CUDACodeLibrary._ensure_cc`` does for the current device; cuSolverDx's
    LTO-IR is generated for the same.
    """
    number = int(target.removeprefix("sm_").rstrip("af"))
    major, minor = divmod(number, 10)
    return (major, minor, "a" if (major, minor) >= (9, 0) else "")


def compile_spec(spec, pattern):
    """Compile, link and check the kernel of ``spec`` for ``pattern``'s target.

    Parameters
    ----------
    spec : blocksolve.cuda.kernels._skeleton.KernelSpec
    pattern : blocksolve._pattern.CallPattern

    Returns
    -------
    record : dict
        JSON-able launch record: ``entry``, ``abi``, ``abi_version``,
        ``block_dim``, ``batches_per_block``, ``shared_bytes`` (dynamic),
        ``static_shared_bytes``, ``registers`` (per thread), ``outputs``
        (``[[core...], dtype.str]``),
        ``sm``, ``cubin_sha256`` and the seconds spent (``timings``).
    cubin : bytes

    Raises
    ------
    CompileError
        The kernel needs launch-time set-up numba would do (module set-up
        callbacks, cooperative launch), or was linked for another
        architecture.
    AbiMismatch
        The cubin's parameter table is not the argument layout blocksolve
        packs (a numba-cuda ABI change).
    """
    abi = _abi.kernel_abi(pattern, spec.outputs)
    cc = target_cc(pattern.target)
    timings = {}
    start = time.perf_counter()
    kernel = compile_kernel(
        spec.kernel.py_func, _abi.numba_signature(abi), spec.kernel.targetoptions
    )
    timings["typing_codegen_nvvm_s"] = time.perf_counter() - start
    library = kernel.library
    if needs_launch_setup(kernel):
        raise CompileError(
            f"{kernel.entry_name}: needs cooperative launch or module set-up "
            f"callbacks, which a cached cubin launch does not perform"
        )
    start = time.perf_counter()
    linked = library.get_cubin(cc=cc)
    timings["link_s"] = time.perf_counter() - start
    cubin = bytes(getattr(linked, "code", linked))  # numba-cuda 0.30: a cuda.core ObjectCode

    sm = _elf.sm_version(cubin)
    if sm != cc[0] * 10 + cc[1]:
        raise CompileError(f"linked for sm_{sm}, expected {pattern.target}")
    _abi.check_params(abi, _elf.kernel_params(cubin, kernel.entry_name))
    record = {
        "entry": kernel.entry_name,
        "abi": abi,
        "abi_version": _abi.ABI_VERSION,
        "block_dim": [int(x) for x in spec.block_dim],
        "batches_per_block": int(spec.batches_per_block),
        "shared_bytes": int(spec.shared_bytes),
        "static_shared_bytes": _elf.static_shared_bytes(cubin),
        "registers": _elf.registers(cubin),
        "outputs": [[list(core), np.dtype(dtype).str] for core, dtype in spec.outputs],
        "sm": sm,
        "cubin_sha256": hashlib.sha256(cubin).hexdigest(),
        "timings": {name: round(seconds, 3) for name, seconds in timings.items()},
    }
    return record, cubin
