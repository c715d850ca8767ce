"""MLflow worker body: logs one finished run with ``MlflowClient`` (SPEC §3.6).

Runs inside the mlflow environment, standard library plus the SDK only. Everything it logs was
prepared by the parent: sanitized names, batches within MLflow's limits, artifact files in a
scratch directory. The token, if any, reaches MLflow's REST client as MLFLOW_TRACKING_TOKEN.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
from pathlib import Path
from typing import Any, Final, TypedDict

from evalexport.workers.protocol import (
    FAILED,
    SUCCEEDED,
    ExitCode,
    WorkerResult,
    already_held,
    error_text,
    named_option,
    result,
    skipped_as_held,
    unfinished,
)

SURFACE: Final = {
    "sdk": "mlflow",
    "paths": (
        "mlflow.tracking.MlflowClient",
        "mlflow.tracking.MlflowClient.get_experiment_by_name",
        "mlflow.tracking.MlflowClient.create_experiment",
        "mlflow.tracking.MlflowClient.create_run",
        "mlflow.tracking.MlflowClient.log_batch",
        "mlflow.tracking.MlflowClient.log_artifact",
        "mlflow.tracking.MlflowClient.set_terminated",
        "mlflow.tracking.MlflowClient.search_runs",
        "mlflow.tracking.MlflowClient.delete_run",
        "mlflow.tracking.MlflowClient.search_traces",
        "mlflow.tracking.MlflowClient.delete_traces",
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
        "mlflow.entities.Experiment": ("experiment_id",),
        "mlflow.entities.Run": ("info", "data"),
        "mlflow.entities.RunInfo": ("run_id", "status", "run_name"),
        "mlflow.entities.RunData": ("tags",),
        "mlflow.entities.Trace": ("info",),
        "mlflow.entities.TraceInfo": ("trace_id",),
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
        # An unfinished run's traces are deleted from MLflow 3 on (_delete_traces_of).
        "mlflow.tracking.MlflowClient.search_traces": "3",
        "mlflow.tracking.MlflowClient.delete_traces": "3",
        "mlflow.entities.Trace": "3",
        "mlflow.entities.TraceInfo": "3",
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


class MlflowPayload(_MlflowPayloadOptions):
    """What the MLflow worker receives: where to log, names, tags, the batches and the artifact
    files."""

    tracking_uri: str
    fingerprint_tag: str
    """The key of ``run_tags`` that holds the run's fingerprint."""
    dry_run: bool
    """Only ask the target what an export would find there (runs of this run's data); create
    nothing, not even the experiment."""
    skip_existing: bool
    """When the experiment already holds a finished run of this run's data, skip instead of
    logging a second copy."""
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


def _runs_of(client: Any, experiment_id: str, payload: MlflowPayload) -> dict[str, list[str]]:
    """The experiment's runs of this same run's data (its fingerprint tag), by status:
    ``FINISHED``, an export made from a copy of the run directory, or before its marker was
    deleted; any other, an earlier export that did not finish (``KILLED``: stopped; ``FAILED``:
    failed; ``RUNNING``: killed before it could end its run; the guard's lock means none is
    still going on this machine)."""
    tag = payload["fingerprint_tag"]
    found = client.search_runs(
        [experiment_id], filter_string=f"tags.`{tag}` = '{payload['run_tags'][tag]}'"
    )
    runs: dict[str, list[str]] = {}
    for each in found:
        runs.setdefault(each.info.status, []).append(each.info.run_id)
    return runs


def _unfinished_runs(runs: dict[str, list[str]]) -> list[tuple[str, str]]:
    """``(run id, status)`` of each run that did not finish."""
    return [
        (run_id, status) for status, ids in runs.items() if status != "FINISHED" for run_id in ids
    ]


