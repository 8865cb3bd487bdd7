#!/usr/bin/env bash
# The one-call GPU check: run in the repository root of a bare GPU machine with no network.
#
#   bash tools/gpu-check.sh            # results in $OUT (default ./gpu-check-out)
#
# Steps (each under `timeout`, each allowed to fail; exit codes are reported at the end),
# ordered so that every kernel family has a verdict early, whatever cuts the run short:
#   install   pip-install the wheels carried in .whl/ (offline, no dependencies)
#   info      versions, nvidia-smi, `python -m blocksolve info`
#   smoke     the cached-cubin launch path first: a kernel compiled here, launched through
#             cupy with blocksolve's argument packing, in a new process that never imports
#             numba.cuda or nvmath; the cubin's static shared memory against the driver's
#   families  one test per kernel family (cholesky, cho_solve, lu_factor, lu_solve, solve,
#             solve_triangular, qr, lstsq, eigh, inv/det/slogdet, solve(assume_a='pos')),
#             their kernels compiled in parallel by xdist
#   tests     the rest of pytest -m gpu on tests/test_gpu.py (families' kernels now cached)
#   tests-xp  pytest -m gpu on the other test modules (their cupy parametrisations)
#   warm      first call of every benchmark kernel in parallel processes (fills the caches)
#   bench     pytest benchmarks -m gpu on the 'gpu-check' grid (pytest-benchmark json);
#             an internal budget stops starting cases in time for the json to be written
#   plot      benchmarks/plot.py -> PNGs
#   quick     python -m blocksolve bench --quick (CPU and GPU rows, its own json)
# Every test verdict is also appended to tests.jsonl the moment it is known (a junit xml is
# written only by a pytest that finishes), so a step cut by its limit loses nothing it ran.
# The whole run keeps within GPU_CHECK_BUDGET seconds (default 420): a step gets at most
# what is left.  Other knobs: GPU_CHECK_XDIST (pytest workers, 12), GPU_CHECK_JOBS (compile
# processes, 12), GPU_CHECK_KEEP=1 (keep the work folder with the kernel cache), PYTHON.
# $OUT ends up with at most 8 files (what the device tool brings back):
#   summary.txt  gpu-check.log  metadata.json  tests.jsonl  pytest-gpu.xml  bench-gpu.json
#   bench-quick.json  gpu-check.tar.gz (all logs, junit files, plots, info)
set -u
cd "$(dirname "$0")/.." || exit 1

OUT=${OUT:-$PWD/gpu-check-out}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
BUDGET=${GPU_CHECK_BUDGET:-420}
RESERVE=20                                  # seconds kept for metadata and packing
PY=${PYTHON:-python3}
START=$(date +%s)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
mkdir -p "$WORK/logs" "$WORK/plots"
LOG=$OUT/gpu-check.log
: >"$LOG"

export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
export BLOCKSOLVE_CACHE_DIR=${BLOCKSOLVE_CACHE_DIR:-$WORK/cache}
export MPLBACKEND=Agg
export BLOCKSOLVE_TEST_LOG=$OUT/tests.jsonl
: >"$BLOCKSOLVE_TEST_LOG"
unset NUMBA_ENABLE_CUDASIM

STEP_NAMES=()
STEP_CODES=()
STEP_SECONDS=()

say() { echo "$*" | tee -a "$LOG"; }

# step NAME MAX_SECONDS 'shell command'  (the command sees $STEP_LIMIT, its time limit)
step() {
    local name=$1 max=$2 command=$3
    local elapsed=$(( $(date +%s) - START ))
    local left=$(( BUDGET - RESERVE - elapsed ))
    local limit=$(( max < left ? max : left ))
    STEP_NAMES+=("$name")
    if (( limit < 10 )); then
        say "=== [$name] skipped: time budget used up (${elapsed}s of ${BUDGET}s)"
        STEP_CODES+=("skipped")
        STEP_SECONDS+=(0)
        return
    fi
    say "=== [$name] $(date -u +%H:%M:%S) limit ${limit}s: $command"
    local t0
    t0=$(date +%s)
    STEP_LIMIT=$limit timeout -k 10 "$limit" bash -c "$command" 2>&1 \
        | tee -a "$LOG" >"$WORK/logs/$name.log"
    local rc=${PIPESTATUS[0]}
    local took=$(( $(date +%s) - t0 ))
    (( rc == 124 || rc == 137 )) && say "=== [$name] TIMED OUT after ${took}s"
    say "=== [$name] exit $rc after ${took}s"
    STEP_CODES+=("$rc")
    STEP_SECONDS+=("$took")
}

