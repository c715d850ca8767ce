"""The atif exporter end to end (SPEC §4): strict, atomic, streaming, validated output."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import atif
import pytest

from evalexport.backends.atif.files import convert_file
from evalexport.backends.atif.identity import RECORD_NAME
from evalexport.trajectory.convert import TrajectoryIdentity
from tests.trajectory.parity import tree

TOOL_AGENT = "aime24_math_tool_agent"

GYM_MANIFEST_KEYS = ("_ng_rollout_index", "_ng_task_index", "expected_sha256", "trajectory_path")
"""The keys of Gym's ``AtifReverifyManifestEntry`` (``extra="forbid"``)."""


def _atif(cli, rollouts: Path, output: Path, *extra: str):
    return cli(
        "atif",
        f"+rollouts_jsonl_fpath={rollouts}",
        f"+output_dirpath={output}",
        "+agent_version=0.3.1",
        *extra,
    )


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir()) if parent.exists() else []


@pytest.fixture
def atif_run(make_sample_run):
    """A one-agent run (strict ATIF export takes one agent per file), tool calls included."""
    return make_sample_run(agents=(TOOL_AGENT,))


def test_every_rollout_becomes_one_valid_trajectory_with_a_manifest(
    cli, atif_run, tmp_path
) -> None:
    output = tmp_path / "out" / "atif"
    run = _atif(cli, atif_run.rollouts, output, "--json")
    assert run.exit_code == 0, run.output
    result = json.loads(run.stdout)
    assert result["status"] == "succeeded"
    assert result["details"]["trajectory_count"] == atif_run.rollout_count == 24
    rollouts = [json.loads(line) for line in atif_run.rollouts.read_text().splitlines()]
    manifest = [json.loads(line) for line in (output / "manifest.jsonl").read_text().splitlines()]
    assert [entry["trajectory_path"] for entry in manifest] == [
        f"{row['_ng_task_index']}-{row['_ng_rollout_index']}.json" for row in rollouts
    ]
    assert sorted(p.name for p in output.iterdir()) == sorted(
        ["manifest.jsonl", RECORD_NAME, *(entry["trajectory_path"] for entry in manifest)]
    )
    for entry, rollout in zip(manifest, rollouts, strict=True):
        data = (output / entry["trajectory_path"]).read_bytes()
        assert entry["expected_sha256"] == hashlib.sha256(data).hexdigest()
        assert (entry["_ng_task_index"], entry["_ng_rollout_index"]) == (
            rollout["_ng_task_index"],
            rollout["_ng_rollout_index"],
        )
        trajectory = atif.Trajectory.model_validate(json.loads(data))
        assert trajectory.schema_version == "ATIF-v1.7"
        assert trajectory.session_id == "aime24_rollouts"
        assert trajectory.trajectory_id == (
            f"aime24_rollouts:{rollout['_ng_task_index']}:{rollout['_ng_rollout_index']}"
        )
        assert trajectory.agent.version == "0.3.1"
        assert trajectory.final_metrics.total_steps == len(trajectory.steps)
    assert _leftovers(output.parent) == ["atif"]


def test_the_steps_follow_the_conversation_with_tool_calls_reasoning_and_metrics(
    cli, atif_run, tmp_path
) -> None:
    output = tmp_path / "atif"
    _atif(cli, atif_run.rollouts, output)
    data = json.loads((output / "0-0.json").read_text())
    assert [step["source"] for step in data["steps"]] == ["user", "agent", "agent"]
    user, tools, answer = data["steps"]
    row = json.loads(atif_run.rollouts.read_text().splitlines()[0])
    conversation = row["ng_trajectory"]["invocations"][0]["conversation"]
    assert user["message"] == conversation[0]["content"]
    assert [call["function_name"] for call in tools["tool_calls"]] == ["python", "lookup"]
    assert all(isinstance(call["arguments"], dict) for call in tools["tool_calls"])
    assert [r["source_call_id"] for r in tools["observation"]["results"]] == [
        call["tool_call_id"] for call in tools["tool_calls"]
    ]
    assert tools["message"] == ""
    assert answer["message"][0]["text"].startswith("The answer is")
    assert answer["reasoning_content"]
    assert tools["reasoning_content"]
    assert answer["timestamp"].endswith("Z")
    assert answer["llm_call_count"] == 1
    assert answer["metrics"]["cached_tokens"] == 512
    assert data["extra"]["nemo_gym"]["conversion"] == {
        "profile": "ng-trajectory-to-atif-v1",
        "status": "complete",
    }


