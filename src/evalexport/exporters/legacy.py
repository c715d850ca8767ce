"""Plugins written from earlier guides keep exporting: their forms, adapted to today's hooks.

Everything that keeps an earlier guide's plugin working is here, and nowhere else: the pipeline
calls only today's hooks (:data:`evalexport.exporters.base.HOOKS`). When an exporter class is
made, :func:`adapt` finds each earlier form it defines, warns with a ``DeprecationWarning``
naming the form that replaces it (:data:`DEPRECATED_HOOKS`), and installs today's hook in its
place, calling the plugin's own code:

========================================  =================================================
plugin API 1 (evalexport 0.1.0)           today
========================================  =================================================
``target(self, config)``                  ``target(self, run, config)``
``_export`` returning ``details["run_id"]``  ``ExportResult.succeeded(..., run_id=...)``
========================================  =================================================

========================================  =================================================
plugin API 2 (evalexport 0.2.0)           today (plugin API 3)
========================================  =================================================
``guards_exports = True``                 ``kind = "tracking"``
``uploads_directory = True``              ``kind = "directory"``
``requirements``, ``time_limit``,         ``worker(self, config) -> WorkerSpec``
``worker_environment``, ``local_store``
``receipt_keys``                          the worker returns ``receipts={...}``
``secrets_the_sdk_may_find``              ``worker_secrets(self, config)``
========================================  =================================================

The template classes inherit :class:`LegacyHooks` (and the isolated one
:class:`LegacyWorkerHooks`), so a plugin that reads one of these names, or calls
``super().requirements(config)``, still finds it.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeVar

from evalexport.exporters.hooks import ExporterDefinitionError, call_hook
from evalexport.exporters.worker_spec import DEFAULT_TIME_LIMIT, WorkerSpec

if TYPE_CHECKING:
    from evalexport.results import ExportResult
    from evalexport.run import RunArtifacts
    from evalexport.workers.protocol import WorkerResult

__all__ = [
    "ADAPTED_HOOKS",
    "DEPRECATED_HOOKS",
    "LegacyHooks",
    "LegacyWorkerHooks",
    "adapt",
    "read_back_from_details",
]

logger = logging.getLogger("evalexport.worker")

T = TypeVar("T")

DEPRECATED_HOOKS: Final = {
    "target(self, config)": "define target(self, run, config) instead (plugin API 1, the "
    "0.1.0 guide, took the config only)",
    'details["run_id"]': "return ExportResult.succeeded(..., run_id=...) instead: run_id is a "
    "field of the result (plugin API 1, the 0.1.0 guide, put it in details)",
    "guards_exports": 'set kind = "tracking" instead (one kind replaces plugin API 2\'s flags)',
    "uploads_directory": 'set kind = "directory" instead (one kind replaces plugin API 2\'s flags)',
    "requirements": "define worker(self, config) -> WorkerSpec(requirements=...) instead (one "
    "typed value describes the worker)",
    "time_limit": "define worker(self, config) -> WorkerSpec(..., time_limit=...) instead (one "
    "typed value describes the worker)",
    "worker_environment": "define worker(self, config) -> WorkerSpec(..., environment=...) "
    "instead (one typed value describes the worker)",
    "local_store": "define worker(self, config) -> WorkerSpec(..., local_store=...) instead "
    "(one typed value describes the worker)",
    "receipt_keys": "return receipts={...} from the worker body instead "
    "(protocol.result(..., receipts={...})): they reach ExportResult.receipts unmasked",
    "secrets_the_sdk_may_find": "return such secrets from worker_secrets(config) instead: "
    "the worker receives them and they are scrubbed from what it reports",
}
"""Each earlier form still honoured, and the form that replaces it (docs/plugins.md)."""

_RUN_ID_FORM: Final = DEPRECATED_HOOKS['details["run_id"]']

_WORKER_HOOKS: Final = ("requirements", "time_limit", "worker_environment", "local_store")
ADAPTED_HOOKS: Final = (
    "guards_exports",
    "uploads_directory",
    *_WORKER_HOOKS,
    "receipt_keys",
    "secrets_the_sdk_may_find",
)
"""Names of earlier hooks a class may define: :func:`adapt` turns them into today's."""


