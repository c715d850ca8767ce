"""The rollouts as a table, as NeMo Gym's live exporters upload them (SPEC §3.6, §3.7).

One column, ``Rollout``, one row per rollout holding the rollout as compact JSON text, without
``ng_trajectory`` and without the request and response payloads of ``ng_model_call_capture``
(Gym's ``_rollout_for_export``): the rows of a run exported afterwards are those of the same run
logged live.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from evalexport.run import RunArtifacts

__all__ = ["ROLLOUTS_TABLE_KEY", "ROLLOUT_COLUMN", "rollout_for_export", "write_rollouts_table"]

ROLLOUT_COLUMN: Final = "Rollout"
ROLLOUTS_TABLE_KEY: Final = "Rollouts"
"""The key of the W&B table (Gym's ``WandbExporter.ROLLOUTS_TABLE_KEY``)."""
_MODEL_CALL_PAYLOADS: Final = frozenset({"request", "response", "request_raw", "response_raw"})


def rollout_for_export(rollout: Mapping[str, Any]) -> dict[str, Any]:
    """A rollout as Gym's exporters upload it: no trajectory, no model-call payloads."""
    row = {key: value for key, value in rollout.items() if key != "ng_trajectory"}
    capture = row.pop("ng_model_call_capture", None)
    if isinstance(capture, Mapping):
        stripped = dict(capture)
        calls = capture.get("calls")
        if isinstance(calls, list):
            stripped["calls"] = [
                {key: value for key, value in call.items() if key not in _MODEL_CALL_PAYLOADS}
                for call in calls
                if isinstance(call, Mapping)
            ]
        else:
            stripped.pop("calls", None)
        row["ng_model_call_capture"] = stripped
    return row


def write_rollouts_table(run: RunArtifacts, path: Path) -> Path:
    """``{"columns": ["Rollout"], "data": [[...], ...]}`` (MLflow's and W&B's table JSON), streamed."""
    with path.open("w", encoding="utf-8") as handle:
        handle.write('{"columns": ["' + ROLLOUT_COLUMN + '"], "data": [')
        for position, rollout in enumerate(run.iter_rollouts()):
            text = json.dumps(
                rollout_for_export(rollout.record), ensure_ascii=False, separators=(",", ":")
            )
            handle.write(("," if position else "") + "\n" + json.dumps([text], ensure_ascii=False))
        handle.write("\n]}\n")
    return path
