"""A mistake in a hook is refused when the exporter class is made, naming the class, the hook
and the signature it expects (as pluggy refuses a hook implementation at registration)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalexport.exporters import (
    Exporter,
    ExporterConfig,
    ExporterDefinitionError,
    IsolatedConfig,
    IsolatedExporter,
    helper,
)
from evalexport.results import ExportResult
from evalexport.run import RunArtifacts


class _Config(ExporterConfig):
    pass


def _define(**namespace: Any) -> type[Exporter[_Config]]:
    """An exporter class made with ``namespace`` as its body."""
    body = {"name": "probe", "summary": "A probe.", "Config": _Config, **namespace}
    if "_export" not in body:
        body["_export"] = lambda self, run, config, *, fingerprint: None
    return type("Probe", (Exporter,), body)


def test_a_misspelled_hook_is_refused_with_the_hook_it_looks_like() -> None:
    def check_input(self: Any, run: RunArtifacts, config: _Config) -> None:
        return None

    with pytest.raises(ExporterDefinitionError) as refused:
        _define(check_input=check_input)
    said = str(refused.value)
    assert "Probe.check_input is not a hook" in said
    assert "did you mean check_inputs(self, run: RunArtifacts, config: ConfigT)?" in said
    assert "@evalexport.exporters.helper" in said


@pytest.mark.parametrize("misspelled", ["summery", "kinds", "already_exported_", "dry_run_plans"])
def test_a_misspelled_hook_attribute_or_method_is_refused(misspelled: str) -> None:
    with pytest.raises(ExporterDefinitionError, match=rf"Probe\.{misspelled} is not a hook"):
        _define(**{misspelled: "x"})


def test_an_argument_the_hook_is_never_called_with_is_refused_with_its_signature() -> None:
    def _export(self: Any, run: Any, config: Any, *, fingerprint: Any, prepard: Any = None) -> Any:
        return None

    with pytest.raises(ExporterDefinitionError) as refused:
        _define(_export=_export)
    said = str(refused.value)
    assert "Probe._export declares 'prepard', which the hook _export is never called with" in said
    assert "it may also declare prepared" in said


def test_arguments_taken_by_position_in_another_order_are_refused() -> None:
    def target(self: Any, config: Any, run: Any) -> str:
        return ""

    with pytest.raises(ExporterDefinitionError, match=r"takes \(config, run\) by position"):
        _define(target=target)


def test_a_helper_named_like_a_hook_is_kept_when_it_says_so() -> None:
    @helper
    def check_input(self: Any, value: int) -> int:
        return value + 1

    probe = _define(check_input=check_input)
    assert probe().check_input(1) == 2


def test_names_far_from_every_hook_are_the_plugins_own() -> None:
    probe = _define(target_url=lambda self: "u", _format=lambda self: "f", TABLE="t")
    assert probe().target_url() == "u"


def test_every_hook_of_the_template_may_be_defined_as_its_signature_says() -> None:
    class Complete(Exporter[_Config]):
        name = "complete"
        summary = "Every hook."
        Config = _Config
        kind = "output"
        needs_metrics_and_config = False
        progress_unit = "bytes"

        def target(self, run: RunArtifacts, config: _Config) -> str:
            return "t"

        def unexportable_reason(self, run: RunArtifacts, config: _Config) -> str | None:
            return None

        def check_inputs(self, run: RunArtifacts, config: _Config) -> None:
            return None

        def dry_run_plan(self, run: RunArtifacts, config: _Config, prepared: Any = None) -> Any:
            return None

        def already_exported(self, run: RunArtifacts, config: _Config) -> None:
            return None

        def _export(
            self,
            run: RunArtifacts,
            config: _Config,
            *,
            fingerprint: str | None,
            prepared: Any = None,
        ) -> ExportResult:
            raise NotImplementedError

    assert Complete.kind == "output"


def test_a_kind_that_is_not_one_is_refused() -> None:
    with pytest.raises(ExporterDefinitionError, match=r"kind is 'remote'; an exporter's kind"):
        _define(kind="remote")


def test_a_tracking_exporter_that_reads_no_metrics_is_refused() -> None:
    with pytest.raises(ExporterDefinitionError, match="tracking exporter with needs_metrics"):
        _define(kind="tracking", needs_metrics_and_config=False)


def test_a_step_of_the_template_cannot_be_replaced() -> None:
    with pytest.raises(ExporterDefinitionError, match=r"_delivery is a step of the exporter"):
        _define(_delivery=lambda self, run, config, *, dry_run: None)


class _IsolatedConfig(IsolatedConfig):
    requirement: str | list[str] = "tinysdk"


def test_an_isolated_exporter_delivers_through_its_worker_not_its_own_export() -> None:
    with pytest.raises(ExporterDefinitionError, match=r"_export is a step of the exporter"):
        type(
            "Probe",
            (IsolatedExporter,),
            {
                "name": "probe",
                "summary": "A probe.",
                "Config": _IsolatedConfig,
                "worker_body": Path("body.py"),
                "worker_payload": lambda self, run, config, scratch, fingerprint: {},
                "_export": lambda self, run, config, *, fingerprint: None,
            },
        )


def test_an_isolated_hook_with_a_misspelled_argument_is_refused() -> None:
    with pytest.raises(ExporterDefinitionError, match=r"worker_payload declares 'fingerprnt'"):
        type(
            "Probe",
            (IsolatedExporter,),
            {
                "name": "probe",
                "summary": "A probe.",
                "Config": _IsolatedConfig,
                "worker_body": Path("body.py"),
                "worker_payload": lambda self, run, config, scratch, fingerprnt: {},
            },
        )


_MISSPELLED_PLUGIN = """
from evalexport.exporters import Exporter, ExporterConfig


class Misspelled(Exporter[ExporterConfig]):
    name = "misspelled"
    summary = "A plugin with a misspelled hook."
    Config = ExporterConfig

    def check_input(self, run, config):
        return None

    def _export(self, run, config, *, fingerprint):
        raise AssertionError("never exported")
"""


def test_a_plugin_with_a_misspelled_hook_fails_to_load_and_list_says_why(
    tmp_path: Path, sample_run
) -> None:
    site = tmp_path / "site"
    dist = site / "misspelled_plugin-1.0.dist-info"
    dist.mkdir(parents=True)
    (site / "misspelled_plugin.py").write_text(_MISSPELLED_PLUGIN)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: misspelled-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[evalexport.exporters]\nmisspelled = misspelled_plugin:Misspelled\n"
    )

    def evalexport(*arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "evalexport", *arguments],
            env={**os.environ, "PYTHONPATH": str(site)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    listed = evalexport("list", "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = [row for row in json.loads(listed.stdout) if row["name"] == "misspelled"]
    assert "Misspelled.check_input is not a hook" in row["summary"]
    assert "did you mean check_inputs" in row["summary"]
    exported = evalexport("misspelled", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--json")
    assert exported.returncode == 1
    assert "did you mean check_inputs" in json.loads(exported.stdout)["message"]
    assert evalexport("atif", "--help").returncode == 0  # the rest keeps working
