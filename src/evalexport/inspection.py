"""``evalexport inspect``: what a run directory holds, before anything is exported.

It reads everything an exporter would read and reports problems instead of stopping at the
first, so one look tells a user what an export would make of the run.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal, final

from evalexport.gym.health import (
    FAILURES_ATTEMPTS_METRIC,
    FAILURES_TERMINAL_METRIC,
    HEALTH_PREFIX,
    RunHealth,
    read_health,
)
from evalexport.masking import find_unmasked_secrets, scrub_value
from evalexport.metrics import flatten_metrics
from evalexport.run import RunArtifacts, RunFile, RunFileError

__all__ = ["AgentSummary", "AtifVerdict", "RunInspection", "atif_verdict", "inspect_run"]

ConfigStatus = Literal["masked", "unmasked", "missing", "unreadable", "refused"]
"""What ``inspect`` says of the saved config; ``refused``: the ingress gate refuses it (a
symlink out of the run, no regular file), as every export does, so it is not read."""
_LISTED_REASONS = 3


@final
@dataclass(frozen=True)
class AgentSummary:
    """One agent of a run: its rollouts and their mean reward."""

    name: str
    rollouts: int
    mean_reward: float | None


@final
@dataclass(frozen=True)
class AtifVerdict:
    """Whether strict ATIF export would accept the run, as the ``atif`` exporter decides it."""

    accepted: bool
    rejected_rows: int
    reasons: list[str]
    """The first rejected rows, or the file's problem, in the exporter's words."""
    accepted_with_gaps_allowed: bool | None = None
    """With every recorded gap code allowed (``+allow_gaps``) and no relaxation; ``None`` when
    strict export accepts or the run records no gaps."""
    relaxations_needed: dict[str, int] | None = None
    """When strict export refuses but allowing the recorded gaps and relaxing the strict
    profile (``+relax``) would accept every rollout: each relaxation some rollout needs, and how
    many rollouts need it (empty when the gaps alone suffice). ``None`` otherwise."""
    blockers: list[str] = field(default_factory=list)
    """When no option accepts every rollout: why the first rows are still refused with every
    gap allowed and every relaxation given (what no option gets past)."""


@final
@dataclass
class RunInspection:
    """What ``evalexport inspect`` reports of a run, every problem included (``problems``)."""

    rollouts: str
    run_dir: str
    benchmark: str = ""
    benchmark_source: str = ""
    """Where the benchmark's name came from (:attr:`evalexport.run.RunArtifacts.benchmark`)."""
    run_name: str = ""
    """The name MLflow and W&B exports give the run unless told another."""
    files: list[RunFile] = field(default_factory=list)
    rollout_count: int = 0
    rollouts_with_trajectory: int = 0
    rollouts_with_gaps: int = 0
    gap_counts: dict[str, int] = field(default_factory=dict)
    """Coverage gap code -> number of rollouts recording it."""
    atif: AtifVerdict | None = None
    agents: list[AgentSummary] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    health: dict[str, object] | None = None
    """NeMo Gym's health verdicts of the run, if it has them: ``verdict`` (the worst),
    ``verdicts`` (counts), ``failed_attempts``, ``terminal_failures``, ``rollout_verdicts``
    (whether each rollout has its verdict)."""
    config_status: ConfigStatus = "missing"
    unmasked_secret_paths: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    readable: bool = True
    """False when the rollouts themselves cannot be read: nothing could be exported."""

    @property
    def run_missing(self) -> bool:
        """Whether there is no run to report on: its directory or its rollouts file is not
        there (or is no file); :attr:`problems` holds that one reason, and nothing else was
        read."""
        return not self.readable and not self.files

    def as_json_data(self) -> dict[str, object]:
        """The report as JSON-ready data (what ``inspect --json`` prints)."""
        data = asdict(self)
        data["files"] = [
            {"path": str(item.path), "role": item.role, "size_bytes": item.size_bytes}
            for item in self.files
        ]
        return data


