"""Whatever JSON a row holds wherever, its conversion ends in a trajectory or a refusal of that
row (:class:`TrajectoryError`), never in another exception that fails the whole export. A list
or an object where a role, a status or a part's type belongs was once looked up in a set
(``TypeError: unhashable type``), found by checking rows broken at random against Gym's own
exporter."""

from __future__ import annotations

import contextlib
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalexport.testing.factory import make_two_turn_rollout
from evalexport.trajectory.convert import TrajectoryIdentity, convert_rollout
from evalexport.trajectory.relaxations import RELAXATIONS
from evalexport.trajectory.step_model import TrajectoryError
from tests.trajectory.strategies import rows_broken_anywhere

IDENTITY = TrajectoryIdentity(session_id="s", agent_version="1.0")


@settings(max_examples=400, deadline=None)
@given(row=rows_broken_anywhere(), relaxed=st.booleans())
def test_a_row_converts_or_is_refused_whatever_it_holds(row: dict[str, Any], relaxed: bool) -> None:
    with contextlib.suppress(TrajectoryError):
        convert_rollout(row, IDENTITY, relaxations=sorted(RELAXATIONS) if relaxed else ())


def test_a_list_where_a_role_belongs_is_refused_by_name() -> None:
    row = make_two_turn_rollout(random.Random(1), 0, 1)
    row["ng_trajectory"]["invocations"][0]["conversation"][0]["role"] = {}
    with pytest.raises(TrajectoryError) as refused:
        convert_rollout(row, IDENTITY)
    assert refused.value.path == "ng_trajectory.invocations[0].conversation[0].role"


def test_an_output_message_without_its_role_is_an_assistants_as_gyms_model_defaults_it() -> None:
    """``NeMoGymResponseOutputMessage`` defaults ``role`` to ``assistant``, and Gym's strict
    exporter converts such an item (held to Gym's files under ``--with_gym``)."""
    row = make_two_turn_rollout(random.Random(1), 0, 1)
    answer = row["ng_trajectory"]["invocations"][0]["conversation"][-1]
    assert answer["role"] == "assistant"
    with_role = convert_rollout(row, IDENTITY).encode()
    del answer["role"]
    assert convert_rollout(row, IDENTITY).encode() == with_role
    answer["content"] = "a string is no output"
    with pytest.raises(TrajectoryError, match=r"conversation\[6\]\.role"):
        convert_rollout(row, IDENTITY)


def test_an_unknown_field_of_an_output_message_without_its_role_is_refused_beyond_gym() -> None:
    """Gym's preflight checks a message's fields only when its role is written: without it,
    Gym drops the field silently. evalexport refuses it, as Gym does with the role written
    (docs/exporters/atif.md)."""
    row = make_two_turn_rollout(random.Random(1), 0, 1)
    answer = row["ng_trajectory"]["invocations"][0]["conversation"][-1]
    del answer["role"]
    answer["content"][0]["extra_key"] = [{}]
    with pytest.raises(TrajectoryError, match=r"unsupported fields would be dropped: 'extra_key'"):
        convert_rollout(row, IDENTITY)
