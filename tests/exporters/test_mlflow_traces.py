"""Each rollout as an MLflow trace linked to the export's run (``+traces=true``, #43): one
trace a rollout, read back through ``MlflowClient.search_traces`` from the embedded store and a
real ``mlflow server``; spans for the model turns and tool calls in order, with the rollout's
own times where recorded; task, rollout, agent and reward as tags (searchable by reward);
masked as every file the export sends; the dry run lists them; a rerun adds none."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evalexport.backends.mlflow.traces import trace_of
from evalexport.backends.mlflow.worker import traces_refusal
from evalexport.reading.rollouts import Rollout
from evalexport.testing.gym_shapes import AgentRun, ToolUse, input_message
from tests.support.mlflow_server import run_mlflow_script

READ_TRACES = r"""
import json, sys
from mlflow import MlflowClient
client = MlflowClient(sys.argv[1])
experiment = client.get_experiment_by_name(sys.argv[2])
run_id = sys.argv[3]

def read(where):
    traces, token = [], None
    while True:
        page = client.search_traces(
            experiment_ids=[experiment.experiment_id], run_id=run_id, max_results=500,
            page_token=token, filter_string=where or None,
        )
        for trace in page:
            spans = sorted(trace.data.spans, key=lambda span: span.start_time_ns)
            traces.append({
                "trace_id": trace.info.trace_id,
                "experiment_id": experiment.experiment_id,
                "tags": {k: v for k, v in trace.info.tags.items() if not k.startswith("mlflow.")},
                "feedback": {
                    a.name: a.value for a in trace.info.assessments if hasattr(a, "value")
                },
                "spans": [
                    {"name": s.name, "type": s.span_type, "parent": s.parent_id is not None,
                     "inputs": s.inputs, "outputs": s.outputs, "start": s.start_time_ns}
                    for s in spans
                ],
            })
        token = page.token
        if not token:
            return traces

