"""evalexport's ATIF export against files NeMo Gym's exporter wrote (no Gym needed).

``golden/`` is made by ``make_golden.py`` with Gym's own exporter; under ``--with_gym`` a test
makes it again and checks the committed files are still exactly what Gym writes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalexport.results import ExportStatus
from tests.trajectory.make_golden import GOLDEN, SESSION, VERSION, write_golden
from tests.trajectory.parity import export_with_evalexport, tree

CASES = sorted(path.name for path in GOLDEN.iterdir() if path.is_dir())


def test_the_golden_cases_cover_acceptance_and_refusal() -> None:
    accepted = [name for name in CASES if (GOLDEN / name / "expected").is_dir()]
    refused = [name for name in CASES if (GOLDEN / name / "refusal.json").is_file()]
    assert len(accepted) >= 3
    assert len(refused) >= 3
    assert sorted(accepted + refused) == CASES


@pytest.mark.parametrize("case", CASES)
def test_evalexport_ends_each_golden_case_as_gym_did(case: str, tmp_path: Path) -> None:
    directory = GOLDEN / case
    output = tmp_path / "out"
    result = export_with_evalexport(directory / "rollouts.jsonl", output, SESSION, VERSION)
    if (directory / "expected").is_dir():
        assert result.status is ExportStatus.SUCCEEDED, result.message
        assert tree(output) == tree(directory / "expected")
        return
    refusal = json.loads((directory / "refusal.json").read_text(encoding="utf-8"))
    assert result.status is ExportStatus.FAILED
    assert not output.exists()
    ours = sorted(
        int(row.split(":")[0].removeprefix("line "))
        for row in result.details.get("rejected_rows", [])
    )
    assert ours == refusal["rejected_lines"], (result.message, refusal["gym_error"])


@pytest.mark.gym
def test_the_committed_golden_files_are_what_gym_writes_today(gym_oracle, tmp_path: Path) -> None:
    write_golden(gym_oracle, tmp_path / "golden")
    assert tree(tmp_path / "golden") == tree(GOLDEN), (
        "rerun: python -m tests.trajectory.make_golden GYM_PYTHON"
    )
