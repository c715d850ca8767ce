"""The run directory and its rules (SPEC §1).

A run is named by its rollouts file ``R = <dir>/<stem>.jsonl``; every other file is derived
from ``R`` here and nowhere else, so exporters never guess at a path.
"""

from __future__ import annotations

import functools
import json
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final, Protocol, final

from evalexport._saved_config_name import saved_config_path

__all__ = ["ExportableConfig", "Rollout", "RunArtifacts", "RunFile", "RunFileError"]


class _Digest(Protocol):
    """What :meth:`RunArtifacts.iter_rollouts` feeds the bytes it reads: a :mod:`hashlib`
    hash."""

    def update(self, data: bytes, /) -> None: ...


class RunFileError(Exception):
    """A file of the run is missing or cannot be read; the message says which and why."""


@final
@dataclass(frozen=True)
class Rollout:
    """One line of the rollouts file, with the line number errors refer to."""

    line_number: int
    record: dict[str, Any]
    size_bytes: int = 0
    """The length of its line in the file, line break included."""

    @property
    def task_index(self) -> Any:
        """``_ng_task_index``: which task of the benchmark this rollout answers."""
        return self.record.get("_ng_task_index")

    @property
    def rollout_index(self) -> Any:
        """``_ng_rollout_index``: which repeat of its task this rollout is."""
        return self.record.get("_ng_rollout_index")

    @property
    def agent_name(self) -> str | None:
        """``agent_ref.name``, or ``None`` when the record names no agent."""
        agent_ref = self.record.get("agent_ref")
        name = agent_ref.get("name") if isinstance(agent_ref, dict) else None
        return name if isinstance(name, str) else None

    @property
    def reward(self) -> Any:
        """``reward`` as the record holds it."""
        return self.record.get("reward")


_BLANK_LINE: Final = Rollout(0, {})
"""What :meth:`RunArtifacts._parse_line` returns for a line holding only whitespace."""


@final
@dataclass(frozen=True)
class ExportableConfig:
    """The saved config as exporters send it: masked again, whatever the file holds."""

    config: dict[str, Any]
    masked_paths: list[str]
    """Where the file held a value that looks like a live secret (now masked)."""

    def warning(self, path: Path) -> str | None:
        """A warning naming the values that looked like live secrets and were masked, or ``None``."""
        if not self.masked_paths:
            return None
        return (
            f"the saved config {path} holds values that look like live secrets "
            f"({', '.join(self.masked_paths)}); they are masked in this export. Save it "
            "masked: delete it, then evalexport save-config (or evalexport.save_run_config)"
        )


@final
@dataclass(frozen=True)
class RunFile:
    """A file or directory of the run directory, the role it plays and its size."""

    path: Path
    role: str
    size_bytes: int


