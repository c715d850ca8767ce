"""Launching a worker: ``<env>/bin/python -I runner.py BODY`` in an empty directory.

The runner and the worker body are copied into a fresh temporary directory that holds nothing
else, and ``-I`` keeps the script's directory, the working directory and user site-packages off
``sys.path``: no module of ours, and no stray ``evalrdl.py`` beside the exporter, can shadow
the SDK. The worker is given its environment, not the caller's whole one
(:mod:`.variables`): what a process needs, and what its exporter declares (its tokens among
them). The
request goes to the worker's stdin, never to a file: a tracking URI with a password in it is
never on disk. Its progress and result come back on a pipe, and its stdout and stderr on
another, whose tail is kept in memory and reported when it fails: a full disk cannot lose the
outcome of a remote run that exists.

Stopping (SPEC §3.4): the worker runs in a session of its own, so a terminal's Ctrl-C reaches
only us. When we are interrupted, or the time limit passes, the worker gets the signal and
:data:`GRACE_SECONDS` to end its remote run (the runner raises it in the body once); a second
signal, or the end of the grace, kills its whole process group. Whatever the worker started is
killed with it when it exits, in its group or not (``descendants.py``: an SDK's helper such as
``wandb-core`` starts a session of its own), so nothing is orphaned. If we are killed outright
(SIGKILL), the worker sees its stdin close, stops itself the same way and removes the scratch
directories, and the reaper kills whatever of it is left after the grace.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, final

from evalexport.callers import current_caller
from evalexport.interrupts import Interrupted, Landing, current_landing, exit_description
from evalexport.isolation.descendants import owned_scratch, tracked_launch
from evalexport.isolation.environments import Environment
from evalexport.isolation.variables import BASE, Admitted
from evalexport.isolation.worker_pipes import (
    LogTail,
    Reports,
)
from evalexport.workers.protocol import (
    WORKER_BODY_VARIABLE,
    RunnerRequest,
    WorkerResult,
)
from evalexport.workers.runner import EXIT_CODES_COPY, PROTOCOL_COPY

__all__ = ["GRACE_SECONDS", "WorkerOutcome", "run_worker"]

WORKERS = Path(__file__).resolve().parent.parent / "workers"
RUNNER = WORKERS / "runner.py"
PROTOCOL = WORKERS / "protocol.py"
EXIT_CODES = WORKERS / "exit_codes.py"
GRACE_SECONDS = 20.0
"""How long a stopped worker may take to end its remote run before it is killed (Slurm waits
30 s, its default ``KillWait``, between SIGTERM and SIGKILL)."""
_TAIL_LINES = 20


@final
@dataclass(frozen=True)
class WorkerOutcome:
    """What a worker left behind: its result (if it wrote one), exit code and log."""

    result: WorkerResult | None
    exit_code: int
    """The process's exit code; negative for a signal, as ``subprocess`` reports it."""
    log: str
    timed_out: bool
    time_limit: float
    interrupted_by: int | None = None
    """The stop signal we received while the worker ran, if any (it was passed on)."""

    def log_tail(self) -> str:
        """The last lines the worker wrote on stdout and stderr, for a message."""
        from evalexport.masking import scrub_text

        lines = [line for line in self.log.splitlines() if line.strip()]
        return scrub_text("\n".join(lines[-_TAIL_LINES:]))

    def describe_exit(self) -> str:
        """``exited with code 3``, ``was killed by SIGKILL``: how the worker ended, in words."""
        return exit_description(self.exit_code)


