"""docs/plugins.md, "SDK contracts", run as written: a third party's exporter built from the
guide alone, from the real SDK's manifest and a scaffolded fake to drift caught in it.

The section is read in order: a code block whose first line is ``# PATH`` is written to PATH in
a new project; each ``$ `` line of a console block runs there, and the output shown under a
``contract check`` is its output, line for line. A ``<!-- edit: "OLD" -> "NEW" -->`` comment
applies to the fake for the console block that follows it alone. The real tinytrack 1.0 is
served from a local wheelhouse through the installers' own settings, as an index would serve
it. ``pip install -e .`` is stood in for by the project's source tree on the path and a
``.dist-info`` holding its entry point, as an editable install leaves them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evalexport.testing.wheels import build_wheel

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "plugins.md"

REAL_TINYTRACK = '''
"""tinytrack 1.0, the real SDK as its users have it (it would talk to a server)."""

__version__ = "1.0"


class TinyTrackError(Exception):
    """Every error of the SDK."""


class QuotaExceeded(TinyTrackError):
    def __init__(self, project: str, retry_after: float) -> None:
        super().__init__(project, retry_after)
        self.project = project
        self.retry_after = retry_after


class Run:
    def __init__(self, run_id: str) -> None:
        self.run_id = run_id


class Client:
    def __init__(self, project: str, *, token: str | None = None) -> None:
        self.project = project

    def start(self, name: str) -> Run:
        return Run(f"{self.project}-{name}")

    def log(self, run: Run, metrics: dict[str, float], *, step: int = 0) -> None:
        pass
'''

_BLOCK = re.compile(r"(?:<!-- edit: (.*?) -->\n.*?)?```(\w+)\n(.*?)```", re.S)
_EDIT = re.compile(r'"((?:[^"\\]|\\.)*)" -> "((?:[^"\\]|\\.)*)"')


def _section() -> str:
    text = GUIDE.read_text()
    start = text.index("## SDK contracts")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def _unescape(text: str) -> str:
    return text.encode().decode("unicode_escape")


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The project's directory, and the environment its commands run in."""
    project = tmp_path / "tinytrack-exporter"
    project.mkdir()
    site = tmp_path / "site"
    dist_info = site / "tinytrack_exporter-0.1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: tinytrack-exporter\nVersion: 0.1.0\n"
    )
    (dist_info / "entry_points.txt").write_text(
        "[evalexport.exporters]\ntinytrack = tinytrack_exporter:TinyTrackExporter\n"
    )
    wheelhouse = tmp_path / "index"
    build_wheel(wheelhouse, "tinytrack", "1.0", {"tinytrack/__init__.py": REAL_TINYTRACK})
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(project / "src"), str(site)]),
        "EVALEXPORT_CACHE_DIR": str(tmp_path / "cache"),
        "UV_NO_INDEX": "1",
        "UV_FIND_LINKS": str(wheelhouse),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheelhouse),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return project, environment


def _run(command: str, project: Path, environment: dict[str, str]) -> subprocess.CompletedProcess:
    words = command.split()
    if words[0] == "evalexport":
        words = [sys.executable, "-m", "evalexport", *words[1:]]
    elif words[:3] == ["python", "-m", "pytest"]:
        words = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *words[3:]]
    return subprocess.run(
        words,
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_the_sdk_contract_guide_runs_as_written_and_catches_each_drift(project) -> None:
    project, environment = project
    fake: Path | None = None
    ran: list[str] = []
    for edit, language, body in _BLOCK.findall(_section()):
        first = body.splitlines()[0] if body else ""
        if language in ("python", "toml") and first.startswith("# ") and "/" in first + "/":
            path = project / first[2:].strip()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)
            if "/fake/" in str(path):
                fake = path
            continue
        if language != "console":
            continue
        original = None
        if edit:
            assert fake is not None, "an edit before the fake is written"
            old, new = (_unescape(part) for part in _EDIT.fullmatch(edit.strip()).groups())
            original = fake.read_text()
            assert original.count(old) == 1, f"the edit's text is not once in the fake: {old!r}"
            fake.write_text(original.replace(old, new))
        lines = body.rstrip("\n").splitlines()
        for index, line in enumerate(lines):
            if not line.startswith("$ "):
                continue
            command = line[2:]
            expected = []
            for shown in lines[index + 1 :]:
                if shown.startswith("$ "):
                    break
                expected.append(shown)
            if command == "pip install -e .":
                continue  # stood in for by the fixture
            completed = _run(command, project, environment)
            ran.append(command)
            output = completed.stdout + completed.stderr
            if " contract check " in f" {command} ":
                assert completed.stdout.splitlines() == expected, (command, edit, output)
                assert completed.returncode == (1 if edit else 0), output
            else:
                assert completed.returncode == 0, (command, output[-4000:])
            if command.startswith("python -m pytest"):
                assert re.search(r"\b1 passed\b", completed.stdout), output[-4000:]
        if original is not None:
            fake.write_text(original)
    assert ran[:3] == [
        "evalexport contract manifest tinytrack --requirement tinytrack==1.0 --write",
        "evalexport contract scaffold tinytrack --manifest "
        "src/tinytrack_exporter/contracts/tinytrack/1.0.json --out src/tinytrack_exporter/fake",
        "evalexport contract check tinytrack",
    ]
    assert "python -m pytest -q tests" in ran
    assert ran.count("evalexport contract check tinytrack") == 6  # 2 clean, 4 drifts
    committed = project / "src" / "tinytrack_exporter" / "contracts" / "tinytrack" / "1.0.json"
    assert committed.is_file()
