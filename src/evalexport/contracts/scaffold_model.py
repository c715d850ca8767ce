"""The model of a fake to scaffold (:mod:`.scaffold`): the modules, classes, functions and
objects a surface manifest names, each where the real SDK keeps it.

Where a name lives: a path's leading lower-case names are its module (``wandb.sdk.wandb_run``),
an upper-case name is a class, the last lower-case name a function; ``()`` is an instance
(``evalrdl.Client().uploads.upload``: ``uploads`` is an object the constructor makes). An
exception that another one names as its base is defined in the module that base names, so the
bases compare equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "SurfaceClass",
    "SurfaceFunction",
    "SurfaceModel",
    "SurfaceModule",
    "SurfaceObject",
]


@dataclass
class SurfaceObject:
    """An object the SDK hands out and the worker calls methods on (``Client().uploads``)."""

    class_name: str
    methods: dict[str, tuple[str, Mapping[str, object]]] = field(default_factory=dict)
    """method -> (its surface path, its manifest entry)."""
    attributes: dict[str, SurfaceObject] = field(default_factory=dict)


@dataclass
class SurfaceClass:
    """A class (or exception) the surface names or one names as a base, in its module."""

    name: str
    module: str
    path: str | None = None
    """The class's own surface path, if the surface names it."""
    entry: Mapping[str, Any] | None = None
    methods: dict[str, tuple[str, Mapping[str, object]]] = field(default_factory=dict)
    """member -> (its surface path, its manifest entry): methods (classmethods and
    staticmethods among them, by their ``binding``) and properties the surface names."""
    instance: SurfaceObject | None = None
    """What the surface reaches through an instance (``Class().x``)."""
    nested: dict[str, tuple[str, Mapping[str, Any]]] = field(default_factory=dict)
    """name -> (its surface path, its manifest entry): classes defined in this one that the
    surface names by path (``clearml.Task.TaskTypes``)."""
    base: str | None = None
    """The direct base, qualified (``evalrdl.exceptions.EvalRDLError``) or a builtin's name."""
    exception: bool = False


@dataclass
class SurfaceFunction:
    """A module-level function of the surface, and what the surface reaches through its result."""

    name: str
    path: str
    entry: Mapping[str, Any]
    returns: SurfaceObject | None = None


@dataclass
class SurfaceModule:
    """A module of the fake: its classes, functions, and names imported from another module."""

    name: str
    classes: dict[str, SurfaceClass] = field(default_factory=dict)
    functions: dict[str, SurfaceFunction] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    """name -> the module it is imported from."""


def _segments(path: str) -> list[str]:
    return path.replace("()", ".()").split(".")


def _split(path: str, sdk: str) -> tuple[str, list[str]]:
    """``(module, rest)``: the module a path's first object lives in, and the rest of it."""
    parts = _segments(path)
    if parts[0] != sdk:
        raise ValueError(f"{path} is not in the {sdk} package")
    for index in range(1, len(parts)):
        part = parts[index]
        last = index == len(parts) - 1
        following = parts[index + 1] if not last else None
        if part == "()" or part[:1].isupper() or last or following == "()":
            return ".".join(parts[:index]), parts[index:]
    return sdk, parts[1:]


