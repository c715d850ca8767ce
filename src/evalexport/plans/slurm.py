"""``evalexport plan run --slurm``: the same exports as a Slurm job array, one task per export.

The tasks are written to ``<work dir>/tasks.json`` (the work directory must be visible from the
compute nodes); each array task runs ``python -m evalexport plan task`` for its index and writes
its ``ExportResult`` to ``<work dir>/results/<index>.json``. The job inherits the submitting
environment (``sbatch --export=ALL``), so tokens and EVALEXPORT_CACHE_DIR reach the tasks
without being written anywhere.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from evalexport.host.files import RunFileError, read_bounded, write_text_atomically
from evalexport.ingress import DocumentRefused, load_json
from evalexport.plans.batch import timed
from evalexport.plans.model import ExportTask, TaskOutcome
from evalexport.results import ExportResult

__all__ = [
    "SBATCH_OPTIONS",
    "SlurmError",
    "array_script",
    "default_work_dir",
    "gather",
    "load_tasks",
    "run_array_task",
    "submit",
    "wait_for",
]


class SlurmError(RuntimeError):
    """Slurm is not reachable, or refused the job; the message says what to check."""


def default_work_dir() -> Path:
    """A new directory under the cache dir (``<cache>/slurm/<time>-<random>``): never the
    current directory, which may be a checkout or a run's own directory. The cache dir is under
    HOME, which a cluster's nodes share; pass ``--work-dir`` where it is not."""
    import secrets

    from evalexport.host.cache import cache_dir

    return cache_dir() / "slurm" / f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


def load_tasks(work_dir: Path) -> list[ExportTask]:
    """The tasks a job array was submitted with, from its work directory."""
    try:
        return _tasks_in(work_dir / "tasks.json")
    except (RunFileError, DocumentRefused, ValueError) as error:
        raise SlurmError(f"{work_dir} is not a plan work directory ({error})") from None


def _tasks_in(path: Path) -> list[ExportTask]:
    data = _read_json(path, "Plan tasks")
    if not isinstance(data, list):
        raise ValueError(f"the tasks are a list, got {type(data).__name__}")
    return [ExportTask.from_json_data(item) for item in data]


_MAX_FILE_BYTES: Final = 64 * 2**20
"""A work directory's tasks or one task's result: far less (a result is a few KB)."""


def _read_json(path: Path, what: str) -> object:
    """A JSON file of the work directory, through the ingress gate (bounded)."""
    data = read_bounded(path, _MAX_FILE_BYTES, what, "is it a plan work directory's?")
    return load_json(data, path, what=what.lower())


def _write_tasks(work_dir: Path, tasks: list[ExportTask]) -> Path:
    work_dir.mkdir(parents=True, exist_ok=True)
    (work_dir / "results").mkdir(exist_ok=True)
    (work_dir / "logs").mkdir(exist_ok=True)
    path = work_dir / "tasks.json"
    path.write_text(json.dumps([task.to_json_data() for task in tasks], indent=2))
    return path


SBATCH_OPTIONS: Final = ("partition", "account", "time")
"""The ``sbatch`` options ``plan run --slurm`` takes as ``--partition``, ``--account``,
``--time``: written into the array script as ``#SBATCH`` lines."""


def script_value_problem(values: Mapping[str, str]) -> str | None:
    """Why a value (by the flag that gave it) cannot go into the array script, or ``None``:
    the script is read a line at a time, by ``sbatch`` for its ``#SBATCH`` lines and by the
    shell for the rest, so a line break (or any control character) in a value would start a
    line of its own, a command the shell runs."""
    for flag, value in values.items():
        if any(ord(character) < 32 or ord(character) == 127 for character in value):
            return (
                f"{flag} {value!r} holds a line break or another control character, which "
                "would write a line of its own into the job script; give it on one line"
            )
    return None


def array_script(
    tasks: list[ExportTask],
    work_dir: Path,
    max_parallel: int,
    sbatch_options: Mapping[str, str] | None = None,
) -> str:
    """The job array script ``submit`` writes to ``<work dir>/evalexport-array.sh``: one task per
    export, at most ``max_parallel`` at once, with ``sbatch_options`` (``SBATCH_OPTIONS``)."""
    work_dir = work_dir.absolute()
    if problem := script_value_problem(
        {
            "--work-dir": str(work_dir),
            **{f"--{name}": value for name, value in (sbatch_options or {}).items()},
        }
    ):
        raise ValueError(problem)
    extra = "".join(
        f"#SBATCH --{name}={shlex.quote(value)}\n" for name, value in (sbatch_options or {}).items()
    )
    return (
        "#!/bin/bash\n"
        "#SBATCH --job-name=evalexport\n"
        f"#SBATCH --array=0-{len(tasks) - 1}%{max(1, max_parallel)}\n"
        f"#SBATCH --output={work_dir}/logs/%A_%a.out\n"
        "#SBATCH --export=ALL\n"
        f"{extra}"
        f"exec {shlex.quote(sys.executable)} -m evalexport plan task "
        f"{shlex.quote(str(work_dir / 'tasks.json'))} "
        f'--index "$SLURM_ARRAY_TASK_ID" --result-dir {shlex.quote(str(work_dir / "results"))}\n'
    )


