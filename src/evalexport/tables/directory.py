"""A directory exporter's read (``kind = "directory"``: the run directory uploaded as it is,
EvalRDL's): every file opened once, the saved config checked for live secrets, every file
scanned for secret-shaped text the result names, and the files listed as they were read, for
the dry run's plan."""

from __future__ import annotations

import io
from typing import BinaryIO

from evalexport import egress, reading
from evalexport.egress import SecretScan
from evalexport.masking import FREE
from evalexport.results import PlannedFile
from evalexport.run import RunArtifacts, RunFileError

__all__ = ["read_directory"]


def read_directory(run: RunArtifacts, *, uploader: str) -> list[PlannedFile]:
    """Every file of ``run``'s directory, each opened once, as ``uploader`` (``EvalRDL``)
    takes it: the rollouts file read through that open for a record, the saved config for
    values that look like live secrets, and every file for secret-shaped text, which the
    result names (the directory leaves unmasked: :class:`~evalexport.egress.SecretScan`).
    Returns the files and their sizes, in the order an upload takes them. Raises
    :class:`~evalexport.run.RunFileError` for a file that cannot be uploaded, a rollouts file
    without a record, and a saved config that holds live secrets (masking a copy would not
    keep them out of an upload of the directory)."""
    live: list[str] = []
    records = False
    scan = SecretScan()

    def read_config(handle: BinaryIO) -> None:
        data = handle.read(reading.MAX_FILE_BYTES + 1)
        if len(data) > reading.MAX_FILE_BYTES:
            raise RunFileError(
                f"Saved run config {run.saved_config} is larger than "
                f"{reading.MAX_FILE_BYTES // (1024 * 1024)} MiB; a saved config is a few "
                "kilobytes"
            )
        config = reading.parse_saved_config(run, data)
        live.extend(reading.exportable_config(config).masked_paths)
        scan.read(run.saved_config, io.BytesIO(data))

    def read_rollouts(handle: BinaryIO) -> None:
        nonlocal records
        line_number = 0
        while raw := handle.readline(reading.MAX_LINE_BYTES + 1):  # to the first record
            line_number += 1
            if len(raw) > reading.MAX_LINE_BYTES:
                raise RunFileError(reading.too_long_message(run.rollouts, line_number))
            if not raw.isspace():
                records = True
                scan.read(run.rollouts, io.BytesIO(raw), FREE)  # rows: free text
                scan.read(run.rollouts, handle, FREE)  # the rest, through the same open
                return

    if reason := run.unreadable_file_reason(
        {run.saved_config: read_config, run.rollouts: read_rollouts}, scan.read
    ):
        raise RunFileError(reason)
    if not records:
        raise RunFileError(run.no_records_message)
    if (found := scan.note(run.run_dir)) is not None:
        egress.current().note(f"{uploader} uploads the run directory as it is: {found}")
    if live:
        raise RunFileError(
            f"The saved config {run.saved_config} holds values that look like live secrets "
            f"({', '.join(live)}), and {uploader} uploads the run directory as it is. Save the "
            "config masked (delete it, then evalexport save-config, or "
            "evalexport.save_run_config) and upload again."
        )
    return [
        PlannedFile(path=str(path), size_bytes=path.stat().st_size)
        for path in reading.run_directory_files(run.run_dir, [])
    ]
