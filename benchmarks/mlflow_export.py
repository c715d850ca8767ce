"""MLflow export cost against a real local server: evalexport, the bare floor, one call per value.

    python benchmarks/mlflow_export.py [--metrics 10000] [--params 2000] [--naive-values 1000]

Builds (or reuses) the mlflow exporter's environment, starts ``mlflow server`` on 127.0.0.1
behind a counting proxy, and logs a run with that many metrics and params three ways, each as a
worker process in that environment (so each pays the same start-up and ``import mlflow``):

* the mlflow exporter, end to end (``evalexport mlflow``: plan, worker, batches, artifacts);
* the floor: a bare ``MlflowClient.log_batch`` loop, 1,000 metrics or 100 params a call, and
  nothing else (no experiment lookup beyond one, no artifacts, no fingerprint);
* a naive body calling ``log_metric``/``log_param`` once per value, on the first
  ``--naive-values`` values and extrapolated to all of them (the full run takes minutes).

Prints tracking requests and wall time side by side and evalexport's time as a ratio to the
floor. Needs the package index the first time (the environment is cached after that).

    python benchmarks/mlflow_export.py --big-run 50,200

A big run instead: for each size (MB of rollouts, rows as the factory makes them), the whole
``evalexport mlflow`` export with ``upload_rollouts=true`` against the local server, in a fresh
process, against its floor: reading and hashing the three files once, then a worker that logs
the same batched metrics and a bare ``log_artifact`` of the rollouts file's bytes, alternated
``--repeat`` times (default 3). Prints the median wall times, their ratio, and the peak RSS of
the evalexport process and of its worker.

    python benchmarks/mlflow_export.py --traces 1000,100000

Traces: for each count, runs of that many rollouts in two shapes (the factory's rows, a tool
call each: short; a coding agent's loop of 18 tool calls, 38 spans a trace: long), exported to
new embedded stores by ``evalexport mlflow`` in fresh processes without and with
``+traces=true``, alternated ``--repeat`` times; and the floor, MLflow's own batch ingestion of
the same spans (``TracingClient.log_spans``, 100 traces a call) with its own ``log_feedback``
a trace, timed in MLflow's environment with the spans built before the clock starts. Prints
the traces' cost (the median export with traces minus without) as a ratio to the floor's
median, the time a trace, and the worker's peak RSS (flat as the run grows).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from evalexport.spec.options import parse_options

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: its tests' kit

FLOOR_BODY = """
def run(payload):
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient
    import time
    client = MlflowClient(tracking_uri=payload["tracking_uri"])
    experiment = client.get_experiment_by_name(payload["experiment_name"])
    experiment_id = experiment.experiment_id if experiment else client.create_experiment(payload["experiment_name"])
    run_id = client.create_run(experiment_id, run_name="floor").info.run_id
    stamp = int(time.time() * 1000)
    metrics = [Metric(k, v, stamp, 0) for b in payload["batches"] for k, v in b["metrics"].items()]
    params = [Param(k, v) for b in payload["batches"] for k, v in b["params"].items()]
    for start in range(0, len(metrics), 1000):
        client.log_batch(run_id, metrics=metrics[start:start + 1000])
    for start in range(0, len(params), 100):
        client.log_batch(run_id, params=params[start:start + 100])
    client.set_terminated(run_id, "FINISHED")
    return {"status": "succeeded", "exit_code": 0, "message": "floor", "details": {"run_id": run_id}}
"""

NAIVE_BODY = """
def run(payload):
    from mlflow.tracking import MlflowClient
    client = MlflowClient(tracking_uri=payload["tracking_uri"])
    experiment = client.get_experiment_by_name(payload["experiment_name"])
    experiment_id = experiment.experiment_id if experiment else client.create_experiment(payload["experiment_name"])
    run_id = client.create_run(experiment_id, run_name="naive").info.run_id
    for batch in payload["batches"]:
        for key, value in batch["metrics"].items():
            client.log_metric(run_id, key, value)
        for key, value in batch["params"].items():
            client.log_param(run_id, key, value)
        for key, value in batch["tags"].items():
            client.set_tag(run_id, key, value)
    client.set_terminated(run_id, "FINISHED")
    return {"status": "succeeded", "exit_code": 0, "message": "naive", "details": {"run_id": run_id}}
