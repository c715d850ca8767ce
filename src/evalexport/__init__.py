"""evalexport: export a finished LLM-evaluation run to where results are tracked.

Importing this package imports no backend SDK; exporters that need one run it in a virtual
environment of their own.
"""

from __future__ import annotations

from evalexport.masking import mask_config, save_run_config
from evalexport.metrics import FlatMetrics, flatten_metrics
from evalexport.results import ExitCode, ExportResult, ExportStatus
from evalexport.run import Rollout, RunArtifacts, RunFileError

__version__ = "0.1.0"

__all__ = [
    "ExitCode",
    "ExportResult",
    "ExportStatus",
    "FlatMetrics",
    "Rollout",
    "RunArtifacts",
    "RunFileError",
    "__version__",
    "flatten_metrics",
    "mask_config",
    "save_run_config",
]
