"""Steady-state speed of the CPU SVD kernels against NumPy on the same data.

Times the size-specialised kernels of :mod:`blocksolve.cpu.kernels.svd` and the
public ``pinv`` and ``matrix_rank`` (``public-*``; compiled before timing)
and ``numpy.linalg`` (and ``torch.linalg`` where installed)
on the same random matrices, and prints the ratios against NumPy: of the
wall-clock time (blocksolve on all its threads, NumPy's gufunc on one) and
of the CPU time the process spent, each the minimum over the repeats.  On
a shared machine the CPU-time ratio is the steadier one; on an idle one the
wall-clock ratio is about the thread count times it.  ``--json PATH`` also
writes the numbers.

    PYTHONPATH=. python benchmarks/svd_speed.py [--repeat 7] [--only svd-3x3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

import blocksolve
from blocksolve.cpu.kernels import svd


def _rank(a, s):
    """matrix_rank from singular values: NumPy 2's default tolerance."""
    tol = s.max(axis=-1, keepdims=True) * max(a.shape[-2:]) * np.finfo(s.dtype).eps
    return np.count_nonzero(s > tol, axis=-1)


# name -> (batch, m, n, blocksolve call, numpy call)
CASES = {
    "svd-3x3": (
        100_000,
        3,
        3,
        lambda a: svd.gesvd(a, True, False),
        lambda a: np.linalg.svd(a, full_matrices=False),
    ),
    "svdvals-3x3": (
        100_000,
        3,
        3,
        lambda a: svd.gesvd(a, False),
        lambda a: np.linalg.svd(a, compute_uv=False),
    ),
    "svd-8x8": (
        20_000,
        8,
        8,
        lambda a: svd.gesvd(a, True, False),
        lambda a: np.linalg.svd(a, full_matrices=False),
    ),
    "pinv-4x4": (
        100_000,
        4,
        4,
        lambda a: svd.pinv(a, 1e-15),  # NumPy's default rcond
        np.linalg.pinv,
    ),
    "matrix_rank-4x4": (
        100_000,
        4,
        4,
        lambda a: _rank(a, svd.gesvd(a, False)[0]),
        np.linalg.matrix_rank,
    ),
    # The public functions, whose pinv is NumPy's formula on blocksolve's svd (the fused
    # kernel above is not wired to it) and whose float32 pinv decomposes in float64.
    "public-pinv-4x4": (100_000, 4, 4, lambda a: blocksolve.pinv(a), np.linalg.pinv),
    "public-matrix_rank-4x4": (
        100_000,
        4,
        4,
        lambda a: blocksolve.matrix_rank(a),
        np.linalg.matrix_rank,
    ),
    "svd-2x2": (
        100_000,
        2,
        2,
        lambda a: svd.gesvd(a, True, False),
        lambda a: np.linalg.svd(a, full_matrices=False),
    ),
    "svd-4x4": (
        100_000,
        4,
        4,
        lambda a: svd.gesvd(a, True, False),
        lambda a: np.linalg.svd(a, full_matrices=False),
    ),
    "svdvals-8x8": (
        20_000,
        8,
        8,
        lambda a: svd.gesvd(a, False),
        lambda a: np.linalg.svd(a, compute_uv=False),
    ),
    "svd-6x3": (
        100_000,
        6,
        3,
        lambda a: svd.gesvd(a, True, False),
        lambda a: np.linalg.svd(a, full_matrices=False),
    ),
    "svd-16x16": (
        5_000,
        16,
        16,
        lambda a: svd.gesvd(a, True, False),
        lambda a: np.linalg.svd(a, full_matrices=False),
    ),
}


def best_of(call, a, repeat):
    """Least wall-clock and least process CPU time of ``call(a)`` over ``repeat`` calls."""
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        call(a)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return min(wall), min(cpu)


def _torch_call(name):
    try:
        import torch
    except ImportError:
        return None
    if name.startswith("svdvals"):
        return lambda t: torch.linalg.svdvals(t)
    if name.startswith("svd"):
        return lambda t: torch.linalg.svd(t, full_matrices=False)
    if name.startswith("pinv"):
        return lambda t: torch.linalg.pinv(t)
    return lambda t: torch.linalg.matrix_rank(t)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", nargs="*", default=None, help="case names")
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    blocksolve.set_specialization("wait")  # the public functions' kernels, not LAPACK
    rng = np.random.default_rng(0)
    dtype = np.dtype(args.dtype)
    rows = []
    print(
        f"{'case':16} {'dtype':10} {'ours ms':>8} {'numpy ms':>9} {'ratio':>6}"
        f" {'ours cpu':>9} {'numpy cpu':>10} {'cpu ratio':>9}"
    )
    for name, (batch, m, n, ours, reference) in CASES.items():
        if args.only and name not in args.only:
            continue
        a = rng.standard_normal((batch, m, n))
        if dtype.kind == "c":
            a = a + 1j * rng.standard_normal((batch, m, n))
        a = a.astype(dtype)
        ours(a[:64])  # compile (or load) the kernel first
        ours_wall, ours_cpu = best_of(ours, a, args.repeat)
        numpy_wall, numpy_cpu = best_of(reference, a, max(3, args.repeat // 2))
        row = {
            "case": name,
            "dtype": dtype.name,
            "batch": batch,
            "m": m,
            "n": n,
            "blocksolve_s": ours_wall,
            "numpy_s": numpy_wall,
            "ratio": numpy_wall / ours_wall,
            "blocksolve_cpu_s": ours_cpu,
            "numpy_cpu_s": numpy_cpu,
            "cpu_ratio": numpy_cpu / ours_cpu,
        }
        torch_call = _torch_call(name)
        if torch_call is not None:
            import torch

            t = torch.from_numpy(a)
            row["torch_s"], row["torch_cpu_s"] = best_of(torch_call, t, max(3, args.repeat // 2))
        rows.append(row)
        extra = f"  torch {row['torch_s'] * 1e3:.1f} ms" if "torch_s" in row else ""
        print(
            f"{name:16} {dtype.name:10} {ours_wall * 1e3:8.2f} {numpy_wall * 1e3:9.2f} "
            f"{row['ratio']:6.1f} {ours_cpu * 1e3:9.2f} {numpy_cpu * 1e3:10.2f} "
            f"{row['cpu_ratio']:9.1f}{extra}"
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(
                {
                    "machine": platform.processor() or platform.machine(),
                    "cpus": os.cpu_count(),
                    "load_average": os.getloadavg(),
                    "numpy": np.__version__,
                    "results": rows,
                },
                out,
                indent=1,
            )


if __name__ == "__main__":
    main()