FINISHED=0
finish() {
    (( FINISHED )) && return
    FINISHED=1
    {
        printf '%-10s %8s %8s\n' step exit seconds
        for i in "${!STEP_NAMES[@]}"; do
            printf '%-10s %8s %8s\n' "${STEP_NAMES[$i]}" "${STEP_CODES[$i]:-killed}" \
                "${STEP_SECONDS[$i]:-?}"
        done
        echo "total $(( $(date +%s) - START ))s of a ${BUDGET}s budget"
    } >"$OUT/summary.txt"
    cat "$OUT/summary.txt" | tee -a "$LOG"
    local steps_json="["
    for i in "${!STEP_NAMES[@]}"; do
        steps_json+="{\"step\": \"${STEP_NAMES[$i]}\", \"exit\": \"${STEP_CODES[$i]:-killed}\", \"seconds\": ${STEP_SECONDS[$i]:-null}},"
    done
    steps_json="${steps_json%,}]"
    STEPS_JSON=$steps_json timeout 15 "$PY" - "$OUT/metadata.json" "$WORK/info.json" <<'EOF' 2>&1 | tee -a "$LOG"
import datetime, json, os, subprocess, sys

def run(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=5).stdout.strip()
    except Exception as error:
        return f"unavailable: {error}"

fields = "name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit,pci.bus_id"
smi = run("nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader")
gpus = [dict(zip(fields.split(","), (x.strip() for x in line.split(","))))
        for line in smi.splitlines() if "," in line]
try:
    with open(sys.argv[2]) as f:
        info = json.load(f)
except Exception as error:
    info = {"error": f"blocksolve info --json failed: {error}"}
metadata = {
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "gpus": gpus or smi,
    "cuda_version": next((line.split("CUDA Version:")[1].split("|")[0].strip()
                          for line in run("nvidia-smi").splitlines() if "CUDA Version:" in line), None),
    "git_commit": run("git", "rev-parse", "HEAD") or None,
    "git_status": run("git", "status", "--short") or None,
    "hostname": os.uname().nodename,
    "steps": json.loads(os.environ["STEPS_JSON"]),
    "blocksolve_info": info,
}
with open(sys.argv[1], "w") as f:
    json.dump(metadata, f, indent=1)
print(f"wrote {sys.argv[1]}")
EOF
    cp "$LOG" "$WORK/logs/gpu-check.log" 2>/dev/null
    tar -czf "$OUT/gpu-check.tar.gz" -C "$WORK" logs plots info.json info-after.txt \
        pytest-smoke.xml pytest-families.xml pytest-gpu-xp.xml --ignore-failed-read 2>/dev/null
    echo "results in $OUT:"; ls -l "$OUT"
    [ -n "${GPU_CHECK_KEEP:-}" ] || rm -rf "$WORK"
}
trap finish EXIT
trap 'say "=== interrupted"; exit 130' INT TERM

say "gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) in $PWD, budget ${BUDGET}s, output $OUT"

# --- install: offline wheels ---------------------------------------------------------
if compgen -G ".whl/*.whl" >/dev/null; then
    step install 90 "$PY -m pip install -q --no-index --no-deps --no-cache-dir .whl/*.whl"
else
    say "=== [install] no .whl/*.whl: using the packages already installed"
fi

# --- info ----------------------------------------------------------------------------
step info 60 "
    nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    $PY -c 'import sys; print(sys.version)'
    $PY -m pip list 2>/dev/null | grep -i -E 'numpy|scipy|numba|nvmath|cupy|torch|cuda|mathdx|pytest|matplotlib|array'
    $PY -m blocksolve info
    $PY -m blocksolve info --json >'$WORK/info.json'"

# --- tests ---------------------------------------------------------------------------
PYTEST_EXTRA=""
$PY -c "import xdist" 2>/dev/null && PYTEST_EXTRA+=" -n ${GPU_CHECK_XDIST:-12}"
$PY -c "import pytest_timeout" 2>/dev/null && PYTEST_EXTRA+=" --timeout=150"
GPU_TESTS="$PY -m pytest tests/test_gpu.py -m gpu -v -p no:cacheprovider"
step smoke 90 "$GPU_TESTS -k 'new_process_launches_the_cached_cubin or shared_memory_is_what'     --junitxml='$WORK/pytest-smoke.xml'"
FAMILIES="test_cholesky_all_dtypes or test_cho_factor_and_solve or test_lu_factor_pivots or test_lu_solve or test_solve or test_solve_triangular or test_qr or test_lstsq or test_eigh_all_dtypes or test_inv_det_slogdet_all_dtypes or test_solve_positive_definite"
step families 120 "$GPU_TESTS $PYTEST_EXTRA -k '($FAMILIES) and (float64 or complex128)'     --junitxml='$WORK/pytest-families.xml'"
step tests 110 "$GPU_TESTS $PYTEST_EXTRA --junitxml='$OUT/pytest-gpu.xml'"
step tests-xp 50 "$PY -m pytest tests -m gpu --ignore=tests/test_gpu.py -v -p no:cacheprovider \
    $PYTEST_EXTRA --junitxml='$WORK/pytest-gpu-xp.xml'"

# --- benchmarks ----------------------------------------------------------------------
step warm 60 "if find \"\$BLOCKSOLVE_CACHE_DIR\" -mindepth 2 -type f -not -path '*/cpu/*' | grep -q .
    then $PY -m blocksolve bench --device cuda --grid gpu-check --compile-only \
        --jobs ${GPU_CHECK_JOBS:-12}
    else echo 'no GPU kernel in the disk cache after the tests: first calls would not carry over'
    fi"
step bench 150 "$PY -m pytest benchmarks -m gpu -q -p no:cacheprovider --bench-grid gpu-check \
    --bench-budget \$(( STEP_LIMIT - 45 )) --benchmark-json='$OUT/bench-gpu.json' \
    --benchmark-columns=min,median,rounds,iterations --benchmark-sort=name"
step plot 40 "[ -s '$OUT/bench-gpu.json' ] || { echo 'no benchmark json to plot'; exit 1; }
    $PY benchmarks/plot.py '$OUT/bench-gpu.json' -o '$WORK/plots'"
step quick 70 "$PY -m blocksolve bench --quick --json '$OUT/bench-quick.json' \
    --budget \$(( STEP_LIMIT - 25 ))"
step after 20 "$PY -m blocksolve info >'$WORK/info-after.txt' 2>&1; tail -5 '$WORK/info-after.txt'"
exit 0
