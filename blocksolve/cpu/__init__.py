"""The CPU backend: one generated numba kernel per call pattern (NumPy's
LAPACK for the large sizes where it is faster, see :mod:`._lapack`)."""

from __future__ import annotations

import numpy as np

from . import cholesky
from . import lu, triangular
from . import lstsq, qr
from . import _lapack
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


def _build(pattern):
    return _lapack.wrap(pattern, BUILDERS[pattern.routine](pattern))


class CpuBackend:
    """Runs call patterns on the host with numba kernels."""

    name = "cpu"
    target = "cpu"

    def execute(self, pattern, operands, **runtime):
        """Run ``pattern`` on flattened numpy ``operands``; return ``(*outputs, info)``.

        Operands are made C-contiguous first (a copy only for F-order or
        strided input), so each pattern compiles exactly one kernel.
        """
        run = CACHE.get(pattern, _build)
        return run(*(np.ascontiguousarray(x) for x in operands), **runtime)
