"""A third party's isolated exporter with its own SDK contract, as docs/plugins.md ("SDK
contracts") describes: the surface its worker uses, its fake, its committed manifests, all
declared here, with no edit to evalexport."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from evalexport.contracts.surfaces import Surface
from evalexport.exporters.isolated import IsolatedConfig, IsolatedExporter
from evalexport.exporters.prepared import PreparedRun, prepare
from evalexport.run import RunArtifacts

HERE = Path(__file__).resolve().parent


class TinyTrackConfig(IsolatedConfig):
    project: str = Field(default="evals", description="The tinytrack project.")
    requirement: str | list[str] = Field(default="tinytrack>=1.0", description="The SDK.")


class TinyTrackExporter(IsolatedExporter[TinyTrackConfig, dict[str, Any]]):
    name = "tinytrack"
    summary = "Log the run's metrics to tinytrack."
    Config = TinyTrackConfig
    worker_body = HERE / "worker.py"
    token_variables = ("TINYTRACK_TOKEN",)
    sdk_contract = Surface(
        "tinytrack",
        ("tinytrack.Client", "tinytrack.Client.start", "tinytrack.Client.log", "tinytrack.Run"),
        fake=str(HERE / "fake"),
        manifests=str(HERE / "contracts"),
        switch="runs against the real tinytrack SDK",
    )

    def check_inputs(self, run: RunArtifacts, config: TinyTrackConfig) -> PreparedRun:
        return prepare(run)

    def worker_payload(
        self,
        run: RunArtifacts,
        config: TinyTrackConfig,
        scratch: Path,
        fingerprint: str | None,
        prepared: PreparedRun | None = None,
    ) -> dict[str, Any]:
        metrics = (prepared or prepare(run)).metrics.metrics
        return {"project": config.project, "name": run.default_run_name, "metrics": metrics}
