"""The ``atif`` exporter: one ATIF trajectory file per rollout (SPEC §4).

The files are those NeMo Gym's own strict exporter writes (``gym eval export --format atif``
in nemo-gym 0.7.0): ``<task>-<rollout>.json`` per rollout and a ``manifest.jsonl`` naming each
file with its indices and SHA-256. Strict: a row Gym would refuse (coverage gaps, a failed or
incomplete model or tool call, a field ATIF would drop, a duplicate key, a second agent) fails
the whole export, every such row is named, and nothing is written. ``+allow_gaps`` opts in to
rows whose only gaps are the listed codes, ``+relax`` to the listed relaxations of the strict
profile (:data:`evalexport.trajectory.relaxations.RELAXATIONS`).

The export's one read of the run is the conversion (:meth:`AtifExporter.read`): into
a temporary sibling of ``output_dirpath`` for an export, which is checked against its manifest
and renamed into place only when every trajectory was written; in memory for a dry run, which
so fails exactly when the export would. The rollouts are hashed in that read, and the output
holds, beside Gym's files, evalexport's record of the export (:mod:`.identity`): the run's
fingerprint and the options that shape the files. A rerun into an output holding a record
reads the rollouts once to hash them instead: the same run with the same options is skipped
(already exported), any other is refused saying what differs.
"""

from __future__ import annotations

import dataclasses
import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalexport import ExportResult, RunArtifacts, RunFileError
from evalexport.backends.atif.files import ConvertedRow, FileConversion, convert_file
from evalexport.backends.atif.identity import (
    RECORD_NAME,
    ExportIdentity,
    ExportRecord,
    holds_record,
    read_record,
    rollouts_fingerprint,
    write_record,
)
from evalexport.backends.atif.manifest import (
    MANIFEST_NAME,
    ManifestWriter,
    landed_output_problem,
    staged_output_problem,
)
from evalexport.backends.atif.options import AtifConfig, AtifTarget
from evalexport.backends.atif.staging import (
    StagedTrajectories,
    remove_abandoned_staging,
    stage_beside,
)
from evalexport.spec import (
    DryRunPlan,
    Exporter,
    ExportFailure,
    OptionError,
    PlannedFile,
    SkipReason,
    deferred,
    landed,
    named_option,
)
from evalexport.trajectory.convert import ATIF_SCHEMA_VERSION, GYM_GAP_CODES, TrajectoryIdentity

__all__ = ["AtifConfig", "AtifExporter", "AtifTarget", "StagedTrajectories"]

_LISTED_ROWS = 20


