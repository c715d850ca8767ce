"""W&B worker body: one finished run as one W&B run (SPEC §3.7).

Runs inside the wandb environment, standard library plus the SDK only. The API key, if any,
reaches the SDK as WANDB_API_KEY; online mode without one fails with a message saying so.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypedDict

from evalexport.workers import protocol
from evalexport.workers.protocol import (
    FAILED,
    SUCCEEDED,
    ExitCode,
    WorkerResult,
    no_progress,
    result,
)


class WandbPayload(TypedDict):
    """What the W&B worker receives: project, names, mode, config, summary and the table file."""

    project: str
    entity: str | None
    name: str
    mode: str
    dir: str
    config: dict[str, Any]
    group: str | None
    """The run's group: the NeMo Gym job a benchmark's run belongs to, or ``None``."""
    summary: dict[str, Any]
    table_key: str
    tags: list[str]
    """The run's tags; the last is ``evalexport-<fingerprint>``, by which a copy is found."""
    rollouts_table: str | None
    samples_key: str
    samples_table: str | None
    """The typed samples table (a column per value), logged beside Gym's ``Rollouts``."""
    dry_run: bool
    """Only ask the target what an export would find there (online: the project's runs of this
    run's data); create nothing."""
    skip_existing: bool
    """When another export is writing this data's run, skip instead of waiting (online only:
    an offline run has no server to ask)."""
    second_copy: bool
    """Write a second copy (``<id>-2``) where the project holds a finished run of this data
    (by default the export skips for it)."""
    run_id: str
    """The id of this data's run in this project (:func:`run_id_of`): every export of the
    data names it, so a rerun continues the run an earlier one left."""
    wait_seconds: float
    """How long the export waits for another export writing this data's run, within the
    worker's time limit."""


class WandbOutput(TypedDict):
    """What the W&B worker tells its exporter (the result's typed ``output``)."""

    offline_run: str | None
    """The run's directory, for an offline export (``wandb sync`` uploads it), else ``None``."""


SURFACE: Final = {
    "sdk": "wandb",
    "paths": (
        "wandb.init",
        "wandb.Settings",
        "wandb.Table",
        "wandb.Artifact",
        "wandb.Artifact.add",
        "wandb.Artifact.new_file",
        "wandb.Table.with_suffix",
        "wandb.Table.to_json",
        "wandb.sdk.wandb_run.Run.log_artifact",
        "wandb.sdk.wandb_run.Run.log",
        "wandb.sdk.wandb_run.Run.finish",
        "wandb.sdk.wandb_summary.Summary.update",
        "wandb.Api",
        "wandb.Api.runs",
    ),
    "reads": {
        "wandb.Settings": (),
        "wandb.Table": ("MAX_ROWS", "MAX_ARTIFACT_ROWS", "data"),
        "wandb.Artifact": ("name",),
        "wandb.sdk.wandb_run.Run": ("id", "dir", "url", "summary"),
        "wandb.Api": (),
        "wandb.apis.public.Run": ("id", "state", "json_config", "summary"),
    },
    # How many arguments each call passes by position (wandb.init's keywords moved in 0.19;
    # the worker never passes one by position, so that is no finding).
    "positional": {
        "wandb.init": 0,
        "wandb.Settings": 0,
        "wandb.Table": 0,
        "wandb.Artifact": 1,
        "wandb.Artifact.add": 2,
        "wandb.Artifact.new_file": 1,
        "wandb.Table.with_suffix": 1,
        "wandb.Table.to_json": 1,
        "wandb.sdk.wandb_run.Run.log_artifact": 1,
        "wandb.sdk.wandb_run.Run.log": 1,
        "wandb.sdk.wandb_run.Run.finish": 0,
        "wandb.sdk.wandb_summary.Summary.update": 1,
        "wandb.Api": 0,
        "wandb.Api.runs": 1,
    },
    "switch": "runs another wandb version of the matrix",
}
"""What this body calls, builds and catches (``paths``), reads back (``reads``) and passes by
position (``positional``) of its SDK (``Surface.declared``: its exporter's ``sdk.contract``):
plain data, so the pytest plugin knows the SDK without importing the exporter. Keep it in step with the code below; the contract checks hold the fakes and the
real releases to it."""