def submit(
    tasks: list[ExportTask],
    work_dir: Path,
    max_parallel: int,
    sbatch_arguments: list[str] | None = None,
    *,
    sbatch_options: Mapping[str, str] | None = None,
) -> str:
    """Submit the job array (:func:`array_script`, with ``sbatch_options`` in it); returns the
    Slurm job id. ``sbatch_arguments`` go to ``sbatch``'s command line (``--hold``)."""
    sbatch = shutil.which("sbatch")
    if sbatch is None:
        raise SlurmError(
            "sbatch is not on PATH: run this where Slurm's client commands are installed "
            "(--dry-run prints the job array script without it)"
        )
    _write_tasks(work_dir.absolute(), tasks)
    script = work_dir.absolute() / "evalexport-array.sh"
    script.write_text(array_script(tasks, work_dir, max_parallel, sbatch_options))
    completed = subprocess.run(
        [sbatch, "--parsable", *(sbatch_arguments or []), str(script)],
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise SlurmError(
            f"sbatch refused the job array: {completed.stderr.strip() or completed.stdout.strip()}"
        )
    job_id = completed.stdout.strip().split(";")[0]
    (work_dir.absolute() / JOB_ID_FILE).write_text(job_id + "\n")
    return job_id


def wait_for(job_id: str, timeout: float, poll: float = 2.0) -> None:
    """Block until no task of ``job_id`` is pending or running."""
    squeue = shutil.which("squeue")
    if squeue is None:
        raise SlurmError("squeue is not on PATH")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = subprocess.run(
            [squeue, "-h", "-j", job_id, "-o", "%i"], capture_output=True, text=True, check=False
        )
        if listed.returncode == 0 and not listed.stdout.strip():
            return
        time.sleep(poll)
    raise SlurmError(
        f"job {job_id} still has tasks after {timeout:.0f} s; its results are gathered as they land"
    )


def run_array_task(tasks_file: Path, index: int, result_dir: Path) -> TaskOutcome:
    """Inside the array: run task ``index`` and write its outcome to ``<result_dir>/<index>.json``."""
    try:
        tasks = _tasks_in(tasks_file)
    except (RunFileError, DocumentRefused, ValueError) as error:
        raise SlurmError(f"{tasks_file} holds no plan's tasks ({error})") from None
    if not 0 <= index < len(tasks):
        held = f"{len(tasks)} task{'' if len(tasks) == 1 else 's'}"
        raise SlurmError(f"{tasks_file} holds {held}: there is no task {index}")
    task = tasks[index]
    outcome = timed(task)
    write_text_atomically(result_dir / f"{index}.json", json.dumps(outcome.as_json_data()))
    return outcome


def gather(tasks: list[ExportTask], work_dir: Path) -> list[TaskOutcome]:
    """Every task's outcome. A task with no result yet is pending while Slurm still has it
    queued or running (``squeue``), and failed, pointing at its log, once Slurm is done."""
    job_id = _job_id(work_dir)
    waiting = _waiting_tasks(job_id) if job_id else {}
    outcomes = []
    for index, task in enumerate(tasks):
        path = work_dir / "results" / f"{index}.json"
        if path.is_file():
            try:
                outcomes.append(TaskOutcome.from_json_data(_read_json(path, "Task result")))
                continue
            except (RunFileError, DocumentRefused, ValueError, TypeError) as error:
                result = task.failed(  # a file that is no result the task wrote
                    f"array task {index}'s result {path} cannot be read ({error}); run the plan "
                    "again (plan run PLAN.yaml --slurm): an export already done is skipped"
                )
        elif index in waiting:
            result = ExportResult.pending(
                task.exporter,
                str(task.rollouts.parent),
                f"array task {index} of Slurm job {job_id} is {waiting[index]} (not run yet); "
                f"gather again once `squeue -j {job_id}` no longer lists it",
                slurm_job_id=job_id,
                slurm_state=waiting[index],
            )
        else:
            result = task.failed(f"array task {index} left no result; see {work_dir / 'logs'}")
        outcomes.append(TaskOutcome.of(task, 0.0, result))
    return outcomes


JOB_ID_FILE = "job_id"
"""The Slurm job id of a work directory's array, written when it is submitted."""


def _job_id(work_dir: Path) -> str | None:
    try:
        return (work_dir / JOB_ID_FILE).read_text().strip() or None
    except OSError:
        return None


def _waiting_tasks(job_id: str) -> dict[int, str]:
    """Array task index -> Slurm state (``PENDING``, ``RUNNING``, ...) of each task of
    ``job_id`` Slurm still lists; empty where ``squeue`` cannot tell."""
    squeue = shutil.which("squeue")
    if squeue is None:
        return {}
    try:
        listed = subprocess.run(
            [squeue, "-h", "-r", "-j", job_id, "-o", "%K %T"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    waiting: dict[int, str] = {}
    for line in listed.stdout.splitlines() if listed.returncode == 0 else []:
        index, _, state = line.strip().partition(" ")
        if index.isdigit() and state:
            waiting[int(index)] = state
    return waiting
