"""The ``evalexport`` command (SPEC §3.2): one module per command, and only this package
prints. The layers below return data and raise typed errors.

    evalexport EXPORTER +rollouts_jsonl_fpath=PATH [+key=value ...] [--json] [--dry-run]
    evalexport EXPORTER --help | evalexport help [COMMAND]
    evalexport list | inspect PATH | save-config | envs | contract | plan

Each command module declares ``SUMMARY``, the ``FLAGS`` it takes (among them its
``VALUE_FLAGS``, and ``SWITCHES`` that take no value) and ``run(arguments, rest)``. Importing
this package imports no exporter and no SDK: an exporter's module is imported only when that
exporter is asked for.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TextIO

from evalexport._version import __version__
from evalexport.cli import (
    contract,
    envs,
    export,
    inspect,
    list_exporters,
    plan,
    save_config,
)
from evalexport.cli._args import (
    OK,
    USAGE,
    Arguments,
    Invocation,
    UsageError,
    parse,
    usage_error,
)
from evalexport.workers.exit_codes import ExitCode

__all__ = ["main"]

COMMANDS: dict[str, ModuleType] = {
    "list": list_exporters,
    "inspect": inspect,
    "save-config": save_config,
    "envs": envs,
    "contract": contract,
    "plan": plan,
}
"""Every command but the export itself (``evalexport EXPORTER``), by the name typed."""

_VALUE_FLAGS = {flag for module in COMMANDS.values() for flag in module.VALUE_FLAGS}
_SWITCHES = {flag for module in COMMANDS.values() for flag in getattr(module, "SWITCHES", ())}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (SPEC §3.1)."""
    from evalexport.interrupts import Interrupted, signals_raise
    from evalexport.settings import SettingError

    invocation = Invocation()
    returned: int | None = None
    try:
        with signals_raise():
            returned = _main(list(sys.argv[1:] if argv is None else argv), invocation)
            # A pipe's stdout is block-buffered: write it out here, where a reader that went
            # away is caught, not at the interpreter's exit (which would make the code 120).
            sys.stdout.flush()
            return returned
    # Raised anywhere in the command (a SettingError: an evalexport variable of the
    # environment, unusable): the command's own help is named.
    except (UsageError, SettingError) as error:
        return usage_error(str(error), invocation.help_topic)
    except Interrupted as interruption:
        # Whatever was under way unwound on the way here (workers stopped, scratch removed);
        # an export interrupted mid-way returned its own result instead (SPEC §3.4).
        print(f"evalexport: {interruption}; stopped", file=sys.stderr)
        return interruption.exit_code
    except BrokenPipeError:
        # The reader went away (``evalexport inspect R | head``) having read what it wanted:
        # stop quietly. The outcome the command decided before printing stands (a failure
        # stays one for ``set -o pipefail``); a closed pipe alone fails nothing.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = invocation.decided
        if code is None:
            code = OK if returned is None else returned
        return code


def _main(args: list[str], invocation: Invocation) -> int:
    if args[:2] == ["envs", "run"]:
        invocation.help_topic = "envs"  # the rest is the tool's own command line, flags and all
        return envs.run_tool(args[2:])
    invocation.help_topic = _named_topic(args)  # a flag the parser refuses names its help
    arguments = parse(args, _VALUE_FLAGS, _SWITCHES, invocation)
    if arguments.version:
        print(f"evalexport {__version__}")
        return OK
    if arguments.format is not None:
        print(
            "evalexport: warning: --format is deprecated; name the exporter first: "
            f"evalexport {arguments.format} +rollouts_jsonl_fpath=...",
            file=sys.stderr,
        )
        arguments.positionals.insert(0, arguments.format)
    if not arguments.positionals:
        _print_overview(sys.stdout if arguments.help else sys.stderr)
        return OK if arguments.help else USAGE
    name, *rest = arguments.positionals
    if name == "help":  # ``evalexport help [COMMAND]``: the same as ``COMMAND --help``
        if not rest:
            _print_overview(sys.stdout)
            return OK
        return _main([rest[0], "--help"], invocation)
    command = COMMANDS.get(name)
    if command is None:
        from evalexport.spec.registry import exporter_entries

        if invocation.help_topic != name:  # (named after --format, the deprecated form)
            invocation.help_topic = name if name in exporter_entries() else None
        return export.run(name, arguments, rest)
    invocation.help_topic = name
    if misplaced := _flags_not_taken(command, arguments):
        raise UsageError(
            f"{name}: {', '.join(misplaced)} "
            f"{'is not a flag' if len(misplaced) == 1 else 'are not flags'} of this command; "
            f"it takes {', '.join(command.FLAGS)}"
        )
    code: int = command.run(arguments, rest)
    return code


def _named_topic(args: list[str]) -> str | None:
    """The command or exporter a command line names first, whose help a usage error points
    to; ``None`` for none (or a word that names neither)."""
    first = next((word for word in args if not word.startswith(("-", "+"))), None)
    if first is None or first == "help":
        return None
    if first in COMMANDS:
        return first
    from evalexport.spec.registry import BUILTIN_EXPORTERS, exporter_entries

    if first in BUILTIN_EXPORTERS:
        return first

    return first if first in exporter_entries() else None


def _flags_not_taken(command: ModuleType, arguments: Arguments) -> list[str]:
    return sorted(flag for flag in arguments.given_flags() if flag not in command.FLAGS)


def _print_overview(stream: TextIO) -> None:
    from evalexport.spec.registry import exporter_entries

    lines = [
        "usage: evalexport EXPORTER +rollouts_jsonl_fpath=PATH [+key=value ...] "
        "[--json] [--dry-run]",
        "       evalexport EXPORTER --help | evalexport help [COMMAND]",
        "       evalexport list | inspect PATH | save-config R CONFIG.yaml ... | envs ...",
        "       evalexport plan check|render|run PLAN.yaml | plan gather WORK_DIR",
        "       evalexport contract manifest|check|verify|matrix|scaffold SDK ...",
        "",
        "Export a finished LLM-evaluation run to a tracking system or file format.",
        "",
        "commands:",
        *(f"  {name:<12} {module.SUMMARY}" for name, module in COMMANDS.items()),
        "",
        "exporters (evalexport EXPORTER --help for its options):",
        *(f"  {name}" for name in exporter_entries()),
        "",
        "flags: --json (print the result as JSON), --dry-run (check and plan, export nothing),",
        "       --version, --format NAME (deprecated: name the exporter first)",
        "exit codes:",
        *(f"  {int(code):>3}  {code.meaning}" for code in ExitCode),
    ]
    print("\n".join(lines), file=stream)
