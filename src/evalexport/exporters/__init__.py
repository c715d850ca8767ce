"""Where the guides before 0.5 import the exporter spec from (``from evalexport.exporters
import Exporter``): every name of :mod:`evalexport.spec`, the same objects. The modules that
moved out of this package still import under their old names, with a ``DeprecationWarning``
naming their new home, until evalexport 1.0 (``evalexport.exporters.prepared`` is
``evalexport.tables.prepare``, ``evalexport.exporters.mlflow`` is
``evalexport.backends.mlflow.exporter``, ...)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Any, Final

from evalexport import spec
from evalexport.spec import __all__ as __all__

MOVED: Final = {
    "base": "evalexport.spec.base",
    "compat": "evalexport.spec.compat",
    "hooks": "evalexport.spec.hooks",
    "isolated": "evalexport.spec.isolated",
    "options": "evalexport.spec.options",
    "overrides": "evalexport.spec.overrides",
    "registry": "evalexport.spec.registry",
    "sdk": "evalexport.spec.sdk",
    "spec": "evalexport.spec.declarations",
    "prepared": "evalexport.tables.prepare",
    "samples": "evalexport.tables.samples",
    "split_read": "evalexport.tables.split_read",
    "tables": "evalexport.tables.rollouts",
    "atif": "evalexport.backends.atif.exporter",
    "evalrdl": "evalexport.backends.evalrdl.exporter",
    "mlflow": "evalexport.backends.mlflow.exporter",
    "mlflow_names": "evalexport.backends.mlflow.names",
    "mlflow_target": "evalexport.backends.mlflow.target",
    "traces": "evalexport.backends.mlflow.traces",
    "wandb": "evalexport.backends.wandb.exporter",
    "wandb_target": "evalexport.backends.wandb.target",
}
"""Each module that left this package (by its old name here) -> its home."""


def __getattr__(name: str) -> Any:
    return getattr(spec, name)


class _Moved(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``evalexport.exporters.<old>`` as the module that is its home now."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        package, _, old = fullname.rpartition(".")
        if package != __name__ or old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        home = MOVED[module.__name__.rpartition(".")[2]]
        warnings.warn(
            f"{module.__name__} moved to {home}: import it from there (the old name goes in "
            "evalexport 1.0)",
            DeprecationWarning,
            stacklevel=2,
        )
        # The import system returns what sys.modules holds under the name once this ends.
        sys.modules[module.__name__] = importlib.import_module(home)


sys.meta_path.append(_Moved())