def inspect_run(run: RunArtifacts) -> RunInspection:
    """Read every file of ``run`` an exporter would read and report all it finds, not only the
    first problem."""
    report = RunInspection(rollouts=str(run.rollouts), run_dir=str(run.run_dir))
    if not run.run_dir.is_dir():
        report.readable = False
        report.problems.append(f"Run directory not found: {run.run_dir}")
        return report
    if reason := run.missing_file_reason(needs_metrics_and_config=False):
        # No run to report on: the one problem, not a report of files that are not its own.
        report.readable = False
        report.problems.append(reason)
        return _masked(report)
    report.benchmark = run.benchmark
    report.benchmark_source = run.benchmark_source
    report.run_name = run.default_run_name
    report.files = run.files()
    _read_rollouts(run, report)
    if report.readable:
        report.atif = atif_verdict(run, sorted(report.gap_counts))
    _read_metrics(run, report)
    _read_config(run, report)
    if reason := run.shared_directory_reason(
        speaking_for="evalrdl and any exporter of kind directory"
    ):
        report.problems.append(reason)
    return _masked(report)


def _masked(report: RunInspection) -> RunInspection:
    """``report`` with what the run's data wrote into it masked as an export masks it on its
    way out (:func:`~evalexport.masking.scrub_value`): the benchmark and run names a NeMo Gym
    job's record gives, the metrics' texts, the health verdict, and the problems and refusals
    that quote the run's files. ``inspect`` shows nothing an export would not send."""
    report.benchmark = scrub_value(report.benchmark)
    report.benchmark_source = scrub_value(report.benchmark_source)
    report.run_name = scrub_value(report.run_name)
    report.texts = scrub_value(report.texts)
    report.problems = scrub_value(report.problems)
    report.health = scrub_value(report.health)
    if report.atif is not None:
        report.atif = dataclasses.replace(
            report.atif,
            reasons=scrub_value(report.atif.reasons),
            blockers=scrub_value(report.atif.blockers),
        )
    return report


def _read_rollouts(run: RunArtifacts, report: RunInspection) -> None:
    counts: Counter[str] = Counter()
    gaps: Counter[str] = Counter()
    reward_sums: defaultdict[str, float] = defaultdict(float)
    rewarded: Counter[str] = Counter()
    try:
        health = read_health(run)
    except RunFileError as error:
        report.problems.append(str(error))
        health = None
    try:
        for rollout in run.iter_rollouts():
            report.rollout_count += 1
            if health is not None:
                health.see(rollout.record)
            trajectory = rollout.record.get("ng_trajectory")
            if isinstance(trajectory, dict):
                report.rollouts_with_trajectory += 1
                codes = _gap_codes(trajectory)
                report.rollouts_with_gaps += bool(codes)
                gaps.update(codes)
            agent = rollout.agent_name or "<no agent_ref.name>"
            counts[agent] += 1
            reward = rollout.reward
            if isinstance(reward, int | float) and not isinstance(reward, bool):
                reward_sums[agent] += reward
                rewarded[agent] += 1
    except RunFileError as error:
        report.readable = False
        report.problems.append(str(error))
    report.gap_counts = dict(sorted(gaps.items()))
    if health is not None and report.readable:
        _report_health(health, report)
    report.agents = [
        AgentSummary(name, count, reward_sums[name] / rewarded[name] if rewarded[name] else None)
        for name, count in sorted(counts.items())
    ]


def _report_health(health: RunHealth, report: RunInspection) -> None:
    had_verdicts = health.verdicts is not None
    health.finish(report.rollout_count)
    report.problems.extend(note[0].upper() + note[1:] for note in health.notes)
    if not (health.metrics or had_verdicts):
        return
    report.health = {
        "verdict": health.verdict,
        "verdicts": {
            name: int(health.metrics[f"{HEALTH_PREFIX}verdicts/{name}"])
            for name in ("healthy", "unhealthy", "unobserved")
            if f"{HEALTH_PREFIX}verdicts/{name}" in health.metrics
        },
        "failed_attempts": _whole(health.metrics.get(FAILURES_ATTEMPTS_METRIC)),
        "terminal_failures": _whole(health.metrics.get(FAILURES_TERMINAL_METRIC)),
        "rollout_verdicts": health.verdicts is not None,
    }


