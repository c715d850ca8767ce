"""The ``atif`` exporter's options (SPEC §4) and the target they resolve to."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Self

from pydantic import Field, field_validator, model_validator

from evalexport.spec import ExporterConfig, Target, named_option
from evalexport.trajectory.relaxations import RELAXATIONS, Relaxation

__all__ = ["AtifConfig", "AtifTarget"]


class AtifConfig(ExporterConfig):
    """Options of the ``atif`` exporter (SPEC §4)."""

    output_dirpath: Path = Field(
        description="Directory to create for the trajectories; it must not exist yet."
    )
    agent_version: str = Field(description="Version of the agent that produced the run.")
    session_id: str | None = Field(
        default=None, description="ATIF session id; default: the rollouts file's stem."
    )
    agent_name: str | None = Field(
        default=None,
        description=(
            "ATIF agent name; default: each rollout's agent_ref.name. With "
            "'+relax=[unnamed_agents]', the name of rows that name no agent."
        ),
    )
    agent: str | None = Field(
        default=None,
        description=(
            "Export only the rows of this agent (agent_ref.name), as if the file held them "
            "alone: how a run of several agents goes to ATIF, one agent (and one "
            "+output_dirpath and +agent_version) at a time. Default: every row, of one agent."
        ),
    )
    allow_gaps: list[str] = Field(
        default=[],
        description=(
            "Coverage gap codes to export anyway (e.g. [resolution_unavailable]); each such "
            "trajectory lists its gaps in extra.nemo_gym.gaps. Default: none (strict)."
        ),
    )
    relax: list[Relaxation] = Field(
        default=[],
        description=(
            f"Relaxations of Gym's strict profile to accept: {', '.join(RELAXATIONS)} (see "
            "docs/exporters/atif.md); each trajectory that needs one lists it in "
            "extra.nemo_gym.relaxations. "
            "Default: none (strict)."
        ),
    )

    @field_validator("agent_version", "session_id", "agent_name", "agent")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must contain a non-whitespace character")
        return value

    @model_validator(mode="after")
    def _unnamed_agents_are_named(self) -> Self:
        if "unnamed_agents" in self.relax and self.agent_name is None:
            raise ValueError(
                f"{named_option('relax', '[unnamed_agents]')} gives the rows that name no agent "
                f"the name of {named_option('agent_name', 'NAME')}; give "
                f"{named_option('agent_name')} too"
            )
        return self


@dataclass(frozen=True, kw_only=True)
class AtifTarget(Target):
    """The directory an ATIF export creates."""

    output: Path
    """``+output_dirpath``, absolute."""
    exported_before: bool = False
    """Whether ``output`` is there already, holding the record of an ATIF export: the read
    tells whether it is this one (:meth:`AtifExporter.read`)."""
