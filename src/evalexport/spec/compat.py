"""Plugins written from earlier guides keep exporting: their forms, adapted when their class is
made.

Everything that keeps an earlier guide's plugin working is here, and nowhere else: the spec
(:class:`~evalexport.spec.base.Exporter`) and the pipeline know only today's hooks, and
nothing of this module is in the hierarchy of an exporter written from today's guide. Each
earlier form is data (:data:`EARLIER_FORMS`: what replaces it, and how its hook was called), as
pluggy's ``warn_on_impl`` is data on a hook's spec. When a class that uses one is made,
:func:`adapt` checks each earlier hook's arguments as its guide called them (a misspelled one
is refused, as today's are), warns once per form with a ``DeprecationWarning`` naming the form
that replaces it, and gives the class today's hooks, which call the plugin's own code:

===============================================  ==============================================
earlier form (guide)                             today (plugin API 4, evalexport 0.5.0)
===============================================  ==============================================
``target``, ``unexportable_reason``,             ``resolve(self, run, config) -> Target(where=,
``already_exported`` (1-3), ``worker``,          refusal=, already_exported=, worker=)``
``worker_secrets`` (3), ``requirements``,
``time_limit``, ``worker_environment``,
``local_store``, ``secrets_the_sdk_may_find`` (2)
``check_inputs`` (2, 3)                          ``read(self, run, config, target)``
``dry_run_plan`` (2, 3)                          ``plan(self, run, config, target, prepared)``
``_export`` (1-3), ``worker_payload``,           ``deliver(...)``: a result, or a
``interpret``, ``receipt_keys`` (2, 3)           ``WorkerDelivery(payload, read_back=...)``
``IsolatedExporter`` with ``worker_body``,       ``Exporter`` with ``sdk = Sdk(body=...,
``token_variables``, ``sdk_contract`` (3)        token_variables=..., contract=...)``
``guards_exports``, ``uploads_directory`` (2),   ``kind``
``needs_metrics_and_config`` (3)
``progress_unit`` (3)                            derived: a worker's steps when ``sdk`` is set
``details["run_id"]`` (1)                        ``ExportResult.succeeded(..., run_id=...)``
===============================================  ==============================================

The adapters go in evalexport 1.0 (CHANGELOG.md, "Deprecated").
"""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar, final

from evalexport.results import DryRunPlan, ExportResult
from evalexport.spec.declarations import (
    EARLIER_FORMS,
    REPLACED_BY,
    SDK_FORM,
    SPEC_HOOKS,
    Target,
    default_plan,
    default_read,
)
from evalexport.spec.hooks import ExporterDefinitionError
from evalexport.spec.sdk import Sdk
from evalexport.spec.workers import WorkerDelivery, WorkerSecretsError

if TYPE_CHECKING:
    from evalexport.run import RunArtifacts
    from evalexport.spec.sdk import Surface
    from evalexport.workers.protocol import WorkerResult

__all__ = [
    "DEPRECATED_HOOKS",
    "EARLIER_FORMS",
    "REPLACED_BY",
    "adapt",
    "is_isolated_template",
]

T = TypeVar("T")


_TARGET_OF_CONFIG: Final = "target(self, config)"
_RUN_ID_IN_DETAILS: Final = 'details["run_id"]'
DEPRECATED_HOOKS: Final[Mapping[str, str]] = {
    _TARGET_OF_CONFIG: "define resolve(self, run, config) returning Target(where=...) instead "
    "(plugin API 1, the 0.1.0 guide, took the config only)",
    _RUN_ID_IN_DETAILS: "return ExportResult.succeeded(..., run_id=...) instead: run_id is a "
    "field of the result (plugin API 1, the 0.1.0 guide, put it in details)",
    "IsolatedExporter": SDK_FORM,
    **{name: form.advice for name, form in EARLIER_FORMS.items()},
}
"""Each earlier form still honoured and the form that replaces it (docs/plugins.md)."""

