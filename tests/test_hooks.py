"""Hooks are called with only the arguments they declare, by name: an exporter written before an
argument was added keeps exporting (the 0.1.0 guide's ``_export(self, run, config)``)."""

from __future__ import annotations

from typing import Any

import pytest

from evalexport.pipeline import export_run
from evalexport.results import ExportResult, ExportStatus
from evalexport.run import RunArtifacts
from evalexport.spec.base import Exporter, ExporterConfig
from evalexport.spec.hooks import call_hook
from evalexport.spec.options import parse_options


def test_an_argument_the_hook_does_not_declare_is_left_out_and_order_is_its_own() -> None:
    def few(config: str) -> tuple[str]:
        return (config,)

    def reordered(prepared: str, run: str) -> tuple[str, str]:
        return prepared, run

    class Hooks:
        def deliver(self, target: str, fingerprint: str | None) -> tuple[str, str | None]:
            return target, fingerprint

    given: dict[str, Any] = {"run": "r", "config": "c", "target": "t", "prepared": "p"}
    assert call_hook(few, **given, fingerprint="f") == ("c",)
    assert call_hook(reordered, **given) == ("p", "r")
    assert call_hook(Hooks().deliver, **given, fingerprint="f") == ("t", "f")


class _Config(ExporterConfig):
    pass


with pytest.warns(DeprecationWarning, match=r"guards_exports is deprecated.*kind = .tracking."):

    class _OldStyleExporter(Exporter[_Config]):
        """As the 0.1.0 guide wrote one: no fingerprint, no prepared run."""

        name = "oldstyle"
        summary = "An exporter written from the 0.1.0 guide."
        Config = _Config
        guards_exports = True

        def _export(self, run: RunArtifacts, config: _Config) -> ExportResult:  # type: ignore[override]
            return ExportResult.succeeded(self.name, str(run.run_dir), "exported", run_id="old-1")


def test_an_exporter_whose_export_takes_run_and_config_only_still_exports(sample_run) -> None:
    exporter = _OldStyleExporter()
    config = parse_options(_OldStyleExporter, {"rollouts_jsonl_fpath": str(sample_run.rollouts)})
    first = export_run(exporter, sample_run.run, config)
    assert first.status is ExportStatus.SUCCEEDED, first.message
    assert first.details["fingerprint"].startswith("sha256:")  # guarded all the same
    second = export_run(exporter, sample_run.run, config)
    assert second.status is ExportStatus.SKIPPED, second.message


def test_the_target_form_is_told_by_the_arguments_it_requires(sample_run) -> None:
    with pytest.warns(
        DeprecationWarning, match=r"Old.target\(self, config\) is deprecated"
    ) as said:

        class Old(_OldStyleExporter):
            def target(self, config, extra=None):  # type: ignore[no-untyped-def,override]
                return f"old {extra}"

    assert said[0].filename == __file__  # the warning points at the plugin's class

    class New(_OldStyleExporter):
        def target(self, run, config):  # type: ignore[no-untyped-def]
            return f"new {run.benchmark}"

    config = _Config(rollouts_jsonl_fpath=sample_run.rollouts)
    assert Old().resolve(sample_run.run, config).where == "old None"  # as the pipeline calls it
    assert Old().target(config) == "old None"  # as the plugin's own code may call it
    assert Old().target_of(sample_run.run, config) == "old None"
    assert New().target_of(sample_run.run, config) == "new aime24"
    assert Old.kind == "tracking"
    assert Old.guards_exports  # the flag of plugin API 2 still reads as it was set


def test_a_plugins_plan_extends_the_default_with_super(sample_run) -> None:
    """docs/plugins.md: ``super().plan(run, config, target, prepared)`` is the default plan,
    which a plugin adds its own sections to."""
    from evalexport.pipeline import ExportRequest, run_export
    from evalexport.spec import Exporter, ExporterConfig

    class Config(ExporterConfig):
        project: str = "evals"

    class Planned(Exporter[Config]):
        name = "planned"
        summary = "A plan of its own words."
        kind = "output"

        def plan(self, run, config, target, prepared):  # type: ignore[no-untyped-def]
            plan = super().plan(run, config, target, prepared)
            return plan.model_copy(
                update={"sections": {**plan.sections, "project": [config.project]}}
            )

        def deliver(self, run):  # type: ignore[no-untyped-def]
            raise AssertionError("a dry run delivers nothing")

    result = run_export(
        ExportRequest(Planned, {"rollouts_jsonl_fpath": str(sample_run.rollouts)}, dry_run=True)
    )
    assert result.plan is not None, result.message
    assert result.plan.sections["project"] == ["evals"]
    # the default's part: the files its read reads, the rollouts alone for an output exporter
    assert [file.path for file in result.plan.files] == [str(sample_run.rollouts)]
