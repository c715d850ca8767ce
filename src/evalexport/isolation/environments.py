"""SDK environments: one virtual environment per (exporter, requirements, Python) (SPEC §3.4).

An environment is built once, in the cache directory, and reused; the SDK is never upgraded
behind the user's back (a new pin is a new environment). A build writes its completion record
``evalexport-env.json`` last, under a lock: concurrent first uses build once, and a build that
was interrupted half-way (no record) is removed and rebuilt, never used.

Environments are made with the ``virtualenv`` package; packages are installed with ``uv`` when
it is available (on PATH or as the ``uv`` package) and pip otherwise. No index is configured
here: the installer's own settings apply (``UV_INDEX_URL``, ``UV_EXTRA_INDEX_URL``,
``PIP_INDEX_URL``, ``PIP_EXTRA_INDEX_URL``, config files).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from evalexport.host.cache import cache_dir
from evalexport.host.locks import named_lock
from evalexport.isolation.installers import EnvironmentBuildError, Installer, find_installer
from evalexport.isolation.local_requirements import (
    content_digest,
    is_not_content,
    local_project,
)

__all__ = [
    "Environment",
    "EnvironmentBuildError",
    "EnvironmentSpec",
    "Installer",
    "ensure_environment",
    "find_installer",
    "list_environments",
    "remove_environment",
]

RECORD_NAME = "evalexport-env.json"
LAST_USED_NAME = "evalexport-last-used"
_TAIL_LINES = 25
_INDEX_HINT = (
    "Check the requirement and your installer's index settings "
    "(UV_INDEX_URL / UV_EXTRA_INDEX_URL for uv, PIP_INDEX_URL / PIP_EXTRA_INDEX_URL for pip)."
)


@final
@dataclass(frozen=True)
class EnvironmentSpec:
    """What an environment holds: its key."""

    exporter: str
    requirements: tuple[str, ...]
    python: str = sys.executable

    @property
    def python_version(self) -> str:
        """``3.11``: the version of the Python the environment is built from."""
        if self.python == sys.executable:
            return f"{sys.version_info.major}.{sys.version_info.minor}"
        completed = subprocess.run(
            [self.python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=True,
        )
        return completed.stdout.strip()

    def key(self) -> str:
        """16 hex digits naming the exporter, its sorted requirements and the Python version,
        and the content of every requirement that is a local file or directory (a fake's wheel
        rebuilt under the same version is another environment, never a stale one)."""
        contents = [content_digest(r) for r in sorted(self.requirements)]
        identity = json.dumps(
            [
                self.exporter,
                sorted(self.requirements),
                self.python_version,
                *(c for c in contents if c),
            ],
            separators=(",", ":"),
        )
        return hashlib.sha256(identity.encode()).hexdigest()[:16]

    def directory_name(self) -> str:
        """``<exporter>-py<version>-<key>``: the environment's directory under the cache."""
        return f"{self.exporter}-py{self.python_version}-{self.key()}"


@final
@dataclass(frozen=True)
class Environment:
    """A built SDK environment: its directory, its build record, and whether this call built it."""

    path: Path
    record: dict[str, Any]
    built: bool = False
    """Whether this call built it (rather than reusing it)."""

    @property
    def python(self) -> Path:
        """The environment's interpreter."""
        return self.path / "bin" / "python"

    @property
    def exporter(self) -> str:
        """The exporter the environment was built for, from its build record."""
        return str(self.record.get("exporter", "?"))

    @property
    def requirements(self) -> list[str]:
        """As recorded, with any URL credential masked (older records may hold one)."""
        from evalexport.masking import mask_text

        return [mask_text(str(item)) for item in self.record.get("requirements", [])]

    def last_used(self) -> datetime.datetime | None:
        """When an export last used it, or ``None`` if never recorded."""
        marker = self.path / LAST_USED_NAME
        try:
            stamp = marker.stat().st_mtime
        except FileNotFoundError:
            return None
        return datetime.datetime.fromtimestamp(stamp, datetime.UTC)

    def size_bytes(self) -> int:
        """The bytes its files take on disk."""
        total = 0
        for root, _, files in os.walk(self.path):
            for name in files:
                with contextlib.suppress(OSError):
                    total += (Path(root) / name).lstat().st_size
        return total


def environments_root() -> Path:
    """Where SDK environments are kept: ``<cache>/envs``."""
    return cache_dir() / "envs"


