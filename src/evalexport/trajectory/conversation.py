"""Responses conversation items, read as NeMo Gym's strict ATIF export reads them.

An invocation's ``conversation`` (and each turn's ``question``, ``answer`` and
``reasoning_content`` copy) is a list of OpenAI Responses items. ATIF can represent four kinds
without loss: ``message``, ``reasoning``, ``function_call`` and ``function_call_output``. Each
item is checked here and reduced to its *canonical form*: the JSON NeMo Gym's item models would
dump for it (defaults filled in, ``null`` fields left out), so a turn's copy can be compared
with the conversation whatever optional fields either spelled out.

Everything ATIF would silently drop is refused by its path: unknown fields, token IDs and log
probabilities, a message ``phase``, a function-call ``namespace``, non-text content parts. A
relaxation the row may use (:mod:`.relaxations`) reads a message ``phase`` (kept elsewhere by
the caller), the Responses API's easy-input forms and a generation's token IDs and log
probabilities (``token_ids``: checked, and carried on the item for its step's metrics)
instead of refusing them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, NamedTuple

from evalexport.trajectory.images import image_media_type
from evalexport.trajectory.relaxations import Relaxations

__all__ = ["Item", "ItemError", "read_item", "read_items"]

ItemKind = Literal[
    "input_message",  # system, user or developer message
    "assistant_context",  # an assistant message given as input (copied context)
    "output_message",
    "reasoning",
    "function_call",
    "function_call_output",
]

_TRAINING_FIELDS = frozenset(
    {"prompt_token_ids", "generation_token_ids", "generation_log_probs", "routed_experts"}
)
_STATUSES = frozenset({"in_progress", "completed", "incomplete"})
_INPUT_ROLES = frozenset({"user", "system", "developer"})
_OUTPUT_PART_TYPES = frozenset({"output_text", "refusal"})
_INPUT_PART_TYPES = frozenset({"input_text", "input_image", "input_file", "input_video"})

_ASSISTANT_FIELDS = frozenset({"id", "content", "role", "status", "type", "phase"})
_INPUT_MESSAGE_FIELDS = frozenset({"content", "role", "status", "type", "phase"})
_REASONING_FIELDS = frozenset({"id", "summary", "type", "encrypted_content", "content"})
_CALL_FIELDS = frozenset({"arguments", "call_id", "name", "type", "id", "status", "namespace"})
_OUTPUT_FIELDS = frozenset({"call_id", "output", "type", "id", "status"})


class ItemError(ValueError):
    """Conversation items cannot be converted; ``reasons`` holds each one's path and why (the
    message: ``path: detail``, then the others')."""

    def __init__(self, path: str, detail: str, *, more: Sequence[tuple[str, str]] = ()) -> None:
        self.reasons: tuple[tuple[str, str], ...] = ((path, detail), *more)
        super().__init__("; ".join(f"{p}: {d}" for p, d in self.reasons))


class Item(NamedTuple):
    """One checked conversation item: its kind, its canonical JSON and the path it came from.

    A tuple: a row's conversation makes several, and a tuple is the cheapest to make.
    """

    kind: ItemKind
    canonical: dict[str, Any]
    path: str
    raw: dict[str, object]
    """The item as the record holds it."""
    tokens: dict[str, list[Any]] | None = None
    """With ``token_ids`` relaxed, the generation's token IDs and log probabilities the item
    carries, as ATIF's step metrics name them (``prompt_token_ids``, ``completion_token_ids``,
    ``logprobs``)."""

    def get(self, key: str) -> Any:
        """The item's field ``key`` in its canonical form, or ``None``: an item reads like a mapping."""
        return self.canonical.get(key)


def _unknown_fields(item: dict[str, object], allowed: frozenset[str], path: str) -> None:
    if allowed.issuperset(item):
        return
    unknown = sorted(repr(key) for key in item if key not in allowed)
    if unknown:
        raise ItemError(path, f"unsupported fields would be dropped: {', '.join(unknown)}")


def _string(item: dict[str, object], key: str, path: str, *, optional: bool = False) -> str | None:
    value = item.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ItemError(f"{path}.{key}", "expected a string")
    return value


def _status(item: dict[str, object], path: str, *, optional: bool) -> str | None:
    value = item.get("status")
    if value is None and optional:
        return None
    if value not in _STATUSES:
        raise ItemError(
            f"{path}.status", f"expected one of in_progress, completed, incomplete, got {value!r}"
        )
    return str(value)


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
    _unknown_fields(part, frozenset({"type", "text"}) | extra, path)
    if not isinstance(part.get("text"), str):
        raise ItemError(f"{path}.text", "expected a string")
    return dict(part)


