"""``evalexport plan run``: export many finished runs at once on this machine.

Each export runs as its own ``evalexport`` process (so exports run in parallel, each with its
own worker and time limit), at most ``workers`` at a time. Re-running a plan skips what is
already exported: tracking exporters by their markers, ATIF by an output directory that holds a
``manifest.jsonl``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, final

from evalexport.plans.model import ExportTask

__all__ = ["TaskOutcome", "run_task", "run_tasks", "summary_table"]


@final
@dataclass(frozen=True)
class TaskOutcome:
    benchmark: str
    exporter: str
    rollouts: str
    seconds: float
    result: dict[str, Any]
    """The task's ``ExportResult`` as JSON data."""

    def as_json_data(self) -> dict[str, Any]:
        return asdict(self)


def _already_written(task: ExportTask) -> dict[str, Any] | None:
    if task.exporter != "atif" or "output_dirpath" not in task.options:
        return None
    output = Path(str(task.options["output_dirpath"])).absolute()
    if not (output / "manifest.jsonl").is_file():
        return None
    return {
        "exporter": "atif",
        "status": "skipped",
        "exit_code": 0,
        "message": f"{output} already holds this export's trajectories (manifest.jsonl)",
        "run_dir": str(task.rollouts.parent),
        "details": {"skip_reason": "already exported", "output_dirpath": str(output)},
    }


def run_task(task: ExportTask, python: str = sys.executable) -> TaskOutcome:
    """Run one export as ``python -m evalexport`` and return its result, whatever happens."""
    start = time.perf_counter()
    result = _already_written(task)
    if result is None:
        completed = subprocess.run(
            [python, "-m", "evalexport", task.exporter, *task.overrides(), "--json"],
            capture_output=True,
            text=True,
            check=False,
        )
        try:
            result = json.loads(completed.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            from evalexport.masking import scrub_text

            result = {
                "exporter": task.exporter,
                "status": "failed",
                "exit_code": completed.returncode or 1,
                "message": f"evalexport exited with code {completed.returncode} without a result: "
                + scrub_text(completed.stderr.strip()[-1000:]),
                "run_dir": str(task.rollouts.parent),
                "details": {},
            }
    return TaskOutcome(
        task.benchmark, task.exporter, str(task.rollouts), time.perf_counter() - start, result
    )


def run_tasks(
    tasks: list[ExportTask],
    workers: int,
    progress: Callable[[int, int, TaskOutcome], None] | None = None,
) -> list[TaskOutcome]:
    """Every task, at most ``workers`` at a time; outcomes in task order."""
    outcomes: dict[int, TaskOutcome] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {pool.submit(run_task, task): index for index, task in enumerate(tasks)}
        for future in as_completed(futures):
            outcome = future.result()
            outcomes[futures[future]] = outcome
            if progress:
                progress(len(outcomes), len(tasks), outcome)
    return [outcomes[index] for index in range(len(tasks))]


def summary_table(outcomes: list[TaskOutcome]) -> str:
    rows = [("benchmark", "exporter", "status", "exit", "seconds", "message")]
    for outcome in outcomes:
        message = (
            str(outcome.result.get("message", "")).splitlines()[0][:70]
            if outcome.result.get("message")
            else ""
        )
        rows.append(
            (
                outcome.benchmark,
                outcome.exporter,
                str(outcome.result.get("status")),
                str(outcome.result.get("exit_code")),
                f"{outcome.seconds:.1f}",
                message,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:5], widths, strict=True))
        + "  "
        + row[5]
        for row in rows
    ]
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[str(outcome.result.get("status"))] = (
            counts.get(str(outcome.result.get("status")), 0) + 1
        )
    lines.append(
        ", ".join(f"{count} {status}" for status, count in sorted(counts.items()))
        or "nothing to export"
    )
    return "\n".join(lines)
