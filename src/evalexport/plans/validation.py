"""A plan read and checked (SPEC §6): :func:`load_plan` reads a plan file, bounded, through the
ingress gate; :func:`validate_plan` refuses, naming every offending field at once, values with
no wire form, options an exporter does not take, overrides for benchmarks the job does not run,
a run located both ways or neither, and what two exports would both write or upload
(:mod:`.model` holds what a plan is)."""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from evalexport.plans.model import ExportPlan, JobSection, PlanError, resolve_tasks
from evalexport.plans.tasks import ExportTask

__all__ = ["load_plan", "validate_plan"]


def _wire_problems(value: object, path: str) -> list[str]:
    """Values JSON cannot carry, by path: they would be lost on the way to the job."""
    if isinstance(value, Mapping):
        problems = []
        for key, item in value.items():
            if not isinstance(key, str):
                problems.append(
                    f"{path}: key {key!r} is a {type(key).__name__}; keys must be strings"
                )
            problems.extend(_wire_problems(item, f"{path}.{key}" if path else str(key)))
        return problems
    if isinstance(value, list | tuple):
        return [
            p for index, item in enumerate(value) for p in _wire_problems(item, f"{path}[{index}]")
        ]
    if value is None or isinstance(value, str | bool | int | float):
        return []
    if isinstance(value, datetime.date | datetime.time):
        return [
            f"{path}: {value!r} is a {type(value).__name__}, which has no wire form; quote it as a string"
        ]
    what = "a callable" if callable(value) else f"a {type(value).__name__} object"
    return [f"{path}: {what} has no wire form; use a string, number, boolean, list or mapping"]


def _option_problems(exporter: str, options: object, path: str) -> list[str]:
    from evalexport.spec.registry import ExporterLoadError, UnknownExporterError, load_exporter

    try:
        exporter_class = load_exporter(exporter)
    except (UnknownExporterError, ExporterLoadError) as error:
        return [f"{path}: {error}"]
    if options is False:
        return []
    if not isinstance(options, Mapping):
        return [f"{path}: expected a mapping of options, or false to skip this exporter"]
    fields = exporter_class.Config.model_fields
    problems = [
        f"{path}.{key}: {exporter} takes no option {key!r} (valid: {', '.join(k for k in fields if k != 'rollouts_jsonl_fpath')})"
        for key in options
        if key not in fields or key == "rollouts_jsonl_fpath"
    ]
    return problems


_PLAN_KEYS: Final = "job, exports, benchmarks"


def _in_plan_terms(item: Any) -> str:
    """One of pydantic's findings about a plan, said in the plan's terms: where the key
    belongs, what the value should be (``exports.atif: false`` is a benchmark's word)."""
    loc = tuple(str(part) for part in item["loc"])
    path, kind, given = ".".join(loc), item["type"], item.get("input")
    job_keys = ", ".join(JobSection.model_fields)
    if kind == "extra_forbidden" and len(loc) == 1:
        if loc[0] in JobSection.model_fields:
            return f"{path}: belongs under job: (job.{path})"
        return f"{path}: not a key of a plan (a plan has {_PLAN_KEYS})"
    if kind == "extra_forbidden" and loc[0] == "job":
        return f"{path}: not a key of job: (it has {job_keys})"
    if kind == "missing" and loc == ("job",):
        return (
            "job: required: the job's benchmarks and where their runs are (job.benchmarks with "
            "job.runs_root, or job.gym_job)"
        )
    if len(loc) == 2 and loc[0] == "exports":
        if given is False:
            return (
                f"{path}: false turns an exporter off for one benchmark "
                f"(benchmarks.<benchmark>.{loc[1]}: false); under exports, leave {loc[1]} out "
                "to export nothing to it"
            )
        return f"{path}: expected a mapping of {loc[1]}'s options ({{}} for its defaults)"
    if loc == ("benchmarks",) and isinstance(given, list):
        return (
            "benchmarks: the job's benchmarks are listed in job.benchmarks; the top-level "
            "benchmarks: maps a benchmark to its overrides (benchmarks.<benchmark>.<exporter>)"
        )
    if loc == ("exports",) or loc == ("benchmarks",):
        return f"{path}: expected a mapping, found {type(given).__name__}"
    return f"{path}: {item['msg']}"


