"""The CPU backend: one generated numba kernel per call pattern."""

from __future__ import annotations

import numpy as np

from . import cholesky
from . import lu, triangular
from . import lstsq, qr
from ._jit import CACHE

__all__ = ["CpuBackend", "BUILDERS"]

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
}


class CpuBackend:
    """Runs call patterns on the host with numba kernels."""

    name = "cpu"
    target = "cpu"

    def execute(self, pattern, operands, **runtime):
        """Run ``pattern`` on flattened numpy ``operands``; return ``(*outputs, info)``.

        Operands are made C-contiguous first (a copy only for F-order or
        strided input), so each pattern compiles exactly one kernel.
        """
        run = CACHE.get(pattern, lambda p: BUILDERS[p.routine](p))
        return run(*(np.ascontiguousarray(x) for x in operands), **runtime)
