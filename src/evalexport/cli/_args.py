"""Command-line tokens into :class:`Arguments`, and the usage error every command shares: a
command raises :class:`UsageError`, and the dispatcher prints it with the command's help.

Each command declares its own flags (``FLAGS``, and among them the ``VALUE_FLAGS`` that take a
value); a flag a command does not take is refused by name, never ignored.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

# The exit codes the CLI returns itself: ``ExitCode``'s values, without importing pydantic.
from evalexport.workers.protocol import FAILED, USAGE
from evalexport.workers.protocol import SUCCEEDED as OK

__all__ = [
    "FAILED",
    "OK",
    "USAGE",
    "Arguments",
    "Invocation",
    "UsageError",
    "parse",
    "usage_error",
]


class UsageError(Exception):
    """A command line that cannot be run as written (exit code 2): raised anywhere in a
    command, printed by the dispatcher with the help of the command at hand
    (:func:`usage_error`)."""


@dataclass
class Invocation:
    """One run of the command line: the command at hand, and what it decided before printing
    its outcome (kept here, not in the module: a program may run the CLI more than once)."""

    help_topic: str | None = None
    """The command (or exporter) being run, whose own ``--help`` a usage error points to."""
    decided: int | None = None
    """The exit code the command decided on before it printed its outcome: a reader that goes
    away mid-print (``| head -1``) leaves it as it was (a closed pipe alone is no failure, and
    no success either)."""


@dataclass
class Arguments:
    """A command line split into its command, flags with and without values, and the rest."""

    positionals: list[str] = field(default_factory=list)
    json: bool = False
    dry_run: bool = False
    help: bool = False
    version: bool = False
    all: bool = False
    format: str | None = None
    values: dict[str, str] = field(default_factory=dict)
    """Flags given with a value: ``--workers 3``, ``--fake PATH``."""
    switches: set[str] = field(default_factory=set)
    """Flags of one command that take no value: ``--slurm``, ``--wait``."""
    invocation: Invocation = field(default_factory=Invocation)
    """The run of the command line these arguments are of."""

    def decide(self, code: int) -> int:
        """Record ``code`` as the command's outcome, before it is printed (it stands if the
        reader goes away mid-print); return it."""
        self.invocation.decided = int(code)
        return self.invocation.decided

    def given_flags(self) -> set[str]:
        """Every flag given, with or without a value."""
        given = {*self.values, *self.switches}
        given |= {flag for flag, on in (("--json", self.json), ("--all", self.all)) if on}
        if self.dry_run:
            given.add("--dry-run")
        if self.format is not None:
            given.add("--format")
        return given


def parse(
    argv: Sequence[str],
    value_flags: Iterable[str],
    switches: Iterable[str],
    invocation: Invocation | None = None,
) -> Arguments:
    """``argv`` as :class:`Arguments` of ``invocation``; ``value_flags`` and ``switches`` are
    every command's."""
    value_flags, switches = frozenset(value_flags), frozenset(switches)
    arguments = Arguments(invocation=invocation or Invocation())
    tokens = list(argv)
    while tokens:
        token = tokens.pop(0)
        if token == "--json":
            arguments.json = True
        elif token == "--dry-run":
            arguments.dry_run = True
        elif token in ("-h", "--help"):
            arguments.help = True
        elif token == "--version":
            arguments.version = True
        elif token == "--all":
            arguments.all = True
        elif token in switches:
            arguments.switches.add(token)
        elif token.split("=", 1)[0] in value_flags:
            flag, _, value = token.partition("=")
            if not value:
                if not tokens:
                    raise UsageError(f"{flag} needs a value")
                value = tokens.pop(0)
            arguments.values[flag] = value
        elif token == "--format" or token.startswith("--format="):
            if token == "--format":
                if not tokens:
                    raise UsageError("--format needs an exporter name")
                token = "--format=" + tokens.pop(0)
            arguments.format = token.partition("=")[2]
        elif token.startswith("-") and not token.startswith("+"):
            raise UsageError(
                f"unknown flag {token}; every command takes --help, and --version, --json and "
                "--dry-run where they apply; a command's own flags are in its help "
                "(exporter options are written +key=value)"
            )
        else:
            arguments.positionals.append(token)
    return arguments


def usage_error(message: str, topic: str | None = None) -> int:
    """Print ``evalexport: error: MESSAGE`` and where the help of ``topic`` (the command or
    exporter at hand; ``None``: the tool's) is, on stderr; return exit code 2."""
    where = f"evalexport {topic} --help" if topic else "evalexport --help"
    # No one reading stderr (a closed pipe) leaves the exit code to say it.
    with contextlib.suppress(BrokenPipeError, ValueError):
        print(f"evalexport: error: {message}\nRun '{where}' for usage.", file=sys.stderr)
    return USAGE
