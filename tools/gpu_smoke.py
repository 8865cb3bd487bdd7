"""The GPU check's first verdict: one launch per kernel family, from the disk cache.

Each case is a public call whose kernel is one of the ``codegen`` layer's
cases (``tools/offline_codegen.py``: every family of its CI subset, whose
launch bytes that layer proves equal to numba-cuda's, plus the kernels above
48 KiB of shared memory -- a Cholesky and a complex128 svd with full
matrices --, the one of 512 threads, and float32 qr, lstsq and svd at odd
sizes, whose shared buffers end off 16-byte boundaries).  lstsq's plan
launches two kernels: its own and the SVD kernel of its triangle.  Each runs twice, each
time in a new process with ``CUDA_LAUNCH_BLOCKING=1`` (an error belongs to
the launch that made it, and a sticky one ends only its own process):

``compile``
    the first call: the kernel is generated, linked, stored and launched;
``cached``
    the verdict: a new process finds the kernel on disk -- it must not
    import numba.cuda or nvmath, nor take the CPU fallback -- launches it and
    compares the result with NumPy/SciPy on the host copy.

Commands::

    python tools/gpu_smoke.py list
    python tools/gpu_smoke.py run OUT.json [--jobs N] [--deadline S] [--logs DIR]
    python tools/gpu_smoke.py case NAME compile|cached     # one process (RESULT line)
    python tools/gpu_smoke.py cpu-check                    # every check, on the CPU backend

``run`` rewrites ``OUT.json`` as each case finishes; it exits 1 unless every
case passed.  ``cpu-check`` runs each call on NumPy arrays (the CPU backend)
through the same comparisons, so that the GPU run tests kernels, not this file.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BATCH = 37  # a partial last block for every launch shape


# --- inputs and comparisons -------------------------------------------------------------------


def _normal(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _spd(rng, batch, n, dtype):
    x = _normal(rng, (batch, n, n), dtype)
    return (x @ np.conj(x.swapaxes(-1, -2)) / n + np.eye(n)).astype(dtype)


def _general(rng, batch, n, dtype):
    return (_normal(rng, (batch, n, n), dtype) / np.sqrt(n) + 2 * np.eye(n)).astype(dtype)


def _hermitian(rng, batch, n, dtype):
    x = _normal(rng, (batch, n, n), dtype)
    return ((x + np.conj(x.swapaxes(-1, -2))) / 2).astype(dtype)


def _h(x):
    return np.conj(np.swapaxes(x, -1, -2))


def close(actual, desired, dtype, n, factor=10.0):
    """``allclose`` within ``factor * 50 * n`` machine epsilons of ``dtype``, relative to
    ``desired``'s largest entry (the tests' tolerance, ``tests/_helpers.py``)."""
    actual, desired = np.asarray(actual), np.asarray(desired)
    assert actual.shape == desired.shape, f"shape {actual.shape}, expected {desired.shape}"
    tol = factor * 50 * n * np.finfo(np.dtype(dtype)).eps
    scale = max(float(np.max(np.abs(desired), initial=0.0)), 1.0)
    error = float(np.max(np.abs(actual - desired), initial=0.0))
    assert error <= tol * scale, f"max error {error:.3g} above {tol * scale:.3g}"


def _per_matrix(function, *arrays, **kwargs):
    return np.stack([function(*(x[i] for x in arrays), **kwargs) for i in range(len(arrays[0]))])


def _lu_factors(a):
    import scipy.linalg

    factors = [scipy.linalg.lu_factor(x) for x in a]  # each LU column-major: stacked as C
    return np.ascontiguousarray([lu for lu, _ in factors]), np.stack([p for _, p in factors])


def _make_cho_solve(rng):
    a = _spd(rng, BATCH, 32, np.complex64)
    b = _normal(rng, (BATCH, 32, 1), np.complex64)
    return {"a": a, "c": np.ascontiguousarray(_h(np.linalg.cholesky(a))), "b": b}  # upper


def _make_lu_solve(rng):
    a = _general(rng, BATCH, 4, np.complex128)
    lu, piv = _lu_factors(a)
    return {"a": a, "lu": lu, "piv": piv, "b": _normal(rng, (BATCH, 4, 2), np.complex128)}


def _check_lu_factor(result, d):
    lu, piv = result
    lu_ref, piv_ref = _lu_factors(d["a"])
    np.testing.assert_array_equal(piv, piv_ref)
    close(lu, lu_ref, d["a"].dtype, d["a"].shape[-1])


def _check_qr(result, d):
    q, r = result
    a = d["a"]
    n, k = max(a.shape[-2:]), q.shape[-1]
    close(q @ r, a, a.dtype, n)
    close(_h(q) @ q, np.broadcast_to(np.eye(k), (len(a), k, k)), a.dtype, n)
    np.testing.assert_array_equal(np.tril(r, -1), 0)
    close(np.abs(r), np.abs(np.linalg.qr(a)[1]), a.dtype, n)


def _check_eigh(result, d):
    w, v = result
    a = d["a"]
    close(w, np.linalg.eigvalsh(a), a.dtype, a.shape[-1])
    close(a @ v, v * w[:, None, :], a.dtype, a.shape[-1])


def _check_slogdet(result, d):
    a = d["a"]
    for got, want in zip(result, np.linalg.slogdet(a)):
        close(got, want, a.dtype, a.shape[-1])


def _check_lstsq(result, d):
    x, residuals, rank, s = result
    a, b = d["a"], d["b"]
    m, n = a.shape[-2:]
    references = [np.linalg.lstsq(a[i], b[i]) for i in range(len(a))]
    close(x, np.stack([r[0] for r in references]), a.dtype, max(m, n))
    close(s, np.stack([r[3] for r in references]), a.dtype, max(m, n))
    np.testing.assert_array_equal(rank, [r[2] for r in references])
    if m > n:  # full rank: NumPy's residuals are |b - a x|^2 per column
        close(residuals, np.stack([r[1] for r in references]), a.dtype, m)


def _check_svd(result, d):
    u, s, vh = result
    a = d["a"]
    n, k = max(a.shape[-2:]), s.shape[-1]
    close(s, np.linalg.svd(a, compute_uv=False), a.dtype, n)
    close((u * s[..., None, :]) @ vh, a, a.dtype, n)
    close(_h(u) @ u, np.broadcast_to(np.eye(k), (len(a), k, k)), a.dtype, n)
    close(vh @ _h(vh), np.broadcast_to(np.eye(k), (len(a), k, k)), a.dtype, n)


def _unit_upper(a):
    n = a.shape[-1]
    return np.triu(a, 1) + np.eye(n, dtype=a.dtype)


# --- the cases -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Smoke:
    """One kernel family's launch.

    Attributes
    ----------
    codegen_case : str
        The ``tools/offline_codegen.py`` case whose kernel the call must use.
    make : callable
        ``make(rng) -> {name: host array}``.
    call : callable
        ``call(blocksolve, inputs) -> result`` (inputs on the device, or NumPy).
    check : callable
        ``check(host result, host inputs)``; raises ``AssertionError``.
    column_major : tuple of str
        Inputs passed as stacks of column-major matrices.
    shared_above, threads : int
        What the case stands for: more shared memory than ``shared_above`` bytes
        (the opt-in above 48 KiB), ``threads`` threads per block.
    first : bool
        Started first (the longest compilations).
    """

    codegen_case: str
    make: Callable
    call: Callable
    check: Callable
    column_major: tuple = ()
    shared_above: int = 0
    threads: int = 0
    first: bool = False


SMOKE = {
    "lstsq-512-threads": Smoke(
        "gels-over-c128-128x64k4",
        lambda rng: {
            "a": _normal(rng, (3, 128, 64), np.complex128),
            "b": _normal(rng, (3, 128, 4), np.complex128),
        },
        lambda bs, d: bs.lstsq(d["a"], d["b"]),
        _check_lstsq,
        threads=512,
        first=True,
    ),
    "cholesky-above-48KiB": Smoke(
        "potrf-f64-n96-C",
        lambda rng: {"a": _spd(rng, 3, 96, np.float64)},
        lambda bs, d: bs.cholesky(d["a"]),
        lambda L, d: close(L, np.linalg.cholesky(d["a"]), np.float64, 96),
        shared_above=48 * 1024,
        first=True,
    ),
    "cholesky": Smoke(
        "potrf-f64-n4-C",
        lambda rng: {"a": _spd(rng, BATCH, 4, np.float64)},
        lambda bs, d: bs.cholesky(d["a"]),
        lambda L, d: close(L, np.linalg.cholesky(d["a"]), np.float64, 4),
    ),
    "cho_solve": Smoke(
        "potrs-c64-n32k1",
        _make_cho_solve,
        lambda bs, d: bs.cho_solve((d["c"], False), d["b"]),
        lambda x, d: close(x, np.linalg.solve(d["a"], d["b"]), np.complex64, 32),
    ),
    "lu_factor": Smoke(
        "getrf-c128-n32-F",
        lambda rng: {"a": _general(rng, BATCH, 32, np.complex128)},
        lambda bs, d: bs.lu_factor(d["a"]),
        _check_lu_factor,
        column_major=("a",),
    ),
    "lu_solve": Smoke(
        "getrs-c128-n4k2-trans2",
        _make_lu_solve,
        lambda bs, d: bs.lu_solve((d["lu"], d["piv"]), d["b"], trans=2),
        lambda x, d: close(x, np.linalg.solve(_h(d["a"]), d["b"]), np.complex128, 4),
    ),
    "solve": Smoke(
        "gesv-f64-n4k1",
        lambda rng: {
            "a": _general(rng, BATCH, 4, np.float64),
            "b": _normal(rng, (BATCH, 4, 1), np.float64),
        },
        lambda bs, d: bs.solve(d["a"], d["b"]),
        lambda x, d: close(x, np.linalg.solve(d["a"], d["b"]), np.float64, 4),
    ),
    "solve_triangular": Smoke(
        "trsm-c128-n32k2-unit",
        lambda rng: {
            "a": _general(rng, BATCH, 32, np.complex128) / 4,
            "b": _normal(rng, (BATCH, 32, 2), np.complex128),
        },
        lambda bs, d: bs.solve_triangular(d["a"], d["b"], lower=False, trans=2, unit_diagonal=True),
        lambda x, d: close(x, np.linalg.solve(_h(_unit_upper(d["a"])), d["b"]), np.complex128, 32),
    ),
    "qr": Smoke(
        "geqrf-reduced-c128-6x4",
        lambda rng: {"a": _normal(rng, (BATCH, 6, 4), np.complex128)},
        lambda bs, d: bs.qr(d["a"]),
        _check_qr,
    ),
    "lstsq": Smoke(
        "gels-over-f64-6x4k2",
        lambda rng: {
            "a": _normal(rng, (BATCH, 6, 4), np.float64),
            "b": _normal(rng, (BATCH, 6, 2), np.float64),
        },
        lambda bs, d: bs.lstsq(d["a"], d["b"]),
        _check_lstsq,
    ),
    "eigh": Smoke(
        "heev-f64-n4-C",
        lambda rng: {"a": _hermitian(rng, BATCH, 4, np.float64)},
        lambda bs, d: bs.eigh(d["a"]),
        _check_eigh,
    ),
    "inv": Smoke(
        "getri-f64-n4",
        lambda rng: {"a": _general(rng, BATCH, 4, np.float64)},
        lambda bs, d: bs.inv(d["a"]),
        lambda x, d: close(x, np.linalg.inv(d["a"]), np.float64, 4),
    ),
    "slogdet": Smoke(
        "slogdet-c64-n8-F",
        lambda rng: {"a": _general(rng, BATCH, 8, np.complex64)},
        lambda bs, d: bs.slogdet(d["a"]),
        _check_slogdet,
        column_major=("a",),
    ),
    "svd": Smoke(
        "gesvd-f64-4x4-reduced",
        lambda rng: {"a": _normal(rng, (BATCH, 4, 4), np.float64)},
        lambda bs, d: tuple(bs.svd(d["a"], full_matrices=False)),
        _check_svd,
    ),
    # float32 at odd sizes, one matrix per block: shared buffers that end off a 16-byte
    # boundary, the next starting on one (lstsq runs its kernel and the SVD kernel)
    "qr-float32-odd": Smoke(
        "geqrf-reduced-f32-17x5",
        lambda rng: {"a": _normal(rng, (BATCH, 17, 5), np.float32)},
        lambda bs, d: bs.qr(d["a"]),
        _check_qr,
    ),
    "lstsq-float32-odd": Smoke(
        "gels-over-f32-17x5k1",
        lambda rng: {
            "a": _normal(rng, (BATCH, 17, 5), np.float32),
            "b": _normal(rng, (BATCH, 17, 1), np.float32),
        },
        lambda bs, d: bs.lstsq(d["a"], d["b"]),
        _check_lstsq,
    ),
    "svd-float32-odd": Smoke(
        "gesvd-f32-17x5-reduced",
        lambda rng: {"a": _normal(rng, (BATCH, 17, 5), np.float32)},
        lambda bs, d: tuple(bs.svd(d["a"], full_matrices=False)),
        _check_svd,
    ),
    "svd-full-above-48KiB": Smoke(
        "gesvd-c128-32x32-full",
        lambda rng: {"a": _normal(rng, (BATCH, 32, 32), np.complex128)},
        lambda bs, d: tuple(bs.svd(d["a"], full_matrices=True)),
        _check_svd,
        shared_above=48 * 1024,
        first=True,
    ),
    "solve_pos": Smoke(
        "posv-f64-n4k1",
        lambda rng: {
            "a": _spd(rng, BATCH, 4, np.float64),
            "b": _normal(rng, (BATCH, 4, 1), np.float64),
        },
        lambda bs, d: bs.solve(d["a"], d["b"], assume_a="pos", lower=True),
        lambda x, d: close(x, np.linalg.solve(d["a"], d["b"]), np.float64, 4),
    ),
}


def _column_major(x, xp):
    """The same matrices, each stored column-major (layout ``'F'``)."""
    return xp.ascontiguousarray(xp.asarray(x).swapaxes(-1, -2)).swapaxes(-1, -2)


def _to_host(result):
    if isinstance(result, tuple):
        return tuple(_to_host(x) for x in result)
    return result.get() if hasattr(result, "get") else np.asarray(result)


def _problems(check, result, inputs):
    try:
        check(_to_host(result), inputs)
        return []
    except AssertionError as error:
        return [f"against NumPy: {error}"]


def _plan_record(plan):
    kernel = getattr(plan, "kernel", None)
    pattern = plan.pattern
    record = {
        "routine": pattern.routine,
        "dims": dict(pattern.dims),
        "dtype": str(pattern.dtype),
        "options": dict(pattern.options),
        "layouts": list(pattern.layouts),
        "fallback": plan.fallback,
        "timings": dict(getattr(plan, "timings", {})),
    }
    parts = getattr(plan, "parts", ())
    if parts:  # lstsq: its kernel's plan, then the SVD's (cuSOLVER where it cannot fit)
        record["parts"] = [_plan_record(part) for part in parts]
    if kernel is not None and hasattr(kernel, "block_dim"):
        record.update(
            block_dim=list(kernel.block_dim),
            threads=int(np.prod(kernel.block_dim)),
            batches_per_block=kernel.batches_per_block,
            shared_bytes=kernel.shared_bytes,
            static_shared_bytes=kernel.static_shared_bytes,
            registers=kernel.registers,
        )
    return record


def _codegen_cases():
    """``tools/offline_codegen.py``'s cases (importing it loads no CUDA library)."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import offline_codegen

    return offline_codegen.CASES


