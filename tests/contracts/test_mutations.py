"""The mutation suite: SDK drifts the contract checks must catch without the real SDK.

Each mutation applies one drift, either to a copy of the fake (the fake stopped mirroring the
real SDK: ``contract check`` must catch it) or to a stand-in release built from the fake with a
new version number (the real SDK moved on: ``contract verify --requirement WHEEL`` must catch
it, although that version has no committed manifest). Each must be reported with a finding
that names the symbol and what changed. The faithful fake and a faithful stand-in release
raise nothing, and, with the switches on, neither does any real MLflow or wandb release of the
tox matrix against its committed manifest.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalexport.contracts.check import load_manifests
from evalexport.contracts.drift import check_fake, verify_release
from evalexport.testing.wheels import wheel_from_tree

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "fakes" / "evalrdl" / "src"
CONTRACTS = ROOT / "contracts"
UPLOAD = "evalrdl.Client().uploads.upload"
STAND_IN_VERSION = "0.0.242"


@dataclass(frozen=True)
class Mutation:
    id: str
    side: str
    """``fake``: the fake drifts from the real SDK; ``release``: a new real release drifts."""
    edits: tuple[tuple[str, str, str], ...]
    """``(file under evalrdl/, old text, new text)``, applied in order."""
    caught_as: str
    """The id of the finding that must be raised: ``path:code[:name]``."""


MUTATIONS = [
    # The fake stops mirroring the real SDK.
    Mutation(
        "fake-renames-a-parameter",
        "fake",
        (("client.py", "        label: str | None = None,", "        title: str | None = None,"),),
        f"{UPLOAD}:renamed:label",
    ),
    Mutation(
        "fake-requires-an-optional-parameter",
        "fake",
        (("client.py", "        timeout: float = 600,", "        timeout: float,"),),
        f"{UPLOAD}:now-required:timeout",
    ),
    Mutation(
        "fake-makes-a-positional-parameter-keyword-only",
        "fake",
        (("sdk/api.py", "def upload_plan(path:", "def upload_plan(*, path:"),),
        "evalrdl.sdk.api.upload_plan:re-kinded:path",
    ),
    Mutation(
        "fake-rebases-an-exception",
        "fake",
        (
            (
                "exceptions.py",
                "class ClientTooOld(EvalRDLError):",
                "class ClientTooOld(RuntimeError):",
            ),
        ),
        "evalrdl.ClientTooOld:bases",
    ),
    Mutation(
        "fake-loses-a-method",
        "fake",
        (("client.py", "    def upload(\n", "    def send(\n"),),
        f"{UPLOAD}:missing",
    ),
    Mutation(
        "fake-hides-a-missing-parameter-behind-kwargs",
        "fake",
        (
            ("client.py", "        parallel: int = 4,\n", ""),
            (
                "client.py",
                "        timeout: float = 600,\n",
                "        timeout: float = 600,\n        **options: object,\n",
            ),
        ),
        f"{UPLOAD}:var-keyword",
    ),
    Mutation(
        "fake-changes-a-default",
        "fake",
        (("client.py", 'url: str = "prod"', 'url: str = "stg"'),),
        "evalrdl.Client:default:url",
    ),
    Mutation(
        "fake-narrows-an-annotation",
        "fake",
        (("client.py", "tags: list[str] | None = None", "tags: str | None = None"),),
        f"{UPLOAD}:annotation:tags",
    ),
    Mutation(
        "fake-renames-upload-state-to-status",
        "fake",
        (("client.py", "    state: UploadState\n", "    status: UploadState\n"),),
        "evalrdl.Upload:attribute-missing:state",
    ),
    Mutation(
        "fake-renames-the-committed-state",
        "fake",
        (("client.py", 'Literal["committed",', 'Literal["completed",'),),
        "evalrdl.Upload:values:state",
    ),
    Mutation(
        "fake-renames-intake-refused-stage-to-step",
        "fake",
        (("exceptions.py", "self.stage = stage", "self.step = stage"),),
        "evalrdl.IntakeRefused:attribute-missing:stage",
    ),
    Mutation(
        "fake-returns-one-upload-instead-of-a-list",
        "fake",
        (
            ("client.py", "    ) -> list[Upload]:", "    ) -> Upload:"),
            ("client.py", "        return uploads\n", "        return uploads[0]\n"),
        ),
        f"{UPLOAD}:returns",
    ),
    Mutation(
        "fake-renames-upload-token",
        "fake",
        (("client.py", "    upload_token: str\n", "    token: str\n"),),
        "evalrdl.Upload:attribute-missing:upload_token",
    ),
    Mutation(
        "fake-accepts-a-parameter-the-real-sdk-lacks",
        "fake",
        (
            (
                "client.py",
                "        label: str | None = None,",
                "        label: str | None = None,\n        project: str | None = None,",
            ),
        ),
        f"{UPLOAD}:extra:project",
    ),
    Mutation(
        "fake-swaps-two-positional-parameters",
        "fake",
        (
            (
                "exceptions.py",
                "def __init__(self, stage: str, reason: str)",
                "def __init__(self, reason: str, stage: str)",
            ),
        ),
        "evalrdl.IntakeRefused:moved:stage",
    ),
    # A new real release moves on.
    Mutation(
        "release-renames-upload-state-to-status",
        "release",
        (("client.py", "    state: UploadState\n", "    status: UploadState\n"),),
        "evalrdl.Upload:attribute-missing:state",
    ),
    Mutation(
        "release-renames-the-committed-state",
        "release",
        (("client.py", 'Literal["committed",', 'Literal["completed",'),),
        "evalrdl.Upload:values:state",
    ),
    Mutation(
        "release-renames-intake-refused-stage-to-step",
        "release",
        (("exceptions.py", "self.stage = stage", "self.step = stage"),),
        "evalrdl.IntakeRefused:attribute-missing:stage",
    ),
    Mutation(
        "release-returns-one-upload-instead-of-a-list",
        "release",
        (("client.py", "    ) -> list[Upload]:", "    ) -> Upload:"),),
        f"{UPLOAD}:returns",
    ),
    Mutation(
        "release-adds-a-required-parameter",
        "release",
        (
            (
                "client.py",
                "        *,\n        label:",
                "        *,\n        project: str,\n        label:",
            ),
        ),
        f"{UPLOAD}:new-required:project",
    ),
    Mutation(
        "release-makes-a-parameter-required",
        "release",
        (("client.py", "        wait: bool = True,", "        wait: bool,"),),
        f"{UPLOAD}:now-required:wait",
    ),
    Mutation(
        "release-changes-a-default",
        "release",
        (("client.py", "        parallel: int = 4,", "        parallel: int = 1,"),),
        f"{UPLOAD}:default:parallel",
    ),
    Mutation(
        "release-narrows-an-annotation",
        "release",
        (("client.py", "tags: list[str] | None = None", "tags: str | None = None"),),
        f"{UPLOAD}:annotation:tags",
    ),
    Mutation(
        "release-drops-upload-plan",
        "release",
        (("sdk/api.py", "def upload_plan(", "def plan_upload("),),
        "evalrdl.sdk.api.upload_plan:missing",
    ),
]


def _mutated_tree(root: Path, edits: tuple[tuple[str, str, str], ...], version: str | None) -> Path:
    shutil.copytree(FAKE, root)
    for relative, old, new in edits:
        path = root / "evalrdl" / relative
        text = path.read_text()
        assert old in text, f"the mutation no longer applies: {old!r} is not in {relative}"
        path.write_text(text.replace(old, new, 1))
    if version is not None:
        init = root / "evalrdl" / "__init__.py"
        init.write_text(
            re.sub(r'__version__ = "[^"]+"', f'__version__ = "{version}"', init.read_text())
        )
    return root


def _stand_in_release(tmp_path: Path, edits: tuple[tuple[str, str, str], ...]) -> Path:
    """A wheel of the fake with ``edits``, as release 0.0.242 of the real SDK."""
    tree = _mutated_tree(tmp_path / "release-src", edits, STAND_IN_VERSION)
    return wheel_from_tree(tmp_path / "wheelhouse", tree, "evalrdl")


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.id)
def test_every_mutation_is_caught_by_name(mutation: Mutation, tmp_path: Path) -> None:
    if mutation.side == "fake":
        report = check_fake(
            "evalrdl", CONTRACTS, _mutated_tree(tmp_path / "fake-src", mutation.edits, None)
        )
    else:
        report = verify_release(
            "evalrdl", CONTRACTS, str(_stand_in_release(tmp_path, mutation.edits))
        )
    ids = {finding.id: finding for finding in report.findings}
    assert mutation.caught_as in ids, "\n".join(report.lines)
    assert report.exit_code == 1
    finding = ids[mutation.caught_as]
    symbol, _code, *name = mutation.caught_as.split(":")
    line = finding.line()
    assert line.startswith(f"error: {symbol}: ")
    if name:
        assert f'"{name[0]}"' in line, line
    assert not report.lines[-1].startswith("Success"), report.lines[-1]


def test_the_faithful_fake_raises_nothing() -> None:
    report = check_fake("evalrdl", CONTRACTS, FAKE)
    assert report.findings == [], "\n".join(report.lines)


def test_a_faithful_new_release_passes_and_is_told_to_commit_its_manifest(tmp_path: Path) -> None:
    report = verify_release("evalrdl", CONTRACTS, str(_stand_in_release(tmp_path, ())))
    assert report.findings == [], "\n".join(report.lines)
    newest = load_manifests(CONTRACTS / "evalrdl")[-1]["version"]
    assert report.lines == [
        f"Success: evalrdl {STAND_IN_VERSION} has the worker's surface and matches the newest "
        f"committed manifest, {newest} ({STAND_IN_VERSION} has none of its own)",
        f"Commit its manifest into {CONTRACTS / 'evalrdl'}: evalexport contract manifest "
        f"evalrdl --requirement evalrdl=={STAND_IN_VERSION} --write --contracts {CONTRACTS}",
    ]


def test_a_drifted_release_of_a_committed_version_is_held_to_its_own_manifest(
    tmp_path: Path,
) -> None:
    tree = _mutated_tree(
        tmp_path / "src",
        (("client.py", "        wait: bool = True,", "        wait: bool,"),),
        None,
    )
    report = verify_release(
        "evalrdl", CONTRACTS, str(wheel_from_tree(tmp_path / "wheels", tree, "evalrdl"))
    )
    assert [f.id for f in report.findings] == [f"{UPLOAD}:now-required:wait"]
    assert report.lines[-1] == (
        "Found 1 error: in what the worker uses, evalrdl 0.0.241 differs from its committed "
        "manifest. Follow it in the worker and the fake before committing its manifest."
    )


REAL_RELEASES = [
    pytest.param(
        sdk,
        manifest["version"],
        marks=[pytest.mark.downloads, getattr(pytest.mark, f"{sdk}_sdk")],
        id=f"{sdk}-{manifest['version']}",
    )
    for sdk in ("mlflow", "wandb")
    for manifest in load_manifests(CONTRACTS / sdk)
]


@pytest.mark.parametrize(("sdk", "version"), REAL_RELEASES)
def test_no_real_release_of_the_matrix_raises_a_false_alarm(cli, sdk: str, version: str) -> None:
    run = cli(
        "contract", "verify", sdk, "--requirement", f"{sdk}=={version}", "--contracts", CONTRACTS
    )
    assert run.exit_code == 0, run.output
    assert run.stdout == (
        f"Success: {sdk} {version} has the worker's surface and matches its committed manifest\n"
    )
