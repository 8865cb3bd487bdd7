"""qr's backward error and least-squares coefficients on NIST's Longley data, against NumPy.

    python benchmarks/qr_longley.py [--orders N] [--json FILE]

Both column orders (the constant last and first), as given and in ``N`` random row
orders each (the same least-squares problem, other roundings).  Every blocksolve call
takes 64 copies with NumPy's and SciPy's QR and least squares refusing meanwhile, so
that blocksolve's kernel answers.  Per order: ``||A - QR||_2 / ||A||_2`` of blocksolve's
and NumPy's qr, and the largest relative coefficient error against NIST's certified
values of blocksolve's and NumPy's lstsq.  The data and the measures are those of
``tests/test_accuracy.py``.
"""

import argparse
import contextlib
import json
import sys
from pathlib import Path

import numpy as np
import scipy.linalg

import blocksolve

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_accuracy import backward_error, coefficient_error, longley, stack  # noqa: E402


@contextlib.contextmanager
def kernel_only():
    """NumPy's and SciPy's QR and least squares raise inside: the kernels answer."""

    def refuse(*args, **kwargs):
        raise AssertionError("LAPACK answered a call meant for the generated kernel")

    saved = [
        (m, name, getattr(m, name)) for m in (np.linalg, scipy.linalg) for name in ("qr", "lstsq")
    ]
    for module, name, _ in saved:
        setattr(module, name, refuse)
    try:
        yield
    finally:
        for module, name, function in saved:
            setattr(module, name, function)


def measure(a, y, certified):
    q_ref, r_ref = np.linalg.qr(a)
    reference_x = np.linalg.lstsq(a, y, rcond=None)[0]
    with kernel_only():
        q, r = blocksolve.qr(stack(a))
        x = blocksolve.lstsq(stack(a), stack(y[:, None]))[0][0, :, 0]
    return {
        "qr_backward": float(backward_error(a, q[0], r[0])),
        "numpy_qr_backward": float(backward_error(a, q_ref, r_ref)),
        "lstsq": float(coefficient_error(x, certified)),
        "numpy_lstsq": float(coefficient_error(reference_x, certified)),
    }


def summary(rows):
    """Median and largest of each measure over ``rows``."""
    return {
        key: {"median": float(np.median([r[key] for r in rows])), "max": max(r[key] for r in rows)}
        for key in rows[0]
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--orders", type=int, default=80, help="random row orders per column order")
    parser.add_argument("--json", help="write every measurement here")
    args = parser.parse_args(argv)
    blocksolve.set_specialization("wait")  # the size-specialised kernel, compiled first
    rng = np.random.default_rng(20261204)
    document = {"orders": args.orders, "as_given": {}, "row_orders": {}, "summary": {}}
    for constant in ("last", "first"):
        a, y, certified = longley(constant)
        document["as_given"][constant] = measure(a, y, certified)
        rows = []
        for _ in range(args.orders):
            p = rng.permutation(len(y))
            rows.append(measure(a[p], y[p], certified))
        document["row_orders"][constant] = rows
        document["summary"][constant] = summary(rows)
        print(f"constant {constant}:")
        for key, value in document["summary"][constant].items():
            print(f"  {key:18s} median {value['median']:.2e}  max {value['max']:.2e}")
    if args.json:
        Path(args.json).write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
