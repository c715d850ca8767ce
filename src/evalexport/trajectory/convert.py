"""One rollout's ``ng_trajectory`` to one ATIF v1.7 trajectory (SPEC §4).

The conversion is NeMo Gym's strict profile (``ng-trajectory-to-atif-v1``, the profile of
``nemo_gym/atif_export.py`` in nemo-gym 0.7.0), written anew: on every rollout Gym's exporter
accepts, :func:`convert_rollout` returns the same document, byte for byte once encoded, and it
refuses the rollouts Gym refuses, naming the row's field path. Steps come from the root
invocation's conversation (:mod:`.steps`); each turn must agree with the step it describes and
brings the step's timestamp, model, token metrics and model-call evidence.

Beyond Gym, ``allowed_gaps`` lets a caller export rollouts whose only coverage gaps are the
listed codes, and ``relaxations`` (:mod:`.relaxations`) rollouts the strict profile refuses for
reasons that lose nothing; each such trajectory says so in ``extra.nemo_gym`` (see
:func:`convert_rollout`).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, TypeVar, final

from evalexport.callers import named_option
from evalexport.trajectory.conversation import ItemError
from evalexport.trajectory.encoding import encode_json
from evalexport.trajectory.from_record import RecordConversion
from evalexport.trajectory.images import IMAGE_DIRECTORY, IMAGE_MEDIA_TYPES
from evalexport.trajectory.profile import (
    ATIF_SCHEMA_VERSION,
    CONVERSION_PROFILE,
    ENVIRONMENT_SERVER,
    GYM_GAP_CODES,
    REFERENCE_EXPORTER,
    ROLLOUT_INDEX,
    TASK_INDEX,
    TURNS_UNAVAILABLE,
    TrajectoryIdentity,
)
from evalexport.trajectory.record import RecordError, validate_record
from evalexport.trajectory.relaxations import RELAXATIONS, Relaxation, Relaxations
from evalexport.trajectory.steps import Reason, TrajectoryError
from evalexport.trajectory.strict_json import unencodable_path

__all__ = [
    "ATIF_SCHEMA_VERSION",
    "CONVERSION_PROFILE",
    "GYM_GAP_CODES",
    "IMAGE_DIRECTORY",
    "REFERENCE_EXPORTER",
    "ROLLOUT_INDEX",
    "TASK_INDEX",
    "TURNS_UNAVAILABLE",
    "ConvertedTrajectory",
    "TrajectoryIdentity",
    "agent_label",
    "convert_rollout",
    "encode_json",
    "options_that_accept",
    "rollout_index",
    "row_indices",
]


@final
@dataclass(frozen=True)
class ConvertedTrajectory:
    """An ATIF document ready to write, and the facts the manifest and the result need."""

    task_index: int
    rollout_index: int
    document: dict[str, object]
    gap_codes: tuple[str, ...] = ()
    relaxations: tuple[str, ...] = ()
    """The relaxations of the strict profile this rollout needed, sorted."""
    images: dict[str, bytes] = dataclasses.field(default_factory=dict)
    """The image files its image parts name (``images`` relaxed), by their name under
    :data:`IMAGE_DIRECTORY`: written beside the trajectory."""

    @property
    def file_name(self) -> str:
        """``<task>-<rollout>.json``: the trajectory's file name, as Gym names it."""
        return f"{self.task_index}-{self.rollout_index}.json"

    def encode(self) -> bytes:
        """The file's bytes: pydantic's JSON with a 2-space indent, as Gym writes it."""
        return encode_json(self.document)


def rollout_index(row: dict[str, object], key: str, where: str) -> int:
    """``_ng_task_index`` or ``_ng_rollout_index``: a non-negative integer, never a boolean."""
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TrajectoryError(f"{where}{key}", f"expected a non-negative integer, got {value!r}")
    return value


