"""What the worker did on the fake, checked against the committed manifests of the real SDK.

The fake evalrdl logs every call it receives (``{"name", "args", "kwargs", "site",
"defaulted"}``) and every attribute the worker reads on what it returns or raises
(``{"name", "read", "site", "compared_with"?}``). Against each committed manifest, each call
must bind (``inspect.Signature.bind``), each default the worker left alone must be the real
default, each read attribute must exist, and each text compared with a field of allowed values
must be one of them.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from evalexport.contracts.check import named_parameters, values_text
from evalexport.spec.sdk import Surface

__all__ = ["bind_call", "check_call_log", "check_recorded_calls", "signature_of"]


def signature_of(entry: Mapping[str, Any]) -> inspect.Signature:
    """An ``inspect.Signature`` rebuilt from a manifest entry (names, kinds, defaults)."""
    parameters = [
        inspect.Parameter(
            p["name"],
            inspect._ParameterKind[p["kind"]],
            default=None if p["has_default"] else inspect.Parameter.empty,
        )
        for p in entry.get("parameters") or []
    ]
    return inspect.Signature(parameters)


def bind_call(manifest: Mapping[str, Any], call: Mapping[str, Any]) -> str | None:
    """Why a recorded call ``{"name", "args", "kwargs"}`` would fail against ``manifest``."""
    entry = manifest["entries"].get(call["name"])
    if entry is None or entry["kind"] == "missing":
        return f"{call['name']} does not exist in real {manifest['version']}"
    if entry.get("parameters") is None:
        return None
    try:
        signature_of(entry).bind(*call.get("args", []), **call.get("kwargs", {}))
    except TypeError as error:
        return f"{call['name']}(...) would fail against real {manifest['version']}: {error}"
    return None


def _defaults_problems(manifest: Mapping[str, Any], call: Mapping[str, Any]) -> Iterator[str]:
    """The defaults the worker left alone that the real SDK sets otherwise."""
    entry = manifest["entries"].get(call["name"]) or {}
    parameters = named_parameters(entry)
    for name, fake_default in (call.get("defaulted") or {}).items():
        real = parameters.get(name)
        if real is None or "default" not in real or real["default"] == fake_default:
            continue
        yield (
            f'{call["name"]}(...) leaves "{name}" to its default, {fake_default} on the fake '
            f"but {real['default']} in real {manifest['version']}"
        )


def _read_problem(manifest: Mapping[str, Any], read: Mapping[str, object]) -> str | None:
    """Why a recorded attribute read ``{"name", "read", "compared_with"?}`` fails on ``manifest``."""
    version = manifest["version"]
    entry = manifest["entries"].get(read["name"])
    if entry is None or entry["kind"] == "missing":
        return f"{read['name']} does not exist in real {version}"
    attributes = entry.get("attributes")
    if attributes is None:
        return None  # a manifest of format 1 records no attributes
    attribute = attributes.get(read["read"])
    where = f"{read['name']}.{read['read']}"
    if attribute is None:
        return f"{where} is read but does not exist in real {version}"
    values = attribute.get("values")
    if "compared_with" in read and values is not None and read["compared_with"] not in values:
        return (
            f"{where} is compared with {read['compared_with']!r}, a value real {version} never "
            f"gives ({values_text(values)})"
        )
    return None


def _undeclared_read(surface: Surface, read: Mapping[str, object]) -> str | None:
    """Why a recorded read is outside the surface: its class's declared ``reads`` leave it out
    (and it is no method the surface calls), so no contract check holds it."""
    name, attribute = str(read["name"]), str(read["read"])
    declared = surface.reads.get(name)
    if declared is None or attribute in declared or f"{name}.{attribute}" in surface.paths:
        return None
    return (
        f"{name}.{attribute} is read, but the surface's reads of {name} leave it out, so no "
        f"contract check holds it: add {attribute!r} to reads[{name!r}]"
    )


def _positional_problem(
    surface: Surface, call: Mapping[str, object], manifests: list[Mapping[str, Any]]
) -> str | None:
    """Why a recorded call passes more by position than the surface's ``positional`` says,
    which would let a parameter move unseen. A method named by its class path
    (``wandb.sdk.wandb_run.Run.log``) is recorded with its instance first, as its manifest
    names ``self``: that place is not the worker's to count."""
    name = str(call["name"])
    declared = surface.positional.get(name)
    if declared is None:
        return None
    passed = len(call.get("args") or ())  # type: ignore[arg-type]
    entries = [m["entries"].get(name) or {} for m in manifests]
    first = [(entry.get("parameters") or [{}])[0].get("name") for entry in entries]
    if "self" in first:
        passed -= 1
    if passed <= declared:
        return None
    return (
        f"{name}(...) is passed {passed} argument{'' if passed == 1 else 's'} by position, but "
        f"the surface's positional[{name!r}] says {declared}, so a parameter that moves there "
        f"goes unseen: pass them by keyword, or declare positional[{name!r}] = {passed}"
    )


def check_recorded_calls(
    calls: Iterable[Mapping[str, object]],
    manifests: Iterable[Mapping[str, object]],
    site_names: Mapping[str, str] | None = None,
    surface: Surface | None = None,
) -> list[str]:
    """``site: reason`` for every recorded call or read that would fail against a committed
    manifest, each once (a reason every manifest gives alike names all their versions),
    every read ``surface``'s ``reads`` leave out and every call passing more by position than
    its ``positional`` says.

    ``site_names`` maps file names as the fake saw them (the worker's copy, in a scratch
    directory) to the source file a reader should open.
    """
    versions: dict[str, list[str]] = {}
    manifests = list(manifests)
    for record in calls:
        site = str(record.get("site", "<unknown site>"))
        for copied, source in (site_names or {}).items():
            site = re.sub(r"[^\s:]*" + re.escape(copied), source, site)
        if "read" in record and surface and (undeclared := _undeclared_read(surface, record)):
            versions.setdefault(f"{site}: {undeclared}", [])
        if (
            "read" not in record
            and surface
            and (placed := _positional_problem(surface, record, manifests))
        ):
            versions.setdefault(f"{site}: {placed}", [])
        for manifest in manifests:
            anonymous = {**manifest, "version": _REAL}
            if "read" in record:
                reasons = [reason] if (reason := _read_problem(anonymous, record)) else []
            else:
                bound = bind_call(anonymous, record)
                reasons = [bound] if bound else list(_defaults_problems(anonymous, record))
            for reason in reasons:
                found = versions.setdefault(f"{site}: {reason}", [])
                if str(manifest["version"]) not in found:
                    found.append(str(manifest["version"]))
    # A problem every manifest shows alike is one line naming those versions.
    return [problem.replace(_REAL, ", ".join(found)) for problem, found in versions.items()]


_REAL = "\0version\0"


def check_call_log(
    sdk: str,
    call_log: Path,
    contracts: Path | None = None,
    site_names: Mapping[str, str] | None = None,
) -> list[str]:
    """:func:`check_recorded_calls` of a fake's call log (one JSON record per line) against the
    committed manifests of ``sdk``, wherever its exporter's ``sdk.contract`` keeps them: what
    a plugin's tests call after running its worker on its fake."""
    from evalexport.contracts.check import load_manifests
    from evalexport.contracts.drift import surface_of

    records = [
        json.loads(line) for line in call_log.read_text(encoding="utf-8").splitlines() if line
    ]
    surface = surface_of(sdk)
    manifests = load_manifests(surface.manifest_directory(contracts))
    return check_recorded_calls(records, manifests, site_names, surface)
