"""Secrets inside rows never leave (SPEC §2, "What leaves", #56): a Bearer token in a
rollout's request headers, an ``api_key=sk-…`` in a prompt, ``{"api_key": …}`` in a tool
call's ``arguments`` (JSON in a string), a password nested twelve deep. The MLflow export (its
tables, its traces, its store) and the W&B export (its offline run) are searched for each; the
result says how many rows were masked, the dry run's as the export's; ``+mask_rows=false``
sends the rows as they are and says so. Everything else of a row is left as it is."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from evalexport.egress import Egress
from evalexport.tables.rollouts import rollout_for_export

pytestmark = pytest.mark.downloads


def _deep(depth: int, leaf: dict[str, Any]) -> dict[str, Any]:
    for _ in range(depth):
        leaf = {"level": leaf}
    return leaf


def plant_row_secrets(rollouts: Path, suffix: str) -> dict[str, str]:
    """Plant one secret of each shape in the first rollout (the trajectory's conversation
    too, where traces come from); the secrets by shape."""
    secrets = {
        "header": f"hdr{suffix}abcdefgh1234",
        "prompt": f"sk-prompt{suffix}abcdefghij",
        "tool": f"tool{suffix}",  # no shape of its own: only its key says it is one
        "deep": f"deep{suffix}",
    }
    rows = [json.loads(line) for line in rollouts.read_text().splitlines()]
    row = rows[0]
    request = row["responses_create_params"]
    request["extra_headers"] = {"Authorization": f"Bearer {secrets['header']}", "X-Trace": "7"}
    leak = f" (use api_key={secrets['prompt']} for the search)"
    request["input"][0]["content"] += leak
    call = {
        "type": "function_call",
        "name": "search",
        "call_id": "call_planted",
        "arguments": json.dumps({"api_key": secrets["tool"], "query": "Legendre"}),
        "status": "completed",
    }
    output = {"type": "function_call_output", "call_id": "call_planted", "output": "42"}
    row["response"]["output"][:0] = [call, output]
    conversation = row["ng_trajectory"]["invocations"][0]["conversation"]
    conversation[0]["content"] += leak
    conversation[1:1] = [call, output]
    row["diagnostics"] = _deep(12, {"password": secrets["deep"], "attempts": 3})
    rollouts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return secrets


def _leaks(roots: list[Path], secrets: dict[str, str], skip: Path) -> list[str]:
    found = []
    for root in roots:
        for path in sorted(root.rglob("*")) if root.is_dir() else [root]:
            if skip in path.parents or not path.is_file():
                continue
            data = path.read_bytes()
            found += [
                f"{path}: {shape}" for shape, secret in secrets.items() if secret.encode() in data
            ]
    return found


def test_secrets_in_rows_reach_neither_mlflows_tables_nor_its_traces(
    cli, make_sample_run, mlflow_python, tmp_path
) -> None:
    sample = make_sample_run(tasks=2, repeats=2)
    secrets = plant_row_secrets(sample.rollouts, sample.canaries.suffix)
    arguments = [
        "mlflow",
        f"+rollouts_jsonl_fpath={sample.rollouts}",
        f"+mlflow_tracking_uri=sqlite:///{tmp_path / 'store' / 'mlflow.db'}",
        "+traces=true",
        "--json",
    ]
    (tmp_path / "store").mkdir()
    planned = json.loads(cli(*arguments, "--dry-run").stdout)
    done = cli(*arguments)
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded", result["message"]
    said = "secrets were masked in 1 row"
    assert said in result["message"], result["message"]
    assert said in planned["message"], planned["message"]
    assert _leaks([tmp_path / "store"], secrets, sample.run.run_dir) == []
    assert secrets["tool"] not in done.output + json.dumps(planned)
    # and the rest of the row is sent: the tool call and its query are in the table
    table = next((tmp_path / "store").rglob("rollouts.json")).read_text()
    assert "call_planted" in table
    assert "Legendre" in table
    assert "X-Trace" in table


def test_rows_go_as_they_are_with_mask_rows_false_and_the_result_says_so(
    cli, make_sample_run, mlflow_python, tmp_path
) -> None:
    sample = make_sample_run(tasks=2, repeats=1)
    secrets = plant_row_secrets(sample.rollouts, sample.canaries.suffix)
    store = tmp_path / "store"
    store.mkdir()
    done = cli(
        "mlflow",
        f"+rollouts_jsonl_fpath={sample.rollouts}",
        f"+mlflow_tracking_uri=sqlite:///{store / 'mlflow.db'}",
        "+mask_rows=false",
        "--json",
    )
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded", result["message"]
    assert "the rows were sent as they are (+mask_rows=false)" in result["message"]
    table = next(store.rglob("rollouts.json")).read_text()
    assert secrets["tool"] in table  # sent as asked
    assert sample.canaries.found_in_tree(store) == []  # the config is masked whatever


def test_secrets_in_rows_never_reach_the_wandb_run(
    cli, make_sample_run, wandb_python, tmp_path
) -> None:
    sample = make_sample_run(tasks=2, repeats=2)
    secrets = plant_row_secrets(sample.rollouts, sample.canaries.suffix)
    done = cli("wandb", f"+rollouts_jsonl_fpath={sample.rollouts}", "+wandb_mode=offline", "--json")
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded", result["message"]
    assert "secrets were masked in 1 row" in result["message"]
    wandb_dir = Path(os.environ["WANDB_DIR"])
    assert list(wandb_dir.rglob("*.table.json"))  # the tables were logged, and searched
    assert _leaks([wandb_dir], secrets, sample.run.run_dir) == []


def test_a_rows_other_values_are_sent_as_they_are(make_sample_run) -> None:
    """Masking touches the planted values only: every other cell of every row is Gym's."""
    sample = make_sample_run(tasks=3, repeats=2)
    plant_row_secrets(sample.rollouts, sample.canaries.suffix)
    gate = Egress(secrets=())
    rows = [json.loads(line) for line in sample.rollouts.read_text().splitlines()]
    masked = [gate.row_value(rollout_for_export(row), line) for line, row in enumerate(rows, 1)]
    assert masked[1:] == [rollout_for_export(row) for row in rows[1:]]
    first, planted = masked[0], rollout_for_export(rows[0])
    assert first["response"]["output"][0]["arguments"] == json.dumps(
        {"api_key": "****", "query": "Legendre"}
    )
    assert first["responses_create_params"]["extra_headers"] == {
        "Authorization": "****",
        "X-Trace": "7",
    }
    first["response"]["output"][0]["arguments"] = planted["response"]["output"][0]["arguments"]
    first["responses_create_params"] = planted["responses_create_params"]
    first["diagnostics"] = planted["diagnostics"]
    assert first == planted
    assert gate.rows_masked().rows == 1
