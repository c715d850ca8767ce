"""What a worker and the reaper are given of the caller's environment (issue #65, part 3):
the names a process needs, the locale variables that exist and evalexport's own variables,
and nothing else (``isolation/variables.py``)."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import evalexport
from evalexport.isolation.environments import Environment
from evalexport.isolation.launcher import run_worker
from evalexport.isolation.reaper import TAG_VARIABLE
from evalexport.isolation.variables import BASE, EVALEXPORT_VARIABLES, LOCALE

SOURCE = Path(evalexport.__file__).resolve().parent
DOCS = Path(__file__).resolve().parents[2] / "docs"

UNRELATED = {
    "GITHUB_TOKEN": "ghp_unrelated0000000000000000000000000000",
    "OPENAI_API_KEY": "sk-unrelated-000000000000000000",
    "LD_PRELOAD": "",  # empty: nothing is preloaded here, but the name must not pass
    "LC_SECRET": "not-a-locale",
    "EVALEXPORT_MY_TOKEN": "not-a-setting-of-evalexports",
}
"""The caller's variables no worker and no reaper is given."""
GIVEN = {
    "LC_ALL": "C.UTF-8",
    "LC_TIME": "C",
    "LANG": "C.UTF-8",
    "EVALEXPORT_PROGRESS_INTERVAL": "5",
}
"""Locale and evalexport variables that exist: every worker is given them."""

NOT_READ = {
    "EVALEXPORT_SCRUBBED_": "what a plugin's secrets_the_sdk_may_find names, given to its "
    "worker as secrets by evalexport itself (spec/isolated.py), never taken from the caller",
    "EVALEXPORT_GUARANTEE_PROBE_X": "planted by the guarantee suite as a name no worker is given",
}
"""``EVALEXPORT_*`` names the code holds that are no variable it reads from the caller."""


def _names_in_source() -> set[str]:
    """Every ``EVALEXPORT_*`` name a string of evalexport's code holds (messages and
    f-strings included, docstrings not: they describe); a name ending in ``_`` is a family an
    f-string completes."""
    found: set[str] = set()
    pattern = re.compile(r"\bEVALEXPORT_[A-Z0-9_]*")
    for path in sorted(SOURCE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        described = {  # docstrings, and the names __all__ exports
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.Expr)
            or (isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__")
            for inner in ast.walk(node.value)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in described
            ):
                found.update(pattern.findall(node.value))
    return found


def test_the_list_of_evalexports_variables_is_every_name_its_code_reads() -> None:
    """A variable evalexport (or a worker body) starts to read is added to
    ``EVALEXPORT_VARIABLES``, or no worker is given it: this test names it."""
    in_source = _names_in_source() - set(NOT_READ)
    listed = set(EVALEXPORT_VARIABLES)
    assert in_source - listed == set(), (
        "evalexport's code names these variables, which isolation/variables.py's "
        "EVALEXPORT_VARIABLES (and docs/environments.md) does not list: add them there"
    )
    assert listed - in_source == set(), "listed in EVALEXPORT_VARIABLES, read nowhere: remove"
    assert set(NOT_READ) <= _names_in_source(), "NOT_READ names what the code no longer holds"


def test_the_docs_list_the_same_variables_as_the_code() -> None:
    text = (DOCS / "environments.md").read_text(encoding="utf-8")
    section = text.split("## evalexport's own variables", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `(EVALEXPORT_[A-Z0-9_]+)` \|", section, re.MULTILINE))
    assert documented == set(EVALEXPORT_VARIABLES)
    assert [name for name in LOCALE if f"`{name}`" not in text] == []


@pytest.mark.parametrize("name", sorted(UNRELATED))
def test_a_name_of_a_family_is_not_enough(name: str) -> None:
    assert not BASE.admits(name)


@pytest.mark.parametrize("name", sorted([*LOCALE, *EVALEXPORT_VARIABLES, "PATH", "HOME"]))
def test_the_locale_and_evalexports_own_variables_are_given(name: str) -> None:
    assert BASE.admits(name)


def _worker_body(tmp_path: Path) -> tuple[Environment, Path]:
    """This interpreter as an SDK environment, and a body that reports its variables."""
    environment = tmp_path / "env"
    (environment / "bin").mkdir(parents=True)
    (environment / "bin" / "python").symlink_to(sys.executable)
    body = tmp_path / "environ_body.py"
    body.write_text(
        textwrap.dedent(
            """
            import os

            def run(payload):
                return {
                    "status": "succeeded",
                    "exit_code": 0,
                    "message": "reported",
                    "details": {"names": sorted(os.environ)},
                }
            """
        )
    )
    return Environment(environment, {"exporter": "environ"}), body


def test_a_worker_is_given_the_locale_and_evalexport_variables_and_no_other_of_their_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {**UNRELATED, **GIVEN}.items():
        monkeypatch.setenv(name, value)
    environment, body = _worker_body(tmp_path)
    outcome = run_worker(environment, body, {}, time_limit=60)
    assert outcome.result is not None, outcome.log
    names = set(outcome.result["details"]["names"])
    assert names & set(UNRELATED) == set()
    assert set(GIVEN) <= names


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
def test_the_reaper_is_given_what_a_worker_whose_exporter_declares_nothing_is_given(
    tmp_path: Path,
) -> None:
    """The reaper, started with an export's first launch, outlives evalexport: it gets the
    environment a worker would, never the caller's tokens or ``LD_PRELOAD``."""
    caller = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        **UNRELATED,
        **GIVEN,
        TAG_VARIABLE: "someone-else/launch",  # evalexport itself started by a tagged launch
    }
    script = textwrap.dedent(
        """
        import json, sys
        from pathlib import Path
        from evalexport.isolation import descendants

        descendants._reaper_input()
        pid = descendants._reaper.pid
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\\0")
        names = sorted(item.split(b"=", 1)[0].decode() for item in environ if item)
        print(json.dumps(names))
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], env=caller, capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 0, completed.stderr
    names = set(json.loads(completed.stdout))
    expected = set(BASE.given(caller)) - {TAG_VARIABLE}
    assert names == expected
    assert names & {*UNRELATED, TAG_VARIABLE} == set()
