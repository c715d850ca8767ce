"""A manifest is data (#46): a hostile or malformed manifest given to ``contract scaffold
--manifest`` is refused, every reason named, before anything is written; nothing in it runs."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalexport.contracts.scaffold_input import (
    NotALiteral,
    builtin_type_name,
    literal_source,
    literal_text,
)

ROOT = Path(__file__).resolve().parents[2]
EVALRDL = json.loads((ROOT / "contracts" / "evalrdl" / "0.0.241.json").read_text())


def _with(**entries: object) -> dict[str, object]:
    manifest = json.loads(json.dumps(EVALRDL))
    manifest["entries"].update(entries)
    return manifest


def _defaulting(default: str) -> dict[str, object]:
    """The manifest with ``upload_plan``, a function the worker's surface names (so the
    scaffold writes it), given a parameter that defaults to ``default``."""
    plan = json.loads(json.dumps(EVALRDL["entries"]["evalrdl.sdk.api.upload_plan"]))
    plan["parameters"].append(
        {"name": "x", "kind": "KEYWORD_ONLY", "has_default": True, "default": default}
    )
    return _with(**{"evalrdl.sdk.api.upload_plan": plan})


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
            _defaulting(f"'a' if {PWNED} else 'b'"),
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
        (
            "code in a builtin default (#56)",
            _defaulting(f"<builtins.{PWNED} or dict>"),
            None,  # scaffolded with an object standing for the default: nothing of it runs
        ),
        (
            "code in a class constant",
            _with(
                **{
                    "evalrdl.Upload": {  # a read the worker declares: scaffolded
                        **EVALRDL["entries"]["evalrdl.Upload"],
                        "attributes": {
                            **EVALRDL["entries"]["evalrdl.Upload"]["attributes"],
                            "state": {"kind": "constant", "value": f"({PWNED},)"},
                        },
                    }
                }
            ),
            None,
        ),
        (
            "code as an Enum's member name",
            _with(
                **{
                    "evalrdl.Kind": {
                        "kind": "class",
                        "bases": ["enum.Enum"],
                        "members": {f"A = 1; {PWNED}; B": "a"},
                    }
                }
            ),
            "entry 'evalrdl.Kind': members must map Python names to plain values",
        ),
        (
            "an object as a nested Enum's member value",
            _with(
                **{
                    "evalrdl.Upload": {
                        **EVALRDL["entries"]["evalrdl.Upload"],
                        "attributes": {
                            "state": {"kind": "class", "members": {"A": {"x": PWNED}}},
                        },
                    }
                }
            ),
            "attribute 'state''s members must map Python names to plain values",
        ),
        (
            "code in a nested class's base",
            _with(
                **{
                    "evalrdl.Upload": {
                        **EVALRDL["entries"]["evalrdl.Upload"],
                        "attributes": {
                            "state": {"kind": "class", "bases": [f"enum.Enum); {PWNED}; ("]}
                        },
                    }
                }
            ),
            "attribute 'state''s bases must be a list of class paths",
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
        sources = [path.read_text() for path in (out / "src" / "evalrdl").rglob("*.py")]
        for source in sources:  # the manifest's text is in them as a string, if at all
            called = {
                node.func.id
                for node in ast.walk(ast.parse(source))
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            }
            assert not called & {"open", "__import__", "eval", "exec"}, called
        written = "".join(sources)
        assert "def upload_plan" in written  # the hostile entries were written, and ran nothing
        if case == "code in a class constant":
            assert "    state = None\n" in written
        # What the scaffold says to run next runs nothing of the manifest.
        checked = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; sys.path.insert(0, 'src'); import evalrdl, evalrdl.sdk.api",
            ],
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
    assert not list(tmp_path.rglob("PWNED"))  # in the scaffold's directory, where it ran, too
    assert not Path("/ABS").exists()


def test_json_nested_too_deeply_is_refused_naming_the_file(cli, tmp_path) -> None:
    run, out = _scaffold(cli, tmp_path, "[" * 200_000 + "]" * 200_000, "deep")
    assert run.exit_code == 2
    assert "deep.json: it nests more than 128 levels deep" in run.stderr  # the ingress gate's words
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


LITERAL_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.complex_numbers(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.binary(max_size=10),
    lambda children: (
        st.lists(children, max_size=3)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=5) | st.integers(), children, max_size=3)
        | st.frozensets(st.integers() | st.text(max_size=5), max_size=3).map(frozenset)
    ),
    max_leaves=10,
)


@given(LITERAL_VALUES)
def test_a_literal_is_written_as_the_value_it_parses_to(value: object) -> None:
    """What a scaffold writes for a manifest's literal is the value the literal holds, its
    ``repr``: read back, the same value."""
    written = literal_source(repr(value))
    assert eval(written, {"__builtins__": {"frozenset": frozenset, "set": set}}) == value


def test_a_float_past_a_literals_range_is_written_as_float_of_its_name() -> None:
    assert literal_source("1e400") == 'float("inf")'
    assert literal_source("-1e400") == 'float("-inf")'


@pytest.mark.parametrize(
    "text",
    [PWNED, "__import__('os')", "frozenset(open('x'))", "[i for i in ()]", "x", "-'a'"],
)
def test_text_that_is_no_literal_is_never_written(text: str) -> None:
    with pytest.raises(NotALiteral):
        literal_source(text)


def test_a_builtin_default_is_one_of_a_few_plain_types() -> None:
    assert builtin_type_name("dict") == "dict"
    assert builtin_type_name("__import__('os').system('x') or dict") is None
    assert builtin_type_name("eval") is None


def test_a_version_that_would_name_a_file_elsewhere_is_not_written(
    cli, tmp_path, monkeypatch
) -> None:
    """``contract manifest --write`` names the file by the SDK's own ``__version__``: a version
    of ``../../…`` is refused before anything is written (#56)."""
    from evalexport.contracts import drift

    hostile = {**EVALRDL, "version": "../../outside"}
    monkeypatch.setattr(drift, "extract_manifest", lambda *args, **kwargs: hostile)
    contracts = tmp_path / "contracts"
    done = cli("contract", "manifest", "evalrdl", "--contracts", contracts, "--write")
    assert done.exit_code == 2
    assert "'../../outside' is not a version" in done.stderr
    assert not list(tmp_path.rglob("*.json"))


def _kind_set_to(value: object, where: str) -> dict[str, object]:
    manifest = json.loads(json.dumps(EVALRDL))
    client = manifest["entries"]["evalrdl.Client"]
    if where == "entry":
        client["kind"] = value
    elif where == "parameter":
        client["parameters"][0]["kind"] = value
    else:
        client["attributes"]["url"]["kind"] = value
    return manifest


@pytest.mark.parametrize("where", ["entry", "parameter", "attribute"])
@pytest.mark.parametrize("value", [[], {}, ["class"]])
def test_a_kind_that_is_a_list_or_an_object_is_refused_by_name(cli, tmp_path, where, value) -> None:
    """Found by breaking manifests at random: it was a traceback (``unhashable type``)."""
    run, out = _scaffold(cli, tmp_path, _kind_set_to(value, where), "kind")
    assert run.exit_code == 2, run.output
    assert f"kind {value!r}" in run.stderr
    assert "Traceback" not in run.output
    assert not out.exists()


def test_a_default_the_manifest_does_not_record_is_refused_by_name(cli, tmp_path) -> None:
    """Found by breaking manifests at random: it was a traceback (``KeyError: 'default'``)."""
    manifest = json.loads(json.dumps(EVALRDL))
    (parameter,) = [
        p for p in manifest["entries"]["evalrdl.Client"]["parameters"] if p.get("has_default")
    ][:1]
    del parameter["default"]
    run, out = _scaffold(cli, tmp_path, manifest, "no-default")
    assert run.exit_code == 2, run.output
    assert f"parameter {parameter['name']!r} has a default the manifest does not record" in (
        run.stderr
    )
    assert not out.exists()


def test_a_manifest_without_an_entry_of_the_surface_is_refused_naming_it(cli, tmp_path) -> None:
    """A manifest of none of the surface wrote an empty fake and called it done."""
    manifest = json.loads(json.dumps(EVALRDL))
    del manifest["entries"]["evalrdl.sdk.api.upload_plan"]
    run, out = _scaffold(cli, tmp_path, manifest, "partial")
    assert run.exit_code == 2, run.output
    assert "records no entry for evalrdl.sdk.api.upload_plan of the surface" in run.stderr
    assert not out.exists()
