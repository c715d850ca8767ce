"""What ``evalexport contract scaffold`` accepts of a manifest: data, never code.

A scaffold writes a manifest's names into Python source and its module paths into file paths,
so a manifest is checked whole before anything is written (:func:`manifest_problems`): every
name an identifier that is no keyword, every path inside the SDK's own package, every kind one
the extractor writes. Text from a manifest never becomes code as it is: a default or a
constant is parsed into the value it writes (:func:`literal_source`, the ``repr`` of that
value), a ``Literal`` annotation is parsed and written again from its syntax tree
(:func:`type_expression_source`), and a builtin type a default names is one of a few known
types (:func:`builtin_type_name`). A manifest from ``--manifest FILE`` may come from anywhere;
one the extractor wrote passes unchanged.
"""

from __future__ import annotations

import ast
import keyword
import math
import re
from collections.abc import Mapping
from typing import Any, Final

from evalexport.ingress import one_of

__all__ = [
    "MAX_DEPTH",
    "NotALiteral",
    "builtin_type_name",
    "identifier",
    "literal_source",
    "literal_text",
    "manifest_problems",
    "type_expression_source",
    "version_problem",
]

ENTRY_KINDS: Final = frozenset({"callable", "class", "exception", "missing"})
ATTRIBUTE_KINDS: Final = frozenset({"class", "constant", "field", "instance", "method", "property"})
PARAMETER_KINDS: Final = frozenset(
    {"POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD", "VAR_POSITIONAL", "KEYWORD_ONLY", "VAR_KEYWORD"}
)
MAX_DEPTH: Final = 64
"""How deeply a manifest may nest (the extractor's are 5 deep): deeper is refused, not read."""
_VERSION: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+!_-]{0,63}$")
_NAMES_IN_LITERALS: Final = frozenset(
    {"None", "True", "False", "frozenset", "Literal", "Optional", "Union", "typing"}
)
_LISTED: Final = 20


def identifier(name: object) -> bool:
    """Whether ``name`` may be written into Python source as a name: an identifier, no keyword."""
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)


def _plain_scalar(value: object) -> bool:
    """A string, a whole or finite number, a boolean or ``None``: what ``repr`` writes back."""
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, str | int | bool)


def literal_text(text: str) -> bool:
    """Whether ``text`` is an expression of literals only (numbers, strings, bytes, ``None``,
    booleans, tuples, lists, sets, dicts, ``frozenset(...)``, ``Literal[...]`` and the
    ``typing`` names that wrap one), so that pasting it into source runs nothing."""
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not (
                isinstance(node.func, ast.Name)
                and node.func.id == "frozenset"
                and len(node.args) <= 1
                and not node.keywords
            ):
                return False
        elif isinstance(node, ast.Name):
            if node.id not in _NAMES_IN_LITERALS:
                return False
        elif isinstance(node, ast.Attribute):
            if not (
                isinstance(node.value, ast.Name)
                and node.value.id == "typing"
                and not node.attr.startswith("_")
            ):
                return False
        elif isinstance(node, ast.BinOp):
            if not isinstance(node.op, ast.Add | ast.Sub | ast.BitOr):
                return False
        elif not isinstance(
            node,
            ast.Expression
            | ast.Constant
            | ast.Tuple
            | ast.List
            | ast.Set
            | ast.Dict
            | ast.Subscript
            | ast.UnaryOp
            | ast.USub
            | ast.UAdd
            | ast.Add
            | ast.Sub
            | ast.BitOr
            | ast.Load,
        ):
            return False
    return True


class NotALiteral(ValueError):
    """A manifest's text that is no expression of literals alone."""


_BUILTIN_TYPES: Final = frozenset(
    {"dict", "list", "set", "tuple", "frozenset", "object", "str", "bytes", "int", "float",
     "bool", "complex", "bytearray"}
)  # fmt: skip


def builtin_type_name(text: str) -> str | None:
    """The builtin type a default written ``<builtins.NAME>`` is an instance of, when ``NAME``
    is one of a few plain types (its empty instance, ``NAME()``, is the fake's default), else
    ``None``."""
    return text if text in _BUILTIN_TYPES else None


