"""``upload_plan``: how the SDK would split a directory into uploads."""

import os
from pathlib import Path
from typing import Any

from evalrdl import _fake


@_fake.record.calls("evalrdl.sdk.api.upload_plan")
def upload_plan(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """One plan per upload the SDK would make: ``{"dir", "files", "bytes"}``.

    A directory is normally one upload. The real SDK plans child directories as uploads of
    their own in some layouts (files at the top and data below); the fake does that when told
    to (``EVALRDL_FAKE_BEHAVIOUR=split_plan``), planning only the sub-directories.
    """
    root = Path(path)
    if _fake.behaviour() == "split_plan":
        directories = sorted(child for child in root.iterdir() if child.is_dir())
    else:
        directories = [root]
    plans = []
    for directory in directories:
        files = [Path(r) / n for r, _, names in os.walk(directory, followlinks=True) for n in names]
        plans.append(
            {
                "dir": str(directory),
                "files": len(files),
                "bytes": sum(f.stat().st_size for f in files),
            }
        )
    return plans
