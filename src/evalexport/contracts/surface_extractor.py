"""Extract an SDK's surface manifest: what the worker uses, as the installed SDK has it.

Standard library (and the worker protocol) only: this file runs in-process (``evalexport
contract manifest``) and as a worker body inside an SDK's environment. A surface is a list of dotted paths; ``()`` marks an
instance, so ``evalrdl.Client().uploads.upload`` is the ``upload`` method of the ``uploads``
attribute of a ``Client()`` built with its defaults (stubtest cannot see instance attributes
such as ``uploads``; this can).

For each path the manifest records its kind and:

- every parameter: name, kind, annotation, whether it has a default and, if so, the default
  (``repr`` of a literal, ``module.Type.MEMBER`` of an ``Enum`` member, ``<module.Type>`` of
  anything else, so no memory address lands in a committed file);
- for a callable, its return annotation: what the worker gets back, and, for a method its
  class binds otherwise, its ``binding`` (``classmethod``: the parameters leave out ``cls``,
  as a call on the class passes them; ``staticmethod``);
- for a property named by its path (``clearml.Task.id``), kind ``property`` and the getter's
  return annotation;
- for a class or an exception, its public attributes (``attributes``), what the worker reads
  back: annotated fields, properties, methods, class constants, classes defined in it (kind
  ``class``: their bases, an Enum's members) and the instance attributes its methods assign
  (``self.stage = stage``, which no class-level tool sees), but for one a class of its MRO
  holds as a property (``self.id = …`` in a subclass goes through a base's setter: a
  property it stays). A field annotated with a ``Literal`` or an ``Enum`` also records its
  allowed ``values``;
- for an exception, its base classes; for an Enum, its direct bases and its ``members``
  (name to value), in place of a constructor and attributes.
"""

from __future__ import annotations

import ast
import enum
import importlib
import inspect
import os
import re
import tempfile
import textwrap
import types
import typing
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from evalexport.workers.protocol import ExitCode, WorkerResult, result


class ManifestPayload(TypedDict):
    """``evalexport contract manifest --requirement``: extract inside an SDK's environment."""

    sdk: str
    surface: list[str]
    environment: NotRequired[dict[str, str]]


MANIFEST_FORMAT = 2

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _resolve(path: str) -> tuple[Any, Any]:
    """``(owner, object)`` at ``path``: import the longest importable prefix, then walk
    attributes. ``owner`` is the class or instance the last name was read on (``None`` for a
    module's name), so a member is described as what its class makes it (a classmethod, a
    staticmethod, a property)."""
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
    owner: Any = None
    for part in parts[consumed:]:
        if part == "()":
            owner, obj = None, obj()
        else:
            owner, obj = (
                (obj if not isinstance(obj, types.ModuleType) else None),
                getattr(obj, part),
            )
    return owner, obj


def _binding(owner: Any, name: str) -> str | None:
    """How a member is bound on its class: ``classmethod``, ``staticmethod``, ``property``
    or ``method``; ``None`` for a module's name or an instance's own attribute."""
    if owner is None:
        return None
    klass = owner if inspect.isclass(owner) else type(owner)
    for holder in klass.__mro__:
        if name in vars(holder):
            found = vars(holder)[name]
            if isinstance(found, classmethod):
                return "classmethod"
            if isinstance(found, staticmethod):
                return "staticmethod"
            if isinstance(found, property):
                return "property"
            return "method" if callable(found) else None
    return None


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def annotation_text(annotation: object) -> str | None:
    """An annotation as text; ``None`` where there is none."""
    if annotation is inspect.Parameter.empty or annotation is inspect.Signature.empty:
        return None
    if isinstance(annotation, str):
        return annotation
    return _ADDRESS.sub("", inspect.formatannotation(annotation))


def default_text(value: object) -> str:
    """A default as text that is the same in every process: literals by ``repr``, others by
    type. A default taken from the process at import time (wandb's ``Settings.x_stats_pid`` is
    the importing process's id) is not part of the contract and is recorded as such."""
    if type(value) is int and value == os.getpid():
        return "<process id>"
    literal = (type(None), bool, int, float, complex, str, bytes)
    if isinstance(value, literal) or (
        isinstance(value, tuple | frozenset) and all(isinstance(v, literal) for v in value)
    ):
        return repr(value)
    if isinstance(value, enum.Enum):
        return f"{_qualified(type(value))}.{value.name}"
    return f"<{_qualified(type(value))}>"


