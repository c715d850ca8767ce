"""NeMo Gym ``ng_trajectory`` records (schema 1.0) to ATIF v1.7 trajectories (SPEC §4).

* :mod:`.strict_json`: rollout lines read as strict RFC 8259 JSON;
* :mod:`.record`: the ``TrajectoryRecord`` schema as msgspec Structs, validated;
* :mod:`.record_schema`: pydantic models derived from those Structs, which word a refusal;
* :mod:`.conversation`: Responses conversation items checked and made canonical;
* :mod:`.steps`: ATIF steps from the root invocation's conversation;
* :mod:`.convert`: one rollout to one ATIF document, turns cross-checked.

One row to one trajectory, in memory: this package reads no file and writes none (a whole file
converted and written is :mod:`evalexport.backends.atif`'s), and imports neither the machine
(``host``), the ingress gate nor the workers' isolation (the ``trajectory-converts-only``
contract in ``pyproject.toml``).
"""

from __future__ import annotations

from evalexport.trajectory.convert import (
    ATIF_SCHEMA_VERSION,
    ConvertedTrajectory,
    TrajectoryIdentity,
    agent_label,
    convert_rollout,
    rollout_index,
)
from evalexport.trajectory.steps import TrajectoryError
from evalexport.trajectory.strict_json import StrictJsonError, loads_strict

__all__ = [
    "ATIF_SCHEMA_VERSION",
    "ConvertedTrajectory",
    "StrictJsonError",
    "TrajectoryError",
    "TrajectoryIdentity",
    "agent_label",
    "convert_rollout",
    "loads_strict",
    "rollout_index",
]