def kernel_problems(case, plans, exact=True):
    """What is wrong with the kernel a case's call used, among the backend's ``plans``:
    not the kernel of its codegen case, the CPU fallback, or (``exact``: on a GPU, at the
    real launch shape) not the shared memory or threads the case stands for."""
    want = _codegen_cases()[case.codegen_case].pattern()
    used = next((p for p in plans if replace(p.pattern, target=want.target) == want), None)
    if used is None:
        seen = [_plan_record(p) for p in plans]
        return [f"the call did not use the kernel of {case.codegen_case}: {seen}"]
    if used.fallback:
        return [f"took the CPU fallback: {used.fallback}"]
    if not exact:
        return []
    record, problems = _plan_record(used), []
    shared = record["shared_bytes"] + record["static_shared_bytes"]
    if shared <= case.shared_above:
        problems.append(f"{shared} bytes of shared memory: not above {case.shared_above}")
    if case.threads and record["threads"] != case.threads:
        problems.append(f"{record['threads']} threads per block, not {case.threads}")
    return problems


def run_case(name, phase):
    """One public call on the GPU in this process: its verdict as a dict."""
    import cupy

    import blocksolve
    from blocksolve.cuda import gpu_backend

    case = SMOKE[name]
    inputs = case.make(np.random.default_rng(20261205))
    device = {
        k: _column_major(v, cupy) if k in case.column_major else cupy.asarray(v)
        for k, v in inputs.items()
    }
    start = time.perf_counter()
    result = case.call(blocksolve, device)
    cupy.cuda.Device().synchronize()
    seconds = time.perf_counter() - start
    problems = _problems(case.check, result, inputs)
    loaded = sorted(m for m in ("numba.cuda", "nvmath") if m in sys.modules)
    plans = gpu_backend().plans()
    problems += kernel_problems(case, plans)
    records = [_plan_record(plan) for plan in plans]
    if phase == "cached":
        if loaded:
            problems.append(f"not served from the disk cache: {loaded} imported")
        compiled = [r for r in records if set(r["timings"]) - {"kernel_load_s"}]
        if compiled:
            problems.append(f"compiled in this process: {compiled}")
    return {
        "case": name,
        "phase": phase,
        "ok": not problems,
        "problems": problems,
        "call_s": round(seconds, 3),
        "plans": records,
        "loaded_modules": loaded,
    }