"""


def _warm_up(server: Any, environment: Any, scratch: Path, payload: dict[str, Any]) -> None:
    """One full-size run first, untimed: a new server's first large run costs seconds more
    (measured: ~11 s instead of ~5 s), whoever logs it, and would land on the first contestant."""
    from evalexport.isolation import run_worker

    body = scratch / "warm_up.py"
    body.write_text(FLOOR_BODY)
    run_worker(environment, body, {**payload, "tracking_uri": server.url}, time_limit=3600)


def make_big_run(directory: Path, metrics: int, params: int) -> Path:
    from evalexport.masking import save_run_config
    from evalexport.testing.factory import make_run

    sample = make_run(directory, tasks=2, repeats=2)
    per_agent = metrics // 2
    aggregate = [
        {
            "agent_ref": {"name": agent},
            "agent_metrics": {
                f"group{i // 100}/pass@1[avg-of-4]/metric{i}": i / 7 for i in range(per_agent)
            },
        }
        for agent in ("agent_a", "agent_b")
    ]
    sample.run.aggregate_metrics.write_text(json.dumps(aggregate))
    config = {
        f"section{j // 50}": {f"option{i}": f"value {i}" for i in range(j, j + 50)}
        for j in range(0, params, 50)
    }
    save_run_config(config, sample.rollouts)
    return sample.rollouts


ARTIFACT_FLOOR_BODY = """
def run(payload):
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient
    import time
    client = MlflowClient(tracking_uri=payload["tracking_uri"])
    experiment = client.get_experiment_by_name(payload["experiment_name"])
    experiment_id = experiment.experiment_id if experiment else client.create_experiment(payload["experiment_name"])
    run_id = client.create_run(experiment_id, run_name="floor").info.run_id
    stamp = int(time.time() * 1000)
    metrics = [Metric(k, v, stamp, 0) for b in payload["batches"] for k, v in b["metrics"].items()]
    for start in range(0, len(metrics), 1000):
        client.log_batch(run_id, metrics=metrics[start:start + 1000])
    client.log_artifact(run_id, payload["artifact"])
    client.set_terminated(run_id, "FINISHED")
    return {"status": "succeeded", "exit_code": 0, "message": "floor", "details": {}}
"""

EXPORT_IN_A_PROCESS = """
import json, os, resource, sys, threading, time
from evalexport.spec.options import parse_options
from evalexport.spec.registry import load_exporter
from evalexport.run import RunArtifacts
from evalexport.pipeline import export_run

