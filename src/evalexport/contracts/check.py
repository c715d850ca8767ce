"""Drift checks (SPEC §5): a fake against the committed manifests of the real SDK, and a new
release of the real SDK against the committed manifest it is to replace.

Findings are printed one per line in stubtest's manner::

    error: evalrdl.Client().uploads.upload: parameter "timeout" is KEYWORD_ONLY in real 0.0.241 but POSITIONAL_OR_KEYWORD in the fake

Two comparisons, one set of rules (:class:`Sides`):

- **fake against real**: the fake must mirror the real SDK exactly, since every test that
  passes on the fake stands for a pass on the real SDK. Anything the fake has that the real SDK
  lacks (a parameter, an attribute, ``**kwargs``, a state value) is a finding too.
- **release against committed**: a newer real SDK may grow; only a change that can break the
  worker is a finding: a name, parameter or attribute gone, a parameter renamed, re-kinded or
  newly required, a default changed, an accepted type narrowed, a returned type widened, the
  allowed values of a field changed, a classmethod or staticmethod bound otherwise.

Both count only what the worker uses (:mod:`.narrowing`): the manifests are narrowed to the
surface first.

Each finding has a stable id (``path:code[:name]``) for the allowlist of the fake check
(``contracts/<sdk>/allowlist.txt``, one id per line, ``#`` comments); an allowlist entry that
matches no finding is itself an error, so the list never outlives the drift it excused.

What the worker did on the fake (its recorded calls and reads) is checked in ``recorded.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from evalexport.contracts.annotations import annotation_drift, annotation_members
from evalexport.contracts.manifests import (
    ContractError,
    Finding,
    Sides,
    apply_allowlist,
    load_allowlist,
    load_manifest,
    load_manifests,
    version_key,
)

__all__ = [
    "ContractError",
    "Finding",
    "Sides",
    "annotation_members",
    "apply_allowlist",
    "compare_manifests",
    "load_allowlist",
    "load_manifest",
    "load_manifests",
    "named_parameters",
    "values_text",
    "version_key",
]

_VARIADIC = ("VAR_POSITIONAL", "VAR_KEYWORD")
# Parameters ---------------------------------------------------------------------------------


def _parameters(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(entry.get("parameters") or [])


def named_parameters(entry: Mapping[str, object]) -> dict[str, dict[str, object]]:
    """A manifest entry's parameters by name."""
    return {p["name"]: p for p in _parameters(entry) if p["kind"] not in _VARIADIC}


def _takes_any_keyword(entry: Mapping[str, object]) -> bool:
    return any(p["kind"] == "VAR_KEYWORD" for p in _parameters(entry))


def _compare_parameters(
    path: str, reference: Mapping[str, object], candidate: Mapping[str, object], sides: Sides
) -> Iterator[Finding]:
    ref, cand = named_parameters(reference), named_parameters(candidate)
    ref_order, cand_order = list(ref), list(cand)
    if sides.exact and _takes_any_keyword(candidate) and not _takes_any_keyword(reference):
        yield Finding(
            path,
            "var-keyword",
            f"{sides.candidate} takes **kwargs but {sides.reference} does not: a misspelt or "
            "removed keyword would pass on the fake and fail on the real SDK",
        )
    for position, name in enumerate(cand_order):
        if name in ref:
            continue
        counterpart = ref_order[position] if position < len(ref_order) else None
        if counterpart is not None and counterpart not in cand:
            yield Finding(
                path,
                "renamed",
                f'parameter "{counterpart}" of {sides.reference} is "{name}" in {sides.candidate} (renamed)',
                counterpart,
            )
        elif sides.exact:
            yield Finding(
                path,
                "extra",
                f'parameter "{name}" of {sides.candidate} is not in {sides.reference}',
                name,
            )
        elif not cand[name]["has_default"]:
            yield Finding(
                path,
                "new-required",
                f'parameter "{name}" is new in {sides.candidate} and required; '
                f"{sides.reference} has no such parameter",
                name,
            )
    renamed = {
        ref_order[i]
        for i, name in enumerate(cand_order)
        if name not in ref and i < len(ref_order) and ref_order[i] not in cand
    }
    for name in ref_order:
        if name not in cand and name not in renamed:
            yield Finding(
                path,
                "missing",
                f'parameter "{name}" of {sides.reference} is missing in {sides.candidate}',
                name,
            )
    placed = reference.get("passed_by_position")
    yield from _moved(path, ref, cand, sides, placed if isinstance(placed, int) else None)
    for name, ours in ref.items():
        theirs = cand.get(name)
        if theirs is None:
            continue
        yield from _compare_parameter(path, name, ours, theirs, sides)


