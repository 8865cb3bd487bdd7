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

from . import linalg, ops  # ops first declares every op; linalg: the Array API's spellings
from ._backends import use_device
from ._cache import cache_dir, cache_info, clear_cache
from ._errors import CacheWarning, LinAlgError, LinAlgWarning, errstate, geterrors
from .cpu import set_specialization, wait_for_kernels
from .ops import *  # noqa: F403 - every op family's public names (ops.__all__)

__version__ = "0.1.0"

__all__ = [
    *ops.__all__,
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