def check_cases():
    """What is wrong with :data:`SMOKE` against the codegen layer's cases (empty: nothing):
    every kernel of its CI subset -- the families whose launch bytes it proves -- is
    launched, and so are the kernels above 48 KiB of shared memory and of 512 threads,
    float32 qr, lstsq and svd at odd sizes with one matrix per block (shared buffers
    ending off a 16-byte boundary) and a complex128 svd with full matrices above 48 KiB."""
    cases = _codegen_cases()
    used = [case.codegen_case for case in SMOKE.values()]
    problems = [f"{name}: no codegen case {c}" for name, c in zip(SMOKE, used) if c not in cases]
    problems += [
        f"codegen case {c} (CI subset) is not launched"
        for c in cases
        if cases[c].ci and c not in used
    ]
    if not any(case.shared_above >= 48 * 1024 for case in SMOKE.values()):
        problems.append("no case above 48 KiB of shared memory")
    if not any(case.threads >= 512 for case in SMOKE.values()):
        problems.append("no case of 512 threads")
    from blocksolve.cuda.kernels._descriptors import SUGGEST_BELOW

    def odd_float32(case, routine):  # one matrix per block, buffers off 16-byte boundaries
        if case.routine != routine or case.dtype != "float32":
            return False
        m, n = case.dims["m"], case.dims["n"]
        return max(m, n) >= SUGGEST_BELOW and m * n % 2 == 1

    for routine in ("geqrf", "gels", "gesvd"):
        if not any(odd_float32(cases[c], routine) for c in used if c in cases):
            problems.append(f"no float32 {routine} case of odd size, one matrix per block")
    if not any(
        cases[case.codegen_case].routine == "gesvd"
        and cases[case.codegen_case].dtype == "complex128"
        and cases[case.codegen_case].options.get("full")
        and case.shared_above >= 48 * 1024
        for case in SMOKE.values()
        if case.codegen_case in cases
    ):
        problems.append("no complex128 svd with full matrices above 48 KiB")
    return problems


