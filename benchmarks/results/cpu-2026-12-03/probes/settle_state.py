"""Interleaved: step 3 right after the hand-off vs after --settle (same checkout)."""
# Checkouts: git worktrees under /work/scratch (see ab.sh); cache: a generic-only one (python -m blocksolve warm).
import json, os, statistics as st, sys
sys.path.insert(0, "/work/main/tools")
import first_calls as fc
side = sys.argv[1]; reps = int(sys.argv[2])
os.environ["PYTHONPATH"] = f"/work/scratch/{side}"
out = {"handoff": {}, "settled": {}}
for rep in range(reps):
    for op in ("cholesky", "solve"):
        for n in (6, 10):
            for state in (("handoff", "settled") if rep % 2 == 0 else ("settled", "handoff")):
                row = fc._run_case("/work/cache/fc-clean", op, "float64", n, 1, 0.0, state == "settled")
                out[state].setdefault(f"{op} {n}", []).append(row)
json.dump(out, open(f"/work/scratch/settle_state_{side}.json", "w"))
for state in out:
    print(state)
    for k, rows in out[state].items():
        r = [p / q for row in rows for p, q in zip(row["new_pattern_s"], row["numpy_first_s"])]
        b = [p for row in rows for p in row["new_pattern_s"]]; q = [p for row in rows for p in row["numpy_first_s"]]
        print(f"  {k}: {st.median(r):.2f}  ({st.median(b)*1e6:.0f} vs {st.median(q)*1e6:.0f} us, n={len(r)})")
