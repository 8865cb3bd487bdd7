# A/B of the CPU kernels: OLD (a worktree of the commit before, at /tmp/wt-old, own kernel
# cache) against NEW (this checkout), three alternating runs each, minimum per row.
# usage: bash ab.sh OPS NS BATCHES   e.g.  bash ab.sh cho_solve,solve_pos,solve_tri 4,8,16,24,32 8,64,10000
source /work/venv/bin/activate; export OPENBLAS_NUM_THREADS=1
rm -f /tmp/abab-old-*.txt /tmp/abab-new-*.txt
for r in 1 2 3; do
PYTHONPATH=/tmp/wt-old BLOCKSOLVE_CACHE_DIR=/work/cache/old python "$(dirname "$0")"/cholesky_solves.py "$@" > /tmp/abab-old-$r.txt 2>&1
BLOCKSOLVE_CACHE_DIR=/work/cache/main python "$(dirname "$0")"/cholesky_solves.py "$@" > /tmp/abab-new-$r.txt 2>&1
done
python - <<'PY'
import glob, collections
def read(kind):
    best = collections.OrderedDict()
    for f in sorted(glob.glob(f"/tmp/abab-{kind}-*.txt")):
        for line in open(f):
            p = line.split()
            key = " ".join(p[:3]); v = float(p[3])
            best[key] = min(best.get(key, 1e99), v)
    return best
old, new = read("old"), read("new")
for k in old:
    print(f"{k:<32} old {old[k]:9.2f} new {new[k]:9.2f} us  x{old[k]/new[k]:.2f}")
PY
uptime
