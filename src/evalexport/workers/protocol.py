"""The worker protocol, in one place: what each worker body receives, what every worker
returns, and the exit codes a worker may report (SPEC §3.4).

Both sides import this module: the exporters build payloads of these types, the bodies read
them, and ``mypy --strict`` checks that they agree. Standard library only: the launcher ships a
copy beside the runner and the body, and the runner makes it importable under this same name
inside an SDK's environment, where evalexport is not installed.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "FAILED",
    "NO_VERDICT",
    "REFUSED",
    "SUCCEEDED",
    "EvalRDLPayload",
    "ManifestPayload",
    "MlflowBatch",
    "MlflowPayload",
    "RunnerRequest",
    "Status",
    "WandbPayload",
    "WorkerResult",
    "result",
]

SUCCEEDED = 0
FAILED = 1
NO_VERDICT = 3
"""Stored by the service without a verdict before the timeout (EvalRDL)."""
REFUSED = 4
"""Refused by the service (EvalRDL's intake)."""

Status = Literal["succeeded", "skipped", "failed"]


class WorkerResult(TypedDict):
    """What every worker returns, and the runner writes to the result file. ``run_id`` and
    ``skip_reason`` in ``details`` become the ``ExportResult`` fields of those names."""

    status: Status
    exit_code: int
    message: str
    details: dict[str, Any]


def result(status: Status, exit_code: int, message: str, **details: Any) -> WorkerResult:
    return {"status": status, "exit_code": exit_code, "message": message, "details": details}


class RunnerRequest(TypedDict):
    """The one JSON line the launcher writes to the runner's stdin."""

    body: str
    payload: Any
    progress_fd: int | None
    scratch: list[str]


class EvalRDLPayload(TypedDict):
    run_dir: str
    label: str | None
    tags: list[str]
    meta: dict[str, str]
    parallel: int
    wait: bool
    timeout: float
    url: str


class MlflowBatch(TypedDict):
    """One ``log_batch`` call, within MLflow's limits."""

    metrics: dict[str, float]
    params: dict[str, str]
    tags: dict[str, str]


class MlflowPayload(TypedDict):
    tracking_uri: str
    artifact_location: str | None
    experiment_name: str
    run_name: str
    run_tags: dict[str, str]
    batches: list[MlflowBatch]
    artifacts: list[str]


class WandbPayload(TypedDict):
    project: str
    entity: str | None
    name: str
    mode: str
    dir: str
    config: dict[str, Any]
    summary: dict[str, Any]
    table_key: str
    tags: list[str]
    rollouts_table: str | None


class ManifestPayload(TypedDict):
    """``evalexport contract manifest --requirement``: extract inside an SDK's environment."""

    sdk: str
    surface: list[str]
    environment: NotRequired[dict[str, str]]
