"""A big run, every row of it (SPEC §3.6, §3.7): the W&B and MLflow tables hold all 210,000
rollouts of a run of aime24's row shape (NeMo Gym's, without ``ng_trajectory``), read back from
what each SDK wrote, and the dry run says how many rows each table gets and where.

A W&B run's history keeps 10,000 rows of a table and drops the rest without a word; a table
artifact holds 200,000 rows per table. The exporter logs a table that fits to the history, as
NeMo Gym does, and a bigger one whole to a table artifact of the run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import evalexport
from evalexport.backends.wandb.exporter import ARTIFACT_TABLE_ROWS, HISTORY_TABLE_ROWS
from evalexport.results import ExportStatus
from evalexport.tables import split_read
from tests.exporters.wandb_support import read_offline_run

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "aime24"
BIG = 210_000
ROLLOUTS_PER_TASK = 4


def big_run(directory: Path, rollouts: int) -> Path:
    """A run of ``rollouts`` rows of the example's shape (each row one the example's run holds,
    its ``ng_trajectory`` left out, as Gym writes rows with rollout observability off), with
    the example's aggregate metrics and saved config."""
    directory.mkdir(parents=True)
    for path in EXAMPLE.glob("aime24_rollouts_*"):
        if path.is_file():
            shutil.copyfile(path, directory / path.name)
    shapes = []
    for line in (EXAMPLE / "aime24_rollouts.jsonl").read_text().splitlines():
        row = json.loads(line)
        row.pop("ng_trajectory", None)
        shapes.append(row)
    target = directory / "aime24_rollouts.jsonl"
    with target.open("w", encoding="utf-8") as handle:
        for index in range(rollouts):
            row = shapes[index % len(shapes)]
            task, rollout = divmod(index, ROLLOUTS_PER_TASK)
            row = {**row, "_ng_task_index": task, "_ng_rollout_index": rollout}
            handle.write(json.dumps(row) + "\n")
    return target


@pytest.mark.parametrize(
    ("rows", "where"),
    [
        (HISTORY_TABLE_ROWS, "to the run's history"),
        (HISTORY_TABLE_ROWS + 1, "whole to the run's table artifact"),
    ],
)
def test_a_wandb_dry_run_says_how_many_rows_each_table_gets_and_where(
    rows: int, where: str, tmp_path: Path
) -> None:
    rollouts = big_run(tmp_path / "run", rows)
    dry = evalexport.dry_run("wandb", rollouts, wandb_mode="offline")
    assert dry.status is ExportStatus.SUCCEEDED, dry.message
    assert dry.plan is not None
    tables = dry.plan.sections["tables"]
    assert [table.split(" (")[0] for table in tables] == ["Rollouts", "Samples"]
    assert all(f"({rows} rows" in table and where in table for table in tables), tables
    if rows > HISTORY_TABLE_ROWS:
        assert all(f"at most {ARTIFACT_TABLE_ROWS} rows" in table for table in tables)


READ_BACK = """
import json, sys, wandb
stored = json.loads(open(sys.argv[1], encoding="utf-8").read())
table = wandb.Table.from_json(stored, wandb.Artifact("read-back", type="rollouts"))
print(json.dumps([row[0] for row in table.data]))
"""


def _read_back_by_wandb(python: Path, table_file: str) -> list[object]:
    """The first column of a W&B table file, as ``wandb.Table.from_json`` reads it."""
    completed = subprocess.run(
        [str(python), "-c", READ_BACK, table_file], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    column: list[object] = json.loads(completed.stdout.splitlines()[-1])
    return column


@pytest.mark.wandb_sdk
def test_an_offline_wandb_run_of_210000_rollouts_holds_every_row(
    wandb_python: Path, tmp_path: Path, evalexport_isolation: Path, monkeypatch
) -> None:
    monkeypatch.delenv("WANDB_DATA_DIR")  # where W&B stages the tables is the exporter's choice
    rollouts = big_run(tmp_path / "run", BIG)
    result = evalexport.export("wandb", rollouts, wandb_mode="offline", wandb_project="big")
    assert result.status is ExportStatus.SUCCEEDED, result.message
    tables = result.details["tables"]
    assert isinstance(tables, dict)
    stored = read_offline_run(wandb_python, Path(str(result.details["run_dir"])))
    for key in ("Rollouts", "Samples"):
        assert tables[key]["rows"] == BIG
        assert tables[key]["logged"] == "artifact"
        parts = {
            name: table for name, table in stored["artifact_tables"].items() if f"/{key}-" in name
        }
        assert sum(table["rows"] for table in parts.values()) == BIG, parts.keys()
        assert max(table["rows"] for table in parts.values()) <= ARTIFACT_TABLE_ROWS
        # Every row in the file's order, as W&B reads each part back (the parts are streamed
        # into the artifact, not built as a wandb.Table: docs/performance.md).
        first_column = []
        for name in sorted(parts, key=lambda name: int(name.rsplit("-", 3)[-3])):
            first_column += _read_back_by_wandb(wandb_python, parts[name]["path"])
        if key == "Samples":
            assert first_column == [index // ROLLOUTS_PER_TASK for index in range(BIG)]
        else:
            assert [json.loads(cell)["_ng_task_index"] for cell in first_column] == [
                index // ROLLOUTS_PER_TASK for index in range(BIG)
            ]
    # Nothing of the history is cut short, and the tables wait for `wandb sync` beside the run.
    assert all(len(table["data"]) <= HISTORY_TABLE_ROWS for table in stored["tables"].values())
    assert (Path(os.environ["WANDB_DIR"]) / "wandb" / "data" / "artifacts" / "staging").is_dir()
    assert not (evalexport_isolation / "home" / ".local" / "share" / "wandb").exists()


@pytest.mark.mlflow_sdk
def test_an_mlflow_run_of_210000_rollouts_holds_every_row(
    mlflow_python: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rollouts = big_run(tmp_path / "run", BIG)
    assert rollouts.stat().st_size > split_read.SPLIT_ABOVE  # read on two cores, if there are
    taken: list[bool] = []
    waited = split_read.SecondPart.wait

    def noted(part: split_read.SecondPart) -> object:
        answer = waited(part)
        taken.append(answer is not None)
        return answer

    monkeypatch.setattr(split_read.SecondPart, "wait", noted)
    store = tmp_path / "store" / "mlruns.db"
    store.parent.mkdir()
    result = evalexport.export("mlflow", rollouts, mlflow_tracking_uri=f"sqlite:///{store}")
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert taken == ([True] if split_read._cores() > 1 else [])
    (artifacts,) = {path.parent for path in (store.parent / "mlartifacts").rglob("rollouts.json")}
    assert result.run_id in artifacts.parts
    rollouts_table = json.loads((artifacts / "rollouts.json").read_text())
    samples_table = json.loads((artifacts / "samples.json").read_text())
    assert len(rollouts_table["data"]) == BIG
    assert len(samples_table["data"]) == BIG
    assert samples_table["data"][-1][:2] == [(BIG - 1) // ROLLOUTS_PER_TASK, 3]
    # Every row in the file's order, the two readers' halves joined where they met.
    assert [row[:2] for row in samples_table["data"]] == [
        list(divmod(index, ROLLOUTS_PER_TASK)) for index in range(BIG)
    ]
    assert [json.loads(cell)["_ng_task_index"] for (cell,) in rollouts_table["data"]] == [
        index // ROLLOUTS_PER_TASK for index in range(BIG)
    ]
