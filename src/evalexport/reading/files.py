"""The files of a run, as :mod:`evalexport.reading` reads them: what a run's paths are
(:class:`RunPaths`), the error that names a file (:class:`RunFileError`), regular files opened
without ever waiting on a FIFO, the aggregate metrics and the saved config read once and
bounded, and the run directory walked as an upload takes it."""

from __future__ import annotations

import functools
import json
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final, Protocol, final

from evalexport.gym.jobs import JOB_CONFIG_NAME
from evalexport.host.files import (
    CHUNK,
    RunFileError,
    not_a_file_reason,
    open_regular,
    read_bounded,
)
from evalexport.ingress import depth_problem, load_json, load_yaml

__all__ = [
    "CHUNK",
    "MAX_FILE_BYTES",
    "Digest",
    "ExportableConfig",
    "RunFileError",
    "RunPaths",
    "exportable_config",
    "not_a_file_reason",
    "open_regular",
    "parse_aggregate_metrics",
    "parse_saved_config",
    "read_file",
    "run_directory_files",
    "unreadable_file_reason",
]

MAX_FILE_BYTES: Final = 64 * 1024 * 1024
"""The largest aggregate-metrics file or saved config read (a real one is a few kilobytes)."""


class Digest(Protocol):
    """What the rollouts readers feed the bytes they read: a :mod:`hashlib` hash."""

    def update(self, data: bytes, /) -> None:
        """Feed the hash the next bytes read."""


class RunPaths(Protocol):
    """The paths of a run this package reads (:class:`evalexport.run.RunArtifacts` has them):
    reading stands below the run's rules, which use it."""

    @property
    def rollouts(self) -> Path:
        """The rollouts file."""

    @property
    def run_dir(self) -> Path:
        """The run directory."""

    @property
    def aggregate_metrics(self) -> Path:
        """The aggregate-metrics file."""

    @property
    def saved_config(self) -> Path:
        """The saved config."""

    @property
    def no_records_message(self) -> str:
        """What a user is told when the rollouts file holds no record."""


@final
@dataclass(frozen=True)
class ExportableConfig:
    """The saved config as exporters send it: masked again, whatever the file holds."""

    config: dict[str, object]
    masked_paths: list[str]
    """Where the file held a value that looks like a live secret (now masked)."""

    def warning(self, path: Path) -> str | None:
        """A warning naming the values that looked like live secrets and were masked, or ``None``."""
        if not self.masked_paths:
            return None
        if path.name == JOB_CONFIG_NAME:  # Gym's own: to be masked, never rewritten
            return (
                f"the job's resolved config {path} holds values that look like live secrets "
                f"({', '.join(self.masked_paths)}), as NeMo Gym writes host values into it; "
                "they are masked in this export"
            )
        return (
            f"the saved config {path} holds values that look like live secrets "
            f"({', '.join(self.masked_paths)}); they are masked in this export. Save it "
            "masked: delete it, then evalexport save-config (or evalexport.save_run_config)"
        )


# -- the aggregate metrics and the saved config ----------------------------------------------


def read_file(run: RunPaths, path: Path) -> bytes:
    """The bytes of the aggregate metrics or the saved config, read once; a file that is
    missing or cannot be read is a :class:`RunFileError` naming it."""
    what = "Aggregate metrics" if path == run.aggregate_metrics else "Saved run config"
    hint = "the most evalexport reads of it (a real one is a few kilobytes): is it the right file?"
    return read_bounded(path, MAX_FILE_BYTES, what, hint)


def parse_aggregate_metrics(run: RunPaths, data: bytes) -> list[dict[str, object]]:
    """The aggregate-metrics list of the file's bytes, one entry per agent, checked for its
    shape."""
    path = run.aggregate_metrics
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RunFileError(f"Cannot read aggregate metrics {path}: {error}") from None
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as error:
        raise RunFileError(
            f"Malformed aggregate metrics {path}: {error.msg} at line {error.lineno}"
        ) from None
    except RecursionError:
        parsed = None  # told by the gate, as every document nested too deeply
    if parsed is None or depth_problem(parsed):
        load_json(text, path, what="aggregate metrics")  # the gate's refusal, in its words
    if not isinstance(parsed, list):
        raise RunFileError(
            f"Malformed aggregate metrics {path}: expected a list with one entry per agent, "
            f"found a JSON {type(parsed).__name__}"
        )
    entries: list[dict[str, object]] = []
    for index, entry in enumerate(parsed):
        reference = entry.get("agent_ref") if isinstance(entry, dict) else None
        name = reference.get("name") if isinstance(reference, dict) else None
        if not isinstance(name, str) or not name:
            raise RunFileError(
                f"Malformed aggregate metrics {path}: entry {index} has no agent_ref.name"
            )
        assert isinstance(entry, dict)
        entries.append(entry if _SECTIONS & entry.keys() else _sectioned(entry))
    return entries


_SECTIONS: Final = frozenset({"agent_metrics", "key_metrics"})
"""The sections of an entry of rollout collection's aggregate metrics; an entry with neither
is reward profiling's flat agent-level entry (``<stem>_agent_metrics.json``)."""
_NOT_METRICS: Final = frozenset({"agent_ref", "_ng_environment_server"})


