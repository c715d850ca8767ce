"""NeMo Gym as the test oracle (``--with_gym``).

NeMo Gym defines the records evalexport reads and ships its own strict ATIF exporter; the tests
hold evalexport to both. :func:`ensure_gym_environment` builds, once per cache directory, a
Python 3.13 environment with ``nemo-gym`` 0.7.0 and the modules its import needs (its wheel
declares Python >= 3.13.14, newer than the 3.13 most machines have, so it is installed as if for
3.13.14 and without its full dependency set, ~420 MB). :class:`GymOracle` runs one long-lived
worker there that answers questions with Gym's own code: does Gym's ``TrajectoryRecord`` accept
this record, what does Gym's ``export_rollouts_to_atif`` write for this file.
"""

from __future__ import annotations

from tests.support.gym.environment import (
    GYM_IMPORT_REQUIREMENTS,
    GYM_REQUIREMENT,
    GymEnvironmentError,
    ensure_gym_environment,
    find_python_313,
)
from tests.support.gym.oracle import GymExport, GymOracle

__all__ = [
    "GYM_IMPORT_REQUIREMENTS",
    "GYM_REQUIREMENT",
    "GymEnvironmentError",
    "GymExport",
    "GymOracle",
    "ensure_gym_environment",
    "find_python_313",
]
