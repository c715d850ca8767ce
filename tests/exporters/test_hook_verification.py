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

from evalexport.results import DryRunPlan, ExportResult
from evalexport.run import RunArtifacts
from evalexport.spec import (
    Exporter,
    ExporterConfig,
    ExporterDefinitionError,
    IsolatedConfig,
    IsolatedExporter,
    helper,
)
from evalexport.spec.base import Target


class _Config(ExporterConfig):
    pass


def _define(**namespace: Any) -> type[Exporter[_Config]]:
    """An exporter class made with ``namespace`` as its body."""
    body = {"name": "probe", "summary": "A probe.", "Config": _Config, **namespace}
    if "deliver" not in body and "_export" not in body:
        body["deliver"] = lambda self, run: None
    return type("Probe", (Exporter,), body)


def test_a_misspelled_hook_is_refused_with_the_hook_it_looks_like() -> None:
    def reed(self: Any, run: RunArtifacts) -> None:
        return None

    def delivr(self: Any, run: RunArtifacts) -> None:
        return None

    with pytest.raises(ExporterDefinitionError) as refused:
        _define(delivr=delivr)
    said = str(refused.value)
    assert "Probe.delivr is not a hook" in said
    assert (
        "did you mean deliver(self, run, config, target, prepared, fingerprint, scratch)?" in said
    )
    assert "@evalexport.exporters.helper" in said
    assert _define(reed=reed)  # too far from read to be its misspelling


def test_a_misspelling_of_an_earlier_hook_is_told_the_hook_that_replaced_it() -> None:
    def check_input(self: Any, run: RunArtifacts, config: _Config) -> None:
        return None

    with pytest.raises(ExporterDefinitionError) as refused:
        _define(check_input=check_input)
    assert (
        "did you mean read(self, run, config, target) (check_inputs is its earlier name)?"
        in str(refused.value)
    )


@pytest.mark.parametrize("misspelled", ["summery", "kinds", "resolv", "plans", "sdks"])
def test_a_misspelled_hook_attribute_or_method_is_refused(misspelled: str) -> None:
    with pytest.raises(ExporterDefinitionError, match=rf"Probe\.{misspelled} is not a hook"):
        _define(**{misspelled: "x"})


@pytest.mark.parametrize(
    ("hook", "definition", "said"),
    [
        ("deliver", "def deliver(self, run, prepard=None): ...", "'prepard' is 'prepared'"),
        ("deliver", "def deliver(self, run, prepard): ...", "declares 'prepard'"),
        ("read", "def read(self, run, *, targt): ...", "'targt' is 'target' misspelled"),
        ("resolve", "def resolve(self, run, config, target): ...", "declares 'target'"),
        ("plan", "def plan(self, prepared, fingerprint): ...", "declares 'fingerprint'"),
    ],
)
def test_an_argument_a_hook_is_never_called_with_is_refused_with_its_signature(
    hook: str, definition: str, said: str
) -> None:
    namespace: dict[str, Any] = {}
    exec(definition, namespace)
    with pytest.raises(ExporterDefinitionError) as refused:
        _define(**{hook: namespace[hook]})
    message = str(refused.value)
    assert f"Probe.{hook} declares" in message
    assert f"which the hook {hook} is never called with" in message
    assert said in message
    assert "it is called by name with any of" in message


@pytest.mark.parametrize(
    "definition",
    [
        "def deliver(self, run, /): ...",
        "def deliver(self, *arguments): ...",
        "def deliver(self, run, **everything): ...",
    ],
)
def test_a_hook_that_cannot_be_called_by_name_is_refused(definition: str) -> None:
    namespace: dict[str, Any] = {}
    exec(definition, namespace)
    with pytest.raises(ExporterDefinitionError, match="a hook is called by name"):
        _define(deliver=namespace["deliver"])


def test_a_hook_that_is_not_a_method_is_refused() -> None:
    with pytest.raises(ExporterDefinitionError, match=r"Probe\.plan is 'x', but plan is a hook"):
        _define(plan="x")


def test_the_specs_own_helper_cannot_be_replaced() -> None:
    with pytest.raises(ExporterDefinitionError, match=r"replaces the spec's own helper failed"):
        _define(failed=lambda self, run, message: None)


