"""blocksolve on Dask against NumPy on Dask: a Cholesky stack on 1 and 2 worker processes.

For each worker count, a ``distributed.LocalCluster`` of single-threaded
worker processes (``BLOCKSOLVE_NUM_THREADS=1`` and one BLAS thread each, so
one worker uses one core) holds a random SPD stack, chunked along the batch,
in its memory; then ``blocksolve.cholesky(A)`` and
``A.map_blocks(numpy.linalg.cholesky)`` are each persisted and waited for,
``--repeats`` times (the kernel's first use is measured apart, per worker,
by :func:`first_call`).  For reference, the same two calls on the whole stack
in this process, eager and single-threaded.

Writes a JSON document (``--json``) with the machine, versions, load average
and every timing; prints a table.  Usage::

    python benchmarks/dask_scaling.py --batch 4000000 --n 4 --chunk 250000 \\
        --workers 1 2 --repeats 5 --json dask-scaling.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import time

# One core per worker: set before blocksolve, NumPy's BLAS or any worker starts.
for _variable in (
    "BLOCKSOLVE_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
):
    os.environ[_variable] = "1"

import numpy as np  # noqa: E402

from blocksolve.cli.workloads import spd_from  # noqa: E402 - the tests' and bench's SPD matrices

FORMAT = "blocksolve-dask-scaling/1"


def first_call(n, dtype):
    """Seconds for this process's first blocksolve call of the benchmark's pattern.

    Run on every worker with ``client.run``: it compiles the kernel (cold
    disk cache) or loads it (warm), so it is also how to pre-warm workers.
    """
    import blocksolve

    start = time.perf_counter()
    blocksolve.cholesky(np.broadcast_to(np.eye(n, dtype=dtype), (2, n, n)))
    return time.perf_counter() - start


def _timed(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return {"min_s": min(times), "median_s": statistics.median(times), "times_s": times}


def _lazy_calls(A):
    import blocksolve

    return {
        "blocksolve": lambda: blocksolve.cholesky(A),
        "numpy": lambda: A.map_blocks(np.linalg.cholesky, dtype=A.dtype),
    }


def run_cluster(workers, batch, n, chunk, dtype, repeats):
    """Timings on a LocalCluster of ``workers`` single-threaded processes."""
    import dask.array as da
    from dask.graph_manipulation import clone
    from distributed import Client, LocalCluster, wait

    start = time.perf_counter()
    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.CRITICAL,
        ) as cluster,
        Client(cluster) as client,
    ):
        started = time.perf_counter() - start
        first = client.run(first_call, n, dtype)
        rng = da.random.default_rng(0)
        A = rng.standard_normal((batch, n, n), chunks=(chunk, n, n), dtype=dtype)
        A = client.persist(A.map_blocks(spd_from, dtype=dtype))
        wait(A)
        rows = {}
        for library, make in _lazy_calls(A).items():
            seeds = iter(range(repeats + 1))

            def run(make=make, seeds=seeds):  # new keys each time (clone): none in memory yet
                result = client.persist(clone(make(), omit=A, seed=next(seeds)))
                wait(result)
                del result

            run()  # untimed: the first task graph of its kind
            rows[library] = _timed(run, repeats)
        L = _lazy_calls(A)["blocksolve"]()
        block, reference = client.compute([L.blocks[0], A.blocks[0]], sync=True)
        np.testing.assert_allclose(block, np.linalg.cholesky(reference), rtol=1e-10, atol=1e-12)
    return {
        "workers": workers,
        "cluster_start_s": started,
        "first_call_s": sorted(first.values()),
        "libraries": rows,
    }


def first_use(workers, n, dtype):
    """Per-worker seconds of the first blocksolve call, from a cold and a warm disk cache.

    ``cold, every worker``: each worker compiles the kernel itself, all at
    once; ``cold, one worker first``: one compiles, the others then load its
    disk-cache entry; ``warm``: new worker processes, the kernel on disk.
    """
    import tempfile

    from distributed import Client, LocalCluster

    def cluster():
        return LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.CRITICAL,
        )

    results = {}
    saved = os.environ.get("BLOCKSOLVE_CACHE_DIR")
    try:
        for order in ("cold, every worker", "cold, one worker first"):
            with tempfile.TemporaryDirectory() as cache:
                os.environ["BLOCKSOLVE_CACHE_DIR"] = cache  # inherited by the workers
                with cluster() as c, Client(c) as client:
                    names = sorted(client.scheduler_info()["workers"])
                    if order == "cold, one worker first":
                        first = client.run(first_call, n, dtype, workers=names[:1])
                        first.update(client.run(first_call, n, dtype, workers=names[1:]))
                    else:
                        first = client.run(first_call, n, dtype)
                    results[order] = [first[name] for name in names]
                if order == "cold, one worker first":
                    with cluster() as c, Client(c) as client:
                        results["warm"] = sorted(client.run(first_call, n, dtype).values())
    finally:
        if saved is None:
            os.environ.pop("BLOCKSOLVE_CACHE_DIR", None)
        else:
            os.environ["BLOCKSOLVE_CACHE_DIR"] = saved
    return results


def run_eager(batch, n, dtype, repeats):
    """Both libraries on the whole stack in this process, one thread (the reference)."""
    import blocksolve

    rng = np.random.default_rng(0)
    a = spd_from(rng.standard_normal((batch, n, n)).astype(dtype))
    first = first_call(n, dtype)
    rows = {
        "blocksolve": _timed(lambda: blocksolve.cholesky(a), repeats),
        "numpy": _timed(lambda: np.linalg.cholesky(a), repeats),
    }
    return {"first_call_s": [first], "libraries": rows}


def _environment():
    from blocksolve.cli.info import environment

    env = environment()
    env["loadavg_before"] = os.getloadavg()
    return env


def measure(batch, n, chunk, workers=(1, 2), dtype="float64", repeats=5, eager=True, first=True):
    """The whole benchmark as one JSON-able dict."""
    import dask
    import distributed

    document = {
        "format": FORMAT,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "case": {
            "op": "cholesky",
            "n": n,
            "dtype": dtype,
            "batch": batch,
            "chunk": chunk,
            "nbytes": batch * n * n * np.dtype(dtype).itemsize,
        },
        "environment": _environment(),
        "dask": dask.__version__,
        "distributed": distributed.__version__,
        "runs": [],
    }
    if eager:
        document["eager"] = run_eager(batch, n, dtype, repeats)
    for count in workers:
        document["runs"].append(run_cluster(count, batch, n, chunk, dtype, repeats))
    if first:
        document["first_use"] = {
            "workers": max(workers),
            "seconds": first_use(max(workers), n, dtype),
        }
    document["loadavg_after"] = os.getloadavg()
    return document


def table(document):
    """The timings as text: minimum (median) seconds, and each library's 1 -> k speed-up."""
    lines = [f"{'where':<24}{'library':<12}{'min s':>9}{'median s':>10}{'vs 1 worker':>13}"]
    if "eager" in document:
        for library, t in document["eager"]["libraries"].items():
            lines.append(
                f"{'one call, 1 thread':<24}{library:<12}{t['min_s']:>9.3f}"
                f"{t['median_s']:>10.3f}{'':>13}"
            )
    base = {}
    for run in document["runs"]:
        for library, t in run["libraries"].items():
            base.setdefault(library, t["min_s"])
            lines.append(
                f"{str(run['workers']) + ' worker process(es)':<24}{library:<12}"
                f"{t['min_s']:>9.3f}{t['median_s']:>10.3f}"
                f"{base[library] / t['min_s']:>12.2f}x"
            )
    return "\n".join(lines)