def validate_plan(data: object, source: str = "the plan") -> ExportPlan:
    """Every problem of a plan in one :class:`PlanError`, or the plan."""
    problems = _wire_problems(data, "")
    if not isinstance(data, Mapping):
        raise PlanError(
            source,
            [f"expected a mapping with job, exports and benchmarks, found {type(data).__name__}"],
        )
    try:
        plan = ExportPlan.model_validate(data)
    except ValidationError as error:
        problems += [
            _in_plan_terms(item)
            for item in error.errors()
            if not any(p.startswith(".".join(str(x) for x in item["loc"])) for p in problems)
        ]
        raise PlanError(source, problems) from None
    for exporter, options in plan.exports.items():
        problems += _option_problems(exporter, options, f"exports.{exporter}")
    if plan.job.gym_job is not None:
        problems += _gym_job_problems(plan)
        if problems:
            raise PlanError(source, problems)
    elif not plan.job.benchmarks:
        problems.append("job.benchmarks: name the job's benchmarks, or give job.gym_job")
    for benchmark, overrides in plan.benchmarks.items():
        where = f"benchmarks.{benchmark}"
        if benchmark not in plan.job.benchmarks:
            problems.append(
                f"{where}: the job does not run {benchmark!r} (it runs {', '.join(plan.job.benchmarks)})"
            )
        for exporter, options in overrides.items():
            if exporter != "rollouts":
                problems += _option_problems(exporter, options, f"{where}.{exporter}")
    for benchmark in plan.job.benchmarks if plan.job.gym_job is None else ():
        if plan.job.runs_root is not None:
            problems += _benchmark_name_problems(plan.job.runs_root, benchmark)
        explicit = "rollouts" in plan.benchmarks.get(benchmark, {})
        if explicit and plan.job.runs_root is not None:
            problems.append(
                f"benchmarks.{benchmark}.rollouts: given as well as job.runs_root; give one of the two"
            )
        if not explicit and plan.job.runs_root is None:
            problems.append(
                f"benchmarks.{benchmark}: no run location; set job.runs_root or benchmarks.{benchmark}.rollouts"
            )
    if not plan.exports and not any(set(o) - {"rollouts"} for o in plan.benchmarks.values()):
        problems.append("exports: no exporter is configured; nothing would be exported")
    if problems:
        raise PlanError(source, problems)
    tasks = resolve_tasks(plan)
    for task in tasks:
        problems += _value_problems(task)
        problems += _log_problems(task, plan.job.export_log_dir)
    problems += _uploaded_output_problems(tasks)
    if problems:
        raise PlanError(source, problems)
    return plan


def _benchmark_name_problems(runs_root: Path, benchmark: str) -> list[str]:
    """A benchmark whose name would lead out of ``job.runs_root``, its run's directory
    (:func:`evalexport.ingress.child`)."""
    from evalexport.ingress import PathRefused, child

    try:
        child(runs_root, benchmark, named_by=f"job.benchmarks: the benchmark {benchmark!r}")
    except PathRefused as refused:
        return [str(refused)]
    return []


