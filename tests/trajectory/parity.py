"""Run evalexport's and NeMo Gym's ATIF exporters on one file and say how they compare."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from evalexport.backends.atif.exporter import AtifConfig, AtifExporter
from evalexport.backends.atif.identity import RECORD_NAME
from evalexport.pipeline import export_run
from evalexport.results import ExportResult, ExportStatus
from evalexport.run import RunArtifacts
from tests.support.gym import GymExport, GymOracle


def tree(root: Path) -> dict[str, str]:
    """``relative path: sha256`` of every file under ``root``, but evalexport's own record of
    an ATIF export (``.evalexport-atif``, which Gym does not write): what Gym's exporter
    writes is compared with what evalexport writes of Gym's layout."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name != RECORD_NAME
    }


def rejected_lines(text: str) -> set[int]:
    return {int(number) for number in re.findall(r"^- line (\d+)", text, re.MULTILINE)}


def export_with_evalexport(
    rollouts: Path, output: Path, session: str, version: str
) -> ExportResult:
    config = AtifConfig(
        rollouts_jsonl_fpath=rollouts,
        output_dirpath=output,
        session_id=session,
        agent_version=version,
    )
    return export_run(AtifExporter(), RunArtifacts.from_rollouts_path(rollouts), config)


@dataclass
class Comparison:
    gym: GymExport
    ours: ExportResult
    gym_tree: dict[str, str]
    our_tree: dict[str, str]

    def disagreement(self) -> str | None:
        """``None`` when both accept with identical files or both refuse the same rows."""
        ours_ok = self.ours.status is ExportStatus.SUCCEEDED
        if self.gym.succeeded != ours_ok:
            return (
                f"Gym {'accepted' if self.gym.succeeded else 'refused'} ({self.gym.error}), "
                f"evalexport {'accepted' if ours_ok else 'refused'} ({self.ours.message})"
            )
        if ours_ok:
            if self.gym_tree != self.our_tree:
                return f"files differ: gym {self.gym_tree} vs evalexport {self.our_tree}"
            return None
        gym_rows = rejected_lines(self.gym.error or "")
        our_rows = {
            int(match.group(1))
            for row in self.ours.details.get("rejected_rows", [])
            if (match := re.match(r"line (\d+)", row))
        }
        if gym_rows != our_rows:
            return f"rejected rows differ: gym {sorted(gym_rows)} ({self.gym.error}) vs evalexport {sorted(our_rows)} ({self.ours.message})"
        return None


def compare(
    oracle: GymOracle, rollouts: Path, work: Path, session: str = "s", version: str = "1.0"
) -> Comparison:
    gym_out, our_out = work / "gym", work / "evalexport"
    gym = oracle.export_atif(rollouts, gym_out, session_id=session, agent_version=version)
    ours = export_with_evalexport(rollouts, our_out, session, version)
    return Comparison(
        gym,
        ours,
        tree(gym_out) if gym_out.exists() else {},
        tree(our_out) if our_out.exists() else {},
    )
