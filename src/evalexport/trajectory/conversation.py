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

from collections.abc import Callable
from typing import Any, Literal, NamedTuple

from evalexport.trajectory.content_parts import (
    OUTPUT_PART_TYPES,
    ItemError,
    input_parts,
    output_parts,
    reasoning_parts,
    unknown_fields,
)
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


_ASSISTANT_FIELDS = frozenset({"id", "content", "role", "status", "type", "phase"})
_INPUT_MESSAGE_FIELDS = frozenset({"content", "role", "status", "type", "phase"})
_REASONING_FIELDS = frozenset({"id", "summary", "type", "encrypted_content", "content"})
_CALL_FIELDS = frozenset({"arguments", "call_id", "name", "type", "id", "status", "namespace"})
_OUTPUT_FIELDS = frozenset({"call_id", "output", "type", "id", "status"})


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


def _string(item: dict[str, object], key: str, path: str, *, optional: bool = False) -> str | None:
    value = item.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ItemError(f"{path}.{key}", "expected a string")
    return value


def _one_of(value: object, names: frozenset[str]) -> bool:
    """Whether an item's ``value`` is one of ``names`` (a role, a status, a part type): only
    text is; a list or an object is no set member to look up. (The ingress gate has the same
    test; a conversion imports no gate.)"""
    return isinstance(value, str) and value in names


def _status(item: dict[str, object], path: str, *, optional: bool) -> str | None:
    value = item.get("status")
    if value is None and optional:
        return None
    if not _one_of(value, _STATUSES):
        raise ItemError(
            f"{path}.status", f"expected one of in_progress, completed, incomplete, got {value!r}"
        )
    return str(value)


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
    if role == "assistant" or not _one_of(role, _INPUT_ROLES):
        unknown_fields(item, _ASSISTANT_FIELDS, path)
        phase = None if item.get("phase") is None else _phase(item, path, relax)
        first = content[0] if isinstance(content, list) and content else None
        first_type = first.get("type") if isinstance(first, dict) else None
        is_output = isinstance(content, list) and (
            _one_of(first_type, OUTPUT_PART_TYPES)
            or (not content and isinstance(item.get("id"), str))
        )
        if "role" not in item and is_output:
            role = "assistant"  # Gym's output message (NeMoGymResponseOutputMessage) defaults it
        if role != "assistant":
            raise ItemError(
                f"{path}.role", f"expected user, system, developer or assistant, got {role!r}"
            )
        if not is_output:
            # An assistant message without output parts is context given as input, unless it is
            # the easy-input form of an answer (a string) and that relaxation is opted in to.
            if not isinstance(content, str):
                input_parts(content, f"{path}.content", relax)
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
            "content": output_parts(content, f"{path}.content"),
            "role": "assistant",
            "status": _status(item, path, optional="status" not in item),
            "type": "message",
        }
        if canonical["status"] is None:
            canonical["status"] = "completed"
        if phase is not None:
            canonical["phase"] = phase
        return Item("output_message", canonical, path, item)

    unknown_fields(item, _INPUT_MESSAGE_FIELDS, path)
    phase = None if item.get("phase") is None else _phase(item, path, relax)
    if "status" in item and not isinstance(content, list):
        raise ItemError(
            f"{path}.status", "source-message status is only supported with multipart content"
        )
    if isinstance(content, list) and _one_of(item.get("status"), _STATUSES):
        # A message with an explicit status: Gym's ``NeMoGymMessage``.
        canonical = {
            "content": input_parts(content, f"{path}.content", relax),
            "role": role,
            "status": item["status"],
            "type": "message",
        }
    else:
        # Gym's ``NeMoGymEasyInputMessage``: any other status is not part of the model.
        text = (
            content if isinstance(content, str) else input_parts(content, f"{path}.content", relax)
        )
        canonical = {"content": text, "role": role, "type": "message"}
    if phase is not None:
        canonical["phase"] = phase
    return Item("input_message", canonical, path, item)


def _reasoning(item: dict[str, object], path: str) -> Item:
    unknown_fields(item, _REASONING_FIELDS, path)
    canonical: dict[str, object] = {
        "id": _string(item, "id", path),
        "summary": reasoning_parts(item.get("summary"), f"{path}.summary", "summary_text"),
        "type": "reasoning",
    }
    encrypted = _string(item, "encrypted_content", path, optional=True)
    if encrypted is not None:
        canonical["encrypted_content"] = encrypted
    if item.get("content") is not None:
        canonical["content"] = reasoning_parts(item["content"], f"{path}.content", "reasoning_text")
    return Item("reasoning", canonical, path, item)


def _function_call(item: dict[str, object], path: str) -> Item:
    unknown_fields(item, _CALL_FIELDS, path)
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
    unknown_fields(item, _OUTPUT_FIELDS, path)
    output = item.get("output")
    canonical: dict[str, object] = {
        "call_id": _string(item, "call_id", path),
        "output": output if isinstance(output, str) else input_parts(output, f"{path}.output"),
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
