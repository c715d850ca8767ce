"""The SDK surface a worker uses, declared by its exporter: the names the contract checks hold
the fakes and the real SDKs to. Keep each in step with the exporter's worker body.

A surface lists what the worker calls and what it reads back: the classes of the objects the
SDK returns (``evalrdl.Upload``: ``.state``, ``.run_id``) and the exceptions whose attributes
it reads (``IntakeRefused.stage``). The manifest records their attributes, so a renamed field
is drift like a renamed parameter.

An isolated exporter declares its surface as ``sdk_contract = Surface(...)``, built-in or
plugin alike (a built-in's is written in its worker body, as ``SURFACE``, and read with
:meth:`Surface.declared`); :func:`evalexport.contracts.installed.installed_surfaces` collects them from the
installed exporters, so ``evalexport contract``, the pytest plugin's ``--with_<sdk>_sdk``
switches and token isolation, and the startup tripwire know every SDK without a list to keep.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, final

__all__ = ["Surface"]


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

    @classmethod
    def declared(cls, declaration: Mapping[str, Any]) -> Surface:
        """The surface a worker body declares as plain data (its ``SURFACE``: the same fields,
        lists as tuples), so that what the body calls is written beside the calls."""
        fields = dict(declaration)
        fields["paths"] = tuple(fields["paths"])
        fields["companions"] = tuple(fields.get("companions", ()))
        return cls(**fields)

    def manifest_directory(self, contracts: Path | None = None) -> Path:
        """``contracts/<sdk>`` when ``contracts`` is given, else where this surface keeps them."""
        if contracts is not None:
            return contracts / self.sdk
        return Path(self.manifests) if self.manifests else Path("contracts") / self.sdk

    @property
    def switch_help(self) -> str:
        """What the pytest plugin's ``--with_<sdk>_sdk`` says it does."""
        return self.switch or f"runs against the real {self.sdk} SDK"
