"""The MLflow client uploads artifacts straight to the artifact store, with that store's own
credentials: the worker is given them (``AWS_*``, ``MLFLOW_S3_ENDPOINT_URL``), and nothing of
the caller's shell its exporter does not declare (#56). Exported for real to an S3-compatible
store (moto's server on 127.0.0.1), through boto3 in the worker's environment."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import MLFLOW_REQUIREMENT, session_environment

pytestmark = [pytest.mark.downloads, pytest.mark.long]

BUCKET = "evalexport-artifacts"
REQUIREMENTS = (MLFLOW_REQUIREMENT, "boto3")
"""MLflow, with the client S3 needs (a user adds it so: ``+requirement=[...]``)."""
OPTION = "+requirement=[" + ", ".join(f"'{r}'" for r in REQUIREMENTS) + "]"


@pytest.fixture(scope="session")
def moto_python(sdk_env_cache: Path, evalexport_download_cache: Path) -> Path:
    return session_environment(sdk_env_cache, evalexport_download_cache, "moto", "moto[server]")


@pytest.fixture
def s3_store(moto_python: Path, tmp_path: Path) -> Iterator[str]:
    """An S3-compatible store on 127.0.0.1 (moto's server); its endpoint URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [str(moto_python), "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "moto.log").open("w"),
        start_new_session=True,
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    try:
        yield endpoint
    finally:
        server.kill()
        server.wait()


_CLIENT = """
import json, sys, boto3
from mlflow.tracking import MlflowClient
endpoint, action, *rest = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
if action == "prepare":
    uri, experiment = rest
    s3.create_bucket(Bucket=BUCKET)
    MlflowClient(uri).create_experiment(experiment, artifact_location=f"s3://{BUCKET}/mlflow")
else:
    listed = s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    print(json.dumps(sorted(item["Key"].rsplit("/", 1)[1] for item in listed)))
""".replace("BUCKET", repr(BUCKET))


def test_an_export_to_an_s3_compatible_artifact_store_is_given_its_credentials(
    cli, make_sample_run, mlflow_python, s3_store, tmp_path, monkeypatch
) -> None:
    from evalexport.isolation import EnvironmentSpec, ensure_environment

    credentials = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing-secret-1234",
        "AWS_DEFAULT_REGION": "us-east-1",
        "MLFLOW_S3_ENDPOINT_URL": s3_store,
    }
    for name, value in credentials.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HF_TOKEN", "hf-unrelated-token-5678")  # no business of MLflow's
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    python = ensure_environment(EnvironmentSpec("mlflow", REQUIREMENTS)).python
    prepared = subprocess.run(
        [str(python), "-c", _CLIENT, s3_store, "prepare", uri, "on-s3"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert prepared.returncode == 0, prepared.stderr[-2000:]
    launched: list[dict[str, str]] = []
    popen = subprocess.Popen

    def recorded(*arguments, **keywords):
        if any(str(part).endswith("evalexport_worker_runner.py") for part in arguments[0]):
            launched.append(dict(keywords.get("env") or {}))
        return popen(*arguments, **keywords)

    monkeypatch.setattr(subprocess, "Popen", recorded)
    sample = make_sample_run()
    done = cli(
        "mlflow",
        f"+rollouts_jsonl_fpath={sample.rollouts}",
        f"+mlflow_tracking_uri={uri}",
        "+mlflow_experiment_name=on-s3",
        OPTION,
        "--json",
    )
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded", result["message"]
    listed = subprocess.run(
        [str(python), "-c", _CLIENT, s3_store, "list"],
        capture_output=True,
        text=True,
        check=True,
    )
    keys = json.loads(listed.stdout)
    assert {"global_config.json", "rollouts.json", "samples.json"} <= set(keys), keys
    assert launched, "the export started no worker"
    given = launched[-1]
    assert {name: given.get(name) for name in credentials} == credentials
    assert "HF_TOKEN" not in given
