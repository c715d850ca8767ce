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
    "FINGERPRINT_TAG",
    "NO_VERDICT",
    "REFUSED",
    "SUCCEEDED",
    "USAGE",
    "EvalRDLPayload",
    "ManifestPayload",
    "MlflowBatch",
    "MlflowPayload",
    "RunnerRequest",
    "Status",
    "WandbPayload",
    "WorkerResult",
    "result",
    "worker_result_from",
]

# The exit codes of the CLI and of every worker, defined here once: ``results.ExitCode`` and the
# CLI take their values from these names.
SUCCEEDED = 0
FAILED = 1
USAGE = 2
"""Unknown exporter, unknown or invalid option or setting (the CLI's, never a worker's)."""
NO_VERDICT = 3
"""Stored by the service without a verdict before the timeout (EvalRDL)."""
REFUSED = 4
"""Refused by the service (EvalRDL's intake)."""

FINGERPRINT_TAG = "evalexport.fingerprint"
"""The remote run's tag (MLflow) holding the run's fingerprint, as its export marker does."""

Status = Literal["succeeded", "skipped", "failed"]
STATUSES: tuple[Status, ...] = ("succeeded", "skipped", "failed")


class WorkerResult(TypedDict):
    """What every worker returns, and the runner writes to the result file.

    What the parent reads back has a key of its own, and becomes the ``ExportResult`` field of
    that name; ``details`` is for people only.
    """

    status: Status
    exit_code: int
    message: str
    details: dict[str, Any]
    run_id: NotRequired[str | None]
    """The remote run made, or found already made."""
    skip_reason: NotRequired[str | None]
    """Why a skipped export did nothing (``SkipReason``'s values)."""
    notices: NotRequired[list[str]]
    """Warnings for the user, logged by the parent."""
    receipts: NotRequired[dict[str, str]]
    """Identifiers the service handed back that grant nothing (EvalRDL's ``upload_token``)."""
    stopped_by: NotRequired[str]
    """The stop signal's name, or ``parent died``, when the worker was stopped."""


_REQUIRED_KEYS = frozenset({"status", "exit_code", "message"})
_OPTIONAL_KEYS = frozenset(WorkerResult.__annotations__) - _REQUIRED_KEYS


def result(
    status: Status,
    exit_code: int,
    message: str,
    *,
    run_id: str | None = None,
    skip_reason: str | None = None,
    notices: list[str] | None = None,
    receipts: dict[str, str] | None = None,
    **details: Any,
) -> WorkerResult:
    """A worker's result; keyword arguments other than the typed keys go to ``details``."""
    built: WorkerResult = {
        "status": status,
        "exit_code": exit_code,
        "message": message,
        "details": details,
    }
    if run_id is not None:
        built["run_id"] = run_id
    if skip_reason is not None:
        built["skip_reason"] = skip_reason
    if notices:
        built["notices"] = list(notices)
    if receipts:
        built["receipts"] = dict(receipts)
    return built


def worker_result_from(data: object) -> WorkerResult:
    """``data`` checked as a :class:`WorkerResult`: a misspelled or unknown key, a missing one
    or a value of the wrong type raises :class:`ValueError` naming it. ``details`` may be left
    out (it is then empty)."""
    if not isinstance(data, dict):
        raise ValueError(f"a worker result is a JSON object, got {type(data).__name__}")
    if unknown := sorted(set(data) - _REQUIRED_KEYS - _OPTIONAL_KEYS):
        raise ValueError(
            f"unknown key(s) {', '.join(map(repr, unknown))} in a worker result; its keys are "
            f"{', '.join(sorted(_REQUIRED_KEYS | _OPTIONAL_KEYS))}"
        )
    if missing := sorted(_REQUIRED_KEYS - set(data)):
        raise ValueError(f"a worker result needs {', '.join(map(repr, missing))}")
    problems = []
    if data["status"] not in STATUSES:
        problems.append(f"status {data['status']!r} is not one of {', '.join(STATUSES)}")
    if not isinstance(data["exit_code"], int) or isinstance(data["exit_code"], bool):
        problems.append(f"exit_code {data['exit_code']!r} is not an integer")
    kinds: dict[str, tuple[type, ...]] = {
        "message": (str,),
        "details": (dict,),
        "run_id": (str, type(None)),
        "skip_reason": (str, type(None)),
        "notices": (list,),
        "receipts": (dict,),
        "stopped_by": (str,),
    }
    for key, allowed in kinds.items():
        if key in data and not isinstance(data[key], allowed):
            problems.append(f"{key} {data[key]!r} is a {type(data[key]).__name__}")
    if not all(isinstance(notice, str) for notice in data.get("notices", [])):
        problems.append("notices are not all text")
    if not all(isinstance(v, str) for v in data.get("receipts", {}).values()):
        problems.append("receipts are not all text")
    if problems:
        raise ValueError("invalid worker result: " + "; ".join(problems))
    checked: WorkerResult = {**data, "details": data.get("details", {})}  # type: ignore[typeddict-item]
    return checked


class RunnerRequest(TypedDict):
    """The one JSON line the launcher writes to the runner's stdin."""

    body: str
    payload: Any
    progress_fd: int | None
    scratch: list[str]


class EvalRDLPayload(TypedDict):
    """What the EvalRDL worker receives: the directory to upload and the upload's options."""

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
    """What the MLflow worker receives: where to log, names, tags, the batches and the artifact
    files."""

    tracking_uri: str
    artifact_location: str | None
    experiment_name: str
    run_name: str
    run_tags: dict[str, str]
    batches: list[MlflowBatch]
    artifacts: list[str]


class WandbPayload(TypedDict):
    """What the W&B worker receives: project, names, mode, config, summary and the table file."""

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
