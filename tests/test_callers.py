"""Messages worded for who asked, where they are written (``evalexport.callers``): an option is
``+name=value`` to the command line and ``name=value`` to a plan or a Python caller, in the
exporter's own checks, in a conversion's pool workers and in an SDK's worker body alike, with
nothing of evalexport's own rewritten afterwards (``spec.options.in_keyword_terms`` stays only
for a plugin's text)."""

from __future__ import annotations

from pathlib import Path

import pytest

import evalexport
from evalexport.callers import Caller, asked_from, current_caller, named_option
from evalexport.results import ExportStatus
from evalexport.testing.factory import make_run

TOOL_AGENT = "aime24_math_tool_agent"


@pytest.fixture
def rewritten(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The messages the pipeline would have had to rewrite for a keyword caller: none of
    evalexport's own may be one."""
    from evalexport.spec import options

    real = options.in_keyword_terms
    found: list[str] = []

    def keeping_them(message: str, names: object) -> str:
        if real(message, names) != message:  # type: ignore[arg-type]
            found.append(message)
        return message

    monkeypatch.setattr(options, "in_keyword_terms", keeping_them)
    return found


def test_an_option_is_named_as_each_caller_gives_it() -> None:
    assert current_caller() is Caller.COMMAND_LINE
    assert named_option("agent", "NAME") == "+agent=NAME"
    for caller in (Caller.PLAN, Caller.PYTHON):
        with asked_from(caller):
            assert named_option("agent", "NAME") == "agent=NAME"
            assert named_option("relax") == "relax"
    assert named_option("relax") == "+relax"


def test_a_python_callers_refusals_name_options_as_keywords_where_they_are_written(
    tmp_path: Path, rewritten: list[str]
) -> None:
    several = make_run(tmp_path / "several")  # two agents in one file
    gaps = make_run(tmp_path / "gaps", agents=(TOOL_AGENT,), rows_with_gaps=[1])
    (tmp_path / "taken").mkdir()
    options = {"agent_version": "1"}
    said = {
        "agents": evalexport.export(
            "atif", several.rollouts, output_dirpath=tmp_path / "a", **options
        ),
        "gaps": evalexport.export("atif", gaps.rollouts, output_dirpath=tmp_path / "b", **options),
        "taken": evalexport.export(
            "atif", gaps.rollouts, output_dirpath=tmp_path / "taken", **options
        ),
        "unknown gap": evalexport.export(
            "atif", gaps.rollouts, output_dirpath=tmp_path / "c", allow_gaps=["nope"], **options
        ),
    }
    assert {result.status for result in said.values()} == {ExportStatus.FAILED}
    assert (
        "one agent's rows at a time with agent=NAME, each with its own output_dirpath and "
        "agent_version (e.g. agent="
    ) in said["agents"].message
    assert "allow_gaps=[resolution_unavailable] accepts them" in said["gaps"].message
    assert "Choose a new output_dirpath" in said["taken"].message
    assert said["unknown gap"].message.startswith("allow_gaps names nope: ")
    assert rewritten == []


def test_the_command_line_keeps_its_tokens(cli, tmp_path: Path) -> None:
    several = make_run(tmp_path / "several")
    typed = cli(
        "atif",
        f"+rollouts_jsonl_fpath={several.rollouts}",
        f"+output_dirpath={tmp_path / 'a'}",
        "+agent_version=1",
    )
    assert "one agent's rows at a time with +agent=NAME, each with its own +output_dirpath" in (
        typed.output
    )


def test_a_conversion_pool_words_its_refusals_for_who_asked(tmp_path: Path) -> None:
    from evalexport.backends.atif.files import convert_file
    from evalexport.trajectory.convert import TrajectoryIdentity

    gaps = make_run(tmp_path / "gaps", agents=(TOOL_AGENT,), tasks=60, rows_with_gaps=range(240))
    identity = TrajectoryIdentity(session_id="s", agent_version="1")
    with asked_from(Caller.PYTHON):
        conversion = convert_file(gaps.rollouts, identity, output=None, workers=2)
    assert len(conversion.rejected) == 240
    assert not any("+allow_gaps" in row for row in conversion.rejected), conversion.rejected[:3]
    assert all(
        "allow_gaps=[resolution_unavailable] accepts them" in row for row in conversion.rejected
    )


@pytest.mark.downloads
def test_a_worker_body_words_its_notices_for_who_asked(
    tmp_path: Path, rewritten, mlflow_python
) -> None:
    run = make_run(tmp_path / "run")
    store = {"mlflow_tracking_uri": f"sqlite:///{tmp_path / 'mlruns.db'}"}
    assert evalexport.export("mlflow", run.rollouts, **store).status is ExportStatus.SUCCEEDED
    copy = make_run(tmp_path / "copy")  # the same bytes in another directory
    second = evalexport.export("mlflow", copy.rollouts, **store)
    assert second.status is ExportStatus.SKIPPED, second.message
    assert "second_copy=true exports another copy" in second.message
    assert "+second_copy" not in second.message
    assert rewritten == []
