"""Client code that calls linear algebra on one matrix at a time, with and without blocksolve.

Three workloads written as the libraries that make them do (plain NumPy/SciPy
code here, no dependency on those libraries), each run with
``numpy.linalg``/``scipy.linalg`` and again with blocksolve's functions
swapped in (argument-translating wrappers where SciPy's signature differs,
:func:`swapped`):

* ``omp``: orthogonal matching pursuit with scikit-learn's Cholesky update
  (``_omp._cholesky_omp``; LARS updates its factor the same way): per step
  ``solve_triangular(L[:k, :k], L[k, :k], lower=True, overwrite_b=True,
  check_finite=False)`` -- the solution read back from ``L`` -- a norm, a
  square root, and ``cho_solve`` on the growing factor, k up to
  ``n_nonzero``, over many paths;
* ``kalman-<n>-<variant>``: a Kalman filter's predict/update loop on an
  n-state constant-velocity model, the gain and the likelihood through
  ``inv`` and ``slogdet`` (filterpy's way), ``solve`` and ``slogdet``, or
  ``cho_factor`` and ``cho_solve``;
* ``gmm``: EM for a Gaussian mixture with full covariances, per component and
  iteration ``cholesky``, ``solve_triangular`` against the identity and the
  log-determinant from the factor (scikit-learn's ``GaussianMixture``).

The two sides run alternately (A, B, B, A, ...), each workload first once
(cold: plans, lazy imports) and then ``--repeats`` times.  Then the cost of one
call on one matrix of every public function, blocksolve beside NumPy and
SciPy (``timeit``, least of the repeats; the inputs and calls of
:mod:`blocksolve.cli.bench`), with the Python frames one call enters.  Throughout,
numba's compile events and blocksolve's background compiler are watched: none
of these calls should compile a kernel.

Usage::

    PYTHONPATH=. python benchmarks/one_matrix_clients.py [--repeats 5] [--out DIR]
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import os
import pstats
import statistics
import sys
import tempfile
import time
import timeit
from types import SimpleNamespace

import _record

NAME = "one-matrix-clients"


def _configure_cache(argv):
    """An empty kernel cache unless one is named: must precede blocksolve's import."""
    if "--cache-dir" not in argv and not any(a.startswith("--cache-dir=") for a in argv):
        os.environ["BLOCKSOLVE_CACHE_DIR"] = tempfile.mkdtemp(prefix="blocksolve-one-matrix-")


# --------------------------------------------------------------------------- the libraries


def reference():
    """``(la, sla)``: ``numpy.linalg`` and ``scipy.linalg`` as the clients use them."""
    import numpy as np
    import scipy.linalg as sla

    return np.linalg, sla


def swapped():
    """``(la, sla)`` with blocksolve's functions in place of the ones the workloads call."""
    import blocksolve as bs

    def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
        return bs.cholesky(a, upper=not lower)

    la = SimpleNamespace(solve=bs.solve, inv=bs.inv, slogdet=bs.slogdet)
    sla = SimpleNamespace(
        cholesky=cholesky,
        cho_factor=bs.cho_factor,
        cho_solve=bs.cho_solve,
        solve_triangular=bs.solve_triangular,
    )
    return la, sla


# --------------------------------------------------------------------------- workloads


