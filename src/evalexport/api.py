"""The Python API: what the command line does, for a pipeline or a notebook, without printing.

``export`` and ``dry_run`` run the same checks and return the same
:class:`~evalexport.results.ExportResult` (status, message, exit code) as
``evalexport EXPORTER +rollouts_jsonl_fpath=R [+key=value ...] [--dry-run] --json``; ``inspect``
returns the report ``evalexport inspect R --json`` prints. Options are typed Python values
(``upload_rollouts=False``, ``tags=["a", "b"]``, ``meta={"source": "ci"}``); an unknown or invalid
one is a usage error (exit code 2) that names it, as on the command line. Nothing is printed:
what the exporters log goes to the ``evalexport`` logger, progress to ``progress`` if given.
``docs/python-api.md`` has examples (a test runs them)::

    import evalexport

    result = evalexport.export("mlflow", "run/aime24_rollouts.jsonl", upload_rollouts=False)
    if result.exit_code:
        raise SystemExit(result.message)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from evalexport.progress import Progress

if TYPE_CHECKING:
    from evalexport.inspection import RunInspection
    from evalexport.results import ExportResult
    from evalexport.spec.base import Exporter

__all__ = ["Progress", "dry_run", "export", "inspect"]


def export(
    exporter: str | type[Exporter[Any, Any]],
    rollouts: str | os.PathLike[str],
    *,
    progress: Progress | None = None,
    **options: object,
) -> ExportResult:
    """Export the run whose rollouts file is ``rollouts`` with ``exporter`` (a name that
    ``evalexport list`` shows, or an exporter class), as ``evalexport EXPORTER`` does.

    Every outcome is a result, never an exception: ``result.exit_code`` is the command's
    (``0`` succeeded or skipped, ``1`` failed, ``2`` usage error, ...).
    """
    from evalexport.pipeline import ExportRequest, run_export
    from evalexport.results import ExitCode, ExportResult

    request = ExportRequest(exporter, progress=progress)
    if "rollouts_jsonl_fpath" in options:
        name = request.exporter_name
        return ExportResult.failed(
            name,
            "",
            "rollouts_jsonl_fpath is the second argument of evalexport.export, not an option: "
            f"evalexport.export({name!r}, {str(options['rollouts_jsonl_fpath'])!r}, ...)",
            exit_code=ExitCode.USAGE,
        )
    return run_export(
        ExportRequest(
            exporter,
            {"rollouts_jsonl_fpath": rollouts, **options},
            progress=progress,
            python=True,
        )
    )


def dry_run(
    exporter: str | type[Exporter[Any, Any]],
    rollouts: str | os.PathLike[str],
    *,
    progress: Progress | None = None,
    **options: object,
) -> ExportResult:
    """:func:`export` with ``dry_run=True``: every check, and ``result.plan`` says what would be
    exported (files and sizes, metric, param and tag names, target); nothing is exported."""
    return export(exporter, rollouts, progress=progress, **{**options, "dry_run": True})


def inspect(rollouts: str | os.PathLike[str]) -> RunInspection:
    """What the run holds and what an export would make of it (``evalexport inspect``): its
    files, rollouts, agents, metrics, the saved config's masking, the strict ATIF verdict, and
    every problem found (``report.problems``), not only the first, masked as an export masks
    what it sends. A rollouts file that is not there is that one problem (``readable`` false,
    ``run_missing`` true). ``rollouts`` may be the run directory when it holds one rollouts
    file; else :class:`~evalexport.run.RunFileError` names the ones it holds."""
    from evalexport.callers import Caller, asked_from
    from evalexport.inspection import inspect_run
    from evalexport.run import RunArtifacts

    if not os.fspath(rollouts).strip():
        raise ValueError("expected the path of a run's rollouts file, got an empty value")
    with asked_from(Caller.PYTHON):
        return inspect_run(RunArtifacts.of_path(rollouts))
