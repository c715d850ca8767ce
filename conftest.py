"""Every test of this repository runs isolated (see ``evalexport_isolation``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

# No example database in the checkout, no wall-clock deadline on a loaded CI machine.
settings.register_profile("evalexport", database=None, deadline=None)
settings.load_profile("evalexport")


@pytest.fixture(autouse=True)
def _isolated(evalexport_isolation: Path) -> Path:
    return evalexport_isolation