def omp(la, sla, data):
    """scikit-learn's ``_cholesky_omp`` on each of ``data['ys']``; the coefficients."""
    import numpy as np

    tiny = np.finfo(float).tiny
    coefs = []
    for y in data["ys"]:
        X = data["X"].copy(order="F")
        alpha = X.T @ y
        residual, gamma, n_active = y, np.empty(0), 0
        indices = np.arange(X.shape[1])
        L = np.empty((data["n_nonzero"], data["n_nonzero"]))
        while n_active < data["n_nonzero"]:
            lam = int(np.argmax(np.abs(X.T @ residual)))
            if lam < n_active or alpha[lam] ** 2 < tiny:
                break
            if n_active > 0:
                L[n_active, :n_active] = X[:, :n_active].T @ X[:, lam]
                sla.solve_triangular(
                    L[:n_active, :n_active],
                    L[n_active, :n_active],
                    trans=0,
                    lower=1,
                    overwrite_b=True,
                    check_finite=False,
                )
                v = np.linalg.norm(L[n_active, :n_active]) ** 2
                Lkk = np.linalg.norm(X[:, lam]) ** 2 - v
                if Lkk <= tiny:
                    break
                L[n_active, n_active] = np.sqrt(Lkk)
            else:
                L[0, 0] = np.linalg.norm(X[:, lam])
            X[:, [n_active, lam]] = X[:, [lam, n_active]]
            alpha[[n_active, lam]] = alpha[[lam, n_active]]
            indices[[n_active, lam]] = indices[[lam, n_active]]
            n_active += 1
            gamma = sla.cho_solve(
                (L[:n_active, :n_active], True), alpha[:n_active], check_finite=False
            )
            residual = y - X[:, :n_active] @ gamma
        coef = np.zeros(X.shape[1])
        coef[indices[:n_active]] = gamma
        coefs.append(coef)
    return np.array(coefs)


def omp_data(rng, scale):
    import numpy as np

    n_samples, n_features, n_nonzero = 100, 150, 50
    X = rng.standard_normal((n_samples, n_features))
    X /= np.linalg.norm(X, axis=0)
    ys = []
    for _ in range(max(1, round(40 * scale))):
        coef = np.zeros(n_features)
        coef[rng.choice(n_features, n_nonzero, replace=False)] = rng.standard_normal(n_nonzero)
        ys.append(X @ coef + 0.01 * rng.standard_normal(n_samples))
    return {"X": X, "ys": ys, "n_nonzero": n_nonzero}


def kalman(la, sla, data):
    """A Kalman filter over ``data['zs']``; the log-likelihood and the last state."""
    import numpy as np

    F, H, Q, R, variant = data["F"], data["H"], data["Q"], data["R"], data["variant"]
    n = F.shape[0]
    x, P, eye, loglik = np.zeros(n), np.eye(n), np.eye(n), 0.0
    for z in data["zs"]:
        x = F @ x
        P = F @ P @ F.T + Q
        y = z - H @ x
        PHT = P @ H.T
        S = H @ PHT + R
        if variant == "inv":  # filterpy's KalmanFilter.update
            SI = la.inv(S)
            K = PHT @ SI
            loglik -= 0.5 * (la.slogdet(S)[1] + y @ SI @ y)
        elif variant == "solve":
            K = la.solve(S, PHT.T).T
            loglik -= 0.5 * (la.slogdet(S)[1] + y @ la.solve(S, y))
        else:
            c = sla.cho_factor(S, lower=True, check_finite=False)
            K = sla.cho_solve(c, PHT.T, check_finite=False).T
            logdet = 2 * np.log(np.diagonal(c[0])).sum()
            loglik -= 0.5 * (logdet + y @ sla.cho_solve(c, y, check_finite=False))
        x = x + K @ y
        IKH = eye - K @ H
        P = IKH @ P @ IKH.T + K @ R @ K.T
    return np.concatenate([[loglik], x])


def kalman_data(rng, scale, n, variant):
    """A constant-velocity model in n/2 dimensions observed in position, and its track."""
    import numpy as np

    d, dt = n // 2, 0.1
    F = np.block([[np.eye(d), dt * np.eye(d)], [np.zeros((d, d)), np.eye(d)]])
    H = np.hstack([np.eye(d), np.zeros((d, d))])
    Q, R = 0.01 * np.eye(n), 0.5 * np.eye(d)
    state, zs = np.zeros(n), []
    for _ in range(max(1, round(2000 * scale))):
        state = F @ state + rng.multivariate_normal(np.zeros(n), Q)
        zs.append(H @ state + rng.multivariate_normal(np.zeros(d), R))
    return {"F": F, "H": H, "Q": Q, "R": R, "zs": zs, "variant": variant}