@final
@dataclass(frozen=True)
class RunArtifacts:
    """Every file of one finished run, derived from the path of its rollouts file."""

    rollouts: Path
    """The rollouts file, absolute but not resolved: a symlink stays where it is."""

    @classmethod
    def from_rollouts_path(cls, rollouts_jsonl_fpath: str | os.PathLike[str]) -> RunArtifacts:
        """The run whose rollouts file is at ``rollouts_jsonl_fpath`` (made absolute, not
        resolved)."""
        return cls(Path(rollouts_jsonl_fpath).absolute())

    @classmethod
    def in_job(cls, runs_root: str | os.PathLike[str], benchmark: str) -> RunArtifacts:
        """The run of ``benchmark`` in a NeMo Gym job's output directory:
        ``<runs_root>/<benchmark>/<benchmark>_rollouts.jsonl``."""
        return cls.from_rollouts_path(Path(runs_root) / benchmark / f"{benchmark}_rollouts.jsonl")

    @property
    def run_dir(self) -> Path:
        """``R.absolute().parent``: never the directory a symlinked ``R`` points into."""
        return self.rollouts.parent

    @property
    def stem(self) -> str:
        """The rollouts file's name without ``.jsonl``: every file of the run starts with it."""
        return self.rollouts.stem

    def _sibling(self, suffix: str) -> Path:
        return self.run_dir / f"{self.stem}{suffix}"

    @property
    def benchmark(self) -> str:
        """The stem without ``_rollouts``: ``aime24`` for ``aime24_rollouts.jsonl``."""
        return self.stem.removesuffix("_rollouts") or self.stem

    @property
    def default_run_name(self) -> str:
        """``<benchmark>-<run directory name>``: how tracking exporters name the run."""
        return f"{self.benchmark}-{self.run_dir.name}"

    @property
    def aggregate_metrics(self) -> Path:
        """``<stem>_aggregate_metrics.json``: the aggregate metrics, one entry per agent."""
        return self._sibling("_aggregate_metrics.json")

    @property
    def saved_config(self) -> Path:
        """The saved (masked) config of the run, ``<stem>_resolved_config.yaml``."""
        return saved_config_path(self.rollouts)

    @property
    def materialized_inputs(self) -> Path:
        """``<stem>_materialized_inputs.jsonl``: the inputs the run was given."""
        return self._sibling("_materialized_inputs.jsonl")

    @property
    def failures(self) -> Path:
        """``<stem>_failures.jsonl``: rollouts that failed to run."""
        return self._sibling("_failures.jsonl")

    @property
    def sidecar_dir(self) -> Path:
        """``<dir>/<stem>/``: files the run wrote beside its rollouts."""
        return self.run_dir / self.stem

    def export_marker(self, exporter: str) -> Path:
        """``<stem>_<exporter>_export_done``: the marker of an export of this run."""
        return self._sibling(f"_{exporter}_export_done")

    def live_run_record(self, exporter: str) -> Path:
        """``<stem>_<exporter>_live_run.json``: written by an evaluation that logged live."""
        return self._sibling(f"_{exporter}_live_run.json")

    def live_run_id(self, exporter: str) -> str | None:
        """The id of a run the evaluation logged live to ``exporter``, if it recorded one."""
        try:
            data = json.loads(self.live_run_record(exporter).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        run_id = data.get("run_id") if isinstance(data, dict) else None
        return str(run_id) if run_id else None

    # -- prerequisites -----------------------------------------------------------------------

    def missing_file_reason(
        self, *, needs_metrics_and_config: bool, check_records: bool = True
    ) -> str | None:
        """The first required file that is missing, as the message a user sees, or ``None``.

        ``check_records=False`` leaves out the one check that opens a file (whether the
        rollouts file holds a record): for a caller that reads the rollouts anyway and says
        :attr:`no_records_message` itself, so the file is opened once.
        """
        if not self.rollouts.is_file():
            return f"Rollouts file not found: {self.rollouts}"
        if needs_metrics_and_config:
            # ATIF export names an empty file's lines itself, as NeMo Gym's exporter does.
            if check_records and self.holds_no_rollouts():
                return self.no_records_message
            if not self.aggregate_metrics.is_file():
                return f"Aggregate metrics not found: {self.aggregate_metrics}" + (
                    self._aggregate_hint()
                )
            if not self.saved_config.is_file():
                return (
                    f"Saved run config not found: {self.saved_config}. A run made without one "
                    "(NeMo Gym saves none) gets it from the config files and overrides it was "
                    f"launched with: evalexport save-config {self.rollouts} CONFIG.yaml "
                    "[CONFIG.yaml ...] [key=value ...]"
                )
        return None

    @property
    def no_records_message(self) -> str:
        """What a user is told when the rollouts file holds no record."""
        return f"Rollouts file contains no records: {self.rollouts}: nothing to export"

    def holds_no_rollouts(self) -> bool:
        """Whether the rollouts file has no line but blank ones (read up to the first that is not)."""
        try:
            with self.rollouts.open("rb") as handle:
                return all(line.isspace() for line in handle)  # no copy of a long line
        except OSError:
            return False  # the reader names the problem

    @property
    def legacy_agent_metrics(self) -> Path:
        """``<stem>_agent_metrics.json``: what NeMo Gym named the aggregate metrics before."""
        return self._sibling("_agent_metrics.json")

    def _aggregate_hint(self) -> str:
        """What the directory holds instead of this run's aggregate metrics, and what to do."""
        if self.legacy_agent_metrics.is_file():
            return (
                f". The run holds {self.legacy_agent_metrics.name}, the name older NeMo Gym "
                "versions gave the same file (one entry per agent); copy it under the current "
                f"name and export again: cp {self.legacy_agent_metrics} {self.aggregate_metrics}"
            )
        others = self.other_runs_in_directory()
        try:
            metrics = sorted(
                entry.name
                for entry in os.scandir(self.run_dir)
                if entry.name.endswith("_metrics.json")
                and entry.name != self.aggregate_metrics.name
            )
        except OSError:
            metrics = []
        if not others and not metrics:
            return ""
        found = []
        if others:
            found.append(f"other runs' rollouts ({', '.join(path.name for path in others)})")
        if metrics:
            found.append(f"metrics files of other names ({', '.join(metrics)})")
        return (
            f". {self.run_dir} holds {' and '.join(found)}, none of them this run's: the "
            f"aggregate metrics of {self.rollouts.name} are {self.aggregate_metrics.name}. Keep "
            "each run in a directory of its own with the files NeMo Gym wrote for it (rollout "
            "collection writes <stem>_aggregate_metrics.json beside <stem>.jsonl)."
        )

    def other_runs_in_directory(self) -> list[Path]:
        """Rollouts files of other runs that share this run's directory."""
        try:
            names = sorted(entry.name for entry in os.scandir(self.run_dir))
        except OSError:
            return []
        return [
            self.run_dir / name
            for name in names
            if name != self.rollouts.name
            and (name == "rollouts.jsonl" or name.endswith("_rollouts.jsonl"))
        ]

    def shared_directory_reason(self) -> str | None:
        """Why a directory exporter must refuse this run, or ``None`` when it may upload it."""
        others = self.other_runs_in_directory()
        if not others:
            return None
        listed = ", ".join(path.name for path in others)
        return (
            f"Run directory {self.run_dir} also holds another run's rollouts ({listed}); "
            "this exporter uploads the whole directory as one run. "
            "Keep each run in a directory of its own."
        )

    def unreadable_file_reason(
        self, readers: Mapping[Path, Callable[[BinaryIO], None]] | None = None
    ) -> str | None:
        """Why the run directory cannot be uploaded as it is, or ``None``: every file in it
        (through symlinks, as an upload walks it) must open for reading and be a regular file.

        Each file is opened, not checked with ``os.access``: root passes every access check,
        and a permission is not the only way a file fails to open (a dangling symlink, a FIFO).
        ``readers`` maps a file of the run (its path as :class:`RunArtifacts` names it) to a
        function that reads it through the handle this check opened, so a file that is both
        checked and read is opened once; a reader may raise :class:`RunFileError`.
        """
        readers = {Path(path): read for path, read in (readers or {}).items()}
        problems: list[str] = []

        def unlistable(error: OSError) -> None:
            problems.append(f"{error.filename} cannot be listed ({error.strerror or error})")

        for root, _, names in os.walk(self.run_dir, onerror=unlistable, followlinks=True):
            for name in sorted(names):
                path = Path(root) / name
                if problem := _unreadable(path, readers.get(path)):
                    problems.append(problem)
        if not problems:
            return None
        shown = "; ".join(problems[:3]) + (
            f"; and {len(problems) - 3} more" if problems[3:] else ""
        )
        return (
            f"Cannot upload {self.run_dir} as it is: {shown}. Every file of the run directory "
            "is uploaded: make each one a readable file (chmod a+r), or move it out."
        )

    # -- reading -----------------------------------------------------------------------------

    def iter_rollouts(self, digest: _Digest | None = None) -> Iterator[Rollout]:
        """Stream the rollouts one line at a time; blank lines are skipped.

        Raises :class:`RunFileError` naming the 1-based line number of a malformed line. One
        line may be very long (a model that never stopped): while it is parsed, only its bytes
        or its text, and the parsed record, are held, never a further copy. ``digest`` (a
        :mod:`hashlib` hash) is fed every byte of the file as it is read, so one pass both
        parses and hashes it.
        """
        with self._open_rollouts() as handle:
            yield from self.read_rollouts(handle, digest)

    def count_rollouts(self, digest: _Digest | None = None) -> int:
        """How many lines of the rollouts file are not blank, without parsing them; ``digest``
        is fed the file's bytes as for :meth:`iter_rollouts`."""
        count = 0
        with self._open_rollouts() as handle:
            for line in handle:
                if digest is not None:
                    digest.update(line)
                count += not line.isspace()
        return count

    def _open_rollouts(self) -> BinaryIO:
        try:
            return self.rollouts.open("rb")
        except OSError as error:
            raise RunFileError(f"Cannot read rollouts file {self.rollouts}: {error}") from None

    def read_rollouts(self, handle: BinaryIO, digest: _Digest | None = None) -> Iterator[Rollout]:
        """:meth:`iter_rollouts` from a handle the caller opened on the rollouts file."""
        line_number = 0
        while True:
            line_number += 1
            # Passed, not bound: the line's bytes are freed as soon as they are decoded.
            if digest is None:
                parsed = self._parse_line(handle.readline(), line_number)
            else:
                held = [handle.readline()]
                digest.update(held[0])
                parsed = self._parse_line(held.pop(), line_number)
            if parsed is None:
                return
            if parsed is not _BLANK_LINE:
                yield parsed

    def _parse_line(self, raw: bytes, line_number: int) -> Rollout | None:
        """The rollout on one line, ``_BLANK_LINE`` for a blank one, ``None`` at the end of the
        file."""
        if not raw:
            return None
        size = len(raw)
        if (decode := _fast_decode()) is not None:
            fast = decode(raw)  # None when refused: the strict parser decides, in its words
            if isinstance(fast, dict):
                return Rollout(line_number, fast, size)
            del fast
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise RunFileError(
                f"Malformed rollouts file {self.rollouts}: line {line_number} "
                f"is not UTF-8 ({error.reason} at byte {error.start})"
            ) from None
        del raw
        if line.isspace():
            return _BLANK_LINE
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            # Told without the line break, so an error's column is the column on the line.
            raise self._malformed(line.rstrip("\r\n"), line_number) from None
        except RecursionError:
            raise RunFileError(
                f"Malformed rollouts file {self.rollouts}: line {line_number} is nested too "
                "deeply to read"
            ) from None
        if not isinstance(record, dict):
            raise RunFileError(
                f"Malformed rollouts file {self.rollouts}: line {line_number} is a JSON "
                f"{type(record).__name__}, expected an object"
            )
        return Rollout(line_number, record, size)

    def _malformed(self, line: str, line_number: int) -> RunFileError:
        try:
            json.loads(line)
        except json.JSONDecodeError as error:
            return RunFileError(
                f"Malformed rollouts file {self.rollouts}: line {line_number} is not valid JSON "
                f"({error.msg} at column {error.colno})"
            )
        return RunFileError(f"Malformed rollouts file {self.rollouts}: line {line_number}")

    def read_file(self, path: Path) -> bytes:
        """The bytes of the aggregate metrics or the saved config, read once; a file that is
        missing or cannot be read is a :class:`RunFileError` naming it."""
        what = "Aggregate metrics" if path == self.aggregate_metrics else "Saved run config"
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise RunFileError(f"{what} not found: {path}") from None
        except OSError as error:
            raise RunFileError(f"Cannot read {what[0].lower()}{what[1:]} {path}: {error}") from None

    def read_aggregate_metrics(self) -> list[dict[str, Any]]:
        """The aggregate-metrics list, one entry per agent, checked for its shape."""
        return self.parse_aggregate_metrics(self.read_file(self.aggregate_metrics))

    def parse_aggregate_metrics(self, data: bytes) -> list[dict[str, Any]]:
        """:meth:`read_aggregate_metrics` of the file's bytes, read by the caller."""
        path = self.aggregate_metrics
        try:
            data = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise RunFileError(f"Cannot read aggregate metrics {path}: {error}") from None
        except json.JSONDecodeError as error:
            raise RunFileError(
                f"Malformed aggregate metrics {path}: {error.msg} at line {error.lineno}"
            ) from None
        except RecursionError:
            raise RunFileError(
                f"Malformed aggregate metrics {path}: nested too deeply to read"
            ) from None
        if not isinstance(data, list):
            raise RunFileError(
                f"Malformed aggregate metrics {path}: expected a list with one entry per agent, "
                f"found a JSON {type(data).__name__}"
            )
        for index, entry in enumerate(data):
            name = entry.get("agent_ref", {}).get("name") if isinstance(entry, dict) else None
            if not isinstance(name, str) or not name:
                raise RunFileError(
                    f"Malformed aggregate metrics {path}: entry {index} has no agent_ref.name"
                )
        return data

    def read_exportable_config(self) -> ExportableConfig:
        """The saved config masked again (masking is idempotent), with what that pass changed:
        a hand-written or older unmasked config never reaches a backend (SPEC §2)."""
        return self.exportable_config(self.read_saved_config())

    @staticmethod
    def exportable_config(config: dict[str, Any]) -> ExportableConfig:
        """:meth:`read_exportable_config` of a saved config already read."""
        from evalexport.masking import find_unmasked_secrets, mask_config

        masked = mask_config(config)
        assert isinstance(masked, dict)
        return ExportableConfig(masked, find_unmasked_secrets(config))

    def read_saved_config(self) -> dict[str, Any]:
        """The saved (masked, unresolved) run config."""
        return self.parse_saved_config(self.read_file(self.saved_config))

    def parse_saved_config(self, data: bytes) -> dict[str, Any]:
        """:meth:`read_saved_config` of the file's bytes, read by the caller."""
        import yaml

        path = self.saved_config
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise RunFileError(f"Cannot read saved run config {path}: {error}") from None
        try:
            # libyaml's parser where PyYAML has it: the same safe types, ten times faster.
            data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as error:
            raise RunFileError(f"Malformed saved run config {path}: {error}") from None
        except RecursionError:
            raise RunFileError(
                f"Malformed saved run config {path}: nested too deeply to read"
            ) from None
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise RunFileError(
                f"Malformed saved run config {path}: expected a mapping, "
                f"found {type(data).__name__}"
            )
        return data

    def files(self) -> list[RunFile]:
        """What the run directory holds, each entry with the role it plays for this run."""
        roles = {
            self.rollouts.name: "rollouts",
            self.aggregate_metrics.name: "aggregate metrics",
            self.saved_config.name: "saved config",
            self.materialized_inputs.name: "materialized inputs",
            self.failures.name: "failures",
            self.sidecar_dir.name: "sidecars",
        }
        others = set(self.other_runs_in_directory())
        found: list[RunFile] = []
        for entry in sorted(os.scandir(self.run_dir), key=lambda item: item.name):
            path = Path(entry.path)
            role = roles.get(entry.name)
            if (
                role is None
                and entry.name.startswith(f"{self.stem}_")
                and entry.name.endswith("_export_done")
            ):
                role = "export marker"
            if role is None:
                role = "other run's rollouts" if path in others else "other"
            found.append(RunFile(path, role, _size(path)))
        return found


@functools.cache
def _fast_decode() -> Callable[[bytes], object] | None:
    """msgspec's JSON decoder, where it is installed: 2.5x ``json.loads`` on a rollout line.

    It is exact for what it accepts (the same objects ``json.loads`` gives, the last of
    duplicate keys kept, integers of any size, floats correctly rounded) and refuses what
    ``json.loads`` reads differently (``NaN``, lone surrogates, numbers out of a float's range,
    malformed lines): those lines go to ``json.loads``, whose verdict and messages stand
    (``tests/property/test_rollout_parsing.py``). Without msgspec, every line does. The
    function returns ``None`` for a line it refuses.
    """
    try:
        import msgspec
    except ImportError:
        return None
    decode = msgspec.json.Decoder().decode
    refused = (msgspec.MsgspecError, RecursionError)

    def decoded(raw: bytes) -> object:
        try:
            return decode(raw)
        except refused:
            return None

    return decoded


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


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(_size(child) for child in path.iterdir())
    try:
        return path.stat().st_size
    except OSError:
        return 0