def descendants(root):
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as stat:
                    parent = int(stat.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(name)
    found, pending = [], [str(root)]
    while pending:
        for child in children.get(int(pending.pop()), []):
            found.append(child)
            pending.append(child)
    return found

def anonymous_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0

peak_anonymous_kib, stopped = 0, threading.Event()
def sample():  # every 50 ms, the largest anonymous memory of any process the export started
    global peak_anonymous_kib
    while not stopped.wait(0.05):
        if os.path.isdir("/proc"):
            for pid in descendants(os.getpid()):
                peak_anonymous_kib = max(peak_anonymous_kib, anonymous_kib(pid))
threading.Thread(target=sample, daemon=True).start()

exporter = load_exporter(sys.argv[2] if len(sys.argv) > 2 else "mlflow")()
config = parse_options(exporter, json.loads(sys.argv[1]))
start = time.perf_counter()
result = export_run(exporter, RunArtifacts.from_rollouts_path(config.rollouts_jsonl_fpath), config)
seconds = time.perf_counter() - start
stopped.set()
print(json.dumps({
    "seconds": seconds,
    "status": result.status.value,
    "message": result.message,
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "worker_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    "worker_anonymous_mb": peak_anonymous_kib / 1024,
}))
"""
"""The export in a fresh process: its time, its peak RSS, its children's (the largest of the
worker and any helper, file pages an SDK maps included: ``ru_maxrss``), and the largest
anonymous memory of any process it started (``RssAnon``, sampled every 50 ms on Linux: the
memory a process holds, without the files it maps)."""


def make_rollouts(directory: Path, megabytes: int) -> Path:
    """A run whose rollouts file holds ``megabytes`` MB of the factory's rows, each task
    index its own."""
    from evalexport.testing.factory import make_run

    sample = make_run(directory, tasks=4, repeats=2)
    rows = [json.loads(line) for line in sample.rollouts.read_text().splitlines() if line]
    target = megabytes * 2**20
    written = 0
    with sample.rollouts.open("w") as handle:
        index = 0
        while written < target:
            row = {**rows[index % len(rows)], "_ng_task_index": index}
            line = json.dumps(row) + "\n"
            handle.write(line)
            written += len(line.encode())
            index += 1
    return sample.rollouts


def _plan(exporter: Any, run: Any, config: Any) -> Any:
    """The dry run's plan for ``run``: the exporter's hooks, as the pipeline calls them."""
    from evalexport.spec.hooks import call_hook

    handed: dict[str, Any] = {"run": run, "config": config}
    handed["target"] = call_hook(exporter.resolve, **handed)
    handed["prepared"] = call_hook(exporter.read, **handed)
    try:
        return call_hook(exporter.plan, **handed)
    finally:
        handed["prepared"].discard()


def _payload(exporter: Any, run: Any, config: Any, scratch: Path) -> dict[str, Any]:
    """The payload the exporter's worker gets for ``run``: its hooks, as the pipeline calls
    them (resolve, read, deliver), outside an export."""
    from evalexport.spec.hooks import call_hook

    handed: dict[str, Any] = {"run": run, "config": config}
    handed["target"] = call_hook(exporter.resolve, **handed)
    handed["prepared"] = call_hook(exporter.read, **handed)
    try:
        delivery = call_hook(exporter.deliver, **handed, fingerprint=None, scratch=scratch)
    finally:
        handed["prepared"].discard()
    return dict(delivery.payload)


def big_run(sizes: list[int], repeat: int = 3) -> None:
    import hashlib
    import statistics
    import subprocess
    import sys

    from evalexport.backends.mlflow.exporter import MLflowExporter
    from evalexport.isolation import EnvironmentSpec, ensure_environment, run_worker
    from evalexport.run import RunArtifacts
    from tests.support.mlflow_server import MLflowServer

    exporter = MLflowExporter()
    requirement = exporter.Config.model_fields["requirement"].default
    environment = ensure_environment(EnvironmentSpec("mlflow", (requirement,)))
    rows = []
    with tempfile.TemporaryDirectory(prefix="mlflow-big-") as scratch_name:
        scratch = Path(scratch_name)
        with MLflowServer(environment.python, scratch / "server") as server:
            body = scratch / "artifact_floor.py"
            body.write_text(ARTIFACT_FLOOR_BODY)
            # Untimed: a new server's first large run costs seconds more, whoever logs it.
            warm_rollouts = make_rollouts(scratch / "warm", min(sizes))
            warm = RunArtifacts.from_rollouts_path(warm_rollouts)
            warm_config = parse_options(
                exporter,
                {
                    "rollouts_jsonl_fpath": str(warm_rollouts),
                    "mlflow_tracking_uri": server.url,
                    "upload_rollouts": False,
                },
            )
            run_worker(
                environment,
                body,
                {
                    **_payload(exporter, warm, warm_config, scratch),
                    "experiment_name": "warm",
                    "artifact": str(warm_rollouts),
                },
                time_limit=3600,
            )
            for megabytes in sizes:
                rollouts = make_rollouts(scratch / f"run{megabytes}", megabytes)
                run = RunArtifacts.from_rollouts_path(rollouts)
                ours_runs, unmasked_runs, floors = [], [], []
                for attempt in range(repeat):  # alternated, so load hits both alike
                    options = {
                        "rollouts_jsonl_fpath": str(rollouts),
                        "mlflow_tracking_uri": server.url,
                        "mlflow_experiment_name": f"big{megabytes}-{attempt}",
                    }
                    for masked in (True, False):  # the rows through the egress gate, or not
                        run.export_marker("mlflow").unlink(missing_ok=True)  # export anew
                        given = {
                            **options,
                            "mask_rows": masked,
                            "mlflow_experiment_name": f"big{megabytes}-{attempt}-{masked}",
                        }
                        (ours_runs if masked else unmasked_runs).append(
                            json.loads(
                                subprocess.run(
                                    [sys.executable, "-c", EXPORT_IN_A_PROCESS, json.dumps(given)],
                                    check=True,
                                    capture_output=True,
                                    text=True,
                                ).stdout
                            )
                        )
                    payload = _payload(
                        exporter,
                        run,
                        parse_options(exporter, {**options, "upload_rollouts": False}),
                        scratch,
                    )
                    start = time.perf_counter()
                    for path in (run.rollouts, run.aggregate_metrics, run.saved_config):
                        digest = hashlib.sha256()
                        with path.open("rb") as handle:
                            while chunk := handle.read(2**20):
                                digest.update(chunk)
                    outcome = run_worker(
                        environment,
                        body,
                        {
                            **payload,
                            "experiment_name": f"floor{megabytes}-{attempt}",
                            "artifact": str(rollouts),
                        },
                        time_limit=3600,
                    )
                    floors.append(time.perf_counter() - start)
                    if outcome.result is None or outcome.result["status"] != "succeeded":
                        raise SystemExit(f"the floor failed: {outcome.log_tail()}")
                ours = {
                    **ours_runs[-1],
                    "seconds": statistics.median(r["seconds"] for r in ours_runs),
                    "unmasked": statistics.median(r["seconds"] for r in unmasked_runs),
                    "rss_mb": max(r["rss_mb"] for r in ours_runs),
                    "worker_rss_mb": max(r["worker_rss_mb"] for r in ours_runs),
                }
                rows.append((megabytes, ours, statistics.median(floors), "succeeded", 0.0))
    print(
        f"{'rollouts':>9} {'evalexport s':>13} {'unmasked s':>11} {'floor s':>8} {'ratio':>6} "
        f"{'unmasked':>9} {'masking':>8} {'RSS MB':>7} {'worker RSS MB':>14}  status"
    )
    for megabytes, ours, floor, status, _ in rows:
        cost = ours["seconds"] - ours["unmasked"]
        print(
            f"{megabytes:>6} MB {ours['seconds']:13.2f} {ours['unmasked']:11.2f} {floor:8.2f} "
            f"{ours['seconds'] / floor:5.2f}x {ours['unmasked'] / floor:8.2f}x {cost:+7.2f}s "
            f"{ours['rss_mb']:7.0f} {ours['worker_rss_mb']:14.0f}"
            f"  {ours['status']} / floor {status}"
        )
    first, last = rows[0][1], rows[-1][1]
    print(
        f"peak RSS from {rows[0][0]} MB to {rows[-1][0]} MB: evalexport "
        f"{last['rss_mb'] / first['rss_mb']:.2f}x, its worker "
        f"{last['worker_rss_mb'] / first['worker_rss_mb']:.2f}x (goal: within 1.2x); "
        "time: goal within 1.3x of the floor with the rows masked (ratio), the default; "
        "masking: what the egress gate costs (evalexport s - unmasked s)"
    )


TRACES_FLOOR = r"""
import json, sys, time, base64, os
import mlflow
from mlflow import MlflowClient
from mlflow.entities import AssessmentSource, Span
from mlflow.tracing.client import TracingClient