def report(document):
    """:func:`table` plus cluster start, first use per worker and load, as text."""
    lines = [table(document)]
    for run in document["runs"]:
        lines.append(
            f"{run['workers']} worker(s): cluster start {run['cluster_start_s']:.1f} s, "
            "first blocksolve call per worker "
            + ", ".join(f"{t:.2f} s" for t in run["first_call_s"])
        )
    for order, seconds in document.get("first_use", {}).get("seconds", {}).items():
        lines.append(
            f"first blocksolve call per worker, {order}: "
            + ", ".join(f"{t:.2f} s" for t in seconds)
        )
    before = ", ".join(f"{x:.2f}" for x in document["environment"]["loadavg_before"])
    after = ", ".join(f"{x:.2f}" for x in document["loadavg_after"])
    lines.append(f"load average (1, 5, 15 min) before {before}; after {after}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=4_000_000)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--chunk", type=int, default=250_000)
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-eager", action="store_true", help="skip the one-call reference")
    parser.add_argument(
        "--no-first-use",
        action="store_true",
        help="skip the per-worker first-call measurement (cold/warm cache)",
    )
    parser.add_argument("--json", help="write the results here")
    parser.add_argument(
        "--show", nargs="+", metavar="JSON", help="print recorded results instead of measuring"
    )
    args = parser.parse_args(argv)
    if args.show:
        for path in args.show:
            with open(path, encoding="utf-8") as recorded:
                document = json.load(recorded)
            case = document["case"]
            print(
                f"{path}: cholesky {case['batch']} x {case['n']}x{case['n']} {case['dtype']}, "
                f"chunks of {case['chunk']}, {document['created']}"
            )
            print(report(document), end="\n\n")
        return
    document = measure(
        args.batch,
        args.n,
        args.chunk,
        args.workers,
        args.dtype,
        args.repeats,
        eager=not args.no_eager,
        first=not args.no_first_use,
    )
    print(report(document))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=1)


if __name__ == "__main__":
    main()
