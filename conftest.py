"""Every test of this repository runs isolated (see ``evalexport_isolation``)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from hypothesis import settings

from evalexport.testing.plugin import Switches, add_switches, mark_switches, skip_unswitched
from tests.support import budgets

# No example database in the checkout, no wall-clock deadline on a loaded CI machine. CI's
# profile (--hypothesis-profile=evalexport-thorough) also gives the costliest property tests
# their whole example budget (tests/support/budgets.py).
settings.register_profile("evalexport", database=None, deadline=None)
settings.register_profile(budgets.THOROUGH_PROFILE, parent=settings.get_profile("evalexport"))
settings.load_profile("evalexport")


@pytest.fixture(autouse=True)
def _isolated(evalexport_isolation: Path) -> Path:
    return evalexport_isolation


REPOSITORY_SWITCHES: Switches = {
    "gym": ("--with_gym", "runs NeMo Gym 0.7.0 as the test oracle"),
    "slurm": ("--with_slurm", "starts a one-node Slurm cluster (root, slurm-wlm and munge)"),
    "browser": ("--with_browser", "opens a page in a headless Chromium (Debian's chromium)"),
    "faults": (
        "--with_faults",
        "breaks real exports on purpose (MLflow servers killed or down, stop signals, "
        "parallel exports into one store, full disks, runs left by stopped exports or held by "
        "other machines): minutes of CPU",
    ),
}
"""This repository's own switches, besides the public plugin's (``--with_downloads``,
``--with_<sdk>_sdk``): what only evalexport's own tests need (docs/testing.md)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    add_switches(parser, REPOSITORY_SWITCHES)


def pytest_configure(config: pytest.Config) -> None:
    mark_switches(config, REPOSITORY_SWITCHES)
    config.addinivalue_line(
        "markers",
        "long: takes ten seconds or more; handed out first (pytest_collection_modifyitems)",
    )
    budgets.thorough = config.getoption("hypothesis_profile", None) == budgets.THOROUGH_PROFILE


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_unswitched(config, items, REPOSITORY_SWITCHES)
    # The longest tests first, the rest in their order: pytest-xdist hands tests out in this
    # order as processes free up, so no core is left waiting on one long test at the end.
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what collection built (the test modules, their parameters, pytest's own
    objects): it lives for the whole session, and every full collection the tests trigger would
    scan it again (about a tenth of the in-process tests' CPU)."""
    gc.collect()
    gc.freeze()
