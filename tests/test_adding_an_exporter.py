"""Adding a built-in exporter is its module, its line in the registry, its worker body (if
isolated), its tests and its ``contracts/<sdk>/`` manifests (docs/architecture.md, "Adding an
exporter"); a test here fails naming whichever is missing. Everything else that must know the
exporter or its SDK — the guarantee suite, the ``evalexport contract`` commands, the pytest
plugin's switch and token isolation, the startup tripwire, the tox contract environment, mypy —
derives it from the registry; this file holds both halves for every built-in."""

from __future__ import annotations

import configparser
import runpy
import sys
import typing
from pathlib import Path

import pytest

import evalexport
from evalexport.contracts.check import load_manifests
from evalexport.contracts.installed import installed_surfaces
from evalexport.spec.registry import BUILTIN_EXPORTERS, exporter_entries
from evalexport.testing.plugin import switches, token_variables
from tests.test_startup import SDKS

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(evalexport.__file__).resolve().parent
"""Where evalexport is installed: src/evalexport in a checkout, site-packages under tox."""
ISOLATED = sorted(
    (entry.name, entry.load())
    for entry in exporter_entries().values()
    if entry.source == "built-in" and entry.load().sdk is not None
)


def test_the_built_in_isolated_exporters_are_all_checked() -> None:
    assert {name for name, _ in ISOLATED} <= set(BUILTIN_EXPORTERS)
    assert ISOLATED, "the registry lists built-ins with an SDK: mlflow, wandb and evalrdl at least"


@pytest.mark.parametrize("name", sorted(BUILTIN_EXPORTERS))
def test_a_built_in_is_its_module_its_registration_and_its_tests(name: str) -> None:
    from evalexport.spec.registry import load_exporter

    module, _, class_name = BUILTIN_EXPORTERS[name].partition(":")
    assert module == f"evalexport.backends.{name}.exporter", (
        "a built-in lives in backends/<name>/exporter.py"
    )
    assert (PACKAGE / "backends" / name / "exporter.py").is_file(), (
        f"add backends/{name}/exporter.py"
    )
    assert load_exporter(name).__name__ == class_name
    assert load_exporter(name).name == name, f"{class_name}.name must be {name!r}"
    assert (ROOT / "tests" / "exporters" / f"test_{name}.py").is_file(), (
        f"add tests/exporters/test_{name}.py: its tests against its SDK (or its fake)"
    )


@pytest.fixture(params=ISOLATED, ids=[name for name, _ in ISOLATED])
def exporter(request):
    return request.param[1]


def test_its_worker_body_reads_a_typed_payload(exporter) -> None:
    body = exporter.sdk.body
    assert body == PACKAGE / "backends" / body.parent.name / "worker.py", (
        f"{body}: a built-in's body is its backend's worker.py"
    )
    run = runpy.run_path(str(body))["run"]
    assert typing.is_typeddict(typing.get_type_hints(run)["payload"]), (
        f"{body.name}: type run(payload) with a TypedDict defined beside it"
    )


def test_it_declares_its_sdk_contract_and_token_variables(exporter) -> None:
    assert exporter.sdk.contract is not None, "declare sdk = Sdk(..., contract=Surface(...))"
    assert exporter.sdk.token_variables, "declare the variables its SDK reads credentials from"


def test_a_manifest_of_its_sdk_is_committed(exporter) -> None:
    directory = ROOT / exporter.sdk.contract.manifest_directory()
    assert load_manifests(directory), (
        f"commit {directory}/VERSION.json (evalexport contract manifest ...)"
    )


def test_everything_else_derives_its_sdk_from_the_registry(exporter) -> None:
    sdk = exporter.sdk.contract.sdk
    assert installed_surfaces()[sdk] is exporter.sdk.contract
    assert f"{sdk}_sdk" in switches()
    assert set(exporter.sdk.token_variables) <= set(token_variables())
    assert sdk in SDKS  # the startup tripwire


def test_tox_and_mypy_need_no_entry_for_a_new_sdk() -> None:
    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini")
    contract_environments = [s for s in tox.sections() if s.startswith("testenv:contract")]
    assert contract_environments == ["testenv:contracts"]
    assert "evalexport contract matrix" in tox["testenv:contracts"]["commands"]
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'module = ["evalexport.backends.*.worker"]' in pyproject


@pytest.mark.parametrize("given", [None, "/shared/evalexport-cache"])
def test_tox_contracts_builds_its_sdk_environments_where_asked_never_in_the_users_cache(
    given: str | None,
) -> None:
    """``tox -e contracts`` builds about 1 GB of SDK environments: under EVALEXPORT_CACHE_DIR
    when it is set, else under .tox/, never in ~/.cache/evalexport unasked; uv's, pip's and
    virtualenv's caches beside them (#44)."""
    import os
    import shutil
    import subprocess

    tox = shutil.which("tox", path=str(Path(sys.executable).parent)) or shutil.which("tox")
    if tox is None:  # the dev extra installs it; tox's own test environments do not
        pytest.skip("tox is not installed here (pip install -e '.[dev]')")
    unset = {
        "EVALEXPORT_CACHE_DIR",
        "PIP_CACHE_DIR",
        "UV_CACHE_DIR",
        "VIRTUALENV_OVERRIDE_APP_DATA",
    }
    environment = {k: v for k, v in os.environ.items() if k not in unset}
    if given is not None:
        environment["EVALEXPORT_CACHE_DIR"] = given
    shown = subprocess.run(
        [tox, "config", "-e", "contracts", "-k", "set_env", "--root", str(ROOT)],
        capture_output=True,
        text=True,
        env=environment,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    settings = dict(
        x.strip().split("=", 1)
        for x in shown.stdout.splitlines()
        if "_CACHE_DIR=" in x or "VIRTUALENV_OVERRIDE_APP_DATA=" in x
    )
    expected = given or str(ROOT / ".tox" / "evalexport-cache")
    # Its downloads and virtualenv's app data too: they would otherwise fill ~/.cache.
    assert settings == {
        "EVALEXPORT_CACHE_DIR": expected,
        "PIP_CACHE_DIR": f"{expected}/pip",
        "UV_CACHE_DIR": f"{expected}/uv",
        "VIRTUALENV_OVERRIDE_APP_DATA": str(ROOT / ".tox" / "virtualenv-app-data"),
    }
