"""Adding a built-in exporter touches four files by construction: the exporter module (with
its ``sdk_contract``), its worker body, its tests and its ``contracts/<sdk>/`` manifests
(docs/architecture.md, "Adding an exporter"). Everything else that must know the SDK — the
``evalexport contract`` commands, the pytest plugin's switch and token isolation, the startup
tripwire, the tox contract environment, mypy — derives it from the registry; this file holds
both halves for every built-in isolated exporter."""

from __future__ import annotations

import configparser
import runpy
import typing
from pathlib import Path

import pytest

from evalexport.contracts.check import load_manifests
from evalexport.contracts.installed import installed_surfaces
from evalexport.exporters.isolated import IsolatedExporter
from evalexport.exporters.registry import exporter_entries
from evalexport.testing.plugin import switches, token_variables
from tests.test_startup import SDKS

ROOT = Path(__file__).resolve().parents[1]
ISOLATED = sorted(
    (entry.name, entry.load())
    for entry in exporter_entries().values()
    if entry.source == "built-in" and issubclass(entry.load(), IsolatedExporter)
)


def test_the_built_in_isolated_exporters_are_all_checked() -> None:
    assert [name for name, _ in ISOLATED] == ["evalrdl", "mlflow", "wandb"]


@pytest.fixture(params=ISOLATED, ids=[name for name, _ in ISOLATED])
def exporter(request):
    return request.param[1]


def test_its_worker_body_reads_a_typed_payload(exporter) -> None:
    body = exporter.worker_body
    assert body.parent == ROOT / "src" / "evalexport" / "workers", body
    run = runpy.run_path(str(body))["run"]
    assert typing.is_typeddict(typing.get_type_hints(run)["payload"]), (
        f"{body.name}: type run(payload) with a TypedDict (in the body or workers/protocol.py)"
    )


def test_it_declares_its_sdk_contract_and_token_variables(exporter) -> None:
    assert exporter.sdk_contract is not None, "declare sdk_contract = Surface(...)"
    assert exporter.token_variables, "declare the variables its SDK reads credentials from"


def test_a_manifest_of_its_sdk_is_committed(exporter) -> None:
    directory = ROOT / exporter.sdk_contract.manifest_directory()
    assert load_manifests(directory), (
        f"commit {directory}/VERSION.json (evalexport contract manifest ...)"
    )


def test_everything_else_derives_its_sdk_from_the_registry(exporter) -> None:
    sdk = exporter.sdk_contract.sdk
    assert installed_surfaces()[sdk] is exporter.sdk_contract
    assert f"{sdk}_sdk" in switches()
    assert set(exporter.token_variables) <= set(token_variables())
    assert sdk in SDKS  # the startup tripwire


def test_tox_and_mypy_need_no_entry_for_a_new_sdk() -> None:
    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini")
    contract_environments = [s for s in tox.sections() if s.startswith("testenv:contract")]
    assert contract_environments == ["testenv:contracts"]
    assert "evalexport contract matrix" in tox["testenv:contracts"]["commands"]
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'module = ["evalexport.workers.*"]' in pyproject


def test_the_registry_finds_each_built_in_in_its_module_without_a_list() -> None:
    from evalexport.exporters.registry import builtin_exporters, load_exporter

    found = builtin_exporters()
    assert sorted(found) == ["atif", "evalrdl", "mlflow", "wandb"]
    for name, target in found.items():
        module, _, class_name = target.partition(":")
        assert module == f"evalexport.exporters.{name}"
        assert load_exporter(name).__name__ == class_name
        assert load_exporter(name).name == name
