"""Startup stays lean: importing evalexport or running the CLI imports no backend SDK."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evalexport.contracts.installed import installed_surfaces

SDKS = (*installed_surfaces(), "atif", "harbor")
"""Every SDK an installed exporter declares, and the ATIF validators (the atif exporter
imports them in its worker processes only)."""


@pytest.fixture
def tripwire_sdks(tmp_path: Path) -> Path:
    """Importable packages named like every SDK, each recording that it was imported."""
    site = tmp_path / "sdks"
    record = tmp_path / "imported.txt"
    for name in SDKS:
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text(
            f"open({str(record)!r}, 'a').write({name!r} + '\\n')\n"
        )
    return site


@pytest.mark.parametrize(
    "code",
    [
        "import evalexport",
        "import evalexport.cli, evalexport.exporters, evalexport.testing.factory",
        "import sys; from evalexport.cli import main; main(['--help'])",
        "import sys; from evalexport.cli import main; main(['list'])",
    ],
)
def test_no_sdk_is_imported(tripwire_sdks: Path, code: str) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(tripwire_sdks), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    record = tripwire_sdks.parent / "imported.txt"
    assert not record.exists(), f"imported: {record.read_text()}"


def test_the_tripwire_catches_an_sdk_import(tripwire_sdks: Path) -> None:
    subprocess.run(
        [sys.executable, "-c", "import evalexport, mlflow"],
        env={"PYTHONPATH": str(tripwire_sdks)},
        check=True,
    )
    assert (tripwire_sdks.parent / "imported.txt").read_text() == "mlflow\n"


def test_pytest_loading_the_plugin_imports_no_exporter_and_no_run_factory() -> None:
    # pytest loads the plugin at every start wherever evalexport is installed: it reads the
    # SDK surfaces for its switches, and leaves the exporters, the run reader and the run
    # factory until a switch or fixture asks for them.
    code = (
        "import sys, evalexport.testing.plugin\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('evalexport'))))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    loaded = set(completed.stdout.split())
    assert "evalexport.testing.plugin" in loaded
    heavy = {
        "evalexport.spec.base",
        "evalexport.pipeline",
        "evalexport.reading",
        "evalexport.run",
        "evalexport.testing.factory",
    }
    assert not loaded & heavy, sorted(loaded & heavy)
