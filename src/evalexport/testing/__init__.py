"""Test support for projects that export with evalexport: what a plugin author's tests need.
Every module here is public; what only evalexport's own tests use (NeMo Gym as an oracle, an
``mlflow server`` per test, fault proxies, a headless browser, Gym jobs, recorded agent shapes)
lives in the repository's ``tests/support/``, not in the installed package.

- :mod:`~evalexport.testing.plugin`: the pytest plugin, loaded through the ``pytest11`` entry
  point: the ``--with_downloads`` and ``--with_<sdk>_sdk`` switches (and the three steps a
  project takes to add its own), the isolation fixture, ``make_sample_run``, ``served_sdk``.
- :mod:`~evalexport.testing.factory`, :mod:`~evalexport.testing.gym_shapes` and
  :mod:`~evalexport.testing.sample_rows`: run directories shaped as NeMo Gym writes them, with
  canary secrets (no pytest imported, so scripts and benchmarks use them too).
- :mod:`~evalexport.testing.guarantees`: the guarantee suite every exporter inherits.
- :mod:`~evalexport.testing.recording`: what a fake SDK records of the worker's calls.
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