uri, path = sys.argv[1], sys.argv[2]
mlflow.set_tracking_uri(uri)
client = MlflowClient(uri)
experiment_id = client.create_experiment("floor")
run_id = client.create_run(experiment_id).info.run_id
source = AssessmentSource(source_type="CODE", source_id="floor")


def span(trace_id, trace_bytes, span_bytes, parent, name, kind, timed, extra):
    return Span.from_dict({
        "trace_id": base64.b64encode(trace_bytes).decode(),
        "span_id": base64.b64encode(span_bytes).decode(),
        "parent_span_id": base64.b64encode(parent).decode() if parent else None,
        "name": name, "start_time_unix_nano": timed["start_ns"], "end_time_unix_nano": timed["end_ns"],
        "status": {"code": "STATUS_CODE_OK", "message": ""}, "events": [],
        "attributes": {"mlflow.traceRequestId": json.dumps(trace_id), "mlflow.spanType": json.dumps(kind),
                       "mlflow.spanInputs": json.dumps(timed["inputs"]),
                       "mlflow.spanOutputs": json.dumps(timed["outputs"]), **extra},
    })


batches, batch = [], []
for line in open(path, encoding="utf-8"):  # built before the clock starts: MLflow's part alone
    trace = json.loads(line)
    number = int.from_bytes(os.urandom(16), "big")
    trace_id, trace_bytes, root = f"tr-{number:032x}", number.to_bytes(16, "big"), os.urandom(8)
    extra = {f"mlflow.traceTag.{k}": json.dumps(v) for k, v in trace["tags"].items()}
    spans = [span(trace_id, trace_bytes, root, None, trace["name"], "AGENT", trace, extra)]
    spans += [span(trace_id, trace_bytes, os.urandom(8), root, s["name"], s["type"], s, {}) for s in trace["spans"]]
    batch.append((trace_id, trace.get("reward"), spans))
    if len(batch) == 100:
        batches.append(batch); batch = []
