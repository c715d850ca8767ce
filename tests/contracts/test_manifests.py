"""The committed manifests cover what the workers use, in every SDK version of the matrix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalexport.contracts.check import load_manifests
from evalexport.contracts.installed import installed_surfaces

SURFACES = installed_surfaces()

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ROOT / "src" / "evalexport" / "backends"


@pytest.mark.parametrize("sdk", sorted(SURFACES))
def test_every_committed_manifest_has_the_whole_worker_surface(sdk: str) -> None:
    manifests = load_manifests(ROOT / "contracts" / sdk)
    assert manifests, f"no committed manifest for {sdk}"
    for manifest in manifests:
        assert set(manifest["entries"]) == set(SURFACES[sdk].extracted), manifest["version"]
        missing = [
            path
            for path, entry in manifest["entries"].items()
            if entry["kind"] == "missing" and SURFACES[sdk].used_by(path, manifest["version"])
        ]  # a path the worker uses only from a later release (``since``) may be missing
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
        ("mlflow", "client", "mlflow.tracking.MlflowClient."),
        ("evalrdl", "client.uploads", "evalrdl.Client().uploads."),
    ],
)
def test_every_sdk_method_a_worker_calls_is_in_its_declared_surface(
    worker: str, receiver: str, prefix: str
) -> None:
    source = (BACKENDS / worker / "worker.py").read_text()
    called = set(re.findall(rf"\b{re.escape(receiver)}\.(\w+)\(", source))
    sdk = prefix.split(".")[0]
    declared = {
        path.removeprefix(prefix) for path in SURFACES[sdk].paths if path.startswith(prefix)
    }
    assert called, f"no {receiver}.* calls found in {worker}"
    assert called <= declared, (
        f"{worker} calls {sorted(called - declared)} outside the declared surface"
    )


@pytest.mark.parametrize("sdk", sorted(SURFACES))
def test_every_committed_manifest_records_what_the_worker_reads_back(sdk: str) -> None:
    for manifest in load_manifests(ROOT / "contracts" / sdk):
        assert manifest["format"] == 2, f"{sdk} {manifest['version']}: re-extract it"
        for path, entry in manifest["entries"].items():
            if entry["kind"] in ("class", "exception"):
                assert "attributes" in entry, f"{sdk} {manifest['version']} {path}"
            if entry["kind"] == "callable":
                assert "returns" in entry, f"{sdk} {manifest['version']} {path}"


READ_BACK = {
    "evalrdl.Upload": {"state", "run_id", "upload_token", "needs_binding"},
    "evalrdl.IntakeRefused": {"stage", "reason"},
    "mlflow.entities.Experiment": {"experiment_id"},
    "mlflow.entities.Run": {"info"},
    "mlflow.entities.RunInfo": {"run_id"},
    "wandb.sdk.wandb_run.Run": {"id", "dir", "summary", "url"},
    "wandb.apis.public.Run": {"id", "state"},
    "wandb.Artifact": {"name"},
    "wandb.Table": {"MAX_ROWS", "MAX_ARTIFACT_ROWS"},
}
"""The attributes each worker reads on what its SDK returns or raises."""


@pytest.mark.parametrize(("path", "attributes"), sorted(READ_BACK.items()))
def test_what_the_workers_read_back_is_in_every_committed_manifest(
    path: str, attributes: set[str]
) -> None:
    sdk = path.split(".")[0]
    surface = SURFACES[sdk]
    assert path in surface.extracted
    # What the surface declares the worker reads covers what it reads (the contract counts
    # only the declared reads of a class ``reads`` names).
    assert surface.whole(path) or attributes <= set(surface.reads[path]), path
    source = (BACKENDS / sdk / "worker.py").read_text()
    for attribute in attributes:
        assert re.search(rf"\.{attribute}\b|, \"{attribute}\"", source), (
            f"backends/{sdk}/worker.py no longer reads .{attribute}"
        )
    for manifest in load_manifests(ROOT / "contracts" / sdk):
        recorded = set(manifest["entries"][path]["attributes"])
        assert attributes <= recorded, (manifest["version"], sorted(attributes - recorded))
