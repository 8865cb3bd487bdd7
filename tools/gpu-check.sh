#!/usr/bin/env bash
# The GPU check: every verdict a GPU session is for, in one call of the device tool.
#
#   tools/gpu-check.sh --fetch-wheels   # here: download the wheels to carry into .whl/
#   tools/gpu-check.sh --dry-run        # here: check everything up to the first launch
#   bash tools/gpu-check.sh             # there: the check itself, results in $OUT
#
# 1. Here, in the repository root (the registry is reachable from here, not from there),
#    fetch the wheels and rehearse.  --fetch-wheels runs exactly this (--dry-run checks it
#    against blocksolve/cuda/constraints.txt and tools/gpu_check.py's CARRIED):
#
#      python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#        --implementation cp --platform manylinux_2_28_x86_64 \
#        --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
#        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
#        nvmath-python==1.0.1 nvidia-libmathdx-cu13==0.4.2.37 array-api-compat==1.16.0 \
#        numba-cuda==0.30.4 cuda-core==1.2.2 cuda-bindings==13.5.0 cuda-pathfinder==1.9.1 \
#        nvidia-cuda-cccl==13.3.5.0.6
#
#    The GPU machine (Python 3.12) has cupy-cuda13x, numba, scipy, torch, pytest, xdist and
#    the CUDA 13 toolkit, but not the first three; the others replace its own versions by
#    the verified ones.  The wheels are about 39 MiB, the working tree about 3: the device
#    tool carries 64 in all (--dry-run checks it).
#    Not carried (too large): NVVM comes from the machine's toolkit (CUDA_HOME, found
#    below); NVRTC, nvJitLink, cupy and numba are the machine's.  preflight.json records
#    every version; where one differs from the verified one the summary says so.
#
# 2. One device call, then give_back:
#
#      run(command="bash tools/gpu-check.sh", carry=[".whl"], timeout_s=540)
#
#    The script keeps within GPU_CHECK_BUDGET (480 s: install and compilation included), so
#    the 9-minute timeout leaves a minute spare; it exits 0 only if every verdict passed
#    (summary.txt says which did not).  A run the preflight stops takes under a
#    minute: fix it and call again at once.  After a full run (~1.5 min start + 8 min) the
#    15 minutes of device time leave room for a part only, e.g.
#    GPU_CHECK_STEPS="install preflight smoke cusolver" GPU_CHECK_BUDGET=200.
#
# 3. Commit what came back (the files of $OUT, the tarball left out) under
#    benchmarks/results/<date>-h200/ with a README.md: GPU, driver, the versions of
#    preflight.json (and which differ from constraints.txt), date, the verdicts of
#    summary.txt.  If the run passed, add the GPU run to constraints.txt's "verified" note.
#
# The plan.  Verdicts in order of value, each written to $OUT the moment it is known; a
# step gets at most its limit and what is left of the budget (seconds):
#
#   step       limit   by  expected  writes
#   install       25   25       12   (pip-installs .whl/*.whl: no index, no dependencies)
#   preflight     20   45       10   preflight.json: GPU, driver, CUDA stack; stops the run
#   smoke         70  115       60   smoke.json: (a) each kernel family launched in a new
#                                    process from the disk cache, CUDA_LAUNCH_BLOCKING=1,
#                                    against NumPy; the >48 KiB and 512-thread kernels too,
#                                    float32 odd-sized qr/lstsq/svd (shared buffers off
#                                    16-byte boundaries) and a complex128 32x32 full svd
#   cusolver      70  185       50   bench-cusolver.json: (b) against cuSOLVER (cholesky
#                                    n=4..32, solve, qr, lstsq, eigh), bench --json schema
#   tests        200  385      150   tests.jsonl: (c) every gpu test once, a CUDA error
#                                    ends only its own xdist worker, a skip fails the run
#   bench       rest  460     rest   bench-gpu.json: (d) the gpu-check grid, best first
#   (finish)      20  480            summary.txt (after every step), gpu-check.log,
#                                    gpu-check.tar.gz (logs, junit, pip list)
#
# "Expected" is an estimate (nothing has run on the H200 yet): a cold kernel costs 9-18 s of
# one core here (benchmarks/results/codegen-2026-12-01), the 512-thread least-squares one
# about 60 s, and the H200 machine's 16 cores compile the smoke's 20 kernels (19 cases;
# lstsq compiles the SVD kernel of its triangle too) side by side, the longest first;
# its first run replaces these numbers by measured ones.  With a machine start of
# about a minute the smoke verdict comes within 3 minutes of the session even at the
# limits (~2 expected), the cuSOLVER comparison within 4.1 (~3).  --dry-run checks these
# numbers against the code below.
#
# Knobs: GPU_CHECK_BUDGET, GPU_CHECK_STEPS, GPU_CHECK_JOBS (processes, default: CPUs),
# GPU_CHECK_WHEELS (default .whl), GPU_CHECK_KEEP=1 (keep the work folder), PYTHON, OUT.
set -u
cd "$(dirname "$0")/.." || exit 1

