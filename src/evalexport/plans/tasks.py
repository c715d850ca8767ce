"""An export plan's unit of work: one export of one benchmark's run (:class:`ExportTask`), and
how it ended (:class:`TaskOutcome`); both cross processes as JSON (the pool's stdin lines, a
Slurm array's ``tasks.json`` and result files)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from evalexport.results import ExitCode, ExportResult

__all__ = ["ExportTask", "TaskOutcome"]


@final
@dataclass(frozen=True)
class ExportTask:
    """One export of one benchmark's run, with its options fully resolved."""

    benchmark: str
    exporter: str
    rollouts: Path
    options: dict[str, object]

    def overrides(self) -> list[str]:
        """The options as ``+key=value`` tokens the CLI parses back into the same values."""

        tokens = [f"+rollouts_jsonl_fpath={self.rollouts}"]
        for key, value in sorted(_dotted(self.options).items()):
            text = value if isinstance(value, str) and _plain(value) else json.dumps(value)
            tokens.append(f"+{key}={text}")
        return tokens

    # -- the task as a message: the pool's stdin lines and a Slurm array's tasks.json --------

    def to_json_data(self) -> dict[str, object]:
        """The task as JSON-ready data (:meth:`to_json` without the encoding)."""
        return {
            "benchmark": self.benchmark,
            "exporter": self.exporter,
            "rollouts": str(self.rollouts),
            "options": self.options,
        }

    def to_json(self) -> str:
        """One line: how a task crosses to an export process."""

        return json.dumps(self.to_json_data())

    @classmethod
    def from_json_data(cls, data: object) -> ExportTask:
        """Raises :class:`ValueError` naming what is wrong with a task that is not one."""
        if not isinstance(data, dict) or set(data) != _TASK_KEYS:
            keys = sorted(data) if isinstance(data, dict) else type(data).__name__
            raise ValueError(f"an export task has the keys {sorted(_TASK_KEYS)}, got {keys}")
        text = {key: data[key] for key in ("benchmark", "exporter", "rollouts")}
        if not all(isinstance(value, str) for value in text.values()):
            raise ValueError(f"an export task's {', '.join(text)} are text, got {text!r}")
        if not isinstance(data["options"], dict):
            raise ValueError(f"an export task's options are a mapping, got {data['options']!r}")
        return cls(
            data["benchmark"], data["exporter"], Path(data["rollouts"]), dict(data["options"])
        )

    @classmethod
    def from_json(cls, line: str) -> ExportTask:
        """The task a :meth:`to_json` line holds; :class:`PlanError` if it is not one."""

        return cls.from_json_data(json.loads(line))

    def failed(
        self, message: str, exit_code: int = 1, interrupted_by: str | None = None
    ) -> ExportResult:
        """This task's failed result, for an export that ended without one of its own (a crashed
        export process, an array task that left no result, a plan stopped before it)."""
        return ExportResult.failed(
            self.exporter,
            str(self.rollouts.parent),
            message,
            exit_code=ExitCode(exit_code),
            interrupted_by=interrupted_by,
        )


_TASK_KEYS = frozenset({"benchmark", "exporter", "rollouts", "options"})


_OUTCOME_KEYS = frozenset({"benchmark", "exporter", "rollouts", "seconds", "result"})
"""What :meth:`TaskOutcome.as_json_data` writes."""


@final
@dataclass(frozen=True)
class TaskOutcome:
    """How one task of a plan ended: its result and how long it took."""

    benchmark: str
    exporter: str
    rollouts: str
    seconds: float
    result: ExportResult

    def as_json_data(self) -> dict[str, Any]:
        """The outcome as JSON-ready data, its result included."""
        return {
            "benchmark": self.benchmark,
            "exporter": self.exporter,
            "rollouts": self.rollouts,
            "seconds": self.seconds,
            "result": self.result.model_dump(mode="json"),
        }

    @classmethod
    def from_json_data(cls, data: object) -> TaskOutcome:
        """The outcome :meth:`as_json_data` wrote; :class:`ValueError` (or :class:`TypeError`)
        naming what is wrong with data that is not one."""
        if not isinstance(data, dict) or not set(data) >= _OUTCOME_KEYS:
            keys = sorted(data) if isinstance(data, dict) else type(data).__name__
            raise ValueError(f"a task's outcome has the keys {sorted(_OUTCOME_KEYS)}, got {keys}")
        return cls(
            str(data["benchmark"]),
            str(data["exporter"]),
            str(data["rollouts"]),
            float(data["seconds"]),
            ExportResult.model_validate(data["result"]),
        )

    @classmethod
    def of(cls, task: ExportTask, seconds: float, result: ExportResult) -> TaskOutcome:
        """The outcome of ``task``: its result and how long it took."""
        return cls(task.benchmark, task.exporter, str(task.rollouts), seconds, result)


def _plain(text: str) -> bool:
    """A string the CLI's YAML parsing reads back unchanged."""
    from evalexport.spec.overrides import parse_value

    try:
        return bool(parse_value(text) == text)
    except ValueError:
        return False


def _dotted(options: Mapping[str, object], prefix: str = "") -> dict[str, object]:
    flat: dict[str, object] = {}
    for key, value in options.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(_dotted(value, f"{name}."))
        else:
            flat[name] = value
    return flat
