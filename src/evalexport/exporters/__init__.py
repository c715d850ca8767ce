"""Exporters: the base contract and the registry. Importing this package imports no SDK.

Names are imported on first use, so the CLI can read the registry without loading pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalexport._lazy import lazy_attributes

if TYPE_CHECKING:
    from evalexport.exporters.base import Exporter, ExporterConfig, OptionError
    from evalexport.exporters.registry import (
        ENTRY_POINT_GROUP,
        ExporterEntry,
        ExporterLoadError,
        UnknownExporterError,
        exporter_entries,
        load_exporter,
    )
    from evalexport.results import DryRunPlan

_BASE = "evalexport.exporters.base"
_REGISTRY = "evalexport.exporters.registry"
_PUBLIC = {
    "DryRunPlan": "evalexport.results",
    "Exporter": _BASE,
    "ExporterConfig": _BASE,
    "OptionError": _BASE,
    "ENTRY_POINT_GROUP": _REGISTRY,
    "ExporterEntry": _REGISTRY,
    "ExporterLoadError": _REGISTRY,
    "UnknownExporterError": _REGISTRY,
    "exporter_entries": _REGISTRY,
    "load_exporter": _REGISTRY,
}

__all__ = [
    "ENTRY_POINT_GROUP",
    "DryRunPlan",
    "Exporter",
    "ExporterConfig",
    "ExporterEntry",
    "ExporterLoadError",
    "OptionError",
    "UnknownExporterError",
    "exporter_entries",
    "load_exporter",
]

__getattr__ = lazy_attributes(__name__, _PUBLIC)
