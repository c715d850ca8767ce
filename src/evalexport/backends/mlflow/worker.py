"""MLflow worker body: logs one finished run with ``MlflowClient`` (SPEC §3.6).

Runs inside the mlflow environment, standard library plus the SDK only. Everything it logs was
prepared by the parent: sanitized names, batches within MLflow's limits, artifact files in a
scratch directory. The token, if any, reaches MLflow's REST client as MLFLOW_TRACKING_TOKEN.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import json
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Required, TypedDict, cast

from evalexport.workers.protocol import (
    FAILED,
    SUCCEEDED,
    ExitCode,
    WorkerResult,
    error_text,
    named_option,
    no_progress,
    result,
    second_copy,
    silent,
    skipped_as_exported,
    skipped_as_held,
)

SURFACE: Final = {
    "sdk": "mlflow",
    "paths": (
        "mlflow.tracking.MlflowClient",
        "mlflow.tracking.MlflowClient.get_experiment_by_name",
        "mlflow.tracking.MlflowClient.get_experiment",
        "mlflow.tracking.MlflowClient.create_experiment",
        "mlflow.tracking.MlflowClient.set_experiment_tag",
        "mlflow.tracking.MlflowClient.create_run",
        "mlflow.tracking.MlflowClient.get_run",
        "mlflow.tracking.MlflowClient.update_run",
        "mlflow.tracking.MlflowClient.set_tag",
        "mlflow.tracking.MlflowClient.log_batch",
        "mlflow.tracking.MlflowClient.log_artifact",
        "mlflow.tracking.MlflowClient.set_terminated",
        "mlflow.tracking.MlflowClient.search_runs",
        "mlflow.tracking.MlflowClient.search_traces",
        "mlflow.tracking.MlflowClient.start_trace",
        "mlflow.tracking.MlflowClient.start_span",
        "mlflow.tracking.MlflowClient.end_span",
        "mlflow.tracking.MlflowClient.end_trace",
        "mlflow.tracking.MlflowClient.link_traces_to_run",
        "mlflow.tracing.client.TracingClient",
        "mlflow.tracing.client.TracingClient.log_spans",
        "mlflow.log_feedback",
        "mlflow.entities.AssessmentSource",
        "mlflow.entities.Span.from_dict",
        "mlflow.set_tracking_uri",
        "mlflow.entities.Metric",
        "mlflow.entities.Param",
        "mlflow.entities.RunTag",
        "mlflow.exceptions.MlflowException",
    ),
    "reads": {
        "mlflow.tracking.MlflowClient": (),
        "mlflow.entities.Experiment": ("experiment_id", "tags"),
        "mlflow.entities.Run": ("info", "data"),
        "mlflow.entities.RunInfo": ("run_id", "status", "run_name", "lifecycle_stage"),
        "mlflow.entities.RunData": ("tags", "params", "metrics"),
        "mlflow.entities.Trace": ("info",),
        "mlflow.entities.TraceInfo": ("trace_id", "tags", "assessments"),
        "mlflow.entities.Assessment": ("name",),
        "mlflow.store.entities.PagedList": ("token",),
        "mlflow.entities.Metric": (),
        "mlflow.entities.Param": (),
        "mlflow.entities.RunTag": (),
        "mlflow.exceptions.MlflowException": (),
        "mlflow.entities.Span": ("trace_id", "span_id"),
    },
    # Traces (+traces=true) are logged from MLflow 3 on; traces_refusal() says so before.
    "since": {
        "mlflow.tracking.MlflowClient.start_trace": "3",
        "mlflow.tracking.MlflowClient.start_span": "3",
        "mlflow.tracking.MlflowClient.end_span": "3",
        "mlflow.tracking.MlflowClient.end_trace": "3",
        # A resumed run's traces are looked up from MLflow 3 on (_traces_present).
        "mlflow.tracking.MlflowClient.search_traces": "3",
        "mlflow.entities.Trace": "3",
        "mlflow.entities.TraceInfo": "3",
        "mlflow.entities.Assessment": "3",
        # Span batches (MLflow's own OTLP ingestion) from 3.4 on; _SpanBatches.of checks.
        "mlflow.tracking.MlflowClient.link_traces_to_run": "3.4",
        "mlflow.tracing.client.TracingClient": "3.4",
        "mlflow.tracing.client.TracingClient.log_spans": "3.4",
        "mlflow.log_feedback": "3.4",
        "mlflow.entities.AssessmentSource": "3.4",
        "mlflow.entities.Span.from_dict": "3.4",
        "mlflow.set_tracking_uri": "3",
        "mlflow.entities.Span": "3",
    },
    "switch": "runs another MLflow version of the matrix",
    "companions": ("sqlalchemy<2.1",),  # MLflow 2.x clients break on SQLAlchemy 2.1
}
"""What this body calls, builds and catches (``paths``) and reads back (``reads``) of its SDK
(``Surface.declared``: its exporter's ``sdk.contract``): plain data, so the pytest plugin knows the SDK without importing the
exporter. Keep it in step with the code below; the contract checks hold the fakes and the
real releases to it."""

LIVE_RUN_TAG: Final = "evalexport.live_run_id"
"""The tag that names the run NeMo Gym's live exporter made of the same evaluation."""

WARM_UP = ("mlflow.entities", "mlflow.tracking")
"""Imported by the runner before the payload arrives (while the parent reads the run)."""


class MlflowBatch(TypedDict):
    """One ``log_batch`` call, within MLflow's limits."""

    metrics: dict[str, float]
    params: dict[str, str]
    tags: dict[str, str]


class MlflowSpan(TypedDict):
    """One span of a rollout's trace: a model turn (``LLM``) or a tool call (``TOOL``)."""

    name: str
    type: str
    inputs: dict[str, object]
    outputs: dict[str, object]
    start_ns: int
    end_ns: int


class MlflowTrace(TypedDict):
    """One rollout as a trace (a line of the payload's ``traces`` file): its root span's
    name, inputs, outputs and attributes, its tags and its spans in order."""

    name: str
    tags: dict[str, str]
    inputs: dict[str, object]
    outputs: dict[str, object]
    attributes: dict[str, object]
    start_ns: int
    end_ns: int
    spans: list[MlflowSpan]
    reward: float | None
    """The rollout's reward, logged as the trace's ``reward`` feedback (``None``: none)."""


class MlflowLiveRun(TypedDict):
    """Where the evaluation logged live to MLflow, as its config says (NeMo Gym's live
    exporter: a run of this name in this experiment)."""

    experiment: str
    run_name: str


class _MlflowPayloadOptions(TypedDict, total=False):
    """The keys of an MLflow payload that only some exports send."""

    live_run: MlflowLiveRun
    """The run's config says the evaluation also logged live to MLflow: its run, where the
    target holds it, is named in the result (this export is a second run of the data)."""

    traces: str
    """With ``+traces=true``: a file of one :class:`MlflowTrace` JSON line a rollout, each
    logged as a trace linked to the run (``""`` in a dry run, which only checks that this
    MLflow can)."""
    traces_count: int
    """How many lines ``traces`` holds: each is a step of the worker's progress."""


class MlflowPayload(_MlflowPayloadOptions):
    """What the MLflow worker receives: where to log, names, tags, the batches and the artifact
    files."""

    tracking_uri: str
    fingerprint_tag: str
    """The key of ``run_tags`` that holds the run's fingerprint."""
    dry_run: bool
    """Only ask the target what an export would find there (runs of this run's data); create
    nothing, not even the experiment."""
    lease_seconds: float
    """How long a run's lease (:data:`LEASE_TAG`) holds without being renewed: an export
    renews its own six times as often; one another host holds that has not changed for this
    long is taken to have lapsed (``$EVALEXPORT_LEASE_SECONDS``)."""
    wait_seconds: float
    """How long the export waits for another export that holds a run of this data, before it
    fails naming it (within the worker's time limit)."""
    skip_existing: bool
    """Skip, rather than wait or make a new run, when another export is making a run of this
    data or someone reopened a finished one."""
    second_copy: bool
    """Make a new run even where the experiment holds a finished run of this data (by
    default the export skips for it)."""
    artifact_location: str | None
    """Where a new experiment keeps its artifacts (``mlartifacts/`` beside an embedded store);
    ``None``: the server's choice."""
    store_directory: str | None
    """The directory of an embedded store: the worker works there, so that MLflow's own
    ``Default`` experiment, made with a new store, keeps its artifacts beside the store
    (``mlruns/``) rather than in the worker's scratch directory."""
    experiment_name: str
    run_name: str
    run_tags: dict[str, str]
    batches: list[MlflowBatch]
    artifacts: list[str]
    start_time_ms: int
    """When the evaluation began: the run's start (MLflow sorts runs by it)."""
    end_time_ms: int
    """When the evaluation ended: the run's end, and its metrics' timestamp."""


def _experiment_id(client: Any, name: str, artifact_location: str | None) -> str:
    from mlflow.exceptions import MlflowException

    experiment = client.get_experiment_by_name(name)
    if experiment is not None:
        return str(experiment.experiment_id)
    try:
        return str(client.create_experiment(name, artifact_location=artifact_location))
    except MlflowException:  # created concurrently by another export
        experiment = client.get_experiment_by_name(name)
        if experiment is None:
            raise
        return str(experiment.experiment_id)


def _runs_of(client: Any, experiment_id: str, payload: MlflowPayload) -> list[Any]:
    """The experiment's active runs of this same run's data (its fingerprint tag), with their
    params, metrics and tags: finished exports, exports under way or stopped, and any run
    someone else tagged so. A deleted run is not among them."""
    tag = payload["fingerprint_tag"]
    return list(
        client.search_runs(
            [experiment_id],
            filter_string=f"tags.`{tag}` = '{payload['run_tags'][tag]}'",
            max_results=1000,
        )
    )


LEASE_TAG: Final = "evalexport.lease"
"""The run's tag that says which export holds it (docs/reliability.md, "Nothing lost"): the
export's id, host and process, the status it left the run in and a heartbeat it renews while
it works. A run without one, or whose status or content is not what its lease says, is not
evalexport's own unfinished work and is never touched."""
CLAIM_TAG: Final = "evalexport.claim"
"""The experiment's tag an export takes, for a moment, before it makes a run of its data or
takes over one (:class:`_Claim`), so that two exports never make two runs of one run."""
RUN_TRACE_TAG: Final = "evalexport.run"
"""The tag of each trace naming the run it was logged for, linked yet or not."""
_PER_EXPORT_TAGS: Final = frozenset(
    {"evalexport.exported_at", "evalexport.rollouts", "evalexport.version", LIVE_RUN_TAG}
)
"""Tags each export sets its own way: a run another export started keeps that export's."""
_MLFLOW_TAGS: Final = frozenset({"mlflow.runName", "mlflow.user"})
"""Tags MLflow itself gives a run the export makes (its name: checked against the lease)."""
_HOST: Final = socket.gethostname()


def _place() -> str:
    """Where this process's id means this process: the machine's boot and its process-id
    namespace (two containers of one host, or two hosts of one name, are two places); ``""``
    where they cannot be told (no ``/proc``): a lease's process is then never looked for."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = str(Path("/proc/self/ns/pid").readlink())
    except OSError:
        return ""
    return f"{_HOST}/{boot}/{namespace}"


_PLACE: Final = _place()


class LeaseRecord(TypedDict, total=False):
    """A run's lease (:data:`LEASE_TAG`, JSON): which export writes the run, from where, and
    what it last said of it; an experiment's claim (:data:`CLAIM_TAG`) is one too."""

    export: Required[str]
    """The export's own id (a UUID, new each export)."""
    created_by: Required[str]
    """The export that made the run (the first to hold it)."""
    host: Required[str]
    place: str
    """The machine and process namespace (:func:`_place`): a pid is read only there."""
    pid: Required[int]
    status: Required[str]
    """The status the export left the run in, or ``RUNNING`` while it writes."""
    next: str
    """The status it is about to set (written first, so a stop between the two is its own)."""
    beat: Required[int]
    at: str
    name: Required[str]
    """The run's name as the export made it."""
    attempt: str
    """A claim's attempt (:class:`_Claim`)."""
    released: bool
    """A claim let go."""


def _lease_of(run: Any) -> LeaseRecord | None:
    """The run's lease, or ``None`` when it has none that reads as one."""
    try:
        lease = json.loads(run.data.tags.get(LEASE_TAG, ""))
    except ValueError:
        return None
    needed = ("export", "created_by", "host", "pid", "status", "beat", "name")
    if not (isinstance(lease, dict) and all(key in lease for key in needed)):
        return None
    return cast(LeaseRecord, lease)  # JSON from a tag, its keys checked


def _holder(lease: LeaseRecord | None) -> str:
    """Who holds a lease, as a message names them."""
    if lease is None:
        return "another export"
    return (
        f"export {lease['export']} (process {lease['pid']} on {lease['host']}, renewed "
        f"{lease.get('at', 'at an unknown time')})"
    )


class _Expected:
    """What a run of this data holds when only evalexport wrote it: the payload's params,
    metrics and tags."""

    def __init__(self, payload: MlflowPayload) -> None:
        self.params: dict[str, str] = {}
        self.metrics: dict[str, float] = {}
        self.tags: dict[str, str] = dict(payload["run_tags"])
        for batch in payload["batches"]:
            self.params.update(batch["params"])
            self.metrics.update(batch["metrics"])
            self.tags.update(batch["tags"])

    def written_by_others(self, run: Any) -> str | None:
        """What of ``run`` someone else wrote (a param, metric or tag no export of this data
        writes, a name its lease does not record), or ``None``."""
        lease = _lease_of(run)
        if lease is not None and run.data.tags.get("mlflow.runName") != lease["name"]:
            return "it was renamed since its export made it"
        for key, value in run.data.params.items():
            if self.params.get(key) != value:
                return f"its param {key!r} is not one this export logs"
        for key, value in run.data.metrics.items():
            if key not in self.metrics or float(self.metrics[key]) != float(value):
                return f"its metric {key!r} is not one this export logs"
        for key, value in run.data.tags.items():
            if key in _PER_EXPORT_TAGS or key in _MLFLOW_TAGS or key == LEASE_TAG:
                continue
            if self.tags.get(key) != value:
                return f"its tag {key!r} is not one this export sets"
        return None


def _not_left_by_its_export(run: Any, lease: LeaseRecord | None) -> str | None:
    """Why ``run`` (not finished) is not as an export of this data left it, or ``None``."""
    if lease is None:
        return (
            "it carries no evalexport lease (made by hand, by another tool, or by an "
            "evalexport before 0.5)"
        )
    status = run.info.status
    if status not in (lease["status"], lease.get("next")):
        return (
            f"its status is {status}, not the {lease['status']} its export left it in: "
            "someone reopened or ended it since"
        )
    return None


@dataclass
class _Seen:
    """A lease as one export watches it: its value, and since when (this machine's clock) it
    has not changed."""

    value: str
    since: float


class _Watch:
    """Tells whether a lease (a run's, or the experiment's claim) is still held: a lease of
    this host whose process is gone is not; any other is, until its value stops changing for
    the lease's time (measured on this machine's clock, so that no two clocks are compared)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._seen: dict[str, _Seen] = {}

    def held(self, key: str, value: str, lease: LeaseRecord) -> bool:
        if _PLACE and lease.get("place") == _PLACE and not _alive(lease.get("pid")):
            return False
        seen = self._seen.get(key)
        now = time.monotonic()
        if seen is None or seen.value != value:
            self._seen[key] = _Seen(value, now)
            return True
        return now - seen.since < self.seconds


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


class _Lease:
    """This export's lease on its run: written when it makes or takes over the run, renewed
    by a heartbeat thread while it works, and ended with the status it leaves the run in
    (the status next written to the lease first, so that a stop between the two is still
    read as this export's own doing)."""

    def __init__(self, client: Any, payload: MlflowPayload) -> None:
        self.client = client
        self.export = uuid.uuid4().hex
        self.seconds = payload["lease_seconds"]
        self.name = payload["run_name"]
        self.run_id: str | None = None
        self._value: LeaseRecord | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._lost = threading.Event()
        """Set once this export may no longer write its run: another export's lease is on
        it, or this one was not renewed for half the lease's time (a stalled process, a
        server out of reach), which another export may be taking over now."""
        self._renewed = 0.0
        """When the last renewal that reached the server was sent (``time.monotonic``)."""
        self._beats: threading.Thread | None = None

    def value(
        self,
        status: str,
        created_by: str | None = None,
        *,
        next: str | None = None,
        name: str | None = None,
    ) -> LeaseRecord:
        value: LeaseRecord = {
            "export": self.export,
            "created_by": created_by or self.export,
            "host": _HOST,
            "place": _PLACE,
            "pid": os.getpid(),
            "status": status,
            "beat": 0,
            "at": _now(),
            "name": name or self.name,
        }
        if next is not None:
            value["next"] = next
        return value

    def tag(self) -> str:
        return json.dumps(self._value, sort_keys=True)

    def hold(self, run_id: str, value: LeaseRecord) -> None:
        """Hold ``run_id`` (the lease ``value`` written already) and renew it until
        :meth:`end`."""
        self.run_id, self._value = run_id, value
        self._renewed = time.monotonic()
        self._beats = threading.Thread(target=self._renew, daemon=True, name="evalexport-lease")
        self._beats.start()

    def _fresh(self) -> bool:
        """Whether the last renewal that reached the server was sent less than half the
        lease's time ago. Another export takes a lease over only once it has seen it
        unchanged for the whole lease's time, so a renewal sent while this holds lands before
        any takeover (given half a lease for the request); past it, this export stops
        writing, whatever woke it (a process stopped and continued, a server out of reach)."""
        if time.monotonic() - self._renewed < self.seconds / 2:
            return True
        self._lost.set()
        return False

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 6):
            with self._lock:
                if self._stop.is_set() or self._lost.is_set():
                    return
                with contextlib.suppress(Exception):  # the next beat tries again
                    if not self._holds(_lease_of(self.client.get_run(self.run_id))):
                        return
                    sent = time.monotonic()
                    if not self._fresh():  # the read took that long: it may be taken over now
                        return
                    held = self._value
                    assert held is not None  # renewed only once held
                    value: LeaseRecord = {**held, "beat": held["beat"] + 1, "at": _now()}
                    self.client.set_tag(self.run_id, LEASE_TAG, json.dumps(value, sort_keys=True))
                    self._value, self._renewed = value, sent

    def _holds(self, lease: LeaseRecord | None) -> bool:
        """Whether ``lease``, read from the run, is this export's; if not, it is lost."""
        if lease is not None and lease["export"] == self.export:
            return True
        self._lost.set()
        return False

    def unlapsed(self) -> bool:
        """:meth:`still_mine` without asking the server: not lost, and renewed within half
        the lease's time."""
        return not self._lost.is_set() and self._fresh()

    def still_mine(self) -> bool:
        """Whether this export may still write its run: renewed within half the lease's time
        (:meth:`_fresh`) and the run's lease still its own. Another export takes over a lease
        it saw lapse; a stalled export that wakes finds it lost here before it writes again,
        and never renews it again."""
        if self._lost.is_set() or not self._fresh():
            return False
        return self._holds(_lease_of(self.client.get_run(self.run_id))) and self._fresh()

    def end_renewing(self) -> None:
        """Stop renewing a lease another export took over."""
        self._stop.set()

    def end(self, status: str, end_time: int | None = None) -> None:
        """Stop renewing; mark the run ``status`` (``FINISHED``, ``FAILED``, ``KILLED``), its
        lease first saying so. Raises :class:`_LeaseLost`, writing nothing, when the run may
        be another export's now (:meth:`still_mine`)."""
        self._stop.set()
        with self._lock:
            if not self.still_mine():
                raise _LeaseLost()
            held = self._value
            assert held is not None  # ended only once held
            self._value = {**held, "next": status, "at": _now()}
            self.client.set_tag(self.run_id, LEASE_TAG, self.tag())
            self.client.set_terminated(self.run_id, status, end_time=end_time)
            ended: LeaseRecord = {**held, "status": status, "at": _now()}
            self._value = ended
            self.client.set_tag(self.run_id, LEASE_TAG, self.tag())


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


_CLAIM_WAIT: Final = 1.0
"""Seconds a claim is left to settle before it is read back (:class:`_Claim`)."""
_CLAIM_GAP: Final = _CLAIM_WAIT / 2
"""The longest a claim's read and write may take together for the claim to be trusted."""


class _Claim:
    """The experiment's claim (:data:`CLAIM_TAG`): held by one export at a time while it
    decides which run to make or take over and does it, so that two exports of one run never
    make two runs of it. MLflow has no atomic write a client can test and set, so the claim
    is Fischer's mutual exclusion over a tag: read it free, write it, wait
    :data:`_CLAIM_WAIT`, read it back; it is held when it still says this export. That holds
    while a read and a write together take less than the wait, so a claim whose read and
    write took longer than :data:`_CLAIM_GAP` is not trusted: the export backs off and tries
    again. An embedded store needs none: its exports take turns under a file lock."""

    def __init__(self, client: Any, experiment_id: str, lease: _Lease, watch: _Watch) -> None:
        self.client, self.experiment_id, self.lease, self.watch = (
            client,
            experiment_id,
            lease,
            watch,
        )
        self.attempt = ""

    def _read(self) -> tuple[str, LeaseRecord | None]:
        value = self.client.get_experiment(self.experiment_id).tags.get(CLAIM_TAG, "")
        try:
            claim = json.loads(value)
        except ValueError:
            return value, None
        return value, cast(LeaseRecord, claim) if isinstance(claim, dict) else None

    def holder(self) -> LeaseRecord | None:
        """Another export's claim still held, or ``None`` when the claim is free."""
        value, claim = self._read()
        if claim is None or claim.get("released") or claim.get("export") == self.lease.export:
            return None
        return claim if self.watch.held("claim", value, claim) else None

    def take(self) -> bool:
        """Whether this export now holds the claim (``False``: another export does, or the
        store answered too slowly to be sure; try again after a moment)."""
        started = time.monotonic()
        if self.holder() is not None:
            return False
        self.attempt = uuid.uuid4().hex
        mine = json.dumps({**self.lease.value("claim"), "attempt": self.attempt}, sort_keys=True)
        try:
            self.client.set_experiment_tag(self.experiment_id, CLAIM_TAG, mine)
        except Exception:
            # MLflow's stores write a tag the experiment lacks as an insert: two exports that
            # claim a new experiment at once collide there, and the slower is refused
            # (UNIQUE constraint failed). The claim is someone's now: back off and look again.
            if not self._read()[0]:
                raise
            time.sleep(_CLAIM_WAIT)
            return False
        if time.monotonic() - started > _CLAIM_GAP:
            time.sleep(3 * _CLAIM_WAIT)  # a slow write may have landed over another's claim
            return False
        time.sleep(_CLAIM_WAIT)
        return self._read()[0] == mine

    def release(self) -> None:
        claim = self._read()[1]
        if claim is not None and claim.get("attempt") == self.attempt:
            released = {**claim, "released": True, "at": _now()}
            self.client.set_experiment_tag(self.experiment_id, CLAIM_TAG, json.dumps(released))


@dataclass
class _Chosen:
    """The run an export writes into: a new one, or one it resumes."""

    run_id: str
    resumed: bool
    notices: list[str]
    existing: list[str]
    """The experiment's finished runs of this data (the export is a second copy of them)."""


_POLL: Final = 2.0
"""Seconds between two looks at a run another export holds."""


class _Choice:
    """Which run an export writes into, decided from the runs of its data the experiment
    holds (docs/reliability.md, "Nothing lost"): a finished one is this data's run, skipped
    for (``second_copy`` adds another); a run another export holds is waited for; a run an
    earlier export left unfinished and nobody else touched is resumed; a run anybody else
    wrote to is never touched."""

    def __init__(
        self,
        client: Any,
        experiment_id: str,
        payload: MlflowPayload,
        lease: _Lease,
        say: Callable[[str], None],
    ) -> None:
        self.client, self.experiment_id, self.payload = client, experiment_id, payload
        self.lease, self.say = lease, say
        self.expected = _Expected(payload)
        self.watch = _Watch(payload["lease_seconds"])
        self.uri, self.experiment = payload["tracking_uri"], payload["experiment_name"]

    def classify(self, runs: list[Any]) -> dict[str, list[Any]]:
        """The runs of this data by what the export may do with them: ``finished`` (finished,
        holding only what exports of this data write), ``touched`` (finished by an export,
        then written to or reopened by someone else, with why), ``held`` (another export is
        writing it), ``resumable`` (an earlier export's unfinished work, nobody else's) and
        ``foreign`` (with why). Only a resumable run is ever written to."""
        kinds: dict[str, list[Any]] = {
            "finished": [],
            "touched": [],
            "held": [],
            "resumable": [],
            "foreign": [],
        }
        for run in runs:
            lease = _lease_of(run)
            others = self.expected.written_by_others(run)
            finished_by_export = lease is not None and lease["status"] == "FINISHED"
            if run.info.status == "FINISHED" or finished_by_export:
                if others is None and run.info.status == "FINISHED":
                    kinds["finished"].append(run)
                else:
                    kinds["touched"].append(
                        (
                            run,
                            others
                            or f"someone reopened it since its export finished it "
                            f"({run.info.status})",
                        )
                    )
            elif (why := _not_left_by_its_export(run, lease) or others) is not None:
                kinds["foreign"].append((run, why))
            elif (
                lease is not None
                and lease["status"] == "RUNNING"
                and self.watch.held(run.info.run_id, run.data.tags[LEASE_TAG], lease)
            ):
                kinds["held"].append(run)
            else:
                kinds["resumable"].append(run)
        return kinds

    def said_of(self, kinds: dict[str, list[Any]]) -> list[str]:
        """Notices naming the runs of this data the export leaves as they are."""
        return [
            f"MLflow run {run.info.run_id} ({run.info.status}) of this run's data is left as it "
            f"is: {why}"
            for kind in ("touched", "foreign")
            for run, why in kinds[kind]
        ]

    def ended(self, kinds: dict[str, list[Any]]) -> WorkerResult | None:
        """The skip that ends the export: the experiment holds this data's run finished (unless
        a second copy is asked for), or, with ``+skip_existing``, one someone reopened since
        or one another export is writing."""
        where = _at(self.experiment, self.uri)
        finished = [run.info.run_id for run in kinds["finished"]]
        if finished and not self.payload["second_copy"]:
            return skipped_as_exported(where, finished, self.said_of(kinds))
        if not self.payload["skip_existing"]:
            return None
        if kinds["touched"]:
            reopened = [run.info.run_id for run, _ in kinds["touched"]]
            return skipped_as_held(where, reopened, self.said_of(kinds))
        if kinds["held"]:
            run = kinds["held"][0]
            return result(
                "skipped",
                SUCCEEDED,
                f"{_holder(_lease_of(run))} is exporting this run's data as MLflow run "
                f"{run.info.run_id} in {where}; skipped, as {named_option('skip_existing')} "
                "asks",
                run_id=run.info.run_id,
                skip_reason="in progress at target",
                existing_run_ids=[run.info.run_id],
            )
        return None

    def choose(self, deadline: float) -> _Chosen | WorkerResult:
        """The run to write into, or the result that ends the export here (a skip, or a
        failure after waiting past ``deadline`` for another export)."""
        claim = (
            None
            if self.payload["store_directory"]
            else _Claim(self.client, self.experiment_id, self.lease, self.watch)
        )
        said_waiting: set[str] = set()
        while True:
            runs = _runs_of(self.client, self.experiment_id, self.payload)
            kinds = self.classify(runs)
            if (ended := self.ended(kinds)) is not None:
                return ended
            if kinds["held"]:
                for run in kinds["held"]:
                    if run.info.run_id not in said_waiting:
                        said_waiting.add(run.info.run_id)
                        self.say(
                            f"waiting for {_holder(_lease_of(run))}, which is exporting "
                            f"this run's data as MLflow run {run.info.run_id}"
                        )
            elif claim is None or claim.take():
                try:
                    chosen = self.made(runs, claim)
                finally:
                    if claim is not None:
                        claim.release()
                if chosen is not None:
                    return chosen
                continue  # the experiment changed meanwhile: look again
            elif (holder := claim.holder()) is not None and "claim" not in said_waiting:
                said_waiting.add("claim")
                self.say(f"waiting for {_holder(holder)}, which is making a run in this experiment")
            if time.monotonic() > deadline:
                return self.gave_up(kinds)
            time.sleep(_POLL)

    def gave_up(self, kinds: dict[str, list[Any]]) -> WorkerResult:
        held = kinds["held"]
        who = (
            f"{_holder(_lease_of(held[0]))}, which holds MLflow run {held[0].info.run_id} "
            "of this run's data"
            if held
            else "another export, which holds this experiment's claim"
        )
        return result(
            "failed",
            FAILED,
            f"MLflow export to {self.uri} gave up waiting for {who}. Run the export again once "
            f"it has ended, or give {named_option('skip_existing', 'true')} to skip while it "
            "works",
        )

    def made(self, runs: list[Any], claim: _Claim | None) -> _Chosen | None:
        """Under the claim: the run resumed or made, or ``None`` when the runs of this data
        changed since they were looked at (another export was quicker)."""
        if claim is not None and _signature(
            _runs_of(self.client, self.experiment_id, self.payload)
        ) != _signature(runs):
            return None
        kinds = self.classify(runs)
        notices = self.said_of(kinds)
        existing = [run.info.run_id for run in kinds["finished"]]
        if kinds["resumable"]:
            run = kinds["resumable"][0]
            notices += [
                f"MLflow run {other.info.run_id} ({other.info.status}), another unfinished "
                "export of this run's data, is left as it is"
                for other in kinds["resumable"][1:]
            ]
            return self.resumed(run, notices, existing)
        value = self.lease.value("RUNNING")
        created = self.client.create_run(
            self.experiment_id,
            start_time=self.payload["start_time_ms"],
            run_name=self.payload["run_name"],
            tags={**self.payload["run_tags"], LEASE_TAG: json.dumps(value, sort_keys=True)},
        )
        self.lease.hold(created.info.run_id, value)
        if existing:
            notices.append(second_copy(_at(self.experiment, self.uri), existing))
        return _Chosen(created.info.run_id, False, notices, existing)

    def resumed(self, run: Any, notices: list[str], existing: list[str]) -> _Chosen:
        """Take over ``run``, an earlier export's unfinished work: its lease this export's,
        its status ``RUNNING`` again. The run keeps its name (a copy of the run directory
        names its runs otherwise: the lease records the name the run has)."""
        earlier = _lease_of(run)
        assert earlier is not None  # a run to resume is one its export left (_Choice)
        run_id = run.info.run_id
        value = self.lease.value(
            earlier["status"],
            created_by=earlier.get("created_by"),
            next="RUNNING",
            name=earlier["name"],
        )
        self.client.set_tag(run_id, LEASE_TAG, json.dumps(value, sort_keys=True))
        self.client.update_run(run_id, status="RUNNING")
        value = {**value, "status": "RUNNING"}
        value.pop("next")
        self.client.set_tag(run_id, LEASE_TAG, json.dumps(value, sort_keys=True))
        self.lease.hold(run_id, value)
        notices.append(
            f"resumed MLflow run {run_id}, which an earlier export of this run's data left "
            f"{run.info.status} ({_holder(earlier)}); only what it lacks is added"
        )
        return _Chosen(run_id, True, notices, existing)


def _signature(runs: list[Any]) -> list[tuple[str, str, str | None]]:
    """What of the runs of this data tells whether they changed: ids, statuses, leases."""
    return sorted((r.info.run_id, r.info.status, r.data.tags.get(LEASE_TAG)) for r in runs)


def _live_runs(client: Any, payload: MlflowPayload) -> list[str]:
    """The runs NeMo Gym's live exporter made of this evaluation at the target, newest first:
    named as the run's config names its live run, in the experiment it names, and made by no
    export (without the fingerprint tag)."""
    live = payload.get("live_run")
    experiment = client.get_experiment_by_name(live["experiment"]) if live else None
    if not live or experiment is None:
        return []
    name = live["run_name"]
    found = client.search_runs(
        [str(experiment.experiment_id)],
        filter_string=f"attributes.run_name = '{name}'" if "'" not in name else "",
        order_by=["attributes.start_time DESC"],
    )
    tag = payload["fingerprint_tag"]
    return [
        each.info.run_id
        for each in found
        if each.info.run_name == name and tag not in each.data.tags
    ]


def _named_live(runs: list[str]) -> dict[str, Any]:
    """The result's detail naming the newest live run, if there is one."""
    return {"live_run_id": runs[0]} if runs else {}


def _live_said(payload: MlflowPayload, runs: list[str], *, would: bool) -> str:
    """The notice naming the live runs ``runs`` of the evaluation."""
    live = payload["live_run"]
    return (
        f"the evaluation also logged this run live, as MLflow run {', '.join(runs)} "
        f"({live['run_name']!r} in experiment {live['experiment']!r}, as its config says); "
        f"{'the export would make' if would else 'this export is'} a second run of it"
    )


def _at(experiment: str, uri: str) -> str:
    return f"MLflow experiment {experiment!r} at {uri}"


def _store_path(uri: str) -> Path:
    """The file of the embedded store ``sqlite:///PATH``."""
    return Path(uri.removeprefix("sqlite:///"))


def _create_store_atomically(uri: str, client_class: Any) -> None:
    """Make a new embedded store under a name of its own, then rename it into place: a store
    whose making failed (a full disk, a stop signal) is never left half made where the next
    export would open it. The caller holds the store's lock, so no one else makes it too."""
    store = _store_path(uri)
    if store.exists():
        return
    making = store.with_name(f"{store.name}.making-{os.getpid()}")
    try:
        client_class(tracking_uri=f"sqlite:///{making}").get_experiment_by_name("Default")
        making.replace(store)
    finally:
        for suffix in ("", "-journal", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                making.with_name(making.name + suffix).unlink()


_UNREACHABLE: Final = (
    ("Connection refused", "connection refused"),
    ("Name or service not known", "the host name is unknown"),
    ("nodename nor servname", "the host name is unknown"),
    ("Failed to resolve", "the host name is unknown"),
    ("timed out", "no answer within the request timeout"),
    ("Max retries exceeded", "no answer"),
    ("Connection reset", "the connection was reset"),
)


def _described(error: BaseException, uri: str) -> str:
    """The error in the user's terms: a server that cannot be reached says so and what to do,
    rather than the HTTP library's retry trace; anything else as the SDK words it."""
    text = str(error)
    # urllib3's words when its retries ran out, or MLflow's when it was handed the last answer
    answered = re.search(r"too many (\d{3}) error responses|error code (5\d\d) != 200", text)
    if answered is not None and uri.startswith(("http://", "https://")):
        # It was reached: it answered, with errors of its own, on every retry.
        return (
            f"the tracking server answered HTTP {answered.group(1) or answered.group(2)} (a "
            "server error) to every "
            "retry: it is reachable, and failing; its log says why"
        )
    reason = next((said for found, said in _UNREACHABLE if found in text), None)
    if reason is not None and uri.startswith(("http://", "https://")):
        return (
            f"the tracking server cannot be reached ({reason}). Check that it is running and "
            "that the URI is right; a local one starts with: evalexport envs run mlflow mlflow "
            "server --host 127.0.0.1 --port PORT"
        )
    return f"{type(error).__name__}: {error_text(error)}" + _hint(error, uri)


def _hint(error: BaseException, uri: str) -> str:
    text = str(error)
    if "_alembic_tmp_" in text:
        return (
            f" The store {uri} was left half-migrated by an interrupted MLflow schema upgrade; "
            "drop the leftover _alembic_tmp_* table (sqlite3: DROP TABLE <name>) or use a new store."
        )
    if "unable to open database file" in text:
        return f" Check that {uri.removeprefix('sqlite:///')} and its directory are writable."
    if isinstance(error, ImportError) and "sqlalchemy" in text.lower():
        from importlib.metadata import version

        mlflow = version("mlflow")
        on_a_command_line = named_option("requirement").startswith("+")
        pinned = (  # quoted for a shell on a command line; a list for a Python caller
            f"'{named_option('requirement', f'[mlflow=={mlflow},sqlalchemy<2.1]')}'"
            if on_a_command_line
            else named_option("requirement", repr([f"mlflow=={mlflow}", "sqlalchemy<2.1"]))
        )
        return (
            f" MLflow {mlflow} does not run with SQLAlchemy {version('sqlalchemy')} (MLflow 2 "
            f"needs one before 2.1): pin it beside MLflow, {pinned}"
        )
    return ""


def _dry_run(client: Any, payload: MlflowPayload) -> WorkerResult:
    """What an export would find at the target and do there, asked without changing it."""
    uri, name = payload["tracking_uri"], payload["experiment_name"]
    experiment = client.get_experiment_by_name(name)
    experiment_id = str(experiment.experiment_id) if experiment is not None else ""
    runs = _runs_of(client, experiment_id, payload) if experiment is not None else []
    choice = _Choice(client, experiment_id, payload, _Lease(client, payload), silent)
    kinds = choice.classify(runs)
    if (ended := choice.ended(kinds)) is not None:
        return ended
    notices = choice.said_of(kinds)
    for run in kinds["held"]:
        notices.append(
            f"{_holder(_lease_of(run))} is exporting this run's data as MLflow run "
            f"{run.info.run_id}: the export would wait for it"
        )
    if kinds["resumable"]:
        run = kinds["resumable"][0]
        if _leaves_traces_out(client, payload, experiment_id, run.info.run_id):
            refused = _TracesLeftOut(run.info.run_id)
            return result("failed", FAILED, f"MLflow export to {uri} would fail: {refused}")
        notices.append(
            f"the export would resume MLflow run {run.info.run_id}, which an earlier export of "
            f"this run's data left {run.info.status}, adding only what it lacks"
        )
    if live := _live_runs(client, payload):
        notices.append(_live_said(payload, live, would=True))
    # The dry run says what existing_run_ids holds in its own words.
    return result(
        "succeeded",
        ExitCode.OK,
        f"MLflow at {uri} answers; experiment {name!r} "
        + ("exists" if experiment is not None else "would be created"),
        notices=notices,
        existing_run_ids=[run.info.run_id for run in kinds["finished"]],
    )


class _LeaseLost(Exception):
    """Another export took over this export's run: its lease lapsed."""


def run(
    payload: MlflowPayload,
    progress: Callable[[int, int], None] = no_progress,
    say: Callable[[str], None] = silent,
) -> WorkerResult:
    """Log the run the payload describes to MLflow: its experiment and run (a new one, or the
    one an earlier export of this data left unfinished, resumed), params, metrics, tags,
    artifacts and traces; the result names it. ``say`` reports a wait as it begins."""
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    uri = payload["tracking_uri"]
    steps = 3 + len(payload["batches"]) + len(payload["artifacts"])
    total = steps + payload.get("traces_count", 0)  # a trace is a step: the long part
    lease: _Lease | None = None
    traced = 0
    there = 0  # the traces a resumed run held already
    live: list[str] = []
    if "traces" in payload and (refusal := traces_refusal(MlflowClient)) is not None:
        return result("failed", FAILED, f"MLflow export to {uri} refused: {refusal}")
    if payload["dry_run"] and payload["store_directory"] and not _store_path(uri).exists():
        # Asked only for what this MLflow can do (traces): a store not yet made holds no run
        # of this data, and opening it would make it.
        return result(
            "succeeded",
            ExitCode.OK,
            f"MLflow's store {_store_path(uri)} is not made yet; the export would make it",
        )
    try:
        if payload["store_directory"]:
            os.chdir(payload["store_directory"])  # MLflow's ./mlruns for Default: beside it
            _create_store_atomically(uri, MlflowClient)
        client = MlflowClient(tracking_uri=uri)  # a local store is opened (and migrated) here
        if payload["dry_run"]:
            return _dry_run(client, payload)
        progress(0, total)
        experiment_id = _experiment_id(
            client, payload["experiment_name"], payload["artifact_location"]
        )
        lease = _Lease(client, payload)
        choice = _Choice(client, experiment_id, payload, lease, say)
        chosen = choice.choose(time.monotonic() + payload["wait_seconds"])
        if not isinstance(chosen, _Chosen):
            return chosen
        run_id = chosen.run_id
        if chosen.resumed and _leaves_traces_out(client, payload, experiment_id, run_id):
            raise _TracesLeftOut(run_id)
        if not chosen.resumed and (live := _live_runs(client, payload)):
            client.set_tag(run_id, LIVE_RUN_TAG, live[0])
        progress(2, total)
        timestamp = payload["end_time_ms"]
        for done, batch in enumerate(payload["batches"], start=3):
            # Again on a resumed run: a param or tag already there is the same (the run was
            # checked), and MLflow keeps a metric logged twice alike once.
            client.log_batch(
                run_id,
                metrics=[
                    Metric(key, value, timestamp, 0) for key, value in batch["metrics"].items()
                ],
                params=[Param(key, value) for key, value in batch["params"].items()],
                tags=[RunTag(key, value) for key, value in batch["tags"].items()],
            )
            progress(done, total)
        if payload["artifacts"]:
            size = sum(Path(path).stat().st_size for path in payload["artifacts"])
            say(f"uploading {_counted(len(payload['artifacts']), 'file')} ({_size(size)})")
        for done, path in enumerate(payload["artifacts"], start=3 + len(payload["batches"])):
            client.log_artifact(run_id, path)  # a resumed run's copy is written again
            progress(done, total)
        if payload.get("traces"):
            present = (
                _traces_present(client, uri, experiment_id, run_id) if chosen.resumed else None
            )
            there = sum(present.values()) if present else 0  # _log_traces counts them down
            if (to_log := payload.get("traces_count", 0) - there) > 0:
                say(f"logging {_counted(to_log, 'trace')}, one a rollout{_there_already(there)}")
            traced = _log_traces(
                client,
                uri,
                experiment_id,
                lease,
                payload["traces"],
                present,
                lambda done: progress(steps + done, total),
            )
        lease.end("FINISHED", end_time=payload["end_time_ms"])  # _LeaseLost if not its own
        lease = None
        unfinished = _not_finished(client, run_id)
        if unfinished is not None:
            return result(
                "failed",
                FAILED,
                f"MLflow export to {uri} ended MLflow run {run_id}, but it reads back "
                f"{unfinished}; no marker is written, so a rerun looks at it again",
                partial_run_id=run_id,
            )
        progress(total, total)
    except BaseException as error:  # SDK and connection errors, and a stop signal
        stopped = not isinstance(error, Exception)
        left = _left(lease, "KILLED" if stopped else "FAILED", error)
        if stopped:
            error.add_note(f"MLflow export to {uri} stopped{left}.")
            raise
        if isinstance(error, _TracesLeftOut):
            return result("failed", FAILED, f"MLflow export to {uri} failed{left}: {error}")
        if isinstance(error, _LeaseLost):
            return result(
                "failed",
                FAILED,
                f"MLflow export to {uri} failed{left}: its lease on the run lapsed (this "
                f"export could not renew it for half of {payload['lease_seconds']:g} s: the "
                "process was stopped, or the server out of reach), so another export may take "
                "the run over, and this one writes it no more; that export, or a rerun, "
                "finishes it",
            )
        return result(
            "failed",
            FAILED,
            f"MLflow export to {uri} failed{left}: {_described(error, uri)}",
            partial_run_id=lease.run_id if lease is not None else None,
        )
    notices = chosen.notices + ([_live_said(payload, live, would=False)] if live else [])
    traces: dict[str, Any] = {"traces": traced} if "traces" in payload else {}
    verb = "resumed and finished" if chosen.resumed else "exported to"
    return result(
        "succeeded",
        SUCCEEDED,
        f"{verb} MLflow run {run_id} in experiment {payload['experiment_name']!r} at {uri}"
        + (_traces_said(traced, there) if "traces" in payload else ""),
        run_id=run_id,
        experiment_id=experiment_id,
        tracking_uri=uri,
        notices=notices,
        existing_run_ids=chosen.existing,
        resumed=chosen.resumed,
        **traces,
        **_named_live(live),
    )


def _traces_said(logged: int, there: int) -> str:
    """What the result says of the traces: as many as were logged, and on a resumed run
    those it held already."""
    return f", with {_counted(logged, 'trace')} logged{_there_already(there)}"


def _there_already(there: int) -> str:
    return f" ({there:,} there already)" if there else ""


def _counted(count: int, what: str) -> str:
    return f"{count:,} {what}{'' if count == 1 else 's'}"


def _size(size: int) -> str:
    return f"{size / 2**10:,.1f} KiB" if size < 2**20 else f"{size / 2**20:,.1f} MiB"


class _TracesLeftOut(Exception):
    """A rerun without traces came to the run an export with traces left unfinished: it
    would finish the run short of them for good (a finished run of the data is skipped for)."""

    def __init__(self, run_id: str) -> None:
        traces = named_option("traces", "true")
        super().__init__(
            f"MLflow run {run_id}, which this rerun would finish, was left unfinished by an "
            f"export with {traces} and holds some of its traces; without {traces} this rerun "
            f"would finish it short of the others for good. Rerun with {traces}: only the "
            "traces the run lacks are added"
        )


def _leaves_traces_out(
    client: Any, payload: MlflowPayload, experiment_id: str, run_id: str
) -> bool:
    """Whether this export, without traces, would resume ``run_id``, for which an earlier
    export logged traces (when this MLflow traces at all)."""
    from mlflow.tracking import MlflowClient

    if "traces" in payload or traces_refusal(MlflowClient) is not None:
        return False
    found = client.search_traces(
        experiment_ids=[experiment_id],
        filter_string=f"tags.`{RUN_TRACE_TAG}` = '{run_id}'",
        max_results=1,
        include_spans=False,
    )
    return len(found) > 0


def _left(lease: _Lease | None, status: str, error: BaseException) -> str:
    """End the run this export holds as ``status``; what the message says of it."""
    if lease is None or lease.run_id is None:
        return ""
    run_id = lease.run_id
    if isinstance(error, _LeaseLost):
        lease.end_renewing()
        return f" (run {run_id} is left to whichever export holds its lease)"
    try:
        lease.end(status)
    except _LeaseLost:
        return f" (run {run_id} is left to whichever export holds its lease)"
    except Exception:
        return f" (run {run_id} was left unfinished: the server did not answer)"
    return f" (run {run_id} is marked {status}; a rerun resumes it)"


def _not_finished(client: Any, run_id: str) -> str | None:
    """How ``run_id`` reads back when it is not a finished, active run; ``None`` when it is."""
    info = client.get_run(run_id).info
    if info.status == "FINISHED" and info.lifecycle_stage == "active":
        return None
    return f"{info.status} and {info.lifecycle_stage}"


def _traces_present(
    client: Any, uri: str, experiment_id: str, run_id: str
) -> collections.Counter[tuple[str, str]]:
    """The traces an earlier export logged for ``run_id``, by task and rollout: each linked
    to the run and given its reward feedback now where it stopped before (the trace was
    logged whole, its spans one write), so that only the rollouts it lacks are logged."""
    found: dict[str, Any] = {}
    linked: set[str] = set()
    for trace in _all_traces(
        client, experiment_id, filter_string=f"tags.`{RUN_TRACE_TAG}` = '{run_id}'"
    ):
        found[trace.info.trace_id] = trace
    for trace in _all_traces(client, experiment_id, run_id=run_id):
        found[trace.info.trace_id] = trace
        linked.add(trace.info.trace_id)
    unlinked = [trace_id for trace_id in found if trace_id not in linked]
    for start in range(0, len(unlinked), _BATCH_TRACES):
        client.link_traces_to_run(unlinked[start : start + _BATCH_TRACES], run_id)
    feedback = _feedback(uri)
    present: collections.Counter[tuple[str, str]] = collections.Counter()
    for trace_id, trace in found.items():
        tags = trace.info.tags
        present[_trace_key(tags)] += 1
        rewarded = any(each.name == "reward" for each in trace.info.assessments or [])
        if "reward" in tags and not rewarded and feedback is not None:
            feedback(trace_id, float(tags["reward"]))
    return present


def _feedback(uri: str) -> Any:
    """``feedback(trace_id, reward)``, logging a trace's reward as MLflow's traces carry it
    (:class:`_SpanBatches`) to ``uri``, or ``None`` before MLflow 3.4, which logs none."""
    try:
        import mlflow
        from mlflow.entities import AssessmentSource
    except ImportError:
        return None
    if not callable(getattr(mlflow, "log_feedback", None)):
        return None
    mlflow.set_tracking_uri(uri)  # MLflow's fluent calls go to the global URI
    source = AssessmentSource(source_type="CODE", source_id="evalexport")

    def feedback(trace_id: str, reward: float) -> None:
        mlflow.log_feedback(trace_id=trace_id, name="reward", value=reward, source=source)

    return feedback


def _all_traces(client: Any, experiment_id: str, **search: Any) -> Iterator[Any]:
    token = None
    while True:
        page = client.search_traces(
            experiment_ids=[experiment_id],
            max_results=500,
            page_token=token,
            include_spans=False,
            **search,
        )
        yield from page
        token = page.token
        if not token:
            return


def _trace_key(tags: Mapping[str, str]) -> tuple[str, str]:
    """A trace's rollout, as its tags name it: task and rollout index (a row without
    indices has neither; such rows are told apart by their count)."""
    return tags.get("task_index", ""), tags.get("rollout_index", "")


def traces_refusal(client_class: type) -> str | None:
    """Why this MLflow cannot log traces linked to a run: ``MlflowClient.start_trace`` takes
    ``run_id`` from MLflow 3 on."""
    import inspect

    start_trace = getattr(client_class, "start_trace", None)
    if start_trace is None or "run_id" not in inspect.signature(start_trace).parameters:
        return (
            f"{named_option('traces', 'true')} needs MLflow 3 or later "
            "(MlflowClient.start_trace(run_id=...)); this environment has an older one: give "
            f"{named_option('requirement', repr('mlflow>=3,<4'))}"
        )
    return None


_BATCH_TRACES: Final = 100
"""Traces a batch holds at most: MLflow links at most 100 traces to a run in one request."""
_BATCH_SPANS: Final = 5_000
"""Spans a batch holds at most, so a batch of long agent loops stays one modest write."""
_STOP_SIGNALS: Final = ("SIGINT", "SIGTERM", "SIGHUP")


def _log_traces(
    client: Any,
    uri: str,
    experiment_id: str,
    lease: _Lease,
    path: str,
    present: collections.Counter[Any] | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Log each line of ``path`` as a trace linked to the run ``lease`` holds, tagged with it
    (:data:`RUN_TRACE_TAG`); the number logged. ``present``: the traces a resumed run holds
    already, by rollout (:func:`_traces_present`): as many lines of each are not logged
    again. The file is streamed, a batch at a time (memory stays flat): where this MLflow
    ingests spans in batches (``TracingClient.log_spans``, MLflow's own OTLP path), each
    batch's spans are one write, its traces are linked to the run in one request, and each
    trace's reward is a feedback assessment; a stop signal waits for the batch under way, so
    the store holds whole traces only. An older MLflow 3 logs them one span at a time. Each
    batch first makes sure the lease is still this export's, so that no trace is logged by
    two exports. MLflow sends the traces a client starts to the *global* tracking URI, not
    the client's: it is set to the export's. ``progress(done)`` is told the lines done (logged
    or present already) after each batch."""
    import mlflow

    mlflow.set_tracking_uri(uri)
    run_id = str(lease.run_id)
    told = progress or (lambda done: None)
    lines_done = 0
    batches = _SpanBatches.of(uri, client, experiment_id, run_id)
    count = 0
    batch: list[MlflowTrace] = []
    spans = 0
    with Path(path).open(encoding="utf-8") as lines:
        for line in lines:
            lines_done += 1
            trace: MlflowTrace = json.loads(line)
            trace["tags"][RUN_TRACE_TAG] = run_id
            key = _trace_key(trace["tags"])
            if present is not None and present[key] > 0:
                present[key] -= 1
                continue
            if batches is None:  # this MLflow (or its server) takes no span batches
                # the server asked each batch's first trace; the clock before every trace
                if not (lease.still_mine() if count % _BATCH_TRACES == 0 else lease.unlapsed()):
                    raise _LeaseLost()
                _log_trace_by_spans(client, experiment_id, run_id, trace)
                count += 1
                told(lines_done)
                continue
            batch.append(trace)
            spans += len(trace["spans"]) + 1
            if len(batch) >= _BATCH_TRACES or spans >= _BATCH_SPANS:
                count, batches = _logged(lease, batches, batch, count, client, experiment_id)
                batch, spans = [], 0
                told(lines_done)
    if batch and batches is not None:
        count, batches = _logged(lease, batches, batch, count, client, experiment_id)
    told(lines_done)
    return count


def _logged(
    lease: _Lease,
    batches: _SpanBatches,
    batch: list[MlflowTrace],
    count: int,
    client: Any,
    experiment_id: str,
) -> tuple[int, _SpanBatches | None]:
    """``batch`` logged, and the count so far; a server older than 3.4 refuses span batches
    before writing anything (``NotImplementedError``): from the first batch on, its traces are
    then logged one span at a time (the batches ``None``)."""
    if not lease.still_mine():
        raise _LeaseLost()
    try:
        return count + batches.log(batch), batches
    except NotImplementedError:
        if count:  # a server does not change its version halfway
            raise
    for trace in batch:
        _log_trace_by_spans(client, experiment_id, str(lease.run_id), trace)
    return count + len(batch), None


class _SpanBatches:
    """Traces logged a batch at a time through MLflow's span ingestion."""

    def __init__(self, tracing: Any, client: Any, experiment_id: str, run_id: str) -> None:
        import mlflow
        from mlflow.entities import AssessmentSource, Span

        self._tracing, self._client = tracing, client
        self._experiment_id, self._run_id = experiment_id, run_id
        self._span_from_dict = Span.from_dict
        self._log_feedback = mlflow.log_feedback
        self._source = AssessmentSource(source_type="CODE", source_id="evalexport")

    @classmethod
    def of(cls, uri: str, client: Any, experiment_id: str, run_id: str) -> _SpanBatches | None:
        """The batches, or ``None`` where this MLflow cannot ingest spans in batches and link
        traces to a run (before 3.4: traces are then logged one span at a time)."""
        try:
            import mlflow
            from mlflow.tracing.client import TracingClient
        except ImportError:
            return None
        if not all(
            callable(getattr(owner, name, None))
            for owner, name in (
                (TracingClient, "log_spans"),
                (client, "link_traces_to_run"),
                (mlflow, "log_feedback"),
            )
        ):
            return None
        return cls(TracingClient(uri), client, experiment_id, run_id)

    def log(self, batch: list[MlflowTrace]) -> int:
        """Log ``batch`` whole: its spans in one write, the traces linked to the run, each
        reward a feedback; a stop signal meanwhile is raised once the batch is in."""
        with _signals_held():
            ids: list[str] = []
            spans: list[Any] = []
            for trace in batch:
                trace_id, made = self._spans(trace)
                ids.append(trace_id)
                spans += made
            self._tracing.log_spans(self._experiment_id, spans)
            self._client.link_traces_to_run(ids, self._run_id)
            for trace_id, trace in zip(ids, batch, strict=True):
                if (reward := trace.get("reward")) is not None:
                    self._log_feedback(
                        trace_id=trace_id, name="reward", value=reward, source=self._source
                    )
        return len(batch)

    def _spans(self, trace: MlflowTrace) -> tuple[str, list[Any]]:
        """The trace's id and its spans as MLflow's ``Span`` entities: the root carries the
        trace's name and tags (``mlflow.traceTag.*``, as MLflow's OTLP path reads them)."""
        otel_trace_id = int.from_bytes(os.urandom(16), "big") or 1
        trace_id = f"tr-{otel_trace_id:032x}"
        ids = _SpanIds(trace_id, _b64(otel_trace_id.to_bytes(16, "big")))
        root = _b64(os.urandom(8))
        tags = {"mlflow.traceName": trace["name"], **trace["tags"]}
        attributes = {
            **{key: json.dumps(value) for key, value in trace["attributes"].items()},
            **{f"mlflow.traceTag.{key}": json.dumps(value) for key, value in tags.items()},
        }
        made = [self._span(ids, root, None, trace["name"], "AGENT", trace, attributes)]
        for span in trace["spans"]:
            made.append(
                self._span(ids, _b64(os.urandom(8)), root, span["name"], span["type"], span, {})
            )
        return trace_id, made

    def _span(
        self,
        ids: _SpanIds,
        span_id: str,
        parent_id: str | None,
        name: str,
        kind: str,
        timed: Any,
        attributes: dict[str, str],
    ) -> Any:
        """One span as MLflow's ``Span`` entity reads it from OTLP's JSON (ids in base64)."""
        return self._span_from_dict(
            {
                "trace_id": ids.otel_trace_id,
                "span_id": span_id,
                "parent_span_id": parent_id,
                "name": name,
                "start_time_unix_nano": timed["start_ns"],
                "end_time_unix_nano": timed["end_ns"],
                "status": {"code": "STATUS_CODE_OK", "message": ""},
                "events": [],
                "attributes": {
                    "mlflow.traceRequestId": ids.request_id_json,
                    "mlflow.spanType": json.dumps(kind),
                    "mlflow.spanInputs": json.dumps(timed["inputs"]),
                    "mlflow.spanOutputs": json.dumps(timed["outputs"]),
                    **attributes,
                },
            }
        )


class _SpanIds:
    """A trace's ids as each of its spans carries them, encoded once for all of them."""

    def __init__(self, trace_id: str, otel_trace_id: str) -> None:
        self.request_id_json = json.dumps(trace_id)
        self.otel_trace_id = otel_trace_id


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@contextlib.contextmanager
def _signals_held() -> Any:
    """Stop signals recorded while the block runs, then raised once it is done (the
    runner's handler stops the worker there)."""
    import signal

    held: list[int] = []
    kept = {}
    for name in _STOP_SIGNALS:
        number = getattr(signal, name)
        kept[number] = signal.signal(number, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        for number, handler in kept.items():
            signal.signal(number, handler)
        if held:
            signal.raise_signal(held[0])


def _log_trace_by_spans(client: Any, experiment_id: str, run_id: str, trace: MlflowTrace) -> None:
    """One trace through ``start_trace``/``start_span``/``end_span``/``end_trace``, each its own
    write: an MLflow 3 before span batches."""
    root = client.start_trace(
        trace["name"],
        span_type="AGENT",
        inputs=trace["inputs"],
        attributes=trace["attributes"],
        tags=trace["tags"],
        experiment_id=experiment_id,
        start_time_ns=trace["start_ns"],
        run_id=run_id,
    )
    for span in trace["spans"]:
        child = client.start_span(
            span["name"],
            trace_id=root.trace_id,
            parent_id=root.span_id,
            span_type=span["type"],
            inputs=span["inputs"],
            start_time_ns=span["start_ns"],
        )
        client.end_span(
            root.trace_id, child.span_id, outputs=span["outputs"], end_time_ns=span["end_ns"]
        )
    client.end_trace(root.trace_id, outputs=trace["outputs"], end_time_ns=trace["end_ns"])
