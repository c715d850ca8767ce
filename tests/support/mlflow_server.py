"""A real MLflow tracking server and a run reader, both run from an MLflow environment.

The test process never imports mlflow: the server and the read-backs run in the environment
the mlflow exporter builds, which so also proves it carries what the server and the SQL store
need. Used by evalexport's tests and benchmarks, and by anyone testing an MLflow export.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.lines import exchange_line

READ_RUNS = """
import json, os, sys, traceback
answers = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)  # whatever MLflow prints goes to the log, never into an answer
from mlflow.tracking import MlflowClient

def read(uri, experiment_name, download):
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name(experiment_name)
    runs = client.search_runs([experiment.experiment_id]) if experiment else []
    out = []
    for run in runs:
        out.append({
            "run_id": run.info.run_id, "status": run.info.status, "run_name": run.info.run_name,
            "start_time": run.info.start_time, "end_time": run.info.end_time,
            "metrics": run.data.metrics, "params": run.data.params, "tags": run.data.tags,
            "artifacts": sorted(a.path for a in client.list_artifacts(run.info.run_id)),
        })
    if download and runs:
        out[0]["downloaded"] = client.download_artifacts(runs[0].info.run_id, *download)
    return out

def run_script(script, argv):
    # A test's script, run as "python -c SCRIPT ARGV..." would run it, in this process (mlflow
    # imported once): what it printed, or its exit code's failure.
    import contextlib, io
    printed = io.StringIO()
    sys.argv = ["-c", *argv]
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(script, "<script>", "exec"), {"__name__": "__main__"})
    except SystemExit as exit:
        if exit.code not in (None, 0):
            raise
    finally:
        import mlflow
        while mlflow.active_run() is not None:
            mlflow.end_run()
    return printed.getvalue()

for line in sys.stdin:
    request = json.loads(line)
    for name in [n for n in os.environ if n.startswith("MLFLOW_")]:
        del os.environ[name]
    os.environ.update(request["mlflow_variables"])  # the caller's, as a child would inherit
    try:
        if "script" in request:
            answer = {"printed": run_script(request["script"], request["argv"])}
        else:
            answer = {"runs": read(request["uri"], request["experiment"], request["download"])}
    except BaseException:
        answer = {"error": traceback.format_exc()}
    answers.write(json.dumps(answer) + "\\n")
    answers.flush()
"""
_READER_TEMP_BASE = tempfile.gettempdir()
"""Where readers keep their scratch: the temporary directory of the process as it started, not
whatever ``TMPDIR`` a test sets (a test checks its own is left empty)."""


class _RunReader:
    """One long-lived ``MlflowClient`` process in an MLflow environment, answering a request a
    line: importing mlflow once a test process instead of once a read (about 3 s of CPU)."""

    def __init__(self, python: Path) -> None:
        self.scratch = Path(
            tempfile.mkdtemp(prefix="evalexport-mlflow-reader-", dir=_READER_TEMP_BASE)
        )
        self.log = self.scratch / "reader.log"
        environment = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
        environment.update(HOME=str(self.scratch), TMPDIR=str(self.scratch))
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [str(python), "-u", "-c", READ_RUNS],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=environment,
                start_new_session=True,
            )

    def read(self, request: Mapping[str, object]) -> dict[str, object]:
        answer = exchange_line(self.process, request)
        if answer is None:
            tail = self.log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the MLflow run reader ended: {tail}")
        return answer

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)


_readers: dict[Path, _RunReader] = {}
_readers_lock = threading.Lock()


@atexit.register
def _close_readers() -> None:
    with _readers_lock:
        for reader in _readers.values():
            reader.close()
        _readers.clear()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class MLflowServer:
    """``mlflow server`` on 127.0.0.1 with a SQLite backend and artifacts in a temp directory."""

    python: Path
    root: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> MLflowServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: the tracking URI of the server."""
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120) -> None:
        """Start ``mlflow server`` and wait until it answers."""
        self.root.mkdir(parents=True, exist_ok=True)
        scratch = self.root / "tmp"
        scratch.mkdir(exist_ok=True)
        log = (self.root / "server.log").open("ab")
        self.process = subprocess.Popen(
            [
                str(self.python),
                "-m",
                "mlflow",
                "server",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--backend-store-uri",
                f"sqlite:///{self.root / 'mlflow.db'}",
                "--artifacts-destination",
                str(self.root / "artifacts"),
                "--workers",
                "1",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={
                **os.environ,
                "TMPDIR": str(scratch),  # its scratch stays under its root
                # MLflow 3.17 also starts a job runner and seven huey consumers (GenAI jobs no
                # export uses; older servers ignore the variable): they would take a core from
                # the tests for nothing.
                "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
            },
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"mlflow server exited: {(self.root / 'server.log').read_text()[-2000:]}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"mlflow server did not answer within {timeout} s")

    def stop(self) -> None:
        """Stop the server and everything it started (MLflow 3 runs job consumers beside it)."""
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._kill_group()

    def kill(self) -> None:
        """Kill the server outright (SIGKILL), as a crash would."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._kill_group()

    def _kill_group(self) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)


def _ask_reader(python: Path, request: dict[str, object]) -> dict[str, object]:
    request["mlflow_variables"] = {k: v for k, v in os.environ.items() if k.startswith("MLFLOW_")}
    with _readers_lock:
        reader = _readers.get(python)
        if reader is None or reader.process.poll() is not None:
            reader = _readers[python] = _RunReader(python)
        return reader.read(request)


def run_mlflow_script(python: Path, script: str, *arguments: object) -> str:
    """What ``python -c script *arguments`` prints, run in the long-lived reader process of
    the MLflow environment ``python`` (mlflow imported once a test process, not once a
    script; the caller's ``MLFLOW_*`` variables as they are now). The script runs as
    ``__main__`` in a fresh namespace; a run it left active is ended. Not for a script that
    must run beside another (the reader answers one request at a time)."""
    answer = _ask_reader(python, {"script": script, "argv": [str(a) for a in arguments]})
    if "error" in answer:
        raise AssertionError(f"the MLflow script failed: {str(answer['error'])[-3000:]}")
    return str(answer["printed"])


def read_runs(
    python: Path, tracking_uri: str, experiment: str, download: tuple[str, Path] | None = None
) -> list[dict[str, object]]:
    """Every run of ``experiment``, read back through ``MlflowClient`` in the mlflow environment
    ``python`` (one reader process a test process and environment, kept for the next read; it
    sees the caller's ``MLFLOW_*`` variables as they are now). ``download=(artifact, directory)``
    also downloads that artifact of the first run and names its path as ``downloaded``."""
    request: dict[str, object] = {
        "uri": tracking_uri,
        "experiment": experiment,
        "download": [download[0], str(download[1])] if download else None,
    }
    answer = _ask_reader(python, request)
    if "error" in answer:
        raise RuntimeError(f"reading MLflow runs failed: {str(answer['error'])[-3000:]}")
    runs: list[dict[str, object]] = answer["runs"]  # type: ignore[assignment]
    return runs
