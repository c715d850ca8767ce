"""``evalexport inspect PATH``: what a run directory holds, and what each exporter would say."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from evalexport.cli._args import FAILED, OK, Arguments, UsageError
from evalexport.progress import human_size

if TYPE_CHECKING:
    from evalexport.gym.jobs import GymJob
    from evalexport.inspection import RunInspection

SUMMARY = "show what a run directory holds (files, rollouts, agents, metrics, masking)"
FLAGS = ("--json",)
VALUE_FLAGS: tuple[str, ...] = ()


def run(arguments: Arguments, rest: list[str]) -> int:
    """``evalexport inspect PATH [--json]``: print what the run holds; exit 1 if it is unreadable."""
    from evalexport.inspection import inspect_run
    from evalexport.run import RunArtifacts, RunFileError

    if arguments.help:
        print("usage: evalexport inspect PATH [--json]\n\n" + SUMMARY)
        return OK
    if len(rest) != 1:
        raise UsageError("'inspect' takes one argument: the run's rollouts file")
    path = rest[0][1:] if rest[0].startswith("+") else rest[0]
    path = path.removeprefix("rollouts_jsonl_fpath=")
    if not path.strip():
        raise UsageError("'inspect' takes the run's rollouts file; the path given is empty")
    from evalexport.gym.jobs import JOB_RECORD_NAME

    if (Path(path) / JOB_RECORD_NAME).is_file():
        return _inspect_job(Path(path), arguments)
    try:
        run = RunArtifacts.of_path(path)
    except RunFileError as error:
        print(f"evalexport: {error}", file=sys.stderr)
        return FAILED
    report = inspect_run(run)
    arguments.decide(OK if report.readable else FAILED)  # before printing: it stands in a pipe
    if report.run_missing and not arguments.json:  # no report of a run that is not there
        print(f"evalexport: {report.problems[0]}", file=sys.stderr)
        return FAILED
    if arguments.json:
        print(json.dumps(report.as_json_data()))  # --json: one line
    else:
        _print_inspection(report)
    if report.unmasked_secret_paths:
        advice = (
            "; NeMo Gym writes host values into a job's config: every export masks them"
            if run.gym_job is not None and run.saved_config == run.gym_job.config
            else "; save it with evalexport.save_run_config so exporters never see them"
        )
        print(
            "evalexport: warning: the saved config holds values that look like live secrets at "
            + ", ".join(report.unmasked_secret_paths)
            + advice,
            file=sys.stderr,
        )
    return OK if report.readable else FAILED


def _inspect_job(directory: Path, arguments: Arguments) -> int:
    """``inspect JOB_DIR``: the job, and where each of its benchmarks stands, masked as an
    export masks the job's identity (a field of ``gym-job.json`` may hold a credential: a host
    written with its password, a token pasted where a name goes)."""
    from evalexport.gym.jobs import GymJob
    from evalexport.masking import scrub_text
    from evalexport.run import RunFileError

    try:
        job = GymJob.load(directory)
    except RunFileError as error:
        print(f"evalexport: {scrub_text(str(error))}", file=sys.stderr)
        return FAILED
    data = _job_data(job)
    if arguments.json:
        print(json.dumps(data))
        return OK
    identity = data["job"]
    assert isinstance(identity, dict)
    print(f"NeMo Gym job:  {identity['gym_job_id']} ({data['job_dir']})")
    commit = f", commit {identity['gym_commit']}" if identity.get("gym_commit") else ""
    print(f"gym:           {identity['gym_version']}{commit}")
    where = f"{identity['cluster']} ({identity['executor']}" + (
        f", via {identity['hostname']})" if identity.get("hostname") else ")"
    )
    print(f"submitted:     {identity['submitted_at']} by {identity['submitted_by']} to {where}")
    config = data["config"] or "none (resolved-config.yaml is missing)"
    print(f"config:        {config} (masked in every export)")
    benchmarks = data["benchmarks"]
    assert isinstance(benchmarks, list)
    print(f"benchmarks ({len(benchmarks)}):")
    for benchmark in benchmarks:
        print(f"  {benchmark['benchmark']}: {benchmark['state']}")
    ready = [benchmark for benchmark in benchmarks if benchmark["rollouts_exist"]]
    if ready:
        print(
            f"export: each benchmark as a run, e.g. evalexport mlflow "
            f"+rollouts_jsonl_fpath={ready[0]['rollouts']}; the whole job with a plan whose "
            f"job is {{gym_job: {data['job_dir']}}} (docs/plans.md)"
        )
    return OK


def _job_data(job: GymJob) -> dict[str, object]:
    """What ``inspect JOB_DIR`` shows of ``job`` (``--json`` as it is, the text from it):
    masked as the job's identity is masked on its way to any export (``scrub_value``)."""
    from evalexport.masking import scrub_value

    data: dict[str, object] = {
        "job_dir": str(job.directory),
        "job": job.identity,
        "config": str(job.config) if job.config.is_file() else None,
        "benchmarks": [
            {
                "benchmark": state.name,
                "job_id": state.job_id,
                "error": state.error,
                "started": state.started,
                "rollouts": str(state.rollouts),
                "rollouts_exist": state.rollouts_exist,
                "metrics_exist": state.metrics_exist,
                "state": state.describe(),
            }
            for state in job.states()
        ],
    }
    masked: dict[str, object] = scrub_value(data)
    return masked