def _input_parts(
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
    _unknown_fields(part, frozenset({"type", "image_url", "detail", "file_id"}), path)
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


def _output_parts(value: object, path: str) -> list[dict[str, object]]:
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


def _phase(item: dict[str, object], path: str, relax: Relaxations | None) -> str:
    """A message's ``phase`` (the caller checks it is set: ``commentary`` or ``final_answer``),
    refused unless ``message_phases`` is relaxed: ATIF v1.7 has no field for it."""
    phase = item["phase"]
    if relax is None or not relax.permits("message_phases"):
        raise ItemError(
            f"{path}.phase", "Responses message phase is not representable in ATIF v1.7"
        )
    if phase not in ("commentary", "final_answer"):
        raise ItemError(f"{path}.phase", f"expected commentary or final_answer, got {phase!r}")
    return str(phase)


def _message(item: dict[str, object], path: str, relax: Relaxations | None) -> Item:
    role = item.get("role")
    content = item.get("content")
    if role == "assistant" or role not in _INPUT_ROLES:
        _unknown_fields(item, _ASSISTANT_FIELDS, path)
        phase = None if item.get("phase") is None else _phase(item, path, relax)
        first = content[0] if isinstance(content, list) and content else None
        first_type = first.get("type") if isinstance(first, dict) else None
        is_output = isinstance(content, list) and (
            first_type in _OUTPUT_PART_TYPES or (not content and isinstance(item.get("id"), str))
        )
        if role != "assistant":
            raise ItemError(
                f"{path}.role", f"expected user, system, developer or assistant, got {role!r}"
            )
        if not is_output:
            # An assistant message without output parts is context given as input, unless it is
            # the easy-input form of an answer (a string) and that relaxation is opted in to.
            if not isinstance(content, str):
                _input_parts(content, f"{path}.content", relax)
            canonical: dict[str, object] = {
                "content": content,
                "role": "assistant",
                "type": "message",
            }
            if phase is not None:
                canonical["phase"] = phase
            if (
                isinstance(content, str)
                and relax is not None
                and relax.permits("easy_input_messages")
            ):
                return Item("output_message", canonical, path, item)
            return Item("assistant_context", canonical, path, item)
        message_id = _string(item, "id", path)
        canonical = {
            "id": message_id,
            "content": _output_parts(content, f"{path}.content"),
            "role": "assistant",
            "status": _status(item, path, optional="status" not in item),
            "type": "message",
        }
        if canonical["status"] is None:
            canonical["status"] = "completed"
        if phase is not None:
            canonical["phase"] = phase
        return Item("output_message", canonical, path, item)

    _unknown_fields(item, _INPUT_MESSAGE_FIELDS, path)
    phase = None if item.get("phase") is None else _phase(item, path, relax)
    if "status" in item and not isinstance(content, list):
        raise ItemError(
            f"{path}.status", "source-message status is only supported with multipart content"
        )
    if isinstance(content, list) and item.get("status") in _STATUSES:
        # A message with an explicit status: Gym's ``NeMoGymMessage``.
        canonical = {
            "content": _input_parts(content, f"{path}.content", relax),
            "role": role,
            "status": item["status"],
            "type": "message",
        }
    else:
        # Gym's ``NeMoGymEasyInputMessage``: any other status is not part of the model.
        text = (
            content if isinstance(content, str) else _input_parts(content, f"{path}.content", relax)
        )
        canonical = {"content": text, "role": role, "type": "message"}
    if phase is not None:
        canonical["phase"] = phase
    return Item("input_message", canonical, path, item)


def _reasoning_parts(value: object, path: str, part_type: str) -> list[dict[str, object]]:
    parts = []
    for part, part_path, found in _each_part(value, path):
        if found in ("summary_text", "reasoning_text") and found != part_type:
            raise ItemError(f"{part_path}.type", f"expected {part_type!r}, got {found!r}")
        parts.append(_text_part(part, part_path, part_type, frozenset()))
    return parts


def _reasoning(item: dict[str, object], path: str) -> Item:
    _unknown_fields(item, _REASONING_FIELDS, path)
    canonical: dict[str, object] = {
        "id": _string(item, "id", path),
        "summary": _reasoning_parts(item.get("summary"), f"{path}.summary", "summary_text"),
        "type": "reasoning",
    }
    encrypted = _string(item, "encrypted_content", path, optional=True)
    if encrypted is not None:
        canonical["encrypted_content"] = encrypted
    if item.get("content") is not None:
        canonical["content"] = _reasoning_parts(
            item["content"], f"{path}.content", "reasoning_text"
        )
    return Item("reasoning", canonical, path, item)


def _function_call(item: dict[str, object], path: str) -> Item:
    _unknown_fields(item, _CALL_FIELDS, path)
    if item.get("namespace") is not None:
        raise ItemError(
            f"{path}.namespace",
            "namespaced Responses function calls are not representable in ATIF v1.7",
        )
    canonical: dict[str, object] = {
        "arguments": _string(item, "arguments", path),
        "call_id": _string(item, "call_id", path),
        "name": _string(item, "name", path),
        "type": "function_call",
    }
    return _call_item("function_call", canonical, item, path)


def _function_call_output(item: dict[str, object], path: str) -> Item:
    _unknown_fields(item, _OUTPUT_FIELDS, path)
    output = item.get("output")
    canonical: dict[str, object] = {
        "call_id": _string(item, "call_id", path),
        "output": output if isinstance(output, str) else _input_parts(output, f"{path}.output"),
        "type": "function_call_output",
    }
    return _call_item("function_call_output", canonical, item, path)


def _call_item(
    kind: ItemKind, canonical: dict[str, object], item: dict[str, object], path: str
) -> Item:
    """A call or its output, with the ``id`` and ``status`` the item gives, if it gives them."""
    if (item_id := _string(item, "id", path, optional=True)) is not None:
        canonical["id"] = item_id
    if (status := _status(item, path, optional=True)) is not None:
        canonical["status"] = status
    return Item(kind, canonical, path, item)


_READERS: dict[str, Callable[[dict[str, object], str], Item]] = {
    "reasoning": _reasoning,
    "function_call": _function_call,
    "function_call_output": _function_call_output,
}


def read_item(item: object, path: str, relax: Relaxations | None = None) -> Item:
    """Check one conversation item and return it in canonical form, or raise :class:`ItemError`.

    ``relax``: the relaxations of Gym's strict profile this row may use (none when ``None``).
    """
    if not isinstance(item, dict):
        raise ItemError(path, "expected a Responses item object")
    if not _TRAINING_FIELDS.isdisjoint(item):
        tokens = _token_bundle(item, path, relax)
        read = read_item({k: v for k, v in item.items() if k not in _TRAINING_FIELDS}, path, relax)
        if read.kind not in ("output_message", "reasoning", "function_call"):
            raise ItemError(
                path, f"token IDs on a {read.kind.replace('_', ' ')} belong to no agent step"
            )
        return read._replace(raw=item, tokens=tokens)
    item_type = item.get("type")
    if not isinstance(item_type, str) or not item_type.strip():
        if (
            "type" not in item  # Gym's EasyInputMessage may leave it out, never set it to null
            and "role" in item
            and relax is not None
            and relax.permits("easy_input_messages")
        ):
            return _message(item, path, relax)
        raise ItemError(f"{path}.type", "expected a non-empty supported conversation item type")
    if item_type == "message":
        return _message(item, path, relax)
    reader = _READERS.get(item_type)
    if reader is None:
        raise ItemError(f"{path}.type", f"unsupported conversation item type {item_type!r}")
    return reader(item, path)


def _token_bundle(
    item: dict[str, object], path: str, relax: Relaxations | None
) -> dict[str, list[Any]] | None:
    """The generation's token IDs and log probabilities an item carries, checked as Gym's
    ``TokenIDLogProbMixin`` checks them, in ATIF's step-metric names; refused unless
    ``token_ids`` is relaxed, and recorded ``routed_experts`` (no ATIF field) always (``null``
    records nothing). ``None`` for a bundle of three empty lists: nothing was recorded, so
    nothing is written (empty arrays would say a generation of no tokens)."""
    present = sorted(_TRAINING_FIELDS.intersection(item))
    if relax is None or not relax.permits("token_ids"):
        raise ItemError(
            path,
            "training token IDs, log probabilities, and routed-expert metadata are outside "
            f"the ATIF export profile (found: {', '.join(present)})",
        )
    if item.get("routed_experts") is not None:
        raise ItemError(
            f"{path}.routed_experts", "routed-expert metadata has no ATIF field; it would be lost"
        )
    missing = sorted(_TRAINING_FIELDS - {"routed_experts"} - set(item))
    if missing:
        raise ItemError(path, f"partial token metadata; missing: {', '.join(missing)}")
    bundle: dict[str, list[Any]] = {}
    for field, name, number in (
        ("prompt_token_ids", "prompt_token_ids", int),
        ("generation_token_ids", "completion_token_ids", int),
        ("generation_log_probs", "logprobs", float),
    ):
        values = item[field]
        if not isinstance(values, list) or not all(
            isinstance(value, number | int) and not isinstance(value, bool) for value in values
        ):
            kind = "integer token IDs" if number is int else "numeric log probabilities"
            raise ItemError(f"{path}.{field}", f"expected a list of {kind}")
        bundle[name] = values
    if len(bundle["completion_token_ids"]) != len(bundle["logprobs"]):
        raise ItemError(
            path,
            f"{len(bundle['completion_token_ids'])} generation token IDs but "
            f"{len(bundle['logprobs'])} log probabilities: they must align",
        )
    return bundle if any(bundle.values()) else None


def read_items(value: object, path: str, relax: Relaxations | None = None) -> list[Item]:
    """Check a list of conversation items (a conversation or a turn's copy of part of one).

    With ``easy_input_messages`` relaxed, a string is one user message, as a Responses
    request's string ``input`` is (Gym's agents read it so).
    """
    if isinstance(value, str) and relax is not None and relax.permits("easy_input_messages"):
        return [_message({"role": "user", "content": value}, path, relax)]
    if not isinstance(value, list):
        raise ItemError(path, "expected a list of Responses conversation items")
    items: list[Item] = []
    reasons: list[tuple[str, str]] = []
    for index, item in enumerate(value):  # every item's reasons, not the first item's alone
        try:
            items.append(read_item(item, f"{path}[{index}]", relax))
        except ItemError as error:
            reasons += error.reasons
    if reasons:
        (first, detail), *more = reasons
        raise ItemError(first, detail, more=more)
    return items
