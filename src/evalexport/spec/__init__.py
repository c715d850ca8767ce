"""The exporter spec: everything an exporter is written with, built-in or plugin alike.

The names a plugin author needs (``Exporter``, its options, ``Target``, ``Sdk`` and
``Surface``, ``WorkerSpec`` and ``WorkerDelivery``, ``prepare``), the hook verifier
(:mod:`.hooks`), options as callers give them (:mod:`.options`), the registry
(:mod:`.registry`) and, beside them, the adapters that keep earlier guides' plugins working
(:mod:`.compat`, :mod:`.isolated`). The built-in exporters (``evalexport.backends``) use
nothing a plugin cannot. Importing this package imports no SDK; names are imported on first
use, so the CLI can read the registry without loading pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalexport._lazy import lazy_attributes

if TYPE_CHECKING:
    from evalexport.guard import FINGERPRINT_SUMMARY_KEY, FINGERPRINT_TAG
    from evalexport.isolation.delivery import WorkerDelivery, WorkerSecretsError, WorkerSpec
    from evalexport.isolation.descendants import run_tracked
    from evalexport.reading import PreparedRun, prepare
    from evalexport.results import DryRunPlan, ExportFailure
    from evalexport.spec.base import Exporter
    from evalexport.spec.declarations import (
        ExporterConfig,
        ExporterKind,
        OptionError,
        RowsConfig,
        SdkConfig,
        Target,
    )
    from evalexport.spec.hooks import ExporterDefinitionError, helper
    from evalexport.spec.isolated import IsolatedConfig, IsolatedExporter
    from evalexport.spec.registry import (
        ENTRY_POINT_GROUP,
        ExporterEntry,
        ExporterLoadError,
        UnknownExporterError,
        exporter_entries,
        load_exporter,
    )
    from evalexport.spec.sdk import Sdk, Surface

_SPEC = "evalexport.spec.declarations"
_REGISTRY = "evalexport.spec.registry"
_DELIVERY = "evalexport.isolation.delivery"
_COMPAT = "evalexport.spec.isolated"
_PUBLIC = {
    "FINGERPRINT_TAG": "evalexport.guard",
    "FINGERPRINT_SUMMARY_KEY": "evalexport.guard",
    "run_tracked": "evalexport.isolation.descendants",
    "DryRunPlan": "evalexport.results",
    "ExportFailure": "evalexport.results",
    "Exporter": "evalexport.spec.base",
    "ExporterConfig": _SPEC,
    "ExporterKind": _SPEC,
    "OptionError": _SPEC,
    "Sdk": "evalexport.spec.sdk",
    "Surface": "evalexport.spec.sdk",
    "RowsConfig": _SPEC,
    "SdkConfig": _SPEC,
    "Target": _SPEC,
    "ExporterDefinitionError": "evalexport.spec.hooks",
    "helper": "evalexport.spec.hooks",
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
    "FINGERPRINT_SUMMARY_KEY",
    "FINGERPRINT_TAG",
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
    "RowsConfig",
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
    "run_tracked",
]

__getattr__ = lazy_attributes(__name__, _PUBLIC)
