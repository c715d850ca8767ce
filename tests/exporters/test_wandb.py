"""The wandb exporter against the real wandb SDK in offline mode (SPEC §3.7): the written
offline run is read back and checked. Building the wandb environment needs the index."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evalexport.backends.wandb.exporter import FINGERPRINT_KEY, WandbConfig, WandbExporter
from evalexport.guard import run_fingerprint
from evalexport.metrics import flatten_metrics
from evalexport.pipeline import export_run
from evalexport.reading import prepare
from evalexport.results import ExportStatus
from evalexport.spec.options import parse_options
from tests.exporters.wandb_support import read_offline_run

pytestmark = pytest.mark.downloads

DEFAULT_REQUIREMENT = WandbConfig.model_fields["requirement"].default


def test_the_session_environment_is_the_one_the_exporter_builds() -> None:
    from tests.conftest import WANDB_REQUIREMENT

    assert DEFAULT_REQUIREMENT == WANDB_REQUIREMENT


def _export(sample, **options):
    exporter = WandbExporter()
    config = parse_options(
        exporter, {"rollouts_jsonl_fpath": str(sample.rollouts), "wandb_mode": "offline", **options}
    )
    return export_run(exporter, sample.run, config)


def test_the_offline_run_holds_config_summary_and_the_rollouts_table(
    wandb_python, sample_run
) -> None:
    result = _export(sample_run, wandb_project="aime24-e2e", wandb_name="nightly")
    assert result.status is ExportStatus.SUCCEEDED, result.message
    run_dir = Path(result.details["run_dir"])
    assert run_dir.parent == Path(os.environ["WANDB_DIR"]) / "wandb"
    stored = read_offline_run(wandb_python, run_dir)
    times = prepare(sample_run.run).evaluation
    assert stored["run"] == {
        "id": result.run_id,
        "project": "aime24-e2e",
        "name": "nightly",
        "start_time": stored["run"]["start_time"],  # W&B's own: the export's
    }
    config = {k: v for k, v in stored["config"].items() if k != "_wandb"}
    assert config == sample_run.run.read_saved_config()
    flat = flatten_metrics(sample_run.run.read_aggregate_metrics())
    for name, value in flat.values.items():
        assert stored["summary"][name] == value, name
    assert stored["summary"]["aime24_math_tool_agent/used_tools"] is True
    assert (
        "aime24_math_tool_agent/pass@1[avg-of-4]/no_answer/std_dev_across_runs" in stored["summary"]
    )
    assert stored["summary"][FINGERPRINT_KEY] == run_fingerprint(sample_run.run)
    assert "evalexport" in stored["tags"]
    assert stored["summary"]["evaluation/started_at"] == times.described()["started_at"]
    assert stored["summary"]["evaluation/ended_at"] == times.described()["ended_at"]
    assert stored["summary"]["evalexport/exported_at"] >= times.described()["ended_at"]
    names = sorted(stored["tables"])
    assert [name.split("_", 1)[0] for name in names] == ["Rollouts", "Samples"]
    table, samples = (stored["tables"][name] for name in names)
    assert samples["columns"][:4] == ["task_index", "rollout_index", "agent", "reward"]
    assert [row[3] for row in samples["data"]] == [
        json.loads(line)["reward"] for line in sample_run.rollouts.read_text().splitlines()
    ]
    assert table["columns"] == ["Rollout"]
    assert len(table["data"]) == sample_run.rollout_count
    row = json.loads(sample_run.rollouts.read_text().splitlines()[5])
    del row["ng_trajectory"]
    assert json.loads(table["data"][5][0]) == row


def test_upload_rollouts_false_logs_no_table(wandb_python, sample_run) -> None:
    result = _export(sample_run, upload_rollouts=False)
    assert read_offline_run(wandb_python, Path(result.details["run_dir"]))["tables"] == {}


def test_a_second_export_is_skipped_and_writes_no_run(wandb_python, sample_run, cli) -> None:
    args = ("wandb", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "+wandb_mode=offline")
    assert cli(*args).exit_code == 0
    second = cli(*args)
    assert second.exit_code == 0
    assert second.stdout.startswith("skipped (already exported):")
    runs = list((Path(os.environ["WANDB_DIR"]) / "wandb").glob("offline-run-*"))
    assert len(runs) == 1


def test_every_export_of_the_data_writes_the_run_of_its_own_id(
    wandb_python, sample_run, cli
) -> None:
    """The offline run's id is the data's in its project (``run_id_of``): a rerun after a lost
    marker writes a run of the same id, so ``wandb sync`` of either adds to one W&B run, and
    the rerun names the earlier directory; nothing is removed."""
    from evalexport.backends.wandb.worker import run_id_of

    args = ("wandb", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "+wandb_mode=offline")
    first = cli(*args, "--json")
    assert first.exit_code == 0, first.output
    expected = run_id_of(run_fingerprint(sample_run.run), None, "aime24")
    assert json.loads(first.stdout)["run_id"] == expected
    for marker in sample_run.run.run_dir.glob("*_export_done"):
        marker.unlink()
    second = json.loads(cli(*args, "--json").stdout)
    assert second["status"] == "succeeded", second["message"]
    assert second["run_id"] == expected
    runs = sorted((Path(os.environ["WANDB_DIR"]) / "wandb").glob(f"offline-run-*-{expected}"))
    assert len(runs) == 2  # the earlier one is kept
    assert any(
        f"an earlier offline export of this run's data is in {runs[0]}" in notice
        for notice in second["notices"]
    ), second["notices"]


def test_an_offline_export_within_the_second_of_an_earlier_one_leaves_it_as_it_is(
    wandb_python, sample_run, cli
) -> None:
    """W&B names an offline run's directory by its start, to the second, and its id: a rerun
    within the second of an earlier export (a fast machine, a marker removed at once) waits for
    a second of its own, so its directory is named as every offline run of the data is (W&B
    0.2x would add ``-1`` to a taken name, which the notice naming earlier exports, and
    ``offline-run-*-ID``, then miss) and the earlier one is left as it is."""
    import time

    from evalexport.backends.wandb.worker import run_id_of

    expected = run_id_of(run_fingerprint(sample_run.run), None, "aime24")
    runs = Path(os.environ["WANDB_DIR"]) / "wandb"
    now = time.time()
    earlier = [
        runs / f"offline-run-{time.strftime('%Y%m%d_%H%M%S', time.localtime(now + s))}-{expected}"
        for s in range(3)
    ]
    for directory in earlier:
        (directory / "files").mkdir(parents=True)
        (directory / "files" / "mine.txt").write_text("an earlier export's")
    result = json.loads(
        cli(
            "wandb", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "+wandb_mode=offline", "--json"
        ).stdout
    )
    assert result["status"] == "succeeded", result["message"]
    for directory in earlier:
        assert sorted(p.name for p in directory.rglob("*")) == ["files", "mine.txt"], directory
    assert len(list(runs.glob(f"offline-run-*-{expected}"))) == len(earlier) + 1
    assert not list(runs.glob(f"offline-run-*-{expected}-*"))


def test_the_api_key_and_canaries_leak_nowhere(wandb_python, sample_run, cli) -> None:
    key = "canary0wandb0key0" + "9" * 23
    run = cli(
        "wandb",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        "+wandb_mode=offline",
        f"+wandb_api_key={key}",
        "--json",
    )
    assert run.exit_code == 0, run.output
    wandb_dir = Path(os.environ["WANDB_DIR"])
    for path in wandb_dir.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path
    assert key not in run.output
    assert sample_run.canaries.found_in(run.output) == []
    assert sample_run.canaries.found_in_tree(wandb_dir) == []


@pytest.mark.wandb_sdk
def test_an_old_wandb_pin_writes_the_same_offline_run(sample_run, cli) -> None:
    run = cli(
        "wandb",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        "+wandb_mode=offline",
        "+requirement=wandb==0.17.9",
        "--json",
    )
    assert run.exit_code == 0, run.output
    result = json.loads(run.stdout)
    python = Path(result["environment"]) / "bin" / "python"
    stored = read_offline_run(python, Path(result["details"]["run_dir"]))
    assert stored["summary"][FINGERPRINT_KEY] == run_fingerprint(sample_run.run)
    (rollouts,) = (t for name, t in stored["tables"].items() if name.startswith("Rollouts_"))
    assert len(rollouts["data"]) == sample_run.rollout_count


def test_an_offline_run_goes_into_a_wandb_dir_that_did_not_exist_yet(
    wandb_python, sample_run, tmp_path, monkeypatch
) -> None:
    wandb_dir = tmp_path / "scratch" / "user" / "wandb"  # as a Slurm script sets it
    monkeypatch.setenv("WANDB_DIR", str(wandb_dir))
    result = _export(sample_run)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert Path(result.details["run_dir"]).parent == wandb_dir / "wandb"


def test_the_run_describes_the_evaluation_not_the_worker(wandb_python, sample_run) -> None:
    """No worker path, worker Python or worker requirements: the program is evalexport's."""
    result = _export(sample_run)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    run_dir = Path(result.details["run_dir"])
    stored = read_offline_run(wandb_python, run_dir)
    assert "requirements.txt" not in stored["files"]
    metadata_file = run_dir / "files" / "wandb-metadata.json"
    metadata = json.loads(metadata_file.read_text()) if metadata_file.exists() else {}
    assert metadata.get("program", "evalexport").startswith("evalexport")
    written = "\n".join(
        path.read_text(errors="replace") for path in run_dir.rglob("*") if path.is_file()
    )
    assert "evalexport_worker_runner" not in written
    assert "sdk-envs" not in written  # the cached environment's paths


