"""Fixtures shared by the test suite: the CLI, in process and as a real subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalexport.cli import main

pytest_plugins = ["pytester"]

PLUGIN_SITE = Path(__file__).parent / "support" / "plugin_site"


@dataclass(frozen=True)
class CliRun:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


@pytest.fixture
def plugin_site(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Install the test plugin exporters (``recording``, ``broken``, ...) by entry point."""
    monkeypatch.syspath_prepend(str(PLUGIN_SITE))
    monkeypatch.setenv(
        "PYTHONPATH",
        os.pathsep.join(filter(None, [str(PLUGIN_SITE), os.environ.get("PYTHONPATH")])),
    )
    return PLUGIN_SITE


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliRun]:
    """Run ``evalexport ARGS`` in this process."""

    def run(*args: str) -> CliRun:
        capsys.readouterr()
        code = main([str(arg) for arg in args])
        captured = capsys.readouterr()
        return CliRun(code, captured.out, captured.err)

    return run


@pytest.fixture
def cli_process() -> Callable[..., CliRun]:
    """Run ``python -m evalexport ARGS`` as a real subprocess."""

    def run(*args: str, timeout: float = 120) -> CliRun:
        completed = subprocess.run(
            [sys.executable, "-m", "evalexport", *map(str, args)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return CliRun(completed.returncode, completed.stdout, completed.stderr)

    return run
