"""contracts/README.md, step 4: a faithful new manifest committed beside the others keeps the
contract tests green. The scenario as a maintainer lives it: a copy of the checkout, the
fake's own manifest written as ``contracts/evalrdl/0.0.250.json``, and the contract tests run
there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from evalexport.contracts.check import load_manifests
from evalexport.contracts.drift import extract_manifest
from evalexport.contracts.recorded import check_recorded_calls

ROOT = Path(__file__).resolve().parents[2]


def test_the_contract_tests_pass_with_a_faithful_manifest_added(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    for part in ("src", "tests", "contracts", "fakes"):
        shutil.copytree(ROOT / part, checkout / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("pyproject.toml", "conftest.py"):
        shutil.copy(ROOT / part, checkout / part)
    manifest = extract_manifest("evalrdl", fake=checkout / "fakes" / "evalrdl" / "src")
    manifest["version"] = "0.0.250"
    (checkout / "contracts" / "evalrdl" / "0.0.250.json").write_text(
        json.dumps(manifest, indent=2, sort_keys=True)
    )
    completed = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
            *("--basetemp", str(checkout / ".basetemp")),  # not pytest's default, in $TMPDIR
            *("tests/contracts/test_drift.py", "tests/contracts/test_manifests.py"),
        ],
        cwd=checkout,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout[-4000:]
    assert " passed" in completed.stdout.splitlines()[-1]


def test_a_recorded_problem_every_manifest_shows_is_one_line_naming_each_version() -> None:
    newer = extract_manifest("evalrdl", fake=ROOT / "fakes" / "evalrdl" / "src")
    newer["version"] = "0.0.250"
    manifests = [*load_manifests(ROOT / "contracts" / "evalrdl"), newer]
    read = {"name": "evalrdl.Upload", "read": "status", "site": "/tmp/w/worker.py:90"}
    assert check_recorded_calls([read], manifests) == [
        "/tmp/w/worker.py:90: evalrdl.Upload.status is read but does not exist in real "
        "0.0.241, 0.0.250"
    ]
