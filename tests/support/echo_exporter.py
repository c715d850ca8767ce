"""An isolated exporter driving the tinysdk stand-in through the echo worker body."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr

from evalexport.exporters.isolated import IsolatedConfig, IsolatedExporter
from evalexport.run import RunArtifacts

BODIES = Path(__file__).resolve().parent / "worker_bodies"


class EchoConfig(IsolatedConfig):
    behaviour: str = Field(default="echo", description="What the worker body does.")
    exit_code: int = Field(default=0, description="Exit code to report (behaviour=exit_code).")
    note_path: str | None = Field(default=None, description="Where the body notes a pid.")
    echo_token: SecretStr | None = Field(default=None, description="Handed to the worker.")


class EchoExporter(IsolatedExporter[EchoConfig]):
    name = "echo"
    summary = "Echo through a worker in its own environment (test exporter)."
    Config = EchoConfig
    needs_metrics_and_config = False
    worker_body = BODIES / "echo.py"

    def worker_payload(
        self, run: RunArtifacts, config: EchoConfig, scratch: Path, fingerprint: str | None
    ) -> dict[str, Any]:
        return {
            "behaviour": config.behaviour,
            "exit_code": config.exit_code,
            "rollouts": str(run.rollouts),
            "note_path": config.note_path,
        }

    def worker_secrets(self, config: EchoConfig) -> dict[str, str]:
        token = config.echo_token
        return {"ECHO_TOKEN": token.get_secret_value()} if token else {}
