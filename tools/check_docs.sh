#!/usr/bin/env bash
# Build the documentation with warnings as errors, then run every example:
# the docstrings (pytest --doctest-modules blocksolve) and the >>> examples
# of the pages under docs/ (pytest --doctest-glob).  Every step runs; the
# exit status is non-zero if any failed.  Needs the `docs` extra (it includes
# dask[array], for the examples of the "Scaling out" page).
# Usage: tools/check_docs.sh [output dir, default docs/_build/html]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/_build/html}
failed=()

step() {
    local name=$1
    shift
    echo "--- $name"
    local start=$SECONDS
    "$@" || failed+=("$name")
    echo "    ($((SECONDS - start)) s)"
}

step "sphinx-build -W" python -m sphinx -E -W --keep-going -q -b html docs "$out"
# -p no:cacheprovider: leave no .pytest_cache behind.  The paths given here
# replace the test suite configured in pyproject.toml.
step "docstring examples" python -m pytest -q -p no:cacheprovider --doctest-modules blocksolve
step "examples in docs/" python -m pytest -q -p no:cacheprovider --doctest-glob='*.rst' docs

if [ ${#failed[@]} -gt 0 ]; then
    echo "check_docs: FAILED: ${failed[*]}"
    exit 1
fi
echo "check_docs: docs built, all examples pass (HTML in $out)"