def gmm(la, sla, data):
    """EM of a full-covariance Gaussian mixture on each of ``data['fits']``; the final lower
    bounds and means."""
    import numpy as np

    results = []
    for X, resp in data["fits"]:
        n, d = X.shape
        k_count = resp.shape[1]
        eye = np.eye(d)
        for _ in range(data["iterations"]):
            nk = resp.sum(axis=0) + 10 * np.finfo(float).eps
            means = resp.T @ X / nk[:, None]
            precisions_chol = np.empty((k_count, d, d))
            for k in range(k_count):
                diff = X - means[k]
                covariance = (resp[:, k] * diff.T) @ diff / nk[k]
                covariance.flat[:: d + 1] += 1e-6
                cov_chol = sla.cholesky(covariance, lower=True)
                precisions_chol[k] = sla.solve_triangular(cov_chol, eye, lower=True).T
            log_det = np.sum(np.log(precisions_chol.reshape(k_count, -1)[:, :: d + 1]), axis=1)
            log_prob = np.empty((n, k_count))
            for k in range(k_count):
                y = X @ precisions_chol[k] - means[k] @ precisions_chol[k]
                log_prob[:, k] = np.sum(np.square(y), axis=1)
            weighted = -0.5 * (d * np.log(2 * np.pi) + log_prob) + log_det + np.log(nk / n)
            top = weighted.max(axis=1, keepdims=True)
            log_norm = top + np.log(np.exp(weighted - top).sum(axis=1, keepdims=True))
            resp = np.exp(weighted - log_norm)
        results.append(np.concatenate([[log_norm.mean()], means.ravel()]))
    return np.array(results)


def gmm_data(rng, scale):
    import numpy as np

    fits = []
    for _ in range(max(1, round(4 * scale))):
        centres = 4 * rng.standard_normal((4, 3))
        X = np.concatenate([c + rng.standard_normal((50, 3)) for c in centres])
        resp = rng.dirichlet(np.ones(4), size=len(X))
        fits.append((X, resp))
    return {"fits": fits, "iterations": 50}


def workloads(rng, scale, states):
    """name -> (function, data)."""
    table = {"omp": (omp, omp_data(rng, scale))}
    for n in states:
        for variant in ("inv", "solve", "cho"):
            table[f"kalman-{n}-{variant}"] = (kalman, kalman_data(rng, scale, n, variant))
    table["gmm"] = (gmm, gmm_data(rng, scale))
    return table


def _counted(namespace, counts):
    """``namespace``'s functions, each counting its calls in ``counts``."""

    def counting(name, function):
        def call(*args, **kwargs):
            counts[name] = counts.get(name, 0) + 1
            return function(*args, **kwargs)

        return call

    names = [n for n in dir(namespace) if not n.startswith("_")]
    return SimpleNamespace(**{n: counting(n, getattr(namespace, n)) for n in names})


def linalg_calls(table):
    """workload -> {function: calls in one run} (an untimed run with counting wrappers)."""
    la, sla = swapped()  # only the functions swapped in: what the two sides differ by
    calls = {}
    for name, (function, data) in table.items():
        counts = calls[name] = {}
        function(_counted(la, counts), _counted(sla, counts), data)
    return calls


def run_workloads(table, repeats):
    """Each workload with both libraries, alternating, first (cold) then ``repeats`` times."""
    import numpy as np

    sides = {"reference": reference(), "blocksolve": swapped()}
    results = {name: {"first": {}, "runs": {s: [] for s in sides}} for name in table}
    answers = {}
    for repeat in range(repeats + 1):
        for position, (name, (function, data)) in enumerate(table.items()):
            order = list(sides) if (repeat + position) % 2 == 0 else list(sides)[::-1]
            for side in order:
                la, sla = sides[side]
                answer, record = _record.timed(function, la, sla, data)
                answers.setdefault(name, {})[side] = answer
                if repeat == 0:
                    results[name]["first"][side] = record
                else:
                    results[name]["runs"][side].append(record)
    for name, answer in answers.items():
        ref, bs = answer["reference"], answer["blocksolve"]
        scale = max(float(np.max(np.abs(ref))), 1e-300)
        results[name]["max_relative_difference"] = float(np.max(np.abs(bs - ref)) / scale)
    return results


# --------------------------------------------------------------------------- one call each


