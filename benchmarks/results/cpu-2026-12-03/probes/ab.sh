#!/bin/bash
# Alternating tool runs of two checkouts (git worktrees under /work/scratch: base = 8145281,
# new = 1f2ec69, new2 = d2e969b, new3 = d2e969b with _SETTLE_S = 0.2) on a generic-only cache.
. /work/venv/bin/activate
cd /work/scratch
for round in 1 2; do
  # the first A/B (first-calls/ab-*) ran "base new", into ab/
  for side in base new2; do
    PYTHONPATH=/work/scratch/$side python /work/scratch/$side/tools/first_calls.py --cache-dir /work/cache/fc-clean --no-warm --only single --pause 0 --repeat 3 --json /work/scratch/ab2/$side-$round.json > /work/scratch/ab2/$side-$round.txt 2>&1
  done
done
echo done > /work/scratch/ab2/DONE
