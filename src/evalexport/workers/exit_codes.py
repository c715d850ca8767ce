"""Every exit code of evalexport, defined once: a leaf that the product (results, the CLI)
and the wire (``protocol.py``, whose workers report them) both import. Standard library only:
the launcher ships it beside the protocol into an SDK's environment."""

from __future__ import annotations

import enum

__all__ = ["ExitCode"]


class ExitCode(enum.IntEnum):
    """Every exit code of evalexport, defined once: the CLI's, a worker's (which may report 1,
    3 or 4 itself, or ``128 + signal`` when stopped) and an export process's of a plan."""

    OK = 0
    """Succeeded, or skipped because there was nothing new to do."""
    FAILED = 1
    """Failed; the message says why and what to do."""
    USAGE = 2
    """Unknown exporter, unknown or invalid option or setting."""
    NO_VERDICT = 3
    """Stored by the service, but no verdict arrived before the timeout."""
    REFUSED = 4
    """Refused by the service."""
    PENDING = 5
    """Not run yet: a Slurm array task still queued (or running) when its results were
    gathered."""
    HANGUP = 129
    """Stopped by SIGHUP (the terminal went away)."""
    INTERRUPTED = 130
    """Stopped by SIGINT (Ctrl-C)."""
    TERMINATED = 143
    """Stopped by SIGTERM (``kill``, Slurm's time limit or ``scancel``, a container stop)."""

    @property
    def meaning(self) -> str:
        """What the code means, in the words ``evalexport --help`` and the README use."""
        return _MEANINGS.get(self, "stopped by a signal (128 + its number)")

    @classmethod
    def for_signal(cls, signum: int) -> ExitCode:
        """``128 + signal``, as a shell reports a process a signal stopped: the one place that
        rule is written."""
        return cls(128 + signum)

    @property
    def stopped_by_signal(self) -> bool:
        """Whether this is the code of an export a stop signal ended."""
        return self >= 128


_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "succeeded or skipped",
    ExitCode.FAILED: "failed",
    ExitCode.USAGE: "usage error",
    ExitCode.NO_VERDICT: "stored without a verdict before the timeout",
    ExitCode.REFUSED: "refused by the service",
    ExitCode.PENDING: "not run yet (a queued Slurm array task)",
    ExitCode.HANGUP: "stopped by SIGHUP",
    ExitCode.INTERRUPTED: "stopped by SIGINT (Ctrl-C)",
    ExitCode.TERMINATED: "stopped by SIGTERM",
}
