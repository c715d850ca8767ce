"""Fake-only machinery: per-test behaviour from the environment, and the call log.

Not part of the SDK's surface: the contract checks ignore private modules.
"""

import functools
import inspect
import json
import os
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

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
_STDLIB = str(Path(sysconfig.get_paths()["stdlib"]).resolve())


def _call_site(depth: int = 2) -> str | None:
    """``file:line`` of the code that called into the fake ``depth`` frames up, skipping
    generated code and the standard library (a dataclass's ``__repr__`` reads for whoever
    called it); ``None`` when that caller is the fake itself, whose own calls and reads are not
    the worker's."""
    frame: Any = sys._getframe(depth)
    while frame is not None and (
        frame.f_code.co_filename.startswith("<")
        or str(Path(frame.f_code.co_filename).resolve()).startswith(_STDLIB)
    ):
        frame = frame.f_back
    if frame is None or str(Path(frame.f_code.co_filename).resolve()).startswith(_PACKAGE):
        return None
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _log(line: dict[str, Any]) -> None:
    log = os.environ.get("EVALRDL_FAKE_CALL_LOG")
    if log:
        with Path(log).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")


def recorded(name: str, *, skip_self: bool = True) -> Callable[[F], F]:
    """Append each call to ``$EVALRDL_FAKE_CALL_LOG``: ``{"name", "args", "kwargs", "site",
    "defaulted"}``, where ``defaulted`` maps every parameter the caller left to its default to
    the default's ``repr`` (the contract check holds those defaults to the real SDK's)."""

    def decorate(function: F) -> F:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            site = _call_site() if os.environ.get("EVALRDL_FAKE_CALL_LOG") else None
            if site is not None:
                positional = args[1:] if skip_self else args
                try:
                    passed = signature.bind(*args, **kwargs).arguments
                except TypeError:
                    passed = {}
                _log(
                    {
                        "name": name,
                        "args": _jsonable(positional),
                        "kwargs": _jsonable(kwargs),
                        "site": site,
                        "defaulted": {
                            p.name: repr(p.default)
                            for p in signature.parameters.values()
                            if p.default is not inspect.Parameter.empty and p.name not in passed
                        },
                    }
                )
            return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


class _ComparedText(str):
    """A text attribute that records what the code under test compares it with."""

    _owner: str
    _attribute: str

    def __new__(cls, value: str, owner: str, attribute: str) -> "_ComparedText":
        text = super().__new__(cls, value)
        text._owner, text._attribute = owner, attribute
        return text

    def _compared(self, other: object) -> None:
        if isinstance(other, str) and (site := _call_site(3)) is not None:
            _log(
                {
                    "name": self._owner,
                    "read": self._attribute,
                    "compared_with": str(other),
                    "site": site,
                }
            )

    def __eq__(self, other: object) -> bool:
        self._compared(other)
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        self._compared(other)
        return str.__ne__(self, other)

    __hash__ = str.__hash__


C = TypeVar("C", bound=type[Any])


def records_reads(name: str) -> Callable[[C], C]:
    """Record every public attribute the code under test reads on instances of the class, as
    ``{"name", "read", "site"}``, and what it compares a text attribute with
    (``"compared_with"``): the contract check resolves each against the real SDK's manifests."""

    def decorate(cls: C) -> C:
        inherited = cast("Callable[[Any, str], Any]", cls.__getattribute__)

        def __getattribute__(self: Any, attribute: str) -> Any:
            value = inherited(self, attribute)
            if attribute.startswith("_") or not os.environ.get("EVALRDL_FAKE_CALL_LOG"):
                return value
            site = _call_site()
            if site is None:
                return value
            _log({"name": name, "read": attribute, "site": site})
            return _ComparedText(value, name, attribute) if type(value) is str else value

        cls.__getattribute__ = __getattribute__  # type: ignore[assignment]
        return cls

    return decorate
