"""The tinytrack worker body: stdlib plus the tinytrack SDK, run in its own environment."""

from __future__ import annotations

from typing import Any, TypedDict


class TinyTrackPayload(TypedDict):
    project: str
    name: str
    metrics: dict[str, float]


def run(payload: TinyTrackPayload) -> dict[str, Any]:
    import tinytrack

    client = tinytrack.Client(payload["project"])
    started = client.start(payload["name"])
    client.log(started, metrics=payload["metrics"], step=0)
    return {
        "status": "succeeded",
        "exit_code": 0,
        "message": f"logged to tinytrack run {started.run_id}",
        "details": {},
        "run_id": started.run_id,
    }
