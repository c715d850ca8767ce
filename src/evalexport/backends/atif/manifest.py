"""``manifest.jsonl`` (and ``relaxed.jsonl``) written, and the last check of an ATIF export: the
staged output is exactly what its manifest says.

Before a staging directory becomes the output, every ``manifest.jsonl`` line must name a
distinct trajectory file of the length whose bytes were hashed for its ``expected_sha256``,
the directory must hold those files and no others (but ``relaxed.jsonl``, which records the
rows written beyond Gym's strict profile, and evalexport's record of the export,
:mod:`.identity`), and their number must be the number of trajectories the export is about to
report. The conversion is built to make this so; this check is what lets the result say "wrote
N" without trusting that: a mismatch is a failed export that writes nothing. It reads no
trajectory back: each file's hash was taken of the very bytes written, whole, to it
(:mod:`.files`), and the check asks the file system for each file's length (a file another row
wrote over, or one cut short, is caught by its name or its length), at a tenth of the cost of
hashing every file again.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from array import array
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Final, Self

from evalexport.backends.atif.identity import RECORD_NAME
from evalexport.trajectory.images import IMAGE_DIRECTORY

__all__ = [
    "MANIFEST_NAME",
    "RELAXED_NAME",
    "ManifestWriter",
    "landed_output_problem",
    "staged_output_problem",
]

MANIFEST_NAME: Final = "manifest.jsonl"
"""Gym's manifest: one line per trajectory, exactly the keys Gym's ATIF ingress accepts."""
RELAXED_NAME: Final = "relaxed.jsonl"
"""Beside the manifest, only when some row needed them: each such trajectory's allowed gap
codes and relaxations (evalexport's, not Gym's: Gym's ingress refuses a manifest line with
any key of its own)."""
_NOT_TRAJECTORIES: Final = frozenset({MANIFEST_NAME, RELAXED_NAME, RECORD_NAME})
"""Beside the trajectories: Gym's manifest, and evalexport's ``relaxed.jsonl`` and record of
the export (:mod:`.identity`)."""
_BLOCK: Final = 1024 * 1024
_ENTRY_LIMIT: Final = 64 * 1024
"""The longest manifest line read: an entry is a few hundred bytes."""


class ManifestWriter:
    """Writes ``manifest.jsonl`` into a directory, and ``relaxed.jsonl`` beside it once a
    row needs a line there (a strict export has none); keeps each trajectory's length, in the
    manifest's order, for the output's check (8 bytes a trajectory)."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._manifest: IO[str] | None = None
        self._relaxed: IO[str] | None = None
        self.sizes: array[int] = array("q")
        """The length of each trajectory file the manifest names, in its order."""

    def __enter__(self) -> Self:
        self._manifest = (self._directory / MANIFEST_NAME).open("w", encoding="utf-8")
        return self

    def add(self, manifest_line: str, relaxed_line: str | None, size: int) -> None:
        """One trajectory's lines, without their newlines, and its file's length."""
        assert self._manifest is not None, "add() outside the with block"
        self._manifest.write(manifest_line + "\n")
        self.sizes.append(size)
        if relaxed_line is not None:
            if self._relaxed is None:
                self._relaxed = (self._directory / RELAXED_NAME).open("w", encoding="utf-8")
            self._relaxed.write(relaxed_line + "\n")

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for opened in (self._relaxed, self._manifest):
            if opened is not None:
                opened.close()


def staged_output_problem(
    directory: Path, reported: int, sizes: Sequence[int], images: Collection[str] = ()
) -> str | None:
    """Why ``directory`` is not ``reported`` trajectories and their manifest, the file each
    manifest line names a regular file of the length in ``sizes`` (in the manifest's order)
    (and under ``images/`` exactly ``images``, each hashing to its name), or ``None`` when it
    is.

    Names are checked before lengths, so a file named twice is reported as that (the cause)
    rather than as the first copy's length matching no file (its effect).
    """
    names: set[str] = set()
    for where, name, _ in _entries(directory):
        if problem := _entry_problem(where, name):
            return problem
        assert isinstance(name, str)  # an entry's name, checked
        if name in names:
            return f"{where} names {name} a second time"
        names.add(name)
    if len(names) != reported:
        return f"{MANIFEST_NAME} names {len(names)} trajectories, the export converted {reported}"
    beside = _NOT_TRAJECTORIES | ({IMAGE_DIRECTORY} if images else set())
    unlisted = sorted(
        entry.name
        for entry in os.scandir(directory)
        if entry.name not in names and entry.name not in beside
    )
    if unlisted:
        shown = ", ".join(unlisted[:5]) + (", ..." if len(unlisted) > 5 else "")
        return f"{len(unlisted)} files are not in {MANIFEST_NAME}: {shown}"
    if len(sizes) != len(names):
        return f"{MANIFEST_NAME} names {len(names)} trajectories, {len(sizes)} were written"
    opened = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for (where, name, _), size in zip(_entries(directory), sizes, strict=True):
            assert isinstance(name, str)  # the first pass refused anything else
            try:
                found = os.stat(name, dir_fd=opened, follow_symlinks=False)
            except FileNotFoundError:
                return f"{where} names {name}, which was not written"
            if not stat.S_ISREG(found.st_mode):
                return f"{where} names {name}, which is not a regular file"
            if found.st_size != size:
                return (
                    f"{name} holds {found.st_size} bytes, not the {size} its {where} "
                    "expected_sha256 was taken of"
                )
    finally:
        os.close(opened)
    return _images_problem(directory / IMAGE_DIRECTORY, set(images)) if images else None


