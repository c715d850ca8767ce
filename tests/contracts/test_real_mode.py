"""``--with_evalrdl_sdk`` runs the EvalRDL contract tests against a real SDK, which keeps no
call log and no store a test can read. A faithful SDK must pass them.

The real SDK is on no index reachable here, so the faithful SDK is a stand-in: the fake's
own code, served through the user's index settings the way the real one would be, that writes
no call log and keeps one service store for the whole run, where the tests do not look, as a
real service remembers every upload. The suite runs twice against it, as a rerun would. Tests
that must tell the SDK how to behave are skipped in real mode (a real service cannot be told to
refuse); every other test must pass.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalexport.testing.wheels import wheel_from_tree

pytestmark = pytest.mark.long

ROOT = Path(__file__).resolve().parents[2]


def test_the_evalrdl_contract_tests_pass_against_a_faithful_sdk_without_a_call_log(
    tmp_path: Path,
) -> None:
    source = tmp_path / "stand-in"
    shutil.copytree(ROOT / "fakes" / "evalrdl" / "src", source)
    machinery = source / "evalrdl" / "_fake.py"
    text = machinery.read_text()
    for fake_only in ('Recorder("evalrdl")', '"EVALRDL_FAKE_STORE"'):
        assert fake_only in text, f"{fake_only} is no longer in {machinery.name}"
    text = text.replace('Recorder("evalrdl")', 'Recorder("evalrdl", log_variable="NO_CALL_LOG")')
    machinery.write_text(text.replace('"EVALRDL_FAKE_STORE"', '"EVALRDL_SERVICE_STORE"'))
    wheelhouse = tmp_path / "index"
    wheel_from_tree(wheelhouse, source, "evalrdl")
    index_settings = {
        "EVALRDL_SERVICE_STORE": str(tmp_path / "service"),
        "UV_NO_INDEX": "1",
        "UV_FIND_LINKS": str(wheelhouse),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheelhouse),
    }
    for attempt in ("first run", "rerun"):
        completed = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "--with_evalrdl_sdk",
                "--basetemp",
                str(tmp_path / attempt.replace(" ", "-")),
                "tests/exporters/test_evalrdl.py",
            ],
            cwd=ROOT,
            env={**os.environ, **index_settings},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        summary = completed.stdout.strip().splitlines()[-1]
        assert completed.returncode == 0, f"{attempt}:\n{completed.stdout[-4000:]}"
        passed = re.search(r"(\d+) passed", summary)
        assert passed is not None, f"{attempt}: {summary}"
        assert int(passed.group(1)) >= 15, f"{attempt}: {summary}"
