"""What converting one rollouts file found: each converted row (its manifest and relaxed
lines), each refused row and the options that would take it, the file's tally, its agents, and
what refuses the file as a whole (:mod:`.files` converts it)."""

from __future__ import annotations

import json
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, NamedTuple

from evalexport.spec import named_option
from evalexport.trajectory.convert import (
    ROLLOUT_INDEX,
    TASK_INDEX,
)

__all__ = ["ConvertedRow", "FileConversion", "FirstLines", "Rejection"]


class ConvertedRow(NamedTuple):
    """One converted row, its trajectory file written (unless converting in memory only).

    A tuple, so a pool worker sends it back to the parent at the cost of its fields alone.
    """

    line_number: int
    file_name: str
    task_index: int
    rollout_index: int
    sha256: str
    size: int
    """The trajectory file's length in bytes: what the output's check holds the file to."""
    gap_codes: tuple[str, ...]
    relaxations: tuple[str, ...] = ()
    images: tuple[str, ...] = ()
    """The image files its trajectory names (``images`` relaxed), under ``images/``."""

    def manifest_line(self) -> str:
        """The row's ``manifest.jsonl`` line: exactly the four fields NeMo Gym's ingress
        accepts (``AtifReverifyManifestEntry`` forbids any other), whatever the row needed.

        ``json.dumps(entry, sort_keys=True, separators=(",", ":"))`` of those fields, written
        from a template (a file name is ASCII digits, a dash and ``.json``; a hash is hex).
        """
        return (
            f'{{"{ROLLOUT_INDEX}":{self.rollout_index},"{TASK_INDEX}":{self.task_index},'
            f'"expected_sha256":"{self.sha256}","trajectory_path":"{self.file_name}"}}'
        )

    def relaxed_line(self) -> str | None:
        """The row's ``relaxed.jsonl`` line when it was written beyond Gym's strict profile
        (its allowed gaps, the relaxations it needed), or ``None`` for a strict row.

        The manifest's keys identify the trajectory; ``gap_codes`` and ``relaxations`` say what
        it needed, each only when it needed any. Sorted keys, compact separators.
        """
        if not self.gap_codes and not self.relaxations:
            return None
        entry: dict[str, object] = {
            TASK_INDEX: self.task_index,
            ROLLOUT_INDEX: self.rollout_index,
            "trajectory_path": self.file_name,
        }
        if self.gap_codes:
            entry["gap_codes"] = sorted(set(self.gap_codes))
        if self.relaxations:
            entry["relaxations"] = sorted(self.relaxations)
        return json.dumps(entry, sort_keys=True, separators=(",", ":"))


