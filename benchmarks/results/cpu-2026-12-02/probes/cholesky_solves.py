import timeit, sys, numpy as np, blocksolve
blocksolve.set_specialization("wait")
rng = np.random.default_rng(0)
ops = sys.argv[1].split(",")
ns = [int(v) for v in sys.argv[2].split(",")]
batches = [int(v) for v in sys.argv[3].split(",")]
for n in ns:
  for batch in batches:
    x = rng.standard_normal((batch, n, n)); a = x @ x.transpose(0, 2, 1) + n * np.eye(n)
    b = rng.standard_normal((batch, n, 2))
    c = blocksolve.cho_factor(a)
    ac = a + 1j * (x - x.transpose(0, 2, 1))  # Hermitian
    a32 = a.astype(np.float32)
    reps = max(1, 3000 // (batch * n))
    calls = {"cholesky": lambda: blocksolve.cholesky(a),
             "cho_solve": lambda: blocksolve.cho_solve(c, b, check_finite=False),
             "solve_pos": lambda: blocksolve.solve(a, b, assume_a="pos"),
             "solve_tri": lambda: blocksolve.solve_triangular(c[0], b, check_finite=False),
             "lu_solve": lambda: blocksolve.lu_solve(blocksolve.lu_factor(a), b, check_finite=False),
             "eigh": lambda: blocksolve.eigh(a),
             "eigh_c128": lambda: blocksolve.eigh(ac),
             "eigvalsh_f32": lambda: blocksolve.eigvalsh(a32)}
    for name in ops:
        f = calls[name]; f(); f()
        print("%-10s n=%-3d batch=%-6d %9.2f us" % (name, n, batch, min(timeit.repeat(f, number=reps, repeat=9)) / reps * 1e6), flush=True)
