"""The ingress gate (SPEC §1, "What is read", #56): paths named by data stay inside their
root, YAML and JSON documents are bounded alike in a dry run and an export, and each refusal
says which rule, naming the file.

The cases are the audit's: a Gym job whose benchmark is named ``../../outside_run/victim`` or
5,000 characters long, a job's ``resolved-config.yaml`` that links out of the job, a 377-byte
YAML alias bomb as a job's or a run's config, a health file nested 950 deep, and health files
that are FIFOs or directories."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from evalexport.gym.jobs import JOB_CONFIG_NAME, JOB_RECORD_NAME
from evalexport.ingress import (
    MAX_ALIAS_NODES,
    MAX_DEPTH,
    MAX_NAME_BYTES,
    AbsoluteNameRefused,
    DocumentRefused,
    LeavesRootRefused,
    NameTooLongRefused,
    PathRefused,
    child,
    load_json,
    load_yaml,
)
from tests.support.jobs import SampleJob, make_gym_job

ALIAS_BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 9) if previous else ', '.join(['lol'] * 9)}]\n"
    for previous, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)


@pytest.fixture
def job(tmp_path: Path, canaries) -> SampleJob:
    return make_gym_job(tmp_path / "evals", canaries=canaries, tasks=2, repeats=1)


def _rename_benchmark(job: SampleJob, name: str) -> None:
    record_path = job.directory / JOB_RECORD_NAME
    record = json.loads(record_path.read_text())
    record["benchmarks"][0]["benchmark"] = name
    record_path.write_text(json.dumps(record))


def test_the_alias_bomb_is_377_bytes() -> None:
    assert len(ALIAS_BOMB) < 400
    assert yaml.safe_load(ALIAS_BOMB)["b"][0] == ["lol"] * 9  # PyYAML builds it


def test_a_benchmark_named_out_of_the_job_is_refused_and_nothing_outside_is_touched(
    cli, job: SampleJob, make_sample_run, tmp_path: Path
) -> None:
    victim = make_sample_run("outside_run/victim", benchmark="victim")
    _rename_benchmark(job, "../../outside_run/victim")
    before = sorted(path.name for path in victim.run.run_dir.iterdir())
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        f"job: {{gym_job: {job.directory}}}\n"
        f"exports: {{atif: {{agent_version: '1', output_dirpath: '{{run_dir}}/atif'}}}}\n"
    )
    checked = cli("plan", "check", plan)
    assert checked.exit_code == 2
    assert "'../../outside_run/victim'" in checked.stderr
    assert LeavesRootRefused.rule in checked.stderr
    ran = cli("plan", "run", plan)
    assert ran.exit_code == 2
    shown = cli("inspect", job.directory)
    assert shown.exit_code == 1
    assert "Traceback" not in shown.output
    assert LeavesRootRefused.rule in shown.output
    assert sorted(path.name for path in victim.run.run_dir.iterdir()) == before


def test_a_benchmark_name_longer_than_a_file_name_is_refused_not_a_traceback(
    cli, job: SampleJob
) -> None:
    _rename_benchmark(job, "b" * 5000)
    shown = cli("inspect", job.directory)
    assert shown.exit_code == 1, shown.output
    assert "Traceback" not in shown.output
    assert "File name too long" not in shown.output
    assert "(5000 characters)" in shown.output
    assert NameTooLongRefused.rule in shown.output


def test_a_jobs_config_that_links_out_of_the_job_is_not_followed(
    cli, job: SampleJob, tmp_path: Path
) -> None:
    outside = tmp_path / "kube.yaml"
    outside.write_text("users:\n- user:\n    client-key-data: LS0tQ0FOQVJZa3ViZQ==\n")
    config = job.directory / JOB_CONFIG_NAME
    config.unlink()
    config.symlink_to(outside)
    rollouts = job.job.rollouts("aime24")
    for extra in (["--dry-run"], []):
        done = cli("mlflow", f"+rollouts_jsonl_fpath={rollouts}", *extra)
        assert done.exit_code == 1, done.output
        assert f"is a symlink to {outside}, outside {job.directory}" in done.stdout
        assert "CANARYkube" not in done.output
        assert "LS0t" not in done.output


@pytest.mark.parametrize("where", ["a run's saved config", "a job's resolved config"])
def test_a_yaml_alias_bomb_is_refused_at_once_by_every_command(
    cli, job: SampleJob, make_sample_run, monkeypatch, where: str
) -> None:
    monkeypatch.setenv("EVALRDL_TOKEN", "glpat-ingress-test-token")
    if where == "a job's resolved config":
        (job.directory / JOB_CONFIG_NAME).write_text(ALIAS_BOMB)
        rollouts = job.job.rollouts("aime24")
    else:
        sample = make_sample_run()
        sample.run.saved_config.write_text(ALIAS_BOMB)
        rollouts = sample.rollouts
    commands = [
        ["inspect", rollouts],
        ["mlflow", f"+rollouts_jsonl_fpath={rollouts}", "--dry-run"],
        ["wandb", f"+rollouts_jsonl_fpath={rollouts}", "+wandb_mode=offline", "--dry-run"],
        ["evalrdl", f"+rollouts_jsonl_fpath={rollouts}", "--dry-run"],
        ["mlflow", f"+rollouts_jsonl_fpath={rollouts}"],
    ]
    for command in commands:
        started = time.monotonic()
        done = cli(*command)
        assert time.monotonic() - started < 30, command  # a hang guard: it takes milliseconds
        if command[0] == "evalrdl" and where == "a job's resolved config":
            # The job's config is not the run directory's: EvalRDL neither reads nor sends it.
            assert done.exit_code == 0, done.output
            continue
        assert f"{MAX_ALIAS_NODES:,} nodes" in done.output, (command, done.output)
        assert done.exit_code == (0 if command[0] == "inspect" else 1), done.output


def test_save_config_refuses_an_alias_bomb_too(cli, make_sample_run, tmp_path: Path) -> None:
    sample = make_sample_run(saved_config=False)
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(ALIAS_BOMB)
    done = cli("save-config", sample.rollouts, bomb)
    assert done.exit_code != 0
    assert f"{MAX_ALIAS_NODES:,} nodes" in done.output


def test_a_health_file_nested_too_deeply_is_refused_alike_by_the_dry_run_and_the_export(
    cli, make_sample_run
) -> None:
    sample = make_sample_run()
    deep = '{"nested": ' * 950 + '{"records": 4}' + "}" * 950
    (sample.run.run_dir / "quality_summary.json").write_text('{"run": ' + deep + "}")
    results = [
        json.loads(cli("mlflow", f"+rollouts_jsonl_fpath={sample.rollouts}", *extra).stdout)
        for extra in (["--dry-run", "--json"], ["--json"])
    ]
    assert [r["status"] for r in results] == ["failed", "failed"]
    for result in results:
        assert "quality_summary.json" in result["message"]
        assert f"more than {MAX_DEPTH} levels deep" in result["message"]


@pytest.mark.downloads
@pytest.mark.parametrize("kind", ["fifo", "directory", "dangling link"])
def test_a_health_file_that_is_no_file_is_left_out_with_a_note(
    cli, make_sample_run, mlflow_python, tmp_path: Path, kind: str
) -> None:
    sample = make_sample_run()
    path = sample.run.run_dir / "rollout_verdicts.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to(tmp_path / "nowhere.jsonl")
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    # The export reads as its dry run does (one pipeline): one kind is exported too, through
    # the real MLflow, the others dry-run only (an MLflow worker each saved).
    for extra in (["--dry-run"], []) if kind == "fifo" else (["--dry-run"],):
        result = json.loads(
            cli(
                "mlflow",
                f"+rollouts_jsonl_fpath={sample.rollouts}",
                f"+mlflow_tracking_uri={store}",
                "--json",
                *extra,
            ).stdout
        )
        assert result["status"] == "succeeded", result["message"]
        assert f"{path}" in result["message"]
        assert "left out of the export" in result["message"]


def test_a_plans_benchmark_named_out_of_its_runs_root_is_refused(cli, tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        f"job: {{runs_root: {tmp_path / 'runs'}, benchmarks: ['../victim', '/abs']}}\n"
        "exports: {atif: {agent_version: '1'}}\n"
    )
    checked = cli("plan", "check", plan)
    assert checked.exit_code == 2
    assert "'../victim'" in checked.stderr
    assert LeavesRootRefused.rule in checked.stderr
    assert "'/abs'" in checked.stderr
    assert AbsoluteNameRefused.rule in checked.stderr


def test_a_plan_that_is_an_alias_bomb_is_refused(cli, tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(ALIAS_BOMB)
    checked = cli("plan", "check", plan)
    assert checked.exit_code == 2
    assert f"{MAX_ALIAS_NODES:,} nodes" in checked.stderr


# -- the rules, as properties ------------------------------------------------------------

NAME_PIECES = st.sampled_from(["a", "..", ".", "/", "\\", "\0", "é", "b" * 100, " ", "-"])


@given(st.lists(NAME_PIECES, max_size=8).map("".join))
def test_a_name_is_taken_only_as_one_name_inside_its_root(name: str) -> None:
    root = Path("/jobs/job-1")
    try:
        path = child(root, name, named_by="the name")
    except PathRefused as refused:
        said = str(refused)
        refusal_rule = refused.rule
    else:
        said = refusal_rule = ""
    if said:
        assert refusal_rule in said
        return
    assert path.parent == root
    assert path.name == name
    assert name not in ("", ".", "..")
    assert "/" not in name
    assert "\0" not in name
    assert len(name.encode()) <= MAX_NAME_BYTES


@given(
    st.integers(1, 12),  # levels of anchors
    st.integers(1, 12),  # aliases a level
)
def test_yaml_is_built_only_when_its_aliases_add_less_than_the_limit(levels: int, fan: int) -> None:
    text = "".join(
        f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * fan) if level else 'x'}]\n"
        for level in range(levels)
    )
    added = sum(fan**level for level in range(levels)) - levels  # nodes beyond those written
    try:
        document = load_yaml(text, "doc.yaml", what="document")
    except DocumentRefused as refused:
        said = str(refused)
    else:
        said = ""
    if said:
        assert "alias bomb" in said
        assert added > MAX_ALIAS_NODES // 2  # refused only when the document really grows
        return
    assert added <= MAX_ALIAS_NODES * 2
    assert document is None or isinstance(document, dict)


@given(st.integers(1, 300))
def test_json_is_refused_past_the_depth_limit_and_read_below_it(depth: int) -> None:
    text = "[" * depth + "]" * depth
    if depth <= MAX_DEPTH:
        assert load_json(text, "doc.json", what="document") is not None
    else:
        with pytest.raises(DocumentRefused, match=f"more than {MAX_DEPTH} levels deep"):
            load_json(text, "doc.json", what="document")
