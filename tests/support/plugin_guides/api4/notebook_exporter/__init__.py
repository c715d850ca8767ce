"""notebook_exporter: record finished runs in a directory (an evalexport plugin, API 4)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from pydantic import Field

from evalexport import ExportResult, RunArtifacts
from evalexport.spec import Exporter, ExporterConfig, PreparedRun, Target, prepare


class NotebookConfig(ExporterConfig):
    store_dir: Path = Field(description="Directory the runs are recorded in.")


class NotebookExporter(Exporter[NotebookConfig]):
    name = "notebook"
    summary = "Record the run's metrics and config in a directory."
    kind = "tracking"  # one remote run per target, never two: the export is guarded

    def resolve(self, config: NotebookConfig) -> Target:
        return Target(where=str(config.store_dir))  # the marker keeps one record per target

    def read(self, run: RunArtifacts) -> PreparedRun:
        return prepare(run)  # the metrics, the config (masked) and the rollouts, read once

    def deliver(
        self,
        run: RunArtifacts,
        config: NotebookConfig,
        prepared: PreparedRun,
        fingerprint: str | None,
    ) -> ExportResult:
        assert fingerprint is not None  # a tracking export always gets one
        run_id = uuid.uuid4().hex
        config.store_dir.mkdir(parents=True, exist_ok=True)
        record = {
            "metrics": prepared.metrics.metrics,  # the numbers
            "texts": prepared.metrics.texts,  # and the text values (a judge's name)
            "params": prepared.saved_config.config,
            "rollouts": prepared.rollout_count,
            "tags": {"evalexport.fingerprint": fingerprint},
        }
        (config.store_dir / f"{run_id}.json").write_text(json.dumps(record))
        return ExportResult.succeeded(
            self.name, str(run.run_dir), f"recorded run {run_id}", run_id=run_id
        )
