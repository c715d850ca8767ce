"""NeMo Gym's health files travel with the run (``evalexport.gym.health``).

The sample run in ``examples/aime24`` holds the files Gym 0.7.0 writes beside a run:
``quality_summary.json`` and ``rollout_verdicts.jsonl`` (written by Gym's own
``run_health_checks`` over the run; ``tests/exporters/test_gym_runs.py`` checks they are
byte for byte what Gym writes) and ``aime24_rollouts_failures.jsonl`` (one failed attempt, its
failure as Gym's ``_agent_request_failure_row`` records an HTTP 502). The real SDKs' part is in
``tests/exporters/test_gym_runs.py``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from evalexport.gym.health import read_health
from evalexport.masking import scrub_json_bytes
from evalexport.reading import RunFileError
from evalexport.run import RunArtifacts
from evalexport.tables.prepare import prepare

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "aime24"


@pytest.fixture
def example(tmp_path: Path) -> RunArtifacts:
    shutil.copytree(EXAMPLE, tmp_path / "run")
    return RunArtifacts.from_rollouts_path(tmp_path / "run" / "aime24_rollouts.jsonl")


def _plan(cli, run: RunArtifacts, exporter: str, *options: str) -> dict:
    done = cli(exporter, f"+rollouts_jsonl_fpath={run.rollouts}", "--dry-run", "--json", *options)
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    return result


def test_the_mlflow_dry_run_lists_the_health_metrics_verdict_and_files(cli, example) -> None:
    result = _plan(cli, example, "mlflow")
    plan = result["plan"]
    assert {Path(item["path"]).name for item in plan["files"]} >= {
        "quality_summary.json",
        "rollout_verdicts.jsonl",
        "aime24_rollouts_failures.jsonl",
    }
    metrics = set(plan["metric_names"])
    assert {
        "health/verdicts/healthy",
        "health/verdicts/unhealthy",
        "health/verdicts/unobserved",
        "health/issues/model_call_failed",
        "health/stats/tokens/prompt",
        "health/artifacts/records",
        "health/failures/attempts",
        "health/failures/terminal",
    } <= metrics
    assert not any("coverage" in name for name in metrics)  # in the uploaded file
    assert "health/verdict" in plan["sections"]["tags"]
    assert {"quality_summary.json", "rollout_verdicts.jsonl", "aime24_rollouts_failures.jsonl"} <= (
        set(plan["sections"]["artifacts"])
    )
    assert "Note:" not in result["message"]  # the files describe this run


def test_the_values_are_the_files(example) -> None:
    prepared = prepare(example, health=True)
    health = prepared.health
    summary = json.loads(example.quality_summary.read_text())["run"]
    assert health.metrics["health/verdicts/healthy"] == summary["verdicts"]["healthy"] == 32
    assert health.metrics["health/artifacts/records"] == 32
    assert health.metrics["health/failures/attempts"] == 1
    assert health.metrics["health/failures/terminal"] == 0
    assert health.verdict == "healthy"
    assert health.verdicts_fit()
    assert health.files["quality_summary.json"] == example.quality_summary.read_bytes()


def test_the_worst_verdict_is_the_runs(example) -> None:
    summary = json.loads(example.quality_summary.read_text())
    verdicts = summary["run"]["verdicts"]
    verdicts.update(healthy=30, unobserved=2)
    example.quality_summary.write_text(json.dumps(summary))
    assert read_health(example).verdict == "unobserved"
    verdicts.update(healthy=29, unhealthy=1)
    example.quality_summary.write_text(json.dumps(summary))
    assert read_health(example).verdict == "unhealthy"


def test_the_samples_table_has_each_rollouts_verdict(example) -> None:
    lines = example.rollout_verdicts.read_text().splitlines()
    changed = json.loads(lines[5])
    changed["verdict"] = "unhealthy"
    lines[5] = json.dumps(changed)
    example.rollout_verdicts.write_text("\n".join(lines) + "\n")
    table, _ = samples_table(example)
    column = table["columns"].index("health_verdict")
    by_key = {(row[0], row[1]): row[column] for row in table["data"]}
    assert len(by_key) == 32
    assert by_key[(changed["_ng_task_index"], changed["_ng_rollout_index"])] == "unhealthy"
    assert sorted(by_key.values()).count("healthy") == 31


def test_an_index_that_is_a_list_keys_a_verdict_as_any_other_value_does(example) -> None:
    """Found by breaking a run's files at random: it was a TypeError (unhashable) that failed
    every tracking export and ``inspect``."""
    verdicts = example.rollout_verdicts.read_text().splitlines()
    rows = example.rollouts.read_text().splitlines()
    for lines, number in ((verdicts, 5), (rows, 5)):
        changed = json.loads(lines[number])
        changed["_ng_task_index"] = [changed["_ng_task_index"]]
        lines[number] = json.dumps(changed)
    example.rollout_verdicts.write_text("\n".join(verdicts) + "\n")
    example.rollouts.write_text("\n".join(rows) + "\n")
    prepared = prepare(example, rollouts_table=True, health=True)
    prepared.discard()
    assert prepared.health.verdicts is not None
    assert len(prepared.health.verdicts) == 32


def samples_table(run: RunArtifacts) -> tuple[dict[str, Any], list[str]]:
    """The samples table an export of ``run`` sends (Gym's health files read), and what the
    reading noted of them."""
    prepared = prepare(run, rollouts_table=True, health=True)
    try:
        assert prepared.rollouts_table is not None
        table = json.loads((prepared.rollouts_table.parent / "samples.json").read_text())
    finally:
        prepared.discard()
    assert prepared.health is not None
    return table, prepared.health.notes


def _samples_verdicts(run: RunArtifacts) -> tuple[list[object], list[str]]:
    """The samples table's health_verdict column, row by row, and what the reading noted."""
    table, notes = samples_table(run)
    if "health_verdict" not in table["columns"]:
        return [], notes
    column = table["columns"].index("health_verdict")
    return [row[column] for row in table["data"]], notes


def test_rows_without_indices_get_the_verdicts_gym_numbers_them_by(example) -> None:
    """58 of Gym 0.7.0's example files hold rows without indices; Gym's health checks number
    such a row by its place among the file's rows (blank lines not counted), rollout 0. Their
    verdicts were left out as "not this run's" (50 of Gym's 141 example runs)."""
    rows = [json.loads(line) for line in example.rollouts.read_text().splitlines()]
    by_key = {
        (line["_ng_task_index"], line["_ng_rollout_index"]): line
        for line in map(json.loads, example.rollout_verdicts.read_text().splitlines())
    }
    verdicts, expected = [], []
    for ordinal, row in enumerate(rows):
        line = by_key[(row.pop("_ng_task_index"), row.pop("_ng_rollout_index"))]
        # Its rollout_id stays the trajectory's own, as Gym's health checks take it.
        verdicts.append({**line, "_ng_task_index": ordinal, "_ng_rollout_index": 0})
        expected.append(line["verdict"])
    verdicts[7]["verdict"] = "unhealthy"
    expected[7] = "unhealthy"
    lines = [json.dumps(row) for row in rows]
    lines.insert(3, "")  # a blank line: a row's place is not its line's
    example.rollouts.write_text("\n".join(lines) + "\n")
    example.rollout_verdicts.write_text("".join(json.dumps(line) + "\n" for line in verdicts))
    assert _samples_verdicts(example) == (expected, [])


def test_rows_that_share_their_indices_each_get_their_verdict(example) -> None:
    """Gym writes a verdict line for each of two rows that share their indices (both
    unhealthy: ``rollout_duplicate_identity``), as in its graphwalks example; the lines were
    counted as one and the verdicts left out as "not this run's"."""
    rows = example.rollouts.read_text().splitlines()
    verdicts = example.rollout_verdicts.read_text().splitlines()
    twin = json.loads(rows[4])
    key = (twin["_ng_task_index"], twin["_ng_rollout_index"])
    at = next(
        number
        for number, line in enumerate(verdicts)
        if (json.loads(line)["_ng_task_index"], json.loads(line)["_ng_rollout_index"]) == key
    )
    doubled = {**json.loads(verdicts[at]), "verdict": "unhealthy"}
    verdicts[at : at + 1] = [json.dumps(doubled)] * 2
    rows.append(rows[4])
    example.rollouts.write_text("\n".join(rows) + "\n")
    example.rollout_verdicts.write_text("\n".join(verdicts) + "\n")
    summary = json.loads(example.quality_summary.read_text())
    summary["run"]["artifacts"]["records"] = 33
    example.quality_summary.write_text(json.dumps(summary))
    column, notes = _samples_verdicts(example)
    assert notes == []
    assert len(column) == 33
    assert column[4] == column[32] == "unhealthy"


def test_reports_of_another_run_are_left_out_and_said(cli, example) -> None:
    rows = example.rollouts.read_text().splitlines()
    example.rollouts.write_text("\n".join(rows[:-2]) + "\n")  # 30 rollouts, reports of 32
    result = _plan(cli, example, "mlflow")
    assert (
        f"Note: {example.quality_summary} describes 32 records and the run holds 30: it is not "
        "this run's, so its metrics and verdict are left out"
    ) in result["message"]
    assert (
        f"Note: {example.rollout_verdicts} holds 32 verdicts for the run's 30 rollouts"
        in (result["message"])
    )
    metrics = result["plan"]["metric_names"]
    assert [name for name in metrics if name.startswith("health/")] == [
        "health/failures/attempts",
        "health/failures/terminal",
    ]
    assert "health/verdict" not in result["plan"]["sections"]["tags"]
    assert "quality_summary.json" not in result["plan"]["sections"]["artifacts"]
    inspected = cli("inspect", example.rollouts).stdout
    assert "describes 32 records and the run holds 30" in inspected


def test_a_run_without_health_files_exports_as_before(cli, sample_run) -> None:
    result = _plan(cli, sample_run.run, "mlflow")
    assert not [name for name in result["plan"]["metric_names"] if name.startswith("health/")]
    assert "health/verdict" not in result["plan"]["sections"]["tags"]
    assert "health: no verdicts" in cli("inspect", sample_run.rollouts).stdout


def test_the_wandb_dry_run_sends_the_health_values_and_the_verdict_column(cli, example) -> None:
    plan = _plan(cli, example, "wandb", "+wandb_mode=offline")["plan"]
    summary = plan["sections"]["summary"]
    assert {"health/verdict", "health/verdicts/healthy", "health/failures/attempts"} <= set(summary)
    assert any("health_verdict" in table for table in plan["sections"]["tables"])


def test_a_secret_in_a_failure_never_leaves(example, canaries) -> None:
    row = json.loads(example.failures.read_text())
    token = canaries.all[0]
    row["_ng_failure_message"] = f"401 Unauthorized: Authorization: Bearer {token}"
    row["_ng_failure_response_body"] = json.dumps({"api_key": token})
    example.failures.write_text(json.dumps(row) + "\n")
    health = read_health(example)
    assert canaries.found_in(health.files[example.failures.name].decode())  # as read
    uploaded = scrub_json_bytes(health.files[example.failures.name], lines=True).decode()
    assert canaries.found_in(uploaded) == []
    assert json.loads(uploaded)["_ng_task_index"] == 3
    summary = scrub_json_bytes(health.files["quality_summary.json"], lines=False)
    assert json.loads(summary) == json.loads(example.quality_summary.read_text())


def test_inspect_shows_the_health_of_the_run(cli, example) -> None:
    shown = cli("inspect", example.rollouts).stdout
    assert "health: healthy (32 healthy, 0 unhealthy, 0 unobserved)" in shown
    assert "failed attempts: 1 (0 terminal)" in shown
    data = json.loads(cli("inspect", example.rollouts, "--json").stdout)
    assert data["health"]["verdict"] == "healthy"


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("quality_summary.json", "{", "Malformed quality summary"),
        ("quality_summary.json", "[]", "no `run` section"),
        ("rollout_verdicts.jsonl", '{"verdict": 1}\n', "line 1 has no verdict"),
        ("aime24_rollouts_failures.jsonl", "not json\n", "Malformed failures file"),
    ],
)
def test_a_malformed_health_file_is_named(cli, example, name: str, text: str, said: str) -> None:
    (example.run_dir / name).write_text(text)
    with pytest.raises(RunFileError, match=said):
        read_health(example)
    done = cli("mlflow", f"+rollouts_jsonl_fpath={example.rollouts}", "--dry-run")
    assert done.exit_code == 1
    assert said in done.stdout
    assert name in done.stdout
    assert "Traceback" not in done.output


