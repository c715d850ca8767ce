"""Where an MLflow export goes, in MLflow's own terms: a tracking URI as a user writes it made
one the worker can use (an embedded store's path made absolute), a server's ``host:port``
without a scheme refused, the embedded store checked before any work, and the waits on a server
that is down bounded (MLflow's request timeout and retries)."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Final

from evalexport.spec import SettingError, named_option

__all__ = [
    "DEFAULT_REQUEST_RETRIES",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_TRACKING_URI",
    "LEASE_VARIABLE",
    "lease_seconds",
    "local_artifact_location",
    "request_limits",
    "resolve_tracking_uri",
    "tracking_uri_problem",
    "unwritable_store_reason",
    "uri_from_environment",
]

_RELATIVE_SQLITE = re.compile(r"^sqlite:///(?!/)(?P<path>.+)$")

DEFAULT_REQUEST_TIMEOUT = 30
"""Seconds per request (MLflow's own default is 120)."""
DEFAULT_REQUEST_RETRIES = 2
"""Retries per request (MLflow's own default, 7 with a backoff factor of 2, waits about four
minutes on a server that is down before the export can fail)."""


def resolve_tracking_uri(uri: str) -> str:
    """Make a relative SQLite path absolute against the current directory.

    The worker runs in a scratch directory, so ``sqlite:///mlruns.db`` must be pinned to the
    user's directory before it leaves the parent. A bare path is a file store, as in MLflow.
    """
    if match := _RELATIVE_SQLITE.match(uri):
        return f"sqlite:///{Path(match['path']).absolute()}"
    if "://" not in uri and not uri.startswith("databricks"):
        return Path(uri).absolute().as_uri()
    return uri


def local_artifact_location(uri: str) -> str | None:
    """Where artifacts go for a local store: ``mlartifacts/`` beside the database."""
    if uri.startswith("sqlite:///"):
        return (Path(uri.removeprefix("sqlite:///")).parent / "mlartifacts").as_uri()
    return None


DEFAULT_TRACKING_URI = "sqlite:///mlruns.db"
_HOST_PORT = re.compile(r"^(?P<host>[A-Za-z0-9.-]+):(?P<port>\d{1,5})(?P<path>/.*)?$")


def tracking_uri_problem(uri: str) -> str | None:
    """Why ``uri`` cannot be what its writer meant: a server's ``host:port`` without a scheme
    would be taken for a file store of that name."""
    if match := _HOST_PORT.match(uri.strip()):
        return (
            f"{uri!r} looks like a server's host and port without a scheme, which MLflow would "
            f"take for a directory of that name; write http://{match['host']}:{match['port']}"
            f"{match['path'] or ''} (or https://)"
        )
    return None


def uri_from_environment(uri: str) -> str:
    """``$MLFLOW_TRACKING_URI`` as given, or :class:`SettingError` for a ``host:port``
    without a scheme (which MLflow would take for a directory)."""
    if problem := tracking_uri_problem(uri):
        raise SettingError(f"MLFLOW_TRACKING_URI: {problem}")
    return uri


def request_limits(timeout: int | None, retries: int | None) -> dict[str, str]:
    """MLflow's request timeout and retries: an option wins over MLflow's variable, which wins
    over evalexport's default."""
    environment: dict[str, str] = {}
    for variable, given, default in (
        ("MLFLOW_HTTP_REQUEST_TIMEOUT", timeout, DEFAULT_REQUEST_TIMEOUT),
        (
            "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
            retries,
            DEFAULT_REQUEST_RETRIES,
        ),
    ):
        if given is not None:  # an option wins over the variable
            environment[variable] = str(given)
        elif variable not in os.environ:  # the variable wins over our default
            environment[variable] = str(default)
    for variable, value in (
        ("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1"),
        ("MLFLOW_HTTP_REQUEST_BACKOFF_JITTER", "0"),
    ):
        if variable not in os.environ:
            environment[variable] = value
    return environment


def unwritable_store_reason(store: Path | None) -> str | None:
    """An embedded store MLflow could not open, named with its directory, before any work."""
    if store is None:
        return None
    directory = store.parent
    fix = (
        "Export from a writable directory, or name a writable store with "
        f"{named_option('mlflow_tracking_uri', 'sqlite:////ABSOLUTE/PATH/mlruns.db')}."
    )
    if not directory.is_dir():
        return f"Cannot create the MLflow store {store}: its directory {directory} does not exist."
    if store.exists() and not os.access(store, os.R_OK | os.W_OK):
        return f"Cannot write the MLflow store {store}: the file is not writable. {fix}"
    if not os.access(directory, os.W_OK | os.X_OK):
        verb = "write" if store.exists() else "create"
        return (
            f"Cannot {verb} the MLflow store {store}: its directory {directory} is not writable "
            f"(SQLite keeps its journal there, and artifacts go to {directory / 'mlartifacts'}). "
            + fix
        )
    return None


LEASE_VARIABLE: Final = "EVALEXPORT_LEASE_SECONDS"
DEFAULT_LEASE_SECONDS: Final = 60.0
MIN_LEASE_SECONDS: Final = 3.0
"""The shortest lease: an export renews its own six times a lease's time, a request apart."""


def lease_seconds() -> float:
    """``$EVALEXPORT_LEASE_SECONDS``: how long a remote run's lease holds unrenewed (the
    worker renews it each sixth of that), at least :data:`MIN_LEASE_SECONDS`; 60 when it is
    unset or empty. Raises :class:`SettingError` for anything but a finite number above 0."""
    text = os.environ.get(LEASE_VARIABLE, "").strip()
    if not text:
        return DEFAULT_LEASE_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise SettingError(
            f"{LEASE_VARIABLE}={text!r} is not a lease's time: give the seconds a remote run's "
            f"lease holds unrenewed (e.g. {LEASE_VARIABLE}=120), or unset it for 60"
        )
    return max(seconds, MIN_LEASE_SECONDS)
