"""``evalexport EXPORTER +options``: one export, its progress, its result."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any

from evalexport.cli._args import OK, Arguments, UsageError
from evalexport.host.stdout import others_write_to_stderr
from evalexport.progress import ProgressLog, human_size

if TYPE_CHECKING:
    from evalexport.results import DryRunPlan, ExportResult
    from evalexport.spec.base import Exporter

FLAGS = ("--json", "--dry-run", "--format")
"""An export's flags (``--format`` is the deprecated way to name the exporter); everything else
it takes is a +key=value option."""


def run(name: str, arguments: Arguments, rest: list[str]) -> int:
    """``evalexport NAME ...``: the export through the pipeline, its result printed; the exit
    code."""
    from evalexport.pipeline import ExportRequest, run_export
    from evalexport.results import ExitCode, ExportResult
    from evalexport.spec.registry import (
        ExporterLoadError,
        UnknownExporterError,
        load_exporter,
    )

    if arguments.help:
        try:
            print(_exporter_help(load_exporter(name)))
        except UnknownExporterError as error:
            raise UsageError(str(error)) from None
        except ExporterLoadError as error:
            return report(arguments, ExportResult.failed(name, "", str(error)))
        return OK
    if foreign := sorted(flag for flag in arguments.given_flags() if flag not in FLAGS):
        raise UsageError(
            f"{name}: {', '.join(foreign)} "
            f"{'is not a flag' if len(foreign) == 1 else 'are not flags'} of an export; an export "
            "takes --json, --dry-run and +key=value options"
        )
    # Exporters and workers log (e.g. a stored run that needs binding); users read it on stderr.
    logging.basicConfig(level=logging.INFO, format="evalexport: %(message)s", stream=sys.stderr)
    from evalexport.masking import SCRUBBER

    for handler in logging.getLogger().handlers:  # what is printed is scrubbed, whoever logged
        if SCRUBBER not in handler.filters:
            handler.addFilter(SCRUBBER)
    from evalexport.settings import SettingError

    with others_write_to_stderr():  # a plugin that prints never breaks the result on stdout
        try:
            progress = _progress(name, _progress_unit(name))  # $EVALEXPORT_PROGRESS_INTERVAL
        except SettingError as error:
            progress = None
            result = ExportResult.failed(name, "", str(error), exit_code=ExitCode.USAGE)
        try:
            if progress is not None:
                result = run_export(
                    ExportRequest(
                        name, overrides=rest, dry_run=arguments.dry_run, progress=progress
                    )
                )
        finally:
            if progress is not None:
                progress.close()
    if result.exit_code is ExitCode.USAGE:
        if arguments.json:
            print(result.model_dump_json())  # one line, as every result
        said_by_name = result.message.startswith(f"unknown exporter {name!r}")
        raise UsageError(result.message if said_by_name else f"{name}: {result.message}")
    return report(arguments, result)


def _progress_unit(name: str) -> str:
    """What the exporter's progress counts, for the progress line; the export itself says
    why an exporter cannot be loaded."""
    from evalexport.spec.base import progress_unit
    from evalexport.spec.registry import ExporterLoadError, UnknownExporterError, load_exporter

    try:
        return progress_unit(load_exporter(name))
    except (UnknownExporterError, ExporterLoadError):
        return "bytes"


def _progress(name: str, unit: str) -> _ProgressLine | ProgressLog:
    """The export's progress on stderr: drawn in place on a terminal, else lines a log keeps
    (:class:`evalexport.progress.ProgressLog`: at most one every few seconds, and the last,
    one every few seconds too while a worker's step goes on without a report)."""
    if sys.stderr.isatty():
        return _ProgressLine(name, unit)
    return ProgressLog(name, unit, keep_alive=True)


class _ProgressLine(logging.Filter):
    """``atif: 42% (84.0 MiB of 200.0 MiB)`` rewritten in place on a terminal's stderr; a log
    line printed meanwhile starts on a line of its own."""

    def __init__(self, exporter: str, unit: str = "bytes") -> None:
        super().__init__()
        self.exporter = exporter
        self.unit = unit
        self.shown = False
        self._open = False
        for handler in logging.getLogger().handlers:
            handler.addFilter(self)

    def filter(self, record: logging.LogRecord) -> bool:
        if self._open:
            sys.stderr.write("\n")
            self._open = False
        return True

    def __call__(self, done: int, total: int) -> None:
        percent = 100 * done // total if total else 100
        amount = (
            f"{human_size(done)} of {human_size(total)}"
            if self.unit == "bytes"
            else f"{done} of {total} {self.unit}"
        )
        sys.stderr.write(f"\r{self.exporter}: {percent}% ({amount})")
        sys.stderr.flush()
        self.shown = self._open = True

    def close(self) -> None:
        for handler in logging.getLogger().handlers:
            handler.removeFilter(self)
        if self._open:
            sys.stderr.write("\n")
            self._open = False


def report(arguments: Arguments, result: ExportResult) -> int:
    """Print ``result`` (one JSON line with ``--json``, else its summary and plan); its exit code."""
    arguments.decide(int(result.exit_code))  # before printing: a closed pipe cannot turn it into 0
    if arguments.json:
        # One line, and only it: results append to JSON-lines logs as they are; stderr keeps
        # progress, never a second copy of the result in other words.
        print(result.model_dump_json())
    else:
        print(result.summary_line())
        if result.plan is not None:
            _print_plan(result.plan)
    return int(result.exit_code)


def _print_plan(plan: DryRunPlan) -> None:
    """The plan in its exporter's words: the target, the files, then its sections (or the
    names it fills); nothing is shown that the exporter did not say."""
    print(f"target: {plan.target}")
    for setting, source in plan.settings.items():
        print(f"  {setting}: {source}")
    if plan.files:
        print("files:")
        for item in plan.files:
            print(f"  {human_size(item.size_bytes):>9}  {item.path}")
    sections = plan.sections or {
        label: names
        for label, names in (
            ("metrics", plan.metric_names),
            ("params", plan.param_names),
            ("tags", plan.tag_names),
        )
        if names
    }
    for label, names in sections.items():
        print(f"{label} ({len(names)}):" + ("" if names else " none"))
        for name in names:
            print(f"  {name}")
    if plan.batches:
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


def _type_name(annotation: object) -> str:
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
