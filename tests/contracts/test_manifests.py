"""The committed manifests cover what the workers use, in every SDK version of the matrix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalexport.contracts.check import load_manifests
from evalexport.contracts.surfaces import SURFACES

ROOT = Path(__file__).resolve().parents[2]
WORKERS = ROOT / "src" / "evalexport" / "workers"


@pytest.mark.parametrize("sdk", sorted(SURFACES))
def test_every_committed_manifest_has_the_whole_worker_surface(sdk: str) -> None:
    manifests = load_manifests(ROOT / "contracts" / sdk)
    assert manifests, f"no committed manifest for {sdk}"
    for manifest in manifests:
        assert set(manifest["entries"]) == set(SURFACES[sdk].paths), manifest["version"]
        missing = [
            path for path, entry in manifest["entries"].items() if entry["kind"] == "missing"
        ]
        assert missing == [], f"{sdk} {manifest['version']} lacks {missing}"


def test_the_matrix_holds_an_old_and_a_new_version_of_each_real_sdk() -> None:
    for sdk, majors in (("mlflow", {"2", "3"}), ("wandb", None)):
        versions = [m["version"] for m in load_manifests(ROOT / "contracts" / sdk)]
        assert len(versions) >= 2, sdk
        if majors:
            assert {v.split(".")[0] for v in versions} >= majors


@pytest.mark.parametrize(
    ("worker", "receiver", "prefix"),
    [
        ("mlflow_worker.py", "client", "mlflow.tracking.MlflowClient."),
        ("evalrdl_worker.py", "client.uploads", "evalrdl.Client().uploads."),
    ],
)
def test_every_sdk_method_a_worker_calls_is_in_its_declared_surface(
    worker: str, receiver: str, prefix: str
) -> None:
    source = (WORKERS / worker).read_text()
    called = set(re.findall(rf"\b{re.escape(receiver)}\.(\w+)\(", source))
    sdk = prefix.split(".")[0]
    declared = {
        path.removeprefix(prefix) for path in SURFACES[sdk].paths if path.startswith(prefix)
    }
    assert called, f"no {receiver}.* calls found in {worker}"
    assert called <= declared, (
        f"{worker} calls {sorted(called - declared)} outside the declared surface"
    )
