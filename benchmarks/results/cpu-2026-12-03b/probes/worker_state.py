"""The worker started ahead of need: its memory idle, after finding markers only, after
compiling; and the caller's time in submit() (the hand-off) per pattern.  One process on a
copy of a generic-only cache (compiles cholesky 6 and 9), then one on that copy (loads them)."""
import os, shutil, subprocess, sys, tempfile, textwrap
script = textwrap.dedent(r'''
    import time, numpy as np, blocksolve
    from blocksolve.cpu import _background as bg
    def rss():
        with open(f"/proc/{bg._worker.process.pid}/status") as f:
            return f.read().split("VmRSS:")[1].split()[0] + " kB"
    def numba_in_worker():
        with open(f"/proc/{bg._worker.process.pid}/maps") as f:
            return "llvmlite" in f.read()
    orig, times = bg.submit, []
    def timed(kernel):
        t = time.perf_counter(); orig(kernel); times.append(time.perf_counter() - t)
    bg.submit = timed
    rng = np.random.default_rng(0)
    for n in (6, 9):
        x = rng.standard_normal((n, n)); a = x @ x.T + n * np.eye(n)
        blocksolve.cholesky(a)
        if n == 6:
            time.sleep(0.5)
            print("worker after the first call (idle):", rss(), "numba imported:", numba_in_worker())
        blocksolve.cholesky(a)
    print("submit() per hand-off: " + ", ".join(f"{t * 1e6:.0f} us" for t in times))
    assert blocksolve.wait_for_kernels(600)
    print("after the jobs:", bg.statistics(), "worker", rss(), "numba imported:", numba_in_worker())
''')
with tempfile.TemporaryDirectory() as cache:
    shutil.copytree("/work/cache/fc-clean", cache, dirs_exist_ok=True)
    env = {**os.environ, "BLOCKSOLVE_CACHE_DIR": cache, "BLOCKSOLVE_SPECIALIZE": "background"}
    for label in ("generic-only cache (compiles)", "the same cache again (loads)"):
        print("--", label)
        print(subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, check=True).stdout, end="")