def _single_calls(size):
    """op -> {library: thunk} on one 2-D matrix (the inputs and calls of ``_bench``)."""
    import numpy as np

    import blocksolve
    from blocksolve.cli import bench as _bench

    peers = {(p.name, p.device): p for p in _bench.PEERS}
    rng = np.random.default_rng(20261204)
    table = {}
    for op in _bench.ALL_OPS:
        case = _bench.Case(op, "float64", size, 1, "cpu")
        workload = _bench.WORKLOADS[op]
        data = {k: v[0] for k, v in workload.make(rng, 1, case.dims, np.dtype("float64")).items()}
        thunks = {"blocksolve": functools.partial(workload.run, blocksolve, data)}
        for name in _bench.peers(case):
            if name.startswith("blocksolve"):
                continue
            thunk = peers[name, "cpu"].calls[op](data)
            if getattr(thunk, "looped", False) == "python":  # a loop of one-matrix calls
                thunk = functools.partial(thunk.function, *thunk.arrays, **thunk.kwargs)
            thunks[name] = thunk
        table[op] = {"reference": workload.declaration.library, "thunks": thunks}
    return table


def _arrays(result):
    """A call's outputs as a flat list of arrays."""
    import numpy as np

    if isinstance(result, (tuple, list)):
        return [a for part in result for a in _arrays(part)]
    return [np.asarray(result)]


def _frames(thunk):
    """Python functions and C functions one call enters."""
    counts = {"call": 0, "c_call": 0}

    def profile(frame, event, arg):
        if event in counts:
            counts[event] += 1

    sys.setprofile(profile)
    try:
        thunk()
    finally:
        sys.setprofile(None)
    return {"python_calls": counts["call"], "c_calls": counts["c_call"]}


def call_costs(size, number, repeats):
    """Per op and library: least seconds per call over ``repeats`` rounds of ``number``
    calls (the libraries alternating within each round), frames, identical results."""
    import numpy as np

    table = _single_calls(size)
    rows = {}
    for op, entry in table.items():
        thunks = entry["thunks"]
        results = {name: thunk() for name, thunk in thunks.items()}  # warm: plans, lazy imports
        times = {name: [] for name in thunks}
        loads = []
        for round_ in range(repeats):
            names = list(thunks) if round_ % 2 == 0 else list(thunks)[::-1]
            for name in names:
                _, record = _record.timed(timeit.timeit, thunks[name], number=number)
                times[name].append(record["s"] / number)
                loads.append(record)
        reference = entry["reference"]
        identical = None
        if reference in results:
            ours, theirs = _arrays(results["blocksolve"]), _arrays(results[reference])
            identical = len(ours) == len(theirs) and all(
                a.shape == b.shape and np.array_equal(a, b) for a, b in zip(ours, theirs)
            )
        rows[op] = {
            "reference": reference,
            "seconds": {name: min(t) for name, t in times.items()},
            "all_seconds": times,
            "frames": {name: _frames(thunk) for name, thunk in thunks.items()},
            "identical_to_reference": identical,
            "load": [loads[0]["load_before"], loads[-1]["load_after"]],
        }
    return rows


def profile_calls(ops, size, number, top=12):
    """cProfile of ``number`` blocksolve calls of each of ``ops``: the ``top`` functions by
    own time, in microseconds per call."""
    table = _single_calls(size)
    profiles = {}
    for op in ops:
        thunk = table[op]["thunks"]["blocksolve"]
        thunk()
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(number):
            thunk()
        profiler.disable()
        stats = pstats.Stats(profiler).stats
        rows = sorted(stats.items(), key=lambda item: -item[1][2])[:top]
        profiles[op] = [
            {
                "function": f"{os.path.basename(file)}:{line}({function})",
                "calls_per_call": calls / number,
                "own_us_per_call": own / number * 1e6,
                "cumulative_us_per_call": cumulative / number * 1e6,
            }
            for (file, line, function), (_, calls, own, cumulative, _) in rows
        ]
    return profiles


# --------------------------------------------------------------------------- instrumentation


