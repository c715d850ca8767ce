"""Relaxations of the strict ATIF profile (``+relax``) on rows shaped as Gym's agents write them.

Each relaxable fault (``strategies.RELAXATION_FOR_FAULT``) is refused without its relaxation,
exported with it (recorded as exactly that relaxation, conversion ``partial``, a valid ATIF
file), and refused when every *other* relaxation is offered. Rows that need no relaxation
convert to the same document whatever is offered. Under ``--with_gym``,
``tests/trajectory/test_gym_parity.py`` checks that Gym's model accepts every such record and
that Gym's strict exporter refuses exactly the rows evalexport refuses without the opt-in.
"""

from __future__ import annotations

import json
from typing import Any

import atif
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from evalexport.trajectory.convert import TrajectoryIdentity, convert_rollout
from evalexport.trajectory.relaxations import RELAXATIONS
from evalexport.trajectory.steps import TrajectoryError
from tests.trajectory.strategies import RELAXATION_FOR_FAULT, agent_runs

IDENTITY = TrajectoryIdentity(session_id="s", agent_version="1.0")
_SETTINGS = settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])


NAMED = TrajectoryIdentity(session_id="s", agent_version="1.0", agent_name="named")
"""With ``+agent_name``, which ``unnamed_agents`` needs (and which names every other row too)."""


def _refusal(row: dict[str, Any], relaxations: Any = (), identity=IDENTITY) -> str | None:
    try:
        convert_rollout(row, identity, relaxations=relaxations)
    except TrajectoryError as error:
        return str(error)
    return None


@pytest.mark.parametrize("fault", sorted(RELAXATION_FOR_FAULT))
@_SETTINGS
@given(data=st.data())
def test_each_relaxable_fault_is_exported_with_its_relaxation_only(fault: str, data) -> None:
    row = data.draw(agent_runs(0, 0, fault))
    needed = RELAXATION_FOR_FAULT[fault]
    identity = NAMED if needed == "unnamed_agents" else IDENTITY
    assume(_refusal(row) is not None)  # a fault with nothing to act on leaves the row whole
    assert _refusal(row, (), identity) is not None, f"{fault} converted without {needed}"
    others = [name for name in RELAXATIONS if name != needed]
    assert _refusal(row, others, identity) is not None, f"{fault} converted without {needed}"
    converted = convert_rollout(json.loads(json.dumps(row)), identity, relaxations=[needed])
    assert converted.relaxations == (needed,)
    nemo_gym = converted.document["extra"]["nemo_gym"]
    assert nemo_gym["relaxations"] == [needed]
    assert nemo_gym["conversion"]["status"] == "partial"
    atif.Trajectory.model_validate(json.loads(converted.encode()))


@_SETTINGS
@given(data=st.data())
def test_a_row_that_needs_no_relaxation_converts_the_same_whatever_is_offered(data) -> None:
    row = data.draw(agent_runs(0, 0, "none"))
    strict = convert_rollout(json.loads(json.dumps(row)), IDENTITY)
    offered = convert_rollout(row, IDENTITY, relaxations=list(RELAXATIONS))
    assert offered.relaxations == ()
    assert offered.encode() == strict.encode()
