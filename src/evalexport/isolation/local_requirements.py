"""Requirements an environment installs from the local disk (a fake's wheel, a project
directory): what they hold decides the environment, whatever version they carry."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Final

__all__ = ["NOT_CONTENT", "content_digest", "is_not_content", "local_project", "package_name"]


def _local_path(requirement: str) -> Path | None:
    """The file or directory a local requirement names, or ``None`` for one an index serves."""
    text = requirement.split("@", 1)[1].strip() if " @ " in requirement else requirement
    text = text.removeprefix("file://")
    if not text or not (text.startswith((os.sep, ".")) or os.sep in text):
        return None
    return Path(text).expanduser()


def local_project(requirement: str) -> Path | None:
    """The project directory a local requirement names (absolute), or ``None``."""
    path = _local_path(requirement)
    return path.absolute() if path is not None and path.is_dir() else None


def is_not_content(name: str) -> bool:
    """Whether a file or directory of a project is no part of what it holds: a cache, or what
    building it left (``build/``, ``dist/``, ``*.egg-info``)."""
    return name in NOT_CONTENT or name.endswith(".egg-info")


def content_digest(requirement: str) -> str | None:
    """The SHA-256 of what a local requirement holds (a wheel or sdist file, or a project
    directory's files but its caches and what building it left), or ``None`` for one an
    index serves."""
    path = _local_path(requirement)
    if path is None:
        return None
    try:
        if path.is_file():
            with path.open("rb") as handle:
                return hashlib.file_digest(handle, "sha256").hexdigest()
        if not path.is_dir():
            return None
        digest = hashlib.sha256()
        for file in sorted(path.rglob("*")):
            parts = file.relative_to(path).parts
            if file.is_file() and not any(is_not_content(part) for part in parts):
                digest.update(str(file.relative_to(path)).encode() + b"\0")
                digest.update(file.read_bytes())
        return digest.hexdigest()
    except OSError:
        return None  # the installer says what is wrong with it


def package_name(requirement: str) -> str:
    """The distribution a local requirement installs, as its file or directory names it."""
    if " @ " in requirement:
        return requirement.split(" @ ", 1)[0].strip()
    name = Path(requirement.removeprefix("file://")).name
    return name.split("-", 1)[0] if name.endswith((".whl", ".tar.gz", ".zip")) else name


NOT_CONTENT: Final = frozenset({"__pycache__", ".git", "build", "dist", ".tox", ".venv"})
