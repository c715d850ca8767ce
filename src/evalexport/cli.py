"""The ``evalexport`` command: argument parsing and printing only (SPEC §3.2).

    evalexport EXPORTER +rollouts_jsonl_fpath=PATH [+key=value ...] [--json] [--dry-run]
    evalexport EXPORTER --help
    evalexport list
    evalexport inspect PATH [--json]

Importing this module imports no exporter and no SDK: an exporter's module is imported only
when that exporter is asked for.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from evalexport import __version__
from evalexport._format import human_size

if TYPE_CHECKING:
    from evalexport.exporters.base import Exporter
    from evalexport.inspection import RunInspection
    from evalexport.results import DryRunPlan, ExportResult

__all__ = ["main"]

_COMMANDS = {
    "list": "list the installed exporters",
    "inspect": "show what a run directory holds (files, rollouts, agents, metrics, masking)",
    "save-config": "save a run's masked config from the files and overrides it was launched "
    "with: 'save-config ROLLOUTS CONFIG.yaml [...] [key=value ...]'",
    "envs": "list the cached SDK environments; 'envs remove NAME' or 'envs remove --all'",
    "contract": "SDK contracts: 'contract manifest|check|verify SDK' (see contract --help)",
    "plan": "export plans: 'plan check|render|run PLAN.yaml' (see plan --help)",
}


_OK, _FAILED, _USAGE = 0, 1, 2
"""Exit codes the CLI returns itself; they are ``ExitCode``'s, without importing pydantic."""


_CONTRACT_VALUE_FLAGS = ("--requirement", "--fake", "--contracts")
_PLAN_VALUE_FLAGS = (
    "--workers",
    "--report",
    "--work-dir",
    "--timeout",
    "--index",
    "--result-dir",
    "--command",
)
_VALUE_FLAGS = _CONTRACT_VALUE_FLAGS + _PLAN_VALUE_FLAGS
_PLAN_FLAGS = ("--slurm", "--wait")


_COMMAND_FLAGS: dict[str, tuple[str, ...]] = {
    "list": ("--json",),
    "inspect": ("--json",),
    "save-config": ("--json",),
    "envs": ("--json", "--all"),
    "contract": _CONTRACT_VALUE_FLAGS,
    "plan": ("--json", *_PLAN_VALUE_FLAGS, *_PLAN_FLAGS),
}
"""The flags each command takes besides --help and --version (an export's are checked in
``_export``). Any other flag is refused by name, never ignored."""


def _flags_not_taken_by(command: str, arguments: _Arguments) -> list[str]:
    given = {*arguments.values, *arguments.switches}
    given |= {flag for flag, on in (("--json", arguments.json), ("--all", arguments.all)) if on}
    if arguments.dry_run:
        given.add("--dry-run")
    if arguments.format is not None:
        given.add("--format")
    return sorted(flag for flag in given if flag not in _COMMAND_FLAGS[command])


class UsageError(Exception):
    """A command line that cannot be run as written (exit code 2)."""


@dataclass
class _Arguments:
    positionals: list[str] = field(default_factory=list)
    json: bool = False
    dry_run: bool = False
    help: bool = False
    version: bool = False
    all: bool = False
    format: str | None = None
    values: dict[str, str] = field(default_factory=dict)
    switches: set[str] = field(default_factory=set)
    """Value flags of the contract commands: --requirement, --fake, --contracts."""


