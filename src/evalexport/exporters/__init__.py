"""Exporters: the spec, the registry and the built-ins. Importing this package imports no SDK.

Names are imported on first use, so the CLI can read the registry without loading pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalexport._lazy import lazy_attributes

if TYPE_CHECKING:
    from evalexport.exporters.base import Exporter
    from evalexport.exporters.hooks import ExporterDefinitionError, helper
    from evalexport.exporters.isolated import IsolatedConfig, IsolatedExporter
    from evalexport.exporters.registry import (
        ENTRY_POINT_GROUP,
        ExporterEntry,
        ExporterLoadError,
        UnknownExporterError,
        exporter_entries,
        load_exporter,
    )
    from evalexport.exporters.sdk import Sdk, Surface
    from evalexport.exporters.spec import (
        ExporterConfig,
        ExporterKind,
        OptionError,
        SdkConfig,
        Target,
    )
    from evalexport.isolation.delivery import WorkerDelivery, WorkerSecretsError, WorkerSpec
    from evalexport.reading import PreparedRun, prepare
    from evalexport.results import DryRunPlan, ExportFailure

_SPEC = "evalexport.exporters.spec"
_REGISTRY = "evalexport.exporters.registry"
_DELIVERY = "evalexport.isolation.delivery"
_COMPAT = "evalexport.exporters.isolated"
_PUBLIC = {
    "DryRunPlan": "evalexport.results",
    "ExportFailure": "evalexport.results",
    "Exporter": "evalexport.exporters.base",
    "ExporterConfig": _SPEC,
    "ExporterKind": _SPEC,
    "OptionError": _SPEC,
    "Sdk": "evalexport.exporters.sdk",
    "Surface": "evalexport.exporters.sdk",
    "SdkConfig": _SPEC,
    "Target": _SPEC,
    "ExporterDefinitionError": "evalexport.exporters.hooks",
    "helper": "evalexport.exporters.hooks",
    "WorkerDelivery": _DELIVERY,
    "WorkerSecretsError": _DELIVERY,
    "WorkerSpec": _DELIVERY,
    "IsolatedConfig": _COMPAT,
    "IsolatedExporter": _COMPAT,
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
    "Sdk",
    "SdkConfig",
    "Surface",
    "Target",
    "UnknownExporterError",
    "WorkerDelivery",
    "WorkerSecretsError",
    "WorkerSpec",
    "exporter_entries",
    "helper",
    "load_exporter",
    "prepare",
]

__getattr__ = lazy_attributes(__name__, _PUBLIC)