if batch:
    batches.append(batch)
tracing = TracingClient(uri)
started = time.perf_counter()
for batch in batches:
    tracing.log_spans(experiment_id, [s for _, _, spans in batch for s in spans])
    for trace_id, reward, _ in batch:
        if reward is not None:
            mlflow.log_feedback(trace_id=trace_id, name="reward", value=reward, source=source)
print(json.dumps({"seconds": time.perf_counter() - started, "spans": sum(len(sp) for b in batches for _, _, sp in b)}))
"""
"""MLflow's own batch ingestion of the same spans, and its own ``log_feedback`` per trace: the
floor the traces are held to (the spans built before the clock starts)."""


def _long_rows(rollouts: Path, calls: int = 18) -> None:
    """Each row made a coding agent's loop: ``calls`` tool calls, each with its reasoning and
    its output (38 spans a trace at 18), the answer last."""
    made = rollouts.with_suffix(".long")
    with rollouts.open(encoding="utf-8") as given, made.open("w", encoding="utf-8") as out:
        for line in given:  # a row at a time: this process stays small (see _run_made_apart)
            row = json.loads(line)
            del row["ng_trajectory"]
            answer = row["response"]["output"][-1]
            loop: list[object] = []
            for number in range(calls):
                call = f"call_{number}"
                loop += [
                    {
                        "id": f"rs_{number}",
                        "type": "reasoning",
                        "summary": [
                            {
                                "type": "summary_text",
                                "text": f"Step {number}: run the next command.",
                            }
                        ],
                    },
                    {
                        "id": call,
                        "type": "function_call",
                        "call_id": call,
                        "name": "bash",
                        "arguments": json.dumps({"command": f"pytest -q tests/test_{number}.py"}),
                    },
                    {"type": "function_call_output", "call_id": call, "output": "1 passed " * 20},
                ]
            row["response"]["output"] = [*loop, answer]
            out.write(json.dumps(row) + "\n")
    made.replace(rollouts)


def _run_made_apart(directory: Path, agents: tuple[str, ...], count: int) -> Any:
    """The factory's run of ``count`` rollouts, made in a process of its own: made here, its
    rows would stay in this process's memory, and every export forked after it would report
    that memory as its peak RSS (a child's peak counts the pages it shares before ``exec``)."""
    import subprocess
    import sys

    from evalexport.run import RunArtifacts

    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; "
            "from evalexport.testing.factory import make_run; "
            "make_run(Path(sys.argv[1]), agents=tuple(sys.argv[2].split(',')), "
            "tasks=int(sys.argv[3]), repeats=1)",
            str(directory),
            ",".join(agents),
            str(count),
        ],
        check=True,
    )
    return RunArtifacts.from_rollouts_path(next(directory.glob("*_rollouts.jsonl")))


