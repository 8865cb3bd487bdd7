"""The CUDA backend (see :mod:`blocksolve.cuda._backend`); its kernels are in
:mod:`blocksolve.cuda.kernels`."""

from ._backend import (
    PLANS,
    CudaBackend,
    Routine,
    gpu_backend,
    probe_driver,
    register,
    register_on_host,
)

__all__ = [
    "Routine",
    "register",
    "register_on_host",
    "gpu_backend",
    "CudaBackend",
    "PLANS",
    "probe_driver",
]
