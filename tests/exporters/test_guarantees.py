"""Every registered built-in exporter is held by the public guarantee suite
(:class:`evalexport.testing.guarantees.ExporterGuarantees`), one class per built-in, derived
from the registry: a built-in added to it is held the moment it is registered, and a test
fails naming what it lacks (its options here, its environment)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalexport.exporters.isolated import IsolatedExporter
from evalexport.exporters.registry import BUILTIN_EXPORTERS, load_exporter
from evalexport.testing.guarantees import ExporterGuarantees

OPTIONS = {
    "atif": lambda tmp_path: {"output_dirpath": str(tmp_path / "atif"), "agent_version": "1.0"},
    "mlflow": lambda tmp_path: {"mlflow_tracking_uri": f"sqlite:///{tmp_path / 'mlruns.db'}"},
    "wandb": lambda tmp_path: {"wandb_mode": "offline"},
    "evalrdl": lambda tmp_path: {},
}
"""The options a built-in's guarantees export with (besides the rollouts file)."""

ENVIRONMENT = {"mlflow": "mlflow_python", "wandb": "wandb_python", "evalrdl": "evalrdl_sdk"}
"""The fixture that serves a built-in isolated exporter's SDK."""


def _needs_the_index(name: str) -> bool:
    """An isolated exporter with no fake runs its real SDK, built from the package index."""
    exporter = load_exporter(name)
    return issubclass(exporter, IsolatedExporter) and (
        exporter.sdk_contract is None or exporter.sdk_contract.fake is None
    )


@pytest.fixture
def exporter_options(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    name = request.cls.exporter_name
    if name not in OPTIONS:
        pytest.fail(f"the built-in exporter {name!r} has no entry in {__name__}.OPTIONS")
    if name in ENVIRONMENT:
        request.getfixturevalue(ENVIRONMENT[name])
    elif issubclass(load_exporter(name), IsolatedExporter):
        pytest.fail(f"the built-in isolated exporter {name!r} has no entry in ENVIRONMENT")
    options: dict[str, Any] = OPTIONS[name](tmp_path)
    return options


def test_every_built_in_is_held_by_the_guarantees() -> None:
    held = sorted(
        cls.exporter_name
        for cls in globals().values()
        if isinstance(cls, type)
        and issubclass(cls, ExporterGuarantees)
        and cls.__name__ != "ExporterGuarantees"
    )
    assert held == sorted(BUILTIN_EXPORTERS)


for _name in BUILTIN_EXPORTERS:
    _marks = [pytest.mark.downloads] if _needs_the_index(_name) else []
    globals()[f"TestGuaranteesOf{_name.capitalize()}"] = type(
        f"TestGuaranteesOf{_name.capitalize()}",
        (ExporterGuarantees,),
        {"exporter_name": _name, "pytestmark": _marks},
    )