def _images_problem(directory: Path, named: set[str]) -> str | None:
    """Why ``directory`` does not hold exactly the ``named`` images, each hashing to its
    name (``<sha256>.<ext>``), or ``None``."""
    written = {path.name for path in directory.iterdir()} if directory.is_dir() else set()
    if written != named:
        missing, extra = sorted(named - written), sorted(written - named)
        return (
            f"{IMAGE_DIRECTORY}/ holds {len(written)} images, the trajectories name "
            f"{len(named)} (missing: {', '.join(missing[:3]) or 'none'}; not named: "
            f"{', '.join(extra[:3]) or 'none'})"
        )
    opened = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in sorted(named):
            if _sha256(name, opened) != name.partition(".")[0]:
                return f"{IMAGE_DIRECTORY}/{name} does not hash to its name"
    finally:
        os.close(opened)
    return None


def landed_output_problem(directory: Path, count: int) -> str | None:
    """Why ``directory``, an export's output, no longer holds what the export wrote: ``count``
    trajectories, each the regular file its manifest line names, its bytes hashing to the
    line's ``expected_sha256`` (read back: a rerun that skips says they are there); or
    ``None``. Files a user put beside them are not the export's to judge."""
    if not (directory / MANIFEST_NAME).is_file():
        return f"its {MANIFEST_NAME} is missing"
    entries = 0
    opened = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for where, name, expected in _entries(directory):
            if problem := _entry_problem(where, name):
                return problem
            assert isinstance(name, str)  # an entry's name, checked
            entries += 1
            try:
                found = os.stat(name, dir_fd=opened, follow_symlinks=False)
            except FileNotFoundError:
                return f"{name} is missing"
            if not stat.S_ISREG(found.st_mode):
                return f"{name} is not a regular file"
            if _sha256(name, opened) != expected:
                return f"{name} has changed since it was written (its SHA-256 is not its {where}'s)"
    finally:
        os.close(opened)
    if entries != count:
        return f"{MANIFEST_NAME} names {entries} trajectories, the export wrote {count}"
    return None


def _entry_problem(where: str, name: str | Exception) -> str | None:
    """Why a manifest line (``where``) names no trajectory file of the output, or ``None``."""
    if isinstance(name, Exception):
        return f"{where} is not a manifest entry ({name})"
    if os.sep in name or name in {"", ".", ".."} | _NOT_TRAJECTORIES:
        return f"{where} names {name!r}, which is not a file of the output"
    return None


def _entries(directory: Path) -> Iterator[tuple[str, str | Exception, object]]:
    """``(where, trajectory_path, expected_sha256)`` of each manifest line, or ``(where,
    error, None)`` for a line that is not an entry (one longer than any entry ends the
    reading: what follows it is not read)."""
    with (directory / MANIFEST_NAME).open("rb") as manifest:
        number = 0
        while line := manifest.readline(_ENTRY_LIMIT + 1):
            number += 1
            where = f"{MANIFEST_NAME} line {number}"
            if len(line) > _ENTRY_LIMIT:
                yield where, ValueError(f"longer than {_ENTRY_LIMIT} bytes"), None
                return
            try:
                entry = json.loads(line)
                name, expected = entry["trajectory_path"], entry["expected_sha256"]
                if not isinstance(name, str):
                    raise TypeError(f"trajectory_path is a {type(name).__name__}")
            except (ValueError, TypeError, KeyError) as error:
                yield where, error, None
                continue
            yield where, name, expected


def _sha256(name: str, directory: int) -> str:
    """The SHA-256 of file ``name`` in the open ``directory``: opened relative to it, which
    costs half of what a path's ``open`` does on twenty thousand small files."""
    digest = hashlib.sha256()
    descriptor = os.open(name, os.O_RDONLY, dir_fd=directory)
    try:
        while block := os.read(descriptor, _BLOCK):
            digest.update(block)
    finally:
        os.close(descriptor)
    return digest.hexdigest()
