"""Drift checks on deliberately drifted copies of the fake (SPEC §5): each drift is reported
with the right finding, one line each, and the real fake passes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evalexport.contracts.check import check_recorded_calls, load_manifests

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "fakes" / "evalrdl" / "src"
CONTRACTS = ROOT / "contracts"


@pytest.fixture
def drifted(tmp_path: Path):
    """``drifted(file, old, new)``: a copy of the fake's tree with one edit; returns its root."""

    def make(relative: str, old: str, new: str) -> Path:
        root = tmp_path / "fake-src"
        if not root.exists():
            shutil.copytree(FAKE, root)
        path = root / "evalrdl" / relative
        text = path.read_text()
        assert old in text, f"{old!r} not in {relative}"
        path.write_text(text.replace(old, new, 1))
        return root

    return make


def _check(cli, fake: Path, contracts: Path = CONTRACTS):
    return cli("contract", "check", "evalrdl", "--fake", str(fake), "--contracts", str(contracts))


def test_the_fake_matches_the_committed_manifests(cli) -> None:
    run = _check(cli, FAKE)
    assert run.exit_code == 0, run.output
    assert run.stdout == "Success: no drift (fake evalrdl 0.0.241 against real 0.0.241)\n"


def test_a_renamed_parameter_is_reported(cli, drifted) -> None:
    run = _check(
        cli,
        drifted(
            "client.py", "        label: str | None = None,", "        title: str | None = None,"
        ),
    )
    assert run.exit_code == 1
    assert (
        'error: evalrdl.Client().uploads.upload: parameter "label" of real 0.0.241 is missing in the fake'
        in run.stdout
    )
    assert (
        'error: evalrdl.Client().uploads.upload: parameter "title" of the fake is "label" in real 0.0.241 (renamed)'
        in run.stdout
    )
    assert run.stdout.splitlines()[-1].startswith("Found 2 errors")


def test_a_parameter_the_fake_makes_required_is_reported(cli, drifted) -> None:
    run = _check(
        cli, drifted("client.py", "        timeout: float = 600,", "        timeout: float,")
    )
    assert run.exit_code == 1
    assert (
        'error: evalrdl.Client().uploads.upload: parameter "timeout" is optional in real 0.0.241 but required in the fake'
        in run.stdout
    )


def test_a_parameter_the_real_sdk_made_required_is_reported(cli, tmp_path) -> None:
    contracts = tmp_path / "contracts"
    shutil.copytree(CONTRACTS / "evalrdl", contracts / "evalrdl")
    manifest_path = contracts / "evalrdl" / "0.0.241.json"
    manifest = json.loads(manifest_path.read_text())
    for parameter in manifest["entries"]["evalrdl.Client().uploads.upload"]["parameters"]:
        if parameter["name"] == "wait":
            parameter["has_default"] = False
    manifest_path.write_text(json.dumps(manifest))
    run = _check(cli, FAKE, contracts)
    assert run.exit_code == 1
    assert (
        'error: evalrdl.Client().uploads.upload: parameter "wait" is required in real 0.0.241 but optional in the fake'
        in run.stdout
    )


def test_a_re_kinded_parameter_is_reported(cli, drifted) -> None:
    run = _check(
        cli,
        drifted(
            "sdk/api.py",
            "def upload_plan(path: str | os.PathLike[str])",
            "def upload_plan(*, path: str | os.PathLike[str])",
        ),
    )
    assert (
        'error: evalrdl.sdk.api.upload_plan: parameter "path" is POSITIONAL_OR_KEYWORD in real 0.0.241, KEYWORD_ONLY in the fake'
        in run.stdout
    )


def test_an_exception_rebased_onto_another_class_is_reported(cli, drifted) -> None:
    run = _check(
        cli,
        drifted(
            "exceptions.py",
            "class ClientTooOld(EvalRDLError):",
            "class ClientTooOld(RuntimeError):",
        ),
    )
    assert run.exit_code == 1
    assert run.stdout.startswith(
        "error: evalrdl.ClientTooOld: exception bases differ: real 0.0.241 has evalrdl.exceptions.EvalRDLError, "
        "builtins.Exception, builtins.BaseException, builtins.object; the fake has builtins.RuntimeError,"
    )


def test_a_method_removed_from_an_instance_attribute_is_reported(cli, drifted) -> None:
    run = _check(cli, drifted("client.py", "    def upload(\n", "    def send(\n"))
    assert run.exit_code == 1
    assert (
        "error: evalrdl.Client().uploads.upload: is in real 0.0.241 but missing in the fake"
        in run.stdout
    )


def test_an_allowlisted_finding_passes_and_an_unused_entry_is_an_error(
    cli, drifted, tmp_path
) -> None:
    fake = drifted(
        "exceptions.py", "class ClientTooOld(EvalRDLError):", "class ClientTooOld(RuntimeError):"
    )
    contracts = tmp_path / "contracts"
    shutil.copytree(CONTRACTS / "evalrdl", contracts / "evalrdl")
    allowlist = contracts / "evalrdl" / "allowlist.txt"
    allowlist.write_text("evalrdl.ClientTooOld:bases  # the service maps both to HTTP 426\n")
    assert _check(cli, fake, contracts).exit_code == 0
    allowlist.write_text("evalrdl.ClientTooOld:bases\nevalrdl.Client:renamed:url\n")
    run = _check(cli, fake, contracts)
    assert run.exit_code == 1
    assert run.stdout.splitlines()[0] == (
        "error: evalrdl.Client:renamed:url: allowlist entry matches no finding; remove it from contracts/evalrdl/allowlist.txt"
    )


def test_a_recorded_call_with_a_keyword_the_real_signature_lacks_names_its_call_site() -> None:
    calls = [
        {
            "name": "evalrdl.Client().uploads.upload",
            "args": ["/runs/a"],
            "kwargs": {"label": "x", "colour": "red"},
            "site": "/tmp/w/evalexport_worker_body.py:57",
        },
        {
            "name": "evalrdl.sdk.api.upload_plan",
            "args": ["/runs/a"],
            "kwargs": {},
            "site": "/tmp/w/evalexport_worker_body.py:44",
        },
    ]
    problems = check_recorded_calls(
        calls,
        load_manifests(CONTRACTS / "evalrdl"),
        {"evalexport_worker_body.py": "src/evalexport/workers/evalrdl_worker.py"},
    )
    assert problems == [
        "src/evalexport/workers/evalrdl_worker.py:57: evalrdl.Client().uploads.upload(...) would fail against real 0.0.241: "
        "got an unexpected keyword argument 'colour'"
    ]


def test_an_unknown_sdk_is_a_usage_error(cli) -> None:
    run = cli("contract", "check", "nosuchsdk")
    assert run.exit_code == 2
    assert "unknown SDK 'nosuchsdk'" in run.stderr
