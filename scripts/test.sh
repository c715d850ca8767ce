#!/usr/bin/env bash
# The README's test command: lint, type-check and run the whole test suite.
# Extra arguments go to pytest (e.g. --with_downloads, -k name).
set -euo pipefail
EVALEXPORT_EXTRAS=dev source "$(dirname "$0")/_venv.sh"

ruff check src tests benchmarks examples fakes conftest.py
ruff format --check src tests benchmarks examples fakes conftest.py
mypy
python -m pytest "$@"