WARM_UP = ("wandb",)
"""Imported by the runner before the payload arrives (while the parent reads the run)."""


_PLAIN: Final = frozenset({str, int, float, bool, type(None)})
"""The classes of the values W&B types by class alone (a string unless it names an artifact)."""
_ARTIFACT_STRING: Final = "wandb-artifact://"
"""A string W&B reads as a reference to an artifact (``wandb.util._is_artifact_string``)."""
_NOT_A_NUMBER: Final = "NaN"
"""A float NaN's kind: W&B types it as no value (``TypeRegistry.type_of``), not as a number."""


def _kinds(row: list[Any]) -> tuple[object, ...] | None:
    """What W&B's typing can tell apart in a row: the class of each value, NaN apart; ``None``
    for a row holding anything else (a list, an object, a string naming an artifact), whose
    type W&B works out from the values themselves."""
    kinds: list[object] = []
    for value in row:
        kind = value.__class__
        if kind not in _PLAIN or (kind is str and value.startswith(_ARTIFACT_STRING)):
            return None
        kinds.append(_NOT_A_NUMBER if kind is float and value != value else kind)
    return tuple(kinds)


def _typed_by_wandb(kinds: tuple[object, ...] | None, kinds_seen: set[tuple[object, ...]]) -> bool:
    """Whether W&B must type a row of ``kinds`` (:func:`_kinds`): one whose kinds cannot be told
    without W&B, or the first of its kinds (noted in ``kinds_seen``)."""
    if kinds is None:
        return True
    if kinds in kinds_seen:
        return False
    kinds_seen.add(kinds)
    return True


def typed_table(
    wandb: Any, columns: list[str], rows: list[list[Any]], *, mixed: bool = False
) -> Any:
    """``wandb.Table(columns=columns, data=rows)``: the same table (its column types, rows and
    the JSON W&B writes of it), typed by W&B in a fraction of the time.

    ``Table.add_data`` folds each row's type into the columns' types, which costs about 60 µs
    a row of nine columns (9 s of a 1 GB run's 143,000 rows), and a row of the same kinds as an
    earlier one adds nothing to that fold: W&B's column types only widen. So W&B is given the
    first row of each kind of row, in the rows' order (and every row whose kind cannot be told
    without W&B), which types the table and refuses a row of the wrong length or of a type
    its column cannot hold, as it would; then the table holds every row, as given. ``mixed``:
    W&B's ``allow_mixed_types`` (:func:`_typing_refused`)."""
    kinds_seen: set[tuple[object, ...]] = set()
    typing_rows = [row for row in rows if _typed_by_wandb(_kinds(row), kinds_seen)]
    table = wandb.Table(columns=columns, data=typing_rows, allow_mixed_types=mixed)
    table.data = rows
    return table


def _discard(run: Any, mode: str) -> str:
    """End a run that was stopped part way: failed online (a rerun resumes it, under the same
    id); an offline one is kept as it is and named, never synced (the rerun writes a complete
    one under the same id)."""
    # The service may be gone already; the run is given up either way.
    with contextlib.suppress(BaseException):
        run.finish(exit_code=1)
    if mode != "offline":
        return f" (W&B run {run.id} is marked failed; a rerun resumes it)"
    return (
        f" (its offline run directory {Path(run.dir).parent} is unfinished: do not sync it; "
        "a rerun writes a complete one under the same run id)"
    )


UNFINISHED: Final = ("failed", "crashed", "killed")
"""The states of a run an earlier export did not finish (a ``running`` one may be an export
going on elsewhere: once W&B stops hearing from it, it is ``crashed``)."""


def run_id_of(fingerprint: str, entity: str | None, project: str) -> str:
    """The id of this run's data's W&B run in ``entity/project``: derived from both, so that
    every export of the same data to the same project, on any machine, names the same run and
    a rerun continues it (``wandb.init(id=..., resume="allow")``); a deliberate second copy is
    ``<id>-2`` (:func:`run_id_of_copy`)."""
    digest = hashlib.sha256(f"{fingerprint}\n{entity or ''}/{project}".encode()).hexdigest()
    return f"evx{digest[:21]}"