def row_indices(
    row: dict[str, object], where: str, ordinal: int | None, relax: Relaxations
) -> tuple[int, int]:
    """The row's ``(_ng_task_index, _ng_rollout_index)``. A key the row lacks is numbered as
    Gym's health checks number it (the task its line's ordinal in the file, from 0; the rollout
    0) where ``unindexed_rows`` is relaxed and the ordinal known; else it is refused."""
    numbers: list[int] = []
    for key, default in ((TASK_INDEX, ordinal), (ROLLOUT_INDEX, 0)):
        if key not in row and default is not None and relax.permits("unindexed_rows"):
            numbers.append(default)
        else:
            numbers.append(rollout_index(row, key, where))
    return numbers[0], numbers[1]


def convert_rollout(
    row: dict[str, object],
    identity: TrajectoryIdentity,
    *,
    allowed_gaps: Collection[str] = (),
    relaxations: Collection[Relaxation] = (),
    check_strings: bool = True,
    ordinal: int | None = None,
) -> ConvertedTrajectory:
    """Convert one rollout row, or raise :class:`TrajectoryError` naming what cannot convert.

    Strict by default: a record with any coverage gap is refused. Gap codes in
    ``allowed_gaps`` are accepted instead; the trajectory then lists its gaps in
    ``extra.nemo_gym.gaps`` and its conversion status is ``partial``. With
    ``turns_unavailable`` allowed and no turns recorded, steps come from the conversation alone
    and every model call is kept under ``surplus_model_calls``.

    ``relaxations`` lists the relaxations of the strict profile the rollout may use
    (:data:`.relaxations.RELAXATIONS`); those it needs are listed in
    ``extra.nemo_gym.relaxations``, and its conversion status is ``partial``.

    ``check_strings=False`` skips the search for lone surrogates, for a caller that knows the
    row's JSON text holds no ``\\uD800``-``\\uDFFF`` escape (the only way one gets in).
    ``ordinal``: the row's place among its file's rows, from 0 (what ``unindexed_rows``
    numbers a row without indices by).
    """
    if check_strings and (path := unencodable_path(row, "rollout")):
        raise TrajectoryError(
            path, "contains an unpaired Unicode surrogate and is not valid UTF-8 JSON"
        )
    relax = Relaxations(relaxations)
    recorded = row.get("ng_trajectory")
    if recorded is None and relax.permits("recorded_conversations"):
        # No recorded trajectory: built from the row's own conversation, as asked.
        return _from_conversation(row, identity, relax, ordinal)
    # Every reason the row is refused for, in the order Gym's exporter meets them (the record,
    # its gaps, its conversation, then the agent and the indices), not the first alone.
    found = _Reasons()
    trajectory = found.of(validate_record, recorded)
    gap_codes = tuple(gap.code for gap in trajectory.gaps) if trajectory is not None else ()
    refused = sorted({code for code in gap_codes if code not in allowed_gaps})
    found.gaps = refused
    named = _Reasons()  # Gym names the agent after the conversation: its reasons come last
    agent_name = named.of(_agent_name, row, identity, relax)
    task, rollout = named.of(row_indices, row, "", ordinal, relax) or (None, None)
    document: dict[str, Any] | None = None
    if trajectory is not None and (
        conversion := found.of(RecordConversion, trajectory, gap_codes, relax)
    ):
        document = found.of(
            conversion.document, identity, agent_name or "", task or 0, rollout or 0
        )
    found.reasons += named.reasons
    found.raise_any()
    # Past raise_any every check passed, so each value is there.
    assert trajectory is not None
    assert document is not None
    assert agent_name is not None
    assert task is not None
    assert rollout is not None
    nemo_gym = document["extra"]["nemo_gym"]
    if trajectory.gaps:
        nemo_gym["conversion"]["status"] = "partial"
        nemo_gym["gaps"] = [gap.as_json() for gap in trajectory.gaps]
    applied = relax.applied() if relax.used else ()
    if applied:
        nemo_gym["conversion"]["status"] = "partial"
        nemo_gym["relaxations"] = list(applied)
    images = image_files(document) if "images" in applied else {}
    return ConvertedTrajectory(task, rollout, document, gap_codes, applied, images)