print(json.dumps([read(where) for where in sys.argv[4:] or [""]]))
"""
"""The run's traces, read with ``MlflowClient.search_traces``: one list for each filter given
after the run id (``""``: every trace), in one process (an ``import mlflow`` is seconds)."""


def _mlflow(python: Path, script: str, *arguments: str) -> Any:
    """What ``script`` prints last, as JSON, run in the mlflow environment ``python`` (its
    long-lived reader: mlflow imported once, not once a script)."""
    return json.loads(run_mlflow_script(python, script, *arguments).splitlines()[-1])


def _traced_export(sample: Any, uri: str, experiment: str) -> list[str]:
    """The command line of an MLflow export of ``sample`` with traces, its result as JSON."""
    return [
        "mlflow",
        f"+rollouts_jsonl_fpath={sample.rollouts}",
        f"+mlflow_tracking_uri={uri}",
        f"+mlflow_experiment_name={experiment}",
        "+traces=true",
        "--json",
    ]


def _read_traces(python: Path, uri: str, experiment: str, run_id: str, *wheres: str):
    """The run's traces matching each filter in ``wheres`` (every trace, with none): one
    list for each filter, or the one list of every trace."""
    found = _mlflow(python, READ_TRACES, uri, experiment, run_id, *wheres)
    return found if wheres else found[0]


def _rollout(row: dict[str, Any]) -> Rollout:
    return Rollout(line_number=1, record=row)


def _tool_row() -> dict[str, Any]:
    run = AgentRun("3", "3-1", [input_message("user", "What is 7**2024 % 1000?")])
    run.turn(
        reasoning="Compute it.",
        tools=[ToolUse("python", {"code": "print(pow(7, 2024, 1000))"}, "801")],
        finish_reason="tool_calls",
    )
    run.turn(answer=["801"], finish_reason="stop")
    return {
        "_ng_task_index": 3,
        "_ng_rollout_index": 1,
        "agent_ref": {"type": "responses_api_agents", "name": "math_agent"},
        "reward": 1.0,
        "ng_trajectory": run.record(resolved=True),
    }


# The trace of a rollout, without MLflow ---------------------------------------------------------


def test_a_rollouts_trace_holds_its_turns_and_tool_calls_in_order_at_their_recorded_times() -> None:
    row = _tool_row()
    trace = trace_of(_rollout(row))
    assert trace["name"] == "rollout 3-1"
    assert trace["tags"] == {
        "task_index": "3",
        "rollout_index": "1",
        "agent": "math_agent",
        "reward": "1.0",
    }
    assert [(s["type"], s["name"]) for s in trace["spans"]] == [
        ("LLM", "model turn 1"),
        ("TOOL", "python"),
        ("LLM", "model turn 2"),
    ]
    first, tool, second = trace["spans"]
    assert first["outputs"]["reasoning"] == ["Compute it."]
    assert first["outputs"]["tool_calls"][0]["name"] == "python"
    assert tool["outputs"] == {"output": "801"}
    assert second["inputs"]["messages"][0]["output"] == "801"  # what was new to the model
    assert trace["outputs"] == {"answer": "801"}
    calls = row["ng_trajectory"]["model_calls"]
    assert first["start_ns"] == int(calls[0]["started_at"] * 1e9)
    assert second["end_ns"] == int(calls[1]["completed_at"] * 1e9)
    recorded_tool = row["ng_trajectory"]["tool_calls"][0]
    assert tool["start_ns"] == int(recorded_tool["started_at"] * 1e9)
    assert trace["attributes"]["evalexport.timestamps"] == "recorded"
    assert [s["start_ns"] for s in trace["spans"]] == sorted(s["start_ns"] for s in trace["spans"])


def test_a_row_without_ng_trajectory_is_traced_from_its_conversation() -> None:
    row = _tool_row()
    record = row.pop("ng_trajectory")
    conversation = record["invocations"][0]["conversation"]
    row["responses_create_params"] = {"input": conversation[:1]}
    row["response"] = {
        "output": conversation[1:],
        "usage": {"input_tokens": 9, "output_tokens": 4, "total_tokens": 13},
    }
    trace = trace_of(_rollout(row))
    assert [s["type"] for s in trace["spans"]] == ["LLM", "TOOL", "LLM"]
    assert trace["attributes"]["evalexport.timestamps"].startswith("not recorded")
    assert trace["attributes"]["mlflow.chat.tokenUsage"] == {
        "input_tokens": 9,
        "output_tokens": 4,
        "total_tokens": 13,
    }
    starts = [s["start_ns"] for s in trace["spans"]]
    assert starts == sorted(starts)
    assert len(set(starts)) == 3


@pytest.mark.parametrize("total", [None, 0])
def test_a_usage_without_its_total_gets_the_sum_of_its_counts(total) -> None:
    """Gym's rows record input and output tokens and no total, or a total of 0; MLflow's UI
    shows the trace's total (it showed ``total_tokens: 0`` beside 2,660 and 2,841)."""
    row = _tool_row()
    row["response"] = {
        "output": [],
        "usage": {"input_tokens": 2660, "output_tokens": 2841, "total_tokens": total},
    }
    usage = trace_of(_rollout(row))["attributes"]["mlflow.chat.tokenUsage"]
    assert usage == {"input_tokens": 2660, "output_tokens": 2841, "total_tokens": 5501}


def test_an_aviary_row_is_traced_from_its_last_transition_which_holds_the_others() -> None:
    """Gym's aviary agent with ``return_transitions`` records a list of conversations (one a
    step) as ``response.output``; its trace was empty (no span, no input)."""
    from tests.support.recorded_shapes import transitions_row

    trace = trace_of(_rollout(transitions_row(3)))
    assert [(s["name"], s["type"]) for s in trace["spans"]] == [
        ("model turn 1", "LLM"),
        ("calculator", "TOOL"),
        ("model turn 2", "LLM"),
        ("submit_answer", "TOOL"),
    ]
    assert trace["inputs"]["messages"][0]["content"] == "What is 3 + 40?"


def test_a_row_without_indices_is_named_by_its_line_and_tagged_with_what_it_has() -> None:
    """Gym's own example files hold rows without ``_ng_task_index`` and ``_ng_rollout_index``
    (58 of 0.7.0's): their traces were all ``rollout None-None``, tagged ``None``."""
    from tests.support.recorded_shapes import game_row, unindexed_row

    trace = trace_of(Rollout(line_number=7, record=unindexed_row(game_row(0))))
    assert trace["name"] == "rollout at line 7"
    assert trace["tags"] == {"agent": "card_game_agent", "reward": "1.0"}
    assert trace_of(_rollout(game_row(2)))["name"] == "rollout 2-0"


