"""Standard output is the command's own: what others' code writes there goes to stderr."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

__all__ = ["others_write_to_stderr"]


@contextlib.contextmanager
def others_write_to_stderr() -> Iterator[None]:
    """Within the block, what is written to standard output goes to standard error instead:
    a ``print`` and a write to file descriptor 1 alike, by this process or a process it starts.

    A plugin's import or hooks, or an SDK, may print; stdout carries only the command's
    result (one line of JSON with ``--json``), so a script reading it never meets theirs.
    Used where others' code runs in this process: a plugin's import
    (:mod:`evalexport.exporters.registry`) and an export on the command line; ``plan run``'s
    export processes keep their stdout for results the same way
    (:mod:`evalexport.plans.pool_worker`).
    """
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    saved: int | None = None
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no standard output or error to speak of: Python's print is kept apart
        if saved is not None:
            os.close(saved)
            saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved is not None:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os.dup2(saved, 1)
            os.close(saved)
