"""One mid-size matrix per call, signature seen: calls NumPy's LAPACK takes (best of 5 x 20 000)."""
import timeit

import numpy as np

import blocksolve

rng = np.random.default_rng(0)


def best(call, number=20000):
    return min(timeit.repeat(call, number=number, repeat=5)) / number * 1e6


for name, ours, theirs, n, nargs in [
        ("det", blocksolve.det, np.linalg.det, 20, 1), ("inv", blocksolve.inv, np.linalg.inv, 20, 1),
        ("solve", blocksolve.solve, np.linalg.solve, 30, 2),
        ("cholesky", blocksolve.cholesky, np.linalg.cholesky, 50, 1),
        ("qr", blocksolve.qr, np.linalg.qr, 20, 1), ("eigh", blocksolve.eigh, np.linalg.eigh, 10, 1)]:
    a = rng.standard_normal((n, n))
    args = (a @ a.T + n * np.eye(n), rng.standard_normal(n))[:nargs]
    ours(*args), ours(*args)
    o, t = best(lambda: ours(*args)), best(lambda: theirs(*args))
    print(f"{name:8s} n={n}: blocksolve {o:.1f} us, numpy {t:.1f} us, overhead {o - t:.1f} us")
