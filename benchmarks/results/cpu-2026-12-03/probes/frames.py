"""Count the Python frames and C calls one call of blocksolve enters (sys.setprofile).

Deterministic, unlike a time: how much of blocksolve's own Python a call runs, for a
new size of a family already planned ("new size") and for a signature already seen
("seen"), one float64 matrix, against NumPy's call.

    PYTHONPATH=CHECKOUT python frames.py [cholesky|solve|lstsq|qr] [-v]
"""
import collections
import sys

import numpy as np

import blocksolve

name = sys.argv[1] if len(sys.argv) > 1 else "cholesky"
verbose = "-v" in sys.argv
function, reference = getattr(blocksolve, name), getattr(np.linalg, name)
rng = np.random.default_rng(0)


def arguments(n):
    x = rng.standard_normal((n, n))
    a = x @ x.T + n * np.eye(n)
    if name in ("cholesky", "qr"):
        return (a,)
    return (a, rng.standard_normal(n) if name == "lstsq" else rng.standard_normal((n, 1)))


def count(call):
    calls = collections.Counter()

    def profile(frame, event, arg):
        if event == "call":
            calls["py " + frame.f_code.co_filename.rsplit("/", 1)[-1] + ":"
                  + frame.f_code.co_name] += 1
        elif event == "c_call":
            calls["c  " + getattr(arg, "__qualname__", str(arg))] += 1
    sys.setprofile(profile)
    call()
    sys.setprofile(None)
    del calls["c  setprofile"]
    return calls


def report(label, calls):
    python = sum(v for k, v in calls.items() if k.startswith("py"))
    print(f"{label}: {python} Python frames, {sum(calls.values()) - python} C calls")
    if verbose:
        for key, value in sorted(calls.items()):
            print(f"   {value:3d} {key}")


for _ in range(2):  # the family planned, its kernels loaded, the specialised one handed over
    function(*arguments(5))
blocksolve.wait_for_kernels()
args = arguments(7)
report("new size", count(lambda: function(*args)))
function(*args)
report("seen", count(lambda: function(*args)))
report("numpy", count(lambda: reference(*args)))
