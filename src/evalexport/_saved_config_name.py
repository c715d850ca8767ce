"""Where a run's saved config lives, beside its rollouts file (SPEC §1).

The one rule :class:`~evalexport.run.RunArtifacts` and
:func:`~evalexport.masking.save_run_config` both follow, in a module of its own so that masking
(which ``run.py`` uses) needs nothing of ``run.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

SAVED_CONFIG_SUFFIX = "_resolved_config.yaml"


def saved_config_path(rollouts_jsonl_fpath: str | os.PathLike[str]) -> Path:
    """``<dir>/<stem>_resolved_config.yaml`` for ``<dir>/<stem>.jsonl``; absolute, never
    resolved, so a symlinked rollouts file does not move the run."""
    rollouts = Path(rollouts_jsonl_fpath).absolute()
    return rollouts.parent / f"{rollouts.stem}{SAVED_CONFIG_SUFFIX}"
