"""Who asked, so that advice names what the asker can do next: a command to type (the command
line, a plan's export) or a call to make (the Python API).

The entry point says it once for everything that runs under it (:func:`asked_from`), and advice
is worded for it where it is written (:meth:`evalexport.run.RunArtifacts.inspect_advice`):
never written for one caller and rewritten for another.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["Caller", "asked_from", "current_caller"]


class Caller(enum.Enum):
    """Who asked for an export or a report."""

    COMMAND_LINE = "command line"
    """The ``evalexport`` command, a plan's export or a Slurm task: advice is a command."""
    PYTHON = "python"
    """:func:`evalexport.export`, ``dry_run`` or ``inspect``: advice is the API's call."""


_CALLER: ContextVar[Caller] = ContextVar("evalexport_caller", default=Caller.COMMAND_LINE)


def current_caller() -> Caller:
    """Who asked for what runs now: the command line unless an entry point said otherwise."""
    return _CALLER.get()


@contextlib.contextmanager
def asked_from(caller: Caller) -> Iterator[None]:
    """Everything run in this block (in this thread) was asked for by ``caller``."""
    token = _CALLER.set(caller)
    try:
        yield
    finally:
        _CALLER.reset(token)
