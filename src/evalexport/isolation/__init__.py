"""Running an SDK in a virtual environment of its own, through a worker subprocess (SPEC §3.4)."""

from __future__ import annotations

from evalexport.isolation.environments import (
    Environment,
    EnvironmentBuildError,
    EnvironmentSpec,
    Installer,
    ensure_environment,
    existing_environment,
    find_installer,
    list_environments,
    remove_environment,
)
from evalexport.isolation.launcher import StartedWorker, WorkerOutcome, run_worker, started_worker

__all__ = [
    "Environment",
    "EnvironmentBuildError",
    "EnvironmentSpec",
    "Installer",
    "StartedWorker",
    "WorkerOutcome",
    "ensure_environment",
    "existing_environment",
    "find_installer",
    "list_environments",
    "remove_environment",
    "run_worker",
    "started_worker",
]
