"""The ``atif`` exporter: one ATIF trajectory file per rollout (SPEC §4).

Strict: a rollout without ``ng_trajectory``, or one recording coverage gaps, fails the whole
export and nothing is written. Output goes to a temporary sibling of ``output_dirpath`` that is
renamed into place only when every trajectory was written, so a failure leaves nothing behind.
Rollouts stream through one at a time: memory stays flat whatever the file's size.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
from pathlib import Path
from typing import Any

from pydantic import Field

from evalexport.exporters.base import DryRunPlan, Exporter, ExporterConfig, PlannedFile
from evalexport.results import ExportResult
from evalexport.run import Rollout, RunArtifacts
from evalexport.trajectory import ATIF_SCHEMA_VERSION, TrajectoryIdentity, convert_rollout

__all__ = ["AtifConfig", "AtifExporter"]

_LISTED_PROBLEMS = 20


class AtifConfig(ExporterConfig):
    output_dirpath: Path = Field(
        description="Directory to create for the trajectories; it must not exist yet."
    )
    agent_version: str = Field(description="Version of the agent that produced the run.")
    session_id: str | None = Field(
        default=None, description="ATIF session id; default: the rollouts file's stem."
    )
    agent_name: str | None = Field(
        default=None, description="ATIF agent name; default: each rollout's agent_ref.name."
    )


def _coverage_problem(rollout: Rollout) -> str | None:
    """Why strict export refuses this rollout, or ``None``."""
    trajectory = rollout.record.get("ng_trajectory")
    label = (
        f"line {rollout.line_number} (task {rollout.task_index}, rollout {rollout.rollout_index})"
    )
    if not isinstance(trajectory, dict):
        return f"{label}: no ng_trajectory"
    gaps = trajectory.get("gaps") or []
    if gaps:
        codes = sorted(
            {str(gap.get("code")) if isinstance(gap, dict) else repr(gap) for gap in gaps}
        )
        return f"{label}: {', '.join(codes)}"
    return None


class AtifExporter(Exporter[AtifConfig]):
    name = "atif"
    summary = f"Write each rollout's ng_trajectory as an {ATIF_SCHEMA_VERSION} trajectory file."
    Config = AtifConfig
    needs_metrics_and_config = False

    def target(self, config: AtifConfig) -> str:
        return str(config.output_dirpath.absolute())

    def unexportable_reason(self, run: RunArtifacts, config: AtifConfig) -> str | None:
        reason = super().unexportable_reason(run, config)
        output = config.output_dirpath.absolute()
        if reason is None and (output.exists() or output.is_symlink()):
            reason = (
                f"Output path already exists: {output}. "
                "Choose a new +output_dirpath or remove the old one."
            )
        return reason

    def dry_run_plan(self, run: RunArtifacts, config: AtifConfig) -> DryRunPlan:
        return DryRunPlan(
            exporter=self.name,
            target=self.target(config),
            files=[PlannedFile(path=str(run.rollouts), size_bytes=run.rollouts.stat().st_size)],
        )

    def _export(self, run: RunArtifacts, config: AtifConfig) -> ExportResult:
        output = config.output_dirpath.absolute()
        created_parents = _make_parents(output.parent)
        staging = output.with_name(f".{output.name}.partial-{secrets.token_hex(4)}")
        staging.mkdir()
        try:
            outcome = self._write_trajectories(run, config, staging)
            if isinstance(outcome, str):
                return self.failed(run, outcome)
            try:
                staging.rename(output)
            except OSError as error:
                return self.failed(run, f"Output path already exists: {output} ({error.strerror})")
        finally:
            if staging.exists():
                shutil.rmtree(staging)
                for parent in created_parents:
                    _remove_if_empty(parent)
        return ExportResult.succeeded(
            self.name,
            str(run.run_dir),
            f"wrote {outcome} ATIF trajectories to {output}",
            trajectory_count=outcome,
            output_dirpath=str(output),
            manifest=str(output / "manifest.jsonl"),
        )

    def _write_trajectories(
        self, run: RunArtifacts, config: AtifConfig, staging: Path
    ) -> int | str:
        """Write every trajectory and the manifest into ``staging``.

        Returns the number written, or the reason the whole export fails.
        """
        from evalexport.run import RunFileError
        from evalexport.trajectory import TrajectoryError

        identity = TrajectoryIdentity(
            session_id=config.session_id or run.stem,
            agent_version=config.agent_version,
            agent_name=config.agent_name,
        )
        problems: list[str] = []
        count = 0
        with (staging / "manifest.jsonl").open("w", encoding="utf-8") as manifest:
            try:
                for rollout in run.iter_rollouts():
                    if problem := _coverage_problem(rollout):
                        problems.append(problem)
                    if problems:  # keep scanning so every offending row is named at once
                        continue
                    trajectory = convert_rollout(
                        rollout.record, identity, f"line {rollout.line_number}"
                    )
                    count += 1
                    file_name = (
                        f"{count:06d}_task{rollout.task_index}_rollout{rollout.rollout_index}.json"
                    )
                    data = trajectory.to_json_dict()
                    (staging / file_name).write_text(
                        json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
                    )
                    manifest.write(json.dumps(_manifest_line(file_name, rollout, data)) + "\n")
            except (RunFileError, TrajectoryError) as error:
                return str(error)
        if problems:
            listed = "; ".join(problems[:_LISTED_PROBLEMS])
            more = len(problems) - _LISTED_PROBLEMS
            suffix = f"; and {more} more rows" if more > 0 else ""
            return (
                f"source coverage gaps are not supported by strict export: {len(problems)} "
                f"rollouts of {run.rollouts} cannot be converted: {listed}{suffix}. "
                "Nothing was written."
            )
        if count == 0:
            return f"The rollouts file {run.rollouts} holds no rollouts: nothing to export."
        return count


def _manifest_line(file_name: str, rollout: Rollout, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "file": file_name,
        "task_index": rollout.task_index,
        "rollout_index": rollout.rollout_index,
        "agent": data["agent"]["name"],
        "reward": rollout.reward,
        "step_count": len(data["steps"]),
    }


def _make_parents(directory: Path) -> list[Path]:
    """Create ``directory`` and its missing parents; return those created, deepest first."""
    missing: list[Path] = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        path.mkdir()
    return missing


def _remove_if_empty(directory: Path) -> None:
    with contextlib.suppress(OSError):
        directory.rmdir()
