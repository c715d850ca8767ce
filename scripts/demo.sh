#!/usr/bin/env bash
# The README's demo: install evalexport into .venv, then inspect the bundled sample runs (one
# strict ATIF export accepts, one of an agent that records coverage gaps) and export the first
# to ATIF and to an embedded MLflow store.
# Re-runnable: the sample run is copied to a new scratch directory under ${TMPDIR:-/tmp} each
# time (an export writes its marker beside the run), and nothing is written into the checkout
# but the (git-ignored) .venv. The first MLflow export builds MLflow's own environment in
# evalexport's cache ($EVALEXPORT_CACHE_DIR, else the user cache directory; about a minute);
# later runs reuse it.
set -euo pipefail
EVALEXPORT_EXTRAS="" source "$(dirname "$0")/_venv.sh"

venv_bin=$(dirname "$(command -v evalexport)")
scratch=$(mktemp -d "${TMPDIR:-/tmp}/evalexport-demo.XXXXXX")
cp -R examples/aime24 "$scratch/run"
cp -R examples/logic_puzzles "$scratch/gaps"
sample="$scratch/run/aime24_rollouts.jsonl"
cd "$scratch"
set -x
evalexport list
evalexport inspect "$sample"
evalexport inspect "$scratch/gaps/logic_puzzles_rollouts.jsonl" || true   # gaps: strict ATIF refuses it
evalexport atif +rollouts_jsonl_fpath="$sample" +output_dirpath="$scratch/atif" +agent_version=0.1.0
evalexport mlflow +rollouts_jsonl_fpath="$sample" --dry-run
evalexport mlflow +rollouts_jsonl_fpath="$sample"
evalexport mlflow +rollouts_jsonl_fpath="$sample"
{ set +x; } 2>/dev/null
cat <<EOT

ATIF trajectories: $scratch/atif (one JSON file per rollout, and manifest.jsonl)
MLflow store:      $scratch/mlruns.db (the second export was skipped: already exported)
Look at the MLflow run with MLflow's own UI, from the environment evalexport exported with:
    ${EVALEXPORT_CACHE_DIR:+EVALEXPORT_CACHE_DIR=$EVALEXPORT_CACHE_DIR }$venv_bin/evalexport envs run mlflow mlflow ui --backend-store-uri sqlite:///$scratch/mlruns.db
EOT
