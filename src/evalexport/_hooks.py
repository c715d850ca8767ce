"""Calling an exporter's hooks with only the arguments they declare.

A hook written before an argument existed keeps working when one is added: the template passes
each hook the arguments every version passed positionally, and a later keyword only if the
hook's signature names it (or takes ``**kwargs``), as pluggy calls hook implementations.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["call_hook", "positional_count"]

T = TypeVar("T")


def call_hook(hook: Callable[..., T], /, *args: Any, **keywords: Any) -> T:
    """``hook(*args, **keywords)``, leaving out each keyword the hook does not declare."""
    declared, takes_any = _keywords_of(getattr(hook, "__func__", hook))
    if not takes_any:
        keywords = {name: value for name, value in keywords.items() if name in declared}
    return hook(*args, **keywords)


@functools.cache
def _keywords_of(function: Callable[..., Any]) -> tuple[frozenset[str], bool]:
    """The names a function takes by keyword, and whether it takes ``**kwargs``."""
    parameters = inspect.signature(function).parameters.values()
    takes_any = any(parameter.kind is parameter.VAR_KEYWORD for parameter in parameters)
    declared = frozenset(
        parameter.name
        for parameter in parameters
        if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
    )
    return declared, takes_any


def positional_count(hook: Callable[..., Any]) -> int:
    """How many arguments ``hook`` requires by position (``self`` of a bound method excluded):
    ``target(self, config, extra=None)`` requires one, as the 0.1.0 guide's ``target(self,
    config)`` did. A hook that takes ``*args`` counts as many as any caller gives."""
    parameters = inspect.signature(hook).parameters.values()
    if any(parameter.kind is parameter.VAR_POSITIONAL for parameter in parameters):
        return 1_000
    return sum(
        parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
        and parameter.default is parameter.empty
        for parameter in parameters
    )
