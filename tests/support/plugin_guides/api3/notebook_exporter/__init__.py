"""notebook_exporter: record finished runs in a directory (an evalexport plugin, API 3)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from pydantic import Field

from evalexport import ExportResult, RunArtifacts
from evalexport.exporters import Exporter, ExporterConfig, PreparedRun, prepare


class NotebookConfig(ExporterConfig):
    store_dir: Path = Field(description="Directory the runs are recorded in.")


class NotebookExporter(Exporter[NotebookConfig]):
    name = "notebook"
    summary = "Record the run's metrics and config in a directory."
    Config = NotebookConfig
    kind = "tracking"  # one remote run per target, never two: the export is guarded

    def target(self, run: RunArtifacts, config: NotebookConfig) -> str:
        return str(config.store_dir)

    def check_inputs(self, run: RunArtifacts, config: NotebookConfig) -> PreparedRun:
        return prepare(run)  # the metrics, the config (masked) and the rollouts, read once

    def _export(
        self,
        run: RunArtifacts,
        config: NotebookConfig,
        *,
        fingerprint: str | None,
        prepared: PreparedRun | None = None,
    ) -> ExportResult:
        assert fingerprint is not None  # a tracking export always gets one
        assert prepared is not None  # check_inputs prepared it
        run_id = uuid.uuid4().hex
        config.store_dir.mkdir(parents=True, exist_ok=True)
        record = {
            "metrics": prepared.metrics.metrics,
            "params": prepared.saved_config.config,
            "rollouts": prepared.rollout_count,
            "tags": {"evalexport.fingerprint": fingerprint},
        }
        (config.store_dir / f"{run_id}.json").write_text(json.dumps(record))
        return ExportResult.succeeded(
            self.name, str(run.run_dir), f"recorded run {run_id}", run_id=run_id
        )
