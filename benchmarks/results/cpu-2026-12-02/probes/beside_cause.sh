#!/bin/bash
op=$1; base=$2; procs=$3; out=/tmp/bc_$op$base.jsonl; : > $out
# (the project venv active; CACHE: a kernel cache to copy for each process, e.g. one from `python -m blocksolve warm`)
for i in $(seq $procs); do
  for state in ${STATES:-handoff handoff-spin handoff-wait-spin never never-spin}; do
    rm -rf /tmp/bc_cache && cp -r "$CACHE" /tmp/bc_cache
    BLOCKSOLVE_CACHE_DIR=/tmp/bc_cache BLOCKSOLVE_SPECIALIZE=background python "$(dirname "$0")/beside_cause.py" $op $base $state >> $out
  done
done
python3 - $out <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for state in ("handoff", "handoff-spin", "handoff-wait-spin", "never", "never-spin", "pythread"):
    rs = [r for r in rows if r["state"] == state]
    if not rs: continue
    ratios = [o / n for r in rs for o, n in zip(r["ours"], r["numpy"])]
    print(f"{state:13} numpy {st.median(x for r in rs for x in r['numpy']):6.1f} us  "
          f"ours {st.median(x for r in rs for x in r['ours']):6.1f} us  ratio {st.median(ratios):.2f}  (n={len(ratios)})  ")
    print("   thread minflt", [r['thread_minflt'] for r in rs], "process minflt", [r['process_minflt'] for r in rs], "nivcsw", [r['thread_nivcsw'] for r in rs], "nvcsw", [r['thread_nvcsw'] for r in rs])
PY
