"""Hydra-style ``+key=value`` overrides (SPEC §3.2).

``+meta.source=manual`` builds ``{"meta": {"source": "manual"}}``; values parse as YAML
scalars and flow collections (``+tags=[a,b]``, ``+wait=false``, ``+timeout=600``). Dates and
times stay strings, as Hydra keeps them, so every value has a JSON form.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import Any

import yaml

from evalexport.masking import shown_override

__all__ = ["OverrideError", "parse_overrides"]

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*")


class OverrideError(ValueError):
    """An override is malformed or conflicts with another one (exit code 2)."""


class _OverrideLoader(yaml.SafeLoader):
    """YAML's safe loader without timestamps, which have no JSON form."""


_OverrideLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def parse_value(text: str) -> Any:
    """A ``+key=value`` value as YAML reads a scalar or a flow list or mapping; raises
    :class:`OverrideError`."""
    if text == "":
        return ""
    try:
        return yaml.load(text, Loader=_OverrideLoader)
    except yaml.YAMLError as error:
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise OverrideError(f"cannot parse the value: {problem}") from None


def parse_overrides(
    tokens: Iterable[str], text_keys: Collection[str] = (), verbatim_keys: Collection[str] = ()
) -> dict[str, object]:
    """Turn ``+a.b=1``-style tokens into a nested mapping, refusing duplicates by name.

    Options in ``text_keys`` are text: ``+agent_version=1.10`` stays ``"1.10"`` rather than
    becoming the number 1.1 (a YAML-quoted value is still unquoted). Options in
    ``verbatim_keys`` (paths) are their text exactly as given, never parsed.
    """
    options: dict[str, object] = {}
    for raw_token in tokens:
        body = raw_token[1:] if raw_token.startswith("+") else raw_token
        key, separator, raw_value = body.partition("=")
        token = shown_override(raw_token)
        if not separator:
            raise OverrideError(f"override {token!r} has no '='; write +key=value")
        if not _KEY.fullmatch(key):
            raise OverrideError(
                f"override {token!r} has an invalid key {key!r}; keys are dotted names like "
                "+meta.source"
            )
        if key in verbatim_keys:
            _assign(options, key.split("."), raw_value, token)
            continue
        try:
            value = parse_value(raw_value)
        except OverrideError as error:
            if key not in text_keys:
                raise OverrideError(f"override {token!r}: {error}") from None
            value = raw_value
        if key in text_keys and not isinstance(value, str):
            value = raw_value
        _assign(options, key.split("."), value, token)
    return options


def _assign(options: dict[str, object], path: list[str], value: object, token: str) -> None:
    node = options
    for depth, part in enumerate(path[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            prefix = ".".join(path[: depth + 1])
            raise OverrideError(f"override {token!r} conflicts with +{prefix}, which is a value")
        node = child
    last = path[-1]
    if last in node:
        raise OverrideError(f"option +{'.'.join(path)} is given more than once ({token!r})")
    node[last] = value
