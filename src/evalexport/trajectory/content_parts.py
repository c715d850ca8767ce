"""The content parts of a Responses message or reasoning item, read as NeMo Gym's strict ATIF
export reads them: text parts, and the images ATIF can hold where ``images`` is relaxed; and
:class:`ItemError`, what refuses an item by its path."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from evalexport.trajectory.images import image_media_type
from evalexport.trajectory.relaxations import Relaxations

__all__ = [
    "OUTPUT_PART_TYPES",
    "ItemError",
    "input_parts",
    "output_parts",
    "reasoning_parts",
    "unknown_fields",
]


OUTPUT_PART_TYPES = frozenset({"output_text", "refusal"})
_INPUT_PART_TYPES = frozenset({"input_text", "input_image", "input_file", "input_video"})


class ItemError(ValueError):
    """Conversation items cannot be converted; ``reasons`` holds each one's path and why (the
    message: ``path: detail``, then the others')."""

    def __init__(self, path: str, detail: str, *, more: Sequence[tuple[str, str]] = ()) -> None:
        self.reasons: tuple[tuple[str, str], ...] = ((path, detail), *more)
        super().__init__("; ".join(f"{p}: {d}" for p, d in self.reasons))


def unknown_fields(item: dict[str, object], allowed: frozenset[str], path: str) -> None:
    """Refuse an item holding a field not ``allowed``: ATIF would drop it."""
    if allowed.issuperset(item):
        return
    unknown = sorted(repr(key) for key in item if key not in allowed)
    if unknown:
        raise ItemError(path, f"unsupported fields would be dropped: {', '.join(unknown)}")


def _part_type(part: object, path: str) -> str | None:
    if not isinstance(part, dict):
        return None
    part_type = part.get("type")
    if not isinstance(part_type, str) or not part_type.strip():
        raise ItemError(f"{path}.type", "expected a non-empty supported content-part type")
    return part_type


def _each_part(value: object, path: str, what: str = "") -> Iterator[tuple[Any, str, str | None]]:
    """Each part of a list of content parts (``what``: which), with its path and type."""
    if not isinstance(value, list):
        raise ItemError(path, f"expected a list of {what}" if what else "expected a list")
    for index, part in enumerate(value):
        part_path = f"{path}[{index}]"
        yield part, part_path, _part_type(part, part_path)


def _text_part(part: Any, path: str, part_type: str, extra: frozenset[str]) -> dict[str, object]:
    """A ``{"type": part_type, "text": ...}`` part, with ``extra`` optional keys allowed."""
    found = _part_type(part, path)
    if found is None:
        raise ItemError(path, "expected a content part object")
    if found != part_type:
        raise ItemError(f"{path}.type", f"expected {part_type!r}, got {found!r}")
    unknown_fields(part, frozenset({"type", "text"}) | extra, path)
    if not isinstance(part.get("text"), str):
        raise ItemError(f"{path}.text", "expected a string")
    return dict(part)


def input_parts(
    value: object, path: str, relax: Relaxations | None = None
) -> list[dict[str, object]]:
    """Input content: ``input_text`` parts, and ``input_image`` parts ATIF can hold where
    ``images`` is relaxed (files and video have no ATIF part)."""
    parts = []
    for part, part_path, part_type in _each_part(value, path, "content parts"):
        if part_type == "input_image" and relax is not None and relax.permits("images"):
            parts.append(_image_part(part, part_path))
            continue
        if part_type in _INPUT_PART_TYPES and part_type != "input_text":
            raise ItemError(part_path, f"only text content parts are supported, got {part_type!r}")
        parts.append(_text_part(part, part_path, "input_text", frozenset()))
    return parts


def _image_part(part: Any, path: str) -> dict[str, object]:
    """A Responses ``input_image`` part ATIF can hold: its ``image_url`` a base64 data URL or
    an http(s) URL of a PNG, JPEG, GIF or WebP image; ``detail`` kept."""
    unknown_fields(part, frozenset({"type", "image_url", "detail", "file_id"}), path)
    if part.get("file_id") is not None:
        raise ItemError(f"{path}.file_id", "an uploaded file's image is not in the row")
    url = part.get("image_url")
    if not isinstance(url, str) or image_media_type(url) is None:
        shown = url[:40] + "..." if isinstance(url, str) and len(url) > 40 else url
        raise ItemError(
            f"{path}.image_url",
            "expected a base64 data URL or an http(s) URL of a PNG, JPEG, GIF or WebP image "
            f"(what ATIF's image parts hold), got {shown!r}",
        )
    if part.get("detail") not in (None, "auto", "low", "high"):
        raise ItemError(f"{path}.detail", f"expected auto, low or high, got {part['detail']!r}")
    return {key: part[key] for key in ("type", "image_url", "detail") if part.get(key) is not None}


def output_parts(value: object, path: str) -> list[dict[str, object]]:
    """Output content: ``output_text`` parts with no annotations or log probabilities (ATIF
    keeps neither); a refusal part is refused."""
    parts = []
    for part, part_path, part_type in _each_part(value, path, "output_text parts"):
        if part_type == "refusal":
            raise ItemError(part_path, "only text content parts are supported, got 'refusal'")
        part = _text_part(part, part_path, "output_text", frozenset({"annotations", "logprobs"}))
        annotations, logprobs = part.get("annotations"), part.get("logprobs")
        if not isinstance(annotations, list):
            raise ItemError(f"{part_path}.annotations", "expected a list")
        if annotations or logprobs not in (None, []):
            raise ItemError(part_path, "annotations and log probabilities are not representable")
        canonical = {"annotations": [], "text": part["text"], "type": "output_text"}
        if logprobs is not None:
            canonical["logprobs"] = logprobs
        parts.append(canonical)
    return parts


def reasoning_parts(value: object, path: str, part_type: str) -> list[dict[str, object]]:
    """A reasoning item's ``summary`` or ``content``: text parts of ``part_type`` only."""
    parts = []
    for part, part_path, found in _each_part(value, path):
        if found in ("summary_text", "reasoning_text") and found != part_type:
            raise ItemError(f"{part_path}.type", f"expected {part_type!r}, got {found!r}")
        parts.append(_text_part(part, part_path, part_type, frozenset()))
    return parts
