"""evalexport: export a finished LLM-evaluation run to where results are tracked.

Importing this package imports no backend SDK, and the public names below are imported on
first use, so ``import evalexport`` and ``evalexport --help`` stay fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalexport._lazy import lazy_attributes

if TYPE_CHECKING:
    from evalexport.api import dry_run, export, inspect
    from evalexport.inspection import RunInspection
    from evalexport.masking import mask_config, save_run_config
    from evalexport.metrics import FlatMetrics, flatten_metrics
    from evalexport.results import ExitCode, ExportResult, ExportStatus
    from evalexport.run import Rollout, RunArtifacts, RunFileError

from evalexport._version import __version__

PLUGIN_API_VERSION = 4
"""The exporter plugin API that ``docs/plugins.md`` describes. Plugins written from every
earlier guide keep working (``tests/test_plugin_guides.py``): 1 is the 0.1.0 guide, 2 the
0.2.0 guide, 3 the 0.3.0 and 0.4.0 guides', 4 this release's (the exporter spec)."""

_PUBLIC = {
    "dry_run": "evalexport.api",
    "export": "evalexport.api",
    "inspect": "evalexport.api",
    "RunInspection": "evalexport.inspection",
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
    "PLUGIN_API_VERSION",
    "ExitCode",
    "ExportResult",
    "ExportStatus",
    "FlatMetrics",
    "Rollout",
    "RunArtifacts",
    "RunFileError",
    "RunInspection",
    "__version__",
    "dry_run",
    "export",
    "flatten_metrics",
    "inspect",
    "mask_config",
    "save_run_config",
]


__getattr__ = lazy_attributes(__name__, _PUBLIC)


def __dir__() -> list[str]:
    return sorted(__all__)
