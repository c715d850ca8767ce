"""Gym's ``TrajectoryRecord`` read two ways agrees: :mod:`evalexport.trajectory.record`'s
msgspec Structs (the schema's one statement, what the conversion reads, at a fifth of
pydantic's cost) and the pydantic models :mod:`evalexport.trajectory.record_schema` derives from
them (which word a refusal). The derivation gives the same fields in the same order with
the same defaults; on every drawn record, broken at any typed field, the same verdict; on every
accepted one, the same values, integers made floats alike."""

from __future__ import annotations

import copy
import json
import random
import types
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import pydantic
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from evalexport.testing.factory import make_rollout, make_two_turn_rollout
from evalexport.trajectory import record
from evalexport.trajectory.record import RecordError, validate_record
from evalexport.trajectory.record_schema import model_of
from tests.support.gym import GymOracle
from tests.trajectory.strategies import agent_runs

STRUCTS = [
    value
    for value in vars(record).values()
    if isinstance(value, type)
    and issubclass(value, msgspec.Struct)
    and value.__module__ == record.__name__
    and not value.__name__.startswith("_")
]
PAIRS = [(struct, model_of(struct)) for struct in STRUCTS]


def test_every_record_of_the_schema_has_its_model_named_as_gym_names_it() -> None:
    assert len(PAIRS) == 10
    assert [model.__name__ for _, model in PAIRS] == [struct.gym_name for struct in STRUCTS]


@pytest.mark.parametrize(("struct", "model"), PAIRS, ids=[model.__name__ for _, model in PAIRS])
def test_the_same_fields_in_the_same_order_with_the_same_defaults(
    struct: type[msgspec.Struct], model: type[pydantic.BaseModel]
) -> None:
    assert struct.__struct_fields__ == tuple(model.model_fields)
    for field in msgspec.structs.fields(struct):
        expected = model.model_fields[field.name]
        assert field.required == expected.is_required(), field.name
        if field.required:
            continue
        default = field.default_factory() if field.default is msgspec.NODEFAULT else field.default
        theirs = expected.get_default(call_default_factory=True)
        if isinstance(theirs, pydantic.BaseModel):
            assert msgspec.to_builtins(default) == theirs.model_dump(mode="json"), field.name
        else:
            assert default == theirs, field.name


ODD_VALUES = (
    None,
    True,
    False,
    0,
    -1,
    1,
    2**70,
    10**400,
    1.5,
    -0.0,
    -2.5,
    "",
    "x",
    "1.0",
    "responses_api_models",
    "agent_invocation",
    "completed",
    [],
    [{}],
    {},
    {"type": "responses_api_models", "name": "m"},
    {"model_call_id": "m"},
)
"""Values a broken record may hold where a typed field belongs: each type JSON has, bounds of
the numeric constraints, literals of the schema, the shapes of its nested records."""

_NESTED = ("invocations", "turns", "model_calls", "tool_calls", "gaps")


def _typed_places(trajectory: dict[str, Any]) -> list[dict[str, Any]]:
    """Every object of the record that a model of the schema reads (not the raw JSON it
    keeps: conversations, requests, responses, outputs)."""
    places = [trajectory]
    for name in _NESTED:
        items = trajectory.get(name)
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict):
                continue
            places.append(item)
            references = item.get("model_calls")  # an odd value an earlier change set
            for reference in references if isinstance(references, list) else []:
                if isinstance(reference, dict):
                    places.append(reference)
                    if isinstance(reference.get("model_ref"), dict):
                        places.append(reference["model_ref"])
            for nested in ("response_metadata", "token_stats"):
                if isinstance(item.get(nested), dict):
                    places.append(item[nested])
                    if isinstance(item[nested].get("model_ref"), dict):
                        places.append(item[nested]["model_ref"])
    return places