def _whole(value: float | None) -> int | None:
    return None if value is None else int(value)


def _gap_codes(trajectory: dict[str, object]) -> set[str]:
    gaps = trajectory.get("gaps")
    return {
        str(gap.get("code"))
        for gap in (gaps if isinstance(gaps, list) else [])
        if isinstance(gap, dict)
    }


def atif_verdict(run: RunArtifacts, gap_codes: list[str]) -> AtifVerdict:
    """Convert the run in memory as strict ATIF export does; if it refuses rows, convert it
    again with its gaps allowed and every relaxation offered, and report those it used."""
    from evalexport.backends.atif.files import convert_file
    from evalexport.trajectory.convert import TrajectoryIdentity
    from evalexport.trajectory.relaxations import RELAXATIONS

    identity = TrajectoryIdentity(session_id=run.stem, agent_version="inspect")
    strict = convert_file(run.rollouts, identity, output=None)
    problem = strict.problem(run.rollouts)
    reasons = strict.rejected[:_LISTED_REASONS] if strict.rejected else [problem] if problem else []
    gaps_allowed: bool | None = None
    needed: dict[str, int] | None = None
    blockers: list[str] = []
    if strict.rejected:
        # A relaxation counts only where a row needed it, so one pass says which are needed.
        # A name for the rows that name no agent, as +agent_name gives one (unnamed_agents).
        named = dataclasses.replace(identity, agent_name="NAME")
        relaxed = convert_file(
            run.rollouts, named, output=None, allowed_gaps=gap_codes, relaxations=RELAXATIONS
        )
        blockers = relaxed.rejected[:_LISTED_REASONS]
        if not blockers and (still := relaxed.problem(run.rollouts)) is not None:
            blockers = [still]
        if not blockers:
            needed = dict(sorted(relaxed.relaxation_counts.items()))
        if gap_codes:
            gaps_allowed = needed == {}
    return AtifVerdict(not reasons, len(strict.rejected), reasons, gaps_allowed, needed, blockers)


def _refused(run: RunArtifacts, path: Path, what: str, report: RunInspection) -> bool:
    """Whether the ingress gate refuses the run's file ``path``, as every export does (a
    symlink out of the run, no regular file): then it is not read, and the problem names the
    file and the rule."""
    reason = run.refused_file_reason(path, what)
    if reason is None:
        return False
    report.problems.append(
        f"{reason[0].upper()}{reason[1:]}. Every export refuses the run for it, so inspect "
        "does not read it either"
    )
    return True


def _read_metrics(run: RunArtifacts, report: RunInspection) -> None:
    if not os.path.lexists(run.aggregate_metrics):
        report.problems.append(run.missing_aggregate_metrics_message())
        return
    if _refused(run, run.aggregate_metrics, "aggregate metrics", report):
        return
    try:
        flat = flatten_metrics(run.read_aggregate_metrics())
    except RunFileError as error:
        report.problems.append(str(error))
        return
    report.metrics, report.texts = flat.metrics, flat.texts
    for warning in (flat.empty_warning(run.aggregate_metrics), flat.non_finite_warning()):
        if warning:
            report.problems.append(warning[0].upper() + warning[1:])


def _read_config(run: RunArtifacts, report: RunInspection) -> None:
    if os.path.lexists(run.saved_config) and _refused(
        run, run.saved_config, "saved config", report
    ):
        report.config_status = "refused"
        return
    if not run.saved_config.is_file():
        report.config_status = "missing"
        report.problems.append(run.missing_saved_config_message())
        return
    try:
        config = run.read_saved_config()
    except RunFileError as error:
        report.config_status = "unreadable"
        report.problems.append(str(error))
        return
    report.unmasked_secret_paths = find_unmasked_secrets(config)
    report.config_status = "unmasked" if report.unmasked_secret_paths else "masked"
