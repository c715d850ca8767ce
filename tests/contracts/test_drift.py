"""Drift checks on deliberately drifted copies of the fake (SPEC §5): each drift is reported
with the right finding, one line each, and the faithful fake passes.

Every check here runs twice: against the committed manifests, and against them plus a newer
faithful manifest, as the README's add-a-version step leaves them. The assertions name single
findings, never whole outputs, so a new committed version keeps them true.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from evalexport.contracts.check import load_manifests
from evalexport.contracts.drift import extract_manifest
from evalexport.contracts.recorded import check_recorded_calls

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "fakes" / "evalrdl" / "src"
CONTRACTS = ROOT / "contracts"
UPLOAD = "evalrdl.Client().uploads.upload"


@pytest.fixture(scope="module")
def faithful_newer_manifest() -> dict[str, object]:
    """The fake's own manifest, labelled as a newer real release: what committing a faithful
    manifest of the next version adds."""
    manifest = extract_manifest("evalrdl", fake=FAKE)
    manifest["version"] = "0.0.300"
    return manifest


@pytest.fixture(params=["committed", "committed-plus-a-newer-faithful-version"])
def contracts(request, tmp_path: Path, faithful_newer_manifest) -> Path:
    if request.param == "committed":
        return CONTRACTS
    root = tmp_path / "contracts"
    shutil.copytree(CONTRACTS / "evalrdl", root / "evalrdl")
    (root / "evalrdl" / "0.0.300.json").write_text(json.dumps(faithful_newer_manifest))
    return root


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


def _check(cli, fake: Path, contracts: Path):
    return cli("contract", "check", "evalrdl", "--fake", str(fake), "--contracts", str(contracts))


def _findings(stdout: str) -> list[str]:
    """The finding lines, with the real versions each names (one, or several a problem shows
    in alike: ``real 0.0.241, 0.0.300``) written ``V``."""
    found = [
        re.sub(r"\breal \d+(\.\d+)*(, \d+(\.\d+)*)*", "real V", line)
        for line in stdout.splitlines()
        if line.startswith("error: ")
    ]
    twice = sorted({line for line in found if found.count(line) > 1})
    assert not twice, f"reported more than once (once per manifest?): {twice}"
    return found


def test_the_fake_matches_the_committed_manifests(cli, contracts) -> None:
    run = _check(cli, FAKE, contracts)
    assert run.exit_code == 0, run.output
    assert _findings(run.stdout) == []
    assert run.stdout.splitlines()[-1].startswith("Success: no drift (fake evalrdl 0.0.241")


def test_a_renamed_parameter_is_reported_once_as_renamed(cli, drifted, contracts) -> None:
    fake = drifted(
        "client.py", "        label: str | None = None,", "        title: str | None = None,"
    )
    run = _check(cli, fake, contracts)
    assert run.exit_code == 1
    assert _findings(run.stdout) == [
        f'error: {UPLOAD}: parameter "label" of real V is "title" in the fake (renamed)'
    ]


def test_a_parameter_the_fake_makes_required_is_reported(cli, drifted, contracts) -> None:
    run = _check(
        cli,
        drifted("client.py", "        timeout: float = 600,", "        timeout: float,"),
        contracts,
    )
    assert run.exit_code == 1
    assert (
        f'error: {UPLOAD}: parameter "timeout" is required in the fake but optional in real V'
        in _findings(run.stdout)
    )


def test_a_parameter_the_real_sdk_made_required_is_reported(cli, tmp_path) -> None:
    contracts = tmp_path / "contracts"
    shutil.copytree(CONTRACTS / "evalrdl", contracts / "evalrdl")
    manifest_path = contracts / "evalrdl" / "0.0.241.json"
    manifest = json.loads(manifest_path.read_text())
    for parameter in manifest["entries"][UPLOAD]["parameters"]:
        if parameter["name"] == "wait":
            parameter["has_default"] = False
            del parameter["default"]
    manifest_path.write_text(json.dumps(manifest))
    run = _check(cli, FAKE, contracts)
    assert run.exit_code == 1
    assert _findings(run.stdout) == [
        f'error: {UPLOAD}: parameter "wait" is optional in the fake but required in real V'
    ]


def test_a_re_kinded_parameter_is_reported(cli, drifted, contracts) -> None:
    fake = drifted(
        "sdk/api.py",
        "def upload_plan(path: str | os.PathLike[str])",
        "def upload_plan(*, path: str | os.PathLike[str])",
    )
    assert (
        'error: evalrdl.sdk.api.upload_plan: parameter "path" is POSITIONAL_OR_KEYWORD in real V '
        "but KEYWORD_ONLY in the fake" in _findings(_check(cli, fake, contracts).stdout)
    )


def test_an_exception_rebased_onto_another_class_is_reported(cli, drifted, contracts) -> None:
    fake = drifted(
        "exceptions.py", "class ClientTooOld(EvalRDLError):", "class ClientTooOld(RuntimeError):"
    )
    run = _check(cli, fake, contracts)
    assert run.exit_code == 1
    assert any(
        line.startswith(
            "error: evalrdl.ClientTooOld: exception bases differ: real V has "
            "evalrdl.exceptions.EvalRDLError, builtins.Exception, builtins.BaseException, "
            "builtins.object; the fake has builtins.RuntimeError,"
        )
        for line in _findings(run.stdout)
    )


def test_a_method_removed_from_an_instance_attribute_is_reported(cli, drifted, contracts) -> None:
    run = _check(cli, drifted("client.py", "    def upload(\n", "    def send(\n"), contracts)
    assert run.exit_code == 1
    assert (
        f"error: {UPLOAD}: is in real V but missing in the fake "
        "(AttributeError: 'Uploads' object has no attribute 'upload')" in _findings(run.stdout)
    )


def test_keyword_catch_all_in_the_fake_is_reported_with_what_it_hides(
    cli, drifted, contracts
) -> None:
    drifted("client.py", "        parallel: int = 4,\n", "")
    fake = drifted(
        "client.py",
        "        timeout: float = 600,\n",
        "        timeout: float = 600,\n        **options: object,\n",
    )
    found = _findings(_check(cli, fake, contracts).stdout)
    assert (
        f"error: {UPLOAD}: the fake takes **kwargs but real V does not: a misspelt or removed "
        "keyword would pass on the fake and fail on the real SDK" in found
    )
    assert f'error: {UPLOAD}: parameter "parallel" of real V is missing in the fake' in found


def test_a_changed_default_and_a_narrowed_annotation_are_reported(cli, drifted, contracts) -> None:
    drifted("client.py", 'url: str = "prod"', 'url: str = "stg"')
    fake = drifted("client.py", "tags: list[str] | None = None", "tags: str | None = None")
    found = _findings(_check(cli, fake, contracts).stdout)
    assert (
        "error: evalrdl.Client: parameter \"url\" defaults to 'prod' in real V but to 'stg' in the fake"
        in found
    )
    assert (
        f'error: {UPLOAD}: parameter "tags" is annotated list[str] | None in real V '
        "but str | None in the fake" in found
    )


def test_what_the_worker_reads_back_is_compared(cli, drifted, contracts) -> None:
    drifted("client.py", "    state: UploadState\n", "    status: UploadState\n")
    drifted("exceptions.py", "self.stage = stage", "self.step = stage")
    fake = drifted("client.py", "    ) -> list[Upload]:", "    ) -> Upload:")
    found = _findings(_check(cli, fake, contracts).stdout)
    assert (
        'error: evalrdl.Upload: attribute "state" of real V is missing in the fake (renamed "status"?)'
        in found
    )
    assert (
        'error: evalrdl.IntakeRefused: attribute "stage" of real V is missing in the fake (renamed "step"?)'
        in found
    )
    assert (
        f"error: {UPLOAD}: returns list[evalrdl.client.Upload] in real V but evalrdl.client.Upload in the fake"
        in found
    )


def test_a_changed_state_value_is_reported(cli, drifted, contracts) -> None:
    fake = drifted("client.py", 'Literal["committed",', 'Literal["completed",')
    assert (
        "error: evalrdl.Upload: attribute \"state\" takes 'committed', 'deduped', 'accepted' in "
        "real V but 'completed', 'deduped', 'accepted' in the fake"
        in _findings(_check(cli, fake, contracts).stdout)
    )


def test_an_allowlisted_finding_passes_and_an_unused_entry_is_an_error(
    cli, drifted, contracts, tmp_path
) -> None:
    fake = drifted(
        "exceptions.py", "class ClientTooOld(EvalRDLError):", "class ClientTooOld(RuntimeError):"
    )
    if contracts == CONTRACTS:
        shutil.copytree(CONTRACTS / "evalrdl", tmp_path / "allowed" / "evalrdl")
        contracts = tmp_path / "allowed"
    allowlist = contracts / "evalrdl" / "allowlist.txt"
    allowlist.write_text("evalrdl.ClientTooOld:bases  # the service maps both to HTTP 426\n")
    assert _check(cli, fake, contracts).exit_code == 0
    allowlist.write_text("evalrdl.ClientTooOld:bases\nevalrdl.Client:renamed:url\n")
    run = _check(cli, fake, contracts)
    assert run.exit_code == 1
    assert _findings(run.stdout) == [
        "error: evalrdl.Client:renamed:url: allowlist entry matches no finding; remove it from contracts/evalrdl/allowlist.txt"
    ]


# Recorded calls and reads, as the fake logs them --------------------------------------------

SITES = {"evalexport_worker_body.py": "src/evalexport/backends/evalrdl/worker.py"}


def _problems(*records: dict[str, object]) -> list[str]:
    return check_recorded_calls(records, load_manifests(CONTRACTS / "evalrdl"), SITES)


REAL = ", ".join(str(m["version"]) for m in load_manifests(CONTRACTS / "evalrdl"))
"""The committed versions, as a problem every one of them shows names them."""


def test_a_recorded_call_with_a_keyword_the_real_signature_lacks_names_its_call_site() -> None:
    problems = _problems(
        {
            "name": UPLOAD,
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
    )
    assert problems == [
        f"src/evalexport/backends/evalrdl/worker.py:57: {UPLOAD}(...) would fail against real {REAL}: "
        "got an unexpected keyword argument 'colour'"
    ]


def test_a_recorded_read_of_an_attribute_the_real_sdk_lacks_is_a_problem() -> None:
    site = "/tmp/w/evalexport_worker_body.py:90"
    assert _problems({"name": "evalrdl.Upload", "read": "status", "site": site}) == [
        "src/evalexport/backends/evalrdl/worker.py:90: evalrdl.Upload.status is read but does "
        f"not exist in real {REAL}"
    ]
    assert _problems({"name": "evalrdl.IntakeRefused", "read": "stage", "site": site}) == []


def test_a_state_value_the_real_sdk_never_gives_is_a_problem() -> None:
    site = "/tmp/w/evalexport_worker_body.py:112"
    assert _problems(
        {"name": "evalrdl.Upload", "read": "state", "compared_with": "completed", "site": site}
    ) == [
        "src/evalexport/backends/evalrdl/worker.py:112: evalrdl.Upload.state is compared with "
        f"'completed', a value real {REAL} never gives ('committed', 'deduped', 'accepted')"
    ]
    assert (
        _problems(
            {"name": "evalrdl.Upload", "read": "state", "compared_with": "deduped", "site": site}
        )
        == []
    )


def test_a_default_the_worker_relies_on_must_be_the_real_default() -> None:
    call = {
        "name": "evalrdl.Client",
        "args": [],
        "kwargs": {"url": "stg"},
        "site": "/tmp/w/evalexport_worker_body.py:47",
    }
    assert _problems({**call, "defaulted": {"token": "None"}}) == []
    assert _problems({**call, "defaulted": {"token": "''"}}) == [
        'src/evalexport/backends/evalrdl/worker.py:47: evalrdl.Client(...) leaves "token" to '
        f"its default, '' on the fake but None in real {REAL}"
    ]


def test_an_unknown_sdk_is_a_usage_error(cli) -> None:
    run = cli("contract", "check", "nosuchsdk")
    assert run.exit_code == 2
    assert "unknown SDK 'nosuchsdk'" in run.stderr


@pytest.mark.parametrize(
    ("command", "refused"),
    [
        (["verify", "mlflow", "--fake", "fakes/mlflow/src"], "contract verify takes no --fake"),
        (
            ["check", "mlflow", "--requirement", "mlflow==3.1"],
            "contract check takes no --requirement",
        ),
        (["matrix", "--write"], "contract matrix takes no --write"),
    ],
)
def test_a_flag_the_subcommand_does_not_take_is_refused_not_ignored(
    cli, command: list[str], refused: str
) -> None:
    """#67: ``contract verify SDK --fake PATH`` verified the installed SDK, silently leaving the
    fake it was given aside."""
    run = cli("contract", *command)
    assert run.exit_code == 2
    assert refused in run.stderr
    assert "usage: evalexport contract" in run.stderr