def cpu_check():
    """Every case's call on NumPy arrays (the CPU backend), through its checks."""
    import blocksolve

    wrong = []
    for name, case in SMOKE.items():
        inputs = case.make(np.random.default_rng(20261205))
        host = {k: _column_major(v, np) if k in case.column_major else v for k, v in inputs.items()}
        problems = _problems(case.check, case.call(blocksolve, host), inputs)
        print(f"  {'ok' if not problems else 'WRONG':<5} {name}: {problems or 'checks pass'}")
        wrong += [f"{name}: {p}" for p in problems]
    return wrong


# --- the orchestration -----------------------------------------------------------------------


@dataclass
class _Run:
    out: Path
    logs: Path
    deadline: float
    verdicts: dict = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def write(self):
        counts = {"passed": 0, "failed": 0, "not reached": 0}
        for verdict in self.verdicts.values():
            counts[verdict["verdict"]] += 1
        document = {
            "what": "one launch per kernel family in a new process from the disk cache, "
            "CUDA_LAUNCH_BLOCKING=1, against NumPy/SciPy (tools/gpu_smoke.py)",
            "counts": counts,
            "cases": self.verdicts,
        }
        temporary = self.out.with_suffix(".tmp")
        temporary.write_text(json.dumps(document, indent=1) + "\n")
        temporary.replace(self.out)


