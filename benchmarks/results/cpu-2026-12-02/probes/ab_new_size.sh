#!/bin/bash
# A/B of a new size's first call: `ab_new_size.sh BASE_CHECKOUT OP PROCESSES`.
# Alternates a checkout of the base commit (on PYTHONPATH) and this one, PROCESSES fresh
# processes of first_new_sizes.py each (4 new sizes), and prints per side the medians over
# every new size of every process: NumPy's first call, ours, their ratio, and the stages.
base=$1; op=$2; procs=${3:-8}
here=$(cd "$(dirname "$0")" && pwd)
head=$(cd "$here/../../../.." && pwd)
export OPENBLAS_NUM_THREADS=1
for side in base head; do : > "/tmp/ab_new_size.$side"; done
for i in $(seq "$procs"); do
    for side in base head; do
        checkout=$head; [ $side = base ] && checkout=$base
        PYTHONPATH=$checkout python "$here/first_new_sizes.py" "$op" 4 >> "/tmp/ab_new_size.$side"
    done
done
for side in base head; do
    python - "$side" "/tmp/ab_new_size.$side" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[2])]
for row in rows:
    row["ratio"] = row["ours"] / row["numpy"]
keys = ["numpy", "ours", "ratio", "new plan", "run", "family runner", "kernel call"]
print(sys.argv[1], "  ".join(f"{k} {statistics.median(r[k] for r in rows if k in r):.2f}"
                             for k in keys), f"(n={len(rows)})")
PY
done
