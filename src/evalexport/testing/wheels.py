"""Tiny wheels built on the fly: install real packages into real environments without an index."""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from pathlib import Path


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(
    directory: Path,
    name: str,
    version: str,
    modules: dict[str, str],
    requires: tuple[str, ...] = (),
) -> Path:
    """Write ``<name>-<version>-py3-none-any.whl`` holding ``modules`` (path -> source) and
    requiring ``requires`` (``Requires-Dist``)."""
    directory.mkdir(parents=True, exist_ok=True)
    dist_info = f"{name}-{version}.dist-info"
    files = {path: source.encode() for path, source in modules.items()}
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {requirement}\n" for requirement in requires)
    files[f"{dist_info}/METADATA"] = metadata.encode()
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


def wheel_from_tree(
    directory: Path, source_root: Path, package: str, name: str | None = None
) -> Path:
    """A wheel of the package ``source_root/package`` (every ``.py`` file), no build backend.

    The version is read from the package's ``__version__ = "..."`` line. This is how the
    tests install the fake SDKs under ``fakes/`` without a package index.
    """
    package_dir = source_root / package
    init = (package_dir / "__init__.py").read_text(encoding="utf-8")
    found = re.search(r"^__version__\s*=\s*[\"']([^\"']+)[\"']", init, re.MULTILINE)
    if found is None:
        raise ValueError(f"{package_dir / '__init__.py'} has no __version__ line")
    modules = {
        path.relative_to(source_root).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(package_dir.rglob("*.py"))
    }
    return build_wheel(directory, name or package, found.group(1), modules)