_KEPT_READABLE: Final = ("target_of", "guards_exports", "uploads_directory", "sdk")
"""What an adapted class is given besides today's hooks, so that code of its own that reads an
earlier name still finds it."""


def is_isolated_template(cls: type[Any]) -> bool:
    """Whether ``cls`` is a subclass of plugin API 2 and 3's isolated template
    (:class:`evalexport.spec.isolated.IsolatedExporter`), whose worker is described by
    its hooks."""
    return hasattr(cls, "worker_payload")


def adapt(cls: type[Any], spec: type[Any]) -> tuple[str, ...]:
    """Give ``cls`` today's hooks in place of the earlier forms it uses, warning of each; the
    names it may define because of them (which :func:`~evalexport.spec.hooks.verify`
    leaves alone). A class that uses none is left as it is. ``spec`` is today's exporter
    class, whose default hooks an adapted class's replace."""
    own = cls.__dict__
    earlier = [name for name in EARLIER_FORMS if name in own]
    isolated = is_isolated_template(cls)
    if not earlier and not isolated and not _adapted(cls):
        return ()
    where = f"{cls.__module__}.{cls.__qualname__}"
    for name in earlier:
        _check_form(cls, where, name, own[name])
    if isolated and "_export" in own:
        raise ExporterDefinitionError(
            f"{where}._export is a step of the exporter template, not a hook, for an "
            "IsolatedExporter: its worker delivers (worker_payload). Define the template's "
            "hooks instead, or today's: an Exporter with sdk = Sdk(...) whose deliver returns a "
            "WorkerDelivery"
        )
    for hook in SPEC_HOOKS:
        replaced = [name for name in earlier if EARLIER_FORMS[name].replaced_by == hook]
        if hook in own and replaced:
            raise ExporterDefinitionError(
                f"{where} defines both {hook} and its earlier form "
                f"{', '.join(replaced)}; keep {hook} (docs/plugins.md)"
            )
    _adapt_kind(cls, where)
    for hook, adapter in _ADAPTERS.items():
        if getattr(cls, hook) is getattr(spec, hook):  # else the class's own, or a base's
            setattr(cls, hook, adapter)
    if isolated:
        cls.sdk = _sdk_of(cls) if "sdk" not in own else own["sdk"]
    cls.target_of = _target_of
    for form in _forms_to_tell(cls, earlier, isolated):
        warnings.warn(
            f"{where}.{form} is deprecated and still honoured; {DEPRECATED_HOOKS[form]}",
            DeprecationWarning,
            stacklevel=4,  # the class statement (adapt <- __init_subclass__ <- ABCMeta.__new__)
        )
    return (*EARLIER_FORMS, *_KEPT_READABLE)


def _adapted(cls: type[Any]) -> bool:
    """Whether a base of ``cls`` was adapted (its hooks are this module's)."""
    return any(getattr(cls, hook, None) is adapter for hook, adapter in _ADAPTERS.items())


def _forms_to_tell(cls: type[Any], earlier: list[str], isolated: bool) -> list[str]:
    told = [
        _TARGET_OF_CONFIG if name == "target" and _takes_config_only(cls.target) else name
        for name in earlier
    ]
    if isolated and any(base.__name__ == "IsolatedExporter" for base in cls.__bases__):
        told.insert(0, "IsolatedExporter")
    return told