def runs_of(api: Any, path: str, tag: str) -> dict[str, list[Any]]:
    """The runs of the project at ``path`` (``entity/project``, or ``project`` for the key's
    own entity) tagged ``tag``, exports of this same run's data, by state."""
    by_state: dict[str, list[Any]] = {}
    for each in api.runs(path, filters={"tags": {"$in": [tag]}}):
        by_state.setdefault(str(getattr(each, "state", "")), []).append(each)
    return by_state


def _project_path(payload: WandbPayload) -> str:
    return "/".join(filter(None, [payload["entity"], payload["project"]]))


def _ours(run: Any, payload: WandbPayload) -> bool:
    """Whether ``run`` has an id this data's exports give (:func:`run_id_of`)."""
    base = payload["run_id"]
    return str(run.id) == base or str(run.id).startswith(f"{base}-")


def _written_by_others(run: Any, payload: WandbPayload) -> str | None:
    """What of ``run`` someone else wrote (a config key or summary value no export of this
    data logs), or ``None``."""
    try:
        config = set(json.loads(getattr(run, "json_config", "") or "{}"))
    except ValueError:
        config = set()
    if extra := sorted(key for key in config - set(payload["config"]) if not key.startswith("_")):
        return f"its config key {extra[0]!r} is not one this export logs"
    summary = set(getattr(run, "summary", None) or {})
    known = {*payload["summary"], payload["table_key"], payload["samples_key"]}
    if extra := sorted(key for key in summary - known if not key.startswith("_")):
        return f"its summary key {extra[0]!r} is not one this export logs"
    return None


def _foreign(run: Any, payload: WandbPayload) -> str | None:
    """Why an unfinished ``run`` is not an earlier export's of this data to resume, or
    ``None``."""
    if not _ours(run, payload):
        return "its id is not one an export of this data gives"
    return _written_by_others(run, payload)


@dataclass
class _Chosen:
    """The W&B run an export writes into, and what it found."""

    run_id: str
    resumed: bool
    existing: list[str]
    notices: list[str]
    logged: frozenset[str] = frozenset()
    """What a resumed run's summary holds already (the tables an earlier export logged)."""


_POLL: Final = 5.0
"""Seconds between two looks at a run another export is writing."""


