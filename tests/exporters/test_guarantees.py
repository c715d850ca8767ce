"""Every registered built-in exporter is held by the public guarantee suite
(:class:`evalexport.testing.guarantees.ExporterGuarantees`), one class per built-in, derived
from the registry: a built-in added to it is held the moment it is registered, with the
options and SDK fixtures its own tests module names (no list here to edit)."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from evalexport.spec.registry import BUILTIN_EXPORTERS, load_exporter
from evalexport.testing.guarantees import ExporterGuarantees


def _needs_the_index(name: str) -> bool:
    """An exporter whose SDK has no fake runs its real SDK, built from the package index."""
    sdk = load_exporter(name).sdk
    return sdk is not None and (sdk.contract is None or sdk.contract.fake is None)


def _tests_of(name: str) -> ModuleType:
    """``tests/exporters/test_<name>.py``, a built-in's own tests: it says what the guarantees
    export with (``guarantee_options(tmp_path)``, default none) and which fixtures serve its
    SDK (``GUARANTEE_FIXTURES``, default none)."""
    return importlib.import_module(f"tests.exporters.test_{name}")


@pytest.fixture
def exporter_options(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    tests = _tests_of(request.cls.exporter_name)
    fixtures = getattr(tests, "GUARANTEE_FIXTURES", ())
    for fixture in fixtures:
        request.getfixturevalue(fixture)
    options = getattr(tests, "guarantee_options", lambda tmp_path: {})
    chosen: dict[str, Any] = options(tmp_path)
    if fixtures and "requirement" not in chosen:
        # Its fixtures serve its SDK (the fake through the installer's settings, as a user's
        # index would): the default requirement says so to the suite, which serves none.
        config = load_exporter(request.cls.exporter_name).Config
        chosen["requirement"] = config.model_fields["requirement"].default
    return chosen


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
