"""NeMo Gym's job directories: what ``gym eval submit`` leaves behind, read as Gym reads it.

Gym 0.7.0's orchestration (``nemo_gym/orchestration/jobs.py``, ``executors/``) makes one
directory per submission, named by its ``gym_job_id`` (``gym-job-<UTC time>-<hex>``)::

    <job>/gym-job.json            the SubmissionRecord: who submitted what, where, when
    <job>/resolved-config.yaml    the submit config, resolved: host values in clear text
    <job>/<benchmark>/job.sh      one Slurm job per benchmark
    <job>/<benchmark>/artifacts/rollouts.jsonl (+ rollouts_aggregate_metrics.json, ...)

The record is read as Gym's ``SubmissionRecord.load`` reads it: one written by a newer Gym
(a ``schema_version`` above :data:`SCHEMA_VERSION`) is refused, an older one's missing fields
take their defaults. A benchmark whose ``job_id`` is ``None`` never started (Gym's ``failed``:
its ``error`` says why). The record's paths are where the job ran (a cluster's file system);
the benchmarks are found beside the record, wherever the directory is now.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Final, final

from pydantic import BaseModel, ValidationError

from evalexport.host.files import RunFileError, read_bounded
from evalexport.ingress import child, load_json

__all__ = [
    "BENCHMARK_ROLLOUTS",
    "JOB_CONFIG_NAME",
    "JOB_RECORD_NAME",
    "SCHEMA_VERSION",
    "BenchmarkJob",
    "BenchmarkState",
    "GymJob",
    "JobRecord",
    "job_of_rollouts",
    "unreadable_job_record",
]

JOB_RECORD_NAME: Final = "gym-job.json"
"""Gym's ``MANIFEST_NAME``: the record in the job directory."""
JOB_CONFIG_NAME: Final = "resolved-config.yaml"
"""Gym's ``RESOLVED_CONFIG_NAME``: the submit config as submitted, beside the record, host
values in clear text."""
SCHEMA_VERSION: Final = 1
"""The newest record schema this reads: Gym 0.7.0's."""
BENCHMARK_ROLLOUTS: Final = Path("artifacts") / "rollouts.jsonl"
"""Where each benchmark's run writes its rollouts, under its directory (Gym's Slurm script
passes ``+output_jsonl_fpath=<job>/<benchmark>/artifacts/rollouts.jsonl``)."""
_MAX_RECORD_BYTES: Final = 16 * 1024 * 1024


class BenchmarkJob(BaseModel):
    """One benchmark's submission, as Gym records it."""

    benchmark: str
    job_dir: str
    job_id: str | None = None
    error: str | None = None


class JobRecord(BaseModel):
    """Gym's ``SubmissionRecord`` (``gym-job.json``): every field it has at schema 1."""

    gym_job_id: str
    gym_version: str
    gym_commit: str | None = None
    submitted_at: str
    run_dir: str
    cluster: str
    executor: str
    submitted_by: str
    benchmarks: list[BenchmarkJob]
    hostname: str | None = None
    executor_metadata: dict[str, str] = {}
    schema_version: int = SCHEMA_VERSION


@final
@dataclass(frozen=True)
class BenchmarkState:
    """Where one benchmark of a job stands, as its files say."""

    name: str
    job_id: str | None
    error: str | None
    rollouts: Path
    rollouts_exist: bool
    metrics_exist: bool

    @property
    def started(self) -> bool:
        """Whether the benchmark was queued (Gym recorded a job id for it)."""
        return self.job_id is not None

    def describe(self) -> str:
        """One line: started or not, its rollouts and metrics."""
        if not self.started:
            return f"never started: {self.error or 'no job id recorded'}"
        if not self.rollouts_exist:
            return (
                f"Slurm job {self.job_id}; no rollouts yet at {self.rollouts} (still running, or "
                f"it failed: see {self.rollouts.parent.parent / 'logs'})"
            )
        metrics = "with" if self.metrics_exist else "without"
        return f"Slurm job {self.job_id}; rollouts {metrics} aggregate metrics"


