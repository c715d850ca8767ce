#!/usr/bin/env bash
# The README's test command: lint, type-check and run the whole test suite, the MLflow and W&B
# exporters' tests included (--with_downloads: their SDK environments are built from the index
# the first time and kept under .venv/test-cache/, as a user's machine keeps them), in one
# process a core and one more: a test often waits on a worker it started or on the session's
# MLflow server, and the extra process keeps the cores busy meanwhile (docs/performance.md,
# "The test suite"). Extra arguments go to pytest (e.g. -k name, --with_gym, -n 0 for one
# process).
set -euo pipefail
EVALEXPORT_EXTRAS=dev source "$(dirname "$0")/_venv.sh"

ruff check src tests benchmarks examples fakes conftest.py
ruff format --check src tests benchmarks examples fakes conftest.py
mypy
lint-imports --no-cache  # the layering of docs/architecture.md ([tool.importlinter])
# The suite starts hundreds of Python processes (the CLI, workers, pytest in pytest): each keeps
# the bytecode it compiles, as Python does by default, even where the caller's environment says
# not to (PYTHONDONTWRITEBYTECODE=1, common in containers, made every process compile the
# suite's modules and pytest rewrite every test file again: about a fifth of the suite's CPU).
unset PYTHONDONTWRITEBYTECODE
export EVALEXPORT_TEST_CACHE_DIR="${EVALEXPORT_TEST_CACHE_DIR:-$repo/.venv/test-cache}"
cores=$(python -c 'import os; print(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)')
python -m pytest --with_downloads --numprocesses "$((cores + 1))" --dist loadgroup "$@"
