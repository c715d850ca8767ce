"""A tracking exporter installed as a plugin, for tests of the registry, CLI and guard.

It "tracks" into a local directory: each export writes one JSON file holding the flattened
metrics and the run's fingerprint, as a tracking server would store a run. It is registered
under the ``evalexport.exporters`` entry-point group by the dist-info folder beside it.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from pathlib import Path

from pydantic import Field

from evalexport import ExportResult, RunArtifacts, flatten_metrics
from evalexport.exporters import Exporter, ExporterConfig, Target


class RecordingConfig(ExporterConfig):
    store_dir: Path = Field(description="Directory the exported runs are recorded in.")
    delay_seconds: float = Field(default=0.0, description="Sleep before recording.")
    fail_with: str | None = Field(default=None, description="Fail with this message instead.")
    chatter: str | None = Field(default=None, description="Print this to stdout while exporting.")
    crash: bool = Field(default=False, description="Kill the exporting process outright.")


class RecordingExporter(Exporter[RecordingConfig]):
    name = "recording"
    summary = "Record the run's metrics in a local directory (test plugin)."
    kind = "tracking"

    def resolve(self, config: RecordingConfig) -> Target:
        return Target(where=str(config.store_dir))

    def deliver(
        self, run: RunArtifacts, config: RecordingConfig, fingerprint: str | None
    ) -> ExportResult:
        time.sleep(config.delay_seconds)
        if config.chatter is not None:
            print(config.chatter)
        if config.crash:
            os.kill(os.getpid(), signal.SIGKILL)
        if config.fail_with:
            return self.failed(run, config.fail_with)
        flat = flatten_metrics(run.read_aggregate_metrics())
        run_id = uuid.uuid4().hex
        config.store_dir.mkdir(parents=True, exist_ok=True)
        record = {
            "metrics": flat.metrics,
            "tags": {**flat.texts, "evalexport.fingerprint": fingerprint},
            "params": run.read_saved_config(),
        }
        (config.store_dir / f"{run_id}.json").write_text(json.dumps(record))
        return ExportResult.succeeded(
            self.name, str(run.run_dir), f"recorded run {run_id}", run_id=run_id
        )


class BrokenExporter(Exporter[ExporterConfig]):
    name = "broken"
    summary = "Raise from inside the export (test plugin)."

    def deliver(self) -> ExportResult:
        raise RuntimeError("backend exploded while holding Bearer abcd1234efgh5678")


NotAnExporter = object()
