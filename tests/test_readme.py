"""The README's first export and its Python example, run as written in a working directory
of their own that holds the checkout's ``examples/``: the block copies the sample run to
``run/`` itself."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _blocks(language: str) -> list[str]:
    readme = (ROOT / "README.md").read_text()
    return re.findall(
        rf"<!-- tested: tests/test_readme.py -->\n```{language}\n(.*?)```", readme, re.S
    )


def _commands() -> list[str]:
    (block,) = _blocks("bash")
    return [line for line in block.splitlines() if line.strip()]


def _run(command: str, workdir: Path) -> subprocess.CompletedProcess[str]:
    words = command.split("#", 1)[0].split()
    assert words[0] in ("evalexport", "cp"), command
    return subprocess.run(
        [sys.executable, "-m", "evalexport", *words[1:]] if words[0] == "evalexport" else words,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


@pytest.fixture
def workdir(evalexport_isolation: Path) -> Path:
    here = Path.cwd()
    shutil.copytree(ROOT / "examples", here / "examples")
    return here


def test_the_first_exports_checks_run_as_written(workdir: Path) -> None:
    """Everything of the first export that needs no SDK environment."""
    copy, inspect, atif, dry_run, *_ = _commands()
    assert _run(copy, workdir).returncode == 0
    assert "--dry-run" in dry_run
    shown = _run(inspect, workdir)
    assert shown.returncode == 0, shown.stderr
    assert "strict ATIF export: accepts all 32 rollouts" in shown.stdout
    written = _run(atif, workdir)
    assert written.returncode == 0, written.stderr
    assert (workdir / "atif" / "manifest.jsonl").is_file()
    planned = _run(dry_run, workdir)
    assert planned.returncode == 0, planned.stderr
    assert planned.stdout.startswith("succeeded: dry run: ")


@pytest.mark.downloads
@pytest.mark.long
def test_the_first_export_runs_as_written_and_the_second_mlflow_export_skips(
    workdir: Path,
) -> None:
    results = [_run(command, workdir) for command in _commands()]
    assert [r.returncode for r in results] == [0] * len(results), [r.stderr for r in results]
    assert results[-2].stdout.startswith("succeeded: exported to MLflow run ")
    assert results[-1].stdout.startswith("skipped (already exported): ")
    assert (workdir / "mlruns.db").is_file()


def test_the_python_example_runs_as_written(workdir: Path) -> None:
    shutil.copytree(workdir / "examples" / "aime24", workdir / "run")
    (block,) = _blocks("python")
    completed = subprocess.run(
        [sys.executable, "-c", block], cwd=workdir, capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert (workdir / "py-atif" / "manifest.jsonl").is_file()
