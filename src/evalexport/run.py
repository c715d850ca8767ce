"""The run directory and its rules (SPEC §1).

A run is named by its rollouts file ``R = <dir>/<stem>.jsonl``; every other file is derived
from ``R`` here and nowhere else, so exporters never guess at a path.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import BinaryIO, ClassVar, Final, final

from evalexport import reading
from evalexport.callers import Caller, current_caller
from evalexport.gym.health import QUALITY_SUMMARY_NAME, ROLLOUT_VERDICTS_NAME
from evalexport.gym.jobs import (
    BENCHMARK_ROLLOUTS,
    GymJob,
    job_of_rollouts,
    unreadable_job_record,
)
from evalexport.masking import saved_config_path
from evalexport.reading import ExportableConfig, Rollout, RunFileError

__all__ = [
    "GENERIC_DIRECTORIES",
    "GENERIC_STEMS",
    "NAMING_RULE",
    "ExportableConfig",
    "Rollout",
    "RunArtifacts",
    "RunFile",
    "RunFileError",
]

GENERIC_STEMS: Final = frozenset({"example", "rollouts"})
"""Benchmark names NeMo Gym gives every run of a layout, so they name none: each resources
server's example run is ``data/example_rollouts.jsonl``, and a ``gym eval submit`` job writes
each benchmark's run to ``<job>/<benchmark>/artifacts/rollouts.jsonl``."""
GENERIC_DIRECTORIES: Final = frozenset({"data", "artifacts"})
NAMING_RULE: Final = (
    "the benchmark: the rollouts file's stem without _rollouts (aime24 for "
    "aime24_rollouts.jsonl), or, for a name NeMo Gym gives every run of a layout ("
    + ", ".join(
        f"{stem}_rollouts.jsonl" if stem != "rollouts" else "rollouts.jsonl"
        for stem in sorted(GENERIC_STEMS)
    )
    + "), the directory holding it, past "
    + " and ".join(f"{name}/" for name in sorted(GENERIC_DIRECTORIES))
    + "; for a run of a NeMo Gym job, the job's benchmark"
)
"""How a run's benchmark is named, in words: what ``--help`` says of the defaults the
benchmark gives (:attr:`RunArtifacts.benchmark` applies it; the dry run says what it gave)."""
_MAX_LIVE_RUN_RECORD: Final = 1024 * 1024
"""The directories of those layouts that hold a run but do not name it."""


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

    NAMING_RULE: ClassVar[str] = NAMING_RULE
    """How a run's benchmark is named, in words (:data:`evalexport.run.NAMING_RULE`): what an
    exporter's ``--help`` says of a default the benchmark gives."""

    rollouts: Path
    """The rollouts file, absolute but not resolved: a symlink stays where it is."""

    @classmethod
    def from_rollouts_path(cls, rollouts_jsonl_fpath: str | os.PathLike[str]) -> RunArtifacts:
        """The run whose rollouts file is at ``rollouts_jsonl_fpath`` (made absolute, not
        resolved)."""
        return cls(Path(rollouts_jsonl_fpath).absolute())

    @classmethod
    def of_path(cls, path: str | os.PathLike[str]) -> RunArtifacts:
        """The run a user names by ``path``: its rollouts file, the run directory when it
        holds exactly one rollouts file (``rollouts.jsonl`` or ``*_rollouts.jsonl``), or a
        NeMo Gym job's benchmark directory (its ``artifacts/rollouts.jsonl``).
        Raises :class:`RunFileError` naming the files a directory holds otherwise."""
        given = Path(path)
        if not given.is_dir():
            return cls.from_rollouts_path(given)
        gym_run = given / BENCHMARK_ROLLOUTS  # a NeMo Gym job's benchmark directory
        if gym_run.is_file():
            return cls.from_rollouts_path(gym_run)
        found = sorted(
            entry.name
            for entry in os.scandir(given)
            if entry.is_file() and _names_rollouts(entry.name)
        )
        if len(found) == 1:
            return cls.from_rollouts_path(given / found[0])
        if not found:
            raise RunFileError(
                f"{given.absolute()} is a directory with no rollouts file in it (a run's is "
                f"<benchmark>_rollouts.jsonl, or {BENCHMARK_ROLLOUTS} in a benchmark's "
                "directory of a NeMo Gym job); give the path of the run's rollouts file"
            )
        raise RunFileError(
            f"{given.absolute()} holds {len(found)} runs' rollouts files "
            f"({', '.join(found)}); name the one to inspect, e.g. {given / found[0]}"
        )

    @classmethod
    def in_job(cls, runs_root: str | os.PathLike[str], benchmark: str) -> RunArtifacts:
        """The run of ``benchmark`` under a plan's ``job.runs_root``:
        ``<runs_root>/<benchmark>/<benchmark>_rollouts.jsonl``; a benchmark name that would
        lead out of ``runs_root`` is a :class:`~evalexport.ingress.PathRefused`. (A ``gym eval
        submit`` job lays its runs out otherwise: :meth:`evalexport.gym.jobs.GymJob.rollouts`.)"""
        from evalexport import ingress

        directory = ingress.child(
            Path(runs_root), benchmark, named_by=f"the benchmark name {benchmark!r}"
        )
        return cls.from_rollouts_path(directory / f"{benchmark}_rollouts.jsonl")

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
        """The benchmark the run evaluated: the stem without ``_rollouts`` (``aime24`` for
        ``aime24_rollouts.jsonl``), unless that is one of the names NeMo Gym gives every run
        of a layout (:data:`GENERIC_STEMS`); then the name of the run's directory, past the
        directories Gym names alike (:data:`GENERIC_DIRECTORIES`): ``ether0`` for Gym's
        ``resources_servers/ether0/data/example_rollouts.jsonl``, ``aime24`` for a job's
        ``<job>/aime24/artifacts/rollouts.jsonl``."""
        return self._naming()[0]

    @property
    def benchmark_source(self) -> str:
        """Where :attr:`benchmark` came from, in words a user reads beside it."""
        return self._naming()[1]

    @property
    def default_run_name(self) -> str:
        """How tracking exporters name the run: ``<benchmark>-<run directory name>``; for a
        benchmark named by its directory, ``<benchmark>-<the directory holding it>`` (a
        job's benchmark: ``aime24-gym-job-…``)."""
        return self._naming()[2]

    def _naming(self) -> tuple[str, str, str]:
        """``(benchmark, where it came from, default run name)``."""
        if self._job is not None:
            job, benchmark = self._job
            job_id = job.record.gym_job_id
            return benchmark, f"named by NeMo Gym job {job_id}", f"{benchmark}-{job_id}"
        from_stem = self.stem.removesuffix("_rollouts") or self.stem
        if from_stem not in GENERIC_STEMS:
            return (
                from_stem,
                f"named by its rollouts file, {self.rollouts.name}",
                (f"{from_stem}-{self.run_dir.name}"),
            )
        directory = self.run_dir
        while directory.name in GENERIC_DIRECTORIES and directory.parent != directory:
            directory = directory.parent
        if not directory.name:  # the file system's root: nothing names it better
            return from_stem, f"named by its rollouts file, {self.rollouts.name}", from_stem
        source = (
            f"named by its directory {directory}, as {self.rollouts.name} is the name NeMo "
            "Gym gives every run of its layout"
        )
        holder = directory.parent.name
        return directory.name, source, f"{directory.name}-{holder}" if holder else directory.name

    @property
    def aggregate_metrics(self) -> Path:
        """The file holding the run's aggregate metrics, one entry per agent:
        ``<stem>_aggregate_metrics.json`` (rollout collection's), or, for a run that holds
        only it, ``<stem>_agent_metrics.json`` (reward profiling's agent-level metrics, flat:
        the layout of older NeMo Gym runs), read as the same metrics
        (:func:`evalexport.reading.parse_aggregate_metrics`)."""
        aggregate = self._sibling("_aggregate_metrics.json")
        if not os.path.lexists(aggregate) and os.path.lexists(agent := self.agent_metrics):
            return agent
        return aggregate

    @property
    def agent_metrics(self) -> Path:
        """``<stem>_agent_metrics.json``: the agent-level metrics NeMo Gym's reward profiling
        writes, flat (``[{"mean/reward": 0.4, ..., "agent_ref": {"name": ...}}]``)."""
        return self._sibling("_agent_metrics.json")

    @property
    def saved_config(self) -> Path:
        """The saved (masked) config of the run, ``<stem>_resolved_config.yaml``; for a run of
        a NeMo Gym job that has none, the job's ``resolved-config.yaml`` (what was submitted:
        masked in every export, as every saved config is)."""
        own = saved_config_path(self.rollouts)
        if (job := self.gym_job) is not None and not os.path.lexists(own):
            return job.config
        return own

    @cached_property
    def _job(self) -> tuple[GymJob, str] | None:
        return job_of_rollouts(self.rollouts)

    @property
    def gym_job(self) -> GymJob | None:
        """The NeMo Gym job this run is a benchmark of (``<job>/<benchmark>/artifacts/
        rollouts.jsonl`` beside the job's ``gym-job.json``), or ``None``."""
        return None if self._job is None else self._job[0]

    @property
    def materialized_inputs(self) -> Path:
        """``<stem>_materialized_inputs.jsonl``: the inputs the run was given."""
        return self._sibling("_materialized_inputs.jsonl")

    @property
    def quality_summary(self) -> Path:
        """``quality_summary.json`` in the run directory: NeMo Gym's rollout health summary
        (:mod:`evalexport.gym.health`; named alike for every run of a directory)."""
        return self.run_dir / QUALITY_SUMMARY_NAME

    @property
    def rollout_verdicts(self) -> Path:
        """``rollout_verdicts.jsonl`` in the run directory: NeMo Gym's verdict of each
        rollout."""
        return self.run_dir / ROLLOUT_VERDICTS_NAME

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
        """The id of a run the evaluation logged live to ``exporter``, if it recorded one (a
        record that cannot be read is none: it is the evaluation's note, not the run)."""
        from evalexport import ingress

        path = self.live_run_record(exporter)
        try:
            with reading.open_regular(path) as handle:
                record = handle.read(_MAX_LIVE_RUN_RECORD + 1)
            data = ingress.load_json(record, path, what="live run record")
        except (OSError, RunFileError):
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
        if self.rollouts.exists() and (what := reading.not_a_file_reason(self.rollouts)):
            return (
                f"Cannot read the rollouts file: {what}. Give the path of the run's rollouts "
                "file itself (a pipe or a device can be read once at most, and an export reads "
                "a run's files more than once over its life)"
            )
        if not self.rollouts.is_file():
            others = [] if os.path.lexists(self.rollouts) else self.other_runs_in_directory()
            held = ", ".join(path.name for path in others)
            return f"Rollouts file not found: {self.rollouts}" + (
                f"; {self.run_dir} holds {held} instead" if held else ""
            )
        if needs_metrics_and_config:
            # ATIF export names an empty file's lines itself, as NeMo Gym's exporter does.
            if check_records and self.holds_no_rollouts():
                return self.no_records_message
            for path, what in (
                (self.aggregate_metrics, "aggregate metrics"),
                (self.saved_config, "saved config"),
            ):
                if problem := self.refused_file_reason(path, what):
                    return problem
            if not self.aggregate_metrics.is_file():
                return self.missing_aggregate_metrics_message()
            if not self.saved_config.is_file():
                return self.missing_saved_config_message()
        return None

    def refused_file_reason(self, path: Path, what: str) -> str | None:
        """Why the ingress gate refuses ``path``, a file of the run (``what``: ``"aggregate
        metrics"``, ``"saved config"``), though a name is there: no regular file (a FIFO, a
        directory), or a symlink out of its directory (:meth:`link_out_reason`); ``None`` when
        it may be read, or is missing (the caller says that). Every export refuses the run
        for it, and ``inspect`` says so rather than read it."""
        if path.exists() and (problem := reading.not_a_file_reason(path)):
            return f"Cannot read the {what}: {problem}"
        return self.link_out_reason(path, what)

    def link_out_reason(self, path: Path, what: str) -> str | None:
        """Why ``path``, a file of the run, is not read: a symlink out of the directory that
        holds it (the run directory; for the job's ``resolved-config.yaml``, the job's), or
        ``None`` (:func:`evalexport.ingress.inside`)."""
        from evalexport import ingress

        job = self.gym_job
        home = job.directory if job is not None and path == job.config else self.run_dir
        try:
            ingress.inside(home, path, named_by=f"the {what}")
        except ingress.PathRefused as refused:
            return str(refused)
        return None

    def missing_aggregate_metrics_message(self) -> str:
        """What an export and ``inspect`` say when the aggregate metrics are missing."""
        return f"Aggregate metrics not found: {self.aggregate_metrics}" + self._aggregate_hint()

    def missing_saved_config_message(self) -> str:
        """What an export and ``inspect`` say when the saved config is missing: the
        ``save-config`` command that writes it, or why the run's Gym job gives none."""
        if problem := unreadable_job_record(self.rollouts):
            return (
                f"Saved run config not found: {self.saved_config}, and the run's NeMo "
                f"Gym job gives none: {problem}"
            )
        return (
            f"Saved run config not found: {self.saved_config}. A run made without one "
            "(NeMo Gym saves none) gets it from the config files and overrides it was "
            f"launched with: {self.save_config_advice()}"
        )

    def inspect_advice(self) -> str:
        """How the asker (:mod:`evalexport.callers`) sees what this run holds: the command
        ``evalexport inspect R``, or the call ``evalexport.inspect('R')``, in backticks."""
        if current_caller() is Caller.PYTHON:
            return f"`evalexport.inspect({str(self.rollouts)!r})`"
        return f"`evalexport inspect {self.rollouts}`"

    def save_config_advice(self) -> str:
        """How the asker saves this run's config from its launch files: the ``save-config``
        command, and to a Python caller the call that saves a config it holds as well (no
        call merges launch files as the command does)."""
        command = (
            f"evalexport save-config {self.rollouts} CONFIG.yaml [CONFIG.yaml ...] [key=value ...]"
        )
        if current_caller() is Caller.PYTHON:
            return (
                f"{command} on the command line, or evalexport.save_run_config(config, "
                f"{str(self.rollouts)!r}) with the merged config as a mapping"
            )
        return command

    @property
    def no_records_message(self) -> str:
        """What a user is told when the rollouts file holds no record."""
        return f"Rollouts file contains no records: {self.rollouts}: nothing to export"

    def holds_no_rollouts(self) -> bool:
        """Whether the rollouts file has no line but blank ones (:mod:`evalexport.reading`)."""
        return reading.holds_no_rollouts(self)

    def _aggregate_hint(self) -> str:
        """What the directory holds instead of this run's aggregate metrics, and what to do:
        keep runs apart, or have NeMo Gym write the metrics (``gym eval profile``)."""
        others = self.other_runs_in_directory()
        own = self._own_files()
        try:
            metrics = sorted(
                entry.name
                for entry in os.scandir(self.run_dir)
                if entry.name.endswith("_metrics.json") and entry.name not in own
            )
        except OSError:
            metrics = []
        found = []
        if others:
            found.append(f"other runs' rollouts ({', '.join(path.name for path in others)})")
        if metrics:
            found.append(f"metrics files of other names ({', '.join(metrics)})")
        apart = (
            f". {self.run_dir} holds {' and '.join(found)}, none of them this run's: the "
            f"aggregate metrics of {self.rollouts.name} are {self.aggregate_metrics.name}. Keep "
            "each run in a directory of its own with the files NeMo Gym wrote for it"
            if found
            else ""
        )
        inputs = self.materialized_inputs
        given, which = (  # the command as a shell takes it, a path with a space quoted
            (shlex.quote(str(inputs)), "")
            if inputs.is_file()
            else (
                "INPUTS.jsonl",
                ", INPUTS.jsonl being the materialized inputs rollout collection writes beside "
                f"the rollouts ({inputs.name})",
            )
        )
        return (
            f"{apart}. NeMo Gym's rollout collection writes them when it ends; for rollouts "
            "without them, Gym's reward profiling writes the agent-level metrics, read in "
            "their place, with no model or server: "
            f"gym eval profile --inputs {given} --rollouts {shlex.quote(str(self.rollouts))}"
            f"{which}"
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
            if name != self.rollouts.name and _names_rollouts(name)
        ]

    def shared_directory_reason(self, *, speaking_for: str | None = None) -> str | None:
        """Why a directory exporter must refuse this run, or ``None`` when it may upload it.

        ``speaking_for`` names the exporters that refuse, as ``inspect`` speaks for them;
        without it the reason is the exporting one's own (``this exporter``)."""
        others = self.other_runs_in_directory()
        if not others:
            return None
        listed = ", ".join(path.name for path in others)
        uploads = (
            "this exporter uploads the whole directory as one run"
            if speaking_for is None
            else f"{speaking_for} upload the whole directory as one run and refuse it "
            "(mlflow, wandb and atif read only this run's files)"
        )
        return (
            f"Run directory {self.run_dir} also holds another run's rollouts ({listed}); "
            f"{uploads}. Keep each run in a directory of its own."
        )

    def unreadable_file_reason(
        self,
        readers: Mapping[Path, Callable[[BinaryIO], None]] | None = None,
        others: Callable[[Path, BinaryIO], None] | None = None,
    ) -> str | None:
        """Why the run directory cannot be uploaded as it is, or ``None``
        (:func:`evalexport.reading.unreadable_file_reason`)."""
        return reading.unreadable_file_reason(self, readers, others)

    # -- reading: the readers live in evalexport.reading; these are plugin API 1's ------------

    def iter_rollouts(self, digest: reading.Digest | None = None) -> Iterator[Rollout]:
        """Stream the rollouts one line at a time (:func:`evalexport.reading.iter_rollouts`)."""
        return reading.iter_rollouts(self, digest)

    def read_aggregate_metrics(self) -> list[dict[str, object]]:
        """The aggregate-metrics list, one entry per agent, checked for its shape."""
        return reading.parse_aggregate_metrics(
            self, reading.read_file(self, self.aggregate_metrics)
        )

    def read_saved_config(self) -> dict[str, object]:
        """The saved (masked, unresolved) run config."""
        return reading.parse_saved_config(self, reading.read_file(self, self.saved_config))

    def read_exportable_config(self) -> ExportableConfig:
        """The saved config masked again (masking is idempotent), with what that pass changed:
        a hand-written or older unmasked config never reaches a backend (SPEC §2)."""
        return reading.exportable_config(self.read_saved_config())

    def files(self) -> list[RunFile]:
        """What the run directory holds, each entry with the role it plays for this run."""
        roles = self._own_files()
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

    def _own_files(self) -> dict[str, str]:
        """This run's files that NeMo Gym and evalexport name after it, by name: their roles."""
        return {
            self.rollouts.name: "rollouts",
            self.agent_metrics.name: "agent-level metrics",
            self.aggregate_metrics.name: "aggregate metrics"
            + (" (agent-level layout)" if self.aggregate_metrics == self.agent_metrics else ""),
            self.saved_config.name: "saved config",
            self.materialized_inputs.name: "materialized inputs",
            self.failures.name: "failures",
            self.quality_summary.name: "health summary",
            self.rollout_verdicts.name: "rollout verdicts",
            self.sidecar_dir.name: "sidecars",
            self._sibling("_reward_profiling.jsonl").name: "reward profiling",
            self._sibling("_repeat_level_metrics.json").name: "repeat-level metrics",
        }


def _names_rollouts(name: str) -> bool:
    """Whether a file of this name is a run's rollouts file."""
    return name == "rollouts.jsonl" or name.endswith("_rollouts.jsonl")


def _size(path: Path) -> int:
    """Bytes under ``path``, links not followed (a link to ``/`` is a link), what cannot be
    listed or stated counting 0."""
    try:
        if path.is_symlink() or not path.is_dir():
            return path.lstat().st_size
        return sum(_size(child) for child in path.iterdir())
    except OSError:
        return 0
