"""blocksolve: NumPy/SciPy-style linear algebra on stacks of small matrices.

Every function takes ``(..., M, N)`` stacks, broadcasts batch dimensions like
a NumPy gufunc, and runs one generated kernel per call pattern: numba on the
CPU, cuSolverDx (through nvmath-python) on NVIDIA GPUs.

Every function also accepts three keywords:

``errors`` : {'raise', 'warn', 'nan', 'ignore'}
    What to do with matrices that fail (not positive definite, exactly
    singular; for :func:`lstsq`, an inf or NaN).  Default: the reference
    library's behaviour (raise, or warn for :func:`lu_factor`), or the
    policy set by :func:`errstate`.
``return_info`` : bool
    Return ``(result, info)`` with the per-matrix int32 status array (0 =
    success, LAPACK meaning otherwise) instead of applying the policy;
    nothing then waits for a GPU but :func:`lu_solve`'s check of its pivots
    and the SciPy-named functions' ``check_finite=True`` (pass ``False``).
``stream`` : CUDA stream
    For a call that runs on a GPU, the stream to run it on (default: CuPy's
    current stream; torch's for torch tensors).
"""

from . import linalg  # the Array API standard's spellings
from ._backends import use_device
from ._cache import cache_dir, cache_info, clear_cache
from ._errors import CacheWarning, LinAlgError, LinAlgWarning, errstate, geterrors
from ._linalg import (
    EighResult,
    LstsqResult,
    QRResult,
    SlogdetResult,
    cho_factor,
    cho_solve,
    cholesky,
    det,
    eigh,
    eigvalsh,
    inv,
    lstsq,
    lu_factor,
    lu_solve,
    qr,
    slogdet,
    solve,
    solve_triangular,
)
from ._linalg_svd import SVDResult, cond, matrix_rank, pinv, polar, svd, svdvals
from .cpu import set_specialization, wait_for_kernels

__version__ = "0.1.0"

__all__ = [
    "cholesky",
    "cho_factor",
    "cho_solve",
    "lu_factor",
    "lu_solve",
    "solve",
    "solve_triangular",
    "qr",
    "lstsq",
    "QRResult",
    "LstsqResult",
    "eigh",
    "eigvalsh",
    "inv",
    "det",
    "slogdet",
    "EighResult",
    "SlogdetResult",
    "svd",
    "svdvals",
    "pinv",
    "matrix_rank",
    "cond",
    "polar",
    "SVDResult",
    "LinAlgError",
    "LinAlgWarning",
    "errstate",
    "geterrors",
    "use_device",
    "cache_info",
    "clear_cache",
    "cache_dir",
    "CacheWarning",
    "set_specialization",
    "wait_for_kernels",
    "linalg",
    "__version__",
]
