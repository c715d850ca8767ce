"""Drift checks: a fake's manifest against the committed manifests of the real SDK (SPEC §5).

Findings are printed one per line in stubtest's manner::

    error: evalrdl.Client().uploads.upload: parameter "timeout" is KEYWORD_ONLY in real 0.0.241, POSITIONAL_OR_KEYWORD in the fake

Each finding has a stable id (``path:code[:parameter]``) for the allowlist
(``contracts/<sdk>/allowlist.txt``, one id per line, ``#`` comments); an allowlist entry that
matches no finding is itself an error, so the list never outlives the drift it excused.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

__all__ = [
    "Finding",
    "bind_call",
    "check_recorded_calls",
    "compare_manifests",
    "load_allowlist",
    "load_manifests",
    "signature_of",
]


@final
@dataclass(frozen=True)
class Finding:
    path: str
    code: str
    message: str
    parameter: str | None = None

    @property
    def id(self) -> str:
        return ":".join(filter(None, [self.path, self.code, self.parameter]))

    def line(self) -> str:
        return f"error: {self.path}: {self.message}"


def load_manifests(directory: Path) -> list[dict[str, Any]]:
    """Every committed manifest (``<version>.json``) in ``directory``, oldest name first."""
    return [
        json.loads(path.read_text(encoding="utf-8")) for path in sorted(directory.glob("*.json"))
    ]


def load_allowlist(directory: Path) -> list[str]:
    path = directory / "allowlist.txt"
    if not path.exists():
        return []
    lines = (
        line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines()
    )
    return [line for line in lines if line]


def _parameters(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(entry.get("parameters") or [])


def _compare_parameters(
    path: str, real: Mapping[str, Any], fake: Mapping[str, Any], version: str
) -> Iterable[Finding]:
    real_params = {
        p["name"]: p
        for p in _parameters(real)
        if p["kind"] not in ("VAR_POSITIONAL", "VAR_KEYWORD")
    }
    fake_params = {
        p["name"]: p
        for p in _parameters(fake)
        if p["kind"] not in ("VAR_POSITIONAL", "VAR_KEYWORD")
    }
    fake_takes_any_keyword = any(p["kind"] == "VAR_KEYWORD" for p in _parameters(fake))
    real_order, fake_order = list(real_params), list(fake_params)
    for name in real_order:
        if name not in fake_params and not fake_takes_any_keyword:
            yield Finding(
                path,
                "missing-in-fake",
                f'parameter "{name}" of real {version} is missing in the fake',
                name,
            )
    for position, name in enumerate(fake_order):
        if name in real_params:
            continue
        counterpart = real_order[position] if position < len(real_order) else None
        if counterpart is not None and counterpart not in fake_params:
            yield Finding(
                path,
                "renamed",
                f'parameter "{name}" of the fake is "{counterpart}" in real {version} (renamed)',
                name,
            )
        else:
            yield Finding(
                path,
                "removed",
                f'parameter "{name}" of the fake is not in real {version} (removed)',
                name,
            )
    for name, real_param in real_params.items():
        fake_param = fake_params.get(name)
        if fake_param is None:
            continue
        if real_param["kind"] != fake_param["kind"]:
            yield Finding(
                path,
                "re-kinded",
                f'parameter "{name}" is {real_param["kind"]} in real {version}, {fake_param["kind"]} in the fake',
                name,
            )
        if fake_param["has_default"] and not real_param["has_default"]:
            yield Finding(
                path,
                "newly-required",
                f'parameter "{name}" is required in real {version} but optional in the fake',
                name,
            )
        if real_param["has_default"] and not fake_param["has_default"]:
            yield Finding(
                path,
                "required-in-fake",
                f'parameter "{name}" is optional in real {version} but required in the fake',
                name,
            )


def compare_manifests(real: Mapping[str, Any], fake: Mapping[str, Any]) -> list[Finding]:
    """What the fake gets wrong about one real version."""
    version = str(real.get("version"))
    findings: list[Finding] = []
    real_entries, fake_entries = real["entries"], fake["entries"]
    for path in sorted(set(real_entries) | set(fake_entries)):
        real_entry = real_entries.get(path, {"kind": "missing"})
        fake_entry = fake_entries.get(path, {"kind": "missing"})
        if real_entry["kind"] == "missing" and fake_entry["kind"] == "missing":
            continue
        if real_entry["kind"] == "missing":
            findings.append(
                Finding(
                    path,
                    "missing-at-runtime",
                    f"is in the fake but missing at runtime in real {version}",
                )
            )
            continue
        if fake_entry["kind"] == "missing":
            findings.append(
                Finding(path, "missing-in-fake", f"is in real {version} but missing in the fake")
            )
            continue
        if real_entry["kind"] != fake_entry["kind"]:
            findings.append(
                Finding(
                    path,
                    "kind",
                    f"is a {real_entry['kind']} in real {version}, a {fake_entry['kind']} in the fake",
                )
            )
            continue
        if real_entry["kind"] == "exception" and real_entry.get("bases") != fake_entry.get("bases"):
            findings.append(
                Finding(
                    path,
                    "bases",
                    f"exception bases differ: real {version} has {', '.join(real_entry.get('bases') or [])}; "
                    f"the fake has {', '.join(fake_entry.get('bases') or [])}",
                )
            )
        if real_entry.get("parameters") is not None and fake_entry.get("parameters") is not None:
            findings.extend(_compare_parameters(path, real_entry, fake_entry, version))
    return findings


def apply_allowlist(findings: list[Finding], allowlist: list[str], sdk: str) -> list[Finding]:
    """Drop allowed findings; every allowlist entry that allowed nothing becomes a finding."""
    ids = {finding.id for finding in findings}
    kept = [finding for finding in findings if finding.id not in allowlist]
    kept.extend(
        Finding(
            entry,
            "unused-allowlist-entry",
            f"allowlist entry matches no finding; remove it from contracts/{sdk}/allowlist.txt",
        )
        for entry in allowlist
        if entry not in ids
    )
    return kept


def signature_of(entry: Mapping[str, Any]) -> inspect.Signature:
    """An ``inspect.Signature`` rebuilt from a manifest entry (names, kinds, defaults)."""
    parameters = [
        inspect.Parameter(
            p["name"],
            inspect._ParameterKind[p["kind"]],
            default=None if p["has_default"] else inspect.Parameter.empty,
        )
        for p in _parameters(entry)
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


def check_recorded_calls(
    calls: Iterable[Mapping[str, Any]],
    manifests: Iterable[Mapping[str, Any]],
    site_names: Mapping[str, str] | None = None,
) -> list[str]:
    """``site: reason`` for every recorded call that would fail against a committed manifest.

    ``site_names`` maps file names as the fake saw them (the worker's copy, in a scratch
    directory) to the source file a reader should open.
    """
    problems: list[str] = []
    manifests = list(manifests)
    for call in calls:
        site = str(call.get("site", "<unknown site>"))
        for copied, source in (site_names or {}).items():
            site = re.sub(r"[^\s:]*" + re.escape(copied), source, site)
        for manifest in manifests:
            if reason := bind_call(manifest, call):
                problems.append(f"{site}: {reason}")
    return problems
