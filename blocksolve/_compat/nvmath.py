"""nvmath-python's private API that blocksolve uses.

Checked on nvmath-python 1.0.0 and 1.0.1 (the range ``pyproject.toml`` allows):

- ``nvmath.device.cusolverdx_numba.compile_solver_execute(solver, code_type,
  execution_api)`` (and its twin in ``cusolverdx_numba_cuda_mlir``): the call
  through which nvmath's numba glue generates a cuSolverDx function's LTO-IR
  each time a kernel using it is typed.  blocksolve wraps it with its disk
  cache of generated code (:mod:`blocksolve.cuda._code_cache`).
- ``nvmath.device.common_cuda.Code`` and ``ISAVersion``: what that call returns.
- ``nvmath._utils.get_nvrtc_version()``: the NVRTC nvmath loads (part of the
  generated code's cache key).

Importing anything here needs nvmath-python, whose device API needs a CUDA
driver (the code-generation tests provide a stub one).
"""

from __future__ import annotations

import sys

__all__ = ["CHECKED", "GLUE_MODULES", "wrap_solver_codegen", "nvrtc_version"]

CHECKED = ("1.0.0", "1.0.1")

# The numba-cuda glue, and the numba-cuda-mlir one when nvmath loaded it.
GLUE_MODULES = ("nvmath.device.cusolverdx_numba", "nvmath.device.cusolverdx_numba_cuda_mlir")


def wrap_solver_codegen(wrap):
    """Route nvmath's cuSolverDx code generation through ``wrap`` (idempotent).

    ``wrap(compile_solver_execute, make_code)`` returns a drop-in replacement of
    nvmath's ``compile_solver_execute``; ``make_code(code_type, isa_version,
    data)`` rebuilds the ``Code`` object it returns from cached parts.
    """
    from nvmath.device.common_cuda import Code, ISAVersion  # loads nvmath's numba glue

    def make_code(code_type, isa_version, data):
        return Code(code_type, ISAVersion(*isa_version), data)

    for name in GLUE_MODULES:
        glue = sys.modules.get(name)
        current = getattr(glue, "compile_solver_execute", None)
        if current is None or getattr(current, "__wrapped_by_blocksolve__", False):
            continue
        wrapped = wrap(current, make_code)
        wrapped.__wrapped_by_blocksolve__ = True
        glue.compile_solver_execute = wrapped


def nvrtc_version():
    """``(major, minor)`` of the NVRTC nvmath loads (it may come from a system toolkit), or
    None where there is none."""
    try:
        from nvmath._utils import get_nvrtc_version
    except ImportError:  # pragma: no cover - nvmath without the function: no key part
        return None
    try:
        return list(get_nvrtc_version())
    except Exception:  # pragma: no cover - only without a CUDA toolkit
        return None