def _compilation_state():
    """What blocksolve's background compiler and numba have done in this process."""
    from blocksolve.cpu import _background, _compiled

    return {
        "background": _background.statistics(),
        "kernels_requested": [repr(e) for e in _compiled.entries()],
        "worker_started": _background._Worker.current is not None,
    }


# --------------------------------------------------------------------------- summary


def _ratio_cell(s):
    return "–" if s is None else f"{s['median']:.2f} [{s['min']:.2f}–{s['max']:.2f}]"


def summary(data):
    out = {}
    for name, result in data["workloads"].items():
        ref = [r["s"] for r in result["runs"]["reference"]]
        bs = [r["s"] for r in result["runs"]["blocksolve"]]
        out[name] = {
            "reference_s": _record.spread(ref),
            "blocksolve_s": _record.spread(bs),
            "ratio": _record.spread([b / r for b, r in zip(bs, ref)]),
            "ratio_of_least": min(bs) / min(ref),
            "first_ratio": result["first"]["blocksolve"]["s"] / result["first"]["reference"]["s"],
            "linalg_calls": sum(data["linalg_calls"][name].values()),
            # what each swapped call adds, from the medians
            "added_us_per_call": (statistics.median(bs) - statistics.median(ref))
            / max(1, sum(data["linalg_calls"][name].values()))
            * 1e6,
        }
    return out


def readme(data):
    s = data["summary"]
    workloads = data["workloads"]
    loads = _record.loads(
        [r for w in workloads.values() for side in w["runs"].values() for r in side]
    )
    lines = [
        f"# One-matrix clients: NumPy/SciPy against blocksolve swapped in ({data['date']})\n",
        f"`python benchmarks/one_matrix_clients.py {' '.join(data['argv'])}`; machine "
        f"{data['machine']['cpu']['model']}, {data['machine']['cpu']['logical_cpus']} logical "
        f"CPUs, Python {data['machine']['python']}; empty kernel cache. Sides alternate; each "
        f"workload runs once cold, then {data['config']['repeats']} times. 1-minute load "
        f"average over the timed runs {loads}.\n",
        "## Workloads (s)\n",
        _record.table(
            [
                "workload",
                "linalg calls",
                "NumPy/SciPy",
                "blocksolve",
                "ratio",
                "ratio of least",
                "cold ratio",
                "µs added per call",
                "max rel. diff",
            ],
            [
                [
                    name,
                    v["linalg_calls"],
                    _record_cell(v["reference_s"]),
                    _record_cell(v["blocksolve_s"]),
                    _ratio_cell(v["ratio"]),
                    f"{v['ratio_of_least']:.2f}",
                    f"{v['first_ratio']:.2f}",
                    f"{v['added_us_per_call']:.1f}",
                    f"{workloads[name]['max_relative_difference']:.1e}",
                ]
                for name, v in s.items()
            ],
        ),
        "Cells: median [min–max] over the repeats; ratio = blocksolve / NumPy-SciPy per "
        "repeat, median [min–max]; ratio of least = least blocksolve time / least reference "
        "time; cold = the first run of each in the process; µs added per call = difference "
        "of the medians / linalg calls per run.\n",
        "## Kernel compilation during all of the above\n",
        _compilation_text(data["compilation"]),
        f"## One call on one {data['config']['size']}x{data['config']['size']} float64 matrix "
        f"(µs, least of {data['config']['call_repeats']} rounds of "
        f"{data['config']['number']} calls)\n",
        _record.table(
            [
                "function",
                "blocksolve",
                "numpy",
                "scipy",
                "ratio to reference",
                "µs added",
                "frames (bs / ref)",
                "identical",
            ],
            [_cost_row(op, row) for op, row in data["call_costs"].items()],
        ),
        "Frames: Python function calls in one call (`sys.setprofile`), blocksolve / the "
        "reference library. Identical: every output equal to the reference's, bit for bit.\n",
    ]
    if data.get("profiles"):
        lines.append(
            "cProfile's own cost per function call inflates the figures below several times "
            "over the timed ones above: read them as shares.\n"
        )
    for op, rows in data.get("profiles", {}).items():
        lines.append(f"### cProfile: blocksolve `{op}`, µs per call\n")
        lines.append(
            _record.table(
                ["function", "calls", "own µs", "cumulative µs"],
                [
                    [
                        f"`{r['function']}`",
                        f"{r['calls_per_call']:g}",
                        f"{r['own_us_per_call']:.1f}",
                        f"{r['cumulative_us_per_call']:.1f}",
                    ]
                    for r in rows
                ],
            )
        )
    return "\n".join(lines)