def _looked_up(
    payload: WandbPayload, say: Callable[[str], None] | None = None
) -> tuple[_Chosen | None, WorkerResult | None]:
    """Which run the export writes into (online: asked of the project; offline: the data's
    own id), or the result that ends it here: a dry run's answer, a skip, or a failure after
    waiting for another export of this data past ``wait_seconds``. Nothing is ever deleted: a
    finished run of this data is skipped for (``second_copy`` adds another), a run another
    export is writing is waited for, a run an earlier export left unfinished is resumed, a run
    anybody else wrote to is left as it is."""
    if payload["mode"] != "online":
        return _Chosen(payload["run_id"], False, [], _offline_leftovers(payload)), None
    import wandb

    path = _project_path(payload)
    where = f"W&B project {path}"
    api = wandb.Api(timeout=30)
    deadline = time.monotonic() + payload["wait_seconds"]
    while True:
        runs = runs_of(api, path, payload["tags"][-1])
        finished = [
            str(each.id)
            for each in runs.get("finished", [])
            if _written_by_others(each, payload) is None
        ]
        notices = [
            f"W&B run {each.id} ({state}) of this run's data is left as it is: {why}"
            for state in ("finished", *UNFINISHED, "running")
            for each in runs.get(state, [])
            if (why := (_written_by_others if state == "finished" else _foreign)(each, payload))
            and (state != "running" or not _ours(each, payload))
        ]
        if finished and not payload["second_copy"]:
            return None, protocol.skipped_as_exported(where, finished, notices)
        writing = [each for each in runs.get("running", []) if _ours(each, payload)]
        if not writing or payload["dry_run"]:
            break
        if payload["skip_existing"]:
            return None, result(
                "skipped",
                SUCCEEDED,
                f"another export is writing W&B run {writing[0].id} of this run's data in "
                f"{where}; skipped, as {protocol.named_option('skip_existing')} asks",
                run_id=str(writing[0].id),
                skip_reason="in progress at target",
                existing_run_ids=[str(writing[0].id)],
            )
        if time.monotonic() > deadline:
            return None, result(
                "failed",
                FAILED,
                f"W&B export gave up waiting for W&B run {writing[0].id} of this run's data in "
                f"{where}, which another export is writing (W&B calls a run crashed once it "
                "stops hearing from it). Run the export again once it has ended, or give "
                f"{protocol.named_option('skip_existing', 'true')} to skip while it works",
            )
        if say is not None:
            say(
                f"waiting for W&B run {writing[0].id} of this run's data, which another export "
                "is writing"
            )
            say = None  # once
        time.sleep(_POLL)
    resumable = [
        each
        for state in UNFINISHED
        for each in runs.get(state, [])
        if _foreign(each, payload) is None
    ]
    if payload["dry_run"]:
        if writing:
            notices.append(
                f"another export is writing W&B run {writing[0].id} of this run's data: the "
                "export would wait for it"
            )
        elif resumable:
            notices.append(
                f"the export would resume W&B run {resumable[0].id}, which an earlier export of "
                f"this run's data left {resumable[0].state}"
            )
        answer = result(
            "succeeded", ExitCode.OK, f"{where} answers", notices=notices, existing_run_ids=finished
        )
        return None, answer
    if resumable:
        run = resumable[0]
        notices.append(
            f"resumed W&B run {run.id}, which an earlier export of this run's data left {run.state}"
        )
        logged = frozenset(getattr(run, "summary", None) or {})
        return _Chosen(str(run.id), True, finished, notices, logged), None
    taken = {str(each.id) for state_runs in runs.values() for each in state_runs}
    copy = 1
    while (run_id := run_id_of_copy(payload["run_id"], copy)) in taken:
        copy += 1
    if finished:
        notices.append(protocol.second_copy(where, finished))
    return _Chosen(run_id, False, finished, notices), None


def run_id_of_copy(base: str, copy: int) -> str:
    """The id of copy ``copy`` of a run whose first copy's id is ``base``."""
    return base if copy == 1 else f"{base}-{copy}"


def _offline_leftovers(payload: WandbPayload) -> list[str]:
    """Notices naming the offline runs of this data an earlier export left in the directory
    (W&B names an offline run's directory ``offline-run-<time>-<id>``): the same run id, so
    syncing either adds to one W&B run."""
    found = sorted(Path(payload["dir"], "wandb").glob(f"offline-run-*-{payload['run_id']}"))
    return [
        f"an earlier offline export of this run's data is in {each}, with the same run id: "
        "sync the new one; syncing both adds to one W&B run"
        for each in found
    ]


def _past_the_earlier_seconds(payload: WandbPayload) -> None:
    """Wait, a second at most for each, until the clock's second is none an earlier offline
    run of this data started in: W&B names an offline run's directory by its start, to the
    second, and its id, so an export within the second of an earlier one would find that name
    taken (W&B 0.2x then adds ``-1``, a name :func:`_offline_leftovers` and a user's
    ``offline-run-*-ID`` miss)."""
    taken = {
        path.name.split("-")[2]
        for path in Path(payload["dir"], "wandb").glob(f"offline-run-*-{payload['run_id']}")
    }
    while time.strftime("%Y%m%d_%H%M%S") in taken:
        time.sleep(0.05)


_END: Final = b"]}"
"""How the last line of a table file starts."""


def _row(line: bytes) -> Any:
    """The row a line of a table file holds (its comma and newline left out)."""
    return json.loads(line.rstrip(b"\n").rstrip(b","))


