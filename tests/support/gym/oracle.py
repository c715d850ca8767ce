"""A long-lived worker in the Gym environment that answers with Gym's own code."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from tests.support.lines import exchange_line

__all__ = ["GymExport", "GymOracle"]

_WORKER = Path(__file__).with_name("oracle_worker.py")


@final
@dataclass(frozen=True)
class GymExport:
    """What Gym's ``export_rollouts_to_atif`` did: the count, or its error message."""

    trajectory_count: int | None
    error: str | None
    error_type: str | None = None

    @property
    def succeeded(self) -> bool:
        """Whether Gym's exporter wrote the files rather than refusing."""
        return self.error is None


class GymOracle:
    """Runs ``oracle_worker.py`` with the Gym environment's python; one request at a time."""

    def __init__(self, python: Path) -> None:
        # Gym's live exporters write relative to the working directory (MLflow's default
        # artifact root is ./mlruns): the worker gets a scratch directory of its own.
        self._scratch = Path(tempfile.mkdtemp(prefix="evalexport-gym-oracle-"))
        self._process = subprocess.Popen(
            [str(python), "-I", str(_WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            cwd=self._scratch,
        )
        self._bin = python.parent
        about = self._ask({"action": "version"})
        self.version: str = about["version"]
        self.site_packages: str = about["site_packages"]
        """Where Gym is installed: its wheel ships example rollouts."""

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        answer = exchange_line(self._process, request)
        if answer is None:
            raise RuntimeError(f"the Gym oracle exited (code {self._process.poll()})")
        return answer

    def record_error(self, record: object) -> str | None:
        """``None`` when Gym's ``TrajectoryRecord`` accepts ``record``, else its error."""
        error: str | None = self._ask({"action": "validate", "record": record})["error"]
        return error

    def strict_record_errors(self, record: object) -> list[tuple[list[int | str], str]]:
        """What Gym's ``TrajectoryRecord`` says of ``record`` validated strictly, as Gym's ATIF
        exporter validates it: each error's location and message, in pydantic's order (empty
        when it accepts the record)."""
        found: list[list[Any]] = self._ask({"action": "strict_errors", "record": record})["errors"]
        return [(location, message) for location, message in found]

    def conversation_errors(self, row: dict[str, Any]) -> dict[str, str]:
        """What Gym's own models (``NeMoGymResponseCreateParamsNonStreaming``,
        ``NeMoGymResponse``, the aviary response for transitions) say of a row's request and
        response: ``{key: error}``, empty when Gym accepts both."""
        errors: dict[str, str] = self._ask({"action": "conversation", "row": row})["errors"]
        return errors

    def export_atif(
        self, rollouts: Path, output: Path, *, session_id: str, agent_version: str
    ) -> GymExport:
        """What NeMo Gym's own ATIF exporter writes for ``rollouts``: its files, or its refusal."""
        answer = self._ask(
            {
                "action": "atif",
                "rollouts": str(rollouts),
                "output": str(output),
                "session_id": session_id,
                "agent_version": agent_version,
            }
        )
        return GymExport(answer.get("trajectory_count"), answer.get("error"), answer.get("type"))

    def reverify(self, manifest: Path, rollouts: Path) -> dict[str, Any]:
        """What Gym's ATIF reverify ingress makes of an ATIF export: ``manifest_error`` (its
        manifest refused as a whole, else ``None``), ``entries`` (the lines it accepted),
        ``projected`` (the trajectory paths it joined to ``rollouts``' rows and turned into
        verifier payloads) and ``refused`` (path -> Gym's reason)."""
        return self._ask(
            {"action": "reverify", "manifest": str(manifest), "rollouts": str(rollouts)}
        )

    def make_job(
        self,
        config: dict[str, Any],
        sbatch: dict[str, tuple[int, str]],
        environment: dict[str, str],
    ) -> Path:
        """A job directory as ``gym eval submit`` leaves it, written by Gym's Slurm executor
        (``_build_record``, ``_stage``, ``persist``): ``config`` is the submit config (its
        ``job.output_path`` says where), ``sbatch`` each benchmark's ``sbatch`` answer (exit
        code and output: ``(0, "4242")`` queued it, ``(1, "sbatch: error: ...")`` did not).
        Returns the job directory."""
        answer = self._ask(
            {
                "action": "make_job",
                "config": config,
                "sbatch": {name: list(said) for name, said in sbatch.items()},
                "environment": environment,
            }
        )
        return Path(answer["job_dir"])

    def aggregate_math(self, rollouts: Path, agent: str, server: str) -> dict[str, Any]:
        """The aggregate-metrics entry NeMo Gym's rollout collection writes for the math run
        ``rollouts`` of ``agent``, scored by its ``math_with_judge`` server named ``server``:
        Gym's own aggregation of those rows."""
        answer = self._ask(
            {
                "action": "aggregate_math",
                "rollouts": str(rollouts),
                "agent": agent,
                "server": server,
            }
        )
        entry: dict[str, Any] = answer["entry"]
        return entry

    def load_job_record(self, path: Path) -> dict[str, Any]:
        """What Gym's ``SubmissionRecord.load`` makes of a ``gym-job.json``: ``record`` (as
        Gym dumps it) or ``error``."""
        return self._ask({"action": "load_job_record", "path": str(path)})

    def health(self, rollouts: Path, output: Path) -> dict[str, int]:
        """Run NeMo Gym's rollout health checks (``run_health_checks``, as ``gym eval run``
        does after collection) over ``rollouts``, writing ``quality_summary.json`` and
        ``rollout_verdicts.jsonl`` into ``output``; returns the verdict counts."""
        answer = self._ask({"action": "health", "rollouts": str(rollouts), "output": str(output)})
        verdicts: dict[str, int] = answer["verdicts"]
        return verdicts

    def failure_row(self, status: int, message: str, url: str) -> dict[str, Any]:
        """The failure NeMo Gym's rollout collection records for a ``/run`` request answered
        with HTTP ``status`` (``_agent_request_failure_row``): the part of a
        ``<stem>_failures.jsonl`` line before the row's indices and ``agent_ref``."""
        answer = self._ask(
            {"action": "failure_row", "status": status, "message": message, "url": url}
        )
        row: dict[str, Any] = answer["row"]
        return row

    def mlflow_names(self, names: list[str]) -> list[str | None]:
        """What Gym's MLflow exporter logs each name as (``None``: it drops the name)."""
        sanitized: list[str | None] = self._ask({"action": "mlflow_name", "names": names})["names"]
        return sanitized

    def live_export(
        self,
        backend: str,
        *,
        config: dict[str, object],
        rollouts: Path,
        aggregate: Path,
        environment: dict[str, str] | None = None,
    ) -> dict[str, object]:
        """Run Gym's live ``backend`` exporter (``mlflow`` or ``wandb``) over a finished run:
        ``setup``, the config, the metrics Gym's rollout collection logs, the rollouts as Gym
        uploads them, ``teardown``. ``config`` is the run's global config, backend keys included.
        Returns ``run_id`` (W&B: and ``run_dir``), the warnings Gym logged and ``error``."""
        answer = self._ask(
            {
                "action": "live_export",
                "backend": backend,
                "config": config,
                "rollouts": str(rollouts),
                "aggregate": str(aggregate),
                "environment": environment or {},
            }
        )
        return answer

    def command(self, *arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        """Run Gym's own command line, ``gym ARGUMENTS``, in ``cwd`` as a user runs it (advice
        of ours that names a Gym command is followed with this): its exit code and output."""
        return subprocess.run(
            [str(self._bin / "gym"), *arguments],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    def close(self) -> None:
        """Stop the oracle's worker process."""
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        shutil.rmtree(self._scratch, ignore_errors=True)
