"""Extract an SDK's surface manifest: what the worker uses, as the installed SDK has it.

Standard library only: this file runs in-process (``evalexport contract manifest``) and as a
worker body inside an SDK's environment. A surface is a list of dotted paths; ``()`` marks an
instance, so ``evalrdl.Client().uploads.upload`` is the ``upload`` method of the ``uploads``
attribute of a ``Client()`` built with its defaults (stubtest cannot see instance attributes
such as ``uploads``; this can). For each path the manifest records its kind, every parameter
(name, kind, whether it has a default, annotation) and, for exceptions, the base classes.
"""

from __future__ import annotations

import importlib
import inspect
import os
from typing import Any

MANIFEST_FORMAT = 1


def _resolve(path: str) -> Any:
    """The object at ``path``: import the longest importable prefix, then walk attributes."""
    parts = path.replace("()", ".()").split(".")
    obj: Any = None
    consumed = 0
    for end in range(len(parts), 0, -1):
        if "()" in parts[:end]:
            continue
        try:
            obj = importlib.import_module(".".join(parts[:end]))
        except ImportError:
            continue
        consumed = end
        break
    if consumed == 0:
        raise LookupError(f"no module of {path} can be imported")
    for part in parts[consumed:]:
        obj = obj() if part == "()" else getattr(obj, part)
    return obj


def _parameters(obj: Any) -> list[dict[str, Any]] | None:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [
        {
            "name": parameter.name,
            "kind": parameter.kind.name,
            "has_default": parameter.default is not inspect.Parameter.empty,
            "annotation": None
            if parameter.annotation is inspect.Parameter.empty
            else (
                parameter.annotation
                if isinstance(parameter.annotation, str)
                else inspect.formatannotation(parameter.annotation)
            ),
        }
        for parameter in signature.parameters.values()
    ]


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def describe(obj: Any) -> dict[str, Any]:
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return {
            "kind": "exception",
            "bases": [_qualified(base) for base in obj.__mro__[1:]],
            "parameters": _parameters(obj),
        }
    if inspect.isclass(obj):
        return {"kind": "class", "parameters": _parameters(obj)}
    if callable(obj):
        return {"kind": "callable", "parameters": _parameters(obj)}
    return {"kind": "attribute", "type": _qualified(type(obj))}


def extract(sdk: str, surface: list[str]) -> dict[str, Any]:
    """The manifest of ``surface`` as the importable ``sdk`` package has it."""
    module = importlib.import_module(sdk)
    entries: dict[str, Any] = {}
    for path in surface:
        try:
            entries[path] = describe(_resolve(path))
        except Exception as error:  # a missing name is a finding, not a crash
            entries[path] = {"kind": "missing", "error": f"{type(error).__name__}: {error}"}
    return {
        "format": MANIFEST_FORMAT,
        "sdk": sdk,
        "version": str(getattr(module, "__version__", "unknown")),
        "entries": entries,
    }


def run(payload: dict[str, Any]) -> dict[str, Any]:
    """Worker entry point: extract inside an SDK's environment."""
    for key, value in payload.get("environment", {}).items():
        os.environ.setdefault(key, value)
    manifest = extract(payload["sdk"], payload["surface"])
    return {
        "status": "succeeded",
        "exit_code": 0,
        "message": "manifest extracted",
        "details": {"manifest": manifest},
    }
