"""The pytest plugin, as another project would use it (through the pytest11 entry point)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalexport.testing.plugin import SWITCHES

MARKED_TESTS = (
    "import pytest\n"
    + "".join(f"\n@pytest.mark.{marker}\ndef test_needs_{marker}(): pass\n" for marker in SWITCHES)
    + "\ndef test_plain(): pass\n"
)
"""One test gated by each switch (every installed exporter's SDK among them), and one plain."""


def test_marked_tests_are_skipped_naming_their_switch(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(MARKED_TESTS)
    result = pytester.runpytest("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=len(SWITCHES))
    for switch, _ in SWITCHES.values():
        result.stdout.fnmatch_lines([f"*run with {switch} to include it*"])


@pytest.mark.parametrize(("marker", "switch"), [(m, s) for m, (s, _) in SWITCHES.items()])
def test_a_switch_runs_the_tests_it_gates(
    pytester: pytest.Pytester, marker: str, switch: str
) -> None:
    pytester.makepyfile(MARKED_TESTS)
    result = pytester.runpytest(switch, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, skipped=len(SWITCHES) - 1)
    result.stdout.no_fnmatch_line(f"*run with {switch}*")


def test_only_the_marker_gates_a_test_not_a_name_that_matches_it(
    pytester: pytest.Pytester,
) -> None:
    """A test in a directory named like a marker, or whose parameter id is one, is no marked
    test: it runs without the switch (tests/faults/ and a golden case named ``faults`` did not)."""
    for marker in SWITCHES:
        pytester.mkpydir(marker).joinpath(f"test_in_{marker}.py").write_text(
            "def test_in_a_directory_named_like_a_marker(): pass\n"
        )
    pytester.makepyfile(
        test_ids="import pytest\n"
        f"@pytest.mark.parametrize('case', {sorted(SWITCHES)!r})\n"
        "def test_case(case): pass\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2 * len(SWITCHES))


def test_the_markers_are_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    for marker, (switch, _) in SWITCHES.items():
        result.stdout.fnmatch_lines([f"@pytest.mark.{marker}:*{switch}*"])


def test_the_switches_appear_in_their_own_help_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["evalexport contract tests:", "*--with_evalrdl_sdk*"])


def test_isolation_replaces_home_caches_and_stores_and_drops_tokens(
    evalexport_isolation: Path,
) -> None:
    root = evalexport_isolation
    for variable in (
        "HOME",
        "XDG_CACHE_HOME",
        "EVALEXPORT_CACHE_DIR",
        "WANDB_DIR",
        "EVALRDL_FAKE_STORE",
    ):
        assert Path(os.environ[variable]).is_relative_to(root), variable
    assert Path(os.environ["PIP_CACHE_DIR"]) != Path.home() / ".cache" / "pip"
    assert Path.cwd().is_relative_to(root)
    assert os.environ["WANDB_MODE"] == "offline"
    for variable in (
        "EVALRDL_TOKEN",
        "GITLAB_TOKEN",
        "WANDB_API_KEY",
        "MLFLOW_TRACKING_TOKEN",
        "MLFLOW_TRACKING_URI",
    ):
        assert variable not in os.environ


def test_isolation_removes_any_secret_named_variable(
    pytester: pytest.Pytester, monkeypatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_API_KEY", "live")
    monkeypatch.setenv("GITLAB_TOKEN", "live")
    pytester.makepyfile(
        """
        import os
        def test_clean(evalexport_isolation):
            assert "MY_SERVICE_API_KEY" not in os.environ
            assert "GITLAB_TOKEN" not in os.environ
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_the_run_factory_fixture_plants_this_tests_canaries(make_sample_run, canaries) -> None:
    sample = make_sample_run("a", tasks=1, agents=("x",), repeats=1)
    assert sample.canaries is canaries
    assert sample.rollout_count == 1
    assert canaries.found_in_tree(sample.run.run_dir) == []
    live = make_sample_run("b", mask_saved_config=False)
    assert canaries.found_in_tree(live.run.saved_config)
