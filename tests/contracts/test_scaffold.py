"""``evalexport contract scaffold``: a fake written from a real SDK's surface has that surface.
Scaffolded from every committed manifest (MLflow 2 and 3, wandb old and new, EvalRDL, a plugin's
SDK), the fake's own manifest equals the one it was made from; the EvalRDL scaffold installs,
its recorded calls bind, and its stubs say they are stubs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from evalexport.contracts.check import compare_manifests, load_manifest
from evalexport.contracts.installed import installed_surfaces
from evalexport.contracts.recorded import check_call_log
from evalexport.contracts.scaffold import write_scaffold
from evalexport.testing import recording
from evalexport.testing.wheels import wheel_from_tree

ROOT = Path(__file__).resolve().parents[2]
EXTRACTOR = ROOT / "src" / "evalexport" / "contracts" / "surface_extractor.py"
COMMITTED = sorted(
    [*ROOT.glob("contracts/*/*.json"), *ROOT.glob("tests/support/*/*/contracts/*.json")]
)


def _extract_from(source_root: Path, sdk: str, surface: list[str]) -> dict[str, object]:
    """The manifest of a source tree, extracted in a process of its own (as the CLI does)."""
    code = (
        "import json, runpy, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "extract = runpy.run_path(sys.argv[2])['extract']\n"
        "print(json.dumps(extract(sys.argv[3], json.loads(sys.argv[4]))))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code, str(source_root), str(EXTRACTOR), sdk, json.dumps(surface)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout)


@pytest.mark.parametrize("committed", COMMITTED, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_a_scaffold_has_the_surface_it_was_made_from(committed: Path, tmp_path: Path) -> None:
    manifest = load_manifest(committed)
    scaffold = write_scaffold(manifest, tmp_path / "fake")
    extracted = _extract_from(scaffold.source_root, manifest["sdk"], list(manifest["entries"]))
    assert extracted["version"] == manifest["version"]
    assert [finding.line() for finding in compare_manifests(manifest, extracted)] == []
    # Left out: only what the release lacks and the worker uses from a later one (``since``).
    surface = installed_surfaces().get(manifest["sdk"])  # a guide's SDK is no installed one
    assert sorted(scaffold.notes) == sorted(
        f"{path} is missing in the manifest it was made from: left out"
        for path, entry in manifest["entries"].items()
        if entry["kind"] == "missing"
        and surface is not None
        and not surface.used_by(path, manifest["version"])
    )


def test_the_cli_scaffolds_evalrdl_from_the_fake_and_check_finds_no_drift(cli, tmp_path) -> None:
    out = tmp_path / "fake-evalrdl"
    made = cli(
        "contract", "scaffold", "evalrdl", "--fake", ROOT / "fakes/evalrdl/src", "--out", str(out)
    )
    assert made.exit_code == 0, made.output
    assert f"evalexport contract check evalrdl --fake {out / 'src'}" in made.stdout
    contracts = ROOT / "contracts"
    checked = cli("contract", "check", "evalrdl", "--fake", out / "src", "--contracts", contracts)
    assert checked.exit_code == 0, checked.output
    assert checked.stdout.splitlines()[-1].startswith("Success: no drift (fake evalrdl 0.0.241")
    carried = out / "src" / "evalrdl" / "_recording.py"
    assert carried.read_text() == Path(recording.__file__).read_text()


def test_a_scaffold_refuses_a_directory_that_holds_something(cli, tmp_path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    run = cli(
        "contract",
        "scaffold",
        "evalrdl",
        "--fake",
        ROOT / "fakes/evalrdl/src",
        "--out",
        tmp_path / "taken",
    )
    assert run.exit_code == 2
    assert "is not empty; scaffold into a new directory" in run.stderr
    assert (tmp_path / "taken" / "keep.txt").read_text() == "mine"


def test_a_scaffold_takes_exactly_one_source(cli, tmp_path) -> None:
    run = cli("contract", "scaffold", "evalrdl", "--out", tmp_path / "x")
    assert run.exit_code == 2
    assert "one of --requirement REQ, --fake PATH, --python PY or --manifest FILE" in run.stderr


def test_the_scaffold_installs_and_its_recorded_calls_bind(cli, tmp_path: Path) -> None:
    out = tmp_path / "fake"
    made = cli(
        "contract",
        "scaffold",
        "evalrdl",
        "--manifest",
        ROOT / "contracts/evalrdl/0.0.241.json",
        "--out",
        str(out),
    )
    assert made.exit_code == 0, made.output
    environment = tmp_path / "env"
    venv.create(environment, with_pip=False)  # installed into by this pip (no ensurepip)
    python = environment / "bin" / "python"
    # A wheel of the tree, built without a backend, so this runs with no package index (the
    # project's own pyproject.toml is installed from the index by the test below).
    wheel = wheel_from_tree(tmp_path / "wheels", out / "src", "evalrdl")
    installed = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "--python", python),
            "install",
            "--quiet",
            "--no-index",
            wheel,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr
    worker = tmp_path / "worker.py"
    worker.write_text(
        "import evalrdl\n"
        "from evalrdl.sdk.api import upload_plan\n"
        "client = evalrdl.Client(url='stg')\n"
        "for call in (lambda: upload_plan('/runs/a'),\n"
        "             lambda: client.uploads.upload('/runs/a', label='x', wait=False)):\n"
        "    try:\n"
        "        call()\n"
        "    except NotImplementedError as stub:\n"
        "        print(stub)\n"
        "refused = evalrdl.IntakeRefused('schema', 'no reward')\n"
        "print(refused.stage)\n"
    )
    log = tmp_path / "calls.jsonl"
    ran = subprocess.run(
        [str(python), "-I", str(worker)],
        env={**os.environ, "EVALRDL_FAKE_CALL_LOG": str(log)},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == [
        "SCAFFOLD: evalrdl.sdk.api.upload_plan is a stub; write what the fake does",
        "SCAFFOLD: evalrdl.Client().uploads.upload is a stub; write what the fake does",
        "schema",
    ]
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["name"], r.get("read")) for r in records] == [
        ("evalrdl.Client", None),
        ("evalrdl.sdk.api.upload_plan", None),  # Client's uploads: part of the path below
        ("evalrdl.Client().uploads.upload", None),
        ("evalrdl.IntakeRefused", None),
        ("evalrdl.IntakeRefused", "stage"),
    ]
    assert records[0]["args"] == []
    assert records[0]["kwargs"] == {"url": "stg"}
    assert check_call_log("evalrdl", log, ROOT / "contracts") == []


@pytest.mark.downloads
def test_the_scaffolded_project_installs_with_pip_as_it_is(cli, tmp_path: Path) -> None:
    out = tmp_path / "fake"
    manifest = ROOT / "contracts/evalrdl/0.0.241.json"
    assert (
        cli("contract", "scaffold", "evalrdl", "--manifest", manifest, "--out", out).exit_code == 0
    )
    target = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target), str(out)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert (target / "evalrdl" / "_recording.py").is_file()
    assert list(target.glob("evalrdl-0.0.241.dist-info"))