STEPS=(install preflight smoke cusolver tests bench)
declare -A LIMIT=([install]=25 [preflight]=20 [smoke]=70 [cusolver]=70 [tests]=200 [bench]=0)
RESERVE=20        # the finish: summary and tarball
MIN_BENCH=60      # the least the plan leaves the benchmark grid
DEVICE_START=60   # a machine's start, before the script runs
TIMEOUT_S=540     # the device call's timeout_s
OUT_FILES=(summary.txt preflight.json smoke.json bench-cusolver.json tests.jsonl
    bench-gpu.json gpu-check.log gpu-check.tar.gz)   # at most 8 come back
# The modules with gpu tests, tests/test_gpu.py (the families) first; --dry-run checks that
# no other module has one.  Not run: test_dask.py's (no dask on the machine), and two tests
# that need two GPUs, where there is one.
TEST_FILES=(tests/test_gpu.py tests/test_cholesky.py tests/test_lu.py tests/test_lstsq.py
    tests/test_qr.py tests/test_solve.py tests/test_solve_triangular.py
    tests/test_solve_structures.py tests/test_inverse.py tests/test_eigh.py
    tests/test_array_api.py)
TEST_IGNORE=(tests/test_dask.py)
TWO_GPU_TESTS=(tests/test_gpu.py::test_a_call_runs_on_the_device_of_its_arrays
    tests/test_gpu.py::test_the_stream_keyword_on_another_device_is_refused)

BUDGET=${GPU_CHECK_BUDGET:-480}
PY=${PYTHON:-python3}
WHEELS=${GPU_CHECK_WHEELS:-.whl}
JOBS=${GPU_CHECK_JOBS:-$(nproc 2>/dev/null || echo 4)}
read -r -a SELECTED <<<"${GPU_CHECK_STEPS:-${STEPS[*]}}"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg

# --- --fetch-wheels --------------------------------------------------------------------
if [ "${1:-}" = --fetch-wheels ]; then
    $PY tools/gpu_check.py fetch-wheels "$WHEELS" && $PY tools/gpu_check.py wheels "$WHEELS"
    exit
fi

# --- --dry-run ---------------------------------------------------------------------------
plan_table() {  # step limit by, one line per step, for a budget of $1 seconds
    local by=0 step limit
    for step in "${STEPS[@]}"; do
        limit=${LIMIT[$step]}
        ((limit == 0)) && limit=$(($1 - RESERVE - by))
        by=$((by + limit))
        echo "$step $limit $by"
    done
    echo "finish $RESERVE $((by + RESERVE))"
}

