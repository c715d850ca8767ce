"""A real MLflow tracking server and a run reader, both run from an MLflow environment.

The test process never imports mlflow: the server and the read-backs run in the environment
the mlflow exporter builds, which so also proves it carries what the server and the SQL store
need. Used by evalexport's tests and benchmarks, and by anyone testing an MLflow export.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

READ_RUNS = """
import json, sys
from mlflow.tracking import MlflowClient
client = MlflowClient(sys.argv[1])
experiment = client.get_experiment_by_name(sys.argv[2])
runs = client.search_runs([experiment.experiment_id]) if experiment else []
out = []
for run in runs:
    out.append({
        "run_id": run.info.run_id, "status": run.info.status, "run_name": run.info.run_name,
        "start_time": run.info.start_time, "end_time": run.info.end_time,
        "metrics": run.data.metrics, "params": run.data.params, "tags": run.data.tags,
        "artifacts": sorted(a.path for a in client.list_artifacts(run.info.run_id)),
    })
if len(sys.argv) > 3 and runs:
    path = client.download_artifacts(runs[0].info.run_id, sys.argv[3], sys.argv[4])
    out[0]["downloaded"] = path
print(json.dumps(out))
"""


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
                # MLflow 3.5+ also starts a job runner and seven huey consumers (GenAI jobs no
                # export uses): they would take a core from the tests for nothing.
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


def read_runs(
    python: Path, tracking_uri: str, experiment: str, download: tuple[str, Path] | None = None
) -> list[dict[str, object]]:
    """Every run of ``experiment``, read back through ``MlflowClient`` in the mlflow environment."""
    extra = [download[0], str(download[1])] if download else []
    completed = subprocess.run(
        [str(python), "-c", READ_RUNS, tracking_uri, experiment, *extra],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"reading MLflow runs failed: {completed.stderr[-3000:]}")
    runs: list[dict[str, object]] = json.loads(completed.stdout.strip().splitlines()[-1])
    return runs
