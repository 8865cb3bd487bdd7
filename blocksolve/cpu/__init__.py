"""The CPU backend: one generated numba kernel per call pattern, NumPy's and SciPy's
LAPACK for the calls a kernel does not pay for or is not compiled for yet.

Each op family has one module here (``cholesky``, ``lu``, ``qr``, ...) declaring
its routines -- kernel builder, LAPACK runner, crossover sizes -- in a
``ROUTINES`` mapping (:class:`~blocksolve.cpu._routine.CpuRoutine`); the backend
finds them through :func:`blocksolve._registry.routines`.  Kernels compile in a
background process while LAPACK answers (:mod:`blocksolve.cpu._compiled`).
"""

from __future__ import annotations

from .._registry import routines
from . import _background
from ._compiled import set_specialization, specialization
from ._jit import CACHE
from ._routine import runner

__all__ = ["CpuBackend", "ROUTINES", "set_specialization", "specialization", "wait_for_kernels"]

ROUTINES = routines(__name__)


def wait_for_kernels(timeout=None):
    """Wait until the CPU kernels compiling in the background are ready.

    A call whose kernel is not compiled yet runs on NumPy's or SciPy's LAPACK
    while the kernel compiles in a background process (see
    :func:`set_specialization`); this waits for all of those.

    Parameters
    ----------
    timeout : float, optional
        Seconds to wait at most; default: as long as it takes.

    Returns
    -------
    bool
        True when nothing is left compiling, False on timeout.

    Examples
    --------
    >>> import numpy as np, blocksolve
    >>> L = blocksolve.cholesky(np.eye(3)[None].repeat(8, axis=0))  # may start a compilation
    >>> blocksolve.wait_for_kernels()
    True
    """
    return _background.wait(timeout)


def _build(pattern):
    return runner(ROUTINES[pattern.routine], pattern)


class CpuBackend:
    """Runs call patterns on the host."""

    name = "cpu"
    target = "cpu"

    def runner(self, pattern):
        """``run(operands, runtime) -> (*outputs, info)`` of ``pattern`` over flattened
        ``(batch, *core)`` numpy operands."""
        return CACHE.get(pattern, _build)

    def execute(self, pattern, operands, **runtime):
        """Run ``pattern`` on flattened ``(batch, *core)`` numpy ``operands``; return
        ``(*outputs, info)``."""
        return self.runner(pattern)(operands, runtime)

    def target_of(self, operands):
        """The target of every CPU call pattern."""
        return self.target
