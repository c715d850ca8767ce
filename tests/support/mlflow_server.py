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
import json, os, sys, tempfile, traceback
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

def run_script(script, argv, printed):
    # As "python -c SCRIPT ARGV..." runs it, what it prints going to the file "printed".
    os.dup2(printed.fileno(), 1)
    sys.stdout = open(1, "w", closefd=False)
    sys.argv = ["-c", *argv]
    try:
        exec(compile(script, "<script>", "exec"), {"__name__": "__main__"})
    except SystemExit as exit:
        if exit.code not in (None, 0):
            raise
    finally:
        sys.stdout.flush()

def answer(request):
    # Each request is answered by a child forked from this process, which imported mlflow once:
    # whatever a request sets (a store opened, MLflow's active experiment or tracking URI) ends
    # with its child, and the next starts as this process is.
    with tempfile.TemporaryFile() as printed, tempfile.TemporaryFile() as answered:
        pid = os.fork()
        if pid == 0:
            try:
                os.chdir(request["cwd"])  # the caller's, as a child would inherit
                if "script" in request:
                    run_script(request["script"], request["argv"], printed)
                    printed.seek(0)
                    out = {"printed": printed.read().decode()}
                else:
                    out = {"runs": read(request["uri"], request["experiment"], request["download"])}
            except BaseException:
                out = {"error": traceback.format_exc()}
            import atexit
            atexit._run_exitfuncs()  # MLflow's own: what it queued is sent before the answer
            answered.write(json.dumps(out).encode())
            answered.flush()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        answered.seek(0)
        text = answered.read().decode()
        if not text:
            return {"error": f"the reader's child ended with status {status} and no answer"}
        return json.loads(text)

for line in sys.stdin:
    request = json.loads(line)
    for name in [n for n in os.environ if n.startswith("MLFLOW_")]:
        del os.environ[name]
    os.environ.update(request["mlflow_variables"])  # the caller's, as a child would inherit
    answers.write(json.dumps(answer(request)) + "\\n")
    answers.flush()
"""
_READER_TEMP_BASE = tempfile.gettempdir()
"""Where readers keep their scratch: the temporary directory of the process as it started, not
whatever ``TMPDIR`` a test sets (a test checks its own is left empty)."""


class _RunReader:
    """One long-lived process in an MLflow environment, answering a request a line (a read of an
    experiment's runs, or a test's script) from a child forked for it: mlflow is imported once
    a test process instead of once a request (about 2 s of CPU)."""

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
                cwd=self.scratch,  # not a test's working directory, which goes with the test
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
            cwd=self.root,  # not a test's working directory, which goes with the test
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
    request["cwd"] = os.getcwd()
    with _readers_lock:
        reader = _readers.get(python)
        if reader is None or reader.process.poll() is not None:
            reader = _readers[python] = _RunReader(python)
        return reader.read(request)


def run_mlflow_script(python: Path, script: str, *arguments: object) -> str:
    """What ``python -c script *arguments`` prints, run in the long-lived reader process of
    the MLflow environment ``python``: in a process forked from the reader, which imported
    mlflow once a test process (an import is seconds), so that nothing the script sets outlives
    it; the caller's ``MLFLOW_*`` variables as they are now. One script at a time: a script
    that must run beside another runs in a process of its own."""
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
