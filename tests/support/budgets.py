"""Example budgets of the property tests whose examples cost most (row masking, the egress
prefilter): the whole budget under CI's Hypothesis profile (``.ci/run`` passes
``--hypothesis-profile=evalexport-thorough``), a fifth of it in the README's test command, where
the same properties are searched every run but less deeply (docs/testing.md, "Property tests")."""

from __future__ import annotations

THOROUGH_PROFILE = "evalexport-thorough"
"""The Hypothesis profile CI runs with: every property test's whole example budget."""

thorough = False
"""Whether this session runs :data:`THOROUGH_PROFILE` (set by the repository's conftest before
any test module is imported)."""


def examples(budget: int) -> int:
    """``budget`` examples under CI's profile; a fifth of it, at least 100, otherwise."""
    return budget if thorough else max(budget // 5, min(budget, 100))