def _check_form(cls: type[Any], where: str, name: str, value: object) -> None:
    """An earlier hook's arguments, checked as its guide called it: only the arguments it was
    called with, by position in its order, the others by name."""
    form = EARLIER_FORMS[name]
    if form.called_with is None or not inspect.isfunction(value):
        return
    parameters = [
        p
        for p in list(inspect.signature(value).parameters.values())[1:]
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    called = form.called_with
    if name == "target" and _takes_config_only(value):
        called = ("config",)  # plugin API 1, whose guide called it with the config alone
        parameters = [p for p in parameters if p.default is p.empty or p.kind is p.KEYWORD_ONLY]
    known = {*called, *form.keywords}
    shown = f"{name}({', '.join(('self', *called))}{''.join(f', {k}=' for k in form.keywords)})"
    unknown = [p.name for p in parameters if p.name not in known]
    if unknown:
        listed = ", ".join(repr(item) for item in unknown)
        also = f", and it may also declare {', '.join(form.keywords)}" if form.keywords else ""
        raise ExporterDefinitionError(
            f"{where}.{name} declares {listed}, which the hook {name} is never called with; "
            f"its signature is {shown}{also}. Declare only those arguments; better, "
            f"{form.advice}."
        )
    positional = [
        p.name
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    if positional != list(called[: len(positional)]):
        raise ExporterDefinitionError(
            f"{where}.{name} takes ({', '.join(positional)}) by position, but the hook {name} "
            f"is called with ({', '.join(called)}); its signature is {shown}."
        )


def _takes_config_only(target: object) -> bool:
    """``target(self, config)``: plugin API 1's form, told by the arguments it requires."""
    if not inspect.isfunction(target):
        return False
    parameters = list(inspect.signature(target).parameters.values())[1:]
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return False
    required = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return len(required) == 1


def _adapt_kind(cls: type[Any], where: str) -> None:
    """Plugin API 2's flags become ``kind`` (both at once is refused); a tracking or directory
    exporter reads the metrics and the config."""
    own = cls.__dict__
    guards, uploads = bool(own.get("guards_exports")), bool(own.get("uploads_directory"))
    if guards and uploads:
        raise ExporterDefinitionError(
            f"{where} sets both guards_exports and uploads_directory; set kind = "
            '"tracking" or kind = "directory"'
        )
    if ("guards_exports" in own or "uploads_directory" in own) and "kind" not in own:
        cls.kind = "tracking" if guards else "directory" if uploads else "output"
    for name in ("guards_exports", "uploads_directory"):
        if name in own:
            delattr(cls, name)  # read off the kind from now on (_KindFlag)
    cls.guards_exports = _KindFlag("tracking")
    cls.uploads_directory = _KindFlag("directory")
    if cls.kind != "output" and not getattr(cls, "needs_metrics_and_config", True):
        raise ExporterDefinitionError(
            f"{where} is a {cls.kind} exporter with needs_metrics_and_config = False; a "
            f"{cls.kind} export covers the aggregate metrics and the saved config. Leave "
            "needs_metrics_and_config as it is, or make the kind 'output'."
        )


@final
class _KindFlag:
    """``guards_exports`` / ``uploads_directory`` read off ``kind``, for code that reads them."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __get__(self, instance: object, owner: type[Any]) -> bool:
        return bool(owner.kind == self.kind)


def _sdk_of(cls: type[Any]) -> Sdk | None:
    """An isolated exporter's ``worker_body``, ``token_variables`` and ``sdk_contract`` as
    today's :class:`~evalexport.spec.base.Sdk`."""
    body = getattr(cls, "worker_body", None)
    if body is None:
        return None
    contract: Surface | None = getattr(cls, "sdk_contract", None)
    return Sdk(Path(body), tuple(getattr(cls, "token_variables", ())), contract)


# -- today's hooks of an adapted class: each calls the class's earlier forms -----------------


def _needs_metrics_and_config(exporter: Any) -> bool:
    return exporter.kind != "output" or bool(getattr(exporter, "needs_metrics_and_config", True))


def _resolve(self: Any, run: RunArtifacts, config: Any) -> Target:
    """``target``, ``unexportable_reason``, ``already_exported`` and an isolated exporter's
    worker and secrets, as one target."""
    where = _target_of(self, run, config)
    refusal = None
    if self.kind == "output" and _needs_metrics_and_config(self):
        refusal = run.missing_file_reason(needs_metrics_and_config=True, check_records=False)
    if refusal is None and (reason := getattr(self, "unexportable_reason", None)) is not None:
        refusal = reason(run, config)
    finished = None
    if (check := getattr(self, "already_exported", None)) is not None:
        done = check(run, config)
        finished = done.message if done is not None else None
    worker = None
    if is_isolated_template(type(self)):
        worker = self.worker(config)
        if not config.dry_run:  # as before: a dry run asked no credential helper
            try:
                secrets = self.worker_secrets(config)
            except WorkerSecretsError as error:
                refusal = refusal or str(error)
            else:
                worker = dataclasses.replace(worker, secrets={**worker.secrets, **secrets})
    return Target(where=where, refusal=refusal, already_exported=finished, worker=worker)


def _target_of(self: Any, run: RunArtifacts, config: object) -> str:
    """Where the run goes, by the class's ``target`` in either earlier form (or its name)."""
    target = getattr(self, "target", None)
    if target is None:
        return str(self.name)
    if _takes_config_only(getattr(target, "__func__", target)):
        return str(target(config))
    return str(target(run, config))


def _read(self: Any, run: RunArtifacts, config: object) -> object:
    """``check_inputs``, or what an earlier template read by default."""
    if (check := getattr(self, "check_inputs", None)) is not None:
        return check(run, config)
    if self.kind == "output" and not _needs_metrics_and_config(self):
        return None  # the earlier output exporters that needed no metrics read nothing
    return default_read(self.kind, run)


def _plan(
    self: Any, run: RunArtifacts, config: object, target: Target, prepared: object
) -> DryRunPlan:
    """``dry_run_plan``, or what an earlier template said by default."""
    if (describe := getattr(self, "dry_run_plan", None)) is not None:
        plan: DryRunPlan = _call_earlier(describe, run, config, prepared=prepared)
        return plan
    return default_plan(self.name, run, target, prepared, metrics=_needs_metrics_and_config(self))


def _deliver(
    self: Any,
    run: RunArtifacts,
    config: object,
    prepared: object,
    fingerprint: str | None,
    scratch: Path,
) -> ExportResult | WorkerDelivery[Any]:
    """``_export``, or an isolated exporter's ``worker_payload`` and ``interpret``."""
    if is_isolated_template(type(self)):
        payload = _call_earlier(
            self.worker_payload, run, config, scratch, fingerprint, prepared=prepared
        )

        def read_back(result: ExportResult, reported: WorkerResult) -> ExportResult:
            environment = Path(result.environment or "")
            interpreted: ExportResult = self.interpret(run, config, reported, environment)
            return interpreted

        return WorkerDelivery(payload, read_back=read_back)
    result: ExportResult = _call_earlier(
        self._export, run, config, fingerprint=fingerprint, prepared=prepared
    )
    return _run_id_from_details(self, result)


_ADAPTERS: Final[Mapping[str, Callable[..., Any]]] = {
    "resolve": _resolve,
    "read": _read,
    "plan": _plan,
    "deliver": _deliver,
}


def _call_earlier(hook: Callable[..., T], /, *arguments: object, **keywords: object) -> T:
    """``hook(*arguments, **keywords)`` as an earlier guide called it: each keyword the hook
    does not declare is left out."""
    parameters = inspect.signature(hook).parameters.values()
    if not any(p.kind is p.VAR_KEYWORD for p in parameters):
        named = {p.name for p in parameters}
        keywords = {name: value for name, value in keywords.items() if name in named}
    return hook(*arguments, **keywords)


def _run_id_from_details(exporter: object, result: ExportResult) -> ExportResult:
    """A result of plugin API 1 (the remote run id in ``details["run_id"]``) with it as
    :attr:`~evalexport.results.ExportResult.run_id`, and a warning."""
    if result.run_id is not None or "run_id" not in result.details:
        return result
    cls = type(exporter)
    warnings.warn(
        f"{cls.__module__}.{cls.__qualname__}._export puts the remote run id in "
        f'details["run_id"], which is deprecated and still honoured; '
        f"{DEPRECATED_HOOKS[_RUN_ID_IN_DETAILS]}",
        DeprecationWarning,
        stacklevel=2,
    )
    details = dict(result.details)
    run_id = details.pop("run_id")
    return result.model_copy(
        update={"run_id": None if run_id is None else str(run_id), "details": details}
    )