def image_files(document: dict[str, Any]) -> dict[str, bytes]:
    """The image files the document's image parts name, by file name: each base64 data URL
    decoded, written as ``images/<sha256>.<ext>`` and its part's source path made that; each
    part's ``detail`` moved to its step's ``extra.nemo_gym.image_details`` (ATIF's content
    part has no field for it), in the order of the step's image parts."""
    files: dict[str, bytes] = {}
    for step in document["steps"]:
        message = step.get("message")
        details: list[object] = []
        for part in message if isinstance(message, list) else ():
            if part.get("type") != "image":
                continue
            details.append(part.pop("detail", None))
            source = part["source"]
            if not source["path"].startswith("data:"):
                continue  # an http(s) URL is named as it is
            try:
                data = base64.b64decode(source["path"].partition(",")[2])
            except binascii.Error as error:
                raise TrajectoryError(
                    f"steps[{step['step_id'] - 1}].message", f"an image's base64 data ({error})"
                ) from None
            name = f"{hashlib.sha256(data).hexdigest()}.{IMAGE_MEDIA_TYPES[source['media_type']]}"
            files[name] = data
            source["path"] = f"{IMAGE_DIRECTORY}/{name}"
        if any(detail is not None for detail in details):
            extra = step.setdefault("extra", {}).setdefault("nemo_gym", {})
            extra["image_details"] = details
    return files


T = TypeVar("T")


@final
class _Reasons:
    """The reasons a row is refused for, gathered from each check in turn."""

    def __init__(self) -> None:
        self.reasons: list[Reason] = []
        self.gaps: list[str] = []
        """The coverage gap codes the record holds and the caller did not allow."""

    def of(self, check: Callable[..., T], *arguments: Any) -> T | None:
        """``check(*arguments)``, or ``None`` with its reasons kept."""
        try:
            return check(*arguments)
        except (TrajectoryError, RecordError, ItemError) as error:
            self.reasons += error.reasons
            return None

    def raise_any(self) -> None:
        """Raise every reason found as one :class:`TrajectoryError`, refused gaps first (as
        Gym meets them), offered as the way out (``+allow_gaps``) only where they are the
        row's one reason."""
        reasons = list(self.reasons)
        if self.gaps:
            detail = (
                f"source coverage gaps are not supported by strict export ({', '.join(self.gaps)})"
            )
            if not reasons:
                gaps = named_option("allow_gaps", f"[{','.join(self.gaps)}]")
                detail += f"; {gaps} accepts them"
            reasons.insert(0, ("ng_trajectory.gaps", detail))
        if reasons:
            raise TrajectoryError.of(reasons)


def _from_conversation(
    row: dict[str, object], identity: TrajectoryIdentity, relax: Relaxations, ordinal: int | None
) -> ConvertedTrajectory:
    """The trajectory of a row without ``ng_trajectory``, from the conversation it records
    (:mod:`.from_conversation`); each refusal names the row's own field."""
    from evalexport.trajectory import from_conversation

    found, named = _Reasons(), _Reasons()
    agent_name = named.of(_agent_name, row, identity, relax)
    task, rollout = named.of(row_indices, row, "", ordinal, relax) or (None, None)
    record = found.of(
        lambda: validate_record(from_conversation.conversation_record(row, task or 0, rollout or 0))
    )
    document: dict[str, Any] | None = None
    if record is not None and (
        conversion := found.of(RecordConversion, record, (TURNS_UNAVAILABLE,), relax)
    ):
        document = found.of(
            conversion.document, identity, agent_name or "", task or 0, rollout or 0
        )
    found.reasons = [(from_conversation.row_path(path, row), d) for path, d in found.reasons]
    found.reasons += named.reasons
    found.raise_any()
    assert document is not None  # past raise_any every check passed
    assert agent_name is not None
    assert task is not None
    assert rollout is not None
    source = from_conversation.conversation_source(row, task, rollout)
    if isinstance(model := source.get("response_model"), str):
        document["agent"]["model_name"] = model
    document["final_metrics"] = {
        **from_conversation.usage_metrics(row),
        **document["final_metrics"],
    }
    nemo_gym = document["extra"]["nemo_gym"]
    nemo_gym["source"] = source
    nemo_gym["conversion"]["status"] = "partial"
    applied = relax.applied()
    nemo_gym["relaxations"] = list(applied)
    images = image_files(document) if "images" in applied else {}
    return ConvertedTrajectory(task, rollout, document, (), applied, images)