def _value(node: ast.AST) -> object:
    """The value of a literal's syntax tree, built here from its parts (never evaluated)."""
    if isinstance(node, ast.Expression):
        return _value(node.body)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[node.id]
    if isinstance(node, ast.Tuple):
        return tuple(_value(item) for item in node.elts)
    if isinstance(node, ast.List):
        return [_value(item) for item in node.elts]
    if isinstance(node, ast.Set):
        return {_value(item) for item in node.elts}
    if isinstance(node, ast.Dict) and all(key is not None for key in node.keys):
        return {_value(key): _value(item) for key, item in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _value(node.operand)
        if isinstance(operand, int | float | complex) and not isinstance(operand, bool):
            return -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        left, right = _value(node.left), _value(node.right)
        if isinstance(left, int | float) and isinstance(right, complex):  # 1+2j
            return left + right if isinstance(node.op, ast.Add) else left - right
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "frozenset"
        and not node.keywords
        and len(node.args) <= 1
    ):
        return frozenset(_value(node.args[0]) if node.args else ())  # type: ignore[call-overload]
    raise NotALiteral(ast.dump(node)[:80])


def literal_source(text: str) -> str:
    """Python source for the value the literal ``text`` writes: the text parsed into a value
    (never run) and that value's ``repr``, so nothing of the text but its value reaches the
    source. :class:`NotALiteral` when it is no expression of literals alone."""
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise NotALiteral(str(error)) from None
    try:
        value = _value(tree)
    except (RecursionError, TypeError) as error:
        raise NotALiteral(str(error)) from None
    return _source(value)


