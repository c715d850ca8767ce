"""What the installed exporters declare, built-in and plugin alike: their SDK surfaces and
the variables their SDKs read credentials from. Derived, never listed by hand, so a new
exporter (or a plugin) is known everywhere these are used once it is installed.

A built-in's surface is read off its worker body's ``SURFACE`` (``backends/<name>/worker.py``),
which imports nothing heavy: the pytest plugin declares the ``--with_<sdk>_sdk`` switches at
every pytest start without importing an exporter, unless a plugin exporter is installed."""

from __future__ import annotations

from typing import Any

from evalexport.contracts.surfaces import Surface

__all__ = [
    "builtin_body",
    "declared_surfaces",
    "installed_surfaces",
    "installed_token_variables",
]


def _exporters() -> list[type[Any]]:
    from evalexport.spec.registry import ExporterLoadError, exporter_entries

    loaded = []
    for entry in exporter_entries().values():
        try:
            loaded.append(entry.load())
        except ExporterLoadError:  # a broken plugin must not hide the others
            continue
    return loaded


def _contract(exporter: type[Any]) -> Surface | None:
    """The surface an exporter's SDK declares (``sdk.contract``), if it has one."""
    surface = getattr(getattr(exporter, "sdk", None), "contract", None)
    return surface if isinstance(surface, Surface) else None


def installed_surfaces() -> dict[str, Surface]:
    """SDK name -> the surface its exporter declares (``sdk.contract``), for every installed
    exporter that loads (``evalexport list`` says why one does not)."""
    surfaces: dict[str, Surface] = {}
    for exporter in _exporters():
        surface = _contract(exporter)
        if surface is not None:
            surfaces.setdefault(surface.sdk, surface)
    return dict(sorted(surfaces.items()))


def builtin_body(name: str) -> str | None:
    """The module of built-in exporter ``name``'s worker body, if it is isolated (by the rule
    ``tests/test_adding_an_exporter.py`` holds: ``evalexport.backends.<name>.worker``)."""
    import importlib.util

    module = f"evalexport.backends.{name}.worker"
    return module if importlib.util.find_spec(module) is not None else None


def declared_surfaces() -> dict[str, Surface]:
    """:func:`installed_surfaces`, built-ins read off their worker bodies' ``SURFACE`` (no
    exporter imported) and plugins loaded: what the pytest plugin declares switches for."""
    import importlib

    from evalexport.spec.registry import ExporterLoadError, exporter_entries

    surfaces: dict[str, Surface] = {}
    for entry in exporter_entries().values():
        if entry.source == "built-in":
            body = builtin_body(entry.name)
            declared = getattr(importlib.import_module(body), "SURFACE", None) if body else None
            surface = Surface.declared(declared) if declared else None
        else:
            try:
                surface = _contract(entry.load())
            except ExporterLoadError:
                continue
        if isinstance(surface, Surface):
            surfaces.setdefault(surface.sdk, surface)
    return dict(sorted(surfaces.items()))


def installed_token_variables() -> tuple[str, ...]:
    """Every variable an installed exporter's SDK reads credentials from
    (``sdk.token_variables``), in the order found."""
    found: dict[str, None] = {}
    for exporter in _exporters():
        for variable in getattr(getattr(exporter, "sdk", None), "token_variables", ()):
            found.setdefault(str(variable), None)
    return tuple(found)
