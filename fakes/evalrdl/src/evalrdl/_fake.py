"""Fake-only machinery: per-test behaviour from the environment, and the call log.

Not part of the SDK's surface: the contract checks ignore private modules.
"""

import functools
import inspect
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

BEHAVIOURS = (
    "refuse",
    "no_verdict",
    "needs_binding",
    "too_old",
    "split_plan",
    "raise",
    "extra_upload",
)

F = TypeVar("F", bound=Callable[..., Any])


def behaviour() -> str | None:
    value = os.environ.get("EVALRDL_FAKE_BEHAVIOUR") or None
    if value is not None and value not in BEHAVIOURS:
        raise ValueError(
            f"EVALRDL_FAKE_BEHAVIOUR={value!r}; expected one of {', '.join(BEHAVIOURS)}"
        )
    return value


def store_dir() -> Path:
    configured = os.environ.get("EVALRDL_FAKE_STORE")
    if not configured:
        raise RuntimeError(
            "the fake evalrdl SDK needs EVALRDL_FAKE_STORE: the directory of its store"
        )
    return Path(configured)


def _jsonable(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return str(value)


_PACKAGE = str(Path(__file__).resolve().parent)


def _call_site() -> str:
    """``file:line`` of the first caller outside the evalrdl package: the code under test."""
    for frame in inspect.stack()[2:]:
        if not str(Path(frame.filename).resolve()).startswith(_PACKAGE):
            return f"{frame.filename}:{frame.lineno}"
    return "<unknown>"


def recorded(name: str, *, skip_self: bool = True) -> Callable[[F], F]:
    """Append each call as ``{"name", "args", "kwargs", "site"}`` to ``$EVALRDL_FAKE_CALL_LOG``."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            log = os.environ.get("EVALRDL_FAKE_CALL_LOG")
            if log:
                positional = args[1:] if skip_self else args
                line = {
                    "name": name,
                    "args": _jsonable(positional),
                    "kwargs": _jsonable(kwargs),
                    "site": _call_site(),
                }
                with Path(log).open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(line) + "\n")
            return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