def _record_cell(s):
    if s is None:
        return "–"
    return f"{s['median']:.3g} [{s['min']:.3g}–{s['max']:.3g}]"


def _cost_row(op, row):
    us = lambda name: (  # noqa: E731
        f"{row['seconds'][name] * 1e6:.1f}" if name in row["seconds"] else "–"
    )
    reference = row["reference"]
    ratio = row["seconds"]["blocksolve"] / row["seconds"][reference]
    frames = row["frames"]
    return [
        op,
        us("blocksolve"),
        us("numpy"),
        us("scipy"),
        f"{ratio:.2f} ({reference})",
        f"{(row['seconds']['blocksolve'] - row['seconds'][reference]) * 1e6:.1f}",
        f"{frames['blocksolve']['python_calls']} / {frames[reference]['python_calls']}",
        {True: "yes", False: "no", None: "–"}[row["identical_to_reference"]],
    ]


def _compilation_text(state):
    after = state["after"]
    events = state["numba_compile_events"]
    return (
        f"numba compile events: {events}; blocksolve background compiler: "
        f"{after['background']}; kernels requested: {len(after['kernels_requested'])}; "
        f"worker process started: {after['worker_started']}.\n"
    )


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    _configure_cache(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=11, help="timed runs per workload and side")
    parser.add_argument("--scale", type=float, default=1.0, help="paths, steps and fits")
    parser.add_argument("--states", type=int, nargs="+", default=[4, 8], help="Kalman sizes")
    parser.add_argument("--size", type=int, default=4, help="matrix order of the call costs")
    parser.add_argument("--number", type=int, default=2000, help="calls per timed round")
    parser.add_argument("--call-repeats", type=int, default=7, help="timed rounds per call")
    parser.add_argument(
        "--profile",
        nargs="*",
        default=["solve_triangular", "cholesky", "lstsq"],
        help="ops to cProfile",
    )
    parser.add_argument("--cache-dir", help="BLOCKSOLVE_CACHE_DIR (default: a new empty one)")
    parser.add_argument("--out", help=f"results folder (default results/{NAME}-<date>)")
    args = parser.parse_args(argv)
    if args.cache_dir:
        os.environ["BLOCKSOLVE_CACHE_DIR"] = args.cache_dir

    import numpy as np
    from numba.core import event

    import blocksolve

    data = {
        "format": "blocksolve-one-matrix-clients/1",
        "date": time.strftime("%Y-%m-%d"),
        "argv": argv,
        "config": {
            k: getattr(args, k)
            for k in ("repeats", "scale", "states", "size", "number", "call_repeats")
        },
        "machine": _record.machine(),
        "blocksolve": blocksolve.__file__,
        "specialization": blocksolve.cpu.specialization(),
        "cache_dir": str(blocksolve.cache_dir()),
    }
    before = _compilation_state()
    with event.install_recorder("numba:compile") as compiles:
        table = workloads(np.random.default_rng(20261204), args.scale, args.states)
        print(f"workloads: {', '.join(table)}", file=sys.stderr)
        data["linalg_calls"] = linalg_calls(table)
        data["workloads"] = run_workloads(table, args.repeats)
        print("call costs", file=sys.stderr)
        data["call_costs"] = call_costs(args.size, args.number, args.call_repeats)
        if args.profile:
            data["profiles"] = profile_calls(args.profile, args.size, args.number)
    data["compilation"] = {
        "before": before,
        "after": _compilation_state(),
        "numba_compile_events": len(compiles.buffer),
    }
    data["summary"] = summary(data)
    out = _record.write(args.out or _record.default_dir(NAME), data, readme(data))
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