class AtifExporter(Exporter[AtifConfig, StagedTrajectories, AtifTarget]):
    """Write each rollout's ``ng_trajectory`` as one ATIF v1.7 trajectory file, as NeMo Gym's
    strict exporter does, atomically, with ``manifest.jsonl``."""

    name = "atif"
    summary = (
        f"Write each rollout as an {ATIF_SCHEMA_VERSION} trajectory file: from its "
        "ng_trajectory, or (+relax=[recorded_conversations]) the conversation it records."
    )

    def resolve(self, config: AtifConfig) -> AtifTarget:
        """The output directory, which must not exist yet, unless it holds the record of an
        ATIF export: the read then tells whether it is this export (skipped) or another
        (refused). One holding a ``manifest.jsonl`` is an export done (it is written last, into
        the staging directory renamed into place): a batch's rerun skips it."""
        output = config.output_dirpath.absolute()
        refusal = None
        exported_before = holds_record(output)
        if os.path.lexists(output) and not exported_before:
            refusal = (
                f"Output path already exists: {output}, and holds no record of an evalexport "
                f"ATIF export ({RECORD_NAME}) to compare this one with. Choose a new "
                f"{named_option('output_dirpath')} or remove the old one."
            )
        done = None
        if (output / MANIFEST_NAME).is_file():
            done = f"{output} already holds this export's trajectories (manifest.jsonl)"
        return AtifTarget(
            where=str(output),
            refusal=refusal,
            already_exported=done,
            output=output,
            exported_before=exported_before,
        )

    def read(self, run: RunArtifacts, config: AtifConfig, target: AtifTarget) -> StagedTrajectories:
        """Convert every row: in memory for a dry run; for an export, into a staging sibling of
        the output, which :meth:`deliver` renames into place. A row Gym would refuse fails the
        read, so the dry run fails exactly when the export would."""
        if target.exported_before:
            return self._exported_before(run, config, target.output)
        if config.dry_run:
            return StagedTrajectories(self._convert(run, config, output=None))
        output = target.output
        staged = StagedTrajectories(FileConversion())
        try:
            # The staging directory and the record that it is ours come into being together:
            # a stop signal is held until ``staged`` names it, so the ``except`` removes it.
            with deferred() as held:
                staged = stage_beside(output)
            held.raise_held()
            staging = staged.staging
            assert staging is not None
            with ManifestWriter(staging) as manifest:

                def add_to_manifest(row: ConvertedRow) -> None:
                    manifest.add(row.manifest_line(), row.relaxed_line(), row.size)

                conversion = self._convert(run, config, staging, add_to_manifest)
            # The record lands with the output: it is in the directory renamed into place.
            write_record(staging, _identity(run, config, conversion), conversion.converted)
            staged = dataclasses.replace(staged, conversion=conversion, sizes=manifest.sizes)
        except BaseException:  # refused rows, a stop signal: nothing is left behind
            staged.discard()
            raise
        return staged

    def _exported_before(
        self, run: RunArtifacts, config: AtifConfig, output: Path
    ) -> StagedTrajectories:
        """The rerun's read: the rollouts hashed (their one read), held with the options to
        the record in ``output``. The same export is done already, once its files are read
        back as its manifest names them; another is refused, saying what differs, and so is
        an output that no longer holds what the export wrote (nothing in it is removed)."""
        record = read_record(output)
        identity = ExportIdentity.of(rollouts_fingerprint(run.rollouts), **_options(run, config))
        if differences := identity.differences(record.identity):
            raise ExportFailure(
                f"Output path already exists: {output} holds the ATIF export of another run or "
                f"other options: {'; '.join(differences)}. Choose a new "
                f"{named_option('output_dirpath')} or remove the old one."
            )
        if not config.dry_run:  # what an export killed outright beside it left (a twin's)
            remove_abandoned_staging(output)
        if problem := landed_output_problem(output, record.trajectory_count):
            raise ExportFailure(
                f"Output path already exists: {output} holds the record of this very export, "
                f"but no longer what it wrote: {problem}. Remove it, or choose a new "
                f"{named_option('output_dirpath')}, to export again."
            )
        return StagedTrajectories(
            FileConversion(converted=record.trajectory_count), exported_before=record
        )

    def _convert(
        self,
        run: RunArtifacts,
        config: AtifConfig,
        output: Path | None,
        on_row: Callable[[ConvertedRow], None] | None = None,
    ) -> FileConversion:
        """Convert every row; raise what fails the export (rows Gym refuses name each one)."""
        identity = TrajectoryIdentity(
            session_id=config.session_id or run.stem,
            agent_version=config.agent_version,
            agent_name=config.agent_name,
        )
        try:
            conversion = convert_file(
                run.rollouts,
                identity,
                output=output,
                on_row=on_row,
                allowed_gaps=config.allow_gaps,
                relaxations=config.relax,
                progress=self.progress,
                agent=config.agent,
            )
        except OSError as error:
            if error.errno in (errno.ENOSPC, errno.EDQUOT) and output is not None:
                raise ExportFailure(
                    f"No space left to write the trajectories into {output.parent} "
                    f"({error.strerror or error}); free space there, or choose an "
                    f"{named_option('output_dirpath')} on another file system. Nothing was "
                    "written."
                ) from None
            where = error.filename or run.rollouts
            raise ExportFailure(
                f"Cannot convert {run.rollouts}: {error.strerror or error} ({where})"
            ) from None
        if unknown := sorted(set(config.allow_gaps) - GYM_GAP_CODES - set(conversion.gap_counts)):
            raise OptionError(
                f"{named_option('allow_gaps')} names {', '.join(unknown)}: no row of "
                f"{run.rollouts} records {'it' if len(unknown) == 1 else 'them'} and NeMo Gym "
                "writes no such code (a misspelling?). Gym's codes are "
                f"{', '.join(sorted(GYM_GAP_CODES))}; {run.inspect_advice()} says which the run "
                "records"
            )
        if conversion.rejected:
            raise RunFileError(_rejection(run, conversion), rejected_rows=conversion.rejected)
        if problem := conversion.problem(run.rollouts, config.agent):
            raise RunFileError(problem)
        return conversion

    def plan(
        self,
        run: RunArtifacts,
        config: AtifConfig,
        target: AtifTarget,
        prepared: StagedTrajectories,
    ) -> DryRunPlan:
        """The conversion without its files: how many trajectories would be written where (or
        that the export would be skipped: its output is there)."""
        conversion = prepared.conversion
        if prepared.exported_before is not None:
            return DryRunPlan(
                exporter=self.name,
                target=target.where,
                files=[PlannedFile(path=str(run.rollouts), size_bytes=run.rollouts.stat().st_size)],
                summary=_done(target.output, prepared.exported_before),
                counts=_counts(conversion),
                skip_reason=SkipReason.ALREADY_EXPORTED,
            )
        return DryRunPlan(
            exporter=self.name,
            target=target.where,
            files=[PlannedFile(path=str(run.rollouts), size_bytes=run.rollouts.stat().st_size)],
            summary=f"{conversion.converted} trajectories of {_whose(run, config)} would be "
            f"written to {target.where}",
            counts=_counts(conversion),
        )

    def deliver(
        self,
        run: RunArtifacts,
        config: AtifConfig,
        target: AtifTarget,
        prepared: StagedTrajectories,
    ) -> ExportResult:
        """Check the staged files against their manifest, then rename them into place (an
        ATIF export is not guarded by a marker: its output holds its record); or skip an
        export whose output is there (its read found it)."""
        output = target.output
        if prepared.exported_before is not None:
            return ExportResult.skipped(
                self.name,
                str(run.run_dir),
                _done(output, prepared.exported_before),
                SkipReason.ALREADY_EXPORTED,
                output_dirpath=str(output),
                manifest=str(output / MANIFEST_NAME),
                trajectory_count=prepared.exported_before.trajectory_count,
            )
        assert prepared.staging is not None  # an export stages its files
        conversion = prepared.conversion
        prepared.disown()
        if problem := staged_output_problem(
            prepared.staging, conversion.converted, prepared.sizes, conversion.images
        ):
            return self.failed(
                run,
                f"ATIF export of {run.rollouts} failed its own check of the files it wrote, "
                f"so nothing was written to {output}: {problem}. This is a bug in "
                "evalexport; please report it with the rollouts file.",
            )
        if os.path.lexists(output):
            return self.failed(run, f"Output path was created during export: {output}")
        prepared.staging.chmod(0o755)
        with deferred() as held:  # renamed into place, the export has landed: it stands
            prepared.staging.rename(output)
            landed()
        held.raise_held()
        of_agent = f" of agent {config.agent}" if config.agent is not None else ""
        return ExportResult.succeeded(
            self.name,
            str(run.run_dir),
            f"wrote {conversion.converted} ATIF trajectories{of_agent}"
            + (f" and the {len(conversion.images)} images they show" if conversion.images else "")
            + f" to {output}",
            output_dirpath=str(output),
            manifest=str(output / MANIFEST_NAME),
            **_counts(conversion),
        )


