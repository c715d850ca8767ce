"""Masking never over-masks NeMo Gym's own rows (#56, #65): every example row of nemo-gym
0.7.0's wheel (2,139 rows of 145 resources servers: tool schemas with a ``key`` field, code that
names ``password=None``, pages about Bearer tokens) goes through the egress gate, as free text,
unchanged but for the one secret-named URL parameter they hold, and a secret planted in one is
masked and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalexport.masking import FREE, MASK
from evalexport.masking.values import mask_value
from tests.support.gym import GymOracle

pytestmark = [pytest.mark.downloads, pytest.mark.gym]


def _rows(gym_oracle: GymOracle) -> list[tuple[str, dict[str, object]]]:
    servers = Path(gym_oracle.site_packages) / "resources_servers"
    found = []
    for path in sorted(servers.glob("*/data/*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict):
                found.append((f"{path.parent.parent.name}/{path.name}", row))
    return found


def test_every_example_row_of_gym_goes_out_unchanged(gym_oracle: GymOracle) -> None:
    """All but nvarc's ``llm_uri``, whose query holds ``api_key=sk-serve``: a URL's query is a
    position no prose shares, masked by its name in any text (#65)."""
    rows = _rows(gym_oracle)
    assert len(rows) > 2000
    changed = [(where, row) for where, row in rows if mask_value(row, kind=FREE) is not row]
    assert {where for where, _ in changed} == {"nvarc/example.jsonl"}
    for _, row in changed:
        masked = mask_value(row, kind=FREE)
        uri = row["metadata"]["llm_uri"]
        assert masked["metadata"]["llm_uri"] == uri.replace("api_key=sk-serve", f"api_key={MASK}")
        masked["metadata"]["llm_uri"] = uri
        assert masked == row


def test_a_secret_planted_in_a_gym_row_is_masked_and_nothing_else(gym_oracle: GymOracle) -> None:
    where, row = next(
        (where, row) for where, row in _rows(gym_oracle) if "responses_create_params" in row
    )
    planted = json.loads(json.dumps(row))
    planted["responses_create_params"]["extra_headers"] = {"Authorization": "Bearer tok-12345678"}
    masked = mask_value(planted, kind=FREE)
    assert masked["responses_create_params"]["extra_headers"] == {"Authorization": "****"}
    del masked["responses_create_params"]["extra_headers"]
    assert masked == row, where
