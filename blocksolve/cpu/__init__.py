"""The CPU backend: one generated numba kernel per call pattern (NumPy's
LAPACK for the large sizes where it is faster, see :mod:`._lapack`).

Kernels come in two tiers (:mod:`._tiers`): a new pattern runs at once on its
family's kernel with run-time sizes, while the kernel specialised on its
sizes compiles in a background process (:mod:`._background`).

A pattern's first call in a family whose runner does not depend on the sizes
(:data:`RUN_TIME_SIZED`) takes the family's runner as it is; the pattern's own
runner, and with it the hand-off of its specialised kernel, waits for a
second call: the first call of a new size is as cheap as the family's
bookkeeping allows, and a size used once is never compiled.
"""

from __future__ import annotations

import numpy as np

from . import cholesky
from . import lu, triangular
from . import lstsq, qr
from . import determinant, eigh, inverse, positive
from . import _background, _lapack
from ._jit import CACHE
from ._tiers import set_specialization, specialization

__all__ = ["CpuBackend", "BUILDERS", "set_specialization", "wait_for_kernels"]

# routine -> builder(pattern) -> run(*operands) -> (*outputs, info)
BUILDERS = {
    "potrf": cholesky.potrf,
    "potrs": cholesky.potrs,
    "getrf": lu.getrf,
    "getrs": lu.getrs,
    "gesv": lu.gesv,
    "trsm": triangular.trsm,
    "geqrf": qr.geqrf,
    "gels": lstsq.gels,
    "heev": eigh.heev,
    "getri": inverse.getri,
    "getrf_det": determinant.getrf_det,
    "posv": positive.posv,
}


def wait_for_kernels(timeout=None):
    """Wait until the CPU kernels compiling in the background are in use.

    A new call pattern runs at once on a kernel that takes its sizes at run
    time while, from the pattern's second call, the kernel specialised on its
    sizes compiles in a background process (see :func:`set_specialization`);
    this waits for all of those.

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
    >>> L = blocksolve.cholesky(np.eye(3))   # may start a background compilation
    >>> blocksolve.wait_for_kernels()
    True
    """
    return _background.wait(timeout)


# Routines whose builder, given the pattern's sizes as 0 (read at run time),
# returns a runner for every size its generic kernel runs: all that use
# ``_tiers.sized`` and read no other size (getrf, geqrf and gels choose kernels
# and output shapes by size).
RUN_TIME_SIZED = frozenset({"potrf", "potrs", "getrs", "gesv", "trsm", "heev", "getri",
                            "getrf_det", "posv"})


def _build(pattern):
    return _lapack.wrap(pattern, BUILDERS[pattern.routine](pattern))


class CpuBackend:
    """Runs call patterns on the host with numba kernels."""

    name = "cpu"
    target = "cpu"

    def __init__(self):
        self._called_once = set()  # patterns whose first call took their family's runner

    def execute(self, pattern, operands, **runtime):
        """Run ``pattern`` on flattened numpy ``operands``; return ``(*outputs, info)``.

        Operands are made C-contiguous and writeable first (a copy only for
        F-order, strided or read-only input): numba types read-only arrays
        apart, and one signature per kernel keeps every kernel to one
        compilation (the generic ones in particular, which must be warm).
        """
        run = CACHE.lookup(pattern)
        if run is None:
            run = self._first_call_runner(pattern, operands[0].shape[0]) or \
                CACHE.get(pattern, _build)
        return run(*map(_kernel_operand, operands), **runtime)

    def _first_call_runner(self, pattern, batch):
        """The family's runner for the first call of ``pattern`` on ``batch`` matrices,
        or None.

        Only where it runs what the pattern's own runner would run on its first
        call (the generic kernel: not LAPACK, not when waiting for specialised
        kernels), so the results are the same bit for bit.
        """
        if pattern.routine not in RUN_TIME_SIZED or pattern in self._called_once or \
                specialization() == "wait" or _lapack.takes(pattern, batch):
            return None
        self._called_once.add(pattern)
        return CACHE.get(pattern.with_run_time_sizes(), _build)


def _kernel_operand(x):
    x = np.ascontiguousarray(x)
    return x if x.flags.writeable else x.copy()
