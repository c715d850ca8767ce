#!/usr/bin/env bash
# The README's demo: install evalexport into .venv and run it on the bundled sample run.
# Re-runnable; writes nothing into the checkout but the (git-ignored) .venv.
set -euo pipefail
EVALEXPORT_EXTRAS="" source "$(dirname "$0")/_venv.sh"

sample=examples/aime24/aime24_rollouts.jsonl
set -x
evalexport list
evalexport inspect "$sample"