def _options(run: RunArtifacts, config: AtifConfig) -> dict[str, Any]:
    """The options that shape the files, as the export uses them (the session the rollouts
    file's stem when none is given)."""
    return {
        "session_id": config.session_id or run.stem,
        "agent_version": config.agent_version,
        "agent_name": config.agent_name,
        "agent": config.agent,
        "allow_gaps": config.allow_gaps,
        "relax": config.relax,
    }


def _identity(run: RunArtifacts, config: AtifConfig, conversion: FileConversion) -> ExportIdentity:
    return ExportIdentity.of(conversion.rollouts_sha256, **_options(run, config))


def _done(output: Path, record: ExportRecord) -> str:
    """What a skipped rerun says of the output that is there."""
    return (
        f"{output} already holds this export's {record.trajectory_count} ATIF trajectories "
        f"(the same rollouts, {record.identity.rollouts_sha256[:19]}…, and options)"
    )


def _whose(run: RunArtifacts, config: AtifConfig) -> str:
    """``aime24_rollouts.jsonl``, or ``agent X of aime24_rollouts.jsonl``."""
    if config.agent is None:
        return run.rollouts.name
    return f"agent {config.agent} of {run.rollouts.name}"


def _counts(conversion: FileConversion) -> dict[str, Any]:
    counts: dict[str, object] = {"trajectory_count": conversion.converted}
    if conversion.other_agents:
        counts["rows_of_other_agents"] = dict(sorted(conversion.other_agents.items()))
    if conversion.trajectories_with_gaps:
        counts["trajectories_with_gaps"] = conversion.trajectories_with_gaps
        counts["gap_counts"] = dict(sorted(conversion.gap_counts.items()))
    if conversion.trajectories_relaxed:
        counts["trajectories_relaxed"] = conversion.trajectories_relaxed
        counts["relaxation_counts"] = dict(sorted(conversion.relaxation_counts.items()))
    return counts


def _rejection(run: RunArtifacts, conversion: FileConversion) -> str:
    rejected = conversion.rejected
    listed = "\n".join(f"- {row}" for row in rejected[:_LISTED_ROWS])
    more = len(rejected) - _LISTED_ROWS
    if more > 0:
        listed += f"\n- ... and {more} more rows"
    message = (
        f"ATIF export rejected {len(rejected)} of {conversion.rows} rows of {run.rollouts}; "
        f"nothing was written:\n{listed}"
    )
    if conversion.agents and (agents := conversion.agents_problem(run.rollouts)):
        # Rows of several agents share their (task, rollout) keys: +agent is the way on.
        return f"{message}\n{agents}"
    if conversion.duplicate_keys == len(rejected):
        # No option accepts a repeated key: pointing to inspect for one would mislead.
        return (
            f"{message}\nEach row's (task, rollout) key (_ng_task_index, _ng_rollout_index) must "
            f"be unique in the file, as NeMo Gym requires; no {named_option('allow_gaps')} or "
            f"{named_option('relax')} option accepts a repeated one. Remove or re-key the "
            "repeated rows."
        )
    return f"{message}\n{conversion.options_advice()}"
