#!/usr/bin/env bash
# The README's demo: install evalexport into .venv and export the bundled sample run.
# Re-runnable: outputs go to a new scratch directory under ${TMPDIR:-/tmp} each time, and
# nothing is written into the checkout but the (git-ignored) .venv.
set -euo pipefail
EVALEXPORT_EXTRAS="" source "$(dirname "$0")/_venv.sh"

sample=examples/aime24/aime24_rollouts.jsonl
scratch=$(mktemp -d "${TMPDIR:-/tmp}/evalexport-demo.XXXXXX")
set -x
evalexport list
evalexport inspect "$sample"
evalexport atif +rollouts_jsonl_fpath="$sample" +output_dirpath="$scratch/atif" +agent_version=0.1.0
head -n 2 "$scratch/atif/manifest.jsonl"
{ set +x; } 2>/dev/null
echo "The ATIF trajectories are in $scratch/atif (one JSON file per rollout, and manifest.jsonl)."
