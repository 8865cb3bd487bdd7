import json, statistics as st, sys
d = sys.argv[1]
for side in sys.argv[2:]:
    rows = {}
    for r in (1, 2):
        for row in json.load(open(f"{d}/{side}-{r}.json"))["rows"]:
            rows.setdefault((row["op"], row["n"]), []).append(row)
    print(side)
    for k, rs in rows.items():
        ratios = [p / q for row in rs for p, q in zip(row["new_pattern_s"], row["numpy_first_s"])]
        bs = [p for row in rs for p in row["new_pattern_s"]]; ns = [p for row in rs for p in row["numpy_first_s"]]
        fc = [x for row in rs for x in row["first_call_runs_s"]]
        print(f"  {k[0]:8s} {k[1]:2d}: ratio {st.median(ratios):.2f}  blocksolve {st.median(bs)*1e6:4.0f} us  numpy {st.median(ns)*1e6:3.0f} us  (n={len(ratios)}; first calls {min(fc):.2f}-{max(fc):.2f} s)")
