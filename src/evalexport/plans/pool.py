"""A pool of long-lived export processes for ``plan run``.

Starting ``evalexport`` costs about 125 ms of imports; an ATIF export of a small run, 2 to 7 ms.
So a batch keeps ``size`` processes (``python -m evalexport.plans.pool_worker``), each of which
imports evalexport once and then runs export after export in-process (an isolated exporter
still runs its SDK in a worker process of its own). One thread per process hands it a task as a
JSON line on stdin and reads its ``ExportResult`` back as a JSON line on stdout; the process's
stderr is ours, so its warnings reach the user as an export's would.

Processes, not threads: exports hold the GIL while they convert, and a crash in one (a segfault
in a C extension) costs only its own task; a new process takes over the rest of the queue.

Stopping: each process runs in a session of its own, so a terminal's Ctrl-C reaches only us. A
stop signal is passed on once to every process; an export under way stops cleanly and reports
it (exit code 128 + signal), an idle process exits, and every task not yet handed out is
reported as not started.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, final

from evalexport.interrupts import Interrupted, exit_description, signal_name
from evalexport.plans.model import ExportTask, TaskOutcome
from evalexport.results import ExitCode, ExportResult

__all__ = ["ExportPool"]

_CLOSE_SECONDS = 10.0


@final
class ExportPool:
    """Long-lived export processes that run plan tasks in parallel, each task in-process as the
    CLI would."""

    def __init__(self, size: int, python: str = sys.executable) -> None:
        self.size = size
        self.python = python
        self._lock = threading.Lock()
        self._processes: set[subprocess.Popen[str]] = set()
        self.stopping: int | None = None
        """The stop signal received; no task is handed out once it is set."""
        self._running = 0
        self._all_served = threading.Event()

    def run(
        self,
        tasks: list[ExportTask],
        progress: Callable[[int, int, TaskOutcome], None] | None = None,
    ) -> list[TaskOutcome]:
        """Every task's outcome, in task order."""
        queue = collections.deque(enumerate(tasks))
        outcomes: dict[int, TaskOutcome] = {}

        def finished(index: int, outcome: TaskOutcome) -> None:
            with self._lock:
                outcomes[index] = outcome
                count = len(outcomes)
            if progress:
                progress(count, len(tasks), outcome)

        threads = [
            threading.Thread(target=self._serve, args=(queue, finished), daemon=True)
            for _ in range(min(self.size, len(tasks)))
        ]
        self._running = len(threads)
        self._all_served.clear()
        for thread in threads:
            thread.start()
        # Wait on an event, not on join(): a signal handler raising inside Thread.join() can
        # leave the thread looking finished while it still waits for its export's result.
        while self._running:
            try:
                self._all_served.wait(timeout=0.5)
            except (Interrupted, KeyboardInterrupt) as error:
                self.stop(Interrupted.from_exception(error).signum)
        for index, task in enumerate(tasks):
            if index not in outcomes:
                outcomes[index] = TaskOutcome.of(task, 0.0, self._not_started(task))
        return [outcomes[index] for index in range(len(tasks))]

    def stop(self, signum: int) -> None:
        """Pass a stop signal on, once, to every export process; hand out no more tasks."""
        with self._lock:
            if self.stopping is not None:
                return
            self.stopping = signum
            for process in self._processes:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signum)

    def _serve(
        self,
        queue: collections.deque[tuple[int, ExportTask]],
        finished: Callable[[int, TaskOutcome], None],
    ) -> None:
        """One process's thread: hand it tasks until the queue is empty or we are stopped."""
        process: subprocess.Popen[str] | None = None
        try:
            while True:
                if process is not None and process.poll() is not None:
                    self._close(process)  # it crashed: a new one takes over the rest
                    process = None
                with self._lock:
                    if self.stopping is not None or not queue:
                        return
                    index, task = queue.popleft()
                    if process is None:
                        process = self._start()
                start = time.perf_counter()
                result = self._ask(process, task)
                finished(index, TaskOutcome.of(task, time.perf_counter() - start, result))
        finally:
            if process is not None:
                self._close(process)
            with self._lock:
                self._running -= 1
                if not self._running:
                    self._all_served.set()

    def _start(self) -> subprocess.Popen[str]:
        """A new export process (the lock is held)."""
        process = subprocess.Popen(
            # -P: the working directory (a run's, say) is not put on sys.path to shadow modules
            [self.python, "-P", "-m", "evalexport.plans.pool_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self._processes.add(process)
        return process

    def _ask(self, process: subprocess.Popen[str], task: ExportTask) -> ExportResult:
        stdin, stdout = process.stdin, process.stdout
        assert stdin is not None
        assert stdout is not None
        try:
            _send(stdin, task.to_json())
            line = stdout.readline()
        except (BrokenPipeError, ValueError):
            line = ""
        if line:
            try:
                return ExportResult.model_validate_json(line)
            except ValueError as error:
                return task.failed(f"the export process answered with no result ({error})")
        code = process.wait()
        if code < 0 and self.stopping is not None:
            return task.failed(
                f"interrupted by {signal_name(self.stopping)} before its export reported",
                ExitCode.for_signal(self.stopping),
            )
        return task.failed(
            f"the export process {exit_description(code)} without a result; see its stderr"
        )

    def _close(self, process: subprocess.Popen[str]) -> None:
        """End a process: its stdin closed, it exits; then nothing of its group is left."""
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=_CLOSE_SECONDS)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        if process.stdout is not None:
            process.stdout.close()
        with self._lock:
            self._processes.discard(process)

    def _not_started(self, task: ExportTask) -> ExportResult:
        signum = self.stopping or signal.SIGTERM
        return task.failed(
            f"not started: the plan was interrupted by {signal_name(signum)}",
            ExitCode.for_signal(signum),
            interrupted_by=signal_name(signum),
        )


def _send(stdin: IO[str], line: str) -> None:
    stdin.write(line + "\n")
    stdin.flush()
