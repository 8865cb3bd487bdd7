#!/bin/bash
# interleaved handoff/never, with and without PYTHONPATH=<checkout> (setuptools editable finder vs the path). Usage: op base_size procs cache
op=$1; base=$2; procs=$3; cache=$4; out=/tmp/abpp.jsonl; : > $out
root=$(cd "$(dirname "$0")/../../../.." && pwd)  # the checkout; the project venv active (editable install)
for i in $(seq $procs); do
  for side in editable-handoff path-handoff editable-never path-never; do
    rm -rf /tmp/abpp_cache && cp -r $cache /tmp/abpp_cache
    state=${side#*-}
    if [ ${side%%-*} = path ]; then export PYTHONPATH=$root; else unset PYTHONPATH; fi
    BLOCKSOLVE_CACHE_DIR=/tmp/abpp_cache BLOCKSOLVE_SPECIALIZE=background python "$(dirname "$0")/beside_cause.py" $op $base $state | sed "s/^{/{\"side\": \"$side\", /" >> $out
  done
done
unset PYTHONPATH
python3 - $out <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for side in ("editable-handoff", "path-handoff", "editable-never", "path-never"):
    rs = [r for r in rows if r["side"] == side]
    ratios = [o / n for r in rs for o, n in zip(r["ours"], r["numpy"])]
    print(f"{side:17} numpy {st.median(x for r in rs for x in r['numpy']):6.1f} us  "
          f"ours {st.median(x for r in rs for x in r['ours']):6.1f} us  ratio {st.median(ratios):.2f}  (n={len(ratios)})")
PY
