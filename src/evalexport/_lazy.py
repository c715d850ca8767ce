"""Public names imported on first use (PEP 562), so importing a package stays cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_attributes(package: str, names: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``names[attribute]`` when first asked."""

    def __getattr__(attribute: str) -> Any:
        module = names.get(attribute)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {attribute!r}")
        value = getattr(importlib.import_module(module), attribute)
        setattr(importlib.import_module(package), attribute, value)
        return value

    return __getattr__
