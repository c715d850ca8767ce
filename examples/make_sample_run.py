"""Regenerate the bundled sample run in examples/aime24/ (deterministic).

    python examples/make_sample_run.py

The run is what an aime24 evaluation with two agents (a plain one and one using tools), six
tasks and four repeats leaves behind: 48 rollouts with ng_trajectory records, aggregate
metrics, a masked saved config and a folder of sidecars.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from evalexport.testing.factory import CanarySecrets, make_run

TARGET = Path(__file__).parent / "aime24"


def main() -> None:
    shutil.rmtree(TARGET, ignore_errors=True)
    sample = make_run(TARGET, seed=2024, canaries=CanarySecrets(suffix="0example0"), sidecars=True)
    print(f"wrote {sample.rollout_count} rollouts to {sample.rollouts}")


if __name__ == "__main__":
    main()
