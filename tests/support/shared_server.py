"""One ``mlflow server`` for a whole test session, whichever of pytest-xdist's test processes
asks first: it starts the server, under a lock, and writes where it listens; the others use
it. Each process counts itself in while it uses the server and out at its end; the last one
out stops it (a process that asks later starts another). A server costs about 11 s of CPU to
start (MLflow's CLI, then its app in a worker), once a session instead of once a process.

Tests stay apart on it as they did on a server of their process: each uses an experiment of its
own. A test that stops or kills a server starts one of its own (``own_mlflow_server``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support.mlflow_server import MLflowServer
from tests.support.processes import alive

STATE_NAME = "mlflow-server.json"
"""Where the session's server listens, its process and how many test processes use it."""


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    with (root / "mlflow-server.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _state(root: Path) -> dict[str, object] | None:
    try:
        state = json.loads((root / STATE_NAME).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _write_state(root: Path, state: dict[str, object]) -> None:
    scratch = root / f"{STATE_NAME}.{os.getpid()}"
    scratch.write_text(json.dumps(state))
    scratch.replace(root / STATE_NAME)


def stop_group(pid: int, grace: float = 20) -> None:
    """End the server whose process (and process group: it started a session) is ``pid``:
    SIGTERM, then SIGKILL after ``grace`` seconds."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


@contextlib.contextmanager
def shared_server(root: Path, python: Path) -> Iterator[MLflowServer]:
    """The session's server under ``root`` (the directory every test process of the session
    shares), started if none runs; counted out, and stopped by the last user, at the end."""
    with _locked(root):
        state = _state(root)
        pid = state.get("pid") if state else None
        if state is not None and isinstance(pid, int) and alive(pid):
            server = MLflowServer(python, Path(str(state["root"])), port=int(str(state["port"])))
            state["users"] = int(str(state["users"])) + 1
        else:
            server = MLflowServer(python, root / "mlflow-server")
            server.start()
            assert server.process is not None
            state = {"pid": server.process.pid, "port": server.port, "root": str(server.root)}
            state["users"] = 1
        _write_state(root, state)
    try:
        yield server
    finally:
        with _locked(root):
            state = _state(root) or {}
            users = int(str(state.get("users", 1))) - 1
            if users > 0:
                _write_state(root, {**state, "users": users})
            else:
                (root / STATE_NAME).unlink(missing_ok=True)
                if server.process is not None:
                    server.stop()
                elif isinstance(pid := state.get("pid"), int):
                    stop_group(pid)


def stop_left_behind(root: Path) -> None:
    """Stop a session's server that a test process left running (it ended before counting
    itself out): for the process that ends the session, after every test process."""
    state = _state(root)
    if state is not None and isinstance(pid := state.get("pid"), int) and alive(pid):
        stop_group(pid)
    (root / STATE_NAME).unlink(missing_ok=True)
