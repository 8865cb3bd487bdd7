"""Interleaved A/B of step 3 (pause 0, right after the hand-off): new2 vs new3 (_SETTLE_S 0.2)."""
# Checkouts: git worktrees under /work/scratch (see ab.sh); cache: a generic-only one (python -m blocksolve warm).
import json, os, statistics as st, sys
sys.path.insert(0, "/work/main/tools")
import first_calls as fc
sides = sys.argv[1:3]; reps = int(sys.argv[3])
out = {s: {} for s in sides}
for rep in range(reps):
    for op in os.environ.get("OPS", "cholesky solve").split():
        for n in (6, 10):
            for side in (sides if rep % 2 == 0 else sides[::-1]):
                os.environ["PYTHONPATH"] = f"/work/scratch/{side}"
                row = fc._run_case("/work/cache/fc-clean", op, "float64", n, 1, 0.0, False)
                out[side].setdefault(f"{op} {n}", []).append(row)
json.dump(out, open(f"/work/scratch/settle_ab_{sides[0]}_{sides[1]}.json", "w"))
for side in sides:
    print(side)
    for k, rows in out[side].items():
        r = [p / q for row in rows for p, q in zip(row["new_pattern_s"], row["numpy_first_s"])]
        print(f"  {k}: {st.median(r):.2f} (n={len(r)})")
