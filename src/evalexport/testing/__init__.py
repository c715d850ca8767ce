"""Test support for evalexport and for projects that export with it. Every module here is
public; this repository's own fixtures live in its ``tests/support/``.

- :mod:`~evalexport.testing.plugin`: the pytest plugin, loaded through the ``pytest11`` entry
  point: the ``--with_*`` switches, the isolation fixture, ``make_sample_run``, ``gym_oracle``.
- :mod:`~evalexport.testing.factory` and :mod:`~evalexport.testing.gym_shapes`: run
  directories shaped as NeMo Gym writes them, with canary secrets (no pytest imported, so
  scripts and benchmarks use them too); :mod:`~evalexport.testing.gym`: NeMo Gym's own code as
  a test oracle.
- :mod:`~evalexport.testing.mlflow_server`: a real ``mlflow server`` on 127.0.0.1 for a test,
  and ``read_runs`` to read what a store holds.
- :mod:`~evalexport.testing.proxy`: ``FailingProxy``, a TCP proxy that drops, delays or holds
  a tracking server's traffic, for fault tests.
- :mod:`~evalexport.testing.wheels`: wheels built on the fly (a fake SDK's tree, a tiny SDK),
  installable with no package index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalexport._lazy import lazy_attributes

if TYPE_CHECKING:
    from evalexport.testing.factory import CanarySecrets, SampleRun, make_rollout, make_run

__all__ = ["CanarySecrets", "SampleRun", "make_rollout", "make_run"]

# Imported on first use: pytest loads the plugin beside this package at every start, in any
# environment where evalexport is installed, and the factory is not needed there until a
# fixture asks for a run.
__getattr__ = lazy_attributes(__name__, dict.fromkeys(__all__, "evalexport.testing.factory"))


def __dir__() -> list[str]:
    return sorted(__all__)