def _uploaded_output_problems(tasks: list[ExportTask]) -> list[str]:
    """An export that writes into a run directory another export of the plan uploads as it is
    (EvalRDL): the upload would carry that output, and change with it."""
    from evalexport.spec.options import path_options
    from evalexport.spec.registry import ExporterLoadError, load_exporter

    def kind(exporter: str) -> str | None:
        try:
            return str(load_exporter(exporter).kind)
        except ExporterLoadError:
            return None

    uploaded = {
        task.rollouts.parent.absolute(): task
        for task in tasks
        if kind(task.exporter) == "directory"
    }
    problems = []
    for task in tasks:
        try:
            paths = path_options(load_exporter(task.exporter))
        except ExporterLoadError:
            continue
        for option in sorted(paths - {"rollouts_jsonl_fpath"}):
            value = task.options.get(option)
            if value is None:
                continue
            written = Path(os.path.expandvars(str(value))).absolute()
            for run_dir, uploader in uploaded.items():
                if written.is_relative_to(run_dir):
                    problems.append(
                        f"{task.benchmark}/{task.exporter}.{option}: {written} is inside the run "
                        f"directory {run_dir}, which the {uploader.exporter} export of "
                        f"{uploader.benchmark} uploads as it is, so it would upload this output "
                        "too; write it outside the run directory (e.g. "
                        f"{run_dir.parent / (run_dir.name + '-' + task.exporter)})"
                    )
    return problems


def _log_problems(task: ExportTask, log_dir: Path | None) -> list[str]:
    run_dir = task.rollouts.parent.absolute()
    if log_dir is not None and log_dir.absolute().is_relative_to(run_dir):
        return [
            f"job.export_log_dir: {log_dir} is inside the run directory of {task.benchmark} "
            f"({run_dir}); a log written there changes the run, and the EvalRDL exporter "
            "uploads the run directory as it is. Choose a directory outside it."
        ]
    return []


def _value_problems(task: ExportTask) -> list[str]:
    from evalexport.spec.base import OptionError
    from evalexport.spec.options import parse_options
    from evalexport.spec.registry import load_exporter

    try:
        parse_options(
            load_exporter(task.exporter),
            {"rollouts_jsonl_fpath": str(task.rollouts), **task.options},
        )
    except OptionError as error:
        return [f"{task.benchmark}/{task.exporter}: {error}"]
    return []


def _gym_job_problems(plan: ExportPlan) -> list[str]:
    """A ``job.gym_job`` that is no readable job, or given with what it replaces; on success
    ``job.benchmarks`` becomes the job's (every benchmark, started or not)."""
    from evalexport.gym.jobs import GymJob
    from evalexport.reading import RunFileError

    job = plan.job
    problems = [
        f"job.{name}: given as well as job.gym_job, whose record names the job's {what}"
        for name, what in (("benchmarks", "benchmarks"), ("runs_root", "runs"))
        if getattr(job, name)
    ]
    problems += [
        f"benchmarks.{benchmark}.rollouts: a benchmark of job.gym_job has its run in the job"
        for benchmark, overrides in plan.benchmarks.items()
        if "rollouts" in overrides
    ]
    if problems:
        return problems
    assert job.gym_job is not None
    try:
        gym_job = GymJob.load(Path(os.path.expandvars(str(job.gym_job))))
    except RunFileError as error:
        return [f"job.gym_job: {error}"]
    job.benchmarks = [entry.benchmark for entry in gym_job.record.benchmarks]
    return []


_MAX_PLAN_BYTES: Final = 16 * 1024 * 1024
"""The largest plan read (a job of hundreds of benchmarks is a few hundred kilobytes)."""


def load_plan(path: Path) -> ExportPlan:
    """Read and validate a plan file through the ingress gate (a regular file, bounded, YAML
    measured before it is built); :class:`PlanError` names every problem."""
    from evalexport.host.files import RunFileError, open_regular
    from evalexport.ingress import load_yaml

    try:
        with open_regular(path) as handle:
            text = handle.read(_MAX_PLAN_BYTES + 1)
    except OSError as error:
        raise PlanError(str(path), [f"cannot read it: {error.strerror or error}"]) from None
    except RunFileError as error:
        raise PlanError(str(path), [str(error)]) from None
    if len(text) > _MAX_PLAN_BYTES:
        raise PlanError(
            str(path), [f"it is larger than {_MAX_PLAN_BYTES // 2**20} MiB: is it a plan?"]
        )
    try:
        data = load_yaml(text, path, what="plan")
    except RunFileError as error:
        raise PlanError(str(path), [str(error)]) from None
    return validate_plan(data, str(path))
