"""Exporter plugins written from the evalexport 0.1.0 guide (plugin API 1), as a user wrote
them then: ``_export(self, run, config)``, ``target(self, config)``, the remote run id in the
result's details, the remote run tagged with ``guard.run_fingerprint(run)``. Kept unchanged:
``tests/test_plugin_guides.py`` holds evalexport to them."""

import json
import uuid
from pathlib import Path

from pydantic import Field

from evalexport import ExportResult, flatten_metrics, guard
from evalexport.exporters import Exporter, ExporterConfig


class AuditConfig(ExporterConfig):
    store_dir: Path = Field(description="Directory the audit records are written in.")


class AuditExporter(Exporter[AuditConfig]):
    """Writes an audit record of the run; it does not guard exports."""

    name = "auditecho"
    summary = "Write an audit record of the run's metrics."
    Config = AuditConfig

    def target(self, config):
        return str(config.store_dir)

    def _export(self, run, config):
        flat = flatten_metrics(run.read_aggregate_metrics())
        config.store_dir.mkdir(parents=True, exist_ok=True)
        record = config.store_dir / f"{run.benchmark}-{uuid.uuid4().hex}.json"
        record.write_text(json.dumps({"metrics": flat.metrics}))
        return ExportResult.succeeded(self.name, str(run.run_dir), f"audited to {record}")


class AuditLogExporter(Exporter[AuditConfig]):
    """A tracking exporter: one record per run, never two."""

    name = "auditlog"
    summary = "Log the run to an audit directory, once."
    Config = AuditConfig
    guards_exports = True

    def target(self, config):
        return str(config.store_dir)

    def _export(self, run, config):
        run_id = uuid.uuid4().hex
        config.store_dir.mkdir(parents=True, exist_ok=True)
        record = {
            "metrics": flatten_metrics(run.read_aggregate_metrics()).metrics,
            "tags": {"evalexport.fingerprint": guard.run_fingerprint(run)},
        }
        (config.store_dir / f"{run_id}.json").write_text(json.dumps(record))
        return ExportResult(
            exporter=self.name,
            status="succeeded",
            exit_code=0,
            message=f"logged run {run_id}",
            run_dir=str(run.run_dir),
            details={"run_id": run_id},
        )
