"""``evalexport plan ...``: export plans (see ``docs/plans.md``); the work is in ``plans/``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from evalexport.cli._args import FAILED, OK, USAGE, Arguments, UsageError

if TYPE_CHECKING:
    from evalexport.plans.batch import TaskOutcome
    from evalexport.plans.model import ExportPlan

SUMMARY = "export plans: 'plan check|render|run PLAN.yaml' (see plan --help)"
VALUE_FLAGS = (
    "--workers",
    "--report",
    "--work-dir",
    "--timeout",
    "--index",
    "--result-dir",
    "--command",
    "--partition",
    "--account",
    "--time",
)
SWITCHES = ("--slurm", "--wait")
FLAGS = ("--json", "--dry-run", *VALUE_FLAGS, *SWITCHES)

HELP = """usage: evalexport plan check PLAN.yaml
       evalexport plan render PLAN.yaml [--command evalexport]
       evalexport plan run PLAN.yaml [--workers N] [--report PATH] [--json] [--dry-run]
       evalexport plan run PLAN.yaml --slurm [--wait] [--work-dir DIR] [--workers N] [--timeout S]
                                     [--partition P] [--account A] [--time T] [--dry-run]
       evalexport plan gather WORK_DIR [--report PATH] [--json]

check   validate the plan, naming every offending field at once
render  print, per benchmark, the shell tail a job script runs after that benchmark's driver
        step, and what each exporter needs installed
run     export every (benchmark, exporter) of the plan on this machine, at most N at a time
        (default 2); re-running skips what is already exported; --dry-run runs each export's
        dry run instead (its verdict, nothing exported). With --slurm, submit the same
        work as a Slurm job array (one task per export; --workers caps the tasks running at
        once; the work directory defaults to a new one under the cache dir); --wait waits for
        it and gathers the results; --partition, --account and --time go into the script as
        #SBATCH lines; --dry-run prints the script and submits nothing (no sbatch needed)
