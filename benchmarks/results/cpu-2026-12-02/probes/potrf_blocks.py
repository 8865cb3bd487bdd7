import time, numpy as np, numba, sys
sys.path.insert(0, ".")  # run from the repository root
from blocksolve.cpu._blocks import load, store, block_width

@numba.njit(inline="always")
def fac_A(t, n, width, real, failed):
    for m in range(width): failed[m] = False
    for j in range(n):
        for m in range(width): real[m] = t[j, j, m].real
        for k in range(j):
            for m in range(width):
                z = t[j, k, m]
                real[m] -= (z * np.conj(z)).real
        for m in range(width):
            failed[m] |= not real[m] > 0
            real[m] = np.sqrt(real[m]); t[j, j, m] = real[m]; real[m] = 1 / real[m]
        for i in range(j + 1, n):
            for k in range(j):
                for m in range(width):
                    t[i, j, m] -= t[i, k, m] * np.conj(t[j, k, m])
            for m in range(width):
                t[i, j, m] *= real[m]

@numba.njit(inline="always")
def fac_B(t, n, width, real, failed, acc):
    for m in range(width): failed[m] = False
    for j in range(n):
        for m in range(width): real[m] = t[j, j, m].real
        for k in range(j):
            for m in range(width):
                z = t[j, k, m]
                real[m] -= (z * np.conj(z)).real
        for m in range(width):
            failed[m] |= not real[m] > 0
            real[m] = np.sqrt(real[m]); t[j, j, m] = real[m]; real[m] = 1 / real[m]
        for i in range(j + 1, n):
            for m in range(width): acc[m] = t[i, j, m]
            for k in range(j):
                tik = t[i, k]; tjk = t[j, k]
                for m in range(width):
                    acc[m] -= tik[m] * np.conj(tjk[m])
            for m in range(width):
                t[i, j, m] = acc[m] * real[m]

@numba.njit(inline="always")
def lower1(a, c, n):
    for j in range(n):
        d = a[j, j].real
        for k in range(j):
            d -= (c[j, k] * np.conj(c[j, k])).real
        if not d > 0:
            return j + 1
        d = np.sqrt(d); c[j, j] = d; r = 1 / d
        for i in range(j + 1, n):
            t = a[i, j]
            for k in range(j):
                t -= c[i, k] * np.conj(c[j, k])
            c[i, j] = t * r
    return 0

def make(variant, n_static):
    @numba.njit(error_model="numpy")
    def kernel(a, c, info):
        n = n_static
        stop = a.shape[0]
        if variant == 2:
            for s in range(stop):
                info[s] = lower1(a[s], c[s], n)
            return
        cap = block_width(n, stop)
        block = np.empty((n, n, cap), a.dtype)
        real = np.empty(cap, np.float64); failed = np.empty(cap, np.bool_); acc = np.empty(cap, a.dtype)
        for first in range(0, stop, cap):
            width = min(cap, stop - first)
            load(a, first, width, block)
            if variant == 0:
                fac_A(block, n, width, real, failed)
            else:
                fac_B(block, n, width, real, failed, acc)
            store(block, c, first, width)
    return kernel

rng = np.random.default_rng(0)
for n in (4, 8, 16, 32):
    batch = 10000 if n < 32 else 2000
    x = rng.standard_normal((batch, n, n)); a = x @ x.transpose(0, 2, 1) + n * np.eye(n)
    ks = [make(v, n) for v in range(3)]
    outs = []
    for k in ks:
        c = np.zeros_like(a); info = np.zeros(batch, np.int32); k(a, c, info); outs.append(np.tril(c))
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2]), n
    best = [1e9] * 3
    for rep in range(15):
        for v, k in enumerate(ks):
            c = np.empty_like(a); info = np.zeros(batch, np.int32)
            s = time.perf_counter(); k(a, c, info); best[v] = min(best[v], time.perf_counter() - s)
    print(n, batch, "blockA %.0f  blockB(acc) %.0f  scalar %.0f us" % tuple(b * 1e6 for b in best))
