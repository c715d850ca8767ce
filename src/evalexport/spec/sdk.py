"""The SDK an exporter drives through a worker, as the exporter declares it (SPEC §3.4): its
worker body, the variables it reads credentials from, and the surface the body uses (what it
calls and reads back), which the contract checks hold the fakes and the real releases to.

A built-in's surface is written in its worker body, as ``SURFACE``, and read with
:meth:`Surface.declared`; :mod:`evalexport.contracts.installed` collects every installed
exporter's, so ``evalexport contract``, the pytest plugin's ``--with_<sdk>_sdk`` switches and
token isolation, and the startup tripwire know every SDK without a list to keep.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, final

from evalexport.isolation.variables import Admitted

__all__ = ["Sdk", "Surface"]


def _numbers(version: str) -> tuple[int, ...]:
    """``"3.17.2"`` as ``(3, 17, 2)``: versions compared number by number."""
    return tuple(int(number) for number in re.findall(r"\d+", version))


@final
@dataclass(frozen=True)
class Surface:
    """The SDK surface a worker uses, and where its fake and committed manifests are."""

    sdk: str
    """The SDK's top-level package (``mlflow``), also its distribution name on the index."""
    paths: tuple[str, ...]
    """What the worker calls and reads back, as dotted paths (``mlflow.MlflowClient.log_batch``,
    ``evalrdl.Client().uploads.upload`` for a method of an object a call returns)."""
    environment: dict[str, str] = field(default_factory=dict)
    """Set while extracting (never real secrets): what building an instance needs."""
    fake: str | None = None
    """The source root of a fake of this SDK (the directory holding its package), checked
    against the real manifests: relative to the current directory (``fakes/evalrdl/src``, for
    a checkout) or absolute (a plugin's own fake)."""
    manifests: str | None = None
    """The directory of the committed manifests (``<version>.json``): default
    ``contracts/<sdk>`` in the current directory; a plugin names its own, absolute."""
    switch: str | None = None
    """What the pytest plugin's ``--with_<sdk>_sdk`` switch does, in the words of its help
    (default: run the marked tests against the real SDK)."""
    companions: tuple[str, ...] = ()
    """Requirements installed beside each release when it is verified (``sqlalchemy<2.1``)."""
    reads: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """What the worker reads back, class by class (``{"mlflow.entities.RunInfo": ("run_id",)}``;
    ``()``: nothing). A class named here counts only these attributes, and its constructor only
    when ``paths`` names the class too (the worker builds it); a class ``paths`` names and this
    does not counts its whole public API, as the 0.4.0 guide had it. The methods the worker
    calls are ``paths`` of their own (``mlflow.tracking.MlflowClient.log_batch``)."""
    positional: Mapping[str, int] = field(default_factory=dict)
    """How many arguments the worker passes by position to a path it calls (``{"wandb.init":
    0}``: all by keyword). Only those places are contract: a parameter that moves beyond them
    is no finding, and a recorded call passing more by position is a problem. A path not
    named here counts every place."""
    since: Mapping[str, str] = field(default_factory=dict)
    """Paths (and classes of ``reads``) the worker uses only from a release on
    (``{"mlflow.tracking.MlflowClient.start_trace": "3"}``): it checks the release before it
    uses them, so a manifest of an older release does not count them."""

    @classmethod
    def declared(cls, declaration: Mapping[str, Any]) -> Surface:
        """The surface a worker body declares as plain data (its ``SURFACE``: the same fields,
        lists as tuples), so that what the body calls is written beside the calls."""
        fields = dict(declaration)
        fields["paths"] = tuple(fields["paths"])
        fields["companions"] = tuple(fields.get("companions", ()))
        fields["reads"] = {path: tuple(names) for path, names in fields.get("reads", {}).items()}
        fields["since"] = dict(fields.get("since", {}))
        fields["positional"] = dict(fields.get("positional", {}))
        return cls(**fields)

    @property
    def extracted(self) -> tuple[str, ...]:
        """Every path a manifest of this surface describes: ``paths``, then each class
        ``reads`` names that ``paths`` does not."""
        return (*self.paths, *(path for path in self.reads if path not in self.paths))

    def used_by(self, path: str, version: str) -> bool:
        """Whether the worker uses ``path`` with release ``version`` (``since`` says)."""
        first = self.since.get(path)
        return first is None or _numbers(version) >= _numbers(first)

    def whole(self, path: str) -> bool:
        """Whether the class at ``path`` counts its whole public API (``paths`` names it and
        ``reads`` does not say what the worker reads of it)."""
        return path in self.paths and path not in self.reads

    def manifest_directory(self, contracts: Path | None = None) -> Path:
        """``contracts/<sdk>`` when ``contracts`` is given, else where this surface keeps them."""
        if contracts is not None:
            return contracts / self.sdk
        return Path(self.manifests) if self.manifests else Path("contracts") / self.sdk

    @property
    def switch_help(self) -> str:
        """What the pytest plugin's ``--with_<sdk>_sdk`` says it does."""
        return self.switch or f"runs against the real {self.sdk} SDK"


@dataclass(frozen=True)
class Sdk:
    """The SDK an exporter drives through a worker in an environment of its own (SPEC §3.4)."""

    body: Path
    """The worker body file: defines ``run(payload: <Sdk>Payload) -> WorkerResult`` with the
    types of ``workers/protocol.py``, the standard library and the SDK only."""
    token_variables: tuple[str, ...] = ()
    """The environment variables the SDK reads credentials from: the worker inherits them, the
    pytest plugin's isolation removes them, the guarantee suite plants canaries in them."""
    contract: Surface | None = None
    """The SDK surface the body uses (what it calls and reads back), where its fake and its
    committed manifests are: ``evalexport contract ... SDK``, the recorded-call checks and the
    pytest plugin's ``--with_<sdk>_sdk`` switch serve it (docs/plugins.md, "SDK contracts")."""
    variables: tuple[str, ...] = ()
    """The environment variables the SDK reads besides its tokens, by name or by family (a
    prefix ending in ``_`` or ``*``: ``MLFLOW_``, ``AWS_``): the worker is given these of the
    caller's environment, with its token variables, the SDK's own family ``<SDK>_`` (of
    ``contract``) and what a process needs to run (``PATH``, ``HOME``, the locale, proxies,
    CA bundles), and nothing else (docs/plugins.md, "The worker's environment")."""

    def admitted(self) -> Admitted:
        """What its worker is given of the caller's environment (:mod:`evalexport.isolation.
        variables`)."""
        family = (f"{self.contract.sdk.upper()}_",) if self.contract is not None else ()
        return Admitted.of((*self.token_variables, *self.variables, *family))
