"""A trajectory's bytes written into the output: each file opened relative to the output
directory (half the cost of a path's open, file after file), written whole, its images beside
it once each (:mod:`.files` converts; this writes, in whichever process converted)."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from evalexport.backends.atif.file_outcome import ConvertedRow
from evalexport.trajectory.convert import ConvertedTrajectory
from evalexport.trajectory.images import IMAGE_DIRECTORY

__all__ = ["opened_output", "write_trajectory"]

_CREATE: Final = os.O_WRONLY | os.O_CREAT | os.O_TRUNC


@contextlib.contextmanager
def opened_output(output: Path | None) -> Iterator[int | None]:
    """The output directory, open for the files written into it (``None`` for none)."""
    if output is None:
        yield None
        return
    directory = os.open(output, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield directory
    finally:
        os.close(directory)


def write_trajectory(
    line_number: int,
    converted: ConvertedTrajectory,
    data: bytes,
    directory: int | None,
    output: Path | None,
) -> ConvertedRow:
    """The trajectory's ``data`` written whole into the open ``directory`` (``output``'s),
    its images beside it, and the row's manifest facts: the hash and length of those very
    bytes."""
    if directory is not None and output is not None:
        # A duplicate key may overwrite a file here: the export then fails and is discarded.
        # Opened relative to the directory: half the cost of a path's open, file after file.
        _write_all(os.open(converted.file_name, _CREATE, 0o644, dir_fd=directory), data)
        if converted.images:
            _write_images(converted.images, output / IMAGE_DIRECTORY)
    return ConvertedRow(
        line_number,
        converted.file_name,
        converted.task_index,
        converted.rollout_index,
        hashlib.sha256(data).hexdigest(),
        len(data),
        converted.gap_codes,
        converted.relaxations,
        tuple(converted.images),
    )


def _write_images(images: dict[str, bytes], directory: Path) -> None:
    """Each image once: its name is its hash, so a file there already (another row's, or
    another worker's) holds the same bytes; the output's check hashes every one."""
    directory.mkdir(exist_ok=True)
    for name, data in images.items():
        try:
            descriptor = os.open(directory / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        _write_all(descriptor, data)


def _write_all(descriptor: int, data: bytes) -> None:
    """``data`` written whole to the open ``descriptor``, which is then closed."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]
    finally:
        os.close(descriptor)
