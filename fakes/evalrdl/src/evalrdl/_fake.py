"""Fake-only machinery: per-test behaviour from the environment, and the recorder that writes
the call log (evalexport's own, ``_recording.py``: ``$EVALRDL_FAKE_CALL_LOG``).

Not part of the SDK's surface: the contract checks ignore private modules.
"""

import os
from pathlib import Path

from evalrdl._recording import Recorder

record = Recorder("evalrdl")
"""Every call the worker makes and every attribute it reads back, to $EVALRDL_FAKE_CALL_LOG."""

BEHAVIOURS = (
    "refuse",
    "no_verdict",
    "needs_binding",
    "too_old",
    "split_plan",
    "raise",
    "extra_upload",
)


def behaviour() -> str | None:
    value = os.environ.get("EVALRDL_FAKE_BEHAVIOUR") or None
    if value is not None and value not in BEHAVIOURS:
        raise ValueError(
            f"EVALRDL_FAKE_BEHAVIOUR={value!r}; expected one of {', '.join(BEHAVIOURS)}"
        )
    return value


def store_dir() -> Path:
    configured = os.environ.get("EVALRDL_FAKE_STORE")
    if not configured:
        raise RuntimeError(
            "the fake evalrdl SDK needs EVALRDL_FAKE_STORE: the directory of its store"
        )
    return Path(configured)