def _export_by_the_environment(sample, **options):
    exporter = WandbExporter()
    config = parse_options(exporter, {"rollouts_jsonl_fpath": str(sample.rollouts), **options})
    return export_run(exporter, sample.run, config)


def test_wandbs_own_variables_steer_an_export_given_no_option(
    wandb_python, sample_run, monkeypatch
) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_PROJECT", "from-the-environment")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    result = _export_by_the_environment(sample_run)
    assert result.status is ExportStatus.SUCCEEDED, result.message  # offline: no key asked
    assert result.details["settings"]["wandb_mode"] == "WANDB_MODE from the environment"
    stored = read_offline_run(wandb_python, Path(result.details["run_dir"]))
    assert stored["run"]["project"] == "from-the-environment"


def test_an_option_beats_wandbs_variables(wandb_python, sample_run, monkeypatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "online")
    monkeypatch.setenv("WANDB_PROJECT", "from-the-environment")
    result = _export_by_the_environment(
        sample_run, wandb_mode="offline", wandb_project="from-the-option"
    )
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert result.details["settings"]["wandb_project"] == "+wandb_project"
    stored = read_offline_run(wandb_python, Path(result.details["run_dir"]))
    assert stored["run"]["project"] == "from-the-option"


GUARANTEE_FIXTURES = ("wandb_python",)
"""What serves wandb to the guarantee suite (tests/exporters/test_guarantees.py)."""


