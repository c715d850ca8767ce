"""An annotation as a manifest holds it, as text (``Optional[List[str]]``,
``list[str] | None``): the members of its union spelled one way, and whether a change to it
can break the worker (:mod:`.check` compares manifests with it)."""

from __future__ import annotations

import re

from evalexport.contracts.manifests import Sides

__all__ = ["annotation_drift", "annotation_members"]

_QUALIFIER = re.compile(r"\b(?:[A-Za-z_]\w*\.)+(?=[A-Za-z_])")
_LEGACY = {"List": "list", "Dict": "dict", "Tuple": "tuple", "Set": "set", "FrozenSet": "frozenset"}


def _split_top_level(text: str, separators: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
        elif char in separators and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def annotation_members(annotation: str) -> frozenset[str]:
    """The members of a union annotation, spelled one way: ``Optional[List[str]]`` and
    ``list[str] | None`` both give ``{"list[str]", "None"}``; module qualifiers are dropped
    (``evalrdl.client.Upload`` is ``Upload``)."""
    text = _QUALIFIER.sub("", annotation.replace(" ", ""))
    for legacy, modern in _LEGACY.items():
        text = re.sub(rf"\b{legacy}\[", f"{modern}[", text)
    text = text.replace("NoneType", "None")
    members: set[str] = set()
    for part in _split_top_level(text, "|"):
        if part.startswith("Optional[") and part.endswith("]"):
            members |= annotation_members(part[len("Optional[") : -1]) | {"None"}
        elif part.startswith("Union[") and part.endswith("]"):
            for inner in _split_top_level(part[len("Union[") : -1], ","):
                members |= annotation_members(inner)
        else:
            members.add(part)
    return frozenset(members)


def annotation_drift(
    reference: str | None, candidate: str | None, sides: Sides, *, accepted: bool
) -> bool:
    """Whether an annotation changed in a way that matters. For what the SDK accepts
    (``accepted``), a release may widen but not narrow; for what it gives back, the reverse."""
    if reference is None or candidate is None:
        return False
    ours, theirs = annotation_members(reference), annotation_members(candidate)
    if sides.exact:
        return ours != theirs
    return bool(ours - theirs) if accepted else bool(theirs - ours)
