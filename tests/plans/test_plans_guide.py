"""docs/plans.md's worked example, as written: the plan checks as the guide shows, and its ATIF
export writes outside the run directory. A plan that writes into a run directory another of its
exports uploads as it is is refused; the run table wraps long messages rather than cut them;
the rendered tail says how nodes install the evalexport this machine has."""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml

from evalexport.plans.batch import summary_table
from evalexport.plans.model import ExportTask, TaskOutcome
from evalexport.plans.render import environments_needed, install_hint
from evalexport.plans.validation import load_plan
from evalexport.results import ExportResult

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "plans.md"


def _tested(language: str) -> list[str]:
    return re.findall(
        rf"<!-- tested: tests/plans/test_plans_guide.py -->\n```{language}\n(.*?)```",
        GUIDE.read_text(),
        re.S,
    )


def test_the_worked_example_checks_as_the_guide_shows(cli, tmp_path, monkeypatch) -> None:
    plan_text = _tested("yaml")[0]
    (console,) = _tested("console")
    command, *expected = console.strip().splitlines()
    monkeypatch.chdir(tmp_path)
    Path("nightly-exports.yaml").write_text(plan_text)
    arguments = command.removeprefix("$ evalexport ").split()
    run = cli(*arguments)
    assert run.exit_code == 0, run.output
    assert run.stdout.splitlines() == expected


def test_the_worked_example_writes_atif_outside_each_run_directory(tmp_path) -> None:
    plan_text = _tested("yaml")[0]
    (tmp_path / "plan.yaml").write_text(plan_text)
    plan = load_plan(tmp_path / "plan.yaml")
    from evalexport.plans.model import resolve_tasks

    for task in resolve_tasks(plan):
        if "output_dirpath" in task.options:
            output = Path(task.options["output_dirpath"])
            assert not output.is_relative_to(task.rollouts.parent), task


def test_an_output_inside_a_run_directory_another_export_uploads_is_refused(cli, tmp_path) -> None:
    plan = {
        "job": {"benchmarks": ["aime24"], "runs_root": str(tmp_path / "runs")},
        "exports": {
            "evalrdl": {"label": "nightly"},
            "atif": {"agent_version": "1", "output_dirpath": "{run_dir}/atif"},
        },
    }
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(plan))
    run = cli("plan", "check", tmp_path / "plan.yaml")
    assert run.exit_code == 2
    run_dir = tmp_path / "runs" / "aime24"
    assert (
        f"aime24/atif.output_dirpath: {run_dir / 'atif'} is inside the run directory {run_dir}, "
        "which the evalrdl export of aime24 uploads as it is" in run.stderr
    )
    assert "Run 'evalexport plan --help' for usage." in run.stderr
    del plan["exports"]["evalrdl"]
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(plan))
    assert cli("plan", "check", tmp_path / "plan.yaml").exit_code == 0  # nothing uploads it


def test_the_run_table_wraps_a_long_message_and_keeps_the_run_id() -> None:
    run_id = "3f2c9b7e1d0a4c5b8e6f7a9d0c1b2e3f"
    message = (
        f"exported to MLflow run {run_id} in experiment 'nightly' at http://mlflow.internal:5000"
    )
    outcome = TaskOutcome.of(
        ExportTask("aime24", "mlflow", Path("/r/aime24_rollouts.jsonl"), {}),
        6.1,
        ExportResult.succeeded("mlflow", "/r", message, run_id=run_id),
    )
    table = summary_table([outcome], width=100).splitlines()
    assert all(len(line) <= 100 for line in table)
    assert " ".join(" ".join(table[1:-1]).split()).endswith(message)
    assert run_id in "\n".join(table)


def test_render_tells_nodes_how_to_install_this_evalexport(tmp_path) -> None:
    plan = {
        "job": {"benchmarks": ["aime24"], "runs_root": str(tmp_path)},
        "exports": {"atif": {"agent_version": "1", "output_dirpath": str(tmp_path / "out")}},
    }
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(plan))
    needs = environments_needed(load_plan(tmp_path / "plan.yaml"))
    assert needs["atif"] == f"nothing beyond evalexport itself ({install_hint()})"
    assert "pip install evalexport\n" not in needs["atif"] + "\n"  # no index serves that name
    assert str(ROOT) in install_hint() or "evalexport==" in install_hint()


def test_runs_where_they_lie_are_named_one_by_one_and_keep_their_benchmark(
    cli, make_sample_run, tmp_path, monkeypatch
) -> None:
    """docs/plans.md, "Runs where they lie": the plan, pointed at Gym's example layout here."""
    plan_text = _tested("yaml")[1]
    gym = tmp_path / "Gym"
    for benchmark in ("blackjack", "litmus"):
        make_sample_run(
            f"Gym/resources_servers/{benchmark}/data", benchmark=benchmark, stem="example_rollouts"
        )
    monkeypatch.setenv("GYM_HOME", str(gym))
    (tmp_path / "plan.yaml").write_text(plan_text.replace("/work/Gym", str(gym)))
    checked = cli("plan", "check", tmp_path / "plan.yaml")
    assert checked.exit_code == 0, checked.output
    from evalexport.plans.model import resolve_tasks
    from evalexport.run import RunArtifacts

    tasks = resolve_tasks(load_plan(tmp_path / "plan.yaml"))
    assert [(task.benchmark, task.rollouts) for task in tasks] == [
        (b, gym / "resources_servers" / b / "data" / "example_rollouts.jsonl")
        for b in ("blackjack", "litmus")
    ]
    for task in tasks:
        run = RunArtifacts.from_rollouts_path(task.rollouts)
        assert run.benchmark == task.benchmark
        assert run.missing_file_reason(needs_metrics_and_config=True) is None


def test_render_names_an_sdks_requirements_without_resolving_a_target(
    tmp_path, monkeypatch
) -> None:
    """Rendering a plan asks the options alone: EvalRDL's resolve would run ``glab auth
    token`` (a credential helper), which rendering a job script must not."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    asked = tmp_path / "glab-was-asked"
    glab = bin_dir / "glab"
    glab.write_text(f"#!/bin/sh\ntouch {asked}\necho token-from-glab\n")
    glab.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    for name in ("EVALRDL_TOKEN", "GITLAB_TOKEN", "GITLAB_PRIVATE_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    plan = {
        "job": {"benchmarks": ["aime24"], "runs_root": str(tmp_path)},
        "exports": {"evalrdl": {"requirement": "evalrdl==0.0.241"}},
    }
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(plan))
    needs = environments_needed(load_plan(tmp_path / "plan.yaml"))
    assert "evalrdl==0.0.241" in needs["evalrdl"]
    assert not asked.exists()
