"""What this machine offers blocksolve: package versions, CPUs, GPUs, kernel cache.

Used by ``python -m blocksolve info`` and stamped into every benchmark
result.  Nothing here imports a GPU library unless it is installed, and
nothing initialises CUDA where there is no driver: versions come from the
package metadata, GPUs from ``cupy.cuda.is_available()`` (or numba-cuda's
``is_available()`` when cupy is absent).  ``nvmath.device`` is never
imported (it raises without a driver).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import sys

from .. import __version__, cache_dir, cache_info
from ..cpu._jit import num_threads
from .constraints import read_constraints

__all__ = ["versions", "cpu_info", "gpu_info", "environment", "cuda_stack"]


# Distributions reported by `info`, in display order.  cupy is looked up by
# its import name because its distribution is named after the CUDA version.
_DISTRIBUTIONS = (
    "blocksolve",
    "numpy",
    "scipy",
    "numba",
    "llvmlite",
    "numba-cuda",
    "nvmath-python",
    "nvidia-libmathdx-cu13",
    "cuda-bindings",
    "cuda-pathfinder",
    "array-api-compat",
    "cupy",
    "torch",
    "pytest-benchmark",
    "matplotlib",
)


def _distribution_version(name):
    candidates = [name]
    if name == "cupy":
        candidates = importlib.metadata.packages_distributions().get("cupy", []) or ["cupy"]
    for candidate in candidates:
        try:
            return candidate, importlib.metadata.version(candidate)
        except importlib.metadata.PackageNotFoundError:
            continue
    return name, None


def versions():
    """``{distribution: version or None}`` for the packages blocksolve uses or compares with."""
    found = {}
    for name in _DISTRIBUTIONS:
        dist, version = _distribution_version(name)
        found[dist] = version
    if found.get("blocksolve") is None:  # running from a source tree that is not installed
        found["blocksolve"] = __version__
    return found


def cuda_stack():
    """The CUDA stack against its last full verification.

    Returns
    -------
    dict
        ``{"verified": what was verified, "also_verified": at the other end of the
        supported range, "packages": [{"name", "installed", "verified"}, ...]}``, one
        entry per package of ``blocksolve/cuda/constraints.txt``.
    """
    pinned, note, also = read_constraints()
    packages = [
        {"name": name, "installed": _distribution_version(name)[1], "verified": version}
        for name, version in pinned.items()
    ]
    return {"verified": note, "also_verified": also, "packages": packages}


def _cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_info():
    """CPU model, logical CPU count, the CPUs this process may use, blocksolve's threads."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "model": _cpu_model(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": usable,
        "blocksolve_threads": num_threads(),
    }


def _gpus_from_cupy():
    import cupy

    if not cupy.cuda.is_available():
        return [], "no CUDA device or driver (cupy.cuda.is_available() is False)"
    runtime = cupy.cuda.runtime
    gpus = []
    for index in range(runtime.getDeviceCount()):
        props = runtime.getDeviceProperties(index)
        name = props["name"]
        gpus.append(
            {
                "index": index,
                "name": name.decode() if isinstance(name, bytes) else str(name),
                "compute_capability": f"{props['major']}.{props['minor']}",
                "memory_gib": round(props["totalGlobalMem"] / 2**30, 1),
                "multiprocessors": props["multiProcessorCount"],
                "driver_cuda_version": _cuda_version(runtime.driverGetVersion()),
                "runtime_cuda_version": _cuda_version(runtime.runtimeGetVersion()),
            }
        )
    return gpus, None


def _gpus_from_numba():
    from numba import cuda

    if not cuda.is_available():
        return [], "no CUDA device or driver (numba.cuda.is_available() is False)"
    gpus = []
    for index, device in enumerate(cuda.gpus):
        with device:
            current = cuda.get_current_device()
            name = current.name
            gpus.append(
                {
                    "index": index,
                    "name": name.decode() if isinstance(name, bytes) else str(name),
                    "compute_capability": "{}.{}".format(*current.compute_capability),
                }
            )
    return gpus, None


def _cuda_version(code):
    return f"{code // 1000}.{code % 1000 // 10}"


def gpu_info():
    """``(gpus, why_none)``: a list of GPU descriptions, and a reason when it is empty."""
    if importlib.util.find_spec("cupy") is not None:
        probe = _gpus_from_cupy
    elif importlib.util.find_spec("numba") is not None and _has_numba_cuda():
        probe = _gpus_from_numba
    else:
        return [], "neither cupy nor numba-cuda is installed"
    try:
        return probe()
    except Exception as error:  # a broken driver must not break `info`
        return [], f"GPU query failed: {type(error).__name__}: {error}"


def _has_numba_cuda():
    try:
        return importlib.util.find_spec("numba.cuda") is not None
    except (ImportError, ValueError):
        return False


def environment():
    """Everything above plus Python, platform and the kernel cache, as one JSON-able dict."""
    gpus, why = gpu_info()
    return {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "executable": sys.executable,
        "platform": platform.platform(),
        "versions": versions(),
        "cuda_stack": cuda_stack(),
        "cpu": cpu_info(),
        "gpus": gpus,
        "gpu_note": why,
        "cache": {"dir": str(cache_dir()), **cache_info()},
    }