@st.composite
def broken_records(draw: st.DrawFn) -> dict[str, Any]:
    """A record of a drawn rollout (whole, or broken as real runs break), with up to three
    typed fields changed, removed or added."""
    row = draw(agent_runs(draw(st.integers(0, 50)), draw(st.integers(0, 3))))
    trajectory = row.get("ng_trajectory")
    if not isinstance(trajectory, dict):
        return {"task_id": "t", "rollout_id": "r"}
    for _ in range(draw(st.integers(0, 3))):
        place = draw(st.sampled_from(_typed_places(trajectory)))
        action = draw(st.sampled_from(["set", "set", "remove", "add"]))
        if action == "add":
            place[draw(st.sampled_from(["unknown", "kind", "status", "code"]))] = "x"
        elif place:
            key = draw(st.sampled_from(sorted(place)))
            if action == "remove":
                del place[key]
            else:
                place[key] = copy.deepcopy(draw(st.sampled_from(ODD_VALUES)))
    return trajectory


def _pydantic_verdict(raw: dict[str, Any]) -> str | None:
    try:
        model = model_of(record.TrajectoryRecord).model_validate(raw)
    except pydantic.ValidationError:
        return None
    return json.dumps(model.model_dump(mode="json"))


def _struct_verdict(raw: dict[str, Any]) -> str | None:
    try:
        struct = msgspec.convert(raw, record.TrajectoryRecord)
    except msgspec.ValidationError:
        return None
    return json.dumps(msgspec.to_builtins(struct))


@settings(max_examples=300)
@given(raw=broken_records())
def test_both_schemas_accept_and_refuse_the_same_records_and_read_the_same_values(
    raw: dict[str, Any],
) -> None:
    assert _struct_verdict(raw) == _pydantic_verdict(raw)


def _full_record(shape: str) -> dict[str, Any]:
    """A factory record holding at least one of each record of the schema."""
    rng = random.Random(3)
    row = (
        make_rollout(rng, 0, 0, "aime24_math_tool_agent")
        if shape == "tool-agent"
        else make_two_turn_rollout(rng, 0, 1)
    )
    trajectory: dict[str, Any] = row["ng_trajectory"]
    trajectory["gaps"] = [{"code": "g", "invocation_id": None, "detail": "d"}]
    call = trajectory["model_calls"][0]
    call.setdefault("response_metadata", {})["model_ref"] = {
        "type": "responses_api_models",
        "name": "policy",
    }
    call.setdefault("token_stats", {})["total_tokens"] = 7
    return trajectory


def _places_with_models(
    trajectory: dict[str, Any],
) -> list[tuple[str, dict[str, Any], type[pydantic.BaseModel]]]:
    """``(path, object, the model that reads it)`` of every typed object of the record."""
    schema = types.SimpleNamespace(**{struct.__name__: model for struct, model in PAIRS})
    found: list[tuple[str, dict[str, Any], type[pydantic.BaseModel]]] = [
        ("", trajectory, schema.TrajectoryRecord)
    ]

    def references(path: str, item: dict[str, Any]) -> None:
        for index, reference in enumerate(item.get("model_calls") or []):
            found.append((f"{path}.model_calls[{index}]", reference, schema.ModelCallReference))
            if isinstance(reference.get("model_ref"), dict):
                where = f"{path}.model_calls[{index}].model_ref"
                found.append((where, reference["model_ref"], schema.GymModelRef))

    for index, item in enumerate(trajectory.get("invocations") or []):
        found.append((f"invocations[{index}]", item, schema.InvocationRecord))
        references(f"invocations[{index}]", item)
    for index, item in enumerate(trajectory.get("turns") or []):
        found.append((f"turns[{index}]", item, schema.TurnRecord))
        references(f"turns[{index}]", item)
    for index, item in enumerate(trajectory.get("model_calls") or []):
        found.append((f"model_calls[{index}]", item, schema.ModelCallRecord))
        metadata = item.get("response_metadata") or {}
        found.append((f"model_calls[{index}].response_metadata", metadata, schema.ResponseMetadata))
        if isinstance(metadata.get("model_ref"), dict):
            where = f"model_calls[{index}].response_metadata.model_ref"
            found.append((where, metadata["model_ref"], schema.GymModelRef))
        stats = item.get("token_stats") or {}
        found.append((f"model_calls[{index}].token_stats", stats, schema.TokenStats))
    for index, item in enumerate(trajectory.get("tool_calls") or []):
        found.append((f"tool_calls[{index}]", item, schema.ToolCallRecord))
    for index, item in enumerate(trajectory.get("gaps") or []):
        found.append((f"gaps[{index}]", item, schema.Gap))
    return found