def traces(counts: list[int], repeat: int = 3, shapes: tuple[str, ...] = ("short", "long")) -> None:
    """For each count and row shape: ``evalexport mlflow`` without and with ``+traces=true``
    (fresh processes, new embedded stores, alternated ``repeat`` times), and the floor, MLflow's
    own batch ingestion of the same spans with a ``log_feedback`` a trace; the traces' cost
    (with - without) as a ratio to the floor."""
    import statistics
    import subprocess
    import sys

    from evalexport.backends.mlflow.exporter import MLflowExporter
    from evalexport.backends.mlflow.traces import trace_of
    from evalexport.isolation import EnvironmentSpec, ensure_environment
    from evalexport.reading import iter_rollouts
    from evalexport.run import RunArtifacts
    from evalexport.testing.factory import make_run

    requirement = MLflowExporter.Config.model_fields["requirement"].default
    python = ensure_environment(EnvironmentSpec("mlflow", (requirement,))).python

    def export(rollouts: Path, store: Path, traced: bool, count: int) -> tuple[float, int]:
        """The export's wall time and the peak RSS (KiB) of it and its worker alone: the
        child's own rusage (``wait4``), not every child's so far."""
        started = time.perf_counter()
        with tempfile.TemporaryFile("w+") as out:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "evalexport",
                    "mlflow",
                    f"+rollouts_jsonl_fpath={rollouts}",
                    f"+mlflow_tracking_uri=sqlite:///{store}",
                    f"+traces={str(traced).lower()}",
                    "+upload_rollouts=false",
                    "--json",
                ],
                stdout=out,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(status)
            elapsed = time.perf_counter() - started
            out.seek(0)
            printed = out.read()
        assert process.returncode == 0, printed
        assert json.loads(printed)["details"].get("traces", 0) == (count if traced else 0)
        return elapsed, usage.ru_maxrss

    def floor(rollouts: Path, store: Path) -> tuple[float, int]:
        traces_file = store.with_suffix(".traces.jsonl")
        run = RunArtifacts.from_rollouts_path(rollouts)
        with traces_file.open("w", encoding="utf-8") as out:
            for rollout in iter_rollouts(run):
                out.write(json.dumps(trace_of(rollout), separators=(",", ":")) + "\n")
        completed = subprocess.run(
            [str(python), "-c", TRACES_FLOOR, f"sqlite:///{store}", str(traces_file)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert completed.returncode == 0, completed.stderr[-3000:]
        answer = json.loads(completed.stdout.splitlines()[-1])
        return float(answer["seconds"]), int(answer["spans"])

    with tempfile.TemporaryDirectory(prefix="mlflow-traces-") as scratch_name:
        scratch = Path(scratch_name)
        agents = ("aime24_math_tool_agent",)
        warm = make_run(scratch / "warm", agents=agents, tasks=2, repeats=1)
        export(warm.rollouts, scratch / "warm.db", False, 2)
        for count in counts:
            for shape in shapes:
                times: dict[bool, list[float]] = {False: [], True: []}
                floors: list[float] = []
                peak = 0
                spans = 0
                for attempt in range(repeat):
                    run = _run_made_apart(scratch / f"{count}-{shape}-{attempt}", agents, count)
                    if shape == "long":
                        _long_rows(run.rollouts)
                    for traced in (False, True):
                        store = scratch / f"{count}-{shape}-{attempt}-{traced}.db"
                        elapsed, rss = export(run.rollouts, store, traced, count)
                        times[traced].append(elapsed)
                        peak = max(peak, rss) if traced else peak
                    seconds, spans = floor(
                        run.rollouts, scratch / f"{count}-{shape}-{attempt}-floor.db"
                    )
                    floors.append(seconds)
                plain, traced_time = statistics.median(times[False]), statistics.median(times[True])
                cost, floor_time = traced_time - plain, statistics.median(floors)
                print(
                    f"{count} rollouts, {shape} rows ({spans // count} spans a trace), medians of "
                    f"{repeat}: export {plain:.2f} s without traces, {traced_time:.2f} s with; "
                    f"traces {cost:.2f} s ({cost / count * 1000:.2f} ms a trace), floor "
                    f"{floor_time:.2f} s: {cost / floor_time:.2f}x (goal: within 1.3x); worker "
                    f"peak RSS {peak // 1024} MB"
                )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--metrics", type=int, default=10_000)
    parser.add_argument("--params", type=int, default=2_000)
    parser.add_argument("--naive-values", type=int, default=1_000)
    parser.add_argument("--big-run", default="", help="comma-separated MB of rollouts, e.g. 50,200")
    parser.add_argument("--repeat", type=int, default=3, help="big-run attempts (medians)")
    parser.add_argument("--shapes", default="short,long", help="--traces row shapes")
    parser.add_argument(
        "--traces",
        default="",
        help="comma-separated rollouts to export with traces, e.g. 1000,100000",
    )
    args = parser.parse_args()
    if args.traces:
        traces(
            [int(count) for count in args.traces.split(",")],
            args.repeat,
            tuple(args.shapes.split(",")),
        )
        return
    if args.big_run:
        big_run([int(size) for size in args.big_run.split(",")], args.repeat)
        return
    from evalexport.backends.mlflow.exporter import MLflowExporter
    from evalexport.isolation import EnvironmentSpec, ensure_environment, run_worker
    from evalexport.pipeline import export_run
    from evalexport.run import RunArtifacts
    from tests.support.mlflow_server import MLflowServer
    from tests.support.proxy import FailingProxy

    exporter = MLflowExporter()
    requirement = exporter.Config.model_fields["requirement"].default
    environment = ensure_environment(EnvironmentSpec("mlflow", (requirement,)))
    with tempfile.TemporaryDirectory(prefix="mlflow-bench-") as scratch_name:
        scratch = Path(scratch_name)
        rollouts = make_big_run(scratch / "run", args.metrics, args.params)
        run = RunArtifacts.from_rollouts_path(rollouts)
        with MLflowServer(environment.python, scratch / "server") as server:
            rows = []
            warm = parse_options(
                exporter,
                {
                    "rollouts_jsonl_fpath": str(rollouts),
                    "mlflow_tracking_uri": server.url,
                    "mlflow_experiment_name": "bench",
                    "upload_rollouts": False,
                },
            )
            _warm_up(server, environment, scratch, _payload(exporter, run, warm, scratch))
            proxy = FailingProxy(server.port)
            config = parse_options(
                exporter,
                {
                    "rollouts_jsonl_fpath": str(rollouts),
                    "mlflow_tracking_uri": proxy.url,
                    "mlflow_experiment_name": "bench",
                    "upload_rollouts": False,
                },
            )
            start = time.perf_counter()
            result = export_run(exporter, run, config)
            rows.append(
                (
                    "evalexport (log_batch)",
                    proxy.requests,
                    time.perf_counter() - start,
                    result.status.value,
                )
            )
            proxy.close()
            plan = _plan(exporter, run, config)

            def worker(body: str, name: str, payload: dict) -> tuple[int, float, str]:
                path = scratch / f"{name}.py"
                path.write_text(body)
                proxy = FailingProxy(server.port)
                payload = {**payload, "tracking_uri": proxy.url}
                begin = time.perf_counter()
                outcome = run_worker(environment, path, payload, time_limit=3600)
                seconds = time.perf_counter() - begin
                proxy.close()
                status = outcome.result["status"] if outcome.result else outcome.log_tail()
                return proxy.requests, seconds, str(status)

            payload = _payload(exporter, run, config, scratch)
            rows.append(("floor (bare log_batch loop)", *worker(FLOOR_BODY, "floor", payload)))
            values = [
                (kind, key, value)
                for batch in payload["batches"]
                for kind in ("metrics", "params")
                for key, value in batch[kind].items()
            ][: args.naive_values]
            sample = [{"metrics": {}, "params": {}, "tags": {}}]
            for kind, key, value in values:
                sample[0][kind][key] = value
            requests, seconds, status = worker(NAIVE_BODY, "naive", {**payload, "batches": sample})
            total = len(plan.metric_names) + len(plan.param_names) + len(plan.tag_names)
            scale = total / max(len(values), 1)
            rows.append(
                (
                    f"naive (x{scale:.0f} of {len(values)})",
                    round(requests * scale),
                    seconds * scale,
                    status,
                )
            )
    print(
        f"run: {len(plan.metric_names)} metrics, {len(plan.param_names)} params, {len(plan.tag_names)} tags; "
        f"{plan.batches} log_batch requests planned"
    )
    print(f"{'exporter':<30} {'requests':>9} {'wall s':>8}  status")
    for name, requests, seconds, status in rows:
        print(f"{name:<30} {requests:9d} {seconds:8.2f}  {status}")
    (_, ours_requests, ours_s, _), (_, _, floor_s, _), (_, naive_requests, naive_s, _) = rows
    print(f"evalexport / floor: {ours_s / floor_s:.2f}x the time (goal: within 1.2x)")
    print(
        f"naive / evalexport: {naive_requests / max(ours_requests, 1):.0f}x the requests, "
        f"{naive_s / ours_s:.1f}x the time (extrapolated)"
    )


if __name__ == "__main__":
    main()
