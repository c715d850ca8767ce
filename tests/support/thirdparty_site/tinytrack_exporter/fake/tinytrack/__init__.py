"""A fake of the tinytrack SDK (a third party's tracking client): the real names and
signatures, recording each call to ``$TINYTRACK_FAKE_CALL_LOG`` (as evalexport's recorded-call
check reads it: ``{"name", "args", "kwargs", "site"}``) instead of sending it."""

from __future__ import annotations

import json
import os
import sys

__version__ = "1.0"


class Run:
    """What ``Client.start`` returns; the worker reads ``run_id``."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id


class Client:
    def __init__(self, project: str, *, token: str | None = None) -> None:
        self.project = project
        _record("tinytrack.Client", [project], {"token": token} if token else {})

    def start(self, name: str) -> Run:
        _record("tinytrack.Client.start", ["<client>", name], {})
        return Run(f"{self.project}-{name}")

    def log(self, run: Run, metrics: dict[str, float], *, step: int = 0) -> None:
        _record("tinytrack.Client.log", ["<client>", "<run>"], {"metrics": metrics, "step": step})


def _record(name: str, args: list[object], kwargs: dict[str, object]) -> None:
    """The call as the worker made it: a method's arguments with ``self`` first."""
    if path := os.environ.get("TINYTRACK_FAKE_CALL_LOG"):
        caller = sys._getframe(2)
        site = f"{caller.f_code.co_filename}:{caller.f_lineno}"
        with open(path, "a", encoding="utf-8") as log:
            record = {"name": name, "args": args, "kwargs": kwargs, "site": site}
            log.write(json.dumps(record) + "\n")
