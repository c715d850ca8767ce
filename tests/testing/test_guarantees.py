"""The public guarantee suite holds a plugin written from docs/plugins.md, run as the guide's
"Testing your plugin" writes it, and catches a plugin that breaks a guarantee, with a message
naming the guarantee it broke."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import evalexport

GUIDES = Path(__file__).resolve().parents[1] / "support" / "plugin_guides"


def _guide_suite() -> str:
    """The code of docs/plugins.md, "Testing your plugin": the test module a plugin author
    writes, run here as it is written."""
    guide = (Path(__file__).resolve().parents[2] / "docs" / "plugins.md").read_text()
    section = guide.split("## Testing your plugin", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None, "docs/plugins.md, Testing your plugin, shows its test module"
    return code.group(1)


SUITE = _guide_suite()


BAD_PLUGINS = """
import json
import os
import uuid

from pydantic import Field
from pathlib import Path

from evalexport import ExportResult
from evalexport.spec import Exporter, ExporterConfig, Target, prepare


class StoreConfig(ExporterConfig):
    store_dir: Path = Field(description="Where runs are recorded.")


class _Base(Exporter[StoreConfig]):
    kind = "tracking"

    def resolve(self, config):
        return Target(where=str(config.store_dir))

    def read(self, run):
        return prepare(run)

    def _record(self, run, config, record):
        run_id = uuid.uuid4().hex
        config.store_dir.mkdir(parents=True, exist_ok=True)
        (config.store_dir / f"{run_id}.json").write_text(json.dumps(record))
        return ExportResult.succeeded(self.name, str(run.run_dir), "recorded", run_id=run_id)


class ReadsTwice(_Base):
    name = "readstwice"
    summary = "Reads the rollouts again."

    def deliver(self, run, config):
        rows = sum(1 for _ in run.iter_rollouts())
        return self._record(run, config, {"rows": rows})


class WritesIntoTheRun(_Base):
    name = "writesintherun"
    summary = "Writes a note into the run directory."

    def deliver(self, run, config):
        (run.run_dir / "exported.txt").write_text("done")
        return self._record(run, config, {})


class WritesTwice(Exporter[StoreConfig]):
    name = "writestwice"
    summary = "Appends each export to a file, and says nothing of an earlier one."

    def deliver(self, run, config):
        config.store_dir.mkdir(parents=True, exist_ok=True)
        with open(config.store_dir / "exports.jsonl", "a") as exports:
            exports.write(json.dumps({"rollouts": str(run.rollouts)}) + "\\n")
        return ExportResult.succeeded(self.name, str(run.run_dir), "appended")


class RefusesLate(_Base):
    name = "refuseslate"
    summary = "Reads its SDK's setting only when it delivers."

    def deliver(self, run, config):
        if os.environ.get("REFUSESLATE_MODE") not in (None, "online", "offline"):
            return ExportResult.failed(self.name, str(run.run_dir), "REFUSESLATE_MODE is refused")
        return self._record(run, config, {})


class LeaksASecret(_Base):
    name = "leaks"
    summary = "Sends the saved config as it is on disk."

    def deliver(self, run, config):
        return self._record(run, config, {"config": run.saved_config.read_text()})
"""


@pytest.fixture
def plugin_path(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A site with the bad plugins, installed by entry point for the inner pytest run."""
    site = pytester.path / "site"
    dist = site / "bad_plugins-1.0.dist-info"
    dist.mkdir(parents=True)
    (site / "bad_plugins.py").write_text(BAD_PLUGINS)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: bad-plugins\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[evalexport.exporters]\n"
        "readstwice = bad_plugins:ReadsTwice\n"
        "writesintherun = bad_plugins:WritesIntoTheRun\n"
        "leaks = bad_plugins:LeaksASecret\n"
        "writestwice = bad_plugins:WritesTwice\n"
        "refuseslate = bad_plugins:RefusesLate\n"
    )
    path = os.pathsep.join(
        [
            str(site),
            str(GUIDES / f"api{evalexport.PLUGIN_API_VERSION}"),
            os.environ.get("PYTHONPATH", ""),
        ]
    )
    monkeypatch.setenv("PYTHONPATH", path)
    return site


def _run_suite(pytester: pytest.Pytester, name: str) -> pytest.RunResult:
    suite = SUITE.replace('exporter_name = "notebook"', f"exporter_name = {name!r}")
    pytester.makepyfile(**{f"test_{name}": suite})
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", f"test_{name}.py")


@pytest.mark.usefixtures("plugin_path")
def test_the_guides_plugin_keeps_every_guarantee(pytester: pytest.Pytester) -> None:
    result = _run_suite(pytester, "notebook")
    result.assert_outcomes(passed=21)


@pytest.mark.usefixtures("plugin_path")
@pytest.mark.parametrize(
    ("plugin", "broken", "said"),
    [
        (
            "readstwice",
            "test_guarantee_each_file_of_the_run_is_opened_once",
            "each file of the run is opened once, but its export",
        ),
        (
            "writesintherun",
            "test_guarantee_the_run_directory_is_unchanged_but_for_the_marker",
            "the run directory is unchanged but for the marker, but the export changed [] and "
            "added ['exported.txt']",
        ),
        ("leaks", "test_guarantee_no_secret_leaves", "no secret leaves, but a canary was found"),
        (
            "writestwice",
            "test_guarantee_a_rerun_never_exports_the_run_twice",
            "a rerun never exports the run twice, but it said 'succeeded: appended'. An output "
            "exporter says its output is there already with Target(..., "
            "already_exported=WHAT_SAYS_SO) returned by resolve",
        ),
    ],
)
def test_a_plugin_that_breaks_a_guarantee_fails_it_by_name(
    pytester: pytest.Pytester, plugin: str, broken: str, said: str
) -> None:
    result = _run_suite(pytester, plugin)
    failed = [line for line in result.outlines if line.startswith("FAILED")]
    assert any(broken in line for line in failed), result.stdout.str()
    assert f"guarantee broken for exporter {plugin!r}: {said}" in result.stdout.str()