def _allowed_values(annotation: object) -> list[object] | None:
    """The values a ``Literal[...]`` or ``Enum`` annotation allows (``Optional`` unwrapped)."""
    if inspect.isclass(annotation) and issubclass(annotation, enum.Enum):
        return [_plain(member.value) for member in annotation]
    if typing.get_origin(annotation) is typing.Literal:
        return [_plain(value) for value in typing.get_args(annotation)]
    arguments = [a for a in typing.get_args(annotation) if a is not type(None)]
    if len(arguments) == 1 and typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return _allowed_values(arguments[0])
    return None


def _plain(value: object) -> Any:
    return value if isinstance(value, str | int | float | bool) or value is None else str(value)


def _parameters(obj: Any) -> list[dict[str, object]] | None:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    parameters = []
    for parameter in signature.parameters.values():
        entry: dict[str, object] = {
            "name": parameter.name,
            "kind": parameter.kind.name,
            "has_default": parameter.default is not inspect.Parameter.empty,
            "annotation": annotation_text(parameter.annotation),
        }
        if entry["has_default"]:
            entry["default"] = default_text(parameter.default)
        parameters.append(entry)
    return parameters


def _returns(obj: Any) -> str | None:
    try:
        return annotation_text(inspect.signature(obj).return_annotation)
    except (TypeError, ValueError):
        return None


def _own_classes(cls: type) -> list[type]:
    """``cls`` and its bases, without ``object``, ``Exception`` and the other builtins."""
    return [klass for klass in cls.__mro__ if klass.__module__ != "builtins"]


def _self_assignments(cls: type) -> set[str]:
    """Public attributes the class's own methods assign on ``self`` (``self.stage = stage``):
    instance attributes no class-level tool sees. Every method counts, not only ``__init__``
    (wandb's ``Run`` sets ``self.summary`` in a helper ``__init__`` calls)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return set()
    names = set()
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                names.add(target.attr)
    return names


def _field(annotation: object, kind: str) -> dict[str, object]:
    entry: dict[str, object] = {"kind": kind, "annotation": annotation_text(annotation)}
    values = None if annotation is inspect.Signature.empty else _allowed_values(annotation)
    if values is not None:
        entry["values"] = values
    return entry


def _attributes(cls: type) -> dict[str, dict[str, object]]:
    """The public attributes of instances of ``cls``: what a worker can read back."""
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # unresolvable forward references: fall back to the raw annotations
        hints = {}
        for klass in reversed(_own_classes(cls)):
            hints.update(getattr(klass, "__annotations__", {}) or {})
    attributes: dict[str, dict[str, object]] = {}
    for klass in reversed(_own_classes(cls)):
        for name in sorted(_self_assignments(klass)):
            if isinstance(_found_on(cls, name), property):
                continue  # ``self.id = …`` through a base's property: its setter takes it
            attributes[name] = _field(hints.get(name, inspect.Signature.empty), "instance")
        for name, value in vars(klass).items():
            if name.startswith("_"):
                continue
            if inspect.isclass(value):
                attributes[name] = _nested_class(value)
            elif isinstance(value, property):
                returns = (
                    inspect.signature(value.fget).return_annotation
                    if value.fget is not None
                    else inspect.Signature.empty
                )
                attributes[name] = _field(returns, "property")
            elif callable(value) or isinstance(value, classmethod | staticmethod):
                attributes[name] = {"kind": "method"}
            elif name not in hints:
                attributes[name] = {"kind": "constant", "value": default_text(value)}
    for name, annotation in hints.items():
        if not name.startswith("_") and typing.get_origin(annotation) is not typing.ClassVar:
            attributes.setdefault(name, _field(annotation, "field"))
            if attributes[name]["kind"] == "instance":
                attributes[name] = _field(annotation, "field")
    return {name: attributes[name] for name in sorted(attributes) if not name.startswith("_")}


def _found_on(cls: type, name: str) -> object:
    """What ``cls.name`` is as its class holds it (the first class of its MRO that defines
    it), without running a descriptor; ``None`` when none does."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return None