def _read_record(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads((path / RECORD_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _tail(text: str) -> str:
    from evalexport.masking import scrub_text

    lines = [line for line in text.strip().splitlines() if line.strip()]
    return scrub_text("\n".join(lines[-_TAIL_LINES:]))


def _run_step(command: list[str], what: str, path: Path) -> None:
    from evalexport.isolation.descendants import run_tracked

    try:
        completed = run_tracked(command)  # an installer's processes never outlive evalexport
    except OSError as error:
        raise EnvironmentBuildError(f"{what} failed to start ({command[0]}): {error}") from None
    if completed.returncode != 0:
        raise EnvironmentBuildError(
            f"{what} failed (exit code {completed.returncode}) while building {path}:\n"
            f"{_tail(completed.stderr or completed.stdout)}\n{_INDEX_HINT}"
        )


def ensure_environment(spec: EnvironmentSpec, installer: Installer | None = None) -> Environment:
    """The environment for ``spec``, built now if it does not exist yet.

    Raises :class:`EnvironmentBuildError` naming the failed step and the installer's error.
    """
    root = environments_root()
    path = root / spec.directory_name()
    if (ready := existing_environment(spec)) is not None:
        return ready  # built: usable without a lock, from a cache shared read-only too
    root.mkdir(parents=True, exist_ok=True)  # a root that cannot be made is named as such
    with named_lock(f"environment:{path}"):  # the lock files live with the others, not here
        record = _read_record(path)
        built = record is None
        if record is None:
            if path.exists():  # an interrupted build: never use it
                shutil.rmtree(path)
            record = _announced_build(spec, path, installer or find_installer())
    _mark_used(path)
    return Environment(path, record, built)


def existing_environment(spec: EnvironmentSpec) -> Environment | None:
    """The environment for ``spec`` if it is built already, else ``None``: nothing is built."""
    path = environments_root() / spec.directory_name()
    record = _read_record(path)
    if record is None:
        return None
    _mark_used(path)
    return Environment(path, record, built=False)


def _mark_used(path: Path) -> None:
    """Note that the environment was used now (``evalexport envs`` shows it); a cache shared
    read-only keeps no such note, and the environment works all the same."""
    with contextlib.suppress(OSError):
        (path / LAST_USED_NAME).touch()


def _announced_build(spec: EnvironmentSpec, path: Path, installer: Installer) -> dict[str, object]:
    """:func:`_build`, said as it goes: a first use waits a minute or more, and a log that
    says nothing meanwhile looks hung."""
    import time

    from evalexport.progress import stage

    started = time.monotonic()
    stage(
        spec.exporter,
        f"building the {spec.exporter} SDK environment in {path} (the first export with "
        f"{', '.join(_shown_requirements(spec))} on Python {spec.python_version} builds it, "
        "in a minute or two; later exports reuse it)",
    )
    record = _build(spec, path, installer)
    stage(
        spec.exporter,
        f"built the {spec.exporter} SDK environment in {time.monotonic() - started:.0f} s",
    )
    return record


_HEARTBEAT_FLOOR = 10.0
"""The fewest seconds between two lines saying a build goes on."""


@contextlib.contextmanager
def _still_working(exporter: str, what: str) -> Iterator[None]:
    """While the block runs, a line every few seconds (at least :data:`_HEARTBEAT_FLOOR`)
    that ``what`` goes on."""
    import threading
    import time

    from evalexport.progress import interval, speaking_for, stage

    done = threading.Event()
    started = time.monotonic()
    every = max(interval(), _HEARTBEAT_FLOOR)

    def beat() -> None:
        while not done.wait(every):
            stage(exporter, f"still {what} ({time.monotonic() - started:.0f} s so far)")

    beating = threading.Thread(target=beat, name="evalexport-build-progress", daemon=True)
    beating.start()
    try:
        with speaking_for(exporter):  # these lines, not the export's "under way" ones
            yield
    finally:
        done.set()
        beating.join()


def _build(spec: EnvironmentSpec, path: Path, installer: Installer) -> dict[str, Any]:
    try:
        _run_step(
            [
                sys.executable,
                "-m",
                "virtualenv",
                "--quiet",
                "--python",
                spec.python,
                "--app-data",
                str(cache_dir() / "virtualenv-app-data"),
                "--no-periodic-update",
                *installer.virtualenv_arguments(),
                str(path),
            ],
            "Creating the virtual environment",
            path,
        )
        python = path / "bin" / "python"
        installing = f"installing {' '.join(_shown_requirements(spec))} with {installer.name}"
        from evalexport.progress import stage

        stage(spec.exporter, installing)
        with (
            _still_working(spec.exporter, installing),
            _copies_of_local_projects(spec.requirements) as requirements,
        ):
            _run_step(
                installer.install_command(python, requirements),
                installing[0].upper() + installing[1:],
                path,
            )
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise
    record = {
        "exporter": spec.exporter,
        "requirements": _shown_requirements(spec),
        "python_version": spec.python_version,
        "installer": installer.name,
        "created_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    from evalexport.host.files import write_text_atomically

    write_text_atomically(path / RECORD_NAME, json.dumps(record, indent=2) + "\n")
    return record


@contextlib.contextmanager
def _copies_of_local_projects(requirements: Sequence[str]) -> Iterator[list[str]]:
    """``requirements`` with each local project directory replaced by a copy of what it holds
    (:data:`~evalexport.isolation.local_requirements.NOT_CONTENT` left out): an installer
    builds in the project's tree (``build/``, ``*.egg-info``), and the user's tree is never
    written into. The copies are removed when the block ends, and by the reaper if evalexport
    is killed meanwhile (:func:`~evalexport.isolation.descendants.owned_scratch`)."""
    from evalexport.isolation.descendants import owned_scratch

    with owned_scratch("evalexport-local-") as scratch:
        given: list[str] = []
        for requirement in requirements:
            project = local_project(requirement)
            if project is None:
                given.append(requirement)
                continue
            copy = Path(scratch) / project.name
            shutil.copytree(project, copy, ignore=_not_content, symlinks=True)
            given.append(
                requirement.replace(str(project), str(copy)) if " @ " in requirement else str(copy)
            )
        yield given


def _not_content(directory: str, names: list[str]) -> set[str]:
    return {name for name in names if is_not_content(name)}


def _shown_requirements(spec: EnvironmentSpec) -> list[str]:
    """The requirements as they may be stored and shown: a credential in a URL is masked."""
    from evalexport.masking import mask_text

    return [mask_text(requirement) for requirement in spec.requirements]


def list_environments() -> list[Environment]:
    """Every complete environment in the cache directory, by directory name."""
    root = environments_root()
    if not root.is_dir():
        return []
    found = []
    for path in sorted(root.iterdir()):
        record = _read_record(path) if path.is_dir() else None
        if record is not None:
            found.append(Environment(path, record))
    return found


def remove_environment(environment: Environment) -> None:
    """Delete an environment, under its build lock so a concurrent build is not cut short."""
    with named_lock(f"environment:{environment.path}"):
        shutil.rmtree(environment.path, ignore_errors=True)
