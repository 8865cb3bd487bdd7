"""What the CUDA backend's cached artefacts depend on, cheaply.

Cache keys mix in the versions of everything that generates, links or runs
the cached code, and a digest of blocksolve's own sources that shape it.
Everything here is read from package metadata, the driver (through cupy) and
the source files: nothing imports numba.cuda or nvmath, so a process that
finds its kernels cached never pays for those imports.
"""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

from .._cache import memo

__all__ = ["package_versions", "driver_version", "source_digest"]

# Distributions whose code ends up in, or produces, a linked cuSolverDx kernel.
# Either libmathdx build may be installed; NVRTC/NVVM/nvJitLink may come from
# wheels or from a system toolkit (then their wheel version is None).
_DISTRIBUTIONS = (
    "nvmath-python",
    "nvidia-libmathdx-cu13",
    "nvidia-libmathdx-cu12",
    "numba-cuda",
    "nvidia-cuda-nvrtc",
    "nvidia-nvvm",
    "nvidia-nvjitlink",
    "cuda-bindings",
)

_BLOCKSOLVE_DIR = Path(__file__).resolve().parent.parent


@memo("cuda-package-versions", maxsize=1)
def package_versions():
    """``{distribution: version or None}`` of the CUDA toolchain packages."""
    versions = {}
    for name in _DISTRIBUTIONS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


@memo("cuda-driver-version", maxsize=1)
def driver_version():
    """The CUDA driver's version (e.g. 13000), or ``None`` without a usable driver."""
    try:
        import cupy

        return int(cupy.cuda.runtime.driverGetVersion())
    except Exception:  # no cupy, no driver: nothing runs either
        return None


@memo("cuda-source-digest", maxsize=16)
def source_digest(*paths):
    """SHA-256 of blocksolve source files.

    Parameters
    ----------
    *paths : str
        Relative to the ``blocksolve`` package: a file (``'_op.py'``), a
        folder (``'cuda'``: every ``.py`` file in it and its sub-folders) or a
        pattern (``'cuda/kernels/[!_]*.py'``).
    """
    files = []
    for relative in paths:
        path = _BLOCKSOLVE_DIR / relative
        found = sorted(path.rglob("*.py") if path.is_dir() else _BLOCKSOLVE_DIR.glob(relative))
        if not found:
            raise FileNotFoundError(f"no blocksolve source matches {relative!r}")
        files += found
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(_BLOCKSOLVE_DIR)).encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()
