"""What a conversion makes and says: an ATIF step under construction, the conversation items
behind an agent step, content as ATIF holds it, and the error naming each reason a rollout is
refused (:mod:`.steps` reads a conversation into them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from evalexport.trajectory.conversation import Item
from evalexport.trajectory.images import image_media_type
from evalexport.trajectory.relaxations import Relaxations

__all__ = [
    "REASONING_SEPARATOR",
    "AgentGroup",
    "Reason",
    "Step",
    "TrajectoryError",
    "reasoning_segments",
    "said",
    "text_content",
]


Reason = tuple[str, str]
"""``(field path, what is wrong there)``: one reason a row is refused."""


def said(reasons: Sequence[Reason]) -> str:
    """Reasons as one message: ``path: detail; path: detail``, in the order found."""
    return "; ".join(f"{path}: {detail}" for path, detail in reasons)


class TrajectoryError(ValueError):
    """A rollout cannot be converted to ATIF without loss; the message names the field path of
    each reason found (``reasons``: every one, the first as ``path``)."""

    def __init__(self, path: str, detail: str, *, more: Sequence[Reason] = ()) -> None:
        self.reasons: tuple[Reason, ...] = ((path, detail), *more)
        super().__init__(said(self.reasons))
        self.path = path

    @classmethod
    def of(cls, reasons: Sequence[Reason]) -> TrajectoryError:
        """One error for ``reasons`` (at least one)."""
        (path, detail), *more = reasons
        return cls(path, detail, more=more)


@dataclass
class Step:
    """One ATIF step under construction; :meth:`to_json` emits ATIF's field order."""

    step_id: int
    source: str
    message: object
    timestamp: str | None = None
    model_name: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[dict[str, object]] | None = None
    observation: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None
    llm_call_count: int | None = None
    extra: dict[str, object] | None = None

    def to_json(self) -> dict[str, object]:
        """The step as ATIF's JSON, keys in Gym's order."""
        document: dict[str, object] = {
            "step_id": self.step_id,
            "source": self.source,
            "message": self.message,
        }
        # Field by field, in ATIF's order: a step is made for every turn of every row.
        if self.timestamp is not None:
            document["timestamp"] = self.timestamp
        if self.model_name is not None:
            document["model_name"] = self.model_name
        if self.reasoning_content is not None:
            document["reasoning_content"] = self.reasoning_content
        if self.tool_calls is not None:
            document["tool_calls"] = self.tool_calls
        if self.observation is not None:
            document["observation"] = self.observation
        if self.metrics is not None:
            document["metrics"] = self.metrics
        if self.llm_call_count is not None:
            document["llm_call_count"] = self.llm_call_count
        if self.extra is not None:
            document["extra"] = self.extra
        return document


@dataclass
class AgentGroup:
    """The items behind one agent step: what the model saw, its reasoning and its answer."""

    question: list[Item]
    reasoning: list[Item]
    answer: list[Item]
    step: Step
    tool_call_count: int = 0
    source_items: dict[str, object] = field(default_factory=dict)


def text_content(value: object, path: str) -> str | list[dict[str, object]]:
    """A message's content as ATIF content: the string, or its parts as ATIF parts (an image
    part, ``images`` relaxed, names its URL; :func:`.convert.convert_rollout` writes a data
    URL's image as a file and moves its ``detail`` to the step's extra)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list) or not value:
        raise TrajectoryError(path, "expected non-empty scalar or multipart text content")
    return [_atif_part(part) for part in value]


def _atif_part(part: dict[str, Any]) -> dict[str, object]:
    if part["type"] != "input_image":
        return {"type": "text", "text": part["text"]}
    url = part["image_url"]
    source = {"media_type": image_media_type(url), "path": url}
    return {"type": "image", "source": source, "detail": part.get("detail")}


REASONING_SEPARATOR: Final = "\n\n"
"""What joins an agent step's reasoning segments when ``reasoning_segments`` is relaxed."""


def reasoning_segments(items: list[Item], path: str, relax: Relaxations | None = None) -> list[str]:
    """The reasoning texts of an agent step, in order; ATIF holds one, so more than one is
    refused unless ``reasoning_segments`` is relaxed.

    With ``empty_reasoning`` relaxed, an item without any text adds no segment.
    """
    segments: list[str] = []
    for index, item in enumerate(items):
        content = item.canonical.get("content") or []
        summary = item.canonical.get("summary") or []
        if item.canonical.get("encrypted_content") is not None:
            raise TrajectoryError(f"{path}[{index}]", "encrypted reasoning is not supported")
        if content and summary:
            raise TrajectoryError(
                f"{path}[{index}]",
                "reasoning with both content and summary cannot be represented without dropping one",
            )
        source = content or summary
        if not source:
            if relax is not None and relax.permits("empty_reasoning"):
                continue
            raise TrajectoryError(
                f"{path}[{index}]",
                "encrypted or empty reasoning cannot be represented as ATIF text",
            )
        segments.extend(part["text"] for part in source)
    if len(segments) > 1 and (relax is None or not relax.permits("reasoning_segments")):
        raise TrajectoryError(
            path, "multiple reasoning segments cannot be represented without changing boundaries"
        )
    return segments
