"""Paths named by data stay inside their root (the ingress gate, :mod:`evalexport.ingress`).

A benchmark's name in ``gym-job.json``, a plan's benchmark under ``job.runs_root``, the files
beside a run: each names a path under a root the user chose, and each is checked here before
anything opens it, as CPython's ``tarfile`` data filter checks each member of an archive
before it writes one (PEP 706). A refusal is a :class:`PathRefused` of the rule's own class,
naming the path, the rule, and what named it.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import ClassVar, Final

from evalexport.host.files import RunFileError

__all__ = [
    "MAX_NAME_BYTES",
    "AbsoluteNameRefused",
    "LeavesRootRefused",
    "LinkLeavesRootRefused",
    "NameTooLongRefused",
    "PathRefused",
    "child",
    "inside",
]

MAX_NAME_BYTES: Final = 255
"""The longest name of one path component (Linux's ``NAME_MAX``, in bytes): a longer one
cannot be made, so it names nothing a run could hold."""


class PathRefused(RunFileError):
    """A path named by data that evalexport does not follow; the message names it, the rule,
    and what named it."""

    rule: ClassVar[str] = "a path named by data stays inside its root"


class AbsoluteNameRefused(PathRefused):
    """An absolute path where a name under a root was expected."""

    rule = "a name is relative to its root, never absolute"


class LeavesRootRefused(PathRefused):
    """A name that climbs out of its root (``..``) or is no single name (``a/b``)."""

    rule = "a name is one name inside its root: no '..', no '/'"


class NameTooLongRefused(PathRefused):
    """A name longer than a file system holds."""

    rule = f"a name is at most {MAX_NAME_BYTES} bytes"


class LinkLeavesRootRefused(PathRefused):
    """A symlink whose target is outside the root."""

    rule = "a symlink inside a root points inside it"


def _shown(name: str) -> str:
    """A name as a message shows it: whole when short, its start and length when not."""
    return repr(name) if len(name) <= 80 else f"{name[:60]!r}... ({len(name)} characters)"


def child(root: Path, name: str, *, named_by: str) -> Path:
    """``root / name`` for ``name``, one path component named by data (``named_by``: where the
    name comes from, ``"the benchmark name in JOB/gym-job.json"``); :class:`PathRefused`
    when it is empty, absolute, ``.`` or ``..``, holds a separator or a NUL, or is longer than
    :data:`MAX_NAME_BYTES`."""
    if not name or name in (".", ".."):
        raise LeavesRootRefused(
            f"{named_by} is {name!r}, which names no directory inside {root} "
            f"({LeavesRootRefused.rule})"
        )
    if Path(name).is_absolute() or PurePosixPath(name).is_absolute():
        raise AbsoluteNameRefused(
            f"{named_by} is the absolute path {_shown(name)}; it must name a directory inside "
            f"{root} ({AbsoluteNameRefused.rule})"
        )
    if "/" in name or "\0" in name or (os.sep != "/" and os.sep in name):
        raise LeavesRootRefused(
            f"{named_by} is {_shown(name)}, which would lead out of {root} or through other "
            f"directories ({LeavesRootRefused.rule})"
        )
    if len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        raise NameTooLongRefused(
            f"{named_by} is {_shown(name)}, longer than a file name can be "
            f"({NameTooLongRefused.rule})"
        )
    return root / name


def inside(root: Path, path: Path, *, named_by: str) -> Path:
    """``path``, which names something under ``root``, if it stays inside ``root`` once every
    symlink is followed (``root``'s own links followed alike); :class:`LinkLeavesRootRefused`
    naming the link and where it points when it does not. A path that does not exist yet is
    checked as far as it goes."""
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(path))
    if real == real_root or real.is_relative_to(real_root):
        return path
    raise LinkLeavesRootRefused(
        f"{named_by} {path} is a symlink to {real}, outside {root}: evalexport reads "
        f"nothing outside it through a link ({LinkLeavesRootRefused.rule}); copy the file in, "
        "or name its real path"
    )