dry_run() {
    local failed=0 line step limit by smoke_by cusolver_by header
    fail() { echo "  DRY RUN FAILED: $*"; failed=1; }
    echo "== syntax"; bash -n "$0" && echo "  ok" || fail "bash -n $0"

    echo "== the plan (default budget 480s, device start ~${DEVICE_START}s, timeout_s ${TIMEOUT_S})"
    while read -r step limit by; do
        printf '  %-10s limit %4s  by %4s s\n' "$step" "$limit" "$by"
        [ "$step" = smoke ] && smoke_by=$by
        [ "$step" = cusolver ] && cusolver_by=$by
        header=$(grep -E "^#   $step +[0-9rest]+ +[0-9]+ " "$0" | awk '{print $3, $4}')
        [ "$step" = finish ] && header=$(grep -E "^#   \(finish\) " "$0" | awk '{print $3, $4}')
        [ "$header" = "$( ((${LIMIT[$step]:-1} == 0)) && echo rest || echo "$limit") $by" ] ||
            fail "the header's plan says '$header' for $step, the code '$limit $by'"
    done < <(plan_table 480)
    local fixed=$((RESERVE + MIN_BENCH)) s
    for s in "${STEPS[@]}"; do fixed=$((fixed + LIMIT[$s])); done
    ((fixed <= BUDGET)) || fail "limits $fixed s (with ${MIN_BENCH}s of benchmarks) > budget"
    ((BUDGET <= 480 && BUDGET + 60 <= TIMEOUT_S && TIMEOUT_S <= 600)) ||
        fail "budget ${BUDGET}s: over 8 minutes, or no minute spare in a ${TIMEOUT_S}s call"
    ((DEVICE_START + smoke_by <= 180)) || fail "smoke verdict at $((DEVICE_START + smoke_by))s"
    ((DEVICE_START + cusolver_by <= 300)) || fail "cuSOLVER at $((DEVICE_START + cusolver_by))s"
    echo "  at the limits: smoke by $((DEVICE_START + smoke_by)) s, cuSOLVER comparison by" \
        "$((DEVICE_START + cusolver_by)) s of the session"

    echo "== the download command in this header"
    header=$(sed -n '/^#      python3 -m pip download/,/^#$/p' "$0" | sed 's/^#//; s/\\$//' |
        tr -s ' \n' '  ' | sed 's/^ //; s/ $//')
    [ "$header" = "$($PY tools/gpu_check.py download-command)" ] && echo "  ok: as the constraints pin" ||
        fail "the header's pip command is not \`python tools/gpu_check.py download-command\`"

    echo "== wheels in $WHEELS/"
    $PY tools/gpu_check.py wheels "$WHEELS" || fail "wheels"

    echo "== the preflight, against fake machines"
    $PY tools/gpu_check.py preflight-selftest || fail "preflight self-test"

    echo "== the smoke cases (kernels of tools/offline_codegen.py)"
    $PY tools/gpu_smoke.py list --check | sed 's/^/  /'
    [ "${PIPESTATUS[0]}" = 0 ] || fail "smoke cases"

    echo "== the gpu tests the tests step selects"
    local collected ids modules
    collected=$($PY -m pytest --collect-only -q -m gpu -p no:cacheprovider tests 2>&1)
    grep -qiE "[0-9]+ errors?( |$)" <<<"$(tail -2 <<<"$collected")" &&
        fail "collection: $(tail -2 <<<"$collected")"
    ids=$(grep '::' <<<"$collected")
    modules=$(cut -d: -f1 <<<"$ids" | sort -u | tr '\n' ' ')
    [ "$modules" = "$(printf '%s\n' "${TEST_FILES[@]}" "${TEST_IGNORE[@]}" | sort | tr '\n' ' ')" ] ||
        fail "modules with gpu tests: $modules; TEST_FILES and TEST_IGNORE name others"
    echo "  $(grep -vc "^${TEST_IGNORE[*]}" <<<"$ids") tests from ${#TEST_FILES[@]} modules" \
        "(${TEST_IGNORE[*]} left out)"
    for line in "${TWO_GPU_TESTS[@]}"; do
        grep -qxF "$line" <<<"$ids" || fail "no test $line to leave out on one GPU"
    done

    echo "== benchmark grids"
    $PY -c "from blocksolve.cli.bench import GRIDS, cases
for grid in ('gpu-cusolver', 'gpu-check'):
    print(f'  {grid}: {len(cases(GRIDS[grid], [\"cuda\"]))} cases')" || fail "grids"

    echo "== what \$OUT will hold (the device tool brings back 8 files at most)"
    echo "  ${OUT_FILES[*]}"
    ((${#OUT_FILES[@]} <= 8)) || fail "${#OUT_FILES[@]} files"
    for line in "${OUT_FILES[@]}"; do [[ $line =~ ^[A-Za-z0-9._-]+$ ]] || fail "name $line"; done

    echo "== a simulated run: every step's command parsed, not run"
    local sim
    sim=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-dry.XXXXXX")
    OUT=$sim GPU_CHECK_SIMULATE=1 bash "$0" >"$sim.log" 2>&1
    [ "$(awk 'NR > 2 && NF == 4 {print $1}' "$sim/summary.txt" | tr '\n' ' ')" = "${STEPS[*]} " ] ||
        fail "the simulated run's steps: $(cat "$sim/summary.txt")"
    grep -qE "^(${STEPS[*]// /|}) +[1-9]" "$sim/summary.txt" && fail "a step's command does not parse"
    for line in "$sim"/*; do
        [[ " ${OUT_FILES[*]} " == *" ${line##*/} "* ]] || fail "the run writes ${line##*/}"
    done
    grep -q "^GPU check: FAILED: preflight wrote no preflight.json" "$sim/summary.txt" ||
        fail "the summary of a run without verdicts: $(head -1 "$sim/summary.txt")"
    echo "  steps in order, each command parses, only the files above; the summary reports" \
        "the missing verdicts"
    rm -rf "$sim" "$sim.log"

    if ((failed)); then echo "DRY RUN FAILED"; else echo "dry run passed"; fi
    return $failed
}

if [ "${1:-}" = --dry-run ]; then dry_run; exit; fi
if [ -n "${1:-}" ]; then sed -n '2,7p' "$0"; exit 2; fi

# --- the run -----------------------------------------------------------------------------
OUT=${OUT:-$PWD/gpu-check-out}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
mkdir -p "$WORK/logs"
export BLOCKSOLVE_CACHE_DIR=${BLOCKSOLVE_CACHE_DIR:-$WORK/cache}
unset NUMBA_ENABLE_CUDASIM
LOG=$OUT/gpu-check.log
: >"$LOG"
START=$(date +%s)
STOPPED=""

say() { echo "$*" | tee -a "$LOG"; }

summarize() {  # $OUT/summary.txt from the verdicts so far; its status: 1 on any failure
    $PY tools/gpu_check.py summary "$WORK" "$OUT" >/dev/null 2>>"$WORK/logs/summary.log" && return
    local rc=$?
    [ -s "$OUT/summary.txt" ] || { echo "GPU check: FAILED (no summary)"; cat "$WORK/steps.tsv"; } \
        >"$OUT/summary.txt"
    return $rc
}

# step NAME 'command': runs under its limit (seen as $STEP_LIMIT), logs, updates the summary.
# With GPU_CHECK_SIMULATE (the dry run) the command is only parsed.
step() {
    local name=$1 command=$2 elapsed left limit t0 rc status=""
    elapsed=$(($(date +%s) - START))
    left=$((BUDGET - RESERVE - elapsed))
    limit=${LIMIT[$name]}
    ((limit == 0 || limit > left)) && limit=$left
    [[ " ${SELECTED[*]} " == *" $name "* ]] || status=not-selected
    [ -z "$status" ] && [ -n "$STOPPED" ] && status=stopped
    [ -z "$status" ] && ((limit < 10)) && status=no-time
    if [ -n "$status" ]; then
        say "=== [$name] not run: $status ${STOPPED}"
        printf '%s\t%s\t0\t%s\n' "$name" "$status" "$limit" >>"$WORK/steps.tsv"
        return 0
    fi
    say "=== [$name] $(date -u +%H:%M:%S), ${elapsed}s in, limit ${limit}s: $command"
    [ -n "${GPU_CHECK_SIMULATE:-}" ] && command="bash -n -c $(printf %q "$command") && echo parsed"
    t0=$(date +%s)
    STEP_LIMIT=$limit timeout -k 5 "$limit" bash -c "$command" 2>&1 |
        tee -a "$LOG" >"$WORK/logs/$name.log"
    rc=${PIPESTATUS[0]}
    ((rc == 124 || rc == 137)) && say "=== [$name] ran out of its ${limit}s"
    say "=== [$name] exit $rc after $(($(date +%s) - t0))s"
    printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$(($(date +%s) - t0))" "$limit" >>"$WORK/steps.tsv"
    summarize
    return "$rc"
}

finish() {
    summarize
    tee -a "$LOG" <"$OUT/summary.txt"
    say "total $(($(date +%s) - START))s of a ${BUDGET}s budget; results in $OUT"
    cp "$WORK/steps.tsv" "$LOG" "$WORK/logs/" 2>/dev/null
    tar -czf "$OUT/gpu-check.tar.gz" -C "$WORK" logs pytest-gpu.xml pip-list.txt \
        --ignore-failed-read 2>/dev/null
    [ -n "${GPU_CHECK_KEEP:-}" ] || rm -rf "$WORK"
}
trap finish EXIT
trap 'say "=== interrupted"; exit 130' INT TERM
: >"$WORK/steps.tsv"

# The machine's CUDA toolkit: NVVM (not carried) comes from there.
for dir in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr/local/cuda-13*; do
    if [ -n "$dir" ] && compgen -G "$dir/nvvm/lib64/libnvvm.so*" >/dev/null; then
        export CUDA_HOME=$dir CUDA_PATH=$dir
        break
    fi
done
say "gpu-check $(date -u +%FT%TZ) in $PWD (commit $(git rev-parse --short HEAD 2>/dev/null ||
    echo unknown)), budget ${BUDGET}s, ${JOBS} processes, CUDA_HOME=${CUDA_HOME:-none}"

step install "$PY -m pip install --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    $WHEELS/*.whl && $PY -m pip list --format=freeze >'$WORK/pip-list.txt'"
step preflight "$PY tools/gpu_check.py preflight '$OUT/preflight.json'" ||
    STOPPED="the preflight failed (preflight.json)"

step smoke "$PY tools/gpu_smoke.py run '$OUT/smoke.json' --jobs $JOBS \
    --deadline \$((STEP_LIMIT - 5)) --logs '$WORK/logs'"

step cusolver "t0=\$SECONDS
    $PY -m blocksolve bench --device cuda --grid gpu-cusolver --compile-only --jobs $JOBS
    $PY -m blocksolve bench --device cuda --grid gpu-cusolver --json '$OUT/bench-cusolver.json' \
        --budget \$((STEP_LIMIT - (SECONDS - t0) - 15))"

DESELECT=()
if (($(nvidia-smi -L 2>/dev/null | grep -c '^GPU') == 1)); then
    for t in "${TWO_GPU_TESTS[@]}"; do DESELECT+=(--deselect "$t"); done
fi
TIMEOUT_OPTS=""
$PY -c "import pytest_timeout" 2>/dev/null && TIMEOUT_OPTS="--timeout=150 -o timeout_method=thread"
step tests "GPU_CHECK_TEST_LOG='$OUT/tests.jsonl' PYTHONPATH=\"\$PYTHONPATH:$PWD/tools\" \
    $PY -m pytest -p gpu_pytest_plugin -p no:cacheprovider -m gpu -q -rfEs -n $JOBS \
    $TIMEOUT_OPTS --junitxml='$WORK/pytest-gpu.xml' ${DESELECT[*]} ${TEST_FILES[*]}"

step bench "t0=\$SECONDS
    timeout \$((STEP_LIMIT * 2 / 5)) $PY -m blocksolve bench --device cuda --grid gpu-check \
        --compile-only --jobs $JOBS
    budget=\$((STEP_LIMIT - (SECONDS - t0) - 30))
    $PY -m blocksolve bench --device cuda --grid gpu-check --json '$OUT/bench-gpu.json' \
        --budget \$((budget > 5 ? budget : 5))"

summarize
