"""Exporters: the base contract and the registry. Importing this package imports no SDK.

Names are imported on first use, so the CLI can read the registry without loading pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalexport._lazy import lazy_attributes

if TYPE_CHECKING:
    from evalexport.exporters.base import Exporter, ExporterConfig, ExporterKind, OptionError
    from evalexport.exporters.hooks import ExporterDefinitionError, helper
    from evalexport.exporters.isolated import (
        IsolatedConfig,
        IsolatedExporter,
        WorkerSecretsError,
        WorkerSpec,
    )
    from evalexport.exporters.registry import (
        ENTRY_POINT_GROUP,
        ExporterEntry,
        ExporterLoadError,
        UnknownExporterError,
        exporter_entries,
        load_exporter,
    )
    from evalexport.reading import PreparedRun, prepare
    from evalexport.results import DryRunPlan, ExportFailure

_BASE = "evalexport.exporters.base"
_REGISTRY = "evalexport.exporters.registry"
_ISOLATED = "evalexport.exporters.isolated"
_PUBLIC = {
    "DryRunPlan": "evalexport.results",
    "ExportFailure": "evalexport.results",
    "Exporter": _BASE,
    "ExporterConfig": _BASE,
    "ExporterKind": _BASE,
    "OptionError": _BASE,
    "ExporterDefinitionError": "evalexport.exporters.hooks",
    "helper": "evalexport.exporters.hooks",
    "IsolatedConfig": _ISOLATED,
    "IsolatedExporter": _ISOLATED,
    "WorkerSecretsError": _ISOLATED,
    "WorkerSpec": _ISOLATED,
    "PreparedRun": "evalexport.reading",
    "prepare": "evalexport.reading",
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
    "ExportFailure",
    "Exporter",
    "ExporterConfig",
    "ExporterDefinitionError",
    "ExporterEntry",
    "ExporterKind",
    "ExporterLoadError",
    "IsolatedConfig",
    "IsolatedExporter",
    "OptionError",
    "PreparedRun",
    "UnknownExporterError",
    "WorkerSecretsError",
    "WorkerSpec",
    "exporter_entries",
    "helper",
    "load_exporter",
    "prepare",
]

__getattr__ = lazy_attributes(__name__, _PUBLIC)
