"""``evalexport contract scaffold``: an installable fake SDK written from a real SDK's surface.

The fake is written from a surface manifest (:mod:`.surface_extractor`): every module, class,
function and exception the surface names, with the real signatures (names, kinds, defaults,
annotations, return annotations), the real exception bases and the attributes the worker reads
back (fields with their allowed values, properties, methods, instance attributes), so that
the fake's own manifest equals the one it was made from: ``evalexport contract check`` finds no
drift in a fresh scaffold. Every call and every read goes through evalexport's recorder
(``<sdk>/_recording.py``, a copy of :mod:`evalexport.testing.recording`), and the behaviour is
left as stubs that raise :class:`NotImplementedError`, each marked ``SCAFFOLD:`` for the author
to fill. What a manifest cannot say (a default that is an object of the SDK's own, a base class
from another package) is written as near as it can be and listed in :attr:`Scaffold.notes`.

Where each name lives is decided by :mod:`.scaffold_model`; this module writes the sources.
"""

from __future__ import annotations

import builtins
import contextlib
import enum
import keyword
import re
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, final

from evalexport.contracts.narrowing import narrowed
from evalexport.contracts.scaffold_input import (
    NotALiteral,
    builtin_type_name,
    identifier,
    literal_source,
    literal_text,
    manifest_problems,
    type_expression_source,
)
from evalexport.contracts.scaffold_model import (
    SurfaceClass,
    SurfaceFunction,
    SurfaceModel,
    SurfaceModule,
    SurfaceObject,
)
from evalexport.spec.sdk import Surface

__all__ = ["RECORDER_SOURCE", "Scaffold", "ScaffoldError", "write_scaffold"]

RECORDER_SOURCE: Final = Path(__file__).resolve().parents[1] / "testing" / "recording.py"
"""``evalexport.testing.recording``, the recorder a fake carries a copy of (by its path:
contracts/ stands below testing/ and does not import it)."""

_BUILTIN = "builtins."
_ENUM_MEMBER = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
_LITERAL_DEFAULT = re.compile(
    r"^(None|True|False|-?[\d.eE+-]+j?|'.*'|\".*\"|b'.*'|b\".*\"|\(.*\)|frozenset\(.*\))$"
)


class ScaffoldError(ValueError):
    """The manifest cannot be scaffolded: every reason, each naming the entry it is about."""


@final
@dataclass
class Scaffold:
    """What :func:`write_scaffold` wrote: the project, its source root (``--fake``), and what
    could not be made exactly as the real SDK has it."""

    project: Path
    source_root: Path
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# Writing ------------------------------------------------------------------------------------


def _annotation(text: str | None) -> str:
    return "" if text is None else f": {text!r}"


def _returns(text: str | None) -> str:
    return "" if text is None else f" -> {text!r}"


