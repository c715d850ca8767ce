"""Export plans: what to export after each benchmark of a job (SPEC §6).

A plan is YAML::

    job:
      benchmarks: [aime24, gpqa]          # what the job runs
      runs_root: /results/job-42          # a run per benchmark: <runs_root>/<b>/<b>_rollouts.jsonl
      # or, for a NeMo Gym job (gym eval submit), its directory alone:
      # gym_job: /results/gym-job-20261203T101500Z-a1b2c3
      fail_job_on_export_failure: false
    exports:                              # job-level defaults, per exporter
      mlflow: {mlflow_tracking_uri: "http://127.0.0.1:5000"}
      atif: {agent_version: "1.4.0", output_dirpath: "{run_dir}/atif"}   # {benchmark}, {run_dir}, {stem}
    benchmarks:                           # per-benchmark overrides
      gpqa:
        mlflow: {mlflow_experiment_name: gpqa-nightly}
        atif: false                       # not for this benchmark
        rollouts: /elsewhere/gpqa_rollouts.jsonl   # only where job.runs_root is not set

Validation (:mod:`.validation`) refuses, naming every offending field at once: values with no wire form (a date,
a callable, an arbitrary object), options the exporter does not take, overrides for benchmarks
the job does not run, and a run location given both or neither way. Nothing is dropped: a plan
either reproduces exactly what the user wrote, or is refused.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalexport.plans.tasks import ExportTask, TaskOutcome
from evalexport.run import RunArtifacts

__all__ = [
    "ExportTask",
    "PlanError",
    "TaskOutcome",
    "not_started",
    "resolve_tasks",
]


class PlanError(ValueError):
    """A plan that cannot be used; ``problems`` holds one line per offending field."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(
            f"{source} has {len(problems)} problem{'s' if len(problems) != 1 else ''}:\n"
            + "\n".join(f"  - {problem}" for problem in problems)
        )


class JobSection(BaseModel):
    """The ``job:`` section of a plan: where the job's runs are and what it runs."""

    model_config = ConfigDict(extra="forbid")

    benchmarks: list[str] = Field(default=[])
    runs_root: Path | None = None
    gym_job: Path | None = Field(
        default=None,
        description="A NeMo Gym job directory (gym eval submit's, with gym-job.json): its "
        "benchmarks and their runs, <gym_job>/<benchmark>/artifacts/rollouts.jsonl, are the "
        "job's; a benchmark that never started is reported as such, not exported.",
    )
    fail_job_on_export_failure: bool = False
    export_log_dir: Path | None = Field(
        default=None,
        description="Where the job tails append each benchmark's results, "
        "<benchmark>_exports.jsonl; default: evalexport-logs/ beside the run directory. Never "
        "inside a run directory: the EvalRDL exporter uploads it as it is.",
    )


class ExportPlan(BaseModel):
    """A validated export plan: the job, and what to export after each benchmark."""

    model_config = ConfigDict(extra="forbid")

    job: JobSection
    exports: dict[str, dict[str, object]] = {}
    benchmarks: dict[str, dict[str, Any]] = {}


def not_started(plan: ExportPlan) -> list[TaskOutcome]:
    """For a plan of a NeMo Gym job: one skipped outcome per exporter of each benchmark the
    job never started (its submission failed), saying why; those are no failed exports."""
    from evalexport.gym.jobs import GymJob
    from evalexport.results import ExportResult, SkipReason

    if plan.job.gym_job is None:
        return []
    job = GymJob.load(Path(os.path.expandvars(str(plan.job.gym_job))))
    outcomes = []
    for entry in job.record.benchmarks:
        if entry.job_id is not None:
            continue
        for exporter in _exporters_of(plan, entry.benchmark):
            result = ExportResult.skipped(
                exporter,
                str(job.rollouts(entry.benchmark).parent),
                f"NeMo Gym job {job.record.gym_job_id} never started {entry.benchmark}: "
                f"{entry.error or 'no job id recorded'}; there is no run to export",
                SkipReason.NOT_STARTED,
            )
            outcomes.append(
                TaskOutcome(
                    entry.benchmark, exporter, str(job.rollouts(entry.benchmark)), 0.0, result
                )
            )
    return outcomes


def _exporters_of(plan: ExportPlan, benchmark: str) -> list[str]:
    """The exporters a benchmark's run goes to: the plan's, then its own, less those it
    turns off."""
    overrides = plan.benchmarks.get(benchmark, {})
    exporters = list(plan.exports) + [
        e for e in overrides if e not in plan.exports and e != "rollouts"
    ]
    return [exporter for exporter in exporters if overrides.get(exporter, {}) is not False]


def resolve_tasks(plan: ExportPlan) -> list[ExportTask]:
    """Every (benchmark, exporter) export with defaults and overrides merged, in plan order;
    for a NeMo Gym job, of the benchmarks it started (:func:`not_started` says the others)."""
    gym_job = None
    if plan.job.gym_job is not None:
        from evalexport.gym.jobs import GymJob

        gym_job = GymJob.load(Path(os.path.expandvars(str(plan.job.gym_job))))
    tasks = []
    for benchmark in plan.job.benchmarks:
        overrides = plan.benchmarks.get(benchmark, {})
        if gym_job is not None:
            entry = gym_job.benchmark(benchmark)
            if entry is None or entry.job_id is None:
                continue
            rollouts = gym_job.rollouts(benchmark)
        elif plan.job.runs_root is not None:
            rollouts = RunArtifacts.in_job(plan.job.runs_root, benchmark).rollouts
        else:
            rollouts = Path(os.path.expandvars(str(overrides["rollouts"])))
        for exporter in _exporters_of(plan, benchmark):
            override = overrides.get(exporter, {})
            options = {**plan.exports.get(exporter, {}), **(override or {})}
            rollouts = rollouts.absolute()
            placeholders = {
                "{benchmark}": benchmark,
                "{run_dir}": str(rollouts.parent),
                "{stem}": rollouts.stem,
            }
            tasks.append(ExportTask(benchmark, exporter, rollouts, _fill(options, placeholders)))
    return tasks


def _fill(value: object, placeholders: Mapping[str, str]) -> Any:
    """Job-level options that differ per benchmark: ``{benchmark}``, ``{run_dir}``, ``{stem}``."""
    if isinstance(value, str):
        for placeholder, replacement in placeholders.items():
            value = value.replace(placeholder, replacement)
        return value
    if isinstance(value, Mapping):
        return {key: _fill(item, placeholders) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, placeholders) for item in value]
    return value
