"""The masking promise, held by a corpus (SPEC §2, docs/reliability.md "What is masked where"):
every secret position in ``secrets.jsonl`` is masked, and every look-alike in
``harmless.jsonl`` leaves exactly as it came, through the very doors an export uses.

A ``config`` entry is a saved config's fragment: masked as it is saved (``save_run_config``),
as an exporter reads it (``mask_config_reporting``) and as a payload leaves
(``Egress.payload``). A ``row`` entry is part of a rollout: masked as a table's cell leaves
(``Egress.row``, the JSON text masked where it needs it), as a table's row does
(``Egress.row_record``, the value masked and then written) and as a long row does
(``Egress.row_value``). A secret must be absent from what leaves, as written and as JSON
escapes it at any depth; a look-alike must come out byte for byte.

The corpus only grows: an entry is never removed (a release that needs one removed breaks a
promise). The floors below are its size; raise them when adding entries.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalexport.egress import Egress
from evalexport.masking import MASK, mask_config_reporting, save_run_config

HERE = Path(__file__).parent
SECRETS_FLOOR = 380  # never lowered: an entry is never removed
HARMLESS_FLOOR = 416  # never lowered: an entry is never removed


def _entries(name: str) -> list[dict[str, Any]]:
    lines = (HERE / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


SECRETS = _entries("secrets.jsonl")
HARMLESS = _entries("harmless.jsonl")


def _forms(secret: str) -> set[str]:
    """A secret as it may be written in what leaves: as it is, and JSON-escaped once, twice and
    three times (JSON in a string, in a string)."""
    forms = {secret}
    escaped = secret
    for _ in range(3):
        escaped = json.dumps(escaped, ensure_ascii=False)[1:-1]
        forms.add(escaped)
    return forms


def _row(value: Any) -> dict[str, Any]:
    return {"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 1.0, "case": value}


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _config_leaves(value: Any, tmp_path: Path) -> list[str]:
    """What a saved config's fragment becomes on its ways out, as texts."""
    saved = save_run_config({"case": value}, tmp_path / "run.jsonl").read_text()
    reported, _ = mask_config_reporting({"case": value})
    payload = Egress(secrets=()).payload({"config": {"case": value}}, addresses=())
    return [saved, json.dumps(reported, ensure_ascii=False), _compact(payload)]


def _row_leaves(value: Any) -> list[str]:
    """What a row becomes on its ways out (a table's cell, a long row), as texts."""
    gate = Egress(secrets=())
    row = _row(value)
    return [
        gate.row(_compact(row), 1),
        gate.row_record(row, 1, _compact),
        _compact(gate.row_value(row, 1)),
    ]


def test_the_corpus_keeps_its_size() -> None:
    """An entry is never removed: the floors hold (raise them as the corpus grows)."""
    assert len(SECRETS) >= SECRETS_FLOOR >= 300
    assert len(HARMLESS) >= HARMLESS_FLOOR >= 300
    assert len({entry["id"] for entry in SECRETS}) == len(SECRETS)
    assert len({entry["id"] for entry in HARMLESS}) == len(HARMLESS)
    for kind in ("config", "row"):
        assert sum(entry["kind"] == kind for entry in SECRETS) >= 100, kind


def test_each_secret_is_in_its_entry() -> None:
    """A secret the entry does not hold would pass for masked."""
    for entry in SECRETS:
        written = _compact(entry["value"])
        for secret in entry["secrets"]:
            assert any(form in written for form in _forms(secret)), entry["id"]


@pytest.mark.parametrize("entry", SECRETS, ids=[entry["id"] for entry in SECRETS])
def test_a_secret_never_leaves(entry: dict[str, Any], tmp_path: Path) -> None:
    leaves = (
        _config_leaves(entry["value"], tmp_path)
        if entry["kind"] == "config"
        else _row_leaves(entry["value"])
    )
    for left in leaves:
        for secret in entry["secrets"]:
            assert not [form for form in _forms(secret) if form in left], (entry["syntax"], left)
        assert MASK in left


@pytest.mark.parametrize("entry", HARMLESS, ids=[entry["id"] for entry in HARMLESS])
def test_a_look_alike_leaves_as_it_came(entry: dict[str, Any], tmp_path: Path) -> None:
    value = entry["value"]
    if entry["kind"] == "config":
        saved = save_run_config({"case": value}, tmp_path / "run.jsonl").read_text()
        assert yaml.safe_load(saved) == {"case": value}
        assert mask_config_reporting({"case": value}) == ({"case": value}, [])
        payload = {"config": {"case": value}}
        assert Egress(secrets=()).payload(payload, addresses=()) == payload
    else:
        gate = Egress(secrets=())
        text = _compact(_row(value))
        assert gate.row(text, 1) == text
        assert gate.row_record(_row(value), 1, _compact) == text
        assert gate.row_value(_row(value), 1) == _row(value)
        assert gate.rows_masked().rows == 0
