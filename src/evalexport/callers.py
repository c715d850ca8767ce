"""Who asked, so that a message names what the asker can do next in the asker's own terms: an
option as they give it (``+agent=NAME`` typed on a command line, ``agent=NAME`` as a keyword
argument or a plan's key: :func:`named_option`) and a command to type or a call to make
(:meth:`evalexport.run.RunArtifacts.inspect_advice`).

The entry point says who asked once, for everything that runs under it (:func:`asked_from`; the
pipeline hands it on to the processes an export starts), and each message is worded for the
asker where it is written, never written for one caller and rewritten for another.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["Caller", "asked_from", "current_caller", "named_option"]


class Caller(enum.Enum):
    """Who asked for an export or a report."""

    COMMAND_LINE = "command line"
    """The ``evalexport`` command: options are ``+key=value`` tokens, advice a command."""
    PLAN = "plan"
    """A plan's export (a pool's or a Slurm array's task): options are the plan's keys, advice
    a command."""
    PYTHON = "python"
    """:func:`evalexport.export`, ``dry_run`` or ``inspect``: options are keyword arguments,
    advice the API's call."""

    @property
    def gives_tokens(self) -> bool:
        """Whether this caller gives options as ``+key=value`` tokens."""
        return self is Caller.COMMAND_LINE


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


def named_option(name: str, value: str | None = None) -> str:
    """The option ``name`` (given ``value``) as who asked gives it: ``+name=value`` on a
    command line, ``name=value`` as a keyword argument or a plan's key."""
    named = f"+{name}" if current_caller().gives_tokens else name
    return named if value is None else f"{named}={value}"