@dataclass(frozen=True)
class _TableFile:
    """A table file as the exporter writes it (``tables/rollouts.py``, ``samples.py``): the
    line ``{"columns": [...], "data": [``, a row a line (a comma after each but the last),
    then ``]}``. Read a row at a time, twice (:func:`_scanned`, then :meth:`rows`), so that
    the worker never holds a big table whole."""

    path: Path
    columns: list[str]
    count: int
    part_rows: int
    """The rows of a part (the artifact's tables), all but the last."""
    typing_rows: list[list[list[Any]]]
    """Each part's first row of each kind (:func:`typed_table`), part by part."""

    def rows(self) -> Iterator[list[Any]]:
        with self.path.open("rb") as handle:
            handle.readline()
            for line in handle:
                if line.startswith(_END):
                    return
                yield _row(line)


def _scanned(path: Path, part_rows: int) -> _TableFile | None:
    """The table file at ``path`` read once for its columns, row count and typing rows (a part
    of ``part_rows`` rows at a time); ``None`` when it is not laid out as the exporter writes it
    or holds a value whose JSON only W&B can tell (:func:`_kinds`): W&B then reads it whole."""
    with path.open("rb") as handle:
        head = handle.readline()
        if not head.endswith(b'"data": [\n'):
            return None
        columns = json.loads(head[:-1] + b"]}")["columns"]
        parts: list[list[list[Any]]] = []
        kinds_seen: set[tuple[object, ...]] = set()
        for count, line in enumerate(handle):
            if line.startswith(_END):
                return _TableFile(path, columns, count, part_rows, parts)
            try:
                row = _row(line)
            except ValueError:  # not a row a line: W&B reads the file whole, and says what is wrong
                return None
            kinds = _kinds(row) if isinstance(row, list) else None
            if kinds is None or len(kinds) != len(columns):
                return None
            if count % part_rows == 0:
                parts.append([])
                kinds_seen = set()
            if _typed_by_wandb(kinds, kinds_seen):
                parts[-1].append(row)
    return None


def _read_whole(path: Path) -> tuple[list[str], list[list[Any]]]:
    """The columns and rows of the table file at ``path``, read whole."""
    table = json.loads(path.read_text(encoding="utf-8"))
    return table["columns"], table["data"]


def _cell(value: Any) -> Any:
    """A value as W&B writes it in a table's JSON (``wandb.util.json_friendly``): NaN as null."""
    return None if value.__class__ is float and value != value else value


_DATA_SLOT: Final = "evalexport: the rows go here"


def _typing_refused(wandb: Any, columns: list[str], parts: list[list[list[Any]]]) -> str | None:
    """W&B's words when it refuses to type a part of a table (``parts``: each part's rows, or
    its typing rows), else ``None``. A value of the wrong type for its column, such as a model's
    answer that happens to start ``wandb-artifact://`` (which W&B types as a reference to an
    artifact, not as text), would otherwise fail the whole export over one cell."""
    for rows in parts:
        try:
            typed_table(wandb, columns, rows)
        except TypeError as error:
            # W&B explains a refused row key by key ("Key 'expected_answer':"): name the
            # columns, not the row, which can be long.
            named = list(dict.fromkeys(re.findall(r"Key '([^']*)':", str(error))))
            if named:
                return "a value of another type than the rest in column " + ", ".join(named)
            return protocol.error_text(error)
    return None


def _add_streamed(
    wandb: Any,
    artifact: Any,
    entry: str,
    table: _TableFile,
    part: int,
    rows: Iterator[list[Any]],
    *,
    mixed: bool = False,
) -> bool:
    """Add part ``part`` of ``table`` to ``artifact`` as ``entry``, the rows taken from ``rows``
    as they come: the file ``artifact.add(wandb.Table(columns, data=part's rows), entry)``
    writes, byte for byte (W&B's JSON of the table, keys sorted, ``json.dumps`` spacing), with
    W&B typing the part's typing rows and writing everything of the file but its rows. False
    (nothing added) when W&B wrote those rows otherwise than :func:`_cell` would."""
    typing_rows = table.typing_rows[part]
    count = min(table.part_rows, table.count - part * table.part_rows)
    written = typed_table(wandb, table.columns, typing_rows, mixed=mixed).to_json(artifact)
    if written.get("data") != [[_cell(value) for value in row] for row in typing_rows]:
        return False
    written["data"] = _DATA_SLOT
    if "nrows" in written:
        written["nrows"] = count
    head, tail = json.dumps(written, sort_keys=True).split(json.dumps(_DATA_SLOT))
    with artifact.new_file(wandb.Table.with_suffix(entry), encoding="utf-8") as out:
        out.write(head + "[")
        for number in range(count):
            row = next(rows)
            out.write((", " if number else "") + json.dumps([_cell(value) for value in row]))
        out.write("]" + tail)
    return True


