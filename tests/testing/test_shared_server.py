"""The session's one MLflow server (tests/support/shared_server.py): started by the first test
process that asks, used by the others, stopped by the last one out, never left running.

A stand-in for ``python -m mlflow server`` answers ``/health`` as the real one does, so the
sharing is shown in a second, without MLflow."""

from __future__ import annotations

import stat
import sys
import textwrap
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import alive
from tests.support.shared_server import STATE_NAME, shared_server, stop_left_behind

STAND_IN = textwrap.dedent(
    """
    import http.server, sys
    port = int(sys.argv[sys.argv.index("--port") + 1])

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()

        def log_message(self, *args):
            pass

    http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
    """
)


@pytest.fixture
def stand_in_python(tmp_path: Path) -> Path:
    """An executable that, run as ``python -m mlflow server --port N ...``, serves /health."""
    script = tmp_path / "stand_in_server.py"
    script.write_text(STAND_IN)
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return python


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    """The session's shared directory; a stand-in a failed test left running is stopped."""
    shared = tmp_path / "session"
    shared.mkdir()
    yield shared
    stop_left_behind(shared)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def test_the_second_user_shares_the_first_users_server_and_the_last_one_out_stops_it(
    stand_in_python: Path, root: Path
) -> None:
    with shared_server(root, stand_in_python) as first:
        assert first.process is not None
        assert _answers(first.url)
        with shared_server(root, stand_in_python) as second:
            assert (second.url, second.process) == (first.url, None)  # used, not started
        assert _answers(first.url)  # the first user still holds it
        pid = first.process.pid
    assert not alive(pid)
    assert not (root / STATE_NAME).exists()


def test_a_server_its_starter_leaves_behind_is_stopped_by_the_last_user(
    stand_in_python: Path, root: Path
) -> None:
    starter = shared_server(root, stand_in_python)
    first = starter.__enter__()
    assert first.process is not None
    with shared_server(root, stand_in_python) as second:
        starter.__exit__(None, None, None)  # the starting process ends first
        assert _answers(second.url)
    assert not alive(first.process.pid)


def test_a_server_no_user_counted_out_is_stopped_at_the_sessions_end(
    stand_in_python: Path, root: Path
) -> None:
    abandoned = shared_server(root, stand_in_python)
    server = abandoned.__enter__()  # a test process that dies before its end
    assert server.process is not None
    assert alive(server.process.pid)
    stop_left_behind(root)
    server.process.wait(timeout=30)
    assert not alive(server.process.pid)
    assert not (root / STATE_NAME).exists()