def test_an_mlflow_without_run_linked_traces_is_refused_before_anything_is_made() -> None:
    class Old:
        def start_trace(self, name: str, inputs: object = None) -> None: ...

    class New:
        def start_trace(self, name: str, run_id: str | None = None) -> None: ...

    assert "needs MLflow 3 or later" in (traces_refusal(Old) or "")
    assert "+requirement='mlflow>=3,<4'" in (traces_refusal(Old) or "")
    assert traces_refusal(New) is None


# Against the real MLflow ------------------------------------------------------------------------


def _plant_secrets(sample) -> None:
    """A rollout whose prompt holds secrets, as a careless prompt would (in its trajectory's
    conversation, where the trace's inputs come from)."""
    rows = [json.loads(line) for line in sample.rollouts.read_text().splitlines()]
    leak = (
        " ".join(f"{name}={value}" for name, value in sample.canaries.by_key.items())
        + " Authorization: Bearer "
        + sample.canaries.in_values["authorization_header"]
    )
    prompt = rows[0]["ng_trajectory"]["invocations"][0]["conversation"][0]
    if isinstance(prompt["content"], str):
        prompt["content"] += leak
    else:
        prompt["content"][0]["text"] += leak
    sample.rollouts.write_text("".join(json.dumps(row) + "\n" for row in rows))


@pytest.mark.downloads
@pytest.mark.parametrize("store", ["embedded", "server"])
def test_every_rollout_is_one_trace_linked_to_the_run_and_a_rerun_adds_none(
    store, cli, mlflow_python, mlflow_server, make_sample_run, tmp_path
) -> None:
    sample = make_sample_run("traced", tasks=3, repeats=2)
    _plant_secrets(sample)
    uri = mlflow_server.url if store == "server" else f"sqlite:///{tmp_path / 'mlflow.db'}"
    experiment = f"traces-{store}-{sample.canaries.suffix}"
    arguments = [
        "mlflow",
        f"+rollouts_jsonl_fpath={sample.rollouts}",
        f"+mlflow_tracking_uri={uri}",
        f"+mlflow_experiment_name={experiment}",
        "+traces=true",
        "+upload_rollouts=false",  # Gym's rollouts table is uploaded as the run holds it
        "--json",
    ]
    planned = json.loads(cli(*arguments, "--dry-run").stdout)
    assert planned["status"] == "succeeded", planned["message"]
    assert planned["message"].startswith("dry run:")
    rollouts = sample.rollout_count
    assert planned["plan"]["sections"]["traces"] == [
        f"{rollouts} traces, one a rollout, linked to the run"
    ]
    done = cli(*arguments)
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded", result["message"]
    assert result["details"]["traces"] == rollouts
    assert f" at {uri}, with {rollouts} traces logged" in result["message"]  # counted
    again = json.loads(cli(*arguments).stdout)
    assert again["status"] == "skipped"
    # Read after the rerun, in one process: the rerun added no trace.
    traces, rewarded = _read_traces(
        mlflow_python, uri, experiment, result["run_id"], "", "tags.reward = '1.0'"
    )
    assert len(traces) == rollouts  # every one found by the run it is linked to
    assert all(trace["feedback"] == {"reward": float(trace["tags"]["reward"])} for trace in traces)
    keys = {
        (trace["tags"]["agent"], trace["tags"]["task_index"], trace["tags"]["rollout_index"])
        for trace in traces
    }
    assert len(keys) == rollouts
    for trace in traces:
        root, *children = trace["spans"]
        assert root["type"] == "AGENT"
        assert not root["parent"]
        assert children
        assert all(child["parent"] for child in children)
        assert {child["type"] for child in children} <= {"LLM", "TOOL"}
    assert 0 < len(rewarded) <= rollouts
    assert all(trace["tags"]["reward"] == "1.0" for trace in rewarded)
    assert sample.canaries.found_in(json.dumps(traces)) == []
    stored = (
        [mlflow_server.root]
        if store == "server"
        else [path for path in tmp_path.iterdir() if path != sample.run.run_dir]
    )  # the store and the artifacts beside it, not the run that holds the planted secrets
    assert stored
    assert [leak for root in stored for leak in sample.canaries.found_in_tree(root)] == []


