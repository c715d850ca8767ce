"""The exporter hook set, and its check when an exporter class is made.

An exporter is a subclass of :class:`~evalexport.exporters.base.Exporter` (or of
:class:`~evalexport.exporters.isolated.IsolatedExporter`) that defines some of a small set of
hooks. Each hook is called with only the arguments it declares (:func:`call_hook`), as pluggy
calls hook implementations, so an argument added to a hook later never breaks an exporter
written before it.

Because a hook is found by its name, a misspelled one would never be called, and an argument a
hook is never called with would never arrive. Both are refused when the class is made, as
pluggy refuses them when a plugin is registered: :func:`verify` raises
:class:`ExporterDefinitionError` naming the class, the hook and the signature it expects. A
method whose name is close to a hook's but that is a helper of the class's own says so with
:func:`helper`.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any, Final, TypeVar

__all__ = [
    "ExporterDefinitionError",
    "call_hook",
    "helper",
    "is_helper",
    "takes_also",
    "verify",
]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

_HELPER: Final = "__evalexport_helper__"
_ALSO: Final = "__evalexport_takes_also__"
_CLOSE: Final = 0.85
"""How alike two names must be (:func:`difflib.SequenceMatcher.ratio`) to be taken for a
misspelling: ``check_input`` and ``check_inputs`` are (0.96), ``target`` and ``target_url``
are not (0.75)."""


class ExporterDefinitionError(TypeError):
    """An exporter class defines a hook the template would never call as written: a name
    close to a hook's, or an argument the hook is never called with."""


def takes_also(*names: str) -> Callable[[F], F]:
    """Mark a template method: its hook may also declare ``names``, keyword arguments it is
    called with when declared (``prepared``), which its own signature leaves out so that a
    subclass that does not declare them still type-checks."""

    def mark(function: F) -> F:
        setattr(function, _ALSO, names)
        return function

    return mark


def helper(function: F) -> F:
    """Mark a method as a helper of the exporter's own, not a hook, so a name close to a
    hook's (``check_input`` beside ``check_inputs``) is not refused as a misspelling."""
    setattr(function, _HELPER, True)
    return function


def is_helper(value: object) -> bool:
    """Whether ``value`` (a function, or a static or class method) was marked with
    :func:`helper`."""
    return bool(getattr(getattr(value, "__func__", value), _HELPER, False))


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


def verify(
    cls: type[Any],
    template: type[Any],
    hooks: Iterable[str],
    accepted: Iterable[str] = (),
) -> None:
    """Refuse, with :class:`ExporterDefinitionError`, what ``cls`` defines that the template
    would not call as written.

    ``template`` is the template class whose methods are the hooks' specifications, ``hooks``
    the names of its hooks and ``accepted`` the names of earlier guides' hooks that
    :mod:`.legacy` adapts (checked for nothing but their presence).
    """
    hooks = tuple(hooks)
    known = (*hooks, *accepted)
    where = f"{cls.__module__}.{cls.__qualname__}"
    for name, value in cls.__dict__.items():
        if name.startswith("__") or name in accepted or is_helper(value):
            continue
        if name in hooks:
            spec = inspect.getattr_static(template, name, None)
            if _is_function(spec) and _is_function(value):
                _check_arguments(where, name, _function(spec), _function(value))
            continue
        if hasattr(template, name):
            if name.startswith("_"):
                raise ExporterDefinitionError(
                    f"{where}.{name} is a step of the exporter template, not a hook; "
                    f"define the template's hooks instead: {', '.join(hooks)}"
                )
            continue  # the template's own helpers (failed, parse_config): not hooks
        close = difflib.get_close_matches(name, known, n=1, cutoff=_CLOSE)
        if close:
            raise ExporterDefinitionError(
                f"{where}.{name} is not a hook of an evalexport exporter, so it would never be "
                f"called; did you mean {_shown(template, close[0])}? If {name} is a helper of "
                f"the class's own, decorate it with @evalexport.exporters.helper."
            )


def _check_arguments(
    where: str, name: str, spec: Callable[..., Any], implementation: Callable[..., Any]
) -> None:
    """Every argument of ``implementation`` is one the hook is called with, and those it takes
    by position come in the hook's order."""
    wanted = _parameters(spec)
    given = _parameters(implementation)
    known = {w.name for w in wanted} | set(getattr(spec, _ALSO, ()))
    unknown = [p.name for p in given if p.name not in known]
    positional = [p.name for p in given if p.kind in _POSITIONAL and p.default is p.empty]
    order = [p.name for p in wanted if p.kind in _POSITIONAL and p.default is p.empty]
    if unknown:
        listed = ", ".join(repr(item) for item in unknown)
        raise ExporterDefinitionError(
            f"{where}.{name} declares {listed}, which the hook {name} is never called with; "
            f"its signature is {name}{_signature_text(spec)}{_also_text(spec)}. Declare only "
            "those arguments (each hook is called with the arguments it declares)."
        )
    if positional != order[: len(positional)]:
        raise ExporterDefinitionError(
            f"{where}.{name} takes ({', '.join(positional)}) by position, but the hook {name} "
            f"is called with ({', '.join(order)}); its signature is {name}"
            f"{_signature_text(spec)}."
        )


_POSITIONAL: Final = (
    inspect.Parameter.POSITIONAL_ONLY,
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
)


def _parameters(function: Callable[..., Any]) -> list[inspect.Parameter]:
    """The named parameters of a method, ``self`` and ``cls`` left out."""
    parameters = list(inspect.signature(function).parameters.values())
    if parameters and parameters[0].name in ("self", "cls"):
        parameters = parameters[1:]
    return [p for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _is_function(value: object) -> bool:
    return inspect.isfunction(value) or isinstance(value, staticmethod | classmethod)


def _function(value: object) -> Callable[..., Any]:
    function = value.__func__ if isinstance(value, staticmethod | classmethod) else value
    assert callable(function)
    return function


def _signature_text(function: Callable[..., Any]) -> str:
    """``(self, run, config, *, fingerprint)``: a hook's signature as a plugin writes it."""
    signature = inspect.signature(function)
    return str(signature.replace(return_annotation=inspect.Signature.empty)).replace("'", "")


def _also_text(spec: Callable[..., Any]) -> str:
    also = getattr(spec, _ALSO, ())
    return f", and it may also declare {', '.join(also)}" if also else ""


def _shown(template: type[Any], name: str) -> str:
    """A hook as a plugin author recognizes it: a method with its signature, else its name."""
    spec = inspect.getattr_static(template, name, None)
    if _is_function(spec):
        return f"{name}{_signature_text(_function(spec))}"
    return name