_REMOVED = object()
"""An edit that removes the field."""


@pytest.mark.parametrize("shape", ["tool-agent", "two-turn"])
def test_every_field_of_every_record_given_every_odd_value_gets_one_verdict(shape: str) -> None:
    """Each field the schema names, in each record of a full trajectory: set to each odd value,
    removed, and the record given a field it does not name. Thousands of records, one
    verdict each."""
    base = _full_record(shape)
    assert _struct_verdict(base) == _pydantic_verdict(base) is not None
    disagreements = []
    count = len(_places_with_models(base))
    for position in range(count):
        path, place, model = _places_with_models(base)[position]
        edits: list[tuple[str, Any]] = [("unknown", "x")]
        edits += [(name, value) for name in model.model_fields for value in ODD_VALUES]
        edits += [(name, _REMOVED) for name in model.model_fields if name in place]
        for name, value in edits:
            raw = copy.deepcopy(base)
            _, edited, _ = _places_with_models(raw)[position]
            if value is _REMOVED:
                del edited[name]
            else:
                edited[name] = copy.deepcopy(value)
            if _struct_verdict(raw) != _pydantic_verdict(raw):
                disagreements.append(f"{path}.{name} = {value!r}")
    assert disagreements == []


@pytest.mark.parametrize(
    "raw",
    [
        {"task_id": "t", "rollout_id": "r", "model_calls": [{"duration_ms": 5}]},
        {"task_id": "t", "rollout_id": "r", "model_calls": [{"duration_ms": -1}]},
        {"task_id": "t", "rollout_id": "r", "model_calls": [{"duration_ms": True}]},
        {"task_id": "t", "rollout_id": "r", "model_calls": [{"started_at": 10**400}]},
        {
            "task_id": "t",
            "rollout_id": "r",
            "model_calls": [{"token_stats": {"total_tokens": 1.0}}],
        },
        {"task_id": "t", "rollout_id": "r", "turns": [], "extra": 1},
        {"task_id": 1, "rollout_id": "r"},
        {"task_id": "t", "rollout_id": "r", "schema_version": "2.0"},
        {"task_id": "t", "rollout_id": "r", "invocations": [{"invocation_id": "a"}] * 2},
        {"task_id": "t", "rollout_id": "r", "model_calls": [{"model_call_id": "m"}] * 2},
        {
            "task_id": "t",
            "rollout_id": "r",
            "invocations": [{"invocation_id": "a", "model_calls": [{}]}],
        },
        {
            "task_id": "t",
            "rollout_id": "r",
            "tool_calls": [
                {"invocation_id": "a", "tool_call_id": "c", "started_at": 2, "completed_at": 1}
            ],
        },
        {
            "task_id": "t",
            "rollout_id": "r",
            "turns": [
                {
                    "invocation_id": "a",
                    "task_id": "t",
                    "rollout_id": "other",
                    "turn_no": 1,
                    "timestamp": 0,
                    "step_count": 0,
                }
            ],
        },
        {
            "task_id": "t",
            "rollout_id": "r",
            "turns": [
                {
                    "invocation_id": "a",
                    "task_id": "t",
                    "rollout_id": "r",
                    "turn_no": 0,
                    "timestamp": 0,
                    "step_count": 0,
                }
            ],
        },
    ],
)
def test_both_schemas_agree_on_the_edges_of_each_rule(raw: dict[str, Any]) -> None:
    assert _struct_verdict(raw) == _pydantic_verdict(raw)


