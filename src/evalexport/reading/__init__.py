"""Reading a run, in one place: every reader and parser of its files, the fingerprint, the
masking of its saved config and the warnings an export gives about what it read.

:class:`~evalexport.run.RunArtifacts` says where each file of a run is and what rules the run
keeps; this package reads those files. An export reads each of them once (SPEC §3.1, "One
pass"): :func:`prepare` opens the aggregate metrics, the saved config and the rollouts once
each, hashes them while it parses them, and hands the export (or the dry run) one
:class:`PreparedRun`. The fingerprint an export tags its remote run with and writes in its
marker is :func:`fingerprint_of` those bytes, in the order of :func:`fingerprinted_files`,
the same function and order :func:`run_fingerprint` uses to read a run again.

Its modules, each imported here, so callers name ``evalexport.reading`` alone:

- :mod:`~evalexport.reading.files`: what a run's paths are, the error that names a file,
  regular files opened without waiting on a FIFO, the aggregate metrics and saved config read
  once and bounded, the run directory walked as an upload takes it;
- :mod:`~evalexport.reading.rollouts`: the rollouts file one line at a time, parsed, hashed
  and bounded;
- :mod:`~evalexport.reading.prepare`: the fingerprint, and the run read once
  (:func:`prepare`, :class:`PreparedRun`).
"""

from __future__ import annotations

from evalexport.reading.files import (
    MAX_FILE_BYTES,
    Digest,
    ExportableConfig,
    RunFileError,
    RunPaths,
    exportable_config,
    not_a_file_reason,
    open_regular,
    parse_aggregate_metrics,
    parse_saved_config,
    read_file,
    run_directory_files,
    unreadable_file_reason,
)
from evalexport.reading.prepare import (
    PartRead,
    PartReadElsewhere,
    PreparedRun,
    RolloutsSink,
    fingerprint_of,
    fingerprinted_files,
    prepare,
    run_fingerprint,
)
from evalexport.reading.rollouts import (
    MAX_LINE_BYTES,
    Cursor,
    Rollout,
    count_rollouts,
    holds_no_rollouts,
    iter_rollouts,
    open_rollouts,
    read_rollouts,
    too_long_message,
)

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_LINE_BYTES",
    "Cursor",
    "Digest",
    "ExportableConfig",
    "PartRead",
    "PartReadElsewhere",
    "PreparedRun",
    "Rollout",
    "RolloutsSink",
    "RunFileError",
    "RunPaths",
    "count_rollouts",
    "exportable_config",
    "fingerprint_of",
    "fingerprinted_files",
    "holds_no_rollouts",
    "iter_rollouts",
    "not_a_file_reason",
    "open_regular",
    "open_rollouts",
    "parse_aggregate_metrics",
    "parse_saved_config",
    "prepare",
    "read_file",
    "read_rollouts",
    "run_directory_files",
    "run_fingerprint",
    "too_long_message",
    "unreadable_file_reason",
]