class _Writer:
    def __init__(self, model: SurfaceModel) -> None:
        self.model = model
        self.notes = model.notes

    def default(self, path: str, parameter: Mapping[str, object]) -> str:
        text = str(parameter["default"])
        if text == "<process id>":
            return "os.getpid()"
        if _LITERAL_DEFAULT.match(text):
            with contextlib.suppress(NotALiteral):
                return literal_source(text)  # the value it writes, never the text
        if _ENUM_MEMBER.match(text) and text not in ("None", "True", "False"):
            # A member of the SDK's own Enum: one of an Enum that bears the same name.
            kind, member = text.rsplit(".", 1)
            return f"default_member({kind!r}, {member!r})"
        builtin = text[len(_BUILTIN) + 1 : -1] if text.startswith("<" + _BUILTIN) else ""
        if text.endswith(">") and builtin_type_name(builtin) is not None:
            return f"{builtin}()"  # one of a few plain types, by its own name
        if text.startswith("<") and text.endswith(">"):
            # An object of the SDK's own (a sentinel): one that names the same type.
            return f"default_object({text[1:-1]!r})"
        self.notes.append(
            f'{path}: parameter "{parameter["name"]}" defaults to {text} in the real SDK; the '
            "scaffold gives None: make the fake's default the same"
        )
        return "None"

    def parameters(self, path: str, entry: Mapping[str, Any], *, add_self: bool) -> str:
        written: list[str] = ["self"] if add_self else []
        keyword_only_marked = False
        positional_only = False
        for parameter in entry.get("parameters") or []:
            name, kind = parameter["name"], parameter["kind"]
            if kind == "POSITIONAL_ONLY":
                positional_only = True
            elif positional_only:
                written.append("/")
                positional_only = False
            if kind == "KEYWORD_ONLY" and not keyword_only_marked:
                written.append("*")
                keyword_only_marked = True
            prefix = {"VAR_POSITIONAL": "*", "VAR_KEYWORD": "**"}.get(kind, "")
            if kind == "VAR_POSITIONAL":
                keyword_only_marked = True
            text = f"{prefix}{name}{_annotation(parameter.get('annotation'))}"
            if parameter.get("has_default"):
                equals = " = " if parameter.get("annotation") else "="
                text += f"{equals}{self.default(path, parameter)}"
            written.append(text)
        if positional_only:
            written.append("/")
        return ", ".join(written)

    def stub(self, path: str, indent: str) -> str:
        return (
            f'{indent}raise NotImplementedError("SCAFFOLD: {path} is a stub; write what the fake '
            'does")\n'
        )

    def function(self, function: SurfaceFunction) -> str:
        entry = function.entry
        lines = f'\n\n@record.calls("{function.path}")\n'
        lines += f"def {function.name}({self.parameters(function.path, entry, add_self=False)})"
        lines += f"{_returns(entry.get('returns'))}:\n"
        if function.returns is not None:
            lines += (
                f"    # SCAFFOLD: what {function.path} gives back; the surface reaches into it\n"
            )
            return lines + f"    return {function.returns.class_name}()\n"
        return lines + self.stub(function.path, "    ")

    def method(self, name: str, path: str, entry: Mapping[str, Any], indent: str) -> str:
        if entry.get("kind") == "property":
            text = f"\n{indent}@property\n{indent}def {name}(self){_returns(entry.get('annotation'))}:\n"
            return text + self.stub(path, indent + "    ")
        # A method named by its class path has ``self`` among its manifest parameters; one
        # reached through an instance (``()``) does not. A classmethod's leave ``cls`` out
        # (a call on the class passes none), and a staticmethod takes neither.
        binding = entry.get("binding")
        first = "cls" if binding == "classmethod" else "self"
        add_self = binding != "staticmethod" and (
            "()" in path
            or binding == "classmethod"
            or not any(p["name"] == "self" for p in (entry.get("parameters") or [])[:1])
        )
        text = f'\n{indent}@record.calls("{path}")\n'
        if binding in ("classmethod", "staticmethod"):
            text += f"{indent}@{binding}\n"
        parameters = self.parameters(path, entry, add_self=add_self)
        if add_self and first == "cls":
            parameters = "cls" + parameters[len("self") :]
        text += f"{indent}def {name}({parameters})"
        text += f"{_returns(entry.get('returns'))}:\n"
        return text + self.stub(path, indent + "    ")

    def obj(self, obj: SurfaceObject) -> str:
        text = ""
        for inner in obj.attributes.values():
            text += self.obj(inner)
        text += f"\n\nclass {obj.class_name}:\n"
        text += '    """An object the SDK hands out (scaffolded: its methods are stubs)."""\n'
        if obj.attributes:
            text += "\n    def __init__(self) -> None:\n"
            for name, inner in obj.attributes.items():
                text += f"        self.{name} = {inner.class_name}()\n"
        for name, (path, entry) in obj.methods.items():
            text += self.method(name, path, entry, "    ")
        return text

    def klass(self, cls: SurfaceClass, module: SurfaceModule) -> str:
        entry = cls.entry or {}
        attributes: Mapping[str, Any] = entry.get("attributes") or {}
        text = ""
        if cls.instance is not None:
            for inner in cls.instance.attributes.values():
                text += self.obj(inner)
        enums = {
            name: attribute
            for name, attribute in attributes.items()
            if attribute.get("values") is not None
            and "Literal[" not in str(attribute.get("annotation") or "")
        }
        for name, attribute in enums.items():
            text += self.enum(cls, name, attribute)
        base = ""
        if cls.exception:
            base = self.base_name(cls)
        text += "\n\n"
        if cls.path is not None and (attributes or cls.exception):
            text += f'@record.reads("{cls.path}")\n'
        if entry.get("members") is not None:  # an Enum named by its path: its members
            return text + self.nested_class(cls.path or cls.name, cls.name, entry, indent="")[1:]
        text += f"class {cls.name}{f'({base})' if base else ''}:\n"
        text += f'    """{cls.path or cls.name} (scaffolded from the real SDK\'s surface)."""\n'
        for name, (path, nested) in cls.nested.items():
            text += self.nested_by_path(path, name, nested)
        parameters = {p["name"]: p for p in entry.get("parameters") or []}
        for name, attribute in attributes.items():
            kind = attribute["kind"]
            if kind == "class":
                text += self.nested_class(f"{cls.path or cls.name}.{name}", name, attribute)
            elif kind == "field":
                text += f"    {name}: {self.field_annotation(cls, name, attribute, enums)}\n"
            elif kind == "constant":
                value = str(attribute.get("value", "None"))
                source = "None"
                if _LITERAL_DEFAULT.match(value):
                    with contextlib.suppress(NotALiteral):
                        source = literal_source(value)  # the value it writes, never the text
                text += f"    {name} = {source}\n"
        assigned = [
            name
            for name, attribute in attributes.items()
            if attribute["kind"] in ("instance", "field")
        ]
        if entry.get("parameters") is not None:
            signature = self.parameters(cls.path or cls.name, entry, add_self=True)
            if cls.path is not None:
                text += f'\n    @record.calls("{cls.path}")\n'
            else:
                text += "\n"
            text += f"    def __init__({signature}) -> None:\n"
            if cls.exception:
                positional = [
                    p["name"]
                    for p in parameters.values()
                    if p["kind"] in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")
                ]
                text += f"        super().__init__({', '.join(positional)})\n"
            text += self.assignments(cls, attributes, parameters, assigned)
        elif any(attributes[name]["kind"] == "instance" for name in assigned) or (
            cls.instance is not None and cls.instance.attributes
        ):
            text += "\n    def _scaffolded_attributes(self) -> None:\n"
            text += (
                "        # SCAFFOLD: the instance attributes the real SDK sets and the worker\n"
                "        # reads. Nothing calls this method: it says which attributes an\n"
                "        # instance has; set them where the fake builds one (docs/plugins.md)\n"
            )
            text += self.assignments(cls, attributes, {}, assigned)
        methods = {**cls.methods, **(cls.instance.methods if cls.instance else {})}
        for name, (path, method_entry) in methods.items():
            text += self.method(name, path, method_entry, "    ")
        for name, attribute in attributes.items():
            if name in methods:
                continue
            if attribute["kind"] == "property":
                returns = _returns(attribute.get("annotation"))
                if name in enums:  # its values are the contract: an Enum of them, evaluated
                    enum_name = self.enum_name(cls, name, attribute)
                    optional = "None" in str(attribute.get("annotation") or "")
                    returns = f" -> Optional[{enum_name}]" if optional else f" -> {enum_name}"
                text += f"\n    @property\n    def {name}(self){returns}:\n"
                text += self.stub(f"{cls.path or cls.name}.{name}", "        ")
            elif attribute["kind"] == "method":
                text += f"\n    def {name}(self, *args: object, **kwargs: object) -> Any:\n"
                text += self.stub(f"{cls.path or cls.name}.{name}", "        ")
        if text.rstrip().endswith('(scaffolded from the real SDK\'s surface)."""'):
            text += "\n"
        return text

    def nested_class(
        self, path: str, name: str, attribute: Mapping[str, Any], indent: str = "    "
    ) -> str:
        """A class with its bases and an Enum's members, as a manifest records a class
        defined in a class (``Task.TaskTypes``, an Enum; ``Task.DeleteError``, an exception)
        or an Enum named by its path; each base one a fake can name."""
        bases = [self.nested_base(path, base) for base in attribute.get("bases") or []]
        written = [base for base in bases if base]
        listed = f"({', '.join(written)})" if written else ""
        text = f"\n{indent}class {name}{listed}:\n"
        text += f'{indent}    """{path} (scaffolded from the real SDK\'s surface)."""\n'
        for member, value in (attribute.get("members") or {}).items():
            text += f"{indent}    {member} = {value!r}\n"
        return text

    def nested_by_path(self, path: str, name: str, entry: Mapping[str, Any]) -> str:
        """A class defined in a class that the surface names by its path: an Enum with its
        members, an exception on its first base, a plain class (its constructor and
        attributes are the author's to write, and a note says so)."""
        if entry["kind"] == "exception":
            bases = list(entry.get("bases") or ["builtins.Exception"])[:1]
            return self.nested_class(path, name, {"bases": bases})
        if entry.get("members") is None and (entry.get("parameters") or entry.get("attributes")):
            self.notes.append(
                f"{path}: a class defined in a class is scaffolded empty; write its "
                "constructor and attributes as the real SDK has them"
            )
        return self.nested_class(path, name, entry)

    def nested_base(self, path: str, base: str) -> str | None:
        """A nested class's base as the fake names it: a builtin or an ``enum`` class by its
        own name; another package's (or the SDK's own) with a note, and left out."""
        home, _, name = base.rpartition(".")
        if base == "builtins.object":
            return None
        if home == "builtins" and isinstance(getattr(builtins, name, None), type):
            return name
        if home == "enum" and isinstance(getattr(enum, name, None), type):
            return f"enum.{name}"
        self.notes.append(
            f"{path}: its base {base} is not one a fake can name; the scaffold leaves it out, "
            "so the bases differ from the real SDK's until the fake follows it"
        )
        return None

    def assignments(
        self,
        cls: SurfaceClass,
        attributes: Mapping[str, Any],
        parameters: Mapping[str, Any],
        assigned: list[str],
    ) -> str:
        text = ""
        reached = cls.instance.attributes if cls.instance is not None else {}
        for name in assigned:
            if name in reached:
                text += f"        self.{name} = {reached[name].class_name}()\n"
            elif name in parameters and parameters[name]["kind"] not in (
                "VAR_POSITIONAL",
                "VAR_KEYWORD",
            ):
                text += f"        self.{name} = {name}\n"
            elif attributes[name]["kind"] == "instance":
                text += f"        self.{name} = None  # SCAFFOLD: what the real SDK sets\n"
        for name, inner in reached.items():
            if name not in assigned:
                text += f"        self.{name} = {inner.class_name}()\n"
        return text or "        pass\n"

    def field_annotation(
        self,
        cls: SurfaceClass,
        name: str,
        attribute: Mapping[str, object],
        enums: Mapping[str, object],
    ) -> str:
        annotation = attribute.get("annotation")
        if name in enums:
            return self.enum_name(cls, name, attribute)
        if (
            attribute.get("values") is not None
            and annotation is not None
            and literal_text(str(annotation))
        ):  # a Literal, evaluated: written again from its syntax tree
            return type_expression_source(str(annotation)).removeprefix("typing.")
        return repr(annotation) if annotation is not None else "Any"

    def enum_name(self, cls: SurfaceClass, name: str, attribute: Mapping[str, object]) -> str:
        annotation = str(attribute.get("annotation") or "")
        found = [
            name
            for name in re.findall(r"([A-Za-z_]\w*)", annotation.replace("Optional", ""))
            if name != "None"  # ``Kind | None``: the Enum is Kind
        ]
        return found[-1] if found and identifier(found[-1]) else f"_{cls.name}{name.title()}"

    def enum(self, cls: SurfaceClass, name: str, attribute: Mapping[str, Any]) -> str:
        text = f"\n\nclass {self.enum_name(cls, name, attribute)}(enum.Enum):\n"
        for position, value in enumerate(attribute["values"]):
            member = re.sub(r"\W", "_", str(value)).upper() or f"VALUE_{position}"
            if not member.isidentifier() or keyword.iskeyword(member) or member[0].isdigit():
                member = f"VALUE_{position}"
            text += f"    {member} = {value!r}\n"
        return text

    def base_name(self, cls: SurfaceClass) -> str:
        base = cls.base or "builtins.Exception"
        if base.startswith(_BUILTIN):
            name = base[len(_BUILTIN) :]
            found = getattr(builtins, name, None)
            if isinstance(found, type) and issubclass(found, BaseException):
                return name
            self.notes.append(
                f"{cls.path or cls.name}: its base {base} is no builtin exception; the "
                "scaffold bases it on Exception"
            )
            return "Exception"
        if base.startswith(self.model.sdk + "."):
            return base.rsplit(".", 1)[1]
        self.notes.append(
            f"{cls.path or cls.name}: its base {base} is another package's; the scaffold bases it "
            "on Exception, so the bases differ from the real SDK's until the fake follows it"
        )
        return "Exception"

    def module_source(self, module: SurfaceModule) -> str:
        body = ""
        imports: dict[str, set[str]] = {}
        for name, home in module.aliases.items():
            imports.setdefault(home, set()).add(name)
        for cls in self.ordered(module):
            if cls.exception and cls.base and cls.base.startswith(self.model.sdk + "."):
                home, name = cls.base.rsplit(".", 1)
                if home != module.name:
                    imports.setdefault(home, set()).add(name)
            body += self.klass(cls, module)
        for function in module.functions.values():
            if function.returns is not None:
                body += self.obj(function.returns)
            body += self.function(function)
        header = (
            f'"""{module.name}: scaffolded by evalexport contract scaffold from the surface of '
        )
        header += f"{self.model.sdk} {self.model.version}. Fill in each SCAFFOLD: stub.\n\n"
        header += "Annotations are the real SDK's, as text: the contract compares them, and the\n"
        header += 'names they use need not exist in the fake."""\n'
        header += "# ruff: noqa: F821\n\n"
        header += "import enum\nimport os\nfrom typing import Any, Literal, Optional, Union\n\n"
        for home in sorted(imports):
            header += f"from {home} import {', '.join(sorted(imports[home]))}\n"
        header += f"from {self.model.sdk}._fake import default_member, default_object, record\n"
        if module.name == self.model.sdk:
            header += f"\n__version__ = {self.model.version!r}\n"
        header += "\n# Keep the imports a stub may use.\n_ = (enum, os, Any, Literal, Optional, Union, default_member, default_object, record)\n"
        return header + body

    def ordered(self, module: SurfaceModule) -> Iterator[SurfaceClass]:
        """The module's classes, each base before the classes built on it."""
        done: set[str] = set()
        classes = module.classes

        def visit(cls: SurfaceClass) -> Iterator[SurfaceClass]:
            if cls.name in done:
                return
            done.add(cls.name)
            if cls.base and cls.base.startswith(module.name + "."):
                base = cls.base.rsplit(".", 1)[1]
                if cls.base.rsplit(".", 1)[0] == module.name and base in classes:
                    yield from visit(classes[base])
            yield cls

        for cls in list(classes.values()):
            yield from visit(cls)


