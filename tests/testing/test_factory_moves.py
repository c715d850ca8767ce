"""Helpers the factory exposed keep working from where they were, with a warning naming their
new home, for one minor release (#59: ``make_trajectory`` gave an ImportError)."""

from __future__ import annotations

import pytest


def test_a_moved_helper_imports_from_the_factory_with_a_warning_naming_its_home() -> None:
    from evalexport.testing import sample_rows

    with pytest.warns(DeprecationWarning, match=r"moved to evalexport\.testing\.sample_rows"):
        from evalexport.testing.factory import make_trajectory
    assert make_trajectory is sample_rows.make_trajectory


def test_a_name_the_factory_never_had_is_still_an_error() -> None:
    import evalexport.testing.factory as factory

    with pytest.raises(AttributeError, match="no attribute 'make_nothing'"):
        _ = factory.make_nothing