def _parse(argv: Sequence[str]) -> _Arguments:
    arguments = _Arguments()
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
        elif token in _PLAN_FLAGS:
            arguments.switches.add(token)
        elif token.split("=", 1)[0] in _VALUE_FLAGS:
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
                f"unknown flag {token}; flags are --json, --dry-run, --help, --version, --all "
                "(exporter options are written +key=value)"
            )
        else:
            arguments.positionals.append(token)
    return arguments


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (SPEC §3.1)."""
    from evalexport.interrupts import Interrupted, signals_raise

    try:
        with signals_raise():
            return _main(list(sys.argv[1:] if argv is None else argv))
    except Interrupted as interruption:
        # Whatever was under way unwound on the way here (workers stopped, scratch removed);
        # an export interrupted mid-way returned its own result instead (SPEC §3.4).
        print(f"evalexport: {interruption}; stopped", file=sys.stderr)
        return interruption.exit_code
    except BrokenPipeError:
        # The reader went away (``evalexport ... | head``): stop quietly, as cat does.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return _FAILED


def _main(args: list[str]) -> int:
    try:
        arguments = _parse(args)
    except UsageError as error:
        return _usage_error(str(error))
    if arguments.version:
        print(f"evalexport {__version__}")
        return _OK
    if arguments.format is not None:
        print(
            "evalexport: warning: --format is deprecated; name the exporter first: "
            f"evalexport {arguments.format} +rollouts_jsonl_fpath=...",
            file=sys.stderr,
        )
        arguments.positionals.insert(0, arguments.format)
    if not arguments.positionals:
        _print_overview(sys.stdout if arguments.help else sys.stderr)
        return _OK if arguments.help else _USAGE
    command, *rest = arguments.positionals
    if command in _COMMAND_FLAGS and (misplaced := _flags_not_taken_by(command, arguments)):
        taken = ", ".join(_COMMAND_FLAGS[command])
        return _usage_error(
            f"{command}: {', '.join(misplaced)} "
            f"{'is not a flag' if len(misplaced) == 1 else 'are not flags'} of this command; "
            f"it takes {taken} (see evalexport {command} --help)"
        )
    if command == "list":
        return _list(arguments, rest)
    if command == "inspect":
        return _inspect(arguments, rest)
    if command == "save-config":
        return _save_config(arguments, rest)
    if command == "envs":
        from evalexport.isolation.commands import envs_command

        return envs_command(rest, arguments.all, arguments.help, arguments.json, _usage_error)
    if command == "contract":
        from evalexport.contracts.commands import contract_command

        return contract_command(rest, arguments.values, arguments.help, _usage_error)
    if command == "plan":
        from evalexport.plans.commands import plan_command

        return plan_command(
            arguments.positionals[1:],
            arguments.values,
            arguments.switches,
            arguments.help,
            arguments.json,
            _usage_error,
        )
    return _export(command, arguments, rest)


def _usage_error(message: str) -> int:
    print(f"evalexport: error: {message}", file=sys.stderr)
    print("Run 'evalexport --help' for usage.", file=sys.stderr)
    return _USAGE


def _print_overview(stream: TextIO) -> None:
    from evalexport.exporters.registry import exporter_entries

    lines = [
        "usage: evalexport EXPORTER +rollouts_jsonl_fpath=PATH [+key=value ...] "
        "[--json] [--dry-run]",
        "       evalexport EXPORTER --help",
        "       evalexport list | inspect PATH",
        "",
        "Export a finished LLM-evaluation run to a tracking system or file format.",
        "",
        "commands:",
        *(f"  {name:<12} {text}" for name, text in _COMMANDS.items()),
        "",
        "exporters (evalexport EXPORTER --help for its options):",
        *(f"  {name}" for name in exporter_entries()),
        "",
        "flags: --json (print the result as JSON), --dry-run (check and plan, export nothing),",
        "       --version, --format NAME (deprecated: name the exporter first)",
        "exit codes: 0 succeeded or skipped, 1 failed, 2 usage error,",
        "            3 stored without a verdict before the timeout, 4 refused by the service",
    ]
    print("\n".join(lines), file=stream)


# -- list --------------------------------------------------------------------------------------


def _list(arguments: _Arguments, rest: list[str]) -> int:
    from evalexport.exporters.registry import ExporterLoadError, exporter_entries

    if rest:
        return _usage_error(f"'list' takes no arguments, got {' '.join(rest)}")
    rows: list[dict[str, str]] = []
    for entry in exporter_entries().values():
        try:
            summary = entry.load().summary
        except ExporterLoadError as error:
            summary = f"(cannot be loaded: {error})"
        rows.append({"name": entry.name, "source": entry.source, "summary": summary})
    if arguments.json:
        print(json.dumps(rows))  # --json: one line
    elif not rows:
        print("No exporters installed.")
    else:
        width = max(len(row["name"]) for row in rows)
        for row in rows:
            print(f"{row['name']:<{width}}  {row['summary']} [{row['source']}]")
    return _OK


# -- inspect -----------------------------------------------------------------------------------


def _inspect(arguments: _Arguments, rest: list[str]) -> int:
    from evalexport.inspection import inspect_run
    from evalexport.run import RunArtifacts

    if arguments.help:
        print("usage: evalexport inspect PATH [--json]\n\n" + _COMMANDS["inspect"])
        return _OK
    if len(rest) != 1:
        return _usage_error("'inspect' takes one argument: the run's rollouts file")
    path = rest[0][1:] if rest[0].startswith("+") else rest[0]
    path = path.removeprefix("rollouts_jsonl_fpath=")
    report = inspect_run(RunArtifacts.from_rollouts_path(path))
    if arguments.json:
        print(json.dumps(report.as_json_data()))  # --json: one line
    else:
        _print_inspection(report)
    if report.unmasked_secret_paths:
        print(
            "evalexport: warning: the saved config holds values that look like live secrets at "
            + ", ".join(report.unmasked_secret_paths)
            + "; save it with evalexport.save_run_config so exporters never see them",
            file=sys.stderr,
        )
    return _OK if report.readable else _FAILED


def _print_atif_verdict(report: RunInspection) -> None:
    verdict = report.atif
    assert verdict is not None
    if verdict.accepted:
        print(f"strict ATIF export: accepts all {report.rollout_count} rollouts")
        return
    refused = (
        f"refuses {verdict.rejected_rows} rollouts" if verdict.rejected_rows else "refuses the run"
    )
    print(f"strict ATIF export: {refused}")
    for reason in verdict.reasons:
        print(f"  - {reason.splitlines()[0]}")
    if verdict.accepted_with_gaps_allowed:
        codes = ",".join(report.gap_counts)
        print(f"  with +allow_gaps=[{codes}] it would accept every rollout")
    elif verdict.accepted_with_gaps_allowed is False:
        print("  allowing the recorded gaps would not be enough")


def _print_inspection(report: RunInspection) -> None:
    print(f"run directory: {report.run_dir}")
    print(f"rollouts:      {report.rollouts}")
    print("files:")
    for item in report.files:
        print(f"  {human_size(item.size_bytes):>9}  {item.path.name}  ({item.role})")
    print(
        f"rollouts: {report.rollout_count} ({report.rollouts_with_trajectory} with ng_trajectory)"
    )
    for agent in report.agents:
        reward = "n/a" if agent.mean_reward is None else f"{agent.mean_reward:.4g}"
        print(f"  {agent.name}: {agent.rollouts} rollouts, mean reward {reward}")
    if report.gap_counts:
        counts = ", ".join(f"{code} x{count}" for code, count in report.gap_counts.items())
        print(f"coverage gaps: {report.rollouts_with_gaps} rollouts record gaps ({counts})")
    else:
        print("coverage gaps: none")
    if report.atif is not None:
        _print_atif_verdict(report)
    print(f"metrics ({len(report.metrics)} after flattening):")
    for name, value in report.metrics.items():
        print(f"  {name} = {value:.6g}")
    for name, text in report.texts.items():
        print(f"  {name} = {text!r} (text)")
    print(f"saved config: {report.config_status}")
    if report.problems:
        print("problems:")
        for problem in report.problems:
            print(f"  - {problem}")


# -- save-config -------------------------------------------------------------------------------

_SAVE_CONFIG_USAGE = """usage: evalexport save-config ROLLOUTS CONFIG.yaml [CONFIG.yaml ...] [key=value ...]

