"""Test support for evalexport and for projects that export with it.

The pytest plugin (:mod:`evalexport.testing.plugin`) is loaded through the ``pytest11`` entry
point. The run factory here imports no pytest, so scripts and benchmarks use it too.
"""

from __future__ import annotations

from evalexport.testing.factory import CanarySecrets, SampleRun, make_rollout, make_run

__all__ = ["CanarySecrets", "SampleRun", "make_rollout", "make_run"]
