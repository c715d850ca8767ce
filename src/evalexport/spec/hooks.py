"""How the spec's hooks are called, and checked when an exporter class is made.

A hook is called with the arguments it declares, by name, as pluggy calls a hook
implementation (:func:`call_hook`): ``deliver(self, prepared, target)`` is called with those
two, and an argument added to a hook later never breaks an exporter written before it.

Because a hook is found by its name, a misspelled one would never be called, and an argument a
hook is never called with would never arrive. Both are refused when the class is made, as
pluggy's ``_verify_hook`` refuses them when a plugin is registered: :func:`verify` raises
:class:`ExporterDefinitionError` naming the class, the hook and the signature it expects. A
method whose name is close to a hook's but that is a helper of the class's own says so with
:func:`helper`.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Final, TypeVar

__all__ = [
    "ExporterDefinitionError",
    "call_hook",
    "check_hook_arguments",
    "declares",
    "helper",
    "is_helper",
    "signature_text",
    "verify",
]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., object])

_HELPER: Final = "__evalexport_helper__"
_CLOSE: Final = 0.85
"""How alike two names must be (:func:`difflib.SequenceMatcher.ratio`) to be taken for a
misspelling: ``reed`` and ``read`` are not (0.75), ``deliverr`` and ``deliver`` are (0.93)."""


class ExporterDefinitionError(TypeError):
    """An exporter class defines a hook the pipeline would never call as written: a name close
    to a hook's, an argument the hook is never called with, or one it cannot take by name."""


def helper(function: F) -> F:
    """Mark a method as a helper of the exporter's own, not a hook, so a name close to a
    hook's (``reader`` beside ``read``) is not refused as a misspelling."""
    setattr(function, _HELPER, True)
    return function


def is_helper(value: object) -> bool:
    """Whether ``value`` (a function, or a static or class method) was marked with
    :func:`helper`."""
    return bool(getattr(getattr(value, "__func__", value), _HELPER, False))


def call_hook(hook: Callable[..., T], /, **arguments: object) -> T:
    """``hook`` called with those of ``arguments`` it declares, each by name."""
    declared = _declared(getattr(hook, "__func__", hook), inspect.ismethod(hook))
    return hook(**{name: arguments[name] for name in declared if name in arguments})


def declares(hook: Callable[..., object], name: str) -> bool:
    """Whether ``hook`` (a bound method or a function) declares the argument ``name``."""
    return name in _declared(getattr(hook, "__func__", hook), inspect.ismethod(hook))


@functools.cache
def _declared(function: Callable[..., object], bound: bool) -> tuple[str, ...]:
    """The names ``function`` takes (its first, ``self``, left out when it is bound)."""
    names = list(inspect.signature(function).parameters)
    return tuple(names[1:] if bound else names)


def signature_text(name: str, arguments: Iterable[str]) -> str:
    """``deliver(self, prepared, target)``: a hook's signature as a plugin writes it."""
    return f"{name}({', '.join(('self', *arguments))})"


def check_hook_arguments(
    where: str, name: str, implementation: Callable[..., object], arguments: tuple[str, ...]
) -> None:
    """Every parameter of ``implementation`` (a method) is one of ``arguments``, which the hook
    ``name`` is called with by name; none is positional-only, ``*args`` or ``**kwargs``."""
    parameters = list(inspect.signature(implementation).parameters.values())[1:]  # self
    expected = signature_text(name, arguments)
    unknown = [p.name for p in parameters if p.name not in arguments and p.kind in _NAMED]
    if unknown:
        listed = ", ".join(repr(item) for item in unknown)
        close = [
            f"{item!r} is {match[0]!r} misspelled?"
            for item in unknown
            if (match := difflib.get_close_matches(item, arguments, n=1, cutoff=0.75))
        ]
        raise ExporterDefinitionError(
            f"{where}.{name} declares {listed}, which the hook {name} is never called with"
            f"{' (' + '; '.join(close) + ')' if close else ''}; it is called by name with any "
            f"of {expected}. Declare only those you use."
        )
    unnamed = [p for p in parameters if p.kind not in _NAMED]
    if unnamed:
        shown = ", ".join(
            f"*{p.name}"
            if p.kind is p.VAR_POSITIONAL
            else f"**{p.name}"
            if p.kind is p.VAR_KEYWORD
            else f"{p.name} (positional-only)"
            for p in unnamed
        )
        raise ExporterDefinitionError(
            f"{where}.{name} takes {shown}, but a hook is called by name with the arguments "
            f"it declares: {expected}. Name each argument you use."
        )


_NAMED: Final = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def verify(
    cls: type,
    spec: type,
    *,
    hooks: tuple[str, ...],
    declared: tuple[str, ...],
    helpers: frozenset[str],
    accepted: Iterable[str] = (),
    replaced: Mapping[str, str] | None = None,
) -> None:
    """Refuse, with :class:`ExporterDefinitionError`, what ``cls`` defines that the pipeline
    would not call as written.

    ``spec`` is the spec class, whose methods named ``hooks`` are the hooks' specifications;
    ``declared`` are the values a class declares, ``helpers`` the spec's own methods, which a
    class may not replace; ``accepted`` the names of earlier guides' forms that :mod:`.compat`
    adapted (checked there), and ``replaced`` each earlier hook's name and the hook that
    replaced it, told to a name close to an earlier one.
    """
    replaced = replaced or {}
    accepted = frozenset(accepted)
    where = f"{cls.__module__}.{cls.__qualname__}"
    for name, value in cls.__dict__.items():
        if name.startswith("__") or name.startswith("_abc") or name in accepted:
            continue
        if is_helper(value):
            continue
        if name in hooks:
            if not inspect.isfunction(value):
                raise ExporterDefinitionError(
                    f"{where}.{name} is {value!r}, but {name} is a hook: define it as a method, "
                    f"{signature_text(name, _hook_arguments(spec, name))}"
                )
            check_hook_arguments(where, name, value, _hook_arguments(spec, name))
            continue
        if name in helpers:
            raise ExporterDefinitionError(
                f"{where}.{name} replaces the spec's own helper {name}, which exporters call "
                "and never define; give your method another name"
            )
        if name in declared:
            continue
        close = difflib.get_close_matches(name, (*hooks, *declared, *replaced), 1, _CLOSE)
        if close:
            raise ExporterDefinitionError(
                f"{where}.{name} is not a hook of an evalexport exporter, so it would never be "
                f"called; did you mean {_shown(spec, close[0], hooks, replaced)}? If "
                f"{name} is a helper of the class's own, decorate it with "
                "@evalexport.exporters.helper."
            )


def _hook_arguments(spec: type, name: str) -> tuple[str, ...]:
    """The arguments the spec's hook ``name`` is called with."""
    function = inspect.getattr_static(spec, name)
    return tuple(inspect.signature(function).parameters)[1:]


def _shown(spec: type, name: str, hooks: tuple[str, ...], replaced: Mapping[str, str]) -> str:
    """A hook as a plugin author recognizes it: a method with its signature, else its name; an
    earlier guide's name is shown with the hook that replaced it."""
    if name in replaced:
        new = replaced[name]
        if new in hooks:
            return f"{signature_text(new, _hook_arguments(spec, new))} ({name} is its earlier name)"
        return f"{new} ({name} is its earlier name)"
    if name in hooks:
        return signature_text(name, _hook_arguments(spec, name))
    return name