def options_that_accept(
    row: dict[str, object], identity: TrajectoryIdentity, ordinal: int | None = None
) -> tuple[str, ...] | None:
    """The options a refused row would be accepted with (``allow_gaps:CODE``,
    ``relax:NAME``, each one the row needs), or ``None`` when no option accepts it.

    The row is converted again with every gap it records allowed and every relaxation
    offered; a relaxation counts only where the row needed it (:mod:`.relaxations`).
    """
    gaps: list[str] = []
    if (raw := row.get("ng_trajectory")) is not None:  # without one: recorded_conversations
        try:
            recorded = validate_record(raw)
        except RecordError:
            return None
        gaps = sorted({gap.code for gap in recorded.gaps})
    named = identity if identity.agent_name is not None else _named(identity)
    try:
        converted = convert_rollout(
            row, named, allowed_gaps=gaps, relaxations=RELAXATIONS, ordinal=ordinal
        )
    except TrajectoryError:
        return None
    return (
        *(f"allow_gaps:{code}" for code in sorted(set(converted.gap_codes))),
        *(f"relax:{name}" for name in sorted(converted.relaxations)),
    )


def _named(identity: TrajectoryIdentity) -> TrajectoryIdentity:
    """``identity`` with an agent name, as ``+agent_name=NAME`` gives one."""
    return dataclasses.replace(identity, agent_name="NAME")


def agent_label(row: dict[str, object]) -> Any:
    """The agent a row names: ``agent_ref.name``, else the environment server that ran it."""
    agent_ref = row.get("agent_ref")
    name = agent_ref.get("name") if isinstance(agent_ref, dict) else None
    return name if name is not None else row.get(ENVIRONMENT_SERVER)


def _agent_name(row: dict[str, object], identity: TrajectoryIdentity, relax: Relaxations) -> str:
    """The name the row's trajectory gives its agent: ``+agent_name`` if given, else the
    agent the row names. A row that names none is refused, as Gym refuses it, unless the
    ``unnamed_agents`` relaxation and ``+agent_name`` name it."""
    try:
        named = _agent_label(row)
    except TrajectoryError as error:
        if error.path != "agent_ref" or agent_label(row) not in (None, ""):
            raise
        if identity.agent_name is None:
            raise TrajectoryError(
                "agent_ref",
                "expected a non-empty agent_ref.name or environment server stamp; the row "
                f"names no agent ('{named_option('relax', '[unnamed_agents]')}' with "
                f"{named_option('agent_name', 'NAME')} names it)",
            ) from None
        if not relax.permits("unnamed_agents"):
            raise TrajectoryError(
                "agent_ref",
                "expected a non-empty agent_ref.name or environment server stamp; the row "
                f"names no agent, and {named_option('agent_name')} names it only with "
                f"'{named_option('relax', '[unnamed_agents]')}'",
            ) from None
        return identity.agent_name
    return identity.agent_name or named


def _agent_label(row: dict[str, object]) -> str:
    agent_ref = row.get("agent_ref")
    if agent_ref is not None and not isinstance(agent_ref, dict):
        if agent_ref:
            raise TrajectoryError("agent_ref", f"expected an object with a name, got {agent_ref!r}")
    elif isinstance(agent_ref, dict):
        unknown = sorted(repr(key) for key in agent_ref if key not in ("type", "name"))
        if unknown:
            raise TrajectoryError(
                "agent_ref", f"unsupported fields would be dropped: {', '.join(unknown)}"
            )
        if agent_ref.get("type") not in (None, "responses_api_agents"):
            raise TrajectoryError("agent_ref.type", "expected responses_api_agents when present")
    name = agent_label(row)
    if not isinstance(name, str) or not name.strip():
        raise TrajectoryError(
            "agent_ref", "expected a non-empty agent_ref.name or environment server stamp"
        )
    return name
