"""Measure, per CPU routine NumPy also has and per size, the fewest matrices per call
from which blocksolve's generated kernel beats NumPy's LAPACK
(each routine's ``kernel_from_batch`` in ``blocksolve/cpu/<family>.py`` holds the
result).

Both sides run through the same public function, so they pay the same
per-call cost; only the runner differs: the table is set so that every
call takes the kernel, then so that every call takes LAPACK.  Specialised
kernels (``set_specialization('wait')``), the default thread count, best of
``--repeat`` calls each.

Usage::

    python benchmarks/lapack_crossover.py                     # all routines, float64
    python benchmarks/lapack_crossover.py --routines gesv --sizes 16 32 --json out.json
    python benchmarks/lapack_crossover.py --combine run1.json run2.json  # several runs

``--combine`` takes the geometric mean of each ratio over the runs' files
(a routine and size measured in several) and prints the thresholds of that.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time

import numpy as np

import blocksolve
from blocksolve import clear_cache
from blocksolve.cpu import _backend as _routine
from blocksolve.cpu._backend import ROUTINES

# routine -> the public call that runs it on a batch of well-conditioned SPD matrices
CALLS = {
    "potrf": lambda a: blocksolve.cholesky(a),
    "gesv": lambda a: blocksolve.solve(a, a[..., :1]),
    "geqrf": lambda a: blocksolve.qr(a),
    "getri": lambda a: blocksolve.inv(a),
    "getrf_det": lambda a: blocksolve.det(a),
    "heev": lambda a: blocksolve.eigh(a),
    "gels": lambda a: blocksolve.lstsq(a, a[..., :1]),
}
BATCHES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128, 256)


def _force(routine, declared, fewest):
    """Make every call of ``routine`` take LAPACK (``math.inf``) or the kernel (1); drop the
    built runners so the choice is made again."""
    _routine.KERNEL_FROM_BATCH = 1
    ROUTINES[routine] = dataclasses.replace(
        declared, lapack_from=math.inf, kernel_from_batch=((0, fewest),)
    )
    clear_cache()


def _best(call, a, repeat):
    call(a)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call(a)
        times.append(time.perf_counter() - start)
    return min(times)


def measure(routine, n, dtype, repeat, rng):
    """``[(batch, kernel_s, lapack_s), ...]`` and the fewest matrices per call from which
    the kernel should run (``math.inf``: never), see :func:`threshold`."""
    rows, declared = [], ROUTINES[routine]
    for batch in BATCHES:
        x = rng.standard_normal((batch, n, n)).astype(dtype)
        a = x @ np.swapaxes(x, -1, -2) + n * np.eye(n, dtype=dtype)
        _force(routine, declared, 1)
        kernel = _best(CALLS[routine], a, repeat)
        _force(routine, declared, math.inf)
        lapack = _best(CALLS[routine], a, repeat)
        rows.append((batch, kernel, lapack))
    return rows, threshold(rows)


def threshold(rows):
    """The batch size from which the kernel runs that loses least over ``rows``.

    The loss of a choice at one batch size is ``log(time taken / the faster
    time)``; summed over every size measured, so that one noisy measurement
    does not move the threshold far (timings on a shared VM jump by 2x).
    """

    def loss(fewest):
        return sum(
            math.log((kernel if batch >= fewest else lapack) / min(kernel, lapack))
            for batch, kernel, lapack in rows
        )

    return min([batch for batch, _, _ in rows] + [math.inf], key=loss)


def combine(paths):
    """``{(routine, n): fewest}`` from the geometric means of several runs' ratios."""
    measured = {}
    for path in paths:
        with open(path) as f:
            for entry in json.load(f):
                measured.setdefault((entry["routine"], entry["n"]), []).append(entry["rows"])
    thresholds = {}
    for key, runs in measured.items():
        rows = []
        for batch_rows in zip(*runs):
            log_ratio = sum(math.log(r["kernel_s"] / r["lapack_s"]) for r in batch_rows)
            rows.append((batch_rows[0]["batch"], math.exp(log_ratio / len(batch_rows)), 1.0))
        thresholds[key] = threshold(rows)
    return thresholds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--routines", nargs="+", default=list(CALLS), choices=list(CALLS))
    parser.add_argument("--sizes", nargs="+", type=int, default=[8, 12, 16, 24, 32, 48])
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json", help="write the measurements to this file")
    parser.add_argument(
        "--combine",
        nargs="+",
        metavar="JSON",
        help="print the thresholds of these runs' files instead of measuring",
    )
    args = parser.parse_args(argv)
    if args.combine:
        for (routine, n), fewest in sorted(combine(args.combine).items()):
            print(f"{routine:<10}{n:>4}  {fewest}")
        return
    blocksolve.set_specialization("wait")
    rng = np.random.default_rng(0)
    saved, saved_fewest = dict(ROUTINES), _routine.KERNEL_FROM_BATCH
    results = []
    print(
        "kernel time / LAPACK time per batch size; 'from': the fewest matrices from which "
        "the kernel wins"
    )
    print(f"{'routine':<10}{'n':>4}  " + " ".join(f"{b:>5}" for b in BATCHES) + "   from")
    try:
        for routine in args.routines:
            for n in args.sizes:
                if n >= ROUTINES[routine].lapack_from:
                    continue  # LAPACK takes every call there
                rows, fewest = measure(routine, n, args.dtype, args.repeat, rng)
                print(
                    f"{routine:<10}{n:>4}  "
                    + " ".join(f"{k / l:5.2f}" for _, k, l in rows)
                    + f"  {fewest:>5}",
                    flush=True,
                )
                results.append(
                    dict(
                        routine=routine,
                        n=n,
                        dtype=args.dtype,
                        fewest=fewest,
                        rows=[dict(batch=b, kernel_s=k, lapack_s=l) for b, k, l in rows],
                    )
                )
    finally:
        ROUTINES.update(saved)
        _routine.KERNEL_FROM_BATCH = saved_fewest
        clear_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)


if __name__ == "__main__":
    main()