class _Inner(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    count: Annotated[int, msgspec.Meta(ge=0)]


class _Outer(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    by_name: dict[str, _Inner] = {}
    listed: list[_Inner | None] = []
    mode: Literal["a", "b"] = "a"


def test_a_model_is_derived_through_any_container_of_records() -> None:
    """A field the schema may gain (records in a dict, optional records in a list) is derived
    as the rest."""
    model = model_of(_Outer)
    model.model_validate(
        {"by_name": {"x": {"count": 1}}, "listed": [None, {"count": 0}], "mode": "b"}
    )
    for bad in ({"by_name": {"x": {"count": -1}}}, {"listed": [{"other": 1}]}, {"mode": "c"}):
        assert _struct_verdict_of(_Outer, bad) is None
        with pytest.raises(pydantic.ValidationError):
            model.model_validate(bad)


def _struct_verdict_of(struct: type[msgspec.Struct], raw: dict[str, Any]) -> object:
    try:
        return msgspec.convert(raw, struct)
    except msgspec.ValidationError:
        return None


def test_a_refusal_names_gyms_model_as_gyms_validation_does() -> None:
    raw = {"task_id": "t", "rollout_id": "r", "model_calls": [{"token_stats": 5}]}
    with pytest.raises(RecordError) as refused:
        validate_record(raw)
    assert refused.value.reasons == (
        (
            "ng_trajectory.model_calls[0].token_stats",
            "Input should be a valid dictionary or instance of TrajectoryTokenStats",
        ),
    )


def _gyms_reasons(found: list[tuple[list[int | str], str]]) -> list[tuple[str, str]]:
    """Gym's strict errors as a refusal lists them: each field's first, with its path."""
    reasons: dict[str, str] = {}
    for location, message in found:
        path = "ng_trajectory" + "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in location
        )
        reasons.setdefault(path, message.removeprefix("Value error, "))
    return list(reasons.items())


_FOUND_BY_CI = json.loads(
    (
        Path(__file__).parent
        / "regressions"
        / "unknown_model_key_and_a_turn_of_another_rollout.json"
    ).read_text()
)
"""A record CI's search found (2026-12-07): a model reference's unknown key, and a turn whose
``rollout_id`` is not the record's. Gym words only the turn; the schema here only the key."""


@pytest.mark.gym
@settings(max_examples=150, deadline=None)
@given(raw=broken_records())
@example(raw=_FOUND_BY_CI)
def test_a_refusal_gives_every_reason_gyms_strict_validation_gives(
    gym_oracle: GymOracle, raw: dict[str, Any]
) -> None:
    """Field by field and word for word, as Gym's ATIF exporter's ``strict=True`` validation
    of ``TrajectoryRecord`` words them, model names included. But one: a model reference's
    unknown key, which Gym's ``ModelServerRef`` drops and Gym's exporter refuses before it
    validates (its preflight, in words of its own), the schema here refuses with the rest; a
    field refused so, the record's own checks (Gym's at ``ng_trajectory`` itself: a turn's
    identity against the record's) are not reached here, as they are not in Gym's export."""
    ours: list[tuple[str, str]] = []
    unknown_model_key = False
    try:
        validate_record(raw)
    except RecordError as refused:
        for path, detail in refused.reasons:
            if ".model_ref." in path and detail == "Extra inputs are not permitted":
                unknown_model_key = True
            else:
                ours.append((path, detail))
    gyms = _gyms_reasons(gym_oracle.strict_record_errors(raw))
    if unknown_model_key:
        gyms = [(path, detail) for path, detail in gyms if path != "ng_trajectory"]
    assert ours == gyms


def test_a_refusal_names_the_first_bad_field_as_pydantic_words_it() -> None:
    raw = {"task_id": "t", "rollout_id": "r", "model_calls": [{}, {"duration_ms": -1}]}
    with pytest.raises(RecordError) as refused:
        validate_record(raw)
    assert refused.value.path == "ng_trajectory.model_calls[1].duration_ms"
    assert refused.value.detail == "Input should be greater than or equal to 0"


def test_a_record_only_pydantic_accepts_is_read_from_pydantics_models(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Were the schemas ever to disagree this way, no row would be refused for it."""
    raw = {
        "task_id": "t",
        "rollout_id": "r",
        "model_calls": [
            {
                "model_call_id": "m",
                "duration_ms": 3,
                "response_metadata": {"model_ref": {"type": "responses_api_models", "name": "p"}},
            }
        ],
        "gaps": [{"code": "g"}],
    }
    expected = validate_record(raw)

    def refuse(value: object, kind: type) -> object:
        raise msgspec.ValidationError("refused for the test")

    monkeypatch.setattr(record.msgspec, "convert", refuse)
    read = validate_record(raw)
    assert read == expected
    assert type(read.model_calls[0].response_metadata) is record.ResponseMetadata
