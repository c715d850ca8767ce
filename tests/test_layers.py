"""The layering the architecture promises (docs/architecture.md), checked on the source."""

from __future__ import annotations

import ast
from pathlib import Path

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