@pytest.mark.downloads
@pytest.mark.long
def test_the_worker_says_how_far_its_traces_are_while_it_logs_them(
    cli, mlflow_server, make_sample_run, monkeypatch, caplog
) -> None:
    """A log (CI, Slurm) gets a line each interval while the traces are logged, with the rate
    and the time left: each trace is a step of the worker's (it was silent from ``exporting
    to`` to the end, 95 s for 1,200 rollouts)."""
    monkeypatch.setenv("EVALEXPORT_PROGRESS_INTERVAL", "0.1")
    sample = make_sample_run("progress", tasks=30, repeats=8)
    with caplog.at_level("INFO", logger="evalexport"):
        result = json.loads(cli(*_traced_export(sample, mlflow_server.url, "progress")).stdout)
    assert result["status"] == "succeeded", result["message"]
    lines = [r.getMessage() for r in caplog.records if " steps (" in r.getMessage()]
    totals = {line.split(" of ", 1)[1].split()[0] for line in lines}
    assert len(totals) == 1
    (total,) = totals
    assert int(total) > sample.rollout_count  # the traces are steps
    done = [int(line.split(": ", 1)[1].split(" of ")[0]) for line in lines]
    assert any(0 < each < int(total) for each in done), lines  # said while it worked
    # Each long stage named as it begins: the steps' numbers alone do not say what they are.
    said = [r.getMessage() for r in caplog.records]
    uploading = next(line for line in said if line.startswith("mlflow: uploading "))
    assert re.fullmatch(r"mlflow: uploading \d+ files \([\d.,]+ [KM]iB\)", uploading), uploading
    assert f"mlflow: logging {sample.rollout_count} traces, one a rollout" in said


