"""The layering the architecture promises (docs/architecture.md), checked on the source."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "evalexport"


def _prints(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "print"
    ]


def test_only_the_cli_prints() -> None:
    """Below ``cli/`` modules return data and raise typed errors; workers report through their
    result, the test support through pytest. Code run in a subprocess (a string) is not a call."""
    offenders = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] not in ("cli", "testing") and (lines := _prints(path))
    }
    assert offenders == {}


# The layering as import-linter contracts ([tool.importlinter] in pyproject.toml) -------------

ROOT = PACKAGE.parents[1]


def _lint_imports(source_root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the project's contracts, on the package under ``source_root``."""
    import sys

    command = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if command is None:
        pytest.skip("import-linter is not installed here (pip install -e '.[test]')")
    return subprocess.run(
        [command, "--no-cache", str(ROOT / "pyproject.toml")],
        cwd=source_root,
        env={**os.environ, "PYTHONPATH": str(source_root)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def source_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("src")
    shutil.copytree(PACKAGE, root / "evalexport", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_the_layering_contracts_hold() -> None:
    checked = _lint_imports(PACKAGE.parent)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "7 kept, 0 broken" in checked.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        (
            "trajectory/convert.py",
            "from evalexport.host import files as _files\n",
            "trajectory converts a row to a trajectory",
        ),
        (
            "trajectory/steps.py",
            "from evalexport.ingress import one_of as _one_of\n",
            "trajectory converts a row to a trajectory",
        ),
        (
            "backends/mlflow/exporter.py",
            "from evalexport.backends.wandb import target as _other\n",
            "A backend never imports another backend",
        ),
        (
            "backends/wandb/worker.py",
            "from evalexport.masking import mask_text as _mask\n",
            "A worker body imports nothing of evalexport but the wire",
        ),
        (
            "backends/evalrdl/exporter.py",
            "from evalexport.pipeline import run_export as _run\n",
            "A built-in backend imports of evalexport only what a plugin does",
        ),
        (  # a name the door gives, taken from where it is defined: past the door
            "backends/mlflow/exporter.py",
            "from evalexport.results import PlannedFile as _planned\n",
            "A built-in backend imports of evalexport only what a plugin does",
        ),
        (
            "backends/wandb/target.py",
            "from evalexport.spec.declarations import Target as _target\n",
            "A built-in backend imports of evalexport only what a plugin does",
        ),
        (
            "run.py",
            "from evalexport.spec import Exporter as _exporter\n",
            "The house, floor by floor",
        ),
        (
            "tables/rollouts.py",
            "from evalexport.backends.mlflow import names as _names\n",
            "Nothing below the pipeline imports a backend",
        ),
        (
            "spec/sdk.py",
            "from evalexport.testing import recording as _recording\n",
            "The spec and everything below it know nothing of the contract tools",
        ),
    ],
)
def test_a_forbidden_import_breaks_its_contract(
    source_copy: Path, module: str, line: str, broken: str
) -> None:
    path = source_copy / "evalexport" / module
    original = path.read_text()
    try:
        path.write_text(original + "\n" + line)
        checked = _lint_imports(source_copy)
    finally:
        path.write_text(original)
    assert checked.returncode == 1, checked.stdout
    said = " ".join(checked.stdout.split())
    verdict = re.search(re.escape(broken) + r".*? (KEPT|BROKEN)\b", said)
    assert verdict is not None, said
    assert verdict.group(1) == "BROKEN", said


def _details_reads(path: Path) -> list[str]:
    """Where ``path`` reads a key of some object's ``details`` (``result.details["x"]``,
    ``result.details.get("x")``): control data read back by a string."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        read = None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            read = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            read = node.func.value if node.func.attr == "get" else None
        if isinstance(read, ast.Attribute) and read.attr == "details":
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_control_data_is_read_back_out_of_details() -> None:
    """What a caller acts on has a typed field of ``ExportResult`` (``interrupted_by``,
    ``existing_run_ids``, ``target_not_asked``, ``notices``, ``environment``) or of the
    worker's result (``output``); ``details`` are for people (docs/architecture.md)."""
    assert [read for path in sorted(PACKAGE.rglob("*.py")) for read in _details_reads(path)] == []


def drawn_from_the_contracts() -> str:
    """docs/architecture.md's picture of the house, drawn from ``[tool.importlinter]``: the
    floors top to bottom, then each other contract in one line (names without ``evalexport.``)."""
    import textwrap
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]

    def short(names: list[str]) -> str:
        return ", ".join(name.removeprefix("evalexport.") for name in names)

    lines: list[str] = []
    for contract in contracts:
        if contract["type"] == "layers":
            layers = contract["layers"]
            lines.append(f"{contract['id']}: each floor imports only the floors below it")
            for number, layer in zip(range(len(layers), 0, -1), layers, strict=True):
                lines.append(f"  {number:>2}  {layer.replace('evalexport.', '')}")
    for contract in contracts:
        if contract["type"] == "independence":
            rule = f"{short(contract['modules'])} import none of each other"
        elif contract["type"] == "forbidden":
            sources, forbidden = (
                short(contract["source_modules"]),
                short(contract["forbidden_modules"]),
            )
            rule = f"{sources} never import {forbidden}"
        else:
            continue
        lines.append("")
        lines += textwrap.wrap(
            f"{contract['id']}: {rule}", width=94, subsequent_indent="    ", break_on_hyphens=False
        )
    return "\n".join(lines) + "\n"


