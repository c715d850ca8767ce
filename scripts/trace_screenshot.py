"""Make docs/exporters/mlflow-trace.png: a rollout exported with ``+traces=true`` to a real
``mlflow server`` on 127.0.0.1, its trace opened in MLflow's UI by a headless Chromium.

    python scripts/trace_screenshot.py [--out docs/exporters/mlflow-trace.png]

Needs Debian's ``chromium`` and the mlflow exporter's environment (built from the index the
first time, then cached). The run is the factory's tool agent's (``evalexport.testing``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from evalexport.backends.mlflow.exporter import MLflowConfig
from evalexport.isolation import EnvironmentSpec, ensure_environment
from evalexport.testing.factory import make_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: its tests' kit
from tests.support.browser import rendered_showing, screenshot, trace_view_url
from tests.support.mlflow_server import MLflowServer

ROOT = Path(__file__).resolve().parents[1]
FIRST_TRACE = """
import json, sys
from mlflow import MlflowClient
client = MlflowClient(sys.argv[1])
experiment = client.get_experiment_by_name("aime24")
for trace in client.search_traces(experiment_ids=[experiment.experiment_id], max_results=50):
    if any(span.span_type == "TOOL" for span in trace.data.spans):
        print(json.dumps([experiment.experiment_id, trace.info.trace_id]))
        break
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "docs" / "exporters" / "mlflow-trace.png"
    )
    out = parser.parse_args().out
    requirement = MLflowConfig.model_fields["requirement"].default
    environment = ensure_environment(EnvironmentSpec("mlflow", (requirement,)))
    with tempfile.TemporaryDirectory(prefix="trace-screenshot-") as scratch_name:
        scratch = Path(scratch_name)
        run = make_run(scratch / "run", agents=("aime24_math_tool_agent",), tasks=4, repeats=1)
        with MLflowServer(environment.python, scratch / "server") as server:
            exported = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "evalexport",
                    "mlflow",
                    f"+rollouts_jsonl_fpath={run.rollouts}",
                    f"+mlflow_tracking_uri={server.url}",
                    "+traces=true",
                    "--json",
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if exported.returncode != 0:
                raise SystemExit(f"the export failed: {exported.stdout}{exported.stderr}")
            found = subprocess.run(
                [str(environment.python), "-c", FIRST_TRACE, server.url],
                capture_output=True,
                text=True,
                check=True,
            )
            experiment_id, trace_id = json.loads(found.stdout.splitlines()[-1])
            url = trace_view_url(server.url, experiment_id, trace_id)
            if "model turn 1" not in rendered_showing(url, ["model turn 1"]):
                raise SystemExit(f"MLflow's UI did not show the trace at {url}")
            screenshot(url, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
