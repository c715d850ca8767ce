"""Launching a worker: ``<env>/bin/python -I runner.py REQUEST RESULT`` in an empty directory.

The runner and the worker body are copied into a fresh temporary directory that holds nothing
else, and ``-I`` keeps the script's directory, the working directory and user site-packages off
``sys.path``: no module of ours, and no stray ``evalrdl.py`` beside the exporter, can shadow
the SDK. The worker inherits the environment variables (that is how tokens reach the SDK; they
are never written to the request file). Its stdout and stderr go to a log file whose tail is
reported when it fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from evalexport.isolation.environments import Environment

__all__ = ["WorkerOutcome", "run_worker"]

RUNNER = Path(__file__).resolve().parent.parent / "workers" / "runner.py"
_TAIL_LINES = 20


@final
@dataclass(frozen=True)
class WorkerOutcome:
    """What a worker left behind: its result (if it wrote one), exit code and log."""

    result: dict[str, Any] | None
    exit_code: int
    """The process's exit code; negative for a signal, as ``subprocess`` reports it."""
    log: str
    timed_out: bool
    time_limit: float

    def log_tail(self) -> str:
        from evalexport.masking import scrub_text

        lines = [line for line in self.log.splitlines() if line.strip()]
        return scrub_text("\n".join(lines[-_TAIL_LINES:]))

    def describe_exit(self) -> str:
        if self.exit_code < 0:
            try:
                name = signal.Signals(-self.exit_code).name
            except ValueError:
                name = f"signal {-self.exit_code}"
            return f"was killed by {name}"
        return f"exited with code {self.exit_code}"


def run_worker(
    environment: Environment,
    body: Path,
    payload: dict[str, Any],
    time_limit: float,
    secrets: dict[str, str] | None = None,
) -> WorkerOutcome:
    """Run ``body``'s ``run(payload)`` in ``environment``; kill it after ``time_limit`` s.

    ``secrets`` are added to the worker's environment variables only, never written to disk.
    """
    with tempfile.TemporaryDirectory(prefix="evalexport-worker-") as scratch:
        workdir = Path(scratch)
        runner = workdir / "evalexport_worker_runner.py"
        body_copy = workdir / "evalexport_worker_body.py"
        shutil.copyfile(RUNNER, runner)
        shutil.copyfile(body, body_copy)
        request, result_path, log_path = (
            workdir / "request.json",
            workdir / "result.json",
            workdir / "worker.log",
        )
        request.write_text(json.dumps({"body": str(body_copy), "payload": payload}))
        with log_path.open("w", encoding="utf-8") as log:
            process = subprocess.Popen(
                [str(environment.python), "-I", str(runner), str(request), str(result_path)],
                cwd=workdir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **(secrets or {})},
            )
            timed_out = False
            try:
                exit_code = process.wait(timeout=time_limit)
            except subprocess.TimeoutExpired:
                timed_out = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                exit_code = process.wait()
            except BaseException:  # interrupted: never leave a worker behind
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                raise
        result = None if timed_out else _read_result(result_path)
        return WorkerOutcome(
            result=result,
            exit_code=exit_code,
            log=log_path.read_text(encoding="utf-8", errors="replace"),
            timed_out=timed_out,
            time_limit=time_limit,
        )


def _read_result(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
