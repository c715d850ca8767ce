"""A request and its answer, one JSON line each, with a long-lived helper process: how the test
harness talks to the workers that hold an SDK it must not import (the MLflow run reader, NeMo
Gym's oracle)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from typing import Any

__all__ = ["exchange_line"]


def exchange_line(
    process: subprocess.Popen[str], request: Mapping[str, object]
) -> dict[str, Any] | None:
    """Write ``request`` to ``process``'s stdin as one JSON line and read its one-line answer;
    None when the process ended without answering (the caller says which helper and why)."""
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(json.dumps(request) + "\n")
    process.stdin.flush()
    line = process.stdout.readline()
    if not line:
        return None
    answer: dict[str, Any] = json.loads(line)
    return answer