_FAKE = '''"""Fake-only machinery (not part of the SDK's surface): the recorder every scaffolded call
and read goes through, to ${variable} when it is set. Put per-test behaviour here too."""

import enum

from {sdk}._recording import Recorder

record = Recorder({sdk!r})


def default_member(qualified: str, member: str) -> enum.Enum:
    """A member standing for a default that is a member of the real SDK's own Enum
    (``clearml``'s ``Task.TaskTypes.training``): of an Enum that bears the same name."""
    module, _, name = qualified.rpartition(".")
    return enum.Enum(name, [(member, member)], module=module, qualname=name)[member]


def default_object(qualified: str) -> object:
    """An object standing for a default of the real SDK's own type (a sentinel such as
    pydantic's ``_HAS_DEFAULT_FACTORY_CLASS``): of a type that bears the same name."""
    module, _, name = qualified.rpartition(".")
    return type(name, (), {{"__module__": module, "__qualname__": name}})()
'''

_PYPROJECT = """[build-system]
requires = ["setuptools>=69"]
build-backend = "setuptools.build_meta"

[project]
name = "{sdk}"
dynamic = ["version"]
description = "Fake {sdk} SDK for contract tests, scaffolded from the surface of {sdk} {version}."
requires-python = ">=3.11"

[tool.setuptools.dynamic]
version = {{ attr = "{sdk}.__version__" }}

[tool.setuptools.packages.find]
where = ["src"]
"""