def _source(value: object) -> str:
    """``repr(value)``, but for what ``repr`` writes as no literal (an infinite float)."""
    if isinstance(value, float) and value != value:
        return 'float("nan")'
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return 'float("inf")' if value > 0 else 'float("-inf")'
    if isinstance(value, tuple):
        items = ", ".join(_source(item) for item in value)
        return f"({items},)" if len(value) == 1 else f"({items})"
    if isinstance(value, list):
        return "[" + ", ".join(_source(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = ", ".join(f"{_source(key)}: {_source(item)}" for key, item in value.items())
        return "{" + pairs + "}"
    return repr(value)


def type_expression_source(text: str) -> str:
    """A ``Literal`` annotation's source, written again from its syntax tree once
    :func:`literal_text` accepted it (the text itself is never pasted)."""
    if not literal_text(text):
        raise NotALiteral(text[:80])
    return ast.unparse(ast.parse(text, mode="eval"))


def version_problem(version: object) -> str | None:
    """Why ``version`` (an SDK's ``__version__``, a manifest's) cannot name a manifest file
    (``contracts/<sdk>/<version>.json``), or ``None``: a version is one name of letters,
    digits and ``.+!_-``, as PEP 440's are."""
    if isinstance(version, str) and _VERSION.match(version):
        return None
    return f"version {version!r} is not a version (such as 2.22.1), so it names no manifest file"


def _dotted_name(text: object) -> bool:
    return isinstance(text, str) and all(identifier(part) for part in text.split("."))


def _depth_problem(value: object) -> str | None:
    """Why ``value`` nests too deeply to read, found without recursion."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"it nests more than {MAX_DEPTH} levels deep; a manifest nests 5"
        if isinstance(item, Mapping):
            stack.extend((inner, depth + 1) for inner in item.values())
        elif isinstance(item, list):
            stack.extend((inner, depth + 1) for inner in item)
    return None


def _path_problems(path: object, sdk: str) -> list[str]:
    if not isinstance(path, str):
        return [f"entry {path!r}: its path is not text"]
    segments = path.replace("()", ".()").split(".")
    if segments[0] != sdk:
        return [f"entry {path!r}: not in the {sdk} package (a path starts with {sdk}.)"]
    wrong = [segment for segment in segments if segment != "()" and not identifier(segment)]
    if wrong:
        return [f"entry {path!r}: {wrong[0]!r} is not a Python name"]
    return []


def _parameter_problems(path: str, parameters: object) -> list[str]:
    if parameters is None:
        return []
    if not isinstance(parameters, list):
        return [f"entry {path!r}: parameters must be a list"]
    problems = []
    for parameter in parameters:
        if not isinstance(parameter, Mapping):
            problems.append(f"entry {path!r}: a parameter must be a mapping")
            continue
        name = parameter.get("name")
        if not identifier(name):
            problems.append(f"entry {path!r}: parameter name {name!r} is not a Python name")
        if not one_of(parameter.get("kind"), PARAMETER_KINDS):
            problems.append(
                f"entry {path!r}: parameter {name!r} has kind {parameter.get('kind')!r} "
                f"(one of {', '.join(sorted(PARAMETER_KINDS))})"
            )
        for key in ("annotation", "default"):
            if parameter.get(key) is not None and not isinstance(parameter.get(key), str):
                problems.append(f"entry {path!r}: parameter {name!r}'s {key} must be text")
        if parameter.get("has_default") not in (None, True, False):
            problems.append(
                f"entry {path!r}: parameter {name!r}'s has_default must be true or false"
            )
        elif parameter.get("has_default") and "default" not in parameter:
            problems.append(
                f"entry {path!r}: parameter {name!r} has a default the manifest does not record"
            )
    return problems


def _attribute_problems(path: str, attributes: object) -> list[str]:
    if attributes is None:
        return []
    if not isinstance(attributes, Mapping):
        return [f"entry {path!r}: attributes must be a mapping"]
    problems = []
    for name, attribute in attributes.items():
        if not identifier(name):
            problems.append(f"entry {path!r}: attribute {name!r} is not a Python name")
        if not isinstance(attribute, Mapping):
            problems.append(f"entry {path!r}: attribute {name!r} must be a mapping")
            continue
        if not one_of(attribute.get("kind"), ATTRIBUTE_KINDS):
            problems.append(
                f"entry {path!r}: attribute {name!r} has kind {attribute.get('kind')!r} "
                f"(one of {', '.join(sorted(ATTRIBUTE_KINDS))})"
            )
        values = attribute.get("values")
        if values is not None and not isinstance(values, list):
            problems.append(f"entry {path!r}: attribute {name!r}'s values must be a list")
        problems += _class_problems(f"entry {path!r}: attribute {name!r}'s", attribute)
    return problems


def _class_problems(whose: str, shape: Mapping[str, Any]) -> list[str]:
    """What is wrong with the ``bases`` and ``members`` of a class (an entry, or a class
    defined in one), each written into the fake's source: class paths, and Python names
    mapped to plain values."""
    problems = []
    members = shape.get("members")
    if members is not None and (
        not isinstance(members, Mapping)
        or not all(identifier(key) for key in members)
        or not all(_plain_scalar(value) for value in members.values())
    ):
        problems.append(
            f"{whose} members must map Python names to plain values (strings, numbers, "
            "booleans, null)"
        )
    bases = shape.get("bases")
    if bases is not None and (
        not isinstance(bases, list) or not all(_dotted_name(base) for base in bases)
    ):
        problems.append(f"{whose} bases must be a list of class paths (builtins.Exception)")
    return problems


def manifest_problems(manifest: object, sdk: str) -> list[str]:
    """Every reason ``manifest`` cannot be scaffolded for ``sdk`` (at most 20 listed, then how
    many more), or ``[]``."""
    if not isinstance(manifest, Mapping):
        return [f"a manifest is a mapping, not {type(manifest).__name__}"]
    if problem := _depth_problem(manifest):
        return [problem]
    problems: list[str] = []
    if manifest.get("sdk") != sdk:
        problems.append(f"it is the manifest of {manifest.get('sdk')!r}, not {sdk}")
    if not identifier(sdk):
        problems.append(f"{sdk!r} is not a Python package name")
    if (problem := version_problem(manifest.get("version"))) is not None:
        problems.append(problem)
    entries = manifest.get("entries")
    if not isinstance(entries, Mapping):
        return [*problems, f"entries must be a mapping of paths, not {type(entries).__name__}"]
    for path, entry in entries.items():
        found = _path_problems(path, sdk)
        if not isinstance(entry, Mapping):
            found.append(f"entry {path!r}: must be a mapping, not {type(entry).__name__}")
        elif not one_of(entry.get("kind"), ENTRY_KINDS):
            found.append(
                f"entry {path!r}: kind {entry.get('kind')!r} is not one of "
                f"{', '.join(sorted(ENTRY_KINDS))}"
            )
        else:
            found += _parameter_problems(str(path), entry.get("parameters"))
            found += _attribute_problems(str(path), entry.get("attributes"))
            found += _class_problems(f"entry {path!r}:", entry)
            for key in ("returns",):
                if entry.get(key) is not None and not isinstance(entry.get(key), str):
                    found.append(f"entry {path!r}: {key} must be text")
        problems += found
    if len(problems) > _LISTED:
        return [*problems[:_LISTED], f"... and {len(problems) - _LISTED} more"]
    return problems