class _KindFlag:
    """``guards_exports`` / ``uploads_directory`` read off ``kind``, for code that reads them."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __get__(self, instance: object, owner: type[Any]) -> bool:
        return bool(owner.kind == self.kind)


class LegacyHooks:
    """What plugin API 1 and 2 could read on an exporter, kept readable."""

    guards_exports: ClassVar[bool] = _KindFlag("tracking")  # type: ignore[assignment]
    """Deprecated: ``kind == "tracking"``."""
    uploads_directory: ClassVar[bool] = _KindFlag("directory")  # type: ignore[assignment]
    """Deprecated: ``kind == "directory"``."""

    def target_of(self, run: RunArtifacts, config: Any) -> str:
        """Deprecated: :meth:`~evalexport.exporters.base.Exporter.target` (which every
        exporter now takes as ``target(run, config)``)."""
        target: Callable[[RunArtifacts, Any], str] = getattr(self, "target")  # noqa: B009
        return target(run, config)


class LegacyWorkerHooks:
    """Plugin API 2's worker hooks, with their defaults, for plugins that define them or call
    them with ``super()``; today's ``worker(config)`` is built from them (:func:`adapt`)."""

    receipt_keys: ClassVar[frozenset[str]] = frozenset()
    """Deprecated: keys of ``details`` shown as receipts."""

    def requirements(self, config: Any) -> list[str]:
        """Deprecated: the SDK's requirements (``+requirement=``, one or a list)."""
        requirement = config.requirement
        return [requirement] if isinstance(requirement, str) else list(requirement)

    def time_limit(self, config: Any) -> float:
        """Deprecated: seconds before the worker is killed."""
        return DEFAULT_TIME_LIMIT

    def worker_environment(self, config: Any) -> dict[str, str]:
        """Deprecated: environment variables (no secrets) for the worker."""
        return {}

    def local_store(self, config: Any) -> Path | None:
        """Deprecated: a local store file workers write into one at a time."""
        return None

    def secrets_the_sdk_may_find(self, config: Any) -> list[str]:
        """Deprecated: secrets to scrub from what the worker reports."""
        return []


def adapt(cls: type[Any]) -> None:
    """Turn the earlier forms ``cls`` defines itself into today's hooks, warning of each."""
    own = cls.__dict__
    deprecated: list[str] = []
    if "guards_exports" in own or "uploads_directory" in own:
        deprecated.extend(name for name in ("guards_exports", "uploads_directory") if name in own)
        _adapt_flags(cls, bool(own.get("guards_exports")), bool(own.get("uploads_directory")))
    target = own.get("target")
    if inspect.isfunction(target) and _required_positionals(target) == 1:  # (self, config)
        deprecated.append("target(self, config)")
        cls.target = _target_of_config(target)
    export = own.get("_export")
    if inspect.isfunction(export) and not _declares(export, "fingerprint"):
        cls._export = _run_id_from_details(export)  # plugin API 1: warned if it happens
    worker_hooks = [name for name in _WORKER_HOOKS if name in own]
    if worker_hooks:
        deprecated.extend(worker_hooks)
        if "worker" not in own:
            cls.worker = _worker_from_hooks(cls)
    if "receipt_keys" in own:
        deprecated.append("receipt_keys")
    if "secrets_the_sdk_may_find" in own:
        deprecated.append("secrets_the_sdk_may_find")
        if "worker_secrets" not in own:
            cls.worker_secrets = _secrets_with_found(cls.worker_secrets)
    for form in deprecated:
        hook = form.partition("(")[0]
        warnings.warn(
            f"{cls.__module__}.{cls.__qualname__}.{form if '(' in form else hook} is "
            f"deprecated and still honoured; {DEPRECATED_HOOKS[form]}",
            DeprecationWarning,
            stacklevel=4,  # the class statement (adapt <- __init_subclass__ <- ABCMeta.__new__)
        )


def _adapt_flags(cls: type[Any], guards: bool, uploads: bool) -> None:
    if guards and uploads:
        raise ExporterDefinitionError(
            f"{cls.__module__}.{cls.__qualname__} sets both guards_exports and "
            'uploads_directory; set kind = "tracking" or kind = "directory"'
        )
    if "kind" not in cls.__dict__:
        cls.kind = "tracking" if guards else "directory" if uploads else "output"
    # The flags the class set are shadowed by the kind they stand for, so they read alike.
    for name in ("guards_exports", "uploads_directory"):
        if name in cls.__dict__:
            delattr(cls, name)


def _required_positionals(function: Callable[..., Any]) -> int:
    """Arguments ``function`` requires by position, ``self`` included in the count's base:
    ``target(self, config)`` requires one besides ``self``."""
    parameters = list(inspect.signature(function).parameters.values())[1:]
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return 1_000
    return sum(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        for p in parameters
    )


