"""Which exporters exist: the built-ins plus those installed under an entry-point group.

Entries are names and import paths only; an exporter's module is imported when that exporter
is used, so listing exporters or starting the CLI imports no exporter and no SDK.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from importlib.metadata import entry_points
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, final

if TYPE_CHECKING:
    from evalexport.spec.base import AnyExporter

__all__ = [
    "BUILTIN_EXPORTERS",
    "ENTRY_POINT_GROUP",
    "ExporterEntry",
    "ExporterLoadError",
    "UnknownExporterError",
    "builtin_exporters",
    "exporter_class",
    "exporter_entries",
    "load_exporter",
]

ENTRY_POINT_GROUP = "evalexport.exporters"

BUILTIN_EXPORTERS: Final = {
    "atif": "evalexport.backends.atif.exporter:AtifExporter",
    "evalrdl": "evalexport.backends.evalrdl.exporter:EvalRDLExporter",
    "mlflow": "evalexport.backends.mlflow.exporter:MLflowExporter",
    "wandb": "evalexport.backends.wandb.exporter:WandbExporter",
}
"""The built-in exporters, name -> ``module:Class``: the one list. Every list a test or a
tool needs (the guarantee suite, the SDK switches, the contract matrix) is derived from it."""


def builtin_exporters() -> dict[str, str]:
    """Built-in exporters: name -> ``module:Class`` (:data:`BUILTIN_EXPORTERS`)."""
    return dict(BUILTIN_EXPORTERS)


class UnknownExporterError(LookupError):
    """No exporter has the requested name (exit code 2)."""


class ExporterLoadError(ImportError):
    """An exporter is registered but cannot be imported, or is not an :class:`Exporter`."""


@final
@dataclass(frozen=True)
class ExporterEntry:
    """A known exporter: its name, ``module:Class`` and where it comes from (built-in or plugin)."""

    name: str
    target: str
    """``module:attribute`` of the exporter class."""
    source: str
    """``built-in``, or the distribution that registered it."""

    def load(self) -> type[AnyExporter]:
        """Import the exporter's class; :class:`ExporterLoadError` says why it cannot be.

        A plugin is other people's code: whatever its module does on import (any exception,
        ``SystemExit``, a mistake in a hook refused when its class is made), it is this
        entry's error, scrubbed of secrets, and never the caller's.
        """
        from evalexport.masking import scrub_text
        from evalexport.spec.base import Exporter

        module_name, _, attribute = self.target.partition(":")
        try:
            module = (
                importlib.import_module(module_name)
                if self.source == "built-in"
                else _import_plugin(module_name)
            )
            loaded = getattr(module, attribute)
        except (Exception, SystemExit) as error:
            said = (
                str(error)
                if isinstance(error, _ImportHung)
                else f"{type(error).__name__}: {error}"
                if str(error)
                else type(error).__name__
            )
            first = scrub_text(said.splitlines()[0] if said.strip() else said)
            raise ExporterLoadError(
                f"Exporter {self.name!r} ({self.source}) cannot be loaded from {self.target}: "
                f"{first}"
            ) from None
        if not (isinstance(loaded, type) and issubclass(loaded, Exporter)):
            raise ExporterLoadError(
                f"Exporter {self.name!r} ({self.source}) points at {self.target}, "
                "which is not an evalexport Exporter subclass"
            )
        missing = [hook for hook in ("name", "summary", "Config") if not hasattr(loaded, hook)]
        if missing:
            raise ExporterLoadError(
                f"Exporter {self.name!r} ({self.source}) at {self.target} does not set "
                f"{', '.join(missing)}; every exporter class sets name, summary and Config"
            )
        return loaded


class _ImportHung(Exception):
    """A plugin's module did not finish importing in time."""


_hung: dict[str, str] = {}
"""Plugin modules whose import never finished in this process, and what was said: importing
one again would wait on its import lock for ever."""


def _import_plugin(module_name: str) -> ModuleType:
    """Import a plugin's module in a thread of its own, waiting at most
    ``$EVALEXPORT_PLUGIN_IMPORT_TIMEOUT`` seconds: a module that hangs on import (a network
    call, a prompt) is reported as broken, and every command that does not need it goes on.
    What it prints as it is imported goes to stderr: stdout is the caller's."""
    from evalexport.host.stdout import others_write_to_stderr
    from evalexport.settings import plugin_import_timeout

    if module_name in _hung:
        raise _ImportHung(_hung[module_name])
    limit = plugin_import_timeout()
    outcome: dict[str, Any] = {}

    def load() -> None:
        try:
            outcome["module"] = importlib.import_module(module_name)
        except BaseException as error:  # SystemExit, KeyboardInterrupt: the plugin's, not ours
            outcome["error"] = error

    thread = threading.Thread(target=load, name=f"evalexport-import-{module_name}", daemon=True)
    with others_write_to_stderr():  # what it prints never mixes into a command's --json
        thread.start()
        thread.join(limit)
    if thread.is_alive():
        _hung[module_name] = f"its module {module_name} did not finish importing within {limit:g} s"
        raise _ImportHung(_hung[module_name])
    if "error" in outcome:
        raise outcome["error"]
    module: ModuleType = outcome["module"]
    return module


def exporter_entries() -> dict[str, ExporterEntry]:
    """Every known exporter by name, sorted; a plugin cannot replace a built-in."""
    entries = {
        name: ExporterEntry(name, target, "built-in")
        for name, target in builtin_exporters().items()
    }
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name in entries:
            continue
        source = f"plugin {point.dist.name}" if point.dist is not None else "plugin"
        entries[point.name] = ExporterEntry(point.name, point.value, source)
    return dict(sorted(entries.items()))


def load_exporter(name: str) -> type[AnyExporter]:
    """The exporter class named ``name``; :class:`UnknownExporterError` lists the known ones."""
    entries = exporter_entries()
    entry = entries.get(name)
    if entry is None:
        known = ", ".join(entries) or "none installed"
        raise UnknownExporterError(f"unknown exporter {name!r}; available exporters: {known}")
    return entry.load()


def exporter_class(exporter: str | type) -> type[AnyExporter]:
    """The exporter class a caller names: by its name (:func:`load_exporter`), or a class
    given directly, checked to be one."""
    from evalexport.spec.base import Exporter

    if isinstance(exporter, str):
        return load_exporter(exporter)
    if isinstance(exporter, type) and issubclass(exporter, Exporter):
        return exporter
    raise UnknownExporterError(
        f"{exporter!r} is not an exporter: give an exporter's name (evalexport list) or a "
        "subclass of evalexport.exporters.Exporter"
    )