def test_coverage_gaps_fail_the_whole_export_naming_rows_and_codes_and_leave_nothing(
    cli, make_sample_run, tmp_path
) -> None:
    sample = make_sample_run(agents=(TOOL_AGENT,), rows_with_gaps=[2, 7])
    output = tmp_path / "out" / "atif"
    run = _atif(cli, sample.rollouts, output, "--json")
    assert run.exit_code == 1
    result = json.loads(run.stdout)
    assert result["details"]["rejected_rows"] == [
        f"line {n}: ng_trajectory.gaps: source coverage gaps are not supported by strict export "
        "(resolution_unavailable); +allow_gaps=[resolution_unavailable] accepts them"
        for n in (3, 8)
    ]
    assert result["message"].startswith("ATIF export rejected 2 of 24 rows of ")
    assert result["message"].endswith(
        "\nWith +allow_gaps=[resolution_unavailable] every rejected row converts (beyond Gym's "
        "strict profile: each trajectory, relaxed.jsonl and the result say what it needed; "
        "docs/exporters/atif.md lists each option)."
    )
    assert not (tmp_path / "out").exists()


def test_allowed_gaps_are_exported_and_recorded_in_each_trajectory_the_manifest_and_result(
    cli, make_sample_run, tmp_path
) -> None:
    sample = make_sample_run(agents=(TOOL_AGENT,), rows_with_gaps=[2, 7])
    output = tmp_path / "atif"
    run = _atif(cli, sample.rollouts, output, "+allow_gaps=[resolution_unavailable]", "--json")
    assert run.exit_code == 0, run.output
    details = json.loads(run.stdout)["details"]
    assert details["trajectories_with_gaps"] == 2
    assert details["gap_counts"] == {"resolution_unavailable": 2}
    manifest = [json.loads(line) for line in (output / "manifest.jsonl").read_text().splitlines()]
    assert {frozenset(entry) for entry in manifest} == {frozenset(GYM_MANIFEST_KEYS)}
    relaxed = [json.loads(line) for line in (output / "relaxed.jsonl").read_text().splitlines()]
    assert [(entry["trajectory_path"], entry["gap_codes"]) for entry in relaxed] == [
        ("0-2.json", ["resolution_unavailable"]),
        ("1-3.json", ["resolution_unavailable"]),
    ]
    data = json.loads((output / "0-2.json").read_text())
    assert data["extra"]["nemo_gym"]["conversion"]["status"] == "partial"
    assert data["extra"]["nemo_gym"]["gaps"] == [
        {"code": "resolution_unavailable", "invocation_id": "root"}
    ]
    clean = json.loads((output / "0-0.json").read_text())
    assert "gaps" not in clean["extra"]["nemo_gym"]


def test_a_gap_that_is_not_allowed_still_fails(cli, make_sample_run, tmp_path) -> None:
    sample = make_sample_run(agents=(TOOL_AGENT,), rows_with_gaps=[2])
    run = _atif(cli, sample.rollouts, tmp_path / "atif", "+allow_gaps=[turns_unavailable]")
    assert run.exit_code == 1
    assert "(resolution_unavailable)" in run.stdout


