"""Runs inside the NeMo Gym environment: one JSON request per line in, one answer per line out.

Standard library plus nemo_gym only; evalexport is not installed there.
"""

import json
import sys
import traceback
from pathlib import Path


def main() -> None:
    from nemo_gym import __version__
    from nemo_gym.atif_export import ExportAtifConfig, export_rollouts_to_atif
    from nemo_gym.rollout_observability import TrajectoryRecord

    for line in sys.stdin:
        request = json.loads(line)
        action = request["action"]
        answer: dict[str, object] = {}
        if action == "version":
            import nemo_gym

            answer = {
                "version": __version__,
                "site_packages": str(Path(nemo_gym.__file__).resolve().parents[1]),
            }
        elif action == "validate":
            try:
                TrajectoryRecord.model_validate(request["record"])
                answer = {"error": None}
            except Exception as error:  # the oracle reports, the test decides
                answer = {"error": f"{type(error).__name__}: {error}"}
        elif action == "atif":
            try:
                config = ExportAtifConfig(
                    rollouts_jsonl_fpath=Path(request["rollouts"]),
                    output_dirpath=Path(request["output"]),
                    session_id=request["session_id"],
                    agent_version=request["agent_version"],
                )
                result = export_rollouts_to_atif(config)
                answer = {"trajectory_count": result.trajectory_count, "error": None}
            except Exception as error:
                answer = {
                    "error": str(error) or traceback.format_exc(limit=3),
                    "type": type(error).__name__,
                }
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
