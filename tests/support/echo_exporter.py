"""An exporter with an SDK driving the tinysdk stand-in through the echo worker body."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr

from evalexport.run import RunArtifacts
from evalexport.spec import Exporter, Sdk, SdkConfig, Target, WorkerDelivery, WorkerSpec

BODIES = Path(__file__).resolve().parent / "worker_bodies"


class EchoConfig(SdkConfig):
    behaviour: str = Field(default="echo", description="What the worker body does.")
    exit_code: int = Field(default=0, description="Exit code to report (behaviour=exit_code).")
    note_path: str | None = Field(default=None, description="Where the body notes a pid.")
    seconds: float = Field(default=0, description="How long a slow step takes (slow_step).")
    echo_token: SecretStr | None = Field(default=None, description="Handed to the worker.")


class EchoExporter(Exporter[EchoConfig]):
    name = "echo"
    summary = "Echo through a worker in its own environment (test exporter)."
    sdk = Sdk(body=BODIES / "echo.py", token_variables=("TINYSDK_TOKEN",))

    def resolve(self, config: EchoConfig) -> Target:
        token = config.echo_token
        secrets = {"ECHO_TOKEN": token.get_secret_value()} if token else {}
        return Target(
            where=self.name,
            worker=WorkerSpec(requirements=config.requirements(), secrets=secrets),
        )

    def deliver(self, run: RunArtifacts, config: EchoConfig) -> WorkerDelivery[dict[str, Any]]:
        return WorkerDelivery(
            {
                "behaviour": config.behaviour,
                "exit_code": config.exit_code,
                "rollouts": str(run.rollouts),
                "note_path": config.note_path,
                "seconds": config.seconds,
            }
        )
