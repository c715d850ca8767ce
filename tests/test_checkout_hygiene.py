"""What a run of the README's commands leaves: the temporary directories of passing tests are
not kept (#59: each run left about 1.5 GB under ``$TMPDIR/pytest-of-<user>/``), and what it
writes into the checkout is what git ignores."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_a_passing_tests_temporary_directory_is_not_kept(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml((ROOT / "pyproject.toml").read_text())
    pytester.makepyfile(
        """
        def test_writes(tmp_path):
            (tmp_path / "big.bin").write_bytes(b"x" * 1000)

        def test_fails(tmp_path):
            (tmp_path / "kept.txt").write_text("for the post-mortem")
            assert False
        """
    )
    basetemp = pytester.path / "base"
    result = pytester.runpytest_subprocess(f"--basetemp={basetemp}", "-p", "no:xdist")
    result.assert_outcomes(passed=1, failed=1)
    assert not list(basetemp.rglob("big.bin"))
    assert list(basetemp.rglob("kept.txt"))


def test_a_passing_tests_isolated_home_goes_as_the_test_finishes(pytester: pytest.Pytester) -> None:
    """The plugin's ``evalexport_isolation`` root (HOME, caches, stores, the working
    directory: where exports write, environments a test builds) is a scratch directory like
    ``tmp_path``: removed when its test passes, not left for the session's end (4 GB of them
    were, and a silent tail removing them), and kept when it fails."""
    pytester.makepyprojecttoml((ROOT / "pyproject.toml").read_text())
    pytester.makepyfile(
        """
        seen = {}

        def test_a_writes(evalexport_isolation):
            (evalexport_isolation / "home" / "big.bin").write_bytes(b"x" * 1000)
            seen["a"] = evalexport_isolation

        def test_b_finds_it_gone(evalexport_isolation):
            assert not seen["a"].exists()

        def test_c_fails(evalexport_isolation):
            (evalexport_isolation / "home" / "kept.txt").write_text("for the post-mortem")
            assert False
        """
    )
    basetemp = pytester.path / "base"
    result = pytester.runpytest_subprocess(f"--basetemp={basetemp}", "-p", "no:xdist")
    result.assert_outcomes(passed=2, failed=1)
    assert not list(basetemp.rglob("big.bin"))
    assert list(basetemp.rglob("kept.txt"))


def test_what_the_checkout_holds_beyond_its_files_is_ignored_by_git() -> None:
    ignored = ["src/evalexport.egg-info/", ".ruff_cache/", ".mypy_cache/", ".hypothesis/", ".tox/"]
    for path in [".venv/", *ignored]:
        checked = subprocess.run(
            ["git", "check-ignore", "-q", "--no-index", path], cwd=ROOT, check=False
        )
        assert checked.returncode == 0, f"{path} is not ignored by git"
