"""docs/plugins.md, "SDK contracts" and "What the worker reads", run as written: a third
party's exporter built from the guide alone, from the real SDK's manifest and a scaffolded fake
to drift caught in it; then one for an SDK of clearml's shape (a classmethod entry point, an
Enum default, a property, a release whose pins do not resolve).

Each section is read in order: a code block whose first line is ``# PATH`` is written to PATH
in a new project; each ``$ `` line of a console block runs there; the output shown under a
``contract check`` is its output, line for line, and under any other command each line shown
is a line of its output. A ``<!-- edit: "OLD" -> "NEW" -->`` comment applies to the fake for
the console block that follows it alone; ``<!-- exits: N -->`` says its commands exit N. The
real SDK's releases are served from a local wheelhouse through the installers' own settings,
as an index would serve them. ``pip install -e .`` is stood in for by the project's source
tree on the path and a ``.dist-info`` holding its entry point, as an editable install leaves
them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evalexport.testing.wheels import build_wheel
from tests.support.tasklog_sdk import tasklog_wheelhouse

pytestmark = pytest.mark.long

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

_BLOCK = re.compile(r"(?:<!-- (edit|exits): (.*?) -->\n.*?)?```(\w+)\n(.*?)```", re.S)
_EDIT = re.compile(r'"((?:[^"\\]|\\.)*)" -> "((?:[^"\\]|\\.)*)"')


def _section(title: str) -> str:
    text = GUIDE.read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def _unescape(text: str) -> str:
    return text.encode().decode("unicode_escape")


def _project(tmp_path: Path, sdk: str, exporter: str) -> tuple[Path, dict[str, str], Path]:
    """The project's directory, the environment its commands run in, and its wheelhouse."""
    project = tmp_path / f"{sdk}-exporter"
    project.mkdir()
    site = tmp_path / "site"
    dist_info = site / f"{sdk}_exporter-0.1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {sdk}-exporter\nVersion: 0.1.0\n"
    )
    (dist_info / "entry_points.txt").write_text(
        f"[evalexport.exporters]\n{sdk} = {sdk}_exporter:{exporter}\n"
    )
    wheelhouse = tmp_path / "index"
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
    return project, environment, wheelhouse


def _run(command: str, project: Path, environment: dict[str, str]) -> subprocess.CompletedProcess:
    words = command.split()
    if words[0] == "evalexport":
        words = [sys.executable, "-m", "evalexport", *words[1:]]
    elif words[:3] == ["python", "-m", "pytest"]:
        # its temporary directories in the project's (pytest's default keeps them in $TMPDIR)
        basetemp = ["--basetemp", str(project / ".basetemp")]
        words = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *basetemp, *words[3:]]
    elif words[0] == "python":
        words = [sys.executable, *words[1:]]
    elif "/" in words[0]:
        words = [str(project / words[0]), *words[1:]]
    return subprocess.run(
        words,
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def _run_section(title: str, project: Path, environment: dict[str, str]) -> list[str]:
    """Write the section's files and run its commands, checking what it shows; the commands
    run, in order."""
    fake: Path | None = None
    ran: list[str] = []
    for marker, argument, language, body in _BLOCK.findall(_section(title)):
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
        edit = argument if marker == "edit" else ""
        exits = int(argument) if marker == "exits" else None
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
                assert completed.returncode == (exits or 0), (command, output[-8000:])
                shown_lines = output.splitlines()
                for shown in expected:
                    assert any(line.endswith(shown) for line in shown_lines), (shown, output)
            if command.startswith("python -m pytest"):
                # The guide's own test, and every guarantee of the suite its class inherits,
                # run through the fake; none fails, none is skipped for want of the index.
                from evalexport.testing import guarantees

                suite = [n for n in dir(guarantees.ExporterGuarantees) if n.startswith("test_")]
                passed = re.search(r"\b(\d+) passed\b", completed.stdout)
                assert passed, output[-4000:]
                assert int(passed[1]) >= len(suite), output[-4000:]
                assert " failed" not in completed.stdout, output[-4000:]
                assert " skipped" not in completed.stdout, output[-4000:]
        if original is not None:
            fake.write_text(original)
    return ran


def test_the_sdk_contract_guide_runs_as_written_and_catches_each_drift(tmp_path: Path) -> None:
    project, environment, wheelhouse = _project(tmp_path, "tinytrack", "TinyTrackExporter")
    build_wheel(wheelhouse, "tinytrack", "1.0", {"tinytrack/__init__.py": REAL_TINYTRACK})
    ran = _run_section("SDK contracts", project, environment)
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


def test_the_classmethod_sdk_guide_runs_as_written(tmp_path: Path) -> None:
    """clearml's shape, end to end: scaffolded from the real package, the fake passes
    ``contract check`` as written; the worker's calls (a classmethod among them) bind; an
    older release lacking only unused methods verifies; a release whose pins do not resolve
    is verified and committed from a copy installed by hand."""
    project, environment, wheelhouse = _project(tmp_path, "tasklog", "TaskLogExporter")
    tasklog_wheelhouse(wheelhouse)
    ran = _run_section("What the worker reads", project, environment)
    assert ran.count("evalexport contract check tasklog") == 4  # 2 clean, 2 drifts
    assert "python -m pytest -q tests" in ran
    scaffolded = (project / "src/tasklog_exporter/contracts/tasklog/2.1.json").read_text()
    assert '"binding": "classmethod"' in scaffolded
    assert (project / "src/tasklog_exporter/contracts/tasklog/2.2.json").is_file()
