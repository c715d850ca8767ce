"""The README's install step works in a fresh virtual environment (needs the package index)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "examples" / "aime24" / "aime24_rollouts.jsonl"


@pytest.mark.downloads
@pytest.mark.long
def test_help_list_and_inspect_work_after_a_plain_pip_install(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(
        REPO / "src", source / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__")
    )
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=False)  # pip's own copy costs 4 s to install
    python = environment / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python)]  # this pip, into that venv
    subprocess.run(
        [*pip, "install", "--quiet", "--disable-pip-version-check", str(source)],
        check=True,
        timeout=600,
    )
    evalexport = environment / "bin" / "evalexport"

    def run(*args: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [evalexport, *map(str, args)], capture_output=True, text=True, check=False
        )

    assert run("--help").returncode == 0
    assert run("list").returncode == 0
    inspected = run("inspect", SAMPLE)
    assert inspected.returncode == 0, inspected.stderr
    assert "rollouts: 32 (32 with ng_trajectory)" in inspected.stdout
    assert "strict ATIF export: accepts all 32 rollouts" in inspected.stdout
    assert "saved config: masked" in inspected.stdout
    installed = subprocess.run(
        [
            python,
            "-c",
            "import evalexport, pathlib; root = pathlib.Path(evalexport.__file__).parent; "
            "print((root / 'py.typed').is_file() "
            "and (root / 'testing' / 'guarantees.py').is_file() "
            "and not (root / 'testing' / 'gym').exists())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert installed.stdout.strip() == "True"
    assert sys.executable != str(python)
