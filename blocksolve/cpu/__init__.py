"""The CPU backend: one generated numba kernel per call pattern (NumPy's
LAPACK for the large sizes where it is faster, see :mod:`._lapack`).

Kernels come in two tiers (:mod:`._tiers`): a new pattern runs at once on its
family's kernel with run-time sizes, while the kernel specialised on its
sizes compiles in a background process (:mod:`._background`).

The first call of new sizes takes the runner of their family (the pattern
with its sizes 0: every size, on the run-time-size kernels, or on NumPy's
LAPACK where a call of those sizes takes it, :meth:`CpuBackend.every_size_runner`);
the pattern's own runner, and with it the hand-off of its specialised kernel,
waits for a second call: the first call of a new size makes no call pattern
and builds nothing, and a size used once is never compiled.
"""

from __future__ import annotations

import numpy as np

from . import (
    _background,
    _lapack,
    cholesky,
    determinant,
    eigh,
    inverse,
    lstsq,
    lu,
    positive,
    qr,
    triangular,
)
from ._jit import CACHE
from ._tiers import set_specialization, specialization

__all__ = ["CpuBackend", "BUILDERS", "set_specialization", "wait_for_kernels"]

# routine -> builder(pattern) -> run(*operands) -> (*outputs, info).  Every runner reads
# its sizes from the operands; given a pattern with sizes 0 (its family's pattern), a
# builder returns the runner of every size, on the kernels that take their sizes at
# run time -- what a pattern's own runner runs until its specialised kernel is ready.
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


def _build(pattern):
    return _lapack.wrap(pattern, BUILDERS[pattern.routine](pattern))


class CpuBackend:
    """Runs call patterns on the host with numba kernels."""

    name = "cpu"
    target = "cpu"

    def execute(self, pattern, operands, **runtime):
        """Run ``pattern`` on flattened numpy ``operands``; return ``(*outputs, info)``.

        Operands are made C-contiguous and writeable first (a copy only for
        F-order, strided or read-only input): numba types read-only arrays
        apart, and one signature per kernel keeps every kernel to one
        compilation (the generic ones in particular, which must be warm).
        """
        return _run(CACHE.get(pattern, _build), operands, runtime)

    def target_of(self, operands):
        """The target of every CPU call pattern."""
        return self.target

    def every_size_runner(self, pattern):
        """``run(operands, runtime)`` for the first call of any sizes of ``pattern``'s
        routine, dtype, options and layouts: ``(*outputs, info)`` as :meth:`execute`, or
        None when the call must run its own pattern's runner.

        It runs the runner of the family's pattern (every size 0, see
        :data:`BUILDERS`), which runs what the pattern's own runner would run on
        its first call -- NumPy's LAPACK where it takes the call (see
        :func:`._lapack.wrap`), else the generic kernel -- so the results are the
        same bit for bit; from the second call of the sizes on, the pattern's own
        runner (and with it the background compilation of its specialised
        kernel) takes over.  When waiting for specialised kernels, every call
        runs its pattern's runner.  Its first call starts the background
        compiler (see :func:`._background.start`), whose first job the second
        call of these sizes is likely to send.
        """
        family, run = pattern.with_run_time_sizes(), None

        def run_every_size(operands, runtime):
            nonlocal run
            mode = specialization()
            if mode == "wait":
                return None
            if run is None:  # built on first use: waiting, nothing runs it
                run = CACHE.get(family, _build)
                if mode == "background":
                    _background.start()
            return run(*map(_kernel_operand, operands), **runtime)

        return run_every_size


def _run(run, operands, runtime):
    return run(*map(_kernel_operand, operands), **runtime)


def _kernel_operand(x):
    x = np.ascontiguousarray(x)
    return x if x.flags.writeable else x.copy()
