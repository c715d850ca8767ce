"""``evalexport plan run``: many finished runs at once, locally; re-running skips what is done."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.usefixtures("plugin_site")


def test_a_local_batch_exports_every_run_and_reports_each(
    cli, write_plan, tmp_path, job_runs
) -> None:
    report = tmp_path / "report.json"
    run = cli("plan", "run", write_plan(), "--workers", "3", "--report", report)
    assert run.exit_code == 1  # gpqa's tracking export fails: the batch says so
    outcomes = json.loads(report.read_text())
    statuses = {(o["benchmark"], o["exporter"]): o["result"]["status"] for o in outcomes}
    assert statuses == {
        ("aime24", "atif"): "succeeded",
        ("aime24", "recording"): "succeeded",
        ("gpqa", "atif"): "succeeded",
        ("gpqa", "recording"): "failed",
        ("math500", "atif"): "succeeded",
        ("math500", "recording"): "succeeded",
    }
    assert run.stdout.splitlines()[-1] == "1 failed, 5 succeeded"
    assert "[6/6]" in run.stderr


def test_re_running_a_plan_skips_what_is_already_exported(cli, write_plan, job_runs) -> None:
    plan = write_plan()
    cli("plan", "run", plan)
    again = cli("plan", "run", plan, "--json")
    outcomes = json.loads(again.stdout)
    assert [
        (o["benchmark"], o["exporter"], o["result"]["status"])
        for o in outcomes
        if o["result"]["status"] != "failed"
    ] == [
        ("aime24", "atif", "skipped"),
        ("aime24", "recording", "skipped"),
        ("gpqa", "atif", "skipped"),
        ("math500", "atif", "skipped"),
        ("math500", "recording", "skipped"),
    ]


def test_no_canary_reaches_the_report(cli, write_plan, tmp_path, canaries) -> None:
    report = tmp_path / "report.json"
    run = cli("plan", "run", write_plan(), "--report", report)
    assert canaries.found_in(run.output + report.read_text()) == []


def test_an_exporter_printing_to_stdout_cannot_pass_for_a_result(
    cli, write_plan, tmp_path, job_runs
) -> None:
    chatter = '{"exporter": "recording", "status": "succeeded"}'
    plan = write_plan(recording={"store_dir": str(tmp_path / "store"), "chatter": chatter})
    run = cli("plan", "run", plan, "--workers", "2", "--json")
    statuses = [o["result"]["status"] for o in json.loads(run.stdout)]
    assert statuses.count("succeeded") == 5, run.output
    assert "the export process answered with no result" not in run.stdout


def test_an_export_process_that_dies_costs_only_its_own_task(
    cli, write_plan, tmp_path, job_runs
) -> None:
    plan = write_plan(recording={"store_dir": str(tmp_path / "store"), "crash": True})
    run = cli("plan", "run", plan, "--workers", "1", "--json")
    results = {(o["benchmark"], o["exporter"]): o["result"] for o in json.loads(run.stdout)}
    assert [r["status"] for (_, exporter), r in results.items() if exporter == "atif"] == [
        "succeeded"
    ] * 3
    # gpqa's recording export fails its prerequisites before it gets to crash
    for benchmark in ("aime24", "math500"):
        assert results[(benchmark, "recording")]["message"] == (
            "the export process was killed by SIGKILL without a result; see its stderr"
        )
    assert run.exit_code == 1


def test_a_batch_exits_with_its_failures_shared_code_else_1_and_5_while_tasks_are_pending(
    tmp_path,
) -> None:
    from evalexport.plans.batch import exit_code_of
    from evalexport.plans.model import ExportTask, TaskOutcome
    from evalexport.results import ExitCode, ExportResult

    task = ExportTask("aime24", "evalrdl", tmp_path / "aime24_rollouts.jsonl", {})

    def outcome(result: ExportResult) -> TaskOutcome:
        return TaskOutcome.of(task, 0.0, result)

    ok = outcome(ExportResult.succeeded("evalrdl", "/r", "done"))
    no_verdict = outcome(task.failed("stored without a verdict", ExitCode.NO_VERDICT))
    refused = outcome(task.failed("refused", ExitCode.REFUSED))
    pending = outcome(ExportResult.pending("evalrdl", "/r", "queued"))
    stopped = outcome(task.failed("stopped", ExitCode.TERMINATED))
    assert exit_code_of([ok]) == 0
    assert exit_code_of([ok, no_verdict, no_verdict]) == 3
    assert exit_code_of([refused, ok]) == 4
    assert exit_code_of([refused, no_verdict]) == 1
    assert exit_code_of([ok, pending]) == 5
    assert exit_code_of([pending, refused]) == 4
    assert exit_code_of([refused, stopped]) == 143


def test_each_log_line_of_exports_run_at_once_names_its_benchmark(cli_process, write_plan) -> None:
    run = cli_process("plan", "run", write_plan(), "--workers", "3")
    logged = [line for line in run.stderr.splitlines() if line.startswith("evalexport: ")]
    reading = [line for line in logged if ": reading " in line]
    assert len(reading) == 5, run.stderr  # gpqa's tracking export is refused before it reads
    for line in logged:
        benchmark = line.removeprefix("evalexport: [").partition("]")[0]
        assert benchmark in ("aime24", "gpqa", "math500"), line
    for benchmark in ("aime24", "gpqa", "math500"):
        assert f"evalexport: [{benchmark}] atif: reading {benchmark}_rollouts.jsonl" in " ".join(
            reading
        )
