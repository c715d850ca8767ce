"""``evalexport plan ...``: argument handling and printing for export plans."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from evalexport.plans.model import PlanError, load_plan, resolve_tasks

if TYPE_CHECKING:
    from evalexport.plans.batch import TaskOutcome
    from evalexport.plans.model import ExportPlan

__all__ = ["plan_command"]

HELP = """usage: evalexport plan check PLAN.yaml
       evalexport plan render PLAN.yaml [--command evalexport]
       evalexport plan run PLAN.yaml [--workers N] [--report PATH] [--json]
       evalexport plan run PLAN.yaml --slurm [--wait] [--work-dir DIR] [--workers N] [--timeout S]
       evalexport plan gather WORK_DIR [--report PATH] [--json]

check   validate the plan, naming every offending field at once
render  print, per benchmark, the shell tail a job script runs after that benchmark's driver
        step, and what each exporter needs installed
run     export every (benchmark, exporter) of the plan on this machine, at most N at a time
        (default 2); re-running skips what is already exported. With --slurm, submit the same
        work as a Slurm job array (one task per export; --workers caps the tasks running at
        once); --wait waits for it and gathers the results
gather  gather the results of a submitted job array from its work directory"""


def plan_command(
    rest: list[str],
    values: dict[str, str],
    switches: set[str],
    help_asked: bool,
    as_json: bool,
    usage_error: Callable[[str], int],
) -> int:
    if help_asked or not rest:
        print(HELP, file=sys.stdout if help_asked else sys.stderr)
        return 0 if help_asked else 2
    action, *paths = rest
    numbers: dict[str, float] = {}
    for flag, kind in (("--index", int), ("--workers", int), ("--timeout", float)):
        if flag in values:
            try:
                numbers[flag] = kind(values[flag])
            except ValueError:
                return usage_error(f"{flag} takes a number, got {values[flag]!r}")
            if numbers[flag] < (0 if flag == "--index" else 1):
                return usage_error(
                    f"{flag} must be at least {0 if flag == '--index' else 1}, got {values[flag]}"
                )
    if action == "task":
        from evalexport.plans.slurm import run_array_task

        if len(paths) != 1 or "--index" not in values or "--result-dir" not in values:
            return usage_error(
                "plan task TASKS.json --index I --result-dir DIR (used by the job array)"
            )
        outcome = run_array_task(
            Path(paths[0]), int(numbers["--index"]), Path(values["--result-dir"])
        )
        print(json.dumps(outcome.result))
        return 0
    if action == "gather":
        if len(paths) != 1:
            return usage_error("plan gather WORK_DIR")
        return _gather(Path(paths[0]), values, as_json)
    if action not in ("check", "render", "run") or len(paths) != 1:
        return usage_error("usage: evalexport plan check|render|run PLAN.yaml (see plan --help)")
    try:
        plan = load_plan(Path(paths[0]))
    except PlanError as error:
        print(f"evalexport: error: {error}", file=sys.stderr)
        return 2
    if action == "check":
        tasks = resolve_tasks(plan)
        print(f"{paths[0]}: valid; {len(tasks)} exports over {len(plan.job.benchmarks)} benchmarks")
        return 0
    if action == "render":
        return _render(plan, values.get("--command", "evalexport"))
    workers = int(numbers.get("--workers", 2))
    if "--slurm" in switches:
        return _run_slurm(
            plan, values, switches, workers, as_json, numbers.get("--timeout", 86400.0)
        )
    return _run_local(plan, values, workers, as_json)


def _render(plan: ExportPlan, command: str) -> int:
    from evalexport.plans.render import environments_needed, render_tails

    for benchmark, tail in render_tails(plan, command).items():
        print(f"### {benchmark}: append after the driver step of its job script\n{tail}")
    print("### what each exporter needs on the nodes")
    for exporter, need in environments_needed(plan).items():
        print(f"# {exporter}: {need}")
    return 0


def _progress(done: int, total: int, outcome: TaskOutcome) -> None:
    status = outcome.result.status.value
    line = f"[{done}/{total}] {outcome.benchmark} -> {outcome.exporter}: {status}"
    if sys.stderr.isatty():
        print(f"\r\033[K{line}", end="" if done < total else "\n", file=sys.stderr, flush=True)
    else:
        print(line, file=sys.stderr)


_STOP_CODES = (129, 130, 143)
"""Exit codes of an export a stop signal interrupted (``ExitCode.HANGUP`` ... ``TERMINATED``)."""


def _finish(outcomes: list[TaskOutcome], values: dict[str, str], as_json: bool) -> int:
    from evalexport.plans.batch import summary_table
    from evalexport.results import ExportStatus

    report = [outcome.as_json_data() for outcome in outcomes]
    if "--report" in values:
        from evalexport._files import write_text_atomically

        write_text_atomically(Path(values["--report"]), json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2) if as_json else summary_table(outcomes))
    stopped = [
        code for outcome in outcomes if (code := int(outcome.result.exit_code)) in _STOP_CODES
    ]
    if stopped:  # interrupted: say so as a shell would, 128 + the signal
        return stopped[0]
    failed = any(outcome.result.status is ExportStatus.FAILED for outcome in outcomes)
    return 1 if failed else 0


def _run_local(plan: ExportPlan, values: dict[str, str], workers: int, as_json: bool) -> int:
    from evalexport.plans.batch import run_tasks

    tasks = resolve_tasks(plan)
    return _finish(run_tasks(tasks, workers, _progress), values, as_json)


def _new_work_dir() -> Path:
    """A new directory under the cache dir (``<cache>/slurm/<time>-<random>``): never the
    current directory, which may be a checkout or a run's own directory. The cache dir is under
    HOME, which a cluster's nodes share; pass ``--work-dir`` where it is not."""
    import secrets
    import time

    from evalexport.paths import cache_dir

    return cache_dir() / "slurm" / f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


def _run_slurm(
    plan: ExportPlan,
    values: dict[str, str],
    switches: set[str],
    workers: int,
    as_json: bool,
    timeout: float,
) -> int:
    from evalexport.plans.slurm import SlurmError, gather, submit, wait_for

    tasks = resolve_tasks(plan)
    work_dir = Path(values["--work-dir"]).absolute() if "--work-dir" in values else _new_work_dir()
    try:
        job_id = submit(tasks, work_dir, workers)
        print(
            f"submitted Slurm job {job_id}: {len(tasks)} array tasks; work directory {work_dir}",
            file=sys.stderr,
        )
        if "--wait" not in switches:
            print(f"gather the results with: evalexport plan gather {work_dir}")
            return 0
        wait_for(job_id, timeout)
    except SlurmError as error:
        print(f"evalexport: error: {error}", file=sys.stderr)
        return 1
    return _finish(gather(tasks, work_dir), values, as_json)


def _gather(work_dir: Path, values: dict[str, str], as_json: bool) -> int:
    from evalexport.plans.model import ExportTask
    from evalexport.plans.slurm import gather

    try:
        data = json.loads((work_dir / "tasks.json").read_text())
    except (OSError, ValueError) as error:
        print(
            f"evalexport: error: {work_dir} is not a plan work directory ({error})", file=sys.stderr
        )
        return 2
    tasks = [
        ExportTask(d["benchmark"], d["exporter"], Path(d["rollouts"]), d["options"]) for d in data
    ]
    return _finish(gather(tasks, work_dir), values, as_json)
