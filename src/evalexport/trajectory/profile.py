"""NeMo Gym's strict ATIF profile, as data: the schema and profile a trajectory names, the
exporter it is held to, the row keys a rollout is known by, the coverage gap codes Gym writes,
and who made the trajectories (the exporter's options)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, final

__all__ = [
    "ATIF_SCHEMA_VERSION",
    "CONVERSION_PROFILE",
    "ENVIRONMENT_SERVER",
    "GYM_GAP_CODES",
    "REFERENCE_EXPORTER",
    "ROLLOUT_INDEX",
    "TASK_INDEX",
    "TURNS_UNAVAILABLE",
    "TrajectoryIdentity",
]

ATIF_SCHEMA_VERSION: Final = "ATIF-v1.7"
CONVERSION_PROFILE: Final = "ng-trajectory-to-atif-v1"
REFERENCE_EXPORTER: Final = {"name": "nemo-gym", "version": "0.7.0"}
"""Recorded in every trajectory's ``extra.nemo_gym.exporter``: the files evalexport writes are
those of nemo-gym 0.7.0's strict exporter, byte for byte, and consumers key on that profile."""

TASK_INDEX: Final = "_ng_task_index"
ROLLOUT_INDEX: Final = "_ng_rollout_index"
ENVIRONMENT_SERVER: Final = "_ng_environment_server"
TURNS_UNAVAILABLE: Final = "turns_unavailable"

GYM_GAP_CODES: Final = frozenset(
    {
        "agent_observation_join_failed",
        "agent_observations_invalid",
        "compaction_model_call_join_failed",
        "conversation_unavailable",
        "duplicate_call_id_conflict",
        "model_call_capture_gap_invalid",
        "model_call_capture_incomplete",
        "model_call_capture_no_records",
        "model_call_capture_records_unreadable",
        "model_call_capture_unreadable",
        "model_call_ownership_unavailable",
        "model_call_reference_ambiguous",
        "model_call_reference_conflict",
        "model_call_reference_unmatched",
        "model_calls_unavailable",
        "producer_trajectory_identity_mismatch",
        "producer_trajectory_invalid",
        "resolution_unavailable",
        "trajectory_projection_failed",
        "turns_unavailable",
    }
)
"""The coverage gap codes NeMo Gym 0.7.0's recorders and agents write (an agent may write its
own: ``+allow_gaps`` takes any code a row of the run records, and these)."""


@final
@dataclass(frozen=True)
class TrajectoryIdentity:
    """Who made the trajectories and the session they belong to: the exporter's options."""

    session_id: str
    agent_version: str
    agent_name: str | None = None
    """Overrides each rollout's ``agent_ref.name`` when set (not a Gym option)."""