def _log_tables(
    wandb: Any, run: Any, payload: WandbPayload, logged: AbstractSet[str] = frozenset()
) -> dict[str, dict[str, Any]]:
    """Log Gym's ``Rollouts`` table and the typed ``Samples`` table, every row of each: one
    that a run's history keeps whole (``wandb.Table.MAX_ROWS``, 10,000 rows) is logged to it,
    as NeMo Gym logs it; a bigger one, which the history would cut to 10,000 rows without a
    word, goes whole into a table artifact of the run, in tables of at most
    ``wandb.Table.MAX_ARTIFACT_ROWS`` rows each (200,000, W&B's documented limit), streamed
    into it from the table file (:func:`_add_streamed`) where its values allow. A table W&B
    refuses to type is logged with mixed types allowed (:func:`_typing_refused`). Returns where
    each table went, with ``notices`` for the user: where a table did not go to the history,
    and where it could not be typed. A table in ``logged`` (the summary of a resumed run names
    it: the earlier export logged it to the history) is not logged to the history again."""
    history: dict[str, Any] = {}
    artifact = None
    kept: dict[str, dict[str, Any]] = {}
    size = wandb.Table.MAX_ARTIFACT_ROWS
    for key, path in (
        (payload["table_key"], payload["rollouts_table"]),
        (payload["samples_key"], payload["samples_table"]),
    ):
        if not path:
            continue
        scanned = _scanned(Path(path), size)
        whole_rows: list[list[Any]] = []  # read whole only where W&B must read it (scanned: None)
        if scanned is None:
            columns, whole_rows = _read_whole(Path(path))
            total = len(whole_rows)
        else:
            columns, total = scanned.columns, scanned.count
        parts = (
            scanned.typing_rows
            if scanned is not None
            else [whole_rows[start : start + size] for start in range(0, total, size)]
        )
        refused = _typing_refused(wandb, columns, parts)
        notices = []
        if refused is not None:
            notices.append(
                f"W&B cannot type table {key} ({refused}); its rows are logged as they are, "
                "with mixed types allowed (wandb.Table(allow_mixed_types=True))"
            )
        mixed = refused is not None
        if total <= wandb.Table.MAX_ROWS:
            if key not in logged:
                rows = list(scanned.rows()) if scanned is not None else whole_rows
                history[key] = typed_table(wandb, columns, rows, mixed=mixed)
            kept[key] = {"rows": total, "logged": "history", "notices": notices}
            continue
        if artifact is None:
            artifact = wandb.Artifact(f"run-{run.id}-tables", type="rollouts")
        count = (total + size - 1) // size
        entries = [key if count == 1 else f"{key}-{n}-of-{count}" for n in range(1, count + 1)]
        streamed = scanned.rows() if scanned is not None else None
        for number, entry in enumerate(entries):
            if scanned is not None and streamed is not None:
                if _add_streamed(wandb, artifact, entry, scanned, number, streamed, mixed=mixed):
                    continue
                # W&B writes these values its own way: the rest of the table goes to W&B whole.
                streamed = None
                whole_rows = _read_whole(Path(path))[1]
            part = whole_rows[number * size : (number + 1) * size]
            artifact.add(typed_table(wandb, columns, part, mixed=mixed), entry)
        kept[key] = {
            "rows": total,
            "logged": "artifact",
            "artifact": artifact.name,
            "entries": entries,
            "notices": [
                f"{key} holds {total} rows, more than a W&B run's history keeps of a table "
                f"({wandb.Table.MAX_ROWS}): every row is in the run's table artifact "
                f"{artifact.name} ({', '.join(entries)}), not in its history",
                *notices,
            ],
        }
    if history:
        run.log(history)
    if artifact is not None:
        run.log_artifact(artifact)
    return kept