@dataclass
class FileConversion:
    """What converting a file found: trajectories, rejected rows, agents and gaps."""

    converted: int = 0
    rows: int = 0
    rejected: list[str] = field(default_factory=list)
    duplicate_keys: int = 0
    """How many of :attr:`rejected` repeat an earlier row's (task, rollout) key: no
    ``+allow_gaps`` or ``+relax`` accepts those, as Gym accepts none."""
    agents: set[str] = field(default_factory=set)
    gap_counts: Counter[str] = field(default_factory=Counter)
    trajectories_with_gaps: int = 0
    relaxation_counts: Counter[str] = field(default_factory=Counter)
    images: set[str] = field(default_factory=set)
    """The image files the trajectories name, written under ``images/`` beside them."""
    """Relaxation -> number of trajectories that needed it."""
    trajectories_relaxed: int = 0
    other_agents: Counter[str] = field(default_factory=Counter)
    """With one agent asked for: the rows of each other agent, left out."""
    options_that_accept: Counter[str] = field(default_factory=Counter)
    """Of the rejected rows some option accepts: ``allow_gaps:CODE`` or ``relax:NAME`` -> the
    rows that need it."""
    accepted_by_no_option: int = 0
    """Rejected rows no ``+allow_gaps`` or ``+relax`` accepts (a repeated key among them)."""
    rollouts_sha256: str = ""
    """``sha256:<hex>`` of the rollouts file's bytes, hashed as they were read for the
    conversion (what the export's record names the run by)."""

    def options_advice(self) -> str:
        """The options that would accept the rejected rows, said as the user would give them,
        or that none would (what ``evalexport inspect`` reports too)."""
        needed: dict[str, list[str]] = {"allow_gaps": [], "relax": []}
        for option in sorted(self.options_that_accept):
            kind, _, name = option.partition(":")
            needed[kind].append(name)
        given = [
            named_option(kind, f"[{','.join(names)}]") for kind, names in needed.items() if names
        ]
        if "unnamed_agents" in needed["relax"]:
            given.append(named_option("agent_name", "NAME"))
        if not given:
            return (
                f"No {named_option('allow_gaps')} or {named_option('relax')} option accepts "
                "these rows: fix what each reason above names."
            )
        options = " ".join(given)
        if self.accepted_by_no_option == 0:
            return (
                f"With {options} every rejected row converts (beyond Gym's strict profile: "
                "each trajectory, relaxed.jsonl and the result say what it needed; "
                "docs/exporters/atif.md lists each option)."
            )
        accepted = len(self.rejected) - self.accepted_by_no_option
        return (
            f"{options} would accept {accepted} of the {len(self.rejected)} rejected rows; no "
            f"option accepts the other {self.accepted_by_no_option}: fix what their reasons "
            "above name."
        )

    def agents_problem(self, path: Path) -> str | None:
        """Why the file's agents cannot go into one batch of trajectories, or ``None``."""
        if len(self.agents) == 1 or (self.rows == 0 and not self.agents):
            return None
        if not self.agents:
            return (
                f"No row of {path} names its agent (agent_ref.name, or the environment server "
                f"stamp), and a trajectory needs one: '{named_option('relax', '[unnamed_agents]')}'"
                f" with {named_option('agent_name', 'NAME')} gives them that name."
            )
        named = ", ".join(sorted(map(str, self.agents)))
        first = min(map(str, self.agents), default="NAME")
        return (
            "Strict ATIF export requires one agent_ref.name per file, because "
            f"{named_option('agent_version')} describes the whole batch; {path} holds rows of "
            f"{len(self.agents)} agents ({named}). Export one agent's rows at a time with "
            f"{named_option('agent', 'NAME')}, each with its own {named_option('output_dirpath')}"
            f" and {named_option('agent_version')} (e.g. {named_option('agent', first)})."
        )

    def problem(self, path: Path, agent: str | None = None) -> str | None:
        """Why the file as a whole cannot be exported, or ``None``; ``agent``: the agent whose
        rows were asked for."""
        if self.rejected:
            return None  # the caller lists the rows
        if self.rows == 0 and agent is not None:
            held = ", ".join(
                f"{name} ({rows} rows)" for name, rows in sorted(self.other_agents.items())
            )
            return (
                f"{named_option('agent', agent)}: no row of {path} is of that agent (agent_ref.name); it holds "
                f"{held or 'no rows'}"
            )
        if self.rows == 0:
            return f"Rollouts file contains no records: {path}"
        return self.agents_problem(path)


class FirstLines:
    """The line each ``(task, rollout)`` key first appeared on, in a few bytes a row.

    Gym numbers a task's rollouts 0, 1, 2, ...: those go into one array of line numbers per
    task (8 bytes a row; a dict of tuple keys costs about 175). A rollout index far past its
    task's array goes into a plain dict, so no file can make an array grow out of proportion.
    """

    _MAX_GAP: Final = 8

    def __init__(self) -> None:
        self._dense: dict[int, array[int]] = {}
        self._sparse: dict[tuple[int, int], int] = {}

    def earlier(self, key: tuple[int, int], line_number: int) -> int | None:
        """The line ``key`` was first seen on; ``None``, and ``line_number`` recorded, if new.

        A key lives in one place: its task's array when it was first seen within reach of it,
        else the dict. An array may later grow past a key the dict holds, so a slot of the
        array that is still zero is not proof of a new key until the dict has been asked.
        """
        task, rollout = key
        lines = self._dense.get(task)
        if lines is None:
            lines = self._dense[task] = array("q")
        if rollout < len(lines) and (first := lines[rollout]):
            return first
        if self._sparse and (earlier := self._sparse.get(key)) is not None:
            return earlier
        if rollout < len(lines):
            lines[rollout] = line_number
        elif rollout - len(lines) < self._MAX_GAP:
            lines.frombytes(bytes(8 * (rollout - len(lines))))  # zeros: not seen
            lines.append(line_number)
        else:
            self._sparse[key] = line_number
        return None


class Rejection(NamedTuple):
    """A row the conversion refused: why, and the options that would accept it."""

    reason: str
    options: tuple[str, ...] | None
    """``allow_gaps:CODE`` and ``relax:NAME`` the row needs (:func:`~evalexport.trajectory.convert.options_that_accept`),
    or ``None`` when no option accepts it."""
