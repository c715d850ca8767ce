# Sourced by demo.sh and test.sh: make .venv with evalexport installed, from only Python and pip.
# EVALEXPORT_EXTRAS picks the extras to install ("" for the demo, "dev" for the tests).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=${PYTHON:-python3}
venv="$repo/.venv"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
spec="$repo"
[ -n "${EVALEXPORT_EXTRAS:-}" ] && spec="$repo[$EVALEXPORT_EXTRAS]"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --editable "$spec"
export PATH="$venv/bin:$PATH"
cd "$repo"