def test_the_picture_in_the_architecture_is_drawn_from_the_contracts() -> None:
    """The picture cannot drift from the code: the contracts lint-imports keeps draw it."""
    document = (ROOT / "docs" / "architecture.md").read_text()
    picture = re.search(
        r"<!-- tested: tests/test_layers.py -->\n```\n(.*?)```", document, flags=re.DOTALL
    )
    assert picture is not None, "docs/architecture.md: the picture's block is gone"
    assert picture.group(1) == drawn_from_the_contracts(), (
        "the contracts changed: paste tests.test_layers.drawn_from_the_contracts() into "
        "docs/architecture.md's picture\n" + drawn_from_the_contracts()
    )


PLUGIN_TYPES = (
    "Exporter",
    "ExporterConfig",
    "ExporterDefinitionError",
    "OptionError",
    "RowsConfig",
    "Sdk",
    "SdkConfig",
    "Surface",
    "Target",
    "WorkerDelivery",
    "WorkerSecretsError",
    "WorkerSpec",
)
"""The door's classes that exist for plugins alone: what an exporter is, its target, its SDK
and its worker. The rest of the door (results, the run, settings, the gate) is the core's own,
defined where the core uses it and named by the door."""


@pytest.mark.parametrize("name", PLUGIN_TYPES)
def test_a_plugin_type_is_defined_in_the_spec_not_brought_in_from_below(name: str) -> None:
    """A type that exists for plugins lives in ``evalexport.spec`` (#66): a room below the door
    (isolation runs the worker) reads it through a protocol of its own, so an internal move
    there is never a plugin API change."""
    import evalexport.spec

    assert name in evalexport.spec.__all__
    assert getattr(evalexport.spec, name).__module__.startswith("evalexport.spec."), name


def test_what_a_plugin_may_import_is_what_the_built_ins_are_held_to() -> None:
    """docs/plugins.md's table of the door's names is ``evalexport.spec.__all__``, at most 35
    names, and the ``backends-through-the-door`` contract forbids every room of evalexport to
    the built-ins but the door (``evalexport``, ``evalexport.spec``), the wire
    (``evalexport.workers``) and the trajectory library, each forbidden once."""
    import tomllib

    import evalexport.spec

    guide = (ROOT / "docs" / "plugins.md").read_text()
    section = guide.split("## What a plugin may import", 1)[1].split("\n## ", 1)[0]
    documented = {
        name
        for row in re.findall(r"^\| (`.+?) \|", section, flags=re.MULTILINE)
        for name in re.findall(r"`(\w+)`", row)
    }
    assert documented == set(evalexport.spec.__all__)
    assert len(evalexport.spec.__all__) <= 35
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (door,) = [c for c in contracts["contracts"] if c["id"] == "backends-through-the-door"]
    forbidden = [name.removeprefix("evalexport.") for name in door["forbidden_modules"]]
    assert len(forbidden) == len(set(forbidden))
    rooms = {
        path.stem if path.suffix == ".py" else path.name
        for path in PACKAGE.iterdir()
        if (path.suffix == ".py" or (path / "__init__.py").is_file())
        and path.name not in ("__init__.py", "__main__.py")
    }
    spec_rooms = {
        f"spec.{path.stem}" for path in (PACKAGE / "spec").glob("*.py") if path.stem != "__init__"
    }
    open_rooms = {"backends", "spec", "workers", "trajectory"}
    assert (rooms | spec_rooms) - open_rooms == set(forbidden), (
        "a room of evalexport is neither the door nor forbidden to the built-ins "
        "(pyproject.toml, backends-through-the-door), or one listed is gone"
    )
