"""Where evalexport keeps its own state: SDK environments and locks."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CACHE_DIR_VARIABLE", "cache_dir"]

CACHE_DIR_VARIABLE = "EVALEXPORT_CACHE_DIR"


def cache_dir() -> Path:
    """``$EVALEXPORT_CACHE_DIR``, else the user cache directory (``~/.cache/evalexport``)."""
    configured = os.environ.get(CACHE_DIR_VARIABLE)
    if configured:
        return Path(configured).expanduser().absolute()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("evalexport", appauthor=False))