@pytest.mark.downloads
def test_the_guides_search_and_evaluation_of_the_traces_run_as_written(
    cli, mlflow_server, make_sample_run
) -> None:
    """docs/exporters/mlflow.md's blocks (a search of the traces, then mlflow.genai.evaluate
    with a scorer of one's own over them), run with the MLflow the export used (it named
    ``search_traces(run_id=...)`` alone, which MLflow 3.17 refuses, and a tag search that
    looked in the active experiment only)."""
    import re
    import sys

    sample = make_sample_run("searched", tasks=3, repeats=2)
    result = json.loads(cli(*_traced_export(sample, mlflow_server.url, "searched")).stdout)
    assert result["status"] == "succeeded", result["message"]
    guide = (Path(__file__).resolve().parents[2] / "docs" / "exporters" / "mlflow.md").read_text()
    search, evaluation = re.findall(
        r"<!-- tested: tests/exporters/test_mlflow_traces.py -->\n```python\n(.*?)```", guide, re.S
    )
    search = search.replace(
        '"sqlite:///mlruns.db", "RUN_ID"', f"{mlflow_server.url!r}, {result['run_id']!r}"
    )
    said = "[len(traces), len(failures), len(solved), evaluation.metrics, evaluation.run_id]"
    script = f"{search}\n{evaluation}\nimport json\nprint(json.dumps({said}))\n"
    ran = subprocess.run(
        [sys.executable, "-m", "evalexport", "envs", "run", "mlflow", "python", "-c", script],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    found, failed, solved, scores, evaluated = json.loads(ran.stdout.splitlines()[-1])
    rewards = [json.loads(line)["reward"] for line in sample.rollouts.read_text().splitlines()]
    assert found == sample.rollout_count
    assert (failed, solved) == (rewards.count(0.0), rewards.count(1.0))
    assert failed
    assert solved
    # mlflow.genai.evaluate scored every exported trace with the guide's scorer, in a run of
    # its own beside the export's.
    assert set(scores) == {"boxed/mean"}
    assert 0.0 <= scores["boxed/mean"] <= 1.0
    assert evaluated != result["run_id"]


@pytest.mark.downloads
@pytest.mark.browser
def test_mlflows_traces_view_shows_a_rollout_step_by_step(
    cli, mlflow_python, mlflow_server, make_sample_run, tmp_path
) -> None:
    """What a user sees: the run's trace opened in MLflow's UI, in a real headless Chromium,
    shows the rollout and its spans (its model turns and its tool call) and its reward, a
    feedback assessment."""
    from tests.support.browser import (
        rendered_showing,
        screenshot,
        trace_view_url,
        traces_list_url,
    )

    sample = make_sample_run("viewed", agents=("aime24_math_tool_agent",), tasks=2, repeats=1)
    experiment = f"trace-view-{sample.canaries.suffix}"
    done = cli(*_traced_export(sample, mlflow_server.url, experiment))
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded", result["message"]
    traces = _read_traces(mlflow_python, mlflow_server.url, experiment, result["run_id"])
    shown = next(trace for trace in traces if any(s["type"] == "TOOL" for s in trace["spans"]))
    url = trace_view_url(mlflow_server.url, shown["experiment_id"], shown["trace_id"])
    root, *spans = shown["spans"]
    page = rendered_showing(url, [span["name"] for span in shown["spans"]])
    assert root["name"] in page
    listed = traces_list_url(mlflow_server.url, shown["experiment_id"])
    table = rendered_showing(listed, ["reward"])
    assert "reward" in table  # the rollout's reward, a feedback assessment MLflow's view shows
    for span in spans:
        assert span["name"] in page, f"{span['name']} not in MLflow's trace view"
    picture = screenshot(url, tmp_path / "trace.png")
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert picture.stat().st_size > 20_000  # a page, not a blank


def test_a_server_that_takes_no_span_batches_gets_its_traces_span_by_span() -> None:
    """An MLflow server before 3.4 refuses ``log_spans`` before writing anything: the worker
    logs that batch and every later trace one span at a time instead of failing."""
    import runpy

    from evalexport.backends.mlflow import worker as worker_module

    body = runpy.run_path(worker_module.__file__)
    calls: list[str] = []

    class OldServer:
        def log(self, batch: list[Any]) -> int:
            raise NotImplementedError("log_spans is not supported: server 3.3 is less than 3.4")

    class Client:
        def start_trace(self, name: str, **_: object) -> Any:
            calls.append(f"start {name}")
            return type("Root", (), {"trace_id": "tr-1", "span_id": "s-1"})()

        def start_span(self, name: str, **_: object) -> Any:
            calls.append(f"span {name}")
            return type("Child", (), {"span_id": "s-2"})()

        def end_span(self, *_: object, **__: object) -> None:
            pass

        def end_trace(self, *_: object, **__: object) -> None:
            calls.append("end")

    trace = {
        "name": "rollout 0-0",
        "tags": {},
        "inputs": {},
        "outputs": {},
        "attributes": {},
        "start_ns": 1,
        "end_ns": 2,
        "reward": 1.0,
        "spans": [
            {
                "name": "model turn 1",
                "type": "LLM",
                "inputs": {},
                "outputs": {},
                "start_ns": 1,
                "end_ns": 2,
            }
        ],
    }

    class Lease:  # the export's own all along
        run_id = "run"

        def still_mine(self) -> bool:
            return True

    count, batches = body["_logged"](Lease(), OldServer(), [trace, trace], 0, Client(), "1")
    assert (count, batches) == (2, None)
    assert calls == ["start rollout 0-0", "span model turn 1", "end"] * 2
    with pytest.raises(NotImplementedError):  # past the first batch it is no version question
        body["_logged"](Lease(), OldServer(), [trace], 100, Client(), "1")


def test_a_stop_signal_in_a_trace_batch_stops_the_worker_once_the_batch_is_in() -> None:
    """The store holds whole traces only: a stop signal that arrives while a batch is written
    is raised once the batch is done (the runner's handler then stops the worker)."""
    import os
    import runpy
    import signal
    import time

    from evalexport.backends.mlflow import worker as worker_module

    body = runpy.run_path(worker_module.__file__)

    class Stopped(Exception):
        pass

    def runner_handler(signum: int, frame: object) -> None:
        raise Stopped(signum)

    written: list[str] = []

    def batch() -> None:
        with body["_signals_held"]():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)  # the signal has arrived: the batch goes on
            written.append("the batch's spans, links and feedback")

    kept = signal.signal(signal.SIGTERM, runner_handler)
    try:
        with pytest.raises(Stopped):
            batch()
    finally:
        signal.signal(signal.SIGTERM, kept)
    assert written == ["the batch's spans, links and feedback"]