def _declares(function: Callable[..., Any], name: str) -> bool:
    parameters = inspect.signature(function).parameters.values()
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in parameters)


def _target_of_config(target: Callable[[Any, Any], str]) -> Callable[..., str]:
    """``target(self, run, config)`` calling plugin API 1's ``target(self, config)``; the
    plugin's own calls of ``self.target(config)`` still work."""

    def adapted(self: Any, *arguments: Any) -> str:
        return target(self, arguments[-1])

    return _named_as(adapted, target)


def _run_id_from_details(export: Callable[..., ExportResult]) -> Callable[..., ExportResult]:
    """``_export`` whose result of plugin API 1 (the remote run id in ``details["run_id"]``)
    gets it as :attr:`~evalexport.results.ExportResult.run_id`, with a warning."""

    def adapted(self: Any, *arguments: Any, **keywords: Any) -> ExportResult:
        result: ExportResult = call_hook(export.__get__(self), *arguments, **keywords)
        if result.run_id is not None or "run_id" not in result.details:
            return result
        warnings.warn(
            f"{type(self).__module__}.{type(self).__qualname__}._export puts the remote run "
            f'id in details["run_id"], which is deprecated and still honoured; {_RUN_ID_FORM}',
            DeprecationWarning,
            stacklevel=2,
        )
        details = dict(result.details)
        run_id = details.pop("run_id")
        return result.model_copy(
            update={"run_id": None if run_id is None else str(run_id), "details": details}
        )

    return _named_as(adapted, export)


def _named_as(adapted: Callable[..., T], original: Callable[..., Any]) -> Callable[..., T]:
    """``adapted`` under the plugin's own name, for tracebacks; its signature stays its own
    (``functools.wraps`` would make it the plugin's, which it is not)."""
    adapted.__name__ = original.__name__
    adapted.__qualname__ = original.__qualname__
    adapted.__doc__ = original.__doc__
    return adapted


def _worker_from_hooks(cls: type[Any]) -> Callable[[Any, Any], WorkerSpec]:
    """``worker(config)`` of a class that defines plugin API 2's worker hooks: what the class
    it inherits describes, with each hook the class (or a class between) defines in place."""
    fields = dict(
        zip(
            _WORKER_HOOKS, ("requirements", "time_limit", "environment", "local_store"), strict=True
        )
    )

    def worker(self: Any, config: Any) -> WorkerSpec:
        described: WorkerSpec = super(cls, self).worker(config)
        changes: dict[str, Any] = {}
        for hook, field in fields.items():
            if getattr(type(self), hook) is not getattr(LegacyWorkerHooks, hook):
                value = getattr(self, hook)(config)
                changes[field] = tuple(value) if hook == "requirements" else value
        return dataclasses.replace(described, **changes)

    return worker


def _secrets_with_found(
    worker_secrets: Callable[[Any, Any], dict[str, str]],
) -> Callable[[Any, Any], dict[str, str]]:
    """``worker_secrets`` that also hands the worker what ``secrets_the_sdk_may_find`` names,
    so they are scrubbed from what it reports as every worker secret is."""

    def adapted(self: Any, config: Any) -> dict[str, str]:
        found = self.secrets_the_sdk_may_find(config)
        extra = {f"EVALEXPORT_SCRUBBED_{index}": value for index, value in enumerate(found)}
        return {**worker_secrets(self, config), **extra}

    return adapted


def read_back_from_details(
    result: WorkerResult, read_back: tuple[str, ...], receipt_keys: frozenset[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(typed keys, details)`` of a worker's result; a worker body written before the typed
    keys existed put ``run_id``, ``skip_reason``, ``notices`` and its receipts in ``details``:
    they are read from there, with a deprecation notice in the log."""
    details = dict(result["details"])
    typed: dict[str, Any] = {key: result[key] for key in read_back if key in result}  # type: ignore[literal-required]
    smuggled = sorted(
        key for key in (*read_back, *receipt_keys) if key in details and key != "receipts"
    )
    if smuggled:
        logger.info(
            "the worker returns %s in details, which is deprecated: return them with "
            "result(..., run_id=..., skip_reason=..., notices=[...], receipts={...})",
            ", ".join(smuggled),
        )
        for key in read_back:
            if key in details:
                typed.setdefault(key, details.pop(key))
    receipts: Mapping[str, Any] = typed.get("receipts") or {}
    typed["receipts"] = {str(k): str(v) for k, v in receipts.items()}
    typed["receipts"] |= {key: str(details.pop(key)) for key in receipt_keys if key in details}
    return typed, details
