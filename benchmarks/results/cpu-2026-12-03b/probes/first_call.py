"""A process's first call (generic kernel loaded from a generic-only cache), fresh processes,
two checkouts interleaved: with the worker started ahead of need (new) or not (base)."""
import json, os, shutil, subprocess, sys, tempfile, statistics as st
script = r'''
import time, numpy as np
t = time.perf_counter(); import blocksolve; imp = time.perf_counter() - t
rng = np.random.default_rng(0); x = rng.standard_normal((6, 6)); a = x @ x.T + 6 * np.eye(6)
t = time.perf_counter(); blocksolve.cholesky(a); first = time.perf_counter() - t
t = time.perf_counter(); np.linalg.cholesky(a); np_first = time.perf_counter() - t
print(json.dumps([imp, first, np_first]))
'''.replace("import time", "import json, time")
sides = sys.argv[1:3]
out = {s: [] for s in sides}
for rep in range(int(sys.argv[3])):
    for side in (sides if rep % 2 == 0 else sides[::-1]):
        with tempfile.TemporaryDirectory() as cache:
            shutil.copytree("/work/cache/fc-clean", cache, dirs_exist_ok=True)
            env = {**os.environ, "PYTHONPATH": f"/work/scratch/{side}", "BLOCKSOLVE_CACHE_DIR": cache,
                   "BLOCKSOLVE_SPECIALIZE": "background"}
            r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
            out[side].append(json.loads(r.stdout.strip().splitlines()[-1]))
for side, rows in out.items():
    print(side, "import median %.0f ms; first call median %.1f ms (min %.1f, max %.1f)" % (
        st.median(r[0] for r in rows) * 1e3, st.median(r[1] for r in rows) * 1e3,
        min(r[1] for r in rows) * 1e3, max(r[1] for r in rows) * 1e3))
