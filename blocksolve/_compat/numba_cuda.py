"""numba-cuda's private API that blocksolve's CUDA backend uses.

Checked on numba-cuda 0.30.0 through 0.30.4 (the range ``pyproject.toml``
allows), with numba 0.68:

- ``numba.cuda.dispatcher._Kernel(py_func, argtypes, **targetoptions)``: what
  ``Dispatcher.compile`` builds, without binding it to a device
  (:func:`compile_kernel`); its ``library.get_cubin(cc=)``, ``cooperative``,
  ``entry_name``, and the library's ``_setup_functions`` and
  ``_teardown_functions`` (:func:`needs_launch_setup`);
- the argument layout ``_Kernel._prepare_args`` passes, which
  :mod:`blocksolve.cuda._abi` packs itself to launch a cached cubin: every array
  becomes ``meminfo, parent, nitems, itemsize, data, shape..., strides...``;
- ``numba.cuda.simulator.cudadrv.devicearray.FakeCUDAArray``, the simulator's
  device array (:func:`simulator_array`).

Importing anything here needs numba-cuda.  ``tests/test_compat.py`` checks the
names; the code-generation tests (``pytest -m codegen``) compare the packed
launch arguments with numba-cuda's own launcher byte for byte.
"""

from __future__ import annotations

__all__ = ["CHECKED", "compile_kernel", "needs_launch_setup", "simulator_array"]

CHECKED = ("0.30.0", "0.30.4")


def compile_kernel(py_func, argtypes, targetoptions):
    """numba-cuda's kernel of ``py_func`` for ``argtypes``: typed, generated and compiled
    by NVVM, not yet linked or loaded (``.library.get_cubin(cc=...)`` links it)."""
    from numba.cuda.dispatcher import _Kernel

    return _Kernel(py_func, argtypes, **targetoptions)


def needs_launch_setup(kernel):
    """Whether ``kernel`` needs what a launch outside numba does not do: a cooperative
    launch, or module set-up and tear-down callbacks."""
    library = kernel.library
    return bool(
        kernel.cooperative
        or getattr(library, "_setup_functions", None)
        or getattr(library, "_teardown_functions", None)
    )


def simulator_array(x):
    """``x`` (host memory) as the CUDA simulator's device array."""
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    return FakeCUDAArray(x)