def _nested_class(value: type) -> dict[str, object]:
    """A class defined in a class (clearml's ``Task.TaskTypes``, an Enum, ``Task.DeleteError``,
    an exception): kind ``class``, its bases and, for an Enum, its members."""
    entry: dict[str, object] = {
        "kind": "class",
        "bases": [_qualified(base) for base in value.__bases__],
    }
    if issubclass(value, enum.Enum):
        entry["members"] = {member.name: _plain(member.value) for member in value}
    return entry


def describe(obj: object, binding: str | None = None) -> dict[str, object]:
    """A manifest entry for ``obj``; ``binding`` is how its class binds it, when it is a
    member (a classmethod's parameters leave out ``cls``, as a call on the class passes
    them)."""
    if binding == "property" and isinstance(obj, property):
        returns = (
            inspect.signature(obj.fget).return_annotation
            if obj.fget is not None
            else inspect.Signature.empty
        )
        return {"kind": "property", "annotation": annotation_text(returns)}
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return {
            "kind": "exception",
            "bases": [_qualified(base) for base in obj.__mro__[1:]],
            "parameters": _parameters(obj),
            "attributes": _attributes(obj),
        }
    if inspect.isclass(obj) and issubclass(obj, enum.Enum):
        # An Enum is its members: calling one looks a member up, and its attributes are them.
        return {**_nested_class(obj), "parameters": None, "attributes": {}}
    if inspect.isclass(obj):
        return {"kind": "class", "parameters": _parameters(obj), "attributes": _attributes(obj)}
    if callable(obj):
        entry: dict[str, object] = {
            "kind": "callable",
            "parameters": _parameters(obj),
            "returns": _returns(obj),
        }
        if binding in ("classmethod", "staticmethod"):
            entry["binding"] = binding
        return entry
    return {"kind": "attribute", "type": _qualified(type(obj))}


def extract(sdk: str, surface: list[str]) -> dict[str, object]:
    """The manifest of ``surface`` as the importable ``sdk`` package has it."""
    module = importlib.import_module(sdk)
    entries: dict[str, object] = {}
    for path in surface:
        try:
            owner, obj = _resolve(path)
            entries[path] = describe(obj, _binding(owner, path.rsplit(".", 1)[-1]))
        except Exception as error:  # a missing name is a finding, not a crash
            entries[path] = {"kind": "missing", "error": f"{type(error).__name__}: {error}"}
    return {
        "format": MANIFEST_FORMAT,
        "sdk": sdk,
        "version": str(getattr(module, "__version__", "unknown")),
        "entries": entries,
    }


def run(payload: ManifestPayload) -> WorkerResult:
    """Worker entry point: extract inside an SDK's environment."""
    for key, value in payload.get("environment", {}).items():
        os.environ.setdefault(key, value)
    # Reading signatures needs no home: what importing an SDK writes there (MLflow's telemetry
    # id in ~/.config/mlflow, caches) goes to a scratch home removed afterwards.
    homes = ("HOME", *_XDG_HOMES)
    kept = {variable: os.environ.get(variable) for variable in homes}
    with tempfile.TemporaryDirectory(prefix="evalexport-extract-home-") as home:
        os.environ["HOME"] = home
        for variable, below in _XDG_HOMES.items():
            os.environ[variable] = str(Path(home) / below)
        try:
            manifest = extract(payload["sdk"], payload["surface"])
        finally:
            for variable, previous in kept.items():
                if previous is None:
                    os.environ.pop(variable, None)
                else:
                    os.environ[variable] = previous
    return result("succeeded", ExitCode.OK, "manifest extracted", output=manifest)


_XDG_HOMES = {
    "XDG_CONFIG_HOME": ".config",
    "XDG_CACHE_HOME": ".cache",
    "XDG_DATA_HOME": ".local/share",
    "XDG_STATE_HOME": ".local/state",
}
