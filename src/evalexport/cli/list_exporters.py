"""``evalexport list``: the installed exporters."""

from __future__ import annotations

import json

from evalexport.cli._args import OK, Arguments, UsageError

SUMMARY = "list the installed exporters"
FLAGS = ("--json",)
VALUE_FLAGS: tuple[str, ...] = ()
HELP = f"""usage: evalexport list [--json]

{SUMMARY[0].upper()}{SUMMARY[1:]}: each exporter's name, summary and where it comes from
(built-in, or the distribution of a plugin), and each plugin that cannot be loaded, with why.

flags:
  --json  one JSON line: a list of {{"name", "source", "summary"}}"""


def run(arguments: Arguments, rest: list[str]) -> int:
    """``evalexport list``: the installed exporters, where each comes from, and its summary."""
    from evalexport.spec.registry import ExporterLoadError, exporter_entries

    if arguments.help:
        print(HELP)
        return OK
    if rest:
        raise UsageError(f"'list' takes no arguments, got {' '.join(rest)}")
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
    return OK