def test_an_earlier_hooks_misspelled_argument_is_refused_when_the_class_is_made() -> None:
    def _export(self: Any, run: Any, config: Any, *, fingerprint: Any, prepard: Any = None) -> Any:
        return None

    with pytest.raises(ExporterDefinitionError) as refused:
        _define(_export=_export)
    said = str(refused.value)
    assert "Probe._export declares 'prepard', which the hook _export is never called with" in said
    assert "it may also declare fingerprint, prepared" in said
    assert "define deliver(" in said  # and the form that replaces it


def test_an_earlier_hooks_required_argument_it_is_never_called_with_is_refused() -> None:
    def _export(self: Any, run: Any, config: Any, prepard: Any) -> Any:
        return None

    with pytest.raises(ExporterDefinitionError, match=r"_export declares 'prepard'"):
        _define(_export=_export)


def test_arguments_taken_by_position_in_another_order_are_refused() -> None:
    def target(self: Any, config: Any, run: Any) -> str:
        return ""

    with pytest.raises(ExporterDefinitionError, match=r"takes \(config, run\) by position"):
        _define(target=target)


def test_a_class_with_a_hook_and_its_earlier_form_is_refused() -> None:
    with pytest.raises(ExporterDefinitionError, match="defines both read and its earlier form"):
        _define(read=lambda self, run: None, check_inputs=lambda self, run, config: None)


def test_a_helper_named_like_a_hook_is_kept_when_it_says_so() -> None:
    @helper
    def delivr(self: Any, value: int) -> int:
        return value + 1

    probe = _define(delivr=delivr)
    assert probe().delivr(1) == 2


def test_names_far_from_every_hook_are_the_plugins_own() -> None:
    probe = _define(target_url=lambda self: "u", _format=lambda self: "f", TABLE="t")
    assert probe().target_url() == "u"


def test_every_hook_of_the_spec_may_be_defined_as_its_signature_says() -> None:
    class Complete(Exporter[_Config, None, Target]):
        name = "complete"
        summary = "Every hook."
        kind = "output"
        sdk = None

        def resolve(self, run: RunArtifacts, config: _Config) -> Target:
            return Target(where="t")

        def read(self, run: RunArtifacts, config: _Config, target: Target) -> None:
            return None

        def plan(
            self, run: RunArtifacts, config: _Config, target: Target, prepared: None
        ) -> DryRunPlan:
            return DryRunPlan(exporter=self.name, target=target.where)

        def deliver(
            self,
            run: RunArtifacts,
            config: _Config,
            target: Target,
            prepared: None,
            fingerprint: str | None,
            scratch: Path,
        ) -> ExportResult:
            raise NotImplementedError

    assert Complete.Config is _Config  # the options: the first type parameter


def test_every_earlier_hook_may_still_be_defined_as_its_guide_said() -> None:
    with pytest.warns(DeprecationWarning, match="is deprecated and still honoured") as told:

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
    named = {str(warning.message).split(" is deprecated")[0].rsplit(".", 1)[1] for warning in told}
    assert named == {
        "needs_metrics_and_config",
        "progress_unit",
        "target",
        "unexportable_reason",
        "check_inputs",
        "dry_run_plan",
        "already_exported",
        "_export",
    }
    assert all(
        "instead" in str(warning.message) or "leave it out" in str(warning.message)
        for warning in told
    )


def test_a_kind_that_is_not_one_is_refused() -> None:
    with pytest.raises(ExporterDefinitionError, match=r"kind is 'remote'; an exporter's kind"):
        _define(kind="remote")


def test_an_sdk_that_is_not_one_is_refused() -> None:
    with pytest.raises(ExporterDefinitionError, match=r"sdk is 'body\.py'; declare sdk = Sdk"):
        _define(sdk="body.py")


def test_a_tracking_exporter_that_reads_no_metrics_is_refused() -> None:
    with pytest.raises(ExporterDefinitionError, match="tracking exporter with needs_metrics"):
        _define(kind="tracking", needs_metrics_and_config=False)


def test_a_name_close_to_the_deliver_hook_is_refused() -> None:
    with pytest.raises(ExporterDefinitionError, match=r"_delivery is not a hook.*deliver\("):
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
from evalexport.spec import Exporter, ExporterConfig


class Misspelled(Exporter[ExporterConfig]):
    name = "misspelled"
    summary = "A plugin with a misspelled hook."

    def check_input(self, run, config):
        return None

    def deliver(self, run):
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
    assert "did you mean read(self, run, config, target)" in row["summary"]
    exported = evalexport("misspelled", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--json")
    assert exported.returncode == 1
    assert "did you mean read(" in json.loads(exported.stdout)["message"]
    assert evalexport("atif", "--help").returncode == 0  # the rest keeps working