def _moved(
    path: str,
    ref: Mapping[str, object],
    cand: Mapping[str, object],
    sides: Sides,
    passed_by_position: int | None,
) -> Iterator[Finding]:
    """Positional parameters both sides have, in another order: a positional call would pass
    each value as another parameter. Only the first ``passed_by_position`` places count, where
    the surface says how many the worker passes by position (``None``: every place)."""

    def positional(params: Mapping[str, Any], other: Mapping[str, object]) -> list[str]:
        return [
            name
            for name, p in params.items()
            if name in other and p["kind"] in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")
        ]

    ours, theirs = positional(ref, cand), positional(cand, ref)
    if sorted(ours) != sorted(theirs):
        return  # a parameter positional on one side only is reported as re-kinded
    for position, name in enumerate(ours[:passed_by_position]):
        if theirs[position] != name:
            yield Finding(
                path,
                "moved",
                f'parameter "{name}" is positional parameter {position + 1} in {sides.reference} '
                f"but {theirs.index(name) + 1} in {sides.candidate}",
                name,
            )


def _compare_parameter(
    path: str, name: str, ours: Mapping[str, Any], theirs: Mapping[str, Any], sides: Sides
) -> Iterator[Finding]:
    if ours["kind"] != theirs["kind"]:
        yield Finding(
            path,
            "re-kinded",
            f'parameter "{name}" is {ours["kind"]} in {sides.reference} but {theirs["kind"]} in {sides.candidate}',
            name,
        )
    if ours["has_default"] and not theirs["has_default"]:
        yield Finding(
            path,
            "now-required",
            f'parameter "{name}" is required in {sides.candidate} but optional in {sides.reference}',
            name,
        )
    if theirs["has_default"] and not ours["has_default"] and sides.exact:
        yield Finding(
            path,
            "now-optional",
            f'parameter "{name}" is optional in {sides.candidate} but required in {sides.reference}',
            name,
        )
    if (
        ours["has_default"]
        and theirs["has_default"]
        and "default" in ours
        and "default" in theirs
        and ours["default"] != theirs["default"]
    ):
        yield Finding(
            path,
            "default",
            f'parameter "{name}" defaults to {ours["default"]} in {sides.reference} '
            f"but to {theirs['default']} in {sides.candidate}",
            name,
        )
    if annotation_drift(ours.get("annotation"), theirs.get("annotation"), sides, accepted=True):
        yield Finding(
            path,
            "annotation",
            f'parameter "{name}" is annotated {ours["annotation"]} in {sides.reference} '
            f"but {theirs['annotation']} in {sides.candidate}",
            name,
        )


# Attributes: what the worker reads back -----------------------------------------------------


def _compare_attributes(
    path: str, reference: Mapping[str, Any], candidate: Mapping[str, Any], sides: Sides
) -> Iterator[Finding]:
    if "attributes" not in reference or "attributes" not in candidate:
        return  # a manifest of format 1 records no attributes
    ref: Mapping[str, Any] = reference["attributes"]
    cand: Mapping[str, Any] = candidate["attributes"]
    gone, new = sorted(set(ref) - set(cand)), sorted(set(cand) - set(ref))
    unread = set(reference.get("unread_attributes") or ()) | set(ref)
    arrived = sorted((set(cand) | set(candidate.get("unread_attributes") or ())) - unread)
    hint = f' (renamed "{arrived[0]}"?)' if len(gone) == 1 and len(arrived) == 1 else ""
    for name in gone:
        yield Finding(
            path,
            "attribute-missing",
            f'attribute "{name}" of {sides.reference} is missing in {sides.candidate}{hint}',
            name,
        )
    if sides.exact:
        for name in new:
            yield Finding(
                path,
                "attribute-extra",
                f'attribute "{name}" of {sides.candidate} is not in {sides.reference}',
                name,
            )
    for name in sorted(set(ref) & set(cand)):
        for code, drift in _attribute_drifts(name, ref[name], cand[name], sides):
            yield Finding(path, code, drift, name)


