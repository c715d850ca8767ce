"""The SDK's exceptions, with the real bases: every SDK error is an ``EvalRDLError``."""

from evalrdl import _fake


class EvalRDLError(Exception):
    """Base class of every error the SDK raises."""


@_fake.record.reads("evalrdl.IntakeRefused")
class IntakeRefused(EvalRDLError):
    """The service refused the upload at one of its intake stages."""

    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(f"intake refused at stage {stage!r}: {reason}")
        self.stage = stage
        self.reason = reason


@_fake.record.reads("evalrdl.ClientTooOld")
class ClientTooOld(EvalRDLError):
    """The service no longer accepts this SDK version."""

    def __init__(self, message: str, minimum_version: str) -> None:
        super().__init__(message)
        self.minimum_version = minimum_version


class TokenNotFound(EvalRDLError):
    """No token in EVALRDL_TOKEN, GITLAB_TOKEN, GITLAB_PRIVATE_TOKEN, nor from glab."""