def _second_run_beside(run: RunArtifacts) -> Path:
    """Another run of the benchmark in the same directory, with as many rollouts: what Gym's
    structeval directory holds (its reports are the last run's, named alike)."""
    other = run.run_dir / "aime24_repeat_rollouts.jsonl"
    shutil.copyfile(run.rollouts, other)
    shutil.copyfile(
        run.aggregate_metrics, run.run_dir / "aime24_repeat_rollouts_aggregate_metrics.json"
    )
    return other


def test_reports_in_a_directory_of_several_runs_are_left_out_unless_they_name_the_run(
    cli, example
) -> None:
    """#58: with two runs of equal record counts in one directory the other run's reports
    travelled silently; nothing in them names a run (Gym's rollout ids are <task>-<rollout>)."""
    _second_run_beside(example)
    result = _plan(cli, example, "mlflow")
    assert "the directory also holds aime24_repeat_rollouts.jsonl" in result["message"]
    assert "nothing in them names this run, so they are left out" in result["message"]
    assert [m for m in result["plan"]["metric_names"] if m.startswith("health/")] == [
        "health/failures/attempts",  # the failures file is named after the run: it stays
        "health/failures/terminal",
    ]
    assert "health/verdict" not in result["plan"]["sections"]["tags"]
    assert not {"quality_summary.json", "rollout_verdicts.jsonl"} & set(
        result["plan"]["sections"]["artifacts"]
    )
    assert "nothing in them names this run" in cli("inspect", example.rollouts).stdout


