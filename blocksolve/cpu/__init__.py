"""The CPU backend (see :mod:`blocksolve.cpu._backend`); its kernels are in
:mod:`blocksolve.cpu.kernels`."""

from ._backend import RUNNERS, CpuBackend, Routine, register, wait_for_kernels
from ._compiled import set_specialization, specialization

__all__ = [
    "Routine",
    "register",
    "CpuBackend",
    "RUNNERS",
    "set_specialization",
    "specialization",
    "wait_for_kernels",
]