def _child(name, phase, run):
    """Run one phase of a case in a new process; its RESULT, or why there is none."""
    left = run.deadline - time.monotonic()
    if left < 1:
        return None
    env = {
        **os.environ,
        "CUDA_LAUNCH_BLOCKING": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    log = run.logs / f"smoke-{name}-{phase}.log"
    start = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, __file__, "case", name, phase],
            capture_output=True,
            text=True,
            env=env,
            timeout=left,
        )
        output, code = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as expired:  # its output may come as bytes
        output = "".join(
            x.decode("utf-8", "replace") if isinstance(x, bytes) else x or ""
            for x in (expired.stdout, expired.stderr)
        )
        code = "timeout"
    log.write_text(output)
    seconds = round(time.monotonic() - start, 2)
    line = next((x for x in output.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        tail = output.strip().splitlines()[-3:]
        why = "ran out of time" if code == "timeout" else f"exited {code}: {' | '.join(tail)}"
        return {"case": name, "phase": phase, "ok": False, "problems": [why], "seconds": seconds}
    return {**json.loads(line.removeprefix("RESULT ")), "seconds": seconds}


def _one_case(name, run):
    phases = {}
    for phase in ("compile", "cached"):
        try:
            result = _child(name, phase, run)
        except Exception as error:  # noqa: BLE001 - one case's trouble ends no other's
            result = {"case": name, "phase": phase, "ok": False, "problems": [repr(error)]}
        if result is not None:
            phases[phase] = result
    cached = phases.get("cached")
    verdict = "not reached" if cached is None else "passed" if cached["ok"] else "failed"
    why = [f"{p}: {x}" for p, r in phases.items() for x in r["problems"]]
    with run.lock:
        run.verdicts[name] = {"verdict": verdict, "why": why, **phases}
        run.write()
    print(f"smoke {name}: {verdict}{' -- ' + '; '.join(why) if why else ''}", flush=True)


def run_all(out, jobs, deadline, logs):
    run = _Run(Path(out), Path(logs), time.monotonic() + deadline)
    run.logs.mkdir(parents=True, exist_ok=True)
    for name in SMOKE:
        run.verdicts[name] = {"verdict": "not reached", "why": []}
    run.write()
    order = sorted(SMOKE, key=lambda n: not SMOKE[n].first)
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        list(pool.map(lambda name: _one_case(name, run), order))
    return 0 if all(v["verdict"] == "passed" for v in run.verdicts.values()) else 1


def _option(rest, flag, default):
    return type(default)(rest[rest.index(flag) + 1]) if flag in rest else default


def main(argv):
    command, *rest = argv or ["help"]
    if command == "list":
        for name, case in SMOKE.items():
            print(f"{name:<22} {case.codegen_case}")
        if "--check" in rest:
            problems = check_cases()
            for problem in problems:
                print(f"WRONG: {problem}")
            return 1 if problems else 0
    elif command == "case":
        print("RESULT " + json.dumps(run_case(*rest[:2]), default=str), flush=True)
    elif command == "run":
        jobs = _option(rest, "--jobs", os.cpu_count() or 4)
        logs = _option(rest, "--logs", str(Path(rest[0]).parent))
        return run_all(rest[0], jobs, _option(rest, "--deadline", 300.0), logs)
    elif command == "cpu-check":
        wrong = cpu_check()
        return 1 if wrong else 0
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
