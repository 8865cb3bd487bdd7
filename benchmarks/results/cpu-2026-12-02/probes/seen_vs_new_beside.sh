#!/bin/bash
# op procs: alternating modes and states, each process on its own copy of the generic-only cache
op=$1; procs=$2; base=$3; out=/tmp/svn_$op$base.jsonl; : > $out
# (the project venv active; CACHE: a kernel cache to copy for each process, e.g. one from `python -m blocksolve warm`)
for i in $(seq $procs); do
  for state in beside settled; do for mode in new seen; do
    rm -rf /tmp/svn_cache && cp -r "$CACHE" /tmp/svn_cache
    BLOCKSOLVE_CACHE_DIR=/tmp/svn_cache BLOCKSOLVE_SPECIALIZE=background python "$(dirname "$0")/seen_vs_new_beside.py" $op $mode $state $base >> $out
  done; done
done
python3 - $out <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for state in ("beside", "settled"):
    for mode in ("new", "seen"):
        rs = [r for r in rows if r["mode"] == mode and r["state"] == state]
        ratios = [o / n for r in rs for o, n in zip(r["ours"], r["numpy"])]
        print(f"{state:8} {mode:5} numpy {st.median(x for r in rs for x in r['numpy']):6.1f} us  "
              f"ours {st.median(x for r in rs for x in r['ours']):6.1f} us  ratio {st.median(ratios):.2f}  (n={len(ratios)})")
PY
