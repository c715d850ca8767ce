"""tinytrack as a later release changed it: ``Client.log`` takes ``values``, not ``metrics``,
and ``Run`` lost ``run_id``. The contract check must catch both."""

from __future__ import annotations

__version__ = "2.0"


class Run:
    def __init__(self, identifier: str) -> None:
        self.identifier = identifier


class Client:
    def __init__(self, project: str, *, token: str | None = None) -> None:
        self.project = project

    def start(self, name: str) -> Run:
        return Run(name)

    def log(self, run: Run, values: dict[str, float], *, step: int = 0) -> None:
        pass
