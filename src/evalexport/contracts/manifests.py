"""What the drift checks hold and say: the committed manifests of an SDK's releases and the
allowlist beside them, loaded; a finding, with its stable id; the two sides a comparison is
made between (:class:`Sides`: a fake must mirror the real SDK exactly, a new release may
grow)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import final

from evalexport.host.files import RunFileError, read_bounded
from evalexport.ingress import DocumentRefused, load_json

__all__ = [
    "ContractError",
    "Finding",
    "Sides",
    "apply_allowlist",
    "load_allowlist",
    "load_manifest",
    "load_manifests",
    "version_key",
]


@final
@dataclass(frozen=True)
class Finding:
    """One difference between two manifests that can break the worker, as stubtest words it."""

    path: str
    code: str
    message: str
    name: str | None = None
    """The parameter or attribute the finding is about, if any."""

    @property
    def id(self) -> str:
        """``path:code[:name]``: what ``allowlist.txt`` names to excuse the finding."""
        return ":".join(filter(None, [self.path, self.code, self.name]))

    def line(self) -> str:
        """``error: PATH: MESSAGE``, the line the commands print."""
        return f"error: {self.path}: {self.message}"


@final
@dataclass(frozen=True)
class Sides:
    """The two manifests compared: ``reference`` is the contract, ``candidate`` is checked."""

    reference: str
    candidate: str
    exact: bool
    """True for a fake, which must mirror the reference; False for a release, which may grow."""

    @classmethod
    def fake(cls, real: Mapping[str, object]) -> Sides:
        """A fake held to a real manifest exactly: anything extra or missing is a finding."""
        return cls(f"real {real['version']}", "the fake", exact=True)

    @classmethod
    def release(cls, committed: Mapping[str, object], installed: Mapping[str, object]) -> Sides:
        """A release held to a committed manifest: only what can break the worker is a finding."""
        return cls(
            f"committed {committed['version']}",
            f"{installed['sdk']} {installed['version']}",
            exact=False,
        )


def version_key(version: str) -> tuple[int, ...]:
    """``"3.17.2"`` sorts after ``"3.9.0"``: the numbers of a version, in order."""
    return tuple(int(number) for number in re.findall(r"\d+", version))


class ContractError(Exception):
    """The command cannot run as asked (unknown SDK, nothing to extract from, a committed
    manifest that is not one); the message says what to do."""


def load_manifest(path: Path) -> dict[str, object]:
    """The manifest in ``path``, read through the ingress gate (bounded in size and depth); a
    file that is not one is a :class:`ContractError` naming it."""
    again = "extract it again: evalexport contract manifest SDK [--fake PATH | --requirement REQ]"
    try:
        manifest = load_json(
            read_bounded(path, _MAX_MANIFEST_BYTES, "Manifest", again), path, what="manifest"
        )
    except (RunFileError, DocumentRefused) as error:
        raise ContractError(f"{error}; {again} > {path}") from None
    if not isinstance(manifest, dict) or not {"sdk", "version", "entries"} <= set(manifest):
        raise ContractError(
            f"{path} is not a manifest (no sdk, version and entries); extract it again with "
            "evalexport contract manifest"
        )
    return manifest


_MAX_MANIFEST_BYTES = 16 * 2**20
"""Far above any SDK's surface (MLflow 3.17's manifest is 47 KB)."""


def load_manifests(directory: Path) -> list[dict[str, object]]:
    """Every committed manifest (``<version>.json``) in ``directory``, oldest version first;
    a file that is not a manifest is a :class:`ContractError` naming it."""
    manifests = [load_manifest(path) for path in sorted(directory.glob("*.json"))]
    return sorted(manifests, key=lambda manifest: version_key(str(manifest["version"])))


def load_allowlist(directory: Path) -> list[str]:
    """The finding ids ``allowlist.txt`` in ``directory`` excuses (comments and blanks left out)."""
    path = directory / "allowlist.txt"
    if not path.exists():
        return []
    lines = (
        line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines()
    )
    return [line for line in lines if line]


# Annotations --------------------------------------------------------------------------------


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
