"""A manifest is data (#46): a hostile or malformed manifest given to ``contract scaffold
--manifest`` is refused, every reason named, before anything is written; nothing in it runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalexport.contracts.scaffold_input import literal_text

ROOT = Path(__file__).resolve().parents[2]
EVALRDL = json.loads((ROOT / "contracts" / "evalrdl" / "0.0.241.json").read_text())


def _with(**entries: object) -> dict[str, object]:
    manifest = json.loads(json.dumps(EVALRDL))
    manifest["entries"].update(entries)
    return manifest


def _scaffold(cli, tmp_path: Path, manifest: object, name: str = "hostile"):
    path = tmp_path / f"{name}.json"
    path.write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    out = tmp_path / f"{name}-out"
    return cli("contract", "scaffold", "evalrdl", "--manifest", path, "--out", out), out


PWNED = "open('PWNED','w')"


@pytest.mark.parametrize(
    ("case", "manifest", "said"),
    [
        (
            "code in a parameter name",
            _with(
                **{
                    "evalrdl.run": {
                        "kind": "callable",
                        "parameters": [
                            {"name": f"x={PWNED}", "kind": "POSITIONAL_OR_KEYWORD"},
                        ],
                    }
                }
            ),
            "parameter name \"x=open('PWNED','w')\" is not a Python name",
        ),
        (
            "code in a default",
            _with(
                **{
                    "evalrdl.run": {
                        "kind": "callable",
                        "parameters": [
                            {
                                "name": "x",
                                "kind": "POSITIONAL_OR_KEYWORD",
                                "has_default": True,
                                "default": f"'a' if {PWNED} else 'b'",
                            }
                        ],
                    }
                }
            ),
            None,  # scaffolded, the default given as None with a note: nothing of it runs
        ),
        (
            "a path out of the package",
            _with(**{"evalrdl./ABS/DIR.func": {"kind": "callable", "parameters": []}}),
            "entry 'evalrdl./ABS/DIR.func': '/ABS/DIR' is not a Python name",
        ),
        (
            "a path of another package",
            _with(**{"os.system": {"kind": "callable", "parameters": []}}),
            "entry 'os.system': not in the evalrdl package",
        ),
        (
            "a keyword as a name",
            _with(
                **{
                    "evalrdl.run": {
                        "kind": "callable",
                        "parameters": [{"name": "class", "kind": "POSITIONAL_OR_KEYWORD"}],
                    }
                }
            ),
            "parameter name 'class' is not a Python name",
        ),
        (
            "code in a base",
            _with(
                **{
                    "evalrdl.Boom": {
                        "kind": "exception",
                        "bases": ["evalrdl.X); import os; (Exception"],
                        "parameters": [],
                    }
                }
            ),
            "bases must be a list of class paths",
        ),
        ("entries a list", {**EVALRDL, "entries": []}, "entries must be a mapping of paths"),
        ("entries null", {**EVALRDL, "entries": None}, "entries must be a mapping of paths"),
        ("an entry with no kind", _with(**{"evalrdl.run": {}}), "kind None is not one of"),
        ("an entry that is a list", _with(**{"evalrdl.run": []}), "must be a mapping, not list"),
        ("a version of code", {**EVALRDL, "version": '1"\nimport os'}, "is not a version"),
    ],
)
def test_a_hostile_or_malformed_manifest_scaffolds_nothing_and_runs_nothing(
    cli, tmp_path, monkeypatch, case, manifest, said
) -> None:
    monkeypatch.chdir(tmp_path)
    run, out = _scaffold(cli, tmp_path, manifest)
    assert "Traceback" not in run.output
    if said is None:
        assert run.exit_code == 0, run.output
        source = (out / "src" / "evalrdl" / "__init__.py").read_text()
        assert PWNED not in source
        compile(source, "scaffold", "exec")
        # What the scaffold says to run next runs nothing of the manifest.
        checked = subprocess.run(
            [sys.executable, "-c", "import sys; sys.path.insert(0, 'src'); import evalrdl"],
            cwd=out,
            capture_output=True,
            text=True,
            check=False,
        )
        assert checked.returncode == 0, checked.stderr
    else:
        assert run.exit_code == 2, run.output
        assert said in run.stderr, run.stderr
        assert "nothing was written" in run.stderr
        assert not out.exists()
    assert not (tmp_path / "PWNED").exists()
    assert not Path("/ABS").exists()


def test_json_nested_too_deeply_is_refused_naming_the_file(cli, tmp_path) -> None:
    run, out = _scaffold(cli, tmp_path, "[" * 200_000 + "]" * 200_000, "deep")
    assert run.exit_code == 2
    assert "nests too deeply to read" in run.stderr
    assert "Traceback" not in run.output
    assert not out.exists()


@pytest.mark.parametrize(
    "text",
    [
        "None",
        "-1.5e3",
        "'a'",
        "b'x'",
        "(1, 'a')",
        "frozenset({1})",
        "Literal['a', 'b']",
        "typing.Optional[typing.Literal['x']]",
        "1+2j",
    ],
)
def test_literals_pass(text: str) -> None:
    assert literal_text(text)


@pytest.mark.parametrize(
    "text",
    [
        PWNED,
        "__import__('os')",
        "(lambda: 1)()",
        "'a'.join([])",
        "x",
        "frozenset(x)",
        "[i for i in ()]",
        "f'{1}'",
        "Literal[os.system('x')]",
    ],
)
def test_anything_but_literals_fails(text: str) -> None:
    assert not literal_text(text)
