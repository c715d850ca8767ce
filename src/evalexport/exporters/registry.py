"""Which exporters exist: the built-ins plus those installed under an entry-point group.

Entries are names and import paths only; an exporter's module is imported when that exporter
is used, so listing exporters or starting the CLI imports no exporter and no SDK.
"""

from __future__ import annotations

import functools
import importlib
import re
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

if TYPE_CHECKING:
    from evalexport.exporters.base import Exporter

__all__ = [
    "ENTRY_POINT_GROUP",
    "ExporterEntry",
    "ExporterLoadError",
    "UnknownExporterError",
    "builtin_exporters",
    "exporter_entries",
    "load_exporter",
]

ENTRY_POINT_GROUP = "evalexport.exporters"

_EXPORTER_CLASS = re.compile(r"^class (\w+)\((?:Isolated)?Exporter\[")
_NAME = re.compile(r"^    name = \"([\w.-]+)\"")


@functools.cache
def builtin_exporters() -> dict[str, str]:
    """Built-in exporters: name -> ``module:Class``, read off this package's modules without
    importing them (a CLI start stays cheap): a top-level ``class X(Exporter[...])`` or
    ``class X(IsolatedExporter[...])`` whose body sets ``name = "..."``. Adding a built-in
    exporter is adding its module; nothing lists it."""
    found: dict[str, str] = {}
    for path in sorted(Path(__file__).resolve().parent.glob("*.py")):
        exporter_class = None
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("class "):
                match = _EXPORTER_CLASS.match(line)
                exporter_class = match[1] if match else None
            elif exporter_class and (named := _NAME.match(line)):
                found[named[1]] = f"{__package__}.{path.stem}:{exporter_class}"
                exporter_class = None
    return dict(sorted(found.items()))


class UnknownExporterError(LookupError):
    """No exporter has the requested name (exit code 2)."""


class ExporterLoadError(ImportError):
    """An exporter is registered but cannot be imported, or is not an :class:`Exporter`."""


@final
@dataclass(frozen=True)
class ExporterEntry:
    """A known exporter: its name, ``module:Class`` and where it comes from (built-in or plugin)."""

    name: str
    target: str
    """``module:attribute`` of the exporter class."""
    source: str
    """``built-in``, or the distribution that registered it."""

    def load(self) -> type[Exporter[Any]]:
        """Import the exporter's class; :class:`ExporterLoadError` says why it cannot be."""
        from evalexport.exporters.base import Exporter

        module_name, _, attribute = self.target.partition(":")
        try:
            loaded = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as error:
            raise ExporterLoadError(
                f"Exporter {self.name!r} ({self.source}) cannot be loaded from {self.target}: "
                f"{error}"
            ) from None
        if not (isinstance(loaded, type) and issubclass(loaded, Exporter)):
            raise ExporterLoadError(
                f"Exporter {self.name!r} ({self.source}) points at {self.target}, "
                "which is not an evalexport Exporter subclass"
            )
        return loaded


def exporter_entries() -> dict[str, ExporterEntry]:
    """Every known exporter by name, sorted; a plugin cannot replace a built-in."""
    entries = {
        name: ExporterEntry(name, target, "built-in")
        for name, target in builtin_exporters().items()
    }
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name in entries:
            continue
        source = f"plugin {point.dist.name}" if point.dist is not None else "plugin"
        entries[point.name] = ExporterEntry(point.name, point.value, source)
    return dict(sorted(entries.items()))


def load_exporter(name: str) -> type[Exporter[Any]]:
    """The exporter class named ``name``; :class:`UnknownExporterError` lists the known ones."""
    entries = exporter_entries()
    entry = entries.get(name)
    if entry is None:
        known = ", ".join(entries) or "none installed"
        raise UnknownExporterError(f"unknown exporter {name!r}; available exporters: {known}")
    return entry.load()
