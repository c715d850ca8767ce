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

    def __post_init__(self) -> None:
        """Each field as its type says, or a ``TypeError`` naming it, raised as the exporter
        resolves its target (not after an environment is built from ``"six"`` read as
        ``s``, ``i``, ``x``). A list of requirements and a local store given as a text are
        taken as the tuple and the path they mean."""
        requirements = self.requirements
        if isinstance(requirements, str | bytes) or not isinstance(requirements, tuple | list):
            raise TypeError(
                "WorkerSpec(requirements=...) takes a tuple of requirements, "
                f"('mlflow>=2.10',), not {requirements!r}"
            )
        if not all(isinstance(each, str) and each.strip() for each in requirements):
            raise TypeError(
                f"WorkerSpec(requirements=...) holds a requirement that is no text: {requirements!r}"
            )
        object.__setattr__(self, "requirements", tuple(requirements))
        limit = self.time_limit
        if isinstance(limit, bool) or not isinstance(limit, int | float) or not limit > 0:
            raise TypeError(f"WorkerSpec(time_limit=...) takes seconds above 0, not {limit!r}")
        for name in ("environment", "secrets"):
            given = getattr(self, name)
            if not isinstance(given, Mapping) or not all(
                isinstance(key, str) and isinstance(value, str) for key, value in given.items()
            ):
                shown = type(given).__name__ if name == "secrets" else repr(given)
                raise TypeError(
                    f"WorkerSpec({name}=...) takes a mapping of variable names to texts, "
                    f"not {shown}"
                )
        if isinstance(self.local_store, str):
            object.__setattr__(self, "local_store", Path(self.local_store))
        elif self.local_store is not None and not isinstance(self.local_store, Path):
            raise TypeError(f"WorkerSpec(local_store=...) takes a path, not {self.local_store!r}")


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

    def __post_init__(self) -> None:
        """The payload a mapping, ``read_back`` callable, ``addresses`` texts (any collection
        of them is taken as the frozenset it means), or a ``TypeError`` naming the field."""
        if not isinstance(self.payload, Mapping):
            raise TypeError(
                "WorkerDelivery(payload=...) takes a mapping (the worker body's payload, a "
                f"TypedDict), not {type(self.payload).__name__}"
            )
        if self.read_back is not None and not callable(self.read_back):
            raise TypeError(
                f"WorkerDelivery(read_back=...) takes a function, not {self.read_back!r}"
            )
        addresses = self.addresses
        if isinstance(addresses, str) or not all(isinstance(key, str) for key in addresses):
            raise TypeError(
                f"WorkerDelivery(addresses=...) takes the payload's keys, not {addresses!r}"
            )
        object.__setattr__(self, "addresses", frozenset(addresses))