def test_an_agent_that_publishes_no_turns_is_refused_even_with_its_gaps_allowed(
    cli, make_sample_run, tmp_path
) -> None:
    sample = make_sample_run(agents=(TOOL_AGENT,), publishes_turns=False, tasks=1, repeats=1)
    strict = _atif(cli, sample.rollouts, tmp_path / "a")
    assert "(conversation_unavailable, turns_unavailable)" in strict.stdout
    allowed = _atif(
        cli,
        sample.rollouts,
        tmp_path / "b",
        "+allow_gaps=[turns_unavailable,conversation_unavailable]",
        "--json",
    )
    assert allowed.exit_code == 1
    assert json.loads(allowed.stdout)["details"]["rejected_rows"] == [
        "line 1: ng_trajectory.invocations: expected exactly one root invocation, got 0"
    ]


def test_rows_without_a_trajectory_are_named(cli, make_sample_run, tmp_path) -> None:
    sample = make_sample_run(agents=(TOOL_AGENT,), rows_without_trajectory=[0, 20])
    run = _atif(cli, sample.rollouts, tmp_path / "atif", "--json")
    rows = json.loads(run.stdout)["details"]["rejected_rows"]
    assert rows == [
        f"line {n}: ng_trajectory: missing: expected a schema 1.0 trajectory record"
        for n in (1, 21)
    ]


def test_a_malformed_line_fails_with_its_line_and_true_column_and_leaves_nothing(
    cli, make_sample_run, tmp_path
) -> None:
    sample = make_sample_run(agents=(TOOL_AGENT,), malformed_lines=[20])
    run = _atif(cli, sample.rollouts, tmp_path / "atif")
    assert run.exit_code == 1
    assert "line 20: invalid JSON (Expecting property name enclosed in double quotes" in run.stdout
    assert "at column 37)" in run.stdout
    assert _leftovers(tmp_path) == ["run"]


def test_a_blank_line_is_refused_as_gym_refuses_it(cli, make_sample_run, tmp_path) -> None:
    sample = make_sample_run(agents=(TOOL_AGENT,), blank_lines=[5])
    run = _atif(cli, sample.rollouts, tmp_path / "atif")
    assert run.exit_code == 1
    assert "line 5: blank JSONL records are not supported" in run.stdout


def test_rows_of_two_agents_are_refused_naming_both(cli, sample_run, tmp_path) -> None:
    run = _atif(cli, sample_run.rollouts, tmp_path / "atif")
    assert run.exit_code == 1
    assert "requires one agent_ref.name per file" in run.stdout
    assert "aime24_math_simple_agent, aime24_math_tool_agent" in run.stdout
    assert _leftovers(tmp_path) == ["run"]


def test_an_identical_rerun_into_the_same_output_is_skipped_and_keeps_the_output(
    cli, atif_run, tmp_path
) -> None:
    output = tmp_path / "atif"
    assert _atif(cli, atif_run.rollouts, output).exit_code == 0
    before = _files(output)
    again = _atif(cli, atif_run.rollouts, output)
    assert again.exit_code == 0, again.output
    assert again.stdout.startswith(f"skipped (already exported): {output} already holds")
    result = json.loads(_atif(cli, atif_run.rollouts, output, "--json").stdout)
    assert result["status"] == "skipped"
    assert result["skip_reason"] == "already exported"
    assert result["details"]["output_dirpath"] == str(output)
    assert result["details"]["trajectory_count"] == 24
    assert _files(output) == before
    assert _leftovers(tmp_path) == ["atif", "run"]