gather  gather the results of a submitted job array from its work directory"""


def run(arguments: Arguments, rest: list[str]) -> int:
    """``evalexport plan check|render|run PLAN.yaml``: printing and exit codes."""
    from evalexport.plans.model import PlanError, resolve_tasks
    from evalexport.plans.validation import load_plan

    values = arguments.values
    if arguments.help or not rest:
        print(HELP, file=sys.stdout if arguments.help else sys.stderr)
        return OK if arguments.help else USAGE
    action, *paths = rest
    numbers: dict[str, float] = {}
    for flag, kind in (("--index", int), ("--workers", int), ("--timeout", float)):
        if flag in values:
            try:
                numbers[flag] = kind(values[flag])
            except ValueError:
                raise UsageError(f"{flag} takes a number, got {values[flag]!r}") from None
            if numbers[flag] < (0 if flag == "--index" else 1):
                raise UsageError(
                    f"{flag} must be at least {0 if flag == '--index' else 1}, got {values[flag]}"
                )
    if action == "task":
        from evalexport.plans.slurm import SlurmError, run_array_task

        not_given = [flag for flag in ("--index", "--result-dir") if flag not in values]
        if len(paths) != 1 or not_given:
            lacks = f"needs {' and '.join(not_given)}: " if not_given else ""
            raise UsageError(
                f"plan task {lacks}plan task TASKS.json --index I --result-dir DIR (used by "
                "the job array)"
            )
        try:
            outcome = run_array_task(
                Path(paths[0]), int(numbers["--index"]), Path(values["--result-dir"])
            )
        except SlurmError as error:
            raise UsageError(str(error)) from None
        print(outcome.result.model_dump_json())
        return OK
    if action == "gather":
        if len(paths) != 1:
            raise UsageError("plan gather WORK_DIR")
        return _gather(Path(paths[0]), arguments)
    if action not in ("check", "render", "run") or len(paths) != 1:
        unknown = action not in ("check", "render", "run", "task", "gather")
        raise UsageError(
            (f"unknown plan command {action!r}; " if unknown else "")
            + "usage: evalexport plan check|render|run PLAN.yaml, or plan gather WORK_DIR"
        )
    if arguments.dry_run and action != "run":
        raise UsageError(f"--dry-run is plan run's (plan {action} exports nothing anyway)")
    try:
        plan = load_plan(Path(paths[0]))
    except PlanError as error:
        raise UsageError(str(error)) from None
    if action == "check":
        from evalexport.plans.model import not_started

        tasks = resolve_tasks(plan)
        skipped = {outcome.benchmark for outcome in not_started(plan)}
        never = f"; {len(skipped)} never started ({', '.join(sorted(skipped))})" if skipped else ""
        print(
            f"{paths[0]}: valid; {len(tasks)} exports over {len(plan.job.benchmarks)} "
            f"benchmarks{never}"
        )
        # A plan is often checked before its job has run: the runs not there yet are said (a
        # note, not an error), so that 'plan run' failing them is no surprise.
        missing = sorted(
            {(task.benchmark, task.rollouts) for task in tasks if not task.rollouts.exists()}
        )
        for benchmark, rollouts in missing:
            print(
                f"note: {benchmark}: no run yet at {rollouts}; plan run exports it once it is there"
            )
        return OK
    if action == "render":
        return _render(plan, values.get("--command", "evalexport"))
    workers = int(numbers.get("--workers", 2))
    if "--slurm" in arguments.switches:
        return _run_slurm(plan, arguments, workers, numbers.get("--timeout", 86400.0))
    import dataclasses

    from evalexport.plans.batch import run_tasks
    from evalexport.plans.model import not_started

    tasks = resolve_tasks(plan)
    if arguments.dry_run:  # each export's own dry run: its verdict, nothing exported
        tasks = [
            dataclasses.replace(task, options={**task.options, "dry_run": True}) for task in tasks
        ]
    return _finish(not_started(plan) + run_tasks(tasks, workers, _progress), arguments)


def _render(plan: ExportPlan, command: str) -> int:
    from evalexport.plans.render import environments_needed, render_tails

    for benchmark, tail in render_tails(plan, command).items():
        print(f"### {benchmark}: append after the driver step of its job script\n{tail}")
    print("### what each exporter needs on the nodes")
    for exporter, need in environments_needed(plan).items():
        print(f"# {exporter}: {need}")
    return OK


def _progress(done: int, total: int, outcome: TaskOutcome) -> None:
    status = outcome.result.status.value
    line = f"[{done}/{total}] {outcome.benchmark} -> {outcome.exporter}: {status}"
    if sys.stderr.isatty():
        print(f"\r\033[K{line}", end="" if done < total else "\n", file=sys.stderr, flush=True)
    else:
        print(line, file=sys.stderr)


def _finish(outcomes: list[TaskOutcome], arguments: Arguments) -> int:
    from evalexport.plans.batch import exit_code_of, summary_table

    report = [outcome.as_json_data() for outcome in outcomes]
    if "--report" in arguments.values:
        from evalexport.host.files import write_text_atomically

        write_text_atomically(
            Path(arguments.values["--report"]), json.dumps(report, indent=2) + "\n"
        )
    code = arguments.decide(exit_code_of(outcomes))  # before printing: it stands in a pipe
    print(json.dumps(report, indent=2) if arguments.json else summary_table(outcomes))
    return code


def _run_slurm(plan: ExportPlan, arguments: Arguments, workers: int, timeout: float) -> int:
    from evalexport.plans.model import resolve_tasks
    from evalexport.plans.slurm import (
        SBATCH_OPTIONS,
        SlurmError,
        array_script,
        default_work_dir,
        gather,
        script_value_problem,
        submit,
        wait_for,
    )

    tasks = resolve_tasks(plan)
    given = arguments.values.get("--work-dir")
    work_dir = Path(given).absolute() if given else default_work_dir()
    sbatch_options = {
        name: arguments.values[f"--{name}"]
        for name in SBATCH_OPTIONS
        if f"--{name}" in arguments.values
    }
    if not tasks:
        raise UsageError("the plan has no export to submit")
    flagged = {f"--{name}": value for name, value in sbatch_options.items()}
    if problem := script_value_problem({**flagged, "--work-dir": str(work_dir)}):
        raise UsageError(problem)
    if arguments.dry_run:
        print(array_script(tasks, work_dir, workers, sbatch_options), end="")
        print(
            f"# dry run: nothing submitted; 'plan run --slurm' writes this script and the "
            f"{len(tasks)} task{'s' if len(tasks) != 1 else ''} into {work_dir}, then runs "
            "sbatch on it",
            file=sys.stderr,
        )
        return OK
    try:
        job_id = submit(tasks, work_dir, workers, sbatch_options=sbatch_options)
        print(
            f"submitted Slurm job {job_id}: {len(tasks)} array tasks; work directory {work_dir}",
            file=sys.stderr,
        )
        if "--wait" not in arguments.switches:
            print(f"gather the results with: evalexport plan gather {work_dir}")
            return OK
        wait_for(job_id, timeout)
    except SlurmError as error:
        print(f"evalexport: error: {error}", file=sys.stderr)
        return FAILED
    from evalexport.plans.model import not_started

    return _finish(not_started(plan) + gather(tasks, work_dir), arguments)


def _gather(work_dir: Path, arguments: Arguments) -> int:
    from evalexport.plans.slurm import SlurmError, gather, load_tasks

    try:
        tasks = load_tasks(work_dir)
    except SlurmError as error:
        raise UsageError(str(error)) from None
    return _finish(gather(tasks, work_dir), arguments)