@final
@dataclass(frozen=True)
class GymJob:
    """A ``gym eval submit`` job directory and its record."""

    directory: Path
    record: JobRecord

    @classmethod
    def load(cls, directory: Path) -> GymJob:
        """The job in ``directory``; :class:`RunFileError` naming what is wrong with its
        record (missing, unreadable, written by a newer Gym, not a record, a benchmark whose
        name would lead out of the job: :func:`evalexport.ingress.child`)."""
        path = directory / JOB_RECORD_NAME
        data = read_bounded(
            path, _MAX_RECORD_BYTES, "Job record", "is it the `gym-job.json` of `gym eval submit`?"
        )
        payload = load_json(data, path, what="job record")
        version = payload.get("schema_version") if isinstance(payload, dict) else None
        if not isinstance(version, int):  # as Gym's load: ``true`` is a version too
            raise RunFileError(
                f"Malformed job record {path}: no usable schema_version (got {version!r}); it "
                "was not written by `gym eval submit`"
            )
        if version > SCHEMA_VERSION:
            raise RunFileError(
                f"The job record {path} has schema_version {version}, written by a newer "
                f"nemo-gym; this evalexport reads up to {SCHEMA_VERSION}. Upgrade evalexport."
            )
        try:
            record = JobRecord.model_validate(payload)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in item['loc'])}: {item['msg']}" for item in error.errors()
            )
            raise RunFileError(f"Malformed job record {path}: {problems}") from None
        for entry in record.benchmarks:  # each names a directory of the job: only one of it
            child(directory, entry.benchmark, named_by=f"A benchmark's name in {path}")
        return cls(directory.absolute(), record)

    @property
    def record_path(self) -> Path:
        """``gym-job.json``: the job's record."""
        return self.directory / JOB_RECORD_NAME

    @property
    def config(self) -> Path:
        """``resolved-config.yaml``: what was submitted, host values resolved in clear text
        (evalexport masks it as it masks every saved config)."""
        return self.directory / JOB_CONFIG_NAME

    def rollouts(self, benchmark: str) -> Path:
        """Where ``benchmark``'s run writes its rollouts, in this directory."""
        return self.directory / benchmark / BENCHMARK_ROLLOUTS

    def benchmark(self, name: str) -> BenchmarkJob | None:
        """The record's entry for ``name``, if the job ran it."""
        return next((entry for entry in self.record.benchmarks if entry.benchmark == name), None)

    def states(self) -> list[BenchmarkState]:
        """Each benchmark of the record, in its order, with what its directory holds."""
        states = []
        for entry in self.record.benchmarks:
            rollouts = self.rollouts(entry.benchmark)
            metrics = rollouts.with_name(f"{rollouts.stem}_aggregate_metrics.json")
            states.append(
                BenchmarkState(
                    entry.benchmark,
                    entry.job_id,
                    entry.error,
                    rollouts,
                    rollouts.is_file(),
                    metrics.is_file(),
                )
            )
        return states

    @cached_property
    def identity(self) -> dict[str, str]:
        """What names the job wherever its runs go: tags in MLflow, config in W&B. Fields
        Gym left unset are left out."""
        record = self.record
        fields = {
            "gym_job_id": record.gym_job_id,
            "gym_version": record.gym_version,
            "gym_commit": record.gym_commit,
            "cluster": record.cluster,
            "executor": record.executor,
            "submitted_at": record.submitted_at,
            "submitted_by": record.submitted_by,
            "hostname": record.hostname,
        }
        return {key: value for key, value in fields.items() if value is not None}


def job_of_rollouts(rollouts: Path) -> tuple[GymJob, str] | None:
    """The job and benchmark whose run ``rollouts`` is (``<job>/<benchmark>/artifacts/
    rollouts.jsonl`` beside a ``gym-job.json`` that lists the benchmark), or ``None``. A
    record that cannot be read is no job: the run is read as a run of its own."""
    if rollouts.parent.name != BENCHMARK_ROLLOUTS.parent.name:
        return None
    benchmark_dir = rollouts.parent.parent
    directory = benchmark_dir.parent
    if not (directory / JOB_RECORD_NAME).is_file():
        return None
    try:
        job = GymJob.load(directory)
    except RunFileError:
        return None
    if job.benchmark(benchmark_dir.name) is None or rollouts.name != BENCHMARK_ROLLOUTS.name:
        return None
    return job, benchmark_dir.name


def unreadable_job_record(rollouts: Path) -> str | None:
    """Why the record of the job ``rollouts`` seems to be a run of cannot be read, or
    ``None`` (no job there, or a readable one): what a run missing its config is told."""
    directory = rollouts.parent.parent.parent
    if rollouts.parent.name != BENCHMARK_ROLLOUTS.parent.name:
        return None
    if not (directory / JOB_RECORD_NAME).is_file():
        return None
    try:
        GymJob.load(directory)
    except RunFileError as error:
        return str(error)
    return None