@pytest.mark.parametrize(
    ("tamper", "said"),
    [
        (lambda output: (output / "0-1.json").unlink(), "0-1.json is missing"),
        (
            lambda output: (output / "0-1.json").write_bytes(b"{}"),
            "0-1.json has changed since it was written",
        ),
        (
            lambda output: (
                (output / "0-1.json").replace(output / "elsewhere.json")
                and (output / "0-1.json").symlink_to(output / "elsewhere.json")
            ),
            "0-1.json is not a regular file",
        ),
        (lambda output: (output / "manifest.jsonl").unlink(), "its manifest.jsonl is missing"),
        (
            lambda output: (output / "manifest.jsonl").write_text(
                "".join((output / "manifest.jsonl").read_text().splitlines(True)[1:])
            ),
            "manifest.jsonl names 23 trajectories, the export wrote 24",
        ),
    ],
    ids=["a file removed", "a file changed", "a file made a link", "no manifest", "a line gone"],
)
def test_a_rerun_into_an_output_that_no_longer_holds_what_it_wrote_fails_and_removes_nothing(
    cli, atif_run, tmp_path, tamper, said: str
) -> None:
    """The record alone is no proof (#67, found by a new user): a rerun reads the files back
    as the manifest names them before it says they are there."""
    output = tmp_path / "atif"
    assert _atif(cli, atif_run.rollouts, output).exit_code == 0
    tamper(output)
    before = _files(output) if (output / "manifest.jsonl").exists() else None
    for extra in ((), ("--dry-run",)):
        again = _atif(cli, atif_run.rollouts, output, *extra)
        assert again.exit_code == 1, again.output
        assert f"{output} holds the record of this very export" in again.stdout
        assert said in again.stdout
        assert "+output_dirpath" in again.stdout
    if before is not None:
        assert _files(output) == before  # nothing in it removed or rewritten


def test_a_dry_run_of_an_identical_rerun_says_it_would_be_skipped(cli, atif_run, tmp_path) -> None:
    output = tmp_path / "atif"
    assert _atif(cli, atif_run.rollouts, output).exit_code == 0
    dry = json.loads(_atif(cli, atif_run.rollouts, output, "--dry-run", "--json").stdout)
    assert dry["status"] == "skipped"
    assert dry["skip_reason"] == "already exported"
    assert dry["message"].startswith(f"dry run: the export would be skipped: {output} already")


def test_a_rerun_of_a_changed_run_fails_naming_the_output_and_what_changed(
    cli, atif_run, tmp_path
) -> None:
    output = tmp_path / "atif"
    assert _atif(cli, atif_run.rollouts, output).exit_code == 0
    before = _files(output)
    lines = atif_run.rollouts.read_text().splitlines(keepends=True)
    atif_run.rollouts.write_text("".join(lines[:-1]))
    for dry in ((), ("--dry-run",)):
        again = _atif(cli, atif_run.rollouts, output, *dry, "--json")
        assert again.exit_code == 1, again.output
        message = json.loads(again.stdout)["message"]
        assert f"Output path already exists: {output} holds the ATIF export of another" in message
        assert "the rollouts file's bytes differ (sha256:" in message
        assert "Choose a new +output_dirpath or remove the old one" in message
    assert _files(output) == before


def test_a_rerun_with_other_options_fails_naming_each_option_that_differs(
    cli, atif_run, tmp_path
) -> None:
    output = tmp_path / "atif"
    assert _atif(cli, atif_run.rollouts, output).exit_code == 0
    again = _atif(cli, atif_run.rollouts, output, "+agent_name=other", "+session_id=s2")
    assert again.exit_code == 1
    assert (
        f"Output path already exists: {output} holds the ATIF export of another run or other "
        f"options: +session_id was {atif_run.rollouts.stem}, now s2; +agent_name was unset, now "
        "other. Choose a new +output_dirpath or remove the old one."
    ) in " ".join(again.stdout.split())


def test_the_session_given_as_its_default_is_the_same_export(cli, atif_run, tmp_path) -> None:
    output = tmp_path / "atif"
    assert _atif(cli, atif_run.rollouts, output).exit_code == 0
    again = _atif(cli, atif_run.rollouts, output, f"+session_id={atif_run.rollouts.stem}")
    assert again.exit_code == 0, again.output
    assert again.stdout.startswith("skipped (already exported)")


@pytest.mark.parametrize("what", ["an empty directory", "Gym's own export", "a file"])
def test_an_output_that_is_no_evalexport_export_is_refused_as_before(
    cli, atif_run, tmp_path, what: str
) -> None:
    output = tmp_path / "atif"
    if what == "a file":
        output.write_text("x")
    else:
        output.mkdir()
        if what == "Gym's own export":
            (output / "manifest.jsonl").write_text("")
    again = _atif(cli, atif_run.rollouts, output)
    assert again.exit_code == 1
    assert f"Output path already exists: {output}, and holds no record" in again.stdout