def _delete_unfinished(client: Any, experiment_id: str, runs: dict[str, list[str]]) -> list[str]:
    """Delete each run of this data an earlier export left unfinished, with its traces, so that
    the experiment ends with one run of the data and each rollout's trace once (MLflow keeps a
    deleted run until ``mlflow gc``); a notice for each. A run the store will not delete is
    marked ``FAILED`` if it still says ``RUNNING``, and its notice says how to delete it."""
    notices = []
    for run_id, status in _unfinished_runs(runs):
        said = unfinished(f"MLflow run {run_id}", status)
        try:
            traces = _delete_traces_of(client, experiment_id, run_id)
            client.delete_run(run_id)
        except Exception as error:
            if status == "RUNNING":
                with contextlib.suppress(Exception):
                    client.set_terminated(run_id, "FAILED")
            notices.append(
                f"{said}, could not be deleted ({error_text(error, 200)}); delete it with "
                f"`mlflow runs delete --run-id {run_id}`"
            )
            continue
        with_traces = f" with its {traces} traces" if traces else ""
        notices.append(
            f"{said}, was deleted{with_traces}, so that the experiment holds this run once "
            f"(`mlflow runs restore --run-id {run_id}` brings the run back, not its traces, "
            "until `mlflow gc`)"
        )
    return notices


def _delete_traces_of(client: Any, experiment_id: str, run_id: str) -> int:
    """Delete the traces linked to ``run_id``; how many. An MLflow that cannot link traces to
    a run (:func:`traces_refusal`) holds none an export logged."""
    if traces_refusal(type(client)) is not None:
        return 0
    trace_ids: list[str] = []
    token = None
    while True:
        page = client.search_traces(
            experiment_ids=[experiment_id],
            run_id=run_id,
            max_results=500,
            page_token=token,
            include_spans=False,
        )
        trace_ids += [trace.info.trace_id for trace in page]
        token = page.token
        if not token:
            break
    for start in range(0, len(trace_ids), 100):
        client.delete_traces(experiment_id, trace_ids=trace_ids[start : start + 100])
    return len(trace_ids)


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


