"""The worker protocol, run as ``<env>/bin/python -I runner.py REQUEST RESULT``.

REQUEST is a JSON file ``{"body": PATH, "payload": {...}}``. The body is a Python file defining
``run(payload) -> dict`` that returns ``{"status", "exit_code", "message", "details"}``. The
result is written atomically to RESULT, and the process exits with the result's exit code, so
a worker can report 1, 3 or 4 itself. An exception in the body is a failed result, not a
traceback on the user's terminal (the traceback goes to the worker's log).

Standard library only: this file runs inside an SDK's environment.
"""

from __future__ import annotations

import json
import runpy
import sys
import traceback
from pathlib import Path
from typing import Any

_STATUSES = ("succeeded", "skipped", "failed")


def _failed(message: str) -> dict[str, Any]:
    return {"status": "failed", "exit_code": 1, "message": message, "details": {}}


def _write(path: Path, result: dict[str, Any]) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(result), encoding="utf-8")
    temporary.replace(path)


def main(argv: list[str]) -> int:
    request_path, result_path = Path(argv[1]), Path(argv[2])
    request = json.loads(request_path.read_text(encoding="utf-8"))
    try:
        body = runpy.run_path(request["body"], run_name="evalexport_worker_body")
        result = body["run"](request["payload"])
    except Exception as error:  # the body's bugs, and SDK errors it did not expect
        traceback.print_exc()
        result = _failed(f"worker error: {type(error).__name__}: {error}")
    if not isinstance(result, dict) or result.get("status") not in _STATUSES:
        result = _failed(f"worker returned an invalid result: {result!r}")
    _write(result_path, result)
    return int(result.get("exit_code", 1))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
