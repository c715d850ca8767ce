"""Exporters: the base contract and the registry. Importing this package imports no SDK."""

from __future__ import annotations

from evalexport.exporters.base import DryRunPlan, Exporter, ExporterConfig, OptionError
from evalexport.exporters.registry import (
    ENTRY_POINT_GROUP,
    ExporterEntry,
    ExporterLoadError,
    UnknownExporterError,
    exporter_entries,
    load_exporter,
)

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