def _dry_run(client: Any, payload: MlflowPayload) -> WorkerResult:
    """What an export would find at the target, asked without changing it."""
    uri, name = payload["tracking_uri"], payload["experiment_name"]
    experiment = client.get_experiment_by_name(name)
    runs = _runs_of(client, str(experiment.experiment_id), payload) if experiment else {}
    existing = runs.get("FINISHED", [])
    notices = [
        f"{unfinished(f'MLflow run {run_id}', status)}, would be deleted with its traces, so "
        "that the experiment holds this run once"
        for run_id, status in _unfinished_runs(runs)
    ]
    if existing and payload["skip_existing"]:
        return skipped_as_held(_at(name, uri), existing, notices)
    # The dry run says what existing_run_ids holds in its own words.
    if live := _live_runs(client, payload):
        notices.append(_live_said(payload, live, would=True))
    return result(
        "succeeded",
        ExitCode.OK,
        f"MLflow at {uri} answers; experiment {name!r} "
        + ("exists" if experiment is not None else "would be created"),
        notices=notices,
        existing_run_ids=existing,
    )


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
    answered = re.search(r"too many (\d{3}) error responses", text)
    if answered is not None and uri.startswith(("http://", "https://")):
        # It was reached: it answered, with errors of its own, on every retry.
        return (
            f"the tracking server answered HTTP {answered.group(1)} (a server error) to every "
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


def _no_progress(done: int, total: int) -> None:
    pass


def run(payload: MlflowPayload, progress: Any = _no_progress) -> WorkerResult:
    """Log the run the payload describes to MLflow: its experiment and run (or the one an
    earlier export left), params, metrics, tags, artifacts and traces; the result names it."""
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    uri = payload["tracking_uri"]
    total = 3 + len(payload["batches"]) + len(payload["artifacts"])
    run_id = None
    traced = 0
    removed: list[str] = []
    existing: list[str] = []
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
        earlier = _runs_of(client, experiment_id, payload)
        removed = _delete_unfinished(client, experiment_id, earlier)
        existing = earlier.get("FINISHED", [])
        if existing and payload["skip_existing"]:
            return skipped_as_held(_at(payload["experiment_name"], uri), existing, removed)
        live = _live_runs(client, payload)
        progress(1, total)
        created = client.create_run(
            experiment_id,
            start_time=payload["start_time_ms"],
            run_name=payload["run_name"],
            tags={**payload["run_tags"], **({LIVE_RUN_TAG: live[0]} if live else {})},
        )
        run_id = created.info.run_id
        progress(2, total)
        timestamp = payload["end_time_ms"]
        for done, batch in enumerate(payload["batches"], start=3):
            client.log_batch(
                run_id,
                metrics=[
                    Metric(key, value, timestamp, 0) for key, value in batch["metrics"].items()
                ],
                params=[Param(key, value) for key, value in batch["params"].items()],
                tags=[RunTag(key, value) for key, value in batch["tags"].items()],
            )
            progress(done, total)
        for done, path in enumerate(payload["artifacts"], start=3 + len(payload["batches"])):
            client.log_artifact(run_id, path)
            progress(done, total)
        if payload.get("traces"):
            traced = _log_traces(client, uri, experiment_id, run_id, payload["traces"])
        client.set_terminated(run_id, "FINISHED", end_time=payload["end_time_ms"])
        progress(total, total)
    except BaseException as error:  # SDK and connection errors, and a stop signal
        stopped = not isinstance(error, Exception)
        left = ""
        if run_id is not None:
            status = "KILLED" if stopped else "FAILED"
            try:
                client.set_terminated(run_id, status)
                left = f" (run {run_id} is marked {status})"
            except Exception:
                left = f" (run {run_id} was left unfinished: the server did not answer)"
        if stopped:
            error.add_note(f"MLflow export to {uri} stopped{left}.")
            raise
        return result(
            "failed",
            FAILED,
            f"MLflow export to {uri} failed{left}: {_described(error, uri)}",
            partial_run_id=run_id,
        )
    notices = removed + ([_live_said(payload, live, would=False)] if live else [])
    if existing:
        notices.append(already_held(_at(payload["experiment_name"], uri), existing, skip=False))
    traces: dict[str, Any] = {"traces": traced} if "traces" in payload else {}
    return result(
        "succeeded",
        SUCCEEDED,
        f"exported to MLflow run {run_id} in experiment {payload['experiment_name']!r} at {uri}",
        run_id=run_id,
        experiment_id=experiment_id,
        tracking_uri=uri,
        notices=notices,
        existing_run_ids=existing,
        **traces,
        **_named_live(live),
    )


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


def _log_traces(client: Any, uri: str, experiment_id: str, run_id: str, path: str) -> int:
    """Log each line of ``path`` as a trace linked to ``run_id``; the number logged. The file
    is streamed, a batch at a time (memory stays flat): where this MLflow ingests spans in
    batches (``TracingClient.log_spans``, MLflow's own OTLP path), each batch's spans are one
    write, its traces are linked to the run in one request, and each trace's reward is a
    feedback assessment; a stop signal waits for the batch under way, so the store holds whole
    traces only. An older MLflow 3 logs them one span at a time. MLflow sends the traces a
    client starts to the *global* tracking URI, not the client's: it is set to the export's."""
    import mlflow

    mlflow.set_tracking_uri(uri)
    batches = _SpanBatches.of(uri, client, experiment_id, run_id)
    count = 0
    batch: list[MlflowTrace] = []
    spans = 0
    with Path(path).open(encoding="utf-8") as lines:
        for line in lines:
            trace: MlflowTrace = json.loads(line)
            if batches is None:  # this MLflow (or its server) takes no span batches
                _log_trace_by_spans(client, experiment_id, run_id, trace)
                count += 1
                continue
            batch.append(trace)
            spans += len(trace["spans"]) + 1
            if len(batch) >= _BATCH_TRACES or spans >= _BATCH_SPANS:
                count, batches = _logged(batches, batch, count, client, experiment_id, run_id)
                batch, spans = [], 0
    if batch and batches is not None:
        count, batches = _logged(batches, batch, count, client, experiment_id, run_id)
    return count


def _logged(
    batches: _SpanBatches,
    batch: list[MlflowTrace],
    count: int,
    client: Any,
    experiment_id: str,
    run_id: str,
) -> tuple[int, _SpanBatches | None]:
    """``batch`` logged, and the count so far; a server older than 3.4 refuses span batches
    before writing anything (``NotImplementedError``): from the first batch on, its traces are
    then logged one span at a time (the batches ``None``)."""
    try:
        return count + batches.log(batch), batches
    except NotImplementedError:
        if count:  # a server does not change its version halfway
            raise
    for trace in batch:
        _log_trace_by_spans(client, experiment_id, run_id, trace)
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
