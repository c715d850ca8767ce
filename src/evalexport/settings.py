"""Settings read from the environment, each read and checked in one place.

An environment variable is input like an option: a value that cannot mean what its name says is
refused by name (a usage error, exit code 2), never ignored and never taken for something else.
``EVALEXPORT_WORKER_TIME_LIMIT=nan`` would remove the limit, ``0`` would fail every export, and
``EVALEXPORT_INSTALLER=bogus`` would quietly pick an installer the user did not ask for.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar, final

__all__ = [
    "INSTALLER_VARIABLE",
    "PLUGIN_IMPORT_VARIABLE",
    "PROGRESS_INTERVAL_VARIABLE",
    "TIME_LIMIT_VARIABLE",
    "Chosen",
    "SettingError",
    "chosen",
    "installer_choice",
    "plugin_import_timeout",
    "progress_interval",
    "worker_time_limit",
]

T = TypeVar("T")

TIME_LIMIT_VARIABLE = "EVALEXPORT_WORKER_TIME_LIMIT"
"""Seconds; overrides every worker's time limit (for tests and impatient CI jobs)."""

PLUGIN_IMPORT_VARIABLE = "EVALEXPORT_PLUGIN_IMPORT_TIMEOUT"
"""Seconds a plugin exporter's module may take to import before it is called broken."""
DEFAULT_PLUGIN_IMPORT_TIMEOUT = 20.0

PROGRESS_INTERVAL_VARIABLE = "EVALEXPORT_PROGRESS_INTERVAL"
"""Seconds between two lines a log keeps of long work (default 5)."""
DEFAULT_PROGRESS_INTERVAL = 5.0
MIN_PROGRESS_INTERVAL = 0.1
"""The fewest seconds between two such lines, whatever is asked: a line per chunk read would
be a line per mebibyte, and a log's own cost."""

INSTALLER_VARIABLE = "EVALEXPORT_INSTALLER"
"""``uv`` or ``pip``: which installer builds SDK environments (default: uv when available)."""

_INSTALLERS = ("uv", "pip")


class SettingError(ValueError):
    """An environment variable of evalexport's holds a value it cannot use (exit code 2)."""


def _seconds(variable: str, *, zero: bool, what: str, advice: str) -> float | None:
    """``$variable`` in seconds, ``None`` when it is unset or empty; a :class:`SettingError`
    (``{variable}={text!r} is not {what}: {advice}``) for anything but a finite number above 0
    (or 0 too, when ``zero``)."""
    text = os.environ.get(variable, "").strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not zero):
        raise SettingError(f"{variable}={text!r} is not {what}: {advice}")
    return seconds


def worker_time_limit() -> float | None:
    """``$EVALEXPORT_WORKER_TIME_LIMIT`` in seconds, or ``None`` when it is unset or empty.

    Raises :class:`SettingError` for anything but a finite number of seconds above 0.
    """
    return _seconds(
        TIME_LIMIT_VARIABLE,
        zero=False,
        what="a time limit",
        advice=f"give a number of seconds greater than 0 (e.g. {TIME_LIMIT_VARIABLE}=600), or "
        "unset it for each exporter's own limit",
    )


def plugin_import_timeout() -> float:
    """``$EVALEXPORT_PLUGIN_IMPORT_TIMEOUT`` in seconds, else 20; raises :class:`SettingError`
    for anything but a finite number above 0."""
    seconds = _seconds(
        PLUGIN_IMPORT_VARIABLE,
        zero=False,
        what="a time limit",
        advice="give a number of seconds greater than 0, or unset it for 20",
    )
    return DEFAULT_PLUGIN_IMPORT_TIMEOUT if seconds is None else seconds


def progress_interval() -> float:
    """``$EVALEXPORT_PROGRESS_INTERVAL`` in seconds, at least :data:`MIN_PROGRESS_INTERVAL`;
    5 when it is unset or empty. Raises :class:`SettingError` for anything but a finite
    number of seconds, 0 or more."""
    seconds = _seconds(
        PROGRESS_INTERVAL_VARIABLE,
        zero=True,
        what="an interval",
        advice=f"give the seconds between two progress lines (e.g. "
        f"{PROGRESS_INTERVAL_VARIABLE}=30; at least {MIN_PROGRESS_INTERVAL:g} is used), or "
        "unset it for 5",
    )
    return DEFAULT_PROGRESS_INTERVAL if seconds is None else max(seconds, MIN_PROGRESS_INTERVAL)


def installer_choice() -> Literal["uv", "pip"] | None:
    """``$EVALEXPORT_INSTALLER`` (``uv`` or ``pip``), or ``None`` when it is unset or empty.

    Raises :class:`SettingError` for any other value.
    """
    text = os.environ.get(INSTALLER_VARIABLE, "").strip()
    if not text:
        return None
    if text == "uv":
        return "uv"
    if text == "pip":
        return "pip"
    raise SettingError(
        f"{INSTALLER_VARIABLE}={text!r} names no installer: set it to "
        f"{' or '.join(_INSTALLERS)}, or unset it to use uv when it is available and pip otherwise"
    )


@final
@dataclass(frozen=True)
class Chosen(Generic[T]):
    """A target setting and where it came from, as the tools around evalexport choose them: an
    option given (CLI, plan, Python API) wins, else the SDK's own environment variable, else
    evalexport's default."""

    value: T
    source: str
    """``+mlflow_tracking_uri``, ``MLFLOW_TRACKING_URI from the environment`` or ``default``."""

    def said(self) -> str:
        """``MLFLOW_TRACKING_URI from the environment``: where the value came from."""
        return self.source


def chosen(
    option: str,
    given: T | None,
    variable: str,
    default: T,
    parse: Callable[[str], T] | None = None,
) -> Chosen[T]:
    """The setting ``option`` as it applies: ``given`` if the caller gave it, else
    ``$variable`` if it is set and not empty (through ``parse``, which raises
    :class:`SettingError` for a value it cannot use), else ``default``."""
    if given is not None:
        return Chosen(given, f"+{option}")
    text = os.environ.get(variable, "").strip()
    if text:
        value = parse(text) if parse is not None else text
        return Chosen(value, f"{variable} from the environment")  # type: ignore[arg-type]
    return Chosen(default, "default")
