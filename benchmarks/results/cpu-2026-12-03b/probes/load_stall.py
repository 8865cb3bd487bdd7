"""How long a call waits while a finished kernel is loaded into the process.

Run twice on the cache of $BLOCKSOLVE_CACHE_DIR (the first run compiles what it lacks and
waits for it); printed is the second, in which the specialised kernels of cholesky 6..11
were compiled before: each size's second call hands its
kernel over (the worker finds the marker, this process's thread loads it); right after,
a tight loop of 20 000 calls of an already seen 4x4 pattern, each timed.  Prints, per
hand-off, the longest call and how many took over 50 us (a seen call takes ~5 us).
"""
import os, subprocess, sys, textwrap
script = textwrap.dedent(r'''
    import time, numpy as np, blocksolve
    rng = np.random.default_rng(0)
    w = np.eye(4) * 4
    for _ in range(3):
        blocksolve.cholesky(w)
    assert blocksolve.wait_for_kernels(600)
    P = time.perf_counter
    for n in range(6, 12):
        x = rng.standard_normal((n, n)); a = x @ x.T + n * np.eye(n)
        blocksolve.cholesky(a); blocksolve.cholesky(a)  # the hand-off
        times = []
        for _ in range(20000):
            t = P(); blocksolve.cholesky(w); times.append(P() - t)
        times.sort()
        print(f"n={n}: median {times[len(times) // 2] * 1e6:.1f} us, longest {times[-1] * 1e3:.2f} ms, "
              f"{sum(t > 50e-6 for t in times)} calls over 50 us, {sum(t > 1e-3 for t in times)} over 1 ms")
    assert blocksolve.wait_for_kernels(900)  # the first run fills the cache
    print(blocksolve.cpu._background.statistics())
''')
env = {**os.environ, "BLOCKSOLVE_SPECIALIZE": "background"}
for _ in range(2):  # the first run compiles what the cache lacks; the second loads
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, check=True).stdout
print(out, end="")
