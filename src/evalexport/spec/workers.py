"""The worker an SDK exporter describes, and what it sends through it (SPEC §3.4): the plugin
API's own types, defined here, where plugins import them from (``evalexport.spec``).

An exporter whose SDK must not enter the user's environment names, when it resolves its target,
the worker that will deliver (:class:`WorkerSpec`: requirements, time limit, environment, local
store, secrets), and returns from ``deliver`` a :class:`WorkerDelivery`: the payload its worker
body receives, and how the body's result is read back. It never runs a process itself, as an
httpx transport never opens a socket for the client that holds it. The pipeline hands both to
the one worker lifecycle (:mod:`evalexport.isolation.delivery`), which reads them through its
own protocols and knows nothing of the spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Generic, final

from typing_extensions import TypeVar

from evalexport.isolation.worker_results import ReadBack

__all__ = ["DEFAULT_TIME_LIMIT", "WorkerDelivery", "WorkerSecretsError", "WorkerSpec"]

DEFAULT_TIME_LIMIT: Final = 3600.0
"""Seconds a worker may run unless its exporter says otherwise (SPEC §3.4)."""

PayloadT = TypeVar("PayloadT", bound=Mapping[str, Any], default=Mapping[str, Any])
"""A worker body's payload type: a ``TypedDict`` defined beside the body's ``run``."""


class WorkerSecretsError(Exception):
    """The secrets the worker needs could not be had (a credential helper failed or did not
    answer in time); the message says why and what to set instead."""


@final
@dataclass(frozen=True)
class WorkerSpec:
    """The worker of one export, resolved with its target: everything it needs before the
    run is read, so that it can start while the run is read."""

    requirements: tuple[str, ...]
    """The SDK's requirements: the environment is built once per list (and Python)."""
    time_limit: float = DEFAULT_TIME_LIMIT
    """Seconds before the worker is stopped (``$EVALEXPORT_WORKER_TIME_LIMIT`` overrides)."""
    environment: Mapping[str, str] = field(default_factory=dict)
    """Environment variables set for the worker only (never secrets: see ``secrets``), such as
    the SDK's timeouts and retries: added to what it is given of the caller's environment
    (:mod:`evalexport.isolation.variables`), replacing a variable of the same name."""
    local_store: Path | None = None
    """A local store file the worker writes into, which other exports may share (an embedded
    MLflow database): workers writing into one store run one at a time."""
    answers_dry_runs: bool = False
    """The worker body takes a dry run's payload (``dry_run`` true in it) and answers what an
    export would find at the target, changing nothing: a dry run asks it when the
    environment is built (a dry run builds none)."""
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Environment variables for the worker that are secrets (a token given as an option, or
    asked of a credential helper once): scrubbed from whatever the worker reports, never
    written to disk, never shown."""


@final
@dataclass(frozen=True)
class WorkerDelivery(Generic[PayloadT]):
    """What an SDK exporter's ``deliver`` returns: its worker body's payload (never a token:
    those are the target's ``worker.secrets``), and how the body's result is read back."""

    payload: PayloadT
    read_back: ReadBack | None = None
    """Called with the result as read and the worker's own; returns the export's result
    (a sync command added, a detail the exporter reads off the worker's details)."""
    addresses: frozenset[str] = frozenset()
    """The payload's keys the worker needs as they are: where to send (a tracking URI, its
    password in it) and which local files to read. The pipeline passes every other value
    through the export's egress gate (:meth:`evalexport.egress.Egress.payload`), so what the
    worker sends is masked; an address is never content."""