def _print_atif_verdict(report: RunInspection) -> None:
    verdict = report.atif
    assert verdict is not None
    if verdict.accepted:
        print(f"strict ATIF export: accepts all {report.rollout_count} rollouts")
        return
    refused = (
        f"refuses {verdict.rejected_rows} rollouts" if verdict.rejected_rows else "refuses the run"
    )
    print(f"strict ATIF export: {refused}")
    for reason in verdict.reasons:
        print(f"  - {reason.splitlines()[0]}")
    if not verdict.rejected_rows:
        return  # the file as a whole is refused (say, two agents): no option changes that
    gaps = f"+allow_gaps=[{','.join(report.gap_counts)}]" if report.gap_counts else ""
    needed = verdict.relaxations_needed
    if needed is None:
        if gaps:
            print("  allowing the recorded gaps would not be enough, nor would any relaxation;")
        else:
            print("  no relaxation of the strict profile (+relax) would be enough;")
        print("  with every gap allowed and every relaxation given, these remain:")
        for blocker in verdict.blockers:
            print(f"    - {blocker.splitlines()[0]}")
        return
    options = [gaps] if gaps else []
    if needed:
        options.append(f"'+relax=[{','.join(needed)}]'")
    if "unnamed_agents" in needed:
        options.append("+agent_name=NAME")
    print(f"  with {' '.join(options)} it would accept every rollout")
    for name, count in needed.items():
        print(f"    {name}: needed by {count} rollouts")


def _print_health(report: RunInspection) -> None:
    health = report.health
    if health is None:
        print("health: no verdicts (NeMo Gym's quality_summary.json, rollout_verdicts.jsonl)")
        return
    counts = health["verdicts"]
    assert isinstance(counts, dict)
    said = ", ".join(f"{count} {name}" for name, count in counts.items())
    verdict = health["verdict"]
    print(f"health: {verdict or 'no summary'}" + (f" ({said})" if said else ""))
    if not health["rollout_verdicts"]:
        print("  no verdict of each rollout (rollout_verdicts.jsonl)")
    if health["failed_attempts"] is not None:
        print(
            f"  failed attempts: {health['failed_attempts']} "
            f"({health['terminal_failures']} terminal)"
        )


def _print_inspection(report: RunInspection) -> None:
    print(f"run directory: {report.run_dir}")
    print(f"rollouts:      {report.rollouts}")
    print(f"benchmark:     {report.benchmark} ({report.benchmark_source})")
    print(f"run name:      {report.run_name} (what MLflow and W&B exports name the run)")
    print("files:")
    for item in report.files:
        print(f"  {human_size(item.size_bytes):>9}  {item.path.name}  ({item.role})")
    print(
        f"rollouts: {report.rollout_count} ({report.rollouts_with_trajectory} with ng_trajectory)"
    )
    for agent in report.agents:
        reward = "n/a" if agent.mean_reward is None else f"{agent.mean_reward:.4g}"
        print(f"  {agent.name}: {agent.rollouts} rollouts, mean reward {reward}")
    if report.gap_counts:
        counts = ", ".join(f"{code} x{count}" for code, count in report.gap_counts.items())
        print(f"coverage gaps: {report.rollouts_with_gaps} rollouts record gaps ({counts})")
    else:
        print("coverage gaps: none")
    if report.atif is not None:
        _print_atif_verdict(report)
    _print_health(report)
    print(f"metrics ({len(report.metrics)} after flattening):")
    for name, value in report.metrics.items():
        print(f"  {name} = {value:.6g}")
    for name, text in report.texts.items():
        print(f"  {name} = {text!r} (text)")
    print(f"saved config: {report.config_status}")
    if report.problems:
        print("problems:")
        for problem in report.problems:
            print(f"  - {problem}")
