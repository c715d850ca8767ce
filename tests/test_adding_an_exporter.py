"""docs/architecture.md's "Adding an exporter" checklist, held for every built-in exporter that
runs an SDK in a worker: leaving out one of the files a new exporter must touch fails here,
naming the file."""

from __future__ import annotations

import configparser
import runpy
import tomllib
import typing
from pathlib import Path

import pytest

from evalexport.contracts.check import load_manifests
from evalexport.contracts.surfaces import SURFACES
from evalexport.exporters.isolated import IsolatedExporter
from evalexport.exporters.registry import exporter_entries
from evalexport.testing.plugin import SWITCHES, TOKEN_VARIABLES
from evalexport.workers import protocol
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


def _sdk(exporter) -> str:
    return str(exporter.name)


def test_its_worker_body_reads_a_payload_type_of_the_protocol(exporter) -> None:
    body = exporter.worker_body
    assert body.parent == ROOT / "src" / "evalexport" / "workers", body
    run = runpy.run_path(str(body))["run"]
    assert typing.get_type_hints(run)["payload"].__module__ == protocol.__name__, (
        f"{body.name}: type run(payload) with its TypedDict in workers/protocol.py"
    )


def test_its_sdk_surface_is_declared(exporter) -> None:
    assert _sdk(exporter) in SURFACES, "add its surface to src/evalexport/contracts/surfaces.py"


def test_a_manifest_of_its_sdk_is_committed(exporter) -> None:
    assert load_manifests(ROOT / "contracts" / _sdk(exporter)), (
        f"commit contracts/{_sdk(exporter)}/VERSION.json (evalexport contract manifest ...)"
    )


def test_the_startup_tripwire_plants_its_sdk(exporter) -> None:
    assert _sdk(exporter) in SDKS, "add its SDK to SDKS in tests/test_startup.py"


def test_the_pytest_plugin_has_its_switch_and_its_token_variables(exporter) -> None:
    assert f"{_sdk(exporter)}_sdk" in SWITCHES, "add its switch to testing/plugin.py SWITCHES"
    missing = set(exporter.token_variables) - set(TOKEN_VARIABLES)
    assert exporter.token_variables, "declare the variables its SDK reads credentials from"
    assert not missing, f"add {sorted(missing)} to testing/plugin.py TOKEN_VARIABLES"


def test_tox_has_a_contract_environment_for_its_sdk(exporter) -> None:
    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini")
    environments = [s for s in tox.sections() if s.startswith(f"testenv:contract-{_sdk(exporter)}")]
    assert environments, f"add a [testenv:contract-{_sdk(exporter)}...] section to tox.ini"


def test_mypy_can_check_its_worker_against_the_sdk(exporter) -> None:
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    fakes = [path for path in mypy.get("mypy_path", "").split(":") if path]
    ignored = [module for override in mypy.get("overrides", []) for module in override["module"]]
    sdk = _sdk(exporter)
    assert f"fakes/{sdk}/src" in fakes or sdk in ignored, (
        f"pyproject.toml [tool.mypy]: add fakes/{sdk}/src to mypy_path, or {sdk!r} to the "
        "overrides that ignore missing SDK imports"
    )
