"""A manifest as the worker's surface counts it (docs/plugins.md, "What the worker reads").

A manifest describes each class it names whole: its constructor and every public attribute,
so a surface can change what it reads without extracting again. The checks count only what
the worker uses: the paths it calls, builds or catches, and of each class the attributes its
surface ``reads`` (:attr:`~evalexport.spec.sdk.Surface.reads`). A release that drops a
method the worker never calls, or reorders the constructor of a class the worker only reads
back, then passes ``verify``, ``check`` and ``matrix``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalexport.contracts.manifests import Finding
from evalexport.spec.sdk import Surface

__all__ = ["narrowed", "unread_findings", "where_found", "whole_class_note"]


def _entry(
    entry: Mapping[str, Any], names: tuple[str, ...] | None, built: bool, positional: int | None
) -> dict[str, Any]:
    kept = dict(entry)
    if positional is not None:
        kept["passed_by_position"] = positional  # only these places are contract
    if names is not None and isinstance(entry.get("attributes"), Mapping):
        attributes: Mapping[str, Any] = entry["attributes"]
        kept["attributes"] = {name: attributes[name] for name in names if name in attributes}
        # Left out of the comparison, but named: a read gone while one unread name is new is
        # said as a likely rename ("state" missing, renamed "status"?).
        kept["unread_attributes"] = sorted(set(attributes) - set(names))
    if not built and kept.get("kind") in ("class", "exception"):
        kept["parameters"] = None  # read back only: the worker never builds one
    return kept


def narrowed(manifest: Mapping[str, Any], surface: Surface) -> dict[str, Any]:
    """``manifest`` with only the entries ``surface`` uses and, of each class ``reads``
    names, only the attributes it reads (and no constructor unless ``paths`` names it); of
    each path ``positional`` names, how many places the worker passes by position."""
    entries: Mapping[str, Any] = manifest["entries"]
    version = str(manifest.get("version", ""))
    kept = {
        path: _entry(
            entries[path],
            surface.reads.get(path),
            path in surface.paths,
            surface.positional.get(path),
        )
        for path in surface.extracted
        if path in entries and surface.used_by(path, version)
    }
    return {**manifest, "entries": kept}


def unread_findings(manifest: Mapping[str, Any], surface: Surface, side: str) -> list[Finding]:
    """An attribute the surface ``reads`` that ``manifest``'s class does not have: the worker
    would read something the SDK never sets (``side``: ``real 0.0.241``, ``mlflow 3.18.0``)."""
    findings = []
    for path, names in surface.reads.items():
        if not surface.used_by(path, str(manifest.get("version", ""))):
            continue
        entry = manifest["entries"].get(path)
        if entry is None or entry.get("kind") == "missing" or "attributes" not in entry:
            continue  # a missing class is its own finding; format 1 records no attributes
        for name in names:
            if name not in entry["attributes"]:
                findings.append(
                    Finding(
                        path,
                        "read-missing",
                        f'attribute "{name}", which the worker reads (the surface\'s reads), '
                        f"is not in {side}",
                        name,
                    )
                )
    return findings


def _of_a_whole_class(finding: Finding, surface: Surface) -> bool:
    return finding.code.startswith("attribute") and surface.whole(finding.path)


def where_found(findings: list[Finding], surface: Surface) -> str:
    """Where the findings are, as a report's headline says it: in what the worker uses, or
    (where that is why) in the classes the surface names whole, whose every public attribute
    counts whether the worker reads it or not."""
    whole = sum(_of_a_whole_class(finding, surface) for finding in findings)
    if whole == len(findings):
        return "in the classes the surface names whole (every public attribute counts)"
    if whole:
        return "in what the worker uses and in the classes the surface names whole"
    return "in what the worker uses"


def whole_class_note(findings: list[Finding], surface: Surface) -> list[str]:
    """A note for each class whose whole public API is counted and has an attribute
    finding: how to count only what the worker reads of it."""
    paths = sorted({f.path for f in findings if _of_a_whole_class(f, surface)})
    return [
        f"note: {path} counts its whole public API, as the surface names the class without "
        f"saying what the worker reads of it; if the worker reads less, declare it in the "
        f"surface: reads={{{path!r}: (...)}} (() for nothing) and only that counts "
        '(docs/plugins.md, "What the worker reads")'
        for path in paths
    ]