def run(
    payload: WandbPayload,
    progress: Callable[[int, int], None] = no_progress,
    say: Callable[[str], None] | None = None,
) -> WorkerResult:
    """Log the run the payload describes to W&B (online or offline): its config, summary and
    tables, into the run of this data's id (a rerun continues the one an earlier export left
    unfinished), or only look at what an export would find (a dry run); the result names the
    run. ``say`` reports a wait for another export as it begins."""
    import wandb

    mode = payload["mode"]
    total = 3 if payload["rollouts_table"] else 2
    try:
        chosen, ended = _looked_up(payload, say)
    except Exception as error:  # the server or the key: the export would fail here too
        text = protocol.error_text(error)
        return result(
            "failed",
            FAILED,
            f"W&B ({mode}) could not be asked for runs of this run's data: "
            f"{type(error).__name__}: {text}",
        )
    if ended is not None:
        return ended
    assert chosen is not None
    if payload["dry_run"]:  # offline: nothing to ask
        return result("succeeded", ExitCode.OK, f"W&B ({mode}) would write run {chosen.run_id}")
    progress(0, total)
    if mode != "online":
        _past_the_earlier_seconds(payload)
    run = None
    try:
        run = wandb.init(
            project=payload["project"],
            entity=payload["entity"],
            name=payload["name"],
            id=chosen.run_id,
            # Online, the run of this id is continued where it exists (resumed) and made where
            # it does not; offline W&B writes a directory a sync adds to the run of this id.
            resume="allow" if mode == "online" else None,
            mode=mode,
            dir=payload["dir"],
            config=payload["config"],
            group=payload.get("group"),
            tags=payload["tags"],
            reinit=True,
            settings=wandb.Settings(silent=True, console="off", save_code=False, disable_git=True),
        )
        progress(1, total)
        run.summary.update(payload["summary"])
        tables: dict[str, dict[str, Any]] = {}
        if payload["rollouts_table"]:
            tables = _log_tables(wandb, run, payload, chosen.logged)
            progress(2, total)
        run_id, url, run_dir = run.id, getattr(run, "url", None), run.dir
        run.finish()
        progress(total, total)
    except BaseException as error:
        left = _discard(run, mode) if run is not None else ""
        if not isinstance(error, Exception):  # a stop signal
            error.add_note(f"W&B export ({mode}) stopped{left}.")
            raise
        text = protocol.error_text(error).rstrip(".")
        hint = ""
        if mode == "online" and ("api key" in text.lower() or "login" in text.lower()):
            hint = (
                f" Set WANDB_API_KEY or {protocol.named_option('wandb_api_key')}, or export with "
                f"{protocol.named_option('wandb_mode', 'offline')}."
            )
        return result(
            "failed",
            FAILED,
            f"W&B export ({mode}) failed{left}: {type(error).__name__}: {text}.{hint}",
        )
    local = run_dir.rsplit("/files", 1)[0]
    where = f"W&B project {_project_path(payload)}"
    notices = list(chosen.notices)
    notices += [notice for table in tables.values() for notice in table.pop("notices", [])]
    if not Path(local).is_relative_to(payload["dir"]):
        notices.append(f"W&B wrote the run to {local}, not under {payload['dir']} as asked")
    where = url if mode == "online" and url else local
    return result(
        "succeeded",
        SUCCEEDED,
        f"exported to W&B run {run_id} ({mode}): {where}",
        run_id=run_id,
        notices=notices,
        existing_run_ids=chosen.existing,
        output=dict(WandbOutput(offline_run=local if mode == "offline" else None)),
        mode=mode,
        url=url,
        run_dir=local,
        tables=tables,
    )