def _attribute_drifts(
    name: str, ours: Mapping[str, Any], theirs: Mapping[str, Any], sides: Sides
) -> Iterator[tuple[str, str]]:
    """Each way the attribute ``name`` differs between the sides: its finding's code and text."""
    reference, candidate = sides.reference, sides.candidate
    if _attribute_group(ours["kind"]) != _attribute_group(theirs["kind"]):
        yield (
            "attribute-kind",
            f'attribute "{name}" is {_a(ours["kind"])} in {reference} but '
            f"{_a(theirs['kind'])} in {candidate}",
        )
        return
    if ours.get("bases") != theirs.get("bases"):
        yield (
            "bases",
            f'class "{name}" is built on {ours.get("bases")} in {reference} but on '
            f"{theirs.get('bases')} in {candidate}",
        )
    if ours.get("members") != theirs.get("members"):
        yield (
            "values",
            f'attribute "{name}" has the members {ours.get("members")} in {reference} '
            f"but {theirs.get('members')} in {candidate}",
        )
    elif ours.get("values") != theirs.get("values"):
        yield (
            "values",
            f'attribute "{name}" takes {values_text(ours.get("values"))} in {reference} '
            f"but {values_text(theirs.get('values'))} in {candidate}",
        )
    elif annotation_drift(ours.get("annotation"), theirs.get("annotation"), sides, accepted=False):
        yield (
            "attribute-annotation",
            f'attribute "{name}" is annotated {ours["annotation"]} in {reference} '
            f"but {theirs['annotation']} in {candidate}",
        )


def _attribute_group(kind: str) -> str:
    """What reading an attribute gives, as drift counts it: a method to call, a class, or a
    value (a field, a property, an instance attribute, a constant: each read alike)."""
    return kind if kind in ("method", "class") else "value"


def _a(kind: str) -> str:
    """A kind with its article: ``an instance``, ``a method``."""
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"


def values_text(values: list[object] | None) -> str:
    """The allowed values of a field as a finding shows them, or ``any``."""
    return "any value" if values is None else ", ".join(map(repr, values))


# Entries ------------------------------------------------------------------------------------


def _compare_entry(
    path: str, reference: Mapping[str, Any], candidate: Mapping[str, Any], sides: Sides
) -> Iterator[Finding]:
    if reference["kind"] == "missing" and candidate["kind"] == "missing":
        return
    if reference["kind"] == "missing":
        if sides.exact:
            yield Finding(path, "extra", f"is in {sides.candidate} but not in {sides.reference}")
        return
    if candidate["kind"] == "missing":
        reason = f" ({candidate['error']})" if candidate.get("error") else ""
        yield Finding(
            path, "missing", f"is in {sides.reference} but missing in {sides.candidate}{reason}"
        )
        return
    if reference["kind"] != candidate["kind"]:
        yield Finding(
            path,
            "kind",
            f"is a {reference['kind']} in {sides.reference} but a {candidate['kind']} in {sides.candidate}",
        )
        return
    for code, drift in _entry_drifts(reference, candidate, sides):
        yield Finding(path, code, drift)
    if reference.get("parameters") is not None and candidate.get("parameters") is not None:
        yield from _compare_parameters(path, reference, candidate, sides)
    if annotation_drift(reference.get("returns"), candidate.get("returns"), sides, accepted=False):
        yield Finding(
            path,
            "returns",
            f"returns {reference['returns']} in {sides.reference} but {candidate['returns']} in {sides.candidate}",
        )
    yield from _compare_attributes(path, reference, candidate, sides)


def _entry_drifts(
    reference: Mapping[str, Any], candidate: Mapping[str, Any], sides: Sides
) -> Iterator[tuple[str, str]]:
    """How an entry of one kind differs but for its parameters, returns and attributes: each
    finding's code and text."""
    ours, theirs, kind = sides.reference, sides.candidate, reference["kind"]
    bases, their_bases = reference.get("bases"), candidate.get("bases")
    if kind == "exception" and bases != their_bases:
        yield (
            "bases",
            f"exception bases differ: {ours} has {', '.join(bases or [])}; "
            f"{theirs} has {', '.join(their_bases or [])}",
        )
    if kind == "class" and bases != their_bases:
        yield "bases", f"is built on {bases} in {ours} but on {their_bases} in {theirs}"
    if (members := reference.get("members")) != candidate.get("members"):
        yield (
            "values",
            f"has the members {members} in {ours} but {candidate.get('members')} in {theirs}",
        )
    if kind == "callable" and reference.get("binding") != candidate.get("binding"):
        plain = "plain function or method"
        yield (
            "binding",
            f"is a {reference.get('binding') or plain} in {ours} "
            f"but a {candidate.get('binding') or plain} in {theirs}",
        )


def compare_manifests(
    reference: Mapping[str, Any], candidate: Mapping[str, Any], sides: Sides | None = None
) -> list[Finding]:
    """What ``candidate`` (by default a fake) gets wrong about ``reference``."""
    sides = sides or Sides.fake(reference)
    missing = {"kind": "missing"}
    ref_entries, cand_entries = reference["entries"], candidate["entries"]
    return [
        finding
        for path in sorted(set(ref_entries) | set(cand_entries))
        for finding in _compare_entry(
            path, ref_entries.get(path, missing), cand_entries.get(path, missing), sides
        )
    ]