def run_worker(
    environment: Environment,
    body: Path,
    payload: Mapping[str, object],
    time_limit: float,
    secrets: dict[str, str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    scratch: Sequence[Path] = (),
    admitted: Admitted = BASE,
) -> WorkerOutcome:
    """Run ``body``'s ``run(payload)`` in ``environment``; stop it after ``time_limit`` s.

    ``secrets`` are added to the worker's environment variables only, never written to disk.
    ``progress(done, total)`` is called as the worker reports progress. ``scratch`` lists the
    caller's temporary directories, which the worker removes if we die before it ends.
    ``admitted``: what the worker is given of this process's environment (:mod:`.variables`).
    """
    with started_worker(environment, body, secrets, progress, admitted) as worker:
        return worker.run(payload, time_limit, scratch)


@final
class StartedWorker:
    """A worker started ahead of its payload (:func:`started_worker`): it loads its body and
    imports its SDK while the caller prepares the payload; :meth:`run` sends it, once."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        workdir: Path,
        body: Path,
        reports: Reports,
        log: LogTail,
        report_fd: int,
    ) -> None:
        self._process = process
        self._workdir = workdir
        self._body = body
        self._reports = reports
        self._log = log
        self._report_fd = report_fd
        """The number the worker knows its report pipe by (inherited as it is here)."""
        self.ran = False

    def run(
        self, payload: Mapping[str, object], time_limit: float, scratch: Sequence[Path] = ()
    ) -> WorkerOutcome:
        """Send ``payload``, wait at most ``time_limit`` s from now, and say how it ended."""
        assert not self.ran, "a started worker runs one payload"
        self.ran = True
        request: RunnerRequest = {
            "body": str(self._body),
            "payload": payload,
            "report_fd": self._report_fd,
            "scratch": [str(self._workdir), *map(str, scratch)],
            "options_as_tokens": current_caller().gives_tokens,
        }
        landing = current_landing()
        if landing is not None:  # the moment the worker says its run is finished, it has landed
            self._reports.on_success = landing.landed
        try:
            exit_code, timed_out, interrupted_by = _wait(
                self._process, request, time_limit, self._reports, landing
            )
        finally:
            _end(self._process)
        self._reports.finished()
        self._log.finished()
        return WorkerOutcome(
            result=self._reports.result(),
            exit_code=exit_code,
            log=self._log.text(),
            timed_out=timed_out,
            time_limit=time_limit,
            interrupted_by=interrupted_by,
        )


@contextlib.contextmanager
def started_worker(
    environment: Environment,
    body: Path,
    secrets: dict[str, str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    admitted: Admitted = BASE,
    say: Callable[[str], None] | None = None,
) -> Iterator[StartedWorker]:
    """A worker for ``body`` in ``environment``, started now, given its payload later with
    :meth:`StartedWorker.run`. However the block ends, nothing it started outlives it: a worker
    never given a payload is let go (its stdin closed) and killed with its process group.

    ``secrets`` (and the worker's own variables) go to the worker's environment only, never
    to disk; of this process's environment the worker is given what ``admitted`` admits
    (:mod:`.variables`), nothing else. ``say(text)`` is called with what the worker says
    while it works (a wait for another export, as it begins).
    """
    with owned_scratch("evalexport-worker-") as workdir:
        runner = workdir / "evalexport_worker_runner.py"
        body_copy = workdir / "evalexport_worker_body.py"
        shutil.copyfile(RUNNER, runner)
        shutil.copyfile(PROTOCOL, workdir / PROTOCOL_COPY)
        shutil.copyfile(EXIT_CODES, workdir / EXIT_CODES_COPY)
        shutil.copyfile(body, body_copy)
        # Reports (progress, the result) and the worker's output come back through pipes, held
        # in memory: nothing of the worker's outcome depends on a disk that may be full.
        report_read, report_write = os.pipe()
        log_read, log_write = os.pipe()
        own_tmp = workdir / "tmp"  # what the SDK writes to TMPDIR is removed with the worker
        own_tmp.mkdir()
        environment_variables = {
            **admitted.given(os.environ),
            **(secrets or {}),
            "TMPDIR": str(own_tmp),
            # A fake's recorder names the body's own source as the call site, not this copy.
            WORKER_BODY_VARIABLE: str(body.resolve()),
        }
        with tracked_launch(environment_variables) as launch:
            try:
                process = subprocess.Popen(
                    [str(environment.python), "-I", str(runner), str(body_copy)],
                    cwd=workdir,
                    stdin=subprocess.PIPE,
                    stdout=log_write,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    pass_fds=(report_write,),
                    env=launch.environment,
                )
            except BaseException:
                os.close(report_read)
                os.close(log_read)
                raise
            finally:
                os.close(report_write)  # the worker's copies are the ones that count
                os.close(log_write)
            launch.started(process.pid)
            reports = Reports(report_read, progress, say)
            log = LogTail(log_read)
            try:
                yield StartedWorker(process, workdir, body_copy, reports, log, report_write)
            finally:
                _end(process)
                reports.finished()
                log.finished()
            # Leaving the block kills what the worker started outside its process group.


def _wait(
    process: subprocess.Popen[bytes],
    request: RunnerRequest,
    time_limit: float,
    reports: Reports,
    landing: Landing | None,
) -> tuple[int, bool, int | None]:
    """Send the request, wait, and read the worker's last report; returns (exit code, timed
    out, the stop signal we received before the export landed).

    A stop signal before the landing raises here and is passed on: the worker stops and ends
    its remote run. One after it (the worker has reported its run finished, and is ending) is
    recorded by ``landing``: the worker gets it too, so that it does not linger, but the
    export stands."""
    assert process.stdin is not None
    deadline = time.monotonic() + time_limit
    try:
        _send(process.stdin, request)
        while True:
            try:
                exit_code = process.wait(timeout=min(_POLL_SECONDS, deadline - time.monotonic()))
                break
            except subprocess.TimeoutExpired:
                if landing is not None and landing.signum is not None:
                    return _stop(process, landing.signum), False, None
                if time.monotonic() >= deadline:
                    return _stop(process, signal.SIGTERM), True, None
        reports.finished()  # in the ``try``: a signal before the result is read is a stop
        return exit_code, False, None
    except (Interrupted, KeyboardInterrupt) as error:
        interruption = Interrupted.from_exception(error)
        return _stop(process, interruption.signum), False, interruption.signum


_POLL_SECONDS = 0.1
"""How often a waiting launcher looks for a stop signal recorded after the landing."""


def _send(stdin: IO[bytes], request: RunnerRequest) -> None:
    with contextlib.suppress(BrokenPipeError):  # the worker died first: its exit says why
        stdin.write(json.dumps(request).encode() + b"\n")
        stdin.flush()


def _stop(process: subprocess.Popen[bytes], signum: int) -> int:
    """Pass the signal on, give the worker its grace, then kill its group; its exit code."""
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signum)
    try:
        return process.wait(timeout=GRACE_SECONDS)
    except (subprocess.TimeoutExpired, Interrupted, KeyboardInterrupt):  # or asked again
        _kill_group(process)
        return process.wait()


def _end(process: subprocess.Popen[bytes]) -> None:
    """Whatever happened, leave nothing running: the worker and anything it started."""
    if process.poll() is None:  # an unexpected error in the parent
        _kill_group(process)
        process.wait()
    else:
        _kill_group(process)  # the SDK's helpers (a wandb service, say) die with the worker
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