class SurfaceModel:
    """Every module of the fake a manifest describes, and what could not be placed (``notes``)."""

    def __init__(self, manifest: Mapping[str, Any]) -> None:
        self.sdk = str(manifest["sdk"])
        self.version = str(manifest["version"])
        self.modules: dict[str, SurfaceModule] = {}
        self.notes: list[str] = []
        self.module(self.sdk)
        entries: Mapping[str, Mapping[str, object]] = manifest["entries"]
        for path in sorted(entries, key=lambda p: (p.count("."), p)):
            entry = entries[path]
            if entry.get("kind") == "missing":
                self.notes.append(f"{path} is missing in the manifest it was made from: left out")
                continue
            self._place(path, entry)
        self._place_exception_bases(entries)

    def module(self, name: str) -> SurfaceModule:
        """The module ``name``, made (with its parent packages) on first use."""
        for depth in range(1, name.count(".") + 2):
            prefix = ".".join(name.split(".")[:depth])
            self.modules.setdefault(prefix, SurfaceModule(prefix))
        return self.modules[name]

    def _class(self, module: str, name: str) -> SurfaceClass:
        holder = self.module(module)
        return holder.classes.setdefault(name, SurfaceClass(name, module))

    def _place(self, path: str, entry: Mapping[str, Any]) -> None:
        module, rest = _split(path, self.sdk)
        head, tail = rest[0], rest[1:]
        kind = entry["kind"]
        if not tail:
            if kind in ("class", "exception"):
                cls = self._class(module, head)
                cls.path, cls.entry, cls.exception = path, entry, kind == "exception"
                if cls.exception:
                    bases = entry.get("bases") or ["builtins.Exception"]
                    cls.base = bases[0]
            elif kind == "callable":
                self.module(module).functions[head] = SurfaceFunction(head, path, entry)
            else:
                self.notes.append(f"{path} is a {kind}: a fake cannot hold it; write it by hand")
            return
        if head[:1].isupper():
            cls = self._class(module, head)
            if tail[0] != "()":
                if len(tail) == 1 and kind in ("callable", "property"):
                    cls.methods[tail[0]] = (path, entry)
                elif len(tail) == 1 and kind in ("class", "exception"):
                    cls.nested[tail[0]] = (path, entry)
                else:
                    self.notes.append(
                        f"{path}: a class nested two deep is not scaffolded; write it by hand"
                    )
                return
            cls.instance = cls.instance or SurfaceObject(f"_{head}Instance")
            self._reach(cls.instance, tail[1:], path, entry)
            return
        function = self.module(module).functions.get(head)
        if function is None or tail[0] != "()":
            self.notes.append(f"{path}: reached through {head}, which the surface does not name")
            return
        function.returns = function.returns or SurfaceObject(f"_{head.title()}Result")
        self._reach(function.returns, tail[1:], path, entry)

    def _reach(
        self, obj: SurfaceObject, rest: list[str], path: str, entry: Mapping[str, object]
    ) -> None:
        if not rest:
            self.notes.append(f"{path}: an instance itself is no surface entry; name its parts")
            return
        if len(rest) == 1:
            if entry["kind"] == "callable":
                obj.methods[rest[0]] = (path, entry)
            return  # an attribute: its owner's attributes say what it is
        name = rest[0]
        inner = obj.attributes.setdefault(name, SurfaceObject(f"{obj.class_name}_{name}"))
        self._reach(inner, rest[1:], path, entry)

    def _place_exception_bases(self, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """Define every exception base within the SDK in the module that names it, with its
        own bases after it, and make a surface name of the same class an import of it."""
        for entry in list(entries.values()):
            bases = entry.get("bases") or []
            for position, base in enumerate(bases):
                if not base.startswith(self.sdk + "."):
                    continue
                module, name = base.rsplit(".", 1)
                cls = self._class(module, name)
                cls.exception = True
                cls.base = cls.base or (bases[position + 1] if position + 1 < len(bases) else None)
        for module in list(self.modules.values()):
            for name, cls in list(module.classes.items()):
                if not cls.exception or cls.path is None:
                    continue
                home = self._defined_elsewhere(name, module.name)
                if home is not None:
                    defined = self.modules[home].classes[name]
                    defined.entry, defined.path = defined.entry or cls.entry, cls.path
                    del module.classes[name]
                    module.aliases[name] = home

    def _defined_elsewhere(self, name: str, here: str) -> str | None:
        for module in self.modules.values():
            if module.name != here and name in module.classes:
                cls = module.classes[name]
                if cls.exception and cls.path is None:
                    return module.name
        return None