def _ids_of_the_run_itself(run: RunArtifacts, verdict_id: str = "run-a") -> None:
    """Each rollout given an id of its run body's own (``_ng_rollout_id``), and the verdicts
    naming the ids ``verdict_id`` makes."""
    rows = [json.loads(line) for line in run.rollouts.read_text().splitlines()]
    for row in rows:
        row["_ng_rollout_id"] = f"run-a/{row['_ng_task_index']}/{row['_ng_rollout_index']}"
    run.rollouts.write_text("".join(json.dumps(row) + "\n" for row in rows))
    verdicts = [json.loads(line) for line in run.rollout_verdicts.read_text().splitlines()]
    for line in verdicts:
        line["rollout_id"] = f"{verdict_id}/{line['_ng_task_index']}/{line['_ng_rollout_index']}"
    run.rollout_verdicts.write_text("".join(json.dumps(line) + "\n" for line in verdicts))


def test_reports_that_name_the_run_by_its_rollout_ids_travel_beside_another_run(
    cli, example
) -> None:
    _ids_of_the_run_itself(example)
    _second_run_beside(example)
    result = _plan(cli, example, "mlflow")
    assert "left out" not in result["message"]
    assert "health/verdict" in result["plan"]["sections"]["tags"]
    assert "rollout_verdicts.jsonl" in result["plan"]["sections"]["artifacts"]


def test_verdicts_under_other_rollout_ids_are_not_this_runs(cli, example) -> None:
    _ids_of_the_run_itself(example, verdict_id="run-b")
    result = _plan(cli, example, "mlflow")
    assert (
        f"{example.rollout_verdicts} holds 32 verdicts for the run's 32 rollouts (0 without "
        "one, 32 under another id)"
    ) in result["message"]
