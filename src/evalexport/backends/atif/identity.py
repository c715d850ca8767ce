"""What an ATIF export records of itself beside Gym's files, so that a rerun knows its output.

Gym's ``manifest.jsonl`` keeps exactly Gym's four keys (Gym's ATIF ingress refuses any other),
so the identity of the export, the run's bytes and the options that shape the files, goes in a
small file of evalexport's own in the output, :data:`RECORD_NAME`: written into the staging
directory before it is renamed into place, so the output and its record land together.

A rerun into an output that holds a record (:func:`read_record`) reads the rollouts once to
hash them (:func:`rollouts_fingerprint`, the skip's one read): the same bytes with the same
options is this export done (skipped); anything else is refused, saying what differs
(:meth:`ExportIdentity.differences`).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Final, final

from evalexport import RunFileError, __version__
from evalexport.ingress import load_json
from evalexport.reading import open_regular
from evalexport.spec import named_option

__all__ = [
    "RECORD_NAME",
    "ExportIdentity",
    "ExportRecord",
    "holds_record",
    "read_record",
    "rollouts_fingerprint",
    "write_record",
]

RECORD_NAME: Final = ".evalexport-atif"
"""evalexport's record of the export in its output: JSON, hidden beside Gym's files, and named
so that no glob of trajectories (``*.json``, ``*-*.json``) picks it up."""
_RECORD_LIMIT: Final = 64 * 1024
_BLOCK: Final = 1024 * 1024
_OPTIONS: Final = ("session_id", "agent_version", "agent_name", "agent", "allow_gaps", "relax")
"""The options that shape an export's files, in the order a difference is told."""


@final
@dataclass(frozen=True)
class ExportIdentity:
    """What makes an ATIF export's files what they are: the rollouts' bytes and the options."""

    rollouts_sha256: str
    """``sha256:<hex>`` of the rollouts file, hashed as it was read for the conversion."""
    session_id: str
    """The session the trajectories name (``+session_id``, or the rollouts file's stem)."""
    agent_version: str
    agent_name: str | None
    agent: str | None
    allow_gaps: tuple[str, ...]
    """Sorted: the order they are given in changes nothing written."""
    relax: tuple[str, ...]
    """Sorted, as ``allow_gaps``."""

    @classmethod
    def of(
        cls,
        rollouts_sha256: str,
        *,
        session_id: str,
        agent_version: str,
        agent_name: str | None,
        agent: str | None,
        allow_gaps: Collection[str],
        relax: Collection[str],
    ) -> ExportIdentity:
        """The identity of an export of those bytes with those options."""
        return cls(
            rollouts_sha256,
            session_id,
            agent_version,
            agent_name,
            agent,
            tuple(sorted(set(allow_gaps))),
            tuple(sorted(set(relax))),
        )

    def options(self) -> dict[str, object]:
        """The options that shape the files, by name."""
        return {
            "session_id": self.session_id,
            "agent_version": self.agent_version,
            "agent_name": self.agent_name,
            "agent": self.agent,
            "allow_gaps": list(self.allow_gaps),
            "relax": list(self.relax),
        }

    def differences(self, earlier: ExportIdentity) -> list[str]:
        """What differs between this export and the ``earlier`` one, each said for people
        (the rollouts first, then each option as the caller gives it); empty when nothing
        does."""
        said: list[str] = []
        if self.rollouts_sha256 != earlier.rollouts_sha256:
            said.append(
                f"the rollouts file's bytes differ ({_short(earlier.rollouts_sha256)} then, "
                f"{_short(self.rollouts_sha256)} now)"
            )
        ours, theirs = self.options(), earlier.options()
        for name in _OPTIONS:
            if ours[name] != theirs[name]:
                said.append(
                    f"{named_option(name)} was {_shown(theirs[name])}, now {_shown(ours[name])}"
                )
        return said


@final
@dataclass(frozen=True)
class ExportRecord:
    """An output's record: the identity of the export that wrote it, and what it wrote."""

    identity: ExportIdentity
    trajectory_count: int
    evalexport_version: str
    """The evalexport that wrote it: for people (a rerun by another version is the same
    export when the run and the options are)."""

    def as_bytes(self) -> bytes:
        """The record file's bytes: JSON with sorted keys, two-space indent, a line break."""
        document = {
            "exporter": "atif",
            "evalexport_version": self.evalexport_version,
            "rollouts_sha256": self.identity.rollouts_sha256,
            "options": self.identity.options(),
            "trajectory_count": self.trajectory_count,
        }
        return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8")


def write_record(directory: Path, identity: ExportIdentity, trajectory_count: int) -> None:
    """Write the record of an export of ``trajectory_count`` trajectories into ``directory``
    (the staging directory, before it is renamed into place)."""
    record = ExportRecord(identity, trajectory_count, __version__)
    (directory / RECORD_NAME).write_bytes(record.as_bytes())


def holds_record(output: Path) -> bool:
    """Whether ``output`` is a directory (not a link to one) with a record in it: the output
    of an evalexport ATIF export, which a rerun reads before it says anything of it."""
    try:
        return stat.S_ISDIR(output.lstat().st_mode) and os.path.lexists(output / RECORD_NAME)
    except OSError:
        return False


def read_record(output: Path) -> ExportRecord:
    """The record in ``output``; :class:`RunFileError` saying why it cannot be read (a link,
    not a regular file, too large, not a record of this shape)."""
    path = output / RECORD_NAME
    if path.is_symlink():
        raise RunFileError(f"{path} is a link, not the record an ATIF export writes")
    try:
        with open_regular(path) as handle:
            data = handle.read(_RECORD_LIMIT + 1)
    except OSError as error:
        raise RunFileError(f"Cannot read {path}: {error.strerror or error}") from None
    if len(data) > _RECORD_LIMIT:
        raise RunFileError(f"{path} is larger than a record an ATIF export writes")
    document = load_json(data, path, what="ATIF export record")
    try:
        options = document["options"]
        identity = ExportIdentity.of(
            _text(document["rollouts_sha256"]),
            session_id=_text(options["session_id"]),
            agent_version=_text(options["agent_version"]),
            agent_name=_optional_text(options["agent_name"]),
            agent=_optional_text(options["agent"]),
            allow_gaps=[_text(code) for code in options["allow_gaps"]],
            relax=[_text(name) for name in options["relax"]],
        )
        count = document["trajectory_count"]
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError("trajectory_count is not a number")
        version = _text(document["evalexport_version"])
    except (KeyError, TypeError, ValueError) as error:
        raise RunFileError(f"{path} is not the record an ATIF export writes ({error})") from None
    return ExportRecord(identity, count, version)


def rollouts_fingerprint(path: Path) -> str:
    """``sha256:<hex>`` of the rollouts file ``path``, read now, once (a rerun's one read)."""
    digest = hashlib.sha256()
    with open_regular(path) as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return f"sha256:{digest.hexdigest()}"


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {value!r}")
    return value


def _optional_text(value: object) -> str | None:
    return None if value is None else _text(value)


def _short(fingerprint: str) -> str:
    """``sha256:0123456789ab…``: enough of a fingerprint to tell two apart."""
    return fingerprint[:19] + "…" if len(fingerprint) > 19 else fingerprint


def _shown(value: object) -> str:
    """An option's value as it is given: ``1.0``, ``[a,b]``, ``unset``."""
    if value is None:
        return "unset"
    if isinstance(value, list):
        return f"[{','.join(map(str, value))}]"
    return str(value)