def test_an_unreadable_record_fails_the_rerun_naming_it(cli, atif_run, tmp_path) -> None:
    output = tmp_path / "atif"
    assert _atif(cli, atif_run.rollouts, output).exit_code == 0
    (output / RECORD_NAME).write_text('{"exporter": "atif"}')
    again = _atif(cli, atif_run.rollouts, output)
    assert again.exit_code == 1
    assert f"{output / RECORD_NAME} is not the record an ATIF export writes" in again.stdout


def test_the_record_names_the_runs_bytes_and_the_options_beside_gyms_files(
    cli, atif_run, tmp_path
) -> None:
    output = tmp_path / "atif"
    assert _atif(cli, atif_run.rollouts, output, "+agent_name=math_agent").exit_code == 0
    record = json.loads((output / RECORD_NAME).read_text())
    digest = hashlib.sha256(atif_run.rollouts.read_bytes()).hexdigest()
    assert record["rollouts_sha256"] == f"sha256:{digest}"
    assert record["options"] == {
        "session_id": atif_run.rollouts.stem,
        "agent_version": "0.3.1",
        "agent_name": "math_agent",
        "agent": None,
        "allow_gaps": [],
        "relax": [],
    }
    assert record["trajectory_count"] == 24
    # Gym's manifest keeps exactly Gym's four keys.
    for line in (output / "manifest.jsonl").read_text().splitlines():
        assert sorted(json.loads(line)) == [
            "_ng_rollout_index",
            "_ng_task_index",
            "expected_sha256",
            "trajectory_path",
        ]


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` and its bytes, evalexport's record included."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))}


def test_the_run_directory_is_not_changed(cli, atif_run, tmp_path) -> None:
    before = tree(atif_run.run.run_dir)
    _atif(cli, atif_run.rollouts, tmp_path / "atif")
    assert tree(atif_run.run.run_dir) == before


def test_options_default_from_the_run_and_can_be_overridden(cli, atif_run, tmp_path) -> None:
    _atif(
        cli,
        atif_run.rollouts,
        tmp_path / "atif",
        "+session_id=2024",
        "+agent_name=math_agent",
    )
    data = json.loads((tmp_path / "atif" / "0-0.json").read_text())
    assert data["session_id"] == "2024"
    assert data["trajectory_id"] == "2024:0:0"
    assert data["agent"]["name"] == "math_agent"


def test_a_version_typed_as_a_number_stays_the_text_typed(cli, atif_run, tmp_path) -> None:
    run = cli(
        "atif",
        f"+rollouts_jsonl_fpath={atif_run.rollouts}",
        f"+output_dirpath={tmp_path / 'atif'}",
        "+agent_version=1.10",
    )
    assert run.exit_code == 0, run.output
    assert json.loads((tmp_path / "atif" / "0-0.json").read_text())["agent"]["version"] == "1.10"


@pytest.mark.parametrize("version", [None, "   "])
def test_agent_version_is_required_and_not_blank(cli, atif_run, tmp_path, version) -> None:
    extra = [] if version is None else [f"+agent_version={version}"]
    run = cli(
        "atif",
        f"+rollouts_jsonl_fpath={atif_run.rollouts}",
        f"+output_dirpath={tmp_path / 'x'}",
        *extra,
    )
    assert run.exit_code == 2
    assert "+agent_version" in run.stderr


def test_an_empty_rollouts_file_fails_and_leaves_nothing(cli, tmp_path) -> None:
    rollouts = tmp_path / "run" / "empty_rollouts.jsonl"
    rollouts.parent.mkdir()
    rollouts.write_text("")
    run = _atif(cli, rollouts, tmp_path / "atif")
    assert run.exit_code == 1
    assert "Rollouts file contains no records" in run.stdout
    assert _leftovers(tmp_path) == ["run"]


def test_the_aggregate_metrics_and_saved_config_are_not_needed(
    cli, make_sample_run, tmp_path
) -> None:
    sample = make_sample_run(agents=(TOOL_AGENT,), aggregate=False, saved_config=False)
    assert _atif(cli, sample.rollouts, tmp_path / "atif").exit_code == 0


def test_dry_run_converts_everything_and_writes_nothing(cli, atif_run, tmp_path) -> None:
    run = _atif(cli, atif_run.rollouts, tmp_path / "atif", "--dry-run")
    assert run.exit_code == 0
    assert "dry run: 24 trajectories" in run.stdout
    assert f"target: {tmp_path / 'atif'}" in run.stdout
    assert _leftovers(tmp_path) == ["run"]


def test_dry_run_fails_exactly_when_the_export_would(cli, make_sample_run, tmp_path) -> None:
    sample = make_sample_run(agents=(TOOL_AGENT,), rows_with_gaps=[3])
    dry = _atif(cli, sample.rollouts, tmp_path / "atif", "--dry-run")
    real = _atif(cli, sample.rollouts, tmp_path / "atif")
    assert (dry.exit_code, real.exit_code) == (1, 1)
    assert dry.stdout == real.stdout
    assert _leftovers(tmp_path) == ["run"]


def test_no_canary_secret_reaches_the_output(cli, atif_run, tmp_path) -> None:
    run = _atif(cli, atif_run.rollouts, tmp_path / "atif", "--json")
    assert atif_run.canaries.found_in(run.output) == []
    assert atif_run.canaries.found_in_tree(tmp_path / "atif") == []


def test_a_pool_of_processes_writes_the_same_files_in_the_same_order(
    make_sample_run, tmp_path
) -> None:
    """Large files convert in a process pool; order and bytes must not depend on it."""
    sample = make_sample_run(agents=(TOOL_AGENT,), tasks=60, repeats=8)
    assert sample.rollouts.stat().st_size > 2 * 1024 * 1024  # several chunks
    identity = TrajectoryIdentity("s", "1")
    rows: dict[int, list[tuple[str, str]]] = {1: [], 2: []}
    for workers, sink in rows.items():
        output = tmp_path / str(workers)
        output.mkdir()
        result = convert_file(
            sample.rollouts,
            identity,
            output=output,
            on_row=lambda row, sink=sink: sink.append((row.file_name, row.sha256)),
            workers=workers,
        )
        assert result.converted == 480
        assert not result.rejected
        assert len(list(output.iterdir())) == 480
    assert rows[1] == rows[2]
    assert tree(tmp_path / "1") == tree(tmp_path / "2")


def test_the_pool_takes_the_cores_this_process_may_use_not_the_machines(
    tmp_path, monkeypatch
) -> None:
    """Under ``taskset -c 1`` or a one-core Slurm allocation a large file converts in one
    process: a second process on the same core only adds the pool's cost."""
    from evalexport.backends.atif import files

    big = tmp_path / "big_rollouts.jsonl"
    with big.open("wb") as handle:
        handle.truncate(files.POOL_THRESHOLD_BYTES + 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {1}, raising=False)
    assert files.default_workers(big) == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert files.default_workers(big) == 2


def test_progress_is_reported_up_to_the_whole_file(atif_run) -> None:
    seen: list[tuple[int, int]] = []
    convert_file(
        atif_run.rollouts,
        TrajectoryIdentity("s", "1"),
        output=None,
        progress=lambda done, total: seen.append((done, total)),
    )
    size = atif_run.rollouts.stat().st_size
    assert seen
    assert seen[-1] == (size, size)


@pytest.mark.downloads
def test_every_trajectory_passes_harbors_own_validator(
    cli, atif_run, tmp_path, harbor_validator
) -> None:
    output = tmp_path / "atif"
    assert _atif(cli, atif_run.rollouts, output).exit_code == 0
    files = sorted(output.glob("*-*.json"))
    assert len(files) == 24
    for path in files:
        completed = harbor_validator(path)
        assert completed.returncode == 0, f"{path.name}: {completed.stdout}{completed.stderr}"
        assert "Trajectory is valid" in completed.stdout


@pytest.mark.downloads
def test_harbors_validator_rejects_a_broken_trajectory(
    cli, atif_run, tmp_path, harbor_validator
) -> None:
    output = tmp_path / "atif"
    _atif(cli, atif_run.rollouts, output)
    broken = tmp_path / "broken.json"
    data = json.loads(next(output.glob("*.json")).read_text())
    data["steps"][0]["reward"] = 1.0
    broken.write_text(json.dumps(data))
    completed = harbor_validator(broken)
    assert completed.returncode == 1
    assert "unexpected field" in completed.stderr


def test_an_output_path_under_a_file_fails_naming_it_and_leaves_nothing(
    cli, atif_run, tmp_path
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    run = _atif(cli, atif_run.rollouts, blocker / "atif")
    assert run.exit_code == 1
    assert run.stdout.startswith(f"failed: Cannot create the output directory {blocker / 'atif'}")
    assert "unexpected error" not in run.output
    assert _leftovers(tmp_path) == ["not-a-directory", "run"]


def test_with_turns_unavailable_allowed_steps_come_from_the_conversation_alone(
    cli, make_sample_run, tmp_path
) -> None:
    """An agent that publishes its conversation but no turns: the steps stand, without the
    per-turn timestamp, model and metrics, and every model call is kept as surplus evidence."""
    sample = make_sample_run(agents=(TOOL_AGENT,), tasks=1, repeats=1)
    row = json.loads(sample.rollouts.read_text())
    record = row["ng_trajectory"]
    record["turns"] = []
    record["gaps"] = [{"code": "turns_unavailable", "invocation_id": None, "detail": None}]
    sample.rollouts.write_text(json.dumps(row) + "\n")
    strict = _atif(cli, sample.rollouts, tmp_path / "strict")
    assert strict.exit_code == 1
    run = _atif(cli, sample.rollouts, tmp_path / "atif", "+allow_gaps=[turns_unavailable]")
    assert run.exit_code == 0, run.output
    data = json.loads((tmp_path / "atif" / "0-0.json").read_text())
    assert [step["source"] for step in data["steps"]] == ["user", "agent", "agent"]
    assert all("timestamp" not in step for step in data["steps"])
    nemo_gym = data["extra"]["nemo_gym"]
    assert nemo_gym["conversion"]["status"] == "partial"
    assert len(nemo_gym["surplus_model_calls"]) == len(record["model_calls"]) == 2
    assert nemo_gym["gaps"] == [{"code": "turns_unavailable"}]
    atif.Trajectory.model_validate(data)


def guarantee_options(tmp_path: Path) -> dict[str, object]:
    """What the guarantee suite exports with (tests/exporters/test_guarantees.py)."""
    return {"output_dirpath": str(tmp_path / "atif"), "agent_version": "1.0"}


def test_an_allowed_gap_code_neither_gym_nor_the_run_knows_is_a_usage_error(
    cli, make_sample_run, tmp_path
) -> None:
    sample = make_sample_run(agents=(TOOL_AGENT,), rows_with_gaps=[0])
    run = _atif(cli, sample.rollouts, tmp_path / "out", "+allow_gaps=[resolution_unavailabel]")
    assert run.exit_code == 2, run.output
    assert "+allow_gaps names resolution_unavailabel" in run.output
    assert "resolution_unavailable" in run.output  # Gym's codes are listed
    assert not (tmp_path / "out").exists()


def test_an_agents_own_gap_code_the_run_records_may_be_allowed(
    cli, make_sample_run, tmp_path
) -> None:
    sample = make_sample_run(agents=(TOOL_AGENT,), rows_with_gaps=[0])
    lines = sample.rollouts.read_text().splitlines()
    first = json.loads(lines[0])
    first["ng_trajectory"]["gaps"][0]["code"] = "judge_verdict_withheld"  # an agent's own code
    sample.rollouts.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    run = _atif(cli, sample.rollouts, tmp_path / "out", "+allow_gaps=[judge_verdict_withheld]")
    assert run.exit_code == 0, run.output


@pytest.mark.gym
def test_every_gap_code_evalexport_knows_is_one_nemo_gym_writes(gym_oracle) -> None:
    import re

    from evalexport.trajectory.convert import GYM_GAP_CODES

    written: set[str] = set()
    for path in Path(gym_oracle.site_packages).glob("**/*.py"):
        if "nemo_gym" in path.parts or "responses_api_agents" in path.parts:
            text = path.read_text(encoding="utf-8", errors="replace")
            written |= set(re.findall(r'code="([a-z_]+)"', text))
            written |= set(
                re.findall(r'"([a-z_]+_(?:unavailable|conflict|ambiguous|unmatched))"', text)
            )
    assert written >= GYM_GAP_CODES, sorted(GYM_GAP_CODES - written)


def test_a_row_no_option_rescues_is_told_every_reason_and_offered_nothing(
    cli, make_sample_run, tmp_path
) -> None:
    # Gaps recorded, and no conversation either: +allow_gaps alone would still be refused.
    sample = make_sample_run(agents=(TOOL_AGENT,), publishes_turns=False, tasks=2, repeats=1)
    run = _atif(cli, sample.rollouts, tmp_path / "atif", "--json")
    result = json.loads(run.stdout)
    assert result["details"]["rejected_rows"] == [
        f"line {n}: ng_trajectory.gaps: source coverage gaps are not supported by strict export "
        "(conversation_unavailable, turns_unavailable); ng_trajectory.invocations: expected "
        "exactly one root invocation, got 0"
        for n in (1, 2)
    ]
    assert "+allow_gaps=[" not in result["message"]
    assert result["message"].endswith(
        "\nNo +allow_gaps or +relax option accepts these rows: fix what each reason above names."
    )
    inspected = json.loads(cli("inspect", sample.rollouts, "--json").stdout)["atif"]
    assert inspected["accepted_with_gaps_allowed"] is False  # inspect says the same


def test_rows_some_options_rescue_are_told_apart_from_those_none_does(
    cli, make_sample_run, tmp_path
) -> None:
    sample = make_sample_run(
        agents=(TOOL_AGENT,), tasks=2, repeats=2, rows_with_gaps=[0], malformed_lines=[4]
    )
    run = _atif(cli, sample.rollouts, tmp_path / "atif", "--json")
    message = json.loads(run.stdout)["message"]
    assert message.endswith(
        "\n+allow_gaps=[resolution_unavailable] would accept 1 of the 2 rejected rows; no option "
        "accepts the other 1: fix what their reasons above name."
    )


def test_a_rerun_that_skips_removes_what_an_export_killed_beside_it_left(
    cli, atif_run, tmp_path
) -> None:
    """Two exports into one new output, one killed outright (a hostile trial's): the other's
    output lands, and every rerun skips, so the dead one's staging must go on the skip's way
    too, not only when an export stages; a live export's is kept, and so is a dry run's view."""
    import subprocess
    import sys

    output = tmp_path / "atif"
    assert _atif(cli, atif_run.rollouts, output).exit_code == 0
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], text=True,
                          capture_output=True, check=True).stdout.strip()  # fmt: skip
    abandoned = tmp_path / ".atif.partial-killed"
    abandoned.mkdir()
    (abandoned / ".evalexport-owner").write_text(f"{dead} 1")
    (abandoned / "0-0.json").write_text("{}")
    live = tmp_path / ".atif.partial-live"
    live.mkdir()
    from evalexport.backends.atif.staging import _this_process

    (live / ".evalexport-owner").write_text(_this_process())
    assert _atif(cli, atif_run.rollouts, output, "--dry-run").exit_code == 0
    assert abandoned.exists()  # a dry run writes nothing, removes nothing
    again = _atif(cli, atif_run.rollouts, output)
    assert again.stdout.startswith("skipped (already exported)"), again.output
    assert not abandoned.exists()
    assert live.exists()
