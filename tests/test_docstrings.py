"""Every public name of evalexport has a docstring: the reference for people who build on it
(the Python API, the plugin API, the pytest plugin). A method that overrides a documented one
inherits its docstring, as ``help()`` shows it."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import evalexport

SOURCE = Path(evalexport.__file__).resolve().parent

_SCRIPTS = (
    "evalexport.__main__",
    "evalexport.workers.",
    "evalexport.contracts.surface_extractor",
    "tests.support.gym.oracle_worker",
    "evalexport.isolation.reaper",
)


def _modules() -> Iterator[Any]:
    for path in sorted(SOURCE.rglob("*.py")):
        parts = path.relative_to(SOURCE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name.startswith(_SCRIPTS) and name != "evalexport.workers.protocol":
            continue  # bodies and scripts that run in another interpreter
        yield importlib.import_module(name)


def _own_docstring(cls: type) -> bool:
    doc = cls.__dict__.get("__doc__")
    # A dataclass without a docstring gets its signature as one.
    return bool(doc) and not str(doc).startswith(f"{cls.__name__}(")


def _undocumented() -> list[str]:
    missing: list[str] = []
    for module in _modules():
        if not module.__doc__:
            missing.append(module.__name__)
        for name, value in vars(module).items():
            if name.startswith("_") or getattr(value, "__module__", None) != module.__name__:
                continue
            where = f"{module.__name__}.{name}"
            if inspect.isclass(value):
                if not _own_docstring(value):
                    missing.append(where)
                for attribute, member in vars(value).items():
                    function = getattr(member, "__func__", member)
                    if attribute.startswith("_"):
                        continue
                    if (isinstance(member, property) and not member.__doc__) or (
                        inspect.isfunction(function)
                        and not inspect.getdoc(getattr(value, attribute))
                    ):
                        missing.append(f"{where}.{attribute}")
            elif inspect.isfunction(value) and not inspect.getdoc(value):
                missing.append(where)
    return missing


def test_every_public_name_has_a_docstring() -> None:
    missing = _undocumented()
    assert not missing, f"{len(missing)} public names without a docstring:\n" + "\n".join(missing)