def _sectioned(flat: dict[str, object]) -> dict[str, object]:
    """A flat agent-level entry (``{"mean/reward": 0.4, ..., "agent_ref": {...}}``, as NeMo
    Gym's reward profiling writes it) as the aggregate entry rollout collection makes of the
    same metrics: every key but the agent's under ``agent_metrics`` (Gym builds its
    ``agent_metrics`` from this entry so), so each metric gets the name Gym's live exporters
    give it."""
    sectioned = {key: flat[key] for key in _NOT_METRICS if key in flat}
    sectioned["agent_metrics"] = {
        key: value for key, value in flat.items() if key not in _NOT_METRICS
    }
    return sectioned


def parse_saved_config(run: RunPaths, data: bytes) -> dict[str, object]:
    """The saved (masked, unresolved) run config of the file's bytes."""
    path = run.saved_config
    # The ingress gate's loader: libyaml's parser where PyYAML has it, the document measured
    # before it is built (depth, what aliases add).
    parsed = load_yaml(data, path, what="saved run config")
    if parsed is None:
        return {}
    if not isinstance(parsed, dict):
        raise RunFileError(
            f"Malformed saved run config {path}: expected a mapping, found {type(parsed).__name__}"
        )
    return parsed


def exportable_config(config: dict[str, object]) -> ExportableConfig:
    """The saved config masked again (masking is idempotent), with what that pass changed: a
    hand-written or older unmasked config never reaches a backend (SPEC §2). One pass of
    masking gives both."""
    from evalexport.masking import mask_config_reporting

    masked, changed = mask_config_reporting(config)
    assert isinstance(masked, dict)
    return ExportableConfig(masked, changed)


# -- the run directory as it is uploaded ---------------------------------------------------


def unreadable_file_reason(
    run: RunPaths,
    readers: Mapping[Path, Callable[[BinaryIO], None]] | None = None,
    others: Callable[[Path, BinaryIO], None] | None = None,
) -> str | None:
    """Why the run directory cannot be uploaded as it is, or ``None``: every file in it
    (through symlinks, as an upload walks it) must open for reading and be a regular file.

    Each file is opened, not checked with ``os.access``: root passes every access check, and a
    permission is not the only way a file fails to open (a dangling symlink, a FIFO).
    ``readers`` maps a file of the run (its path as :class:`~evalexport.run.RunArtifacts` names
    it) to a function that reads it through the handle this check opened, so a file that is
    both checked and read is opened once; a reader may raise :class:`RunFileError`.
    ``others(path, handle)``, if given, reads every other file the same way.
    """
    readers = {Path(path): read for path, read in (readers or {}).items()}
    problems: list[str] = []
    for path in run_directory_files(run.run_dir, problems):
        read = readers.get(path)
        if read is None and others is not None:
            read = functools.partial(others, path)
        if problem := _unreadable(path, read):
            problems.append(problem)
    if not problems:
        return None
    shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if problems[3:] else "")
    return (
        f"Cannot upload {run.run_dir} as it is: {shown}. Every file of the run directory "
        "is uploaded: make each one a readable file (chmod a+r), or move it out."
    )


def run_directory_files(run_dir: Path, problems: list[str]) -> Iterator[Path]:
    """Every file of the run directory as an upload takes it, in order: through a link to a
    directory inside it, never through one that leads out of it (``rootfs -> /``) or around
    in a loop. What cannot be listed, and each link out, goes to ``problems``."""
    top = Path(os.path.realpath(run_dir))
    seen: set[str] = set()

    def walk(directory: Path) -> Iterator[Path]:
        real = os.path.realpath(directory)
        if real in seen:
            return  # a link back to a directory already walked
        seen.add(real)
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError as error:
            problems.append(f"{directory} cannot be listed ({error.strerror or error})")
            return
        for entry in entries:
            path = Path(entry.path)
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if not is_dir:
                yield path
            elif entry.is_symlink() and not Path(os.path.realpath(path)).is_relative_to(top):
                problems.append(
                    f"{path} links to {os.path.realpath(path)}, outside the run directory"
                )
            elif entry.is_symlink() and Path(os.path.realpath(directory)).is_relative_to(
                os.path.realpath(path)
            ):
                # An upload that follows links (os.walk(followlinks=True)) goes round it
                # until the path is too long: refused here, before anything is built.
                problems.append(
                    f"{path} links back to {os.path.realpath(path)}, which holds it: an upload "
                    "that follows links goes round it forever; remove the link"
                )
            else:
                yield from walk(path)

    yield from walk(run_dir)


def _unreadable(path: Path, read: Callable[[BinaryIO], None] | None = None) -> str | None:
    """Why ``path`` cannot be read as a regular file, or ``None``; ``read`` reads it through
    the same handle when it can be."""
    try:
        # O_NONBLOCK: a FIFO must not hang the check; it is refused below.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        return f"{path} cannot be opened ({error.strerror or error})"
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return f"{path} is not a regular file"
        if read is not None:
            os.set_blocking(descriptor, True)
            read(handle)
    return None