Write <stem>_resolved_config.yaml beside ROLLOUTS for a run made without one (NeMo Gym saves
none): the config files merged in order, then the overrides, as the run was launched
(key=value sets a key the files define, +key=value adds one, ++key=value sets either way,
~key removes one). Interpolations such as ${oc.env:HF_TOKEN} stay as written; every secret is
masked. An existing saved config is never overwritten: delete it to save it again."""


def _save_config(arguments: _Arguments, rest: list[str]) -> int:
    from evalexport.launch_config import LaunchConfigError, merge_launch_config
    from evalexport.masking import find_unmasked_secrets, save_run_config
    from evalexport.run import RunArtifacts

    if arguments.help:
        print(_SAVE_CONFIG_USAGE)
        return _OK
    if len(rest) < 2:
        return _usage_error("save-config takes the run's rollouts file and its config files")
    rollouts, *tokens = rest
    files = [token for token in tokens if "=" not in token and not token.startswith(("~", "+"))]
    overrides = [token for token in tokens if token not in files]
    run = RunArtifacts.from_rollouts_path(rollouts)

    def failed(message: str) -> int:
        if arguments.json:
            print(json.dumps({"status": "failed", "message": message}))
        print(f"failed: {message}", file=sys.stderr if arguments.json else sys.stdout)
        return _FAILED

    if not run.rollouts.is_file():
        return failed(f"Rollouts file not found: {run.rollouts}")
    if run.saved_config.exists():
        return failed(f"{run.saved_config} already exists; delete it to save the config again")
    try:
        config = merge_launch_config(files, overrides)
    except LaunchConfigError as error:
        return _usage_error(f"save-config: {error}") if error.usage else failed(str(error))
    masked = find_unmasked_secrets(config)
    path = save_run_config(config, run.rollouts)
    message = f"saved {path}" + (
        f" ({len(masked)} secret values masked: {', '.join(masked)})" if masked else ""
    )
    if arguments.json:
        print(json.dumps({"status": "succeeded", "message": message, "path": str(path)}))
    else:
        print(f"succeeded: {message}")
    return _OK


# -- export ------------------------------------------------------------------------------------


def _export(name: str, arguments: _Arguments, rest: list[str]) -> int:
    from evalexport.exporters.base import OptionError
    from evalexport.exporters.registry import (
        ExporterLoadError,
        UnknownExporterError,
        load_exporter,
    )
    from evalexport.overrides import OverrideError, parse_overrides
    from evalexport.results import ExitCode, ExportResult
    from evalexport.run import RunArtifacts

    try:
        exporter_class = load_exporter(name)
    except UnknownExporterError as error:
        return _usage_error(str(error))
    except ExporterLoadError as error:
        return _report(arguments, ExportResult.failed(name, "", str(error)))
    if arguments.help:
        print(_exporter_help(exporter_class))
        return _OK
    foreign = sorted(
        {*arguments.values, *arguments.switches} | ({"--all"} if arguments.all else set())
    )
    if foreign:
        return _usage_error(
            f"{name}: {', '.join(foreign)} "
            f"{'is not a flag' if len(foreign) == 1 else 'are not flags'} of an export; an export "
            "takes --json, --dry-run and +key=value options (see evalexport "
            f"{name} --help)"
        )
    try:
        options = parse_overrides(rest, exporter_class.text_options())
        if arguments.dry_run:
            options.setdefault("dry_run", True)
        config = exporter_class.parse_config(options)
    except (OverrideError, OptionError) as error:
        if arguments.json:
            result = ExportResult.failed(name, "", str(error), exit_code=ExitCode.USAGE)
            print(result.model_dump_json())  # one line, as every result
        return _usage_error(f"{name}: {error}")
    import logging

    # Exporters and workers log (e.g. a stored run that needs binding); users read it on stderr.
    logging.basicConfig(level=logging.INFO, format="evalexport: %(message)s", stream=sys.stderr)
    run = RunArtifacts.from_rollouts_path(config.rollouts_jsonl_fpath)
    progress = _ProgressLine(name, exporter_class.progress_unit) if sys.stderr.isatty() else None
    result = exporter_class(progress=progress).export(run, config)
    if progress is not None:
        progress.close()
    return _report(arguments, result)


class _ProgressLine:
    """``atif: 42% (84.0 MiB of 200.0 MiB)`` rewritten in place on a terminal's stderr."""

    def __init__(self, exporter: str, unit: str = "bytes") -> None:
        self.exporter = exporter
        self.unit = unit
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        percent = 100 * done // total if total else 100
        amount = (
            f"{human_size(done)} of {human_size(total)}"
            if self.unit == "bytes"
            else f"{done} of {total} {self.unit}"
        )
        sys.stderr.write(f"\r{self.exporter}: {percent}% ({amount})")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


