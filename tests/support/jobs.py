"""NeMo Gym job directories for tests: what ``gym eval submit`` leaves, with finished runs.

:func:`make_gym_job` writes a job of benchmarks (``{name: started}``): its ``gym-job.json`` and
``resolved-config.yaml`` (canary secrets among the host values, as Gym resolves them into it in
clear text) and, for each benchmark that started, a finished run at
``<job>/<benchmark>/artifacts/rollouts.jsonl`` (:func:`evalexport.testing.factory.make_run`).
Given a :class:`~tests.support.gym.GymOracle`, Gym's own Slurm executor writes the record,
the config and the benchmark directories (nothing is queued); without one they are written by
hand in the same shape (the ``--with_gym`` tests hold the hand-written record to Gym's
``SubmissionRecord.load``).
"""

from __future__ import annotations

import datetime
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

import yaml

from evalexport.gym.jobs import JOB_CONFIG_NAME, JOB_RECORD_NAME, GymJob
from evalexport.testing.factory import CanarySecrets, SampleRun, make_run

if TYPE_CHECKING:
    from tests.support.gym import GymOracle

__all__ = ["SampleJob", "make_gym_job", "submit_config"]

NOT_STARTED = (
    "sbatch: error: Batch job submission failed: Invalid account or account/partition "
    "combination specified"
)
"""What ``sbatch`` answers a benchmark that cannot be queued: its record's ``error``."""


@final
@dataclass(frozen=True)
class SampleJob:
    """A job the factory wrote: its directory, its runs by benchmark, the canaries planted."""

    job: GymJob
    runs: dict[str, SampleRun]
    canaries: CanarySecrets

    @property
    def directory(self) -> Path:
        """The job directory, ``<output_path>/<gym_job_id>``."""
        return self.job.directory


def submit_config(
    output_path: Path, benchmarks: list[str], canaries: CanarySecrets
) -> dict[str, Any]:
    """A submit config (Gym's ``SubmitConfig``) of one vLLM policy on a Slurm cluster, its
    ``host:``/``lit:`` values carrying canaries: ``HF_TOKEN`` (a secret name), a database URL
    with a password, an authorization header among extra arguments."""
    return {
        "services": {
            "policy": {
                "type": "vllm",
                "container": "vllm/vllm-openai:v0.10.1",
                "model": "Qwen/Qwen3-8B",
                "env": {
                    "HF_TOKEN": "host:HF_TOKEN",
                    "RESULTS_DB": "lit:postgres://eval:"
                    f"{canaries.in_values['url_password']}@db.internal/results",
                },
            }
        },
        "compute": {
            "cluster-a": {
                "type": "slurm",
                "account": "eval",
                "node_pools": {"gpu": {"partition": "batch", "nodes": 1, "gpus_per_node": 1}},
            }
        },
        "driver": {
            "policy_model": "policy",
            "benchmarks": {name: {"run": {"num_repeats": 4}} for name in benchmarks},
            "env": {
                "WANDB_API_KEY": f"lit:{canaries.by_key['wandb_api_key']}",
                "JUDGE_ARGS": "lit:--header 'Authorization: Bearer "
                f"{canaries.in_values['authorization_header']}'",
            },
        },
        "job": {"output_path": str(output_path)},
        "otel": {"enabled": False},
    }


def make_gym_job(
    output_path: Path,
    *,
    benchmarks: Mapping[str, bool] | None = None,
    canaries: CanarySecrets | None = None,
    gym: GymOracle | None = None,
    **run_knobs: Any,
) -> SampleJob:
    """A job under ``output_path`` (Gym's ``job.output_path``) of ``benchmarks`` (name ->
    whether ``sbatch`` queued it; default ``aime24`` queued, ``gpqa`` refused), each queued one
    with a finished run (``run_knobs`` go to :func:`make_run`; ``benchmark`` and ``stem`` are
    the job's)."""
    benchmarks = dict(benchmarks or {"aime24": True, "gpqa": False})
    canaries = canaries or CanarySecrets()
    config = submit_config(output_path, list(benchmarks), canaries)
    sbatch = {
        name: (0, str(4242 + number)) if started else (1, NOT_STARTED)
        for number, (name, started) in enumerate(benchmarks.items())
    }
    if gym is not None:
        directory = gym.make_job(
            config,
            sbatch,
            {
                "HF_TOKEN": canaries.by_key["hf_token"],
                "XDG_CACHE_HOME": str(output_path / ".cache"),  # Gym's local job index
            },
        )
    else:
        directory = _by_hand(output_path, config, sbatch, canaries)
    job = GymJob.load(directory)
    runs = {
        name: make_run(
            job.rollouts(name).parent,
            benchmark=name,
            stem="rollouts",
            saved_config=False,  # a job's run has none: the job's config is its config
            canaries=canaries,
            **run_knobs,
        )
        for name, started in benchmarks.items()
        if started
    }
    return SampleJob(job, runs, canaries)


def _by_hand(
    output_path: Path,
    config: dict[str, Any],
    sbatch: Mapping[str, tuple[int, str]],
    canaries: CanarySecrets,
) -> Path:
    """The record, the config and the benchmark directories in the shape Gym's Slurm
    executor writes them (its ``SubmissionRecord.dumps`` and ``yaml.safe_dump`` of the config,
    values resolved)."""
    now = datetime.datetime.now(datetime.UTC)
    gym_job_id = f"gym-job-{now.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"
    directory = output_path / gym_job_id
    for name in sbatch:
        for sub in ("logs", "artifacts"):
            (directory / name / sub).mkdir(parents=True)
    record: dict[str, Any] = {
        "gym_job_id": gym_job_id,
        "gym_version": "0.7.0",
        "gym_commit": None,
        "submitted_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "run_dir": str(directory),
        "cluster": "cluster-a",
        "executor": "slurm",
        "submitted_by": "evaluator",
        "benchmarks": [
            {
                "benchmark": name,
                "job_dir": str(directory / name),
                "job_id": said if code == 0 else None,
                "error": None if code == 0 else said,
            }
            for name, (code, said) in sbatch.items()
        ],
        "hostname": None,
        "executor_metadata": {},
        "schema_version": 1,
    }
    (directory / JOB_RECORD_NAME).write_text(json.dumps(record, indent=2) + "\n")
    resolved = json.loads(json.dumps(config))
    resolved["services"]["policy"]["env"] = {
        "HF_TOKEN": canaries.by_key["hf_token"],
        **{
            key: value.removeprefix("lit:")
            for key, value in config["services"]["policy"]["env"].items()
            if key != "HF_TOKEN"
        },
    }
    resolved["driver"]["env"] = {
        key: value.removeprefix("lit:") for key, value in config["driver"]["env"].items()
    }
    path = directory / JOB_CONFIG_NAME
    path.write_text(yaml.safe_dump(resolved, sort_keys=False))
    path.chmod(0o600)  # owner-only, as Gym writes it: host values are in clear text
    return directory
