"""Interleaved: step 3 right after the hand-off, with something done just before it."""
# Checkouts: git worktrees under /work/scratch (see ab.sh); cache: a generic-only one (python -m blocksolve warm).
import json, os, statistics as st, sys
sys.path.insert(0, "/work/main/tools")
import first_calls as fc
anchor = "if settle:  # step 3 without that compilation running beside it\n    blocksolve.wait_for_kernels()\n"
assert anchor in fc.CASE_SCRIPT
fc.CASE_SCRIPT = fc.CASE_SCRIPT.replace(anchor, anchor + "exec(os.environ.get('PRE_STEP3', ''))\n")
second = "ours()  # a second call"
assert second in fc.CASE_SCRIPT
fc.CASE_SCRIPT = fc.CASE_SCRIPT.replace(second, "exec(os.environ.get('PRE_SECOND', ''))\n" + second)
side = sys.argv[1]; reps = int(sys.argv[2])
os.environ["PYTHONPATH"] = f"/work/scratch/{side}"
variants = dict(v.split("=", 1) for v in os.environ["VARIANTS"].split("|"))
out = {v: {} for v in variants}
for rep in range(reps):
    for op in os.environ.get("OPS", "cholesky solve").split():
        for n in (6, 10):
            order = list(variants) if rep % 2 == 0 else list(variants)[::-1]
            for v in order:
                hook, _, code = variants[v].rpartition("@")
                os.environ["PRE_SECOND" if hook == "second" else "PRE_STEP3"] = code
                os.environ["PRE_SECOND" if hook != "second" else "PRE_STEP3"] = ""
                row = fc._run_case("/work/cache/fc-clean", op, "float64", n, 1, 0.0, False)
                out[v].setdefault(f"{op} {n}", []).append(row)
json.dump(out, open(f"/work/scratch/variants_{side}_{os.environ.get('TAG', '')}.json", "w"))
for v in out:
    print(v)
    for k, rows in out[v].items():
        r = [p / q for row in rows for p, q in zip(row["new_pattern_s"], row["numpy_first_s"])]
        b = [p for row in rows for p in row["new_pattern_s"]]; q = [p for row in rows for p in row["numpy_first_s"]]
        print(f"  {k}: {st.median(r):.2f}  ({st.median(b)*1e6:.0f} vs {st.median(q)*1e6:.0f} us, n={len(r)})")
