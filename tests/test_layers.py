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
    assert "6 kept, 0 broken" in checked.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
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
            "A built-in uses only what a plugin can",
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
