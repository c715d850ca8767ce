"""``evalexport plan run``: export many finished runs at once on this machine.

Exports run in a pool of long-lived export processes (:mod:`evalexport.plans.pool`), at most
``workers`` at a time; each process imports evalexport once and runs the exports it is given
with :func:`export_task`, the same function a Slurm array task runs. Re-running a plan skips
what is already exported, by each exporter's own rule (``Target.already_exported``, from its ``resolve``, and the
export marker of tracking exporters).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from evalexport.plans.model import ExportTask, TaskOutcome
from evalexport.results import ExitCode, ExportResult, SkipReason

__all__ = [
    "TaskOutcome",
    "exit_code_of",
    "export_task",
    "run_tasks",
    "summary_table",
    "timed",
]


def export_task(task: ExportTask) -> ExportResult:
    """One export of a plan, in this process, through the pipeline: a batch's rerun skips what
    its exporter's own output proves done. A result whatever happens, never an exception (but
    a stop signal's ``Interrupted`` between stages)."""
    from evalexport.pipeline import ExportRequest, run_export

    options = {"rollouts_jsonl_fpath": str(task.rollouts), **task.options}
    result = run_export(ExportRequest(task.exporter, options, skip_finished=True))
    if not result.run_dir:  # refused before the run was built: say which run it was
        result = result.model_copy(update={"run_dir": str(task.rollouts.parent)})
    return result


def timed(task: ExportTask) -> TaskOutcome:
    """Run one task and record how long it took."""
    start = time.perf_counter()
    result = export_task(task)
    return TaskOutcome.of(task, time.perf_counter() - start, result)


def run_tasks(
    tasks: list[ExportTask],
    workers: int,
    progress: Callable[[int, int, TaskOutcome], None] | None = None,
) -> list[TaskOutcome]:
    """Every task, at most ``workers`` at a time; outcomes in task order.

    A stop signal (SIGINT, SIGTERM, SIGHUP) is passed on to the exports under way, each of which
    stops cleanly and reports it; exports not yet started are reported as not started. Every
    task has an outcome either way, so the summary and the report say what happened to each.
    """
    from evalexport.plans.pool import ExportPool

    return ExportPool(max(1, min(workers, len(tasks) or 1))).run(tasks, progress)


def exit_code_of(outcomes: list[TaskOutcome]) -> int:
    """A batch's exit code: ``128 + signal`` if it was stopped; else, if exports failed, their
    exit code when they all share one (``3``: stored without a verdict, ``4``: refused, ``2``:
    usage) and ``1`` when they differ; else ``5`` if tasks have not run yet (a queued Slurm
    array); else ``0``."""
    from evalexport.results import ExportStatus

    stopped = [o.result.exit_code for o in outcomes if o.result.exit_code.stopped_by_signal]
    if stopped:  # interrupted: say so as a shell would, 128 + the signal
        return int(stopped[0])
    failed = {o.result.exit_code for o in outcomes if o.result.status is ExportStatus.FAILED}
    if failed:
        return int(failed.pop()) if len(failed) == 1 else int(ExitCode.FAILED)
    if any(o.result.status is ExportStatus.PENDING for o in outcomes):
        return int(ExitCode.PENDING)
    return int(ExitCode.OK)


def summary_table(outcomes: list[TaskOutcome], width: int | None = None) -> str:
    """The outcomes as an aligned text table, one row per task, its message wrapped (never
    cut) to ``width`` columns (default: the terminal's, else 100)."""
    import shutil
    import textwrap

    rows = [("benchmark", "exporter", "status", "exit", "seconds", "message")]
    notes: dict[str, list[str]] = {}
    """Each note the results end with, and the exports that said it: said once, below."""
    for outcome in outcomes:
        result = outcome.result
        message = result.message.splitlines()[0] if result.message else ""
        for note in result.notices:
            said = f" Note: {note.rstrip('.')}."
            if said in message:
                message = message.replace(said, "")
                notes.setdefault(note, []).append(f"{outcome.benchmark}/{outcome.exporter}")
        rows.append(
            (
                outcome.benchmark,
                outcome.exporter,
                result.status.value,
                str(int(result.exit_code)),
                f"{outcome.seconds:.1f}",
                message,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    indent = sum(widths) + 2 * len(widths)
    total = width or shutil.get_terminal_size((100, 24)).columns
    lines = []
    for row in rows:
        first, *more = textwrap.wrap(
            row[5], max(40, total - indent), break_long_words=False, break_on_hyphens=False
        ) or [""]
        cells = "  ".join(cell.ljust(w) for cell, w in zip(row[:5], widths, strict=True))
        lines.append(f"{cells}  {first}".rstrip())
        lines.extend(" " * indent + line for line in more)
    for note, where in notes.items():
        exports = ", ".join(where) if len(where) <= 3 else f"{len(where)} exports"
        for line in textwrap.wrap(
            f"Note ({exports}): {note.rstrip('.')}.",
            max(40, total),
            break_long_words=False,
            break_on_hyphens=False,
            subsequent_indent="  ",
        ):
            lines.append(line)
    counts: dict[str, int] = {}
    for outcome in outcomes:
        result = outcome.result
        said = (
            "skipped (benchmark never started)"
            if result.skip_reason is SkipReason.NOT_STARTED
            else result.status.value
        )
        counts[said] = counts.get(said, 0) + 1
    lines.append(
        ", ".join(f"{count} {status}" for status, count in sorted(counts.items()))
        or "nothing to export"
    )
    return "\n".join(lines)
