"""The NeMo Gym environment: built once per directory, under a lock, record written last."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Final

__all__ = [
    "GYM_IMPORT_REQUIREMENTS",
    "GYM_REQUIREMENT",
    "GymEnvironmentError",
    "ensure_gym_environment",
    "find_python_313",
]

GYM_REQUIREMENT: Final = "nemo-gym==0.7.0"
GYM_DECLARED_PYTHON: Final = "3.13.14"
"""The Python nemo-gym 0.7.0 declares; it runs on any 3.13."""
GYM_IMPORT_REQUIREMENTS: Final = (
    "pydantic",
    "openai==2.44.0",
    "omegaconf",
    "hydra-core",
    "rich",
    "ray",
    "orjson",
    "uvicorn",
    "aiohttp",
    "fastapi",
    "itsdangerous",
    "httptools",
    "yappi",
    "pydot",
    "anthropic",
    "mlflow>=2.10,<4",
    "wandb>=0.16,<1",
    "math-verify",
    "devtools",
    "psutil",
)
"""What ``import nemo_gym.atif_export`` and ``nemo_gym.rollout_collection`` need (found by
importing them in an empty 3.13 env), the SDKs Gym's live exporters
(``nemo_gym.exporters.mlflow``, ``.wandb``) import, what Gym's math resources server
(``resources_servers.math_with_judge``, whose aggregation makes the sample run's metrics)
imports, and what Gym's command line (``gym eval profile``, which advice of ours names)
imports."""
GYM_MODULES: Final = (
    "nemo_gym.atif_export",
    "nemo_gym.atif_reverification",
    "nemo_gym.orchestration.jobs",
    "nemo_gym.rollout_health",
    "nemo_gym.rollout_collection",
    "nemo_gym.exporters.mlflow",
    "nemo_gym.exporters.wandb",
    "resources_servers.math_with_judge.app",
    "nemo_gym.cli.eval",
)
"""The modules the oracle uses; the build imports each before it counts as complete."""
_RECORD: Final = "evalexport-gym-env.json"


class GymEnvironmentError(RuntimeError):
    """The Gym environment could not be built; the message says which step and why."""


def find_python_313() -> str | None:
    """A Python 3.13 interpreter: ``$EVALEXPORT_GYM_PYTHON``, on PATH, or under pyenv."""
    candidates = [os.environ.get("EVALEXPORT_GYM_PYTHON", ""), shutil.which("python3.13") or ""]
    # Tests move HOME; the pyenv of the user running them stays where it is.
    for root in {
        Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")),
        _real_home() / ".pyenv",
    }:
        candidates += sorted(map(str, root.glob("versions/3.13*/bin/python3.13")), reverse=True)
    for candidate in filter(None, candidates):
        try:
            completed = subprocess.run(
                [candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 13))"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            continue
        if completed.stdout.strip() == "True":
            return candidate
    return None


def _real_home() -> Path:
    import pwd

    return Path(pwd.getpwuid(os.getuid()).pw_dir)


def _uv() -> str:
    found = shutil.which("uv")
    if found is None:
        try:
            from uv import find_uv_bin
        except ImportError:
            raise GymEnvironmentError(
                "uv is needed to install nemo-gym for Python 3.13 (pip install uv)"
            ) from None
        found = find_uv_bin()
    return found


def _run(command: list[str], what: str) -> None:
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        tail = "\n".join((completed.stderr or completed.stdout).strip().splitlines()[-20:])
        raise GymEnvironmentError(f"{what} failed (exit code {completed.returncode}):\n{tail}")


def ensure_gym_environment(directory: Path) -> Path:
    """The python of the Gym environment in ``directory``, built now if it is not complete."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    with (directory.parent / f"{directory.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        python = directory / "bin" / "python"
        if _read_record(directory) == _record():
            return python
        if directory.exists():  # an interrupted build is never used
            shutil.rmtree(directory)
        interpreter = find_python_313()
        if interpreter is None:
            raise GymEnvironmentError(
                "NeMo Gym 0.7.0 needs Python 3.13 and none was found "
                "(set EVALEXPORT_GYM_PYTHON, or install python3.13)"
            )
        try:
            _run([interpreter, "-m", "venv", "--without-pip", str(directory)], "Creating the venv")
            uv = _uv()
            target = ["--python", str(python)]
            _run(
                [uv, "pip", "install", *target, "--python-version", GYM_DECLARED_PYTHON,
                 "--no-deps", GYM_REQUIREMENT],
                f"Installing {GYM_REQUIREMENT}",
            )  # fmt: skip
            _run(
                [uv, "pip", "install", *target, *GYM_IMPORT_REQUIREMENTS], "Installing its imports"
            )
            _run([str(python), "-c", f"import {', '.join(GYM_MODULES)}"], "Importing nemo_gym")
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        (directory / _RECORD).write_text(json.dumps(_record()) + "\n", encoding="utf-8")
        return python


def _record() -> dict[str, object]:
    """What a complete environment records; one built for other requirements is rebuilt."""
    return {"requirement": GYM_REQUIREMENT, "imports": list(GYM_IMPORT_REQUIREMENTS)}


def _read_record(directory: Path) -> object:
    try:
        return json.loads((directory / _RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
