"""Requirements an environment installs from the local disk (a fake's wheel, a project
directory): what they hold decides the environment, whatever version they carry."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Final

__all__ = ["NOT_CONTENT", "content_digest", "package_name"]


def content_digest(requirement: str) -> str | None:
    """The SHA-256 of what a local requirement holds (a wheel or sdist file, or a project
    directory's files but its caches), or ``None`` for one an index serves."""
    text = requirement.split("@", 1)[1].strip() if " @ " in requirement else requirement
    text = text.removeprefix("file://")
    if not text or not (text.startswith((os.sep, ".")) or os.sep in text):
        return None
    path = Path(text).expanduser()
    try:
        if path.is_file():
            with path.open("rb") as handle:
                return hashlib.file_digest(handle, "sha256").hexdigest()
        if not path.is_dir():
            return None
        digest = hashlib.sha256()
        for file in sorted(path.rglob("*")):
            parts = set(file.relative_to(path).parts)
            if file.is_file() and not parts & NOT_CONTENT:
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


NOT_CONTENT: Final = frozenset({"__pycache__", ".git", "build", ".tox", ".venv"})
