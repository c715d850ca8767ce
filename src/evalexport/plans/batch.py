"""``evalexport plan run``: export many finished runs at once on this machine.

Each export runs as its own ``evalexport`` process (so exports run in parallel, each with its
own worker and time limit), at most ``workers`` at a time. Re-running a plan skips what is
already exported: tracking exporters by their markers, ATIF by an output directory that holds a
``manifest.jsonl``.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
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
    from evalexport.results import ExportResult, SkipReason

    return ExportResult.skipped(
        "atif",
        str(task.rollouts.parent),
        f"{output} already holds this export's trajectories (manifest.jsonl)",
        SkipReason.ALREADY_EXPORTED,
        output_dirpath=str(output),
    ).model_dump(mode="json")


class _Children:
    """The ``evalexport`` processes running now, so a stop signal can be passed on to them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._processes: set[subprocess.Popen[str]] = set()
        self.stopping: int | None = None
        """The stop signal received; no new export starts once it is set."""

    def start(self, command: list[str]) -> subprocess.Popen[str] | None:
        with self._lock:
            if self.stopping is not None:
                return None
            # A group of its own: a terminal's Ctrl-C reaches us alone, and we pass it on once
            # (a second signal would tell the export to stop at once, not cleanly).
            process = subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            self._processes.add(process)
            return process

    def done(self, process: subprocess.Popen[str]) -> None:
        with self._lock:
            self._processes.discard(process)

    def signal_all(self, signum: int) -> None:
        with self._lock:
            self.stopping = signum
            for process in self._processes:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signum)


def run_task(
    task: ExportTask, python: str = sys.executable, children: _Children | None = None
) -> TaskOutcome:
    """Run one export as ``python -m evalexport`` and return its result, whatever happens."""
    start = time.perf_counter()
    result = _already_written(task)
    if result is None:
        children = children or _Children()
        command = [python, "-m", "evalexport", task.exporter, *task.overrides(), "--json"]
        process = children.start(command)
        if process is None:
            result = _not_started(task, children.stopping or signal.SIGTERM)
        else:
            try:
                stdout, stderr = process.communicate()
            finally:
                children.done(process)
            result = _parse_result(task, process.returncode, stdout, stderr)
    return TaskOutcome(
        task.benchmark, task.exporter, str(task.rollouts), time.perf_counter() - start, result
    )


def _parse_result(task: ExportTask, exit_code: int, stdout: str, stderr: str) -> dict[str, Any]:
    try:
        result: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
        return result
    except (IndexError, ValueError):
        from evalexport.masking import scrub_text

        return {
            "exporter": task.exporter,
            "status": "failed",
            "exit_code": exit_code if exit_code > 0 else 1,
            "message": f"evalexport exited with code {exit_code} without a result: "
            + scrub_text(stderr.strip()[-1000:]),
            "run_dir": str(task.rollouts.parent),
            "details": {},
        }


def _not_started(task: ExportTask, signum: int) -> dict[str, Any]:
    from evalexport.interrupts import signal_name

    return {
        "exporter": task.exporter,
        "status": "failed",
        "exit_code": 128 + signum,
        "message": f"not started: the plan was interrupted by {signal_name(signum)}",
        "run_dir": str(task.rollouts.parent),
        "details": {"interrupted_by": signal_name(signum)},
    }


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
    from evalexport.interrupts import Interrupted

    children = _Children()
    outcomes: dict[int, TaskOutcome] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {
            pool.submit(run_task, task, sys.executable, children): index
            for index, task in enumerate(tasks)
        }
        pending = set(futures)
        while pending:
            try:
                for future in as_completed(pending):
                    pending.discard(future)
                    outcomes[futures[future]] = outcome = future.result()
                    if progress:
                        progress(len(outcomes), len(tasks), outcome)
            except (Interrupted, KeyboardInterrupt) as error:
                children.signal_all(Interrupted.from_exception(error).signum)
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
