"""Time of a pattern's second call (the hand-off) in a fresh process, generic-only cache."""
import json, os, shutil, subprocess, sys, tempfile, statistics as st
script = r'''
import time, numpy as np, blocksolve, json
rng = np.random.default_rng(0); x = rng.standard_normal((6, 6)); a = x @ x.T + 6 * np.eye(6)
blocksolve.cholesky(a)
t = time.perf_counter(); blocksolve.cholesky(a); second = time.perf_counter() - t
t = time.perf_counter(); blocksolve.cholesky(a); third = time.perf_counter() - t
x = rng.standard_normal((9, 9)); b = x @ x.T + 9 * np.eye(9)
blocksolve.cholesky(b)
t = time.perf_counter(); blocksolve.cholesky(b); second_b = time.perf_counter() - t
print(json.dumps([second, third, second_b]))
'''
out = {s: [] for s in sys.argv[1:3]}
for rep in range(int(sys.argv[3])):
    for side in sys.argv[1:3]:
        with tempfile.TemporaryDirectory() as cache:
            shutil.copytree("/work/cache/fc-clean", cache, dirs_exist_ok=True)
            env = {**os.environ, "PYTHONPATH": f"/work/scratch/{side}", "BLOCKSOLVE_CACHE_DIR": cache,
                   "BLOCKSOLVE_SPECIALIZE": "background"}
            r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
            out[side].append(json.loads(r.stdout.strip().splitlines()[-1]))
for side, rows in out.items():
    print(side, "second call (first hand-off, starts the worker) median %.0f us, max %.0f; third %.0f us; a second pattern's hand-off %.0f us" % (
        st.median(r[0] for r in rows) * 1e6, max(r[0] for r in rows) * 1e6, st.median(r[1] for r in rows) * 1e6, st.median(r[2] for r in rows) * 1e6))
