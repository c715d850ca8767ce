"""What a worker reported, as the export's result: its typed keys become the result's fields,
a stop signal or a time limit says what became of the remote run, and the worker's secrets are
scrubbed from whatever it said (:mod:`.delivery` runs the worker; this reads its outcome)."""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, final

from evalexport.interrupts import signal_name
from evalexport.results import ExitCode, ExportResult, ExportStatus
from evalexport.workers.protocol import WorkerResult

if TYPE_CHECKING:
    from evalexport.isolation.launcher import WorkerOutcome

__all__ = ["ReadBack", "Reading", "read_worker_result", "scrubbed"]

logger = logging.getLogger("evalexport.worker")

ReadBack = Callable[[ExportResult, WorkerResult], ExportResult]
"""How an exporter refines what its worker reported: it gets the result as read from the
worker's typed keys, and the worker's own :class:`~evalexport.workers.protocol.WorkerResult`."""


@final
@dataclass(frozen=True)
class Reading:
    """What a worker's outcome means for the export of ``exporter``."""

    exporter: str
    run_dir: str
    environment: Path
    more_time: str

    def failed(self, message: str, **details: Any) -> ExportResult:
        """The export failed, saying ``message``."""
        return ExportResult.failed(self.exporter, self.run_dir, message, **details)

    def of(self, outcome: WorkerOutcome, read_back: ReadBack | None) -> ExportResult:
        """The export's result from the worker's ``outcome``: what it reported, read back by
        the exporter (``read_back``), or why it reported nothing (a stop signal, its time
        limit, an exit without a result)."""
        for line in outcome.log_tail().splitlines() if outcome.result is None else []:
            logger.debug("%s worker: %s", self.exporter, line)
        if outcome.interrupted_by is not None:
            return self._interrupted(outcome, read_back)
        if outcome.timed_out:
            said = str(outcome.result.get("message", "")) if outcome.result else ""
            return self.failed(
                f"The {self.exporter} worker exceeded its time limit of "
                f"{outcome.time_limit:g} s and was stopped. {said + ' ' if said else ''}"
                f"{self.more_time}",
                environment=str(self.environment),
            )
        if outcome.result is None:
            return self.failed(
                f"The {self.exporter} worker {outcome.describe_exit()} without writing a "
                f"result. Its output ends with:\n{outcome.log_tail() or '(nothing)'}",
                worker_exit_code=outcome.exit_code,
                environment=str(self.environment),
            )
        return self._reported(outcome.result, read_back)

    def _reported(self, reported: WorkerResult, read_back: ReadBack | None) -> ExportResult:
        try:
            result = _result_from(self.exporter, self.run_dir, self.environment, reported)
        except (KeyError, TypeError, ValueError) as error:  # pydantic's ValidationError too
            return self.failed(
                f"The {self.exporter} worker wrote an invalid result ({error}): {reported!r}"
            )
        return read_back(result, reported) if read_back is not None else result

    def _interrupted(self, outcome: WorkerOutcome, read_back: ReadBack | None) -> ExportResult:
        """A stop signal arrived while the worker ran: the export failed with ``128 + signal``,
        unless the worker had already finished (then what it did stands, marker and all)."""
        from evalexport.isolation.launcher import GRACE_SECONDS

        assert outcome.interrupted_by is not None
        stopped_by = signal_name(outcome.interrupted_by)
        if outcome.result is not None and outcome.result.get("status") != "failed":
            logger.warning(
                "%s arrived after the %s export had finished; the export stands",
                stopped_by,
                self.exporter,
            )
            return self._reported(outcome.result, read_back)
        if outcome.result is not None:
            what = str(outcome.result.get("message", ""))
        elif outcome.exit_code == -signal.SIGKILL:
            what = (
                f"The worker did not stop within {GRACE_SECONDS:g} s and was killed; "
                "its remote run may be left unfinished."
            )
        else:  # it stopped at once (loading its SDK, say), before it could say how far it got
            what = (
                f"The worker stopped ({outcome.describe_exit()}) before it reported; a remote "
                "run it had made, if any, is ended by the next export of this run."
            )
        return ExportResult.failed(
            self.exporter,
            self.run_dir,
            f"Interrupted by {stopped_by}: the {self.exporter} export was stopped before it "
            f"finished and no export marker was written. {what}".strip(),
            exit_code=ExitCode.for_signal(outcome.interrupted_by),
            interrupted_by=stopped_by,
        )


def read_worker_result(
    exporter: str, run_dir: str, environment: Path, reported: WorkerResult
) -> ExportResult:
    """The export's result from its worker's: the typed keys become the result's fields (its
    notices, the message's end and :attr:`~evalexport.results.ExportResult.notices`; the
    environment that ran); ``details`` stay for people."""
    try:
        return _result_from(exporter, run_dir, environment, reported)
    except (KeyError, TypeError, ValueError) as error:  # pydantic's ValidationError too
        return ExportResult.failed(
            exporter,
            run_dir,
            f"The {exporter} worker wrote an invalid result ({error}): {reported!r}",
        )


def _result_from(
    exporter: str, run_dir: str, environment: Path, reported: WorkerResult
) -> ExportResult:
    typed, details = _typed_keys(reported)
    run_id = typed.get("run_id")
    result = ExportResult(
        exporter=exporter,
        status=ExportStatus(reported["status"]),
        exit_code=ExitCode(int(reported["exit_code"])),
        message=str(reported["message"]),
        run_dir=run_dir,
        run_id=None if run_id is None else str(run_id),
        skip_reason=typed.get("skip_reason"),
        receipts=typed["receipts"],
        existing_run_ids=typed.get("existing_run_ids") or [],
        environment=str(environment),
        details=details,
    )
    # The result says them, not a log line beside it (a second copy, a big table).
    return result.noted([str(notice) for notice in typed.get("notices") or []])


_TYPED_KEYS: Final = ("run_id", "skip_reason", "notices", "receipts", "existing_run_ids")
"""The keys of a worker's result that become fields of the ``ExportResult`` (notices: its
message's end)."""


def _typed_keys(reported: WorkerResult) -> tuple[dict[str, Any], dict[str, object]]:
    """``(typed keys, details)`` of a worker's result. A worker body written before the typed
    keys existed (plugin API 2) put ``run_id``, ``skip_reason`` and ``notices`` in
    ``details``: they are read from there, with a notice in the log."""
    details = dict(reported["details"])
    typed: dict[str, Any] = {key: reported.get(key) for key in _TYPED_KEYS if key in reported}
    smuggled = sorted(key for key in ("run_id", "skip_reason", "notices") if key in details)
    if smuggled:
        logger.info(
            "the worker returns %s in details, which is deprecated: return them with "
            "result(..., run_id=..., skip_reason=..., notices=[...], receipts={...})",
            ", ".join(smuggled),
        )
        for key in smuggled:
            typed.setdefault(key, details.pop(key))
    receipts: Mapping[str, object] = typed.get("receipts") or {}
    typed["receipts"] = {str(k): str(v) for k, v in receipts.items()}
    return typed, details


def scrubbed(result: ExportResult, secrets: list[str]) -> ExportResult:
    """``result`` with the worker's secrets masked in its message and details."""
    secrets = [secret for secret in secrets if len(secret) >= 8]
    if not secrets:
        return result
    from evalexport.masking import scrub_text, scrub_value

    return result.model_copy(
        update={
            "message": scrub_text(result.message, also=secrets),
            "details": scrub_value(result.details, also=secrets),
        }
    )