@pytest.mark.usefixtures("plugin_path")
def test_a_plugins_own_refused_settings_are_held_to_the_dry_runs_verdict(
    pytester: pytest.Pytester,
) -> None:
    """A plugin names the settings its SDK refuses (``refused_settings``); each is a case of
    "a dry run tells the export's verdict" beside W&B's and MLflow's, and a plugin whose dry
    run misses one fails that case by name."""
    suite = SUITE.replace(
        'exporter_name = "notebook"',
        'exporter_name = "refuseslate"\n    refused_settings = [("REFUSESLATE_MODE", "bad")]',
    )
    pytester.makepyfile(test_refuseslate=suite)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-q", "-k", "settings_an_sdk_refuses", "test_refuseslate.py"
    )
    # pytest words the summary line in full where ``CI`` is set and cuts it to the terminal
    # elsewhere: the test's id is what is compared.
    failed = [line.split(" - ")[0] for line in result.outlines if line.startswith("FAILED")]
    assert failed == [
        "FAILED test_refuseslate.py::TestNotebook::test_guarantee_a_dry_run_tells_the_exports_"
        "verdict_on_settings_an_sdk_refuses[REFUSESLATE_MODE-bad]"
    ], result.stdout.str()
    said = result.stdout.str()
    assert (
        "guarantee broken for exporter 'refuseslate': a dry run tells the export's verdict, but "
        "on REFUSESLATE_MODE='bad' the dry run said 'succeeded: dry run: " in said
    )
    assert "and the export 'failed: REFUSESLATE_MODE is refused'" in said
    result.assert_outcomes(passed=3, failed=1)


@pytest.mark.usefixtures("plugin_path")
@pytest.mark.parametrize(
    ("declared", "said"),
    [
        ('[("REFUSESLATE=MODE", "bad")]', "names 'REFUSESLATE=MODE', which cannot be set"),
        ('[("REFUSESLATE_MODE", 5)]', "holds ('REFUSESLATE_MODE', 5); it holds pairs"),
        ('("REFUSESLATE_MODE", "bad")', "holds 'REFUSESLATE_MODE'; it holds pairs"),
    ],
)
def test_refused_settings_that_are_no_settings_fail_collection_naming_them(
    pytester: pytest.Pytester, declared: str, said: str
) -> None:
    suite = SUITE.replace(
        'exporter_name = "notebook"',
        f'exporter_name = "refuseslate"\n    refused_settings = {declared}',
    )
    pytester.makepyfile(test_refuseslate=suite)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", "--co")
    assert result.ret != 0
    assert f"TestNotebook.refused_settings {said}" in result.stdout.str()


def _rewards_plugin() -> str:
    """docs/plugins.md, "Reading the rows, and saying what happened": its plugin as written."""
    guide = (Path(__file__).resolve().parents[2] / "docs" / "plugins.md").read_text()
    section = guide.split("## Reading the rows, and saying what happened", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None, "the section shows its plugin"
    return code.group(1)


REWARDS_SUITE = """
import csv

import pytest

import evalexport
from evalexport.testing.guarantees import ExporterGuarantees


class TestRewards(ExporterGuarantees):
    exporter_name = "rewards"


@pytest.fixture
def exporter_options(tmp_path):
    return {"output_csv": str(tmp_path / "rewards.csv")}


def test_every_row_is_written_once_and_an_identical_rerun_is_skipped(sample_run, tmp_path):
    output = tmp_path / "rewards.csv"
    done = evalexport.export("rewards", sample_run.rollouts, output_csv=output)
    assert done.status == "succeeded", done.message
    rows = list(csv.reader(output.open()))
    assert rows[0] == ["task", "rollout", "agent", "reward"]
    assert len(rows) - 1 == sum(1 for _ in sample_run.rollouts.open())
    written = output.read_bytes()
    again = evalexport.export("rewards", sample_run.rollouts, output_csv=output)
    assert again.status == "skipped" and again.skip_reason == "already exported", again.message
    dry = evalexport.dry_run("rewards", sample_run.rollouts, output_csv=output)
    assert dry.status == "skipped", dry.message
    lines = sample_run.rollouts.read_text().splitlines(keepends=True)
    sample_run.rollouts.write_text("".join(lines[:-1]))  # another run now
    changed = evalexport.export("rewards", sample_run.rollouts, output_csv=output)
    assert changed.status == "failed" and str(output) in changed.message, changed.message
    assert "+output_csv" not in changed.message  # named as a Python caller gives it
    assert output.read_bytes() == written
"""


def test_the_guides_reading_plugin_keeps_every_guarantee(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = pytester.path / "site"
    dist = site / "rewards_exporter-1.0.dist-info"
    dist.mkdir(parents=True)
    (site / "rewards_exporter.py").write_text(_rewards_plugin())
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rewards-exporter\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[evalexport.exporters]\nrewards = rewards_exporter:RewardsExporter\n"
    )
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    pytester.makepyfile(test_rewards=REWARDS_SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", "test_rewards.py")
    result.assert_outcomes(passed=22)
