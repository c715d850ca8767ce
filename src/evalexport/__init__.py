"""evalexport: export a finished LLM-evaluation run to where results are tracked.

Importing this package imports no backend SDK, and the public names below are imported on
first use, so ``import evalexport`` and ``evalexport --help`` stay fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalexport._lazy import lazy_attributes

if TYPE_CHECKING:
    from evalexport.masking import mask_config, save_run_config
    from evalexport.metrics import FlatMetrics, flatten_metrics
    from evalexport.results import ExitCode, ExportResult, ExportStatus
    from evalexport.run import Rollout, RunArtifacts, RunFileError

__version__ = "0.1.0"

_PUBLIC = {
    "ExitCode": "evalexport.results",
    "ExportResult": "evalexport.results",
    "ExportStatus": "evalexport.results",
    "FlatMetrics": "evalexport.metrics",
    "Rollout": "evalexport.run",
    "RunArtifacts": "evalexport.run",
    "RunFileError": "evalexport.run",
    "flatten_metrics": "evalexport.metrics",
    "mask_config": "evalexport.masking",
    "save_run_config": "evalexport.masking",
}

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


__getattr__ = lazy_attributes(__name__, _PUBLIC)


def __dir__() -> list[str]:
    return sorted(__all__)
