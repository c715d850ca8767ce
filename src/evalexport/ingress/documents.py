"""YAML and JSON documents read from a run, a job, a plan or a manifest, bounded (the ingress
gate, :mod:`evalexport.ingress`).

A document is data a user (or a tool) wrote, and every command reads some: one loader for each
format, here, with the same limits in a dry run and an export. YAML's aliases let 377 bytes
stand for a billion nodes (an "alias bomb"): PyYAML builds the nodes once and shares them, but
whatever walks the document (masking it, flattening it into params, writing it as JSON) walks
every alias again. So the composed document is measured before it is built: its depth, and how
many nodes its aliases add to those it writes; past a limit it is refused at once, naming the
file. JSON has no aliases but nests: a document deeper than :data:`MAX_DEPTH` is refused alike,
so no walker meets a ``RecursionError`` in one mode and not the other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from evalexport.host.files import RunFileError

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "DocumentRefused",
    "depth_problem",
    "load_json",
    "load_yaml",
    "one_of",
]

MAX_DEPTH: Final = 128
"""The deepest a document may nest. NeMo Gym's deepest rows nest 18, its configs 11 (measured
on the 985 YAML files and 2,139 example rows of nemo-gym 0.7.0's wheel)."""
MAX_ALIAS_NODES: Final = 100_000
"""How many nodes a YAML document's aliases may add to those it writes. Gym's configs use no
alias; a hand-written one that shares a block a hundred times adds a few thousand."""


class DocumentRefused(RunFileError):
    """A document that is not read: malformed, nested too deeply, or grown by its aliases
    past the limit; the message names the file and the limit."""

    def __init__(self, message: str, *, malformed: bool = False) -> None:
        super().__init__(message)
        self.malformed = malformed
        """Whether it is refused as no JSON or YAML at all (a reader with words of its own for
        that, OmegaConf's, may say it instead), not for a limit."""


def load_json(data: bytes | str, path: Path | str, *, what: str) -> Any:
    """The JSON document ``data`` (``what`` at ``path``: ``"quality summary"``), checked for its
    depth; :class:`DocumentRefused` naming the file when it is not JSON or nests deeper than
    :data:`MAX_DEPTH`."""
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, ValueError) as error:
        raise DocumentRefused(f"Malformed {what} {path}: {error}", malformed=True) from None
    except RecursionError:
        raise DocumentRefused(_too_deep(what, path)) from None
    if depth_problem(document):
        raise DocumentRefused(_too_deep(what, path))
    return document


def _too_deep(what: str, path: Path | str) -> str:
    return (
        f"Malformed {what} {path}: it nests more than {MAX_DEPTH} levels deep, more than "
        "evalexport reads (NeMo Gym's files nest at most 18)"
    )


def depth_problem(value: object) -> bool:
    """Whether ``value`` (parsed JSON or YAML) nests deeper than :data:`MAX_DEPTH`, found
    without recursion."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth > MAX_DEPTH:
                return True
            stack.extend((inner, depth + 1) for inner in item.values())
        elif isinstance(item, list):
            if depth > MAX_DEPTH:
                return True
            stack.extend((inner, depth + 1) for inner in item)
    return False


def load_yaml(data: bytes | str, path: Path | str, *, what: str, loader: Any = None) -> Any:
    """The YAML document ``data`` (``what`` at ``path``), built with PyYAML's safe loader
    (libyaml's where it is installed; ``loader``: a subclass of it) once its composed nodes
    are measured; :class:`DocumentRefused` naming the file when it is malformed, nests deeper
    than :data:`MAX_DEPTH`, or its aliases add more than :data:`MAX_ALIAS_NODES` nodes (or
    hold themselves)."""
    import yaml

    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as error:
        raise DocumentRefused(f"Cannot read {what} {path}: {error}", malformed=True) from None
    chosen = loader or getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    reader = chosen(text)
    try:
        node = reader.get_single_node()
        if node is None:
            return None
        if (problem := _growth_problem(node)) is not None:
            raise DocumentRefused(f"{what.capitalize()} {path} is refused: {problem}")
        return reader.construct_document(node)
    except yaml.YAMLError as error:
        raise DocumentRefused(f"Malformed {what} {path}: {error}", malformed=True) from None
    except RecursionError:
        raise DocumentRefused(_too_deep(what, path)) from None
    finally:
        reader.dispose()


def _children(node: Any) -> list[Any]:
    import yaml

    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _growth_problem(root: Any) -> str | None:
    """Why the composed document ``root`` is refused (its depth, what its aliases add, an
    alias that holds itself), or ``None``: each node measured once, its size as its aliases
    expand it (memoized), without recursion."""
    expanded: dict[int, int] = {}
    depth: dict[int, int] = {}
    visiting: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            visiting.discard(key)
            children = _children(node)
            expanded[key] = 1 + sum(expanded[id(child)] for child in children)
            depth[key] = 1 + max((depth[id(child)] for child in children), default=0)
            if depth[key] > MAX_DEPTH:
                return f"it nests more than {MAX_DEPTH} levels deep"
            if expanded[key] - len(expanded) > MAX_ALIAS_NODES:
                return (
                    f"its aliases (*name) expand it past {MAX_ALIAS_NODES:,} nodes more than it "
                    "writes (a YAML alias bomb?); write the repeated parts out, or share fewer"
                )
            continue
        if key in expanded:
            continue
        if key in visiting:
            return "an alias (*name) holds the node it names: the document is endless"
        visiting.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in expanded)
        if len(visiting) > MAX_DEPTH:
            return f"it nests more than {MAX_DEPTH} levels deep"
    return None


def one_of(value: object, names: frozenset[str]) -> bool:
    """Whether a value a document holds is one of ``names`` (a role, a kind, a status): only
    text is; a list or an object never is, and is no set member to look up."""
    return isinstance(value, str) and value in names
