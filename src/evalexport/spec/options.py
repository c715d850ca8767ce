"""An exporter's options, as callers give them: validated, and each mistake told in the
caller's terms (``+upload_rollout`` on a command line, ``'upload_rollout'`` from Python).

These are the pipeline's, not hooks: an exporter declares its options (the first type
parameter, ``Exporter[MyConfig]``) and nothing here can be replaced by one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import SecretStr, ValidationError

from evalexport.spec.base import ExporterConfig, OptionError

if TYPE_CHECKING:
    from evalexport.spec.base import AnyExporter

__all__ = [
    "in_keyword_terms",
    "options_of",
    "parse_options",
    "path_options",
    "secret_values",
    "text_options",
]


def options_of(
    exporter: type[AnyExporter],
    options: Mapping[str, object],
    overrides: Sequence[str] = (),
    *,
    dry_run: bool = False,
) -> ExporterConfig:
    """An export's options as a caller gives them: typed values (a Python caller's keyword
    arguments, a plan's keys), then ``+key=value`` tokens as typed on a command line; a number
    given for a text option is its text, as the command line takes ``+mlflow_run_name=2024``.
    Raises :class:`OptionError` (or an ``OverrideError``) in the caller's terms."""
    from evalexport.spec.overrides import parse_overrides

    texts = text_options(exporter)
    given = {
        key: str(value)
        if key in texts and isinstance(value, int | float) and not isinstance(value, bool)
        else value
        for key, value in options.items()
    }
    if overrides:
        given.update(parse_overrides(list(overrides), texts, path_options(exporter)))
    if dry_run:
        given.setdefault("dry_run", True)
    return parse_options(exporter, given, python=not overrides)


def in_keyword_terms(message: str, options: Iterable[str]) -> str:
    """``message`` with each of ``options`` written as the command line writes it (``+agent``,
    ``+relax=[...]``) named as a keyword argument (``agent``, ``relax=[...]``), for a caller
    that gave them so; other ``+`` words (``+key=value``) stay."""
    names = sorted(options, key=len, reverse=True)
    if not names or "+" not in message:
        return message
    pattern = r"\+(" + "|".join(map(re.escape, names)) + r")\b"
    return re.sub(pattern, r"\1", message)


def parse_options(
    exporter: type[AnyExporter], options: Mapping[str, object], *, python: bool = False
) -> ExporterConfig:
    """``options`` validated as ``exporter``'s, raising :class:`OptionError` naming each bad
    one: as the command line writes them (``+upload_rollout``), or with ``python`` as a Python
    caller passes them (``'upload_rollout'``)."""
    try:
        parsed: ExporterConfig = exporter.Config.model_validate(options)
        return parsed
    except ValidationError as error:
        raise OptionError(_described(exporter, error, python=python)) from None


def text_options(exporter: type[AnyExporter]) -> frozenset[str]:
    """Options typed as text: the CLI passes their values as written (``1.0`` stays text; a
    YAML-quoted value is unquoted)."""
    return frozenset(
        name
        for name, info in exporter.Config.model_fields.items()
        if info.annotation in (str, str | None, SecretStr, SecretStr | None)
    )


def path_options(exporter: type[AnyExporter]) -> frozenset[str]:
    """Options typed as a path: the CLI takes their text exactly as given (``/x/traj #2`` is a
    path, never YAML's comment), as the Python API does."""
    return frozenset(
        name
        for name, info in exporter.Config.model_fields.items()
        if info.annotation in (Path, Path | None)
    )


def secret_values(config: ExporterConfig) -> list[str]:
    """The values of an export's token options (``SecretStr``): known secrets while it runs."""
    return [
        value.get_secret_value()
        for value in (getattr(config, name) for name in type(config).model_fields)
        if isinstance(value, SecretStr)
    ]


def _described(exporter: type[AnyExporter], error: ValidationError, *, python: bool) -> str:
    def spelt(name: str) -> str:
        return repr(name) if python else f"+{name}"

    fields = exporter.Config.model_fields
    valid = ", ".join(spelt(name) for name in fields)
    problems: list[str] = []
    for item in error.errors():
        # A validator's own words, without pydantic's "Value error, " before them.
        said = item["msg"].removeprefix("Value error, ")
        dotted = ".".join(str(part) for part in item["loc"])
        option = spelt(dotted) if item["loc"] else "options"
        if item["type"] == "extra_forbidden":
            problems.append(f"unknown option {option} for exporter {exporter.name!r}")
        elif item["type"] == "missing":
            problems.append(f"missing required option {option}")
        elif _is_secret(exporter.Config, item["loc"]):
            problems.append(f"invalid value for {option}: {said} (value not shown)")
        else:
            from evalexport.masking import scrub_value

            problems.append(
                f"invalid value for {option}: {said} (got {scrub_value(item['input'])!r})"
            )
    return "; ".join(problems) + f". Valid options: {valid}"


def _is_secret(options: type[ExporterConfig], location: tuple[int | str, ...]) -> bool:
    from evalexport.masking import is_secret_key

    field = options.model_fields.get(str(location[0])) if location else None
    secret_typed = field is not None and field.annotation in (SecretStr, SecretStr | None)
    return secret_typed or any(is_secret_key(str(part)) for part in location)