def guarantee_options(tmp_path: Path) -> dict[str, object]:
    """What the guarantee suite exports with (tests/exporters/test_guarantees.py)."""
    return {"wandb_mode": "offline"}


def test_rows_no_one_expects_export_whole(wandb_python, make_sample_run) -> None:
    """A timestamp past the year 9999, a lone surrogate, a task index given as text (#46)."""
    from evalexport.testing.guarantees import write_odd_rows

    sample = make_sample_run("odd", agents=("aime24_math_tool_agent",))
    write_odd_rows(sample.rollouts)
    result = _export(sample)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    stored = read_offline_run(wandb_python, Path(result.details["run_dir"]))
    rollouts, samples = (stored["tables"][name] for name in sorted(stored["tables"]))
    assert json.loads(rollouts["data"][0][0])["grader_note"] == "unpaired \ud800 surrogate"
    tasks = [row[0] for row in samples["data"]]
    assert all(isinstance(task, str) for task in tasks), tasks  # one kind a column, as W&B takes
    assert tasks[:2] == ["0", "0"]


def test_an_answer_wandb_would_read_as_an_artifact_is_logged_as_text(
    wandb_python, make_sample_run
) -> None:
    """W&B types a string starting ``wandb-artifact://`` as a reference to an artifact, which a
    text column refuses: a model's answer of that form must not fail the export."""
    sample = make_sample_run("artifact-text", agents=("aime24_math_tool_agent",))
    rows = [json.loads(line) for line in sample.rollouts.read_text().splitlines()]
    answer = "wandb-artifact://entity/project/answer:v0"
    rows[-1]["expected_answer"] = answer
    sample.rollouts.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = _export(sample)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    (notice,) = [n for n in result.notices if "cannot type" in n]
    expected = "table Samples (a value of another type than the rest in column expected_answer)"
    assert expected in notice
    assert "allow_mixed_types" in notice
    stored = read_offline_run(wandb_python, Path(result.details["run_dir"]))
    samples = next(t for name, t in stored["tables"].items() if name.startswith("Samples_"))
    column = samples["columns"].index("expected_answer")
    assert len(samples["data"]) == len(rows)
    assert samples["data"][-1][column] == answer