def _report(arguments: _Arguments, result: ExportResult) -> int:
    line = result.summary_line()
    if arguments.json:
        print(result.model_dump_json())  # one line: results append to JSON-lines logs as they are
        print(line, file=sys.stderr)
    else:
        print(line)
        if result.plan is not None:
            _print_plan(result.plan)
    return int(result.exit_code)


def _print_plan(plan: DryRunPlan) -> None:
    print(f"target: {plan.target}")
    print("files:")
    for item in plan.files:
        print(f"  {human_size(item.size_bytes):>9}  {item.path}")
    for label, names in (
        ("metrics", plan.metric_names),
        ("params", plan.param_names),
        ("tags", plan.tag_names),
    ):
        print(f"{label} ({len(names)}):" + ("" if names else " none"))
        for name in names:
            print(f"  {name}")
    print(f"batches: {plan.batches}")


def _exporter_help(exporter_class: type[Exporter[Any]]) -> str:
    lines = [
        f"usage: evalexport {exporter_class.name} +rollouts_jsonl_fpath=PATH [+key=value ...] "
        "[--json] [--dry-run]",
        "",
        exporter_class.summary,
        "",
        "options:",
    ]
    for option, info in exporter_class.Config.model_fields.items():
        kind = _type_name(info.annotation)
        default = (
            "required"
            if info.is_required()
            else f"default: {info.get_default(call_default_factory=True)!r}"
        )
        lines.append(f"  +{option} ({kind}, {default})")
        if info.description:
            lines.append(f"      {info.description}")
    return "\n".join(lines)


def _type_name(annotation: Any) -> str:
    """``list[str]``, ``str | None``: how a user would write the option's type."""
    import types
    import typing

    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(arguments[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(argument) for argument in arguments)
    if origin is typing.Literal:
        return " | ".join(repr(argument) for argument in arguments)
    if origin is not None:
        inner = ", ".join(_type_name(argument) for argument in arguments)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation))


if __name__ == "__main__":
    sys.exit(main())
