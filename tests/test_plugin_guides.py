"""Plugins written from every published guide keep exporting (docs/plugins.md, "The promise").

Each plugin under ``tests/support/plugin_guides/apiN/`` was written from the guide of plugin API
N and is installed through a real entry point (its ``.dist-info`` on the path). It is run as a
user runs it: ``evalexport NAME ...`` in a subprocess, and ``evalexport.export`` in one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import evalexport

GUIDES = Path(__file__).resolve().parent / "support" / "plugin_guides"
ROOT = Path(__file__).resolve().parent.parent


def _evalexport(site: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "always::DeprecationWarning", "-m", "evalexport", *arguments],
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _result(completed: subprocess.CompletedProcess[str]) -> dict:
    assert completed.stdout, completed.stderr
    return json.loads(completed.stdout.splitlines()[-1])


def test_every_published_plugin_api_has_a_plugin_written_from_its_guide() -> None:
    assert sorted(path.name for path in GUIDES.iterdir()) == [
        f"api{version}" for version in range(1, evalexport.PLUGIN_API_VERSION + 1)
    ]


def test_the_current_guides_plugin_is_its_example_as_written() -> None:
    guide = (ROOT / "docs" / "plugins.md").read_text()
    example = re.search(r"```python\n(.*?)```", guide, re.S)
    assert example is not None
    plugin = GUIDES / f"api{evalexport.PLUGIN_API_VERSION}" / "notebook_exporter" / "__init__.py"
    assert plugin.read_text() == example.group(1)


@pytest.mark.parametrize("name", ["auditecho", "auditlog"])
def test_a_plugin_of_api_1_exports_and_is_told_the_new_forms(name, sample_run, tmp_path) -> None:
    store = tmp_path / "store"
    arguments = [name, f"+rollouts_jsonl_fpath={sample_run.rollouts}", f"+store_dir={store}"]
    dry = _result(_evalexport(GUIDES / "api1", *arguments, "--dry-run", "--json"))
    assert dry["exit_code"] == 0, dry["message"]
    assert dry["plan"]["target"] == str(store)
    completed = _evalexport(GUIDES / "api1", *arguments, "--json")
    result = _result(completed)
    assert (result["status"], result["exit_code"]) == ("succeeded", 0), result["message"]
    assert len(list(store.glob("*.json"))) == 1
    assert "resolve(self, run, config)" in completed.stderr  # the deprecation names the new form
    if name == "auditlog":  # a tracking exporter: guarded, its run id in the marker
        (marker,) = json.loads(sample_run.run.export_marker(name).read_text())["exports"]
        assert result["run_id"] == marker["remote_run_id"]
        assert "ExportResult.succeeded(..., run_id=...)" in completed.stderr
        (recorded,) = [json.loads(path.read_text()) for path in store.glob("*.json")]
        assert recorded["tags"]["evalexport.fingerprint"] == marker["fingerprint"]
        again = _result(_evalexport(GUIDES / "api1", *arguments, "--json"))
        assert (again["status"], again["skip_reason"]) == ("skipped", "already exported")
        assert len(list(store.glob("*.json"))) == 1
        dry = _result(_evalexport(GUIDES / "api1", *arguments, "--dry-run", "--json"))
        assert (dry["status"], dry["skip_reason"]) == ("skipped", "already exported")


_EXPORT_TWICE = (
    "import json, sys, warnings, evalexport\n"
    "warnings.simplefilter(sys.argv[3], DeprecationWarning)\n"
    "for _ in range(2):\n"
    "    result = evalexport.export('notebook', sys.argv[1], store_dir=sys.argv[2])\n"
    "    print(result.model_dump_json())\n"
)


@pytest.mark.parametrize(
    ("api", "warnings", "told"),
    [
        (2, "always", 'guards_exports is deprecated and still honoured; set kind = "tracking"'),
        (3, "always", "_export is deprecated and still honoured; define deliver("),
        (4, "error", None),  # the current guide uses no deprecated form
    ],
)
def test_the_notebook_plugin_of_each_later_guide_exports_once_through_the_python_api(
    api: int, warnings: str, told: str | None, sample_run, tmp_path
) -> None:
    store = tmp_path / "store"
    completed = subprocess.run(
        [sys.executable, "-c", _EXPORT_TWICE, str(sample_run.rollouts), str(store), warnings],
        env={**os.environ, "PYTHONPATH": str(GUIDES / f"api{api}")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    if told is not None:
        assert told in completed.stderr
    first, second = (json.loads(line) for line in completed.stdout.splitlines())
    assert first["status"] == "succeeded", first["message"]
    assert (second["status"], second["run_id"]) == ("skipped", first["run_id"])
    (recorded,) = [json.loads(path.read_text()) for path in store.glob("*.json")]
    assert recorded["rollouts"] == sample_run.rollout_count
    assert recorded["tags"]["evalexport.fingerprint"] == first["details"]["fingerprint"]
    assert recorded["params"]  # the saved config, masked
    if api == evalexport.PLUGIN_API_VERSION:  # the guide's plugin sends the metrics' texts too
        assert isinstance(recorded["texts"], dict)
