"""evalrdl: upload evaluation runs to the EvalRDL service (fake for contract tests)."""

from evalrdl.client import Client, Upload, Uploads
from evalrdl.exceptions import ClientTooOld, EvalRDLError, IntakeRefused, TokenNotFound

__version__ = "0.0.241"

__all__ = [
    "Client",
    "ClientTooOld",
    "EvalRDLError",
    "IntakeRefused",
    "TokenNotFound",
    "Upload",
    "Uploads",
    "__version__",
]
