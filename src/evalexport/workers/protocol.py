"""The worker protocol, the wire only: the runner's request, what every worker returns, and
the exit codes (SPEC §3.4).

Both sides import this module, and ``mypy --strict`` checks that they agree. Each worker body
defines its own payload type beside its ``run`` (``MlflowPayload`` in ``backends/mlflow/worker.py``),
which its exporter imports from there. Standard library only: the launcher ships a
copy beside the runner and the body, and the runner makes it importable under this same name
inside an SDK's environment, where evalexport is not installed.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from evalexport.workers.exit_codes import ExitCode

__all__ = [
    "FAILED",
    "NO_VERDICT",
    "REFUSED",
    "SUCCEEDED",
    "USAGE",
    "WORKER_BODY_VARIABLE",
    "ExitCode",
    "RunnerRequest",
    "Status",
    "WorkerResult",
    "already_held",
    "error_text",
    "named_option",
    "no_progress",
    "options_given_as_tokens",
    "result",
    "second_copy",
    "silent",
    "skipped_as_exported",
    "skipped_as_held",
    "unfinished",
    "worker_result_from",
]


WORKER_BODY_VARIABLE = "EVALEXPORT_WORKER_BODY"
"""In a worker's environment: the source file of its body (the worker runs a copy), so that a
fake SDK's recorder names the body's own lines (``evalexport.testing.recording``)."""


# The names of plugin API 2's worker bodies (``protocol.FAILED``): kept, they are ExitCode's.
SUCCEEDED = ExitCode.OK
FAILED = ExitCode.FAILED
USAGE = ExitCode.USAGE
NO_VERDICT = ExitCode.NO_VERDICT
REFUSED = ExitCode.REFUSED

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
    existing_run_ids: NotRequired[list[str]]
    """The target's runs of this run's data found before the export (by their tag)."""
    stopped_by: NotRequired[str]
    """The stop signal's name, or ``parent died``, when the worker was stopped."""
    output: NotRequired[dict[str, Any]]
    """What a worker made for the parent to use (a manifest of an SDK's surface), as JSON."""


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
    existing_run_ids: list[str] | None = None,
    output: dict[str, Any] | None = None,
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
    if existing_run_ids:
        built["existing_run_ids"] = [str(run) for run in existing_run_ids]
    if output is not None:
        built["output"] = output
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
        "existing_run_ids": (list,),
        "stopped_by": (str,),
        "output": (dict,),
    }
    for key, allowed in kinds.items():
        if key in data and not isinstance(data[key], allowed):
            problems.append(f"{key} {data[key]!r} is a {type(data[key]).__name__}")
    if not all(isinstance(notice, str) for notice in data.get("notices", [])):
        problems.append("notices are not all text")
    if not all(isinstance(run, str) for run in data.get("existing_run_ids", [])):
        problems.append("existing_run_ids are not all text")
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
    report_fd: int | None
    """The pipe the runner writes ``progress DONE TOTAL`` lines and, last, ``result <json>``
    to."""
    scratch: list[str]
    options_as_tokens: bool
    """Whether who asked for the export gives options as ``+key=value`` tokens (the command
    line) rather than keyword arguments or a plan's keys: what :func:`named_option` writes."""


_options_as_tokens = True


def options_given_as_tokens(tokens: bool) -> None:
    """The runner's, before the body runs: how who asked for the export gives its options."""
    global _options_as_tokens
    _options_as_tokens = tokens


def named_option(name: str, value: str | None = None) -> str:
    """In a worker body: the option ``name`` (given ``value``) as who asked for the export
    gives it, as ``evalexport.callers.named_option`` names it in the parent: ``+name=value``
    on a command line, ``name=value`` as a keyword argument or a plan's key."""
    named = f"+{name}" if _options_as_tokens else name
    return named if value is None else f"{named}={value}"


def already_held(where: str, existing: list[str], *, skip: bool) -> str:
    """In a worker body: ``where`` (``W&B project team/aime24``) already holds ``existing``
    runs of this run's data (its fingerprint), so the export skips as asked (``skip``), or
    makes a second copy and says how to skip."""
    said = (
        f"{where} already holds run {', '.join(existing)} of this run's data (the same fingerprint)"
    )
    if skip:
        return f"{said}; skipped, as {named_option('skip_existing')} asks"
    return (
        f"{said}; exporting a second copy. Add {named_option('skip_existing', 'true')} to skip "
        "instead"
    )


def second_copy(where: str, existing: list[str]) -> str:
    """In a worker body: the notice of an export that adds a second copy of this run's data
    to ``where``, which holds ``existing`` runs of it, because ``second_copy`` asks."""
    return (
        f"{where} already holds run {', '.join(existing)} of this run's data (the same "
        f"fingerprint); exporting a second copy, as {named_option('second_copy')} asks"
    )


def skipped_as_exported(
    where: str, existing: list[str], notices: list[str] | None = None
) -> WorkerResult:
    """In a worker body: the skip of a tracking export whose data ``where`` holds finished
    already (``existing`` runs): the target holds this run, once; a second copy is asked for
    with ``second_copy``. The marker records it, as it records an export."""
    return result(
        "skipped",
        SUCCEEDED,
        f"{where} already holds run {', '.join(existing)} of this run's data (the same "
        f"fingerprint); skipped ({named_option('second_copy', 'true')} exports another copy)",
        run_id=existing[0],
        skip_reason="found at target",
        existing_run_ids=existing,
        notices=notices,
    )


def unfinished(run: str, state: str) -> str:
    """In a worker body: a remote ``run`` (``MLflow run ID``) of this run's data that an earlier
    export did not finish, and its ``state``, as a notice names it."""
    return f"an earlier export of this run that did not finish, {run} ({state})"


def skipped_as_held(
    where: str, existing: list[str], notices: list[str] | None = None
) -> WorkerResult:
    """In a worker body: the skip of an export whose data ``where`` already holds, with what
    else the body found or did there (``notices``)."""
    return result(
        "skipped",
        SUCCEEDED,
        already_held(where, existing, skip=True),
        run_id=existing[0],
        skip_reason="found at target",
        existing_run_ids=existing,
        notices=notices,
    )


def error_text(error: BaseException, limit: int = 600) -> str:
    """In a worker body: an SDK's error on one line, cut to ``limit`` characters (``...``
    says where), as a message can carry it."""
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[:limit] + " ..."


def no_progress(done: int, total: int) -> None:
    """A body's ``progress`` when none is given (a body called directly, as tests do)."""


def silent(text: str) -> None:
    """A body's ``say`` when none is given: what it would say is not said."""