def write_scaffold(
    manifest: Mapping[str, object], out: Path, surface: Surface | None = None
) -> Scaffold:
    """Write an installable fake of ``manifest``'s SDK into the new directory ``out``: of
    what ``surface`` uses (of each class it reads, those reads), or the manifest's whole."""

    if problems := manifest_problems(manifest, str(manifest.get("sdk"))):
        raise ScaffoldError(
            "the manifest cannot be scaffolded (a manifest is data; nothing was written):\n"
            + "\n".join(f"  - {problem}" for problem in problems)
        )
    if surface is not None:
        entries = manifest["entries"]  # a mapping: manifest_problems says so
        assert isinstance(entries, Mapping)
        unrecorded = [path for path in surface.paths if path not in entries]
        if unrecorded:
            raise ScaffoldError(
                f"the manifest records no entry for {', '.join(unrecorded)} of the surface the "
                f"{surface.sdk} exporter declares (nothing was written): a manifest extracted "
                "with 'evalexport contract manifest' records every path of it, as 'missing' "
                "where a release lacks one"
            )
        manifest = narrowed(manifest, surface)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty; scaffold into a new directory")
    model = SurfaceModel(manifest)
    writer = _Writer(model)
    sdk = model.sdk
    source_root = out / "src"
    scaffold = Scaffold(out, source_root)
    package = source_root / sdk
    package.mkdir(parents=True)
    sources = {
        out / "pyproject.toml": _PYPROJECT.format(sdk=sdk, version=model.version),
        package / "_fake.py": _FAKE.format(sdk=sdk, variable=f"{sdk.upper()}_FAKE_CALL_LOG"),
    }
    for module in model.modules.values():
        directory = source_root.joinpath(*module.name.split("."))
        sources[directory / "__init__.py"] = writer.module_source(module)
    inside = out.resolve()
    for path, text in sources.items():
        if not path.resolve().is_relative_to(inside):  # names are checked: this never holds
            raise ScaffoldError(f"{path} is outside {out}: nothing more was written")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        scaffold.files.append(path)
    shutil.copyfile(RECORDER_SOURCE, package / "_recording.py")
    scaffold.files.append(package / "_recording.py")
    scaffold.notes = list(dict.fromkeys(writer.notes))
    return scaffold
