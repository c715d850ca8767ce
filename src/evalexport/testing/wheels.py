"""Tiny wheels built on the fly: install real packages into real environments without an index."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(directory: Path, name: str, version: str, modules: dict[str, str]) -> Path:
    """Write ``<name>-<version>-py3-none-any.whl`` holding ``modules`` (path -> source)."""
    directory.mkdir(parents=True, exist_ok=True)
    dist_info = f"{name}-{version}.dist-info"
    files = {path: source.encode() for path, source in modules.items()}
    files[f"{dist_info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    )
    files[f"{dist_info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: evalexport-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = [_record_line(path, data) for path, data in files.items()] + [f"{dist_info}/RECORD,,"]
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


def tinysdk_wheel(directory: Path, version: str = "1.0") -> Path:
    """``tinysdk``: an SDK stand-in that says where it was imported from."""
    return build_wheel(
        directory,
        "tinysdk",
        version,
        {"tinysdk/__init__.py": f"__version__ = {version!r}\nORIGIN = 'installed tinysdk'\n"},
    )
