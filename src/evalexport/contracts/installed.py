"""What the installed exporters declare, built-in and plugin alike: their SDK surfaces and
the variables their SDKs read credentials from. Derived, never listed by hand, so a new
exporter (or a plugin) is known everywhere these are used once it is installed."""

from __future__ import annotations

from typing import Any

from evalexport.contracts.surfaces import Surface

__all__ = ["installed_surfaces", "installed_token_variables"]


def _exporters() -> list[type[Any]]:
    from evalexport.exporters.registry import ExporterLoadError, exporter_entries

    loaded = []
    for entry in exporter_entries().values():
        try:
            loaded.append(entry.load())
        except ExporterLoadError:  # a broken plugin must not hide the others
            continue
    return loaded


def installed_surfaces() -> dict[str, Surface]:
    """SDK name -> the surface its exporter declares (``sdk_contract``), for every installed
    exporter that loads (``evalexport list`` says why one does not)."""
    surfaces: dict[str, Surface] = {}
    for exporter in _exporters():
        surface = getattr(exporter, "sdk_contract", None)
        if isinstance(surface, Surface):
            surfaces.setdefault(surface.sdk, surface)
    return dict(sorted(surfaces.items()))


def installed_token_variables() -> tuple[str, ...]:
    """Every variable an installed exporter's SDK reads credentials from (``token_variables``),
    in the order found."""
    found: dict[str, None] = {}
    for exporter in _exporters():
        for variable in getattr(exporter, "token_variables", ()):
            found.setdefault(str(variable), None)
    return tuple(found)
