"""The exporter spec: the one door every exporter comes in by, built-in or plugin alike.

With the top-level ``evalexport`` (results and the run: ``ExportResult``, ``RunArtifacts``,
``Rollout``...), :data:`__all__` below is the whole of what an exporter imports of evalexport;
a worker body imports only the wire (``evalexport.workers``); ATIF and MLflow's traces also
use :mod:`evalexport.trajectory`, the converter from Gym's rows to trajectories. The
``backends-through-the-door`` import-linter contract holds the built-in backends to it, and
``docs/plugins.md`` documents every name. Importing this package imports no SDK; names are
imported on first use, so the CLI can read the registry without loading pydantic.

The registry (:mod:`.registry`) and the adapters that keep earlier guides' plugins working
(:mod:`.compat`, :mod:`.isolated`) are not the door: their names are still importable from
here, with a deprecation warning that names their own module.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from evalexport._lazy import lazy_attributes

if TYPE_CHECKING:
    from evalexport.callers import named_option
    from evalexport.egress import Egress, SecretScan
    from evalexport.guard import FINGERPRINT_SUMMARY_KEY, FINGERPRINT_TAG
    from evalexport.interrupts import deferred, landed
    from evalexport.isolation.descendants import run_tracked
    from evalexport.progress import human_size
    from evalexport.reading import PreparedRun
    from evalexport.reading.evaluation_times import exported_at
    from evalexport.results import DryRunPlan, ExportFailure, PlannedFile, SkipReason
    from evalexport.settings import Chosen, SettingError, chosen
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
    from evalexport.spec.sdk import Sdk, Surface
    from evalexport.spec.workers import WorkerDelivery, WorkerSecretsError, WorkerSpec
    from evalexport.tables.directory import read_directory
    from evalexport.tables.prepare import prepare

_SPEC = "evalexport.spec.declarations"
_WORKERS = "evalexport.spec.workers"
_RESULTS = "evalexport.results"
_SETTINGS = "evalexport.settings"
_PUBLIC = {
    # what an exporter is
    "Exporter": "evalexport.spec.base",
    "ExporterConfig": _SPEC,
    "ExporterKind": _SPEC,
    "RowsConfig": _SPEC,
    "SdkConfig": _SPEC,
    "OptionError": _SPEC,
    "ExporterDefinitionError": "evalexport.spec.hooks",
    "helper": "evalexport.spec.hooks",
    # where the run goes, and the settings it goes with
    "Target": _SPEC,
    "Chosen": _SETTINGS,
    "chosen": _SETTINGS,
    "SettingError": _SETTINGS,
    "named_option": "evalexport.callers",
    # what is read and sent
    "PreparedRun": "evalexport.reading",
    "prepare": "evalexport.tables.prepare",
    "read_directory": "evalexport.tables.directory",
    "Egress": "evalexport.egress",
    "SecretScan": "evalexport.egress",
    "exported_at": "evalexport.reading.evaluation_times",
    "FINGERPRINT_TAG": "evalexport.guard",
    "FINGERPRINT_SUMMARY_KEY": "evalexport.guard",
    # the SDK and its worker
    "Sdk": "evalexport.spec.sdk",
    "Surface": "evalexport.spec.sdk",
    "WorkerSpec": _WORKERS,
    "WorkerDelivery": _WORKERS,
    "WorkerSecretsError": _WORKERS,
    "run_tracked": "evalexport.isolation.descendants",
    # what the export says
    "DryRunPlan": _RESULTS,
    "PlannedFile": _RESULTS,
    "SkipReason": _RESULTS,
    "ExportFailure": _RESULTS,
    "human_size": "evalexport.progress",
    # writing files that must land whole
    "deferred": "evalexport.interrupts",
    "landed": "evalexport.interrupts",
}

_MOVED = {
    "ENTRY_POINT_GROUP": "evalexport.spec.registry",
    "ExporterEntry": "evalexport.spec.registry",
    "ExporterLoadError": "evalexport.spec.registry",
    "UnknownExporterError": "evalexport.spec.registry",
    "exporter_entries": "evalexport.spec.registry",
    "load_exporter": "evalexport.spec.registry",
    "IsolatedConfig": "evalexport.spec.isolated",
    "IsolatedExporter": "evalexport.spec.isolated",
}
"""Names this package gave before the door was drawn (0.5.0): still importable from here
until 1.0, with a warning naming their own module."""

__all__ = [
    "FINGERPRINT_SUMMARY_KEY",
    "FINGERPRINT_TAG",
    "Chosen",
    "DryRunPlan",
    "Egress",
    "ExportFailure",
    "Exporter",
    "ExporterConfig",
    "ExporterDefinitionError",
    "ExporterKind",
    "OptionError",
    "PlannedFile",
    "PreparedRun",
    "RowsConfig",
    "Sdk",
    "SdkConfig",
    "SecretScan",
    "SettingError",
    "SkipReason",
    "Surface",
    "Target",
    "WorkerDelivery",
    "WorkerSecretsError",
    "WorkerSpec",
    "chosen",
    "deferred",
    "exported_at",
    "helper",
    "human_size",
    "landed",
    "named_option",
    "prepare",
    "read_directory",
    "run_tracked",
]

_door = lazy_attributes(__name__, _PUBLIC)


def __getattr__(attribute: str) -> Any:
    moved = _MOVED.get(attribute)
    if moved is None:
        return _door(attribute)
    warnings.warn(
        f"evalexport.spec.{attribute} is deprecated and not part of the exporter spec; import "
        f"it from {moved} (it goes from evalexport.spec at 1.0)",
        DeprecationWarning,
        stacklevel=2,
    )
    import importlib

    return getattr(importlib.import_module(moved), attribute)


def __dir__() -> list[str]:
    return sorted(__all__)
