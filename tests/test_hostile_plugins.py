"""A plugin is other people's code: whatever it does when it is imported (any exception,
``SystemExit``, a hang, a class missing its name) or while it exports, every command that does
not need it works, the ones that do fail with a scrubbed one-line reason naming the plugin and
its distribution, and ``evalexport list`` shows it as broken with that reason."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TOKEN = "canary-plugin-0123456789abcdef"
EXAMPLE_RUN = Path(__file__).resolve().parent.parent / "examples" / "aime24"

MODULES = {
    "raises": "raise RuntimeError('token ' + __import__('os').environ['PLUGIN_TOKEN'])",
    "syntax": "def broken(:\n",
    "exits": "import sys\nsys.exit(3)",
    "hangs": "import time\ntime.sleep(600)",
    "bearer": "raise ValueError('Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123')",
    "nosummary": (
        "from evalexport.exporters import Exporter, ExporterConfig\n"
        "class X(Exporter[ExporterConfig]):\n"
        "    name = 'nosummary'\n"
        "    Config = ExporterConfig\n"
        "    def deliver(self, run):\n"
        "        raise AssertionError\n"
    ),
    "noconfig": (
        "from evalexport.exporters import Exporter\n"
        "class X(Exporter):\n"
        "    name = 'noconfig'\n"
        "    summary = 'no Config'\n"
        "    def deliver(self, run):\n"
        "        raise AssertionError\n"
    ),
    "exitsexporting": (
        "from evalexport.exporters import Exporter, ExporterConfig\n"
        "class X(Exporter[ExporterConfig]):\n"
        "    name = 'exitsexporting'\n"
        "    summary = 'calls sys.exit in its export'\n"
        "    Config = ExporterConfig\n"
        "    def deliver(self, run):\n"
        "        raise SystemExit(7)\n"
    ),
    "prints": (
        "import os, subprocess\n"
        "print('printed on import')\n"
        "os.write(1, b'written to fd 1 on import\\n')\n"
        "from evalexport.exporters import Exporter, ExporterConfig\n"
        "from evalexport.results import ExportResult\n"
        "class X(Exporter[ExporterConfig]):\n"
        "    name = 'prints'\n"
        "    summary = 'prints as it is imported and as it exports'\n"
        "    Config = ExporterConfig\n"
        "    def deliver(self, run):\n"
        "        print('printed while exporting')\n"
        "        subprocess.run(['echo', 'a child of the export printed'], check=True)\n"
        "        return ExportResult.succeeded(self.name, str(run.run_dir), 'done')\n"
    ),
    "closesstdout": (
        "import sys\n"
        "from evalexport.exporters import Exporter, ExporterConfig\n"
        "from evalexport.results import ExportResult\n"
        "class X(Exporter[ExporterConfig]):\n"
        "    name = 'closesstdout'\n"
        "    summary = 'closes sys.stdout as it exports'\n"
        "    Config = ExporterConfig\n"
        "    def deliver(self, run):\n"
        "        sys.stdout.close()\n"
        "        return ExportResult.succeeded(self.name, str(run.run_dir), 'done')\n"
    ),
    "closesfds": (
        "import os\n"
        "from evalexport.exporters import Exporter, ExporterConfig\n"
        "from evalexport.results import ExportResult\n"
        "class X(Exporter[ExporterConfig]):\n"
        "    name = 'closesfds'\n"
        "    summary = 'closes every descriptor above 2 as it exports'\n"
        "    Config = ExporterConfig\n"
        "    def deliver(self, run):\n"
        "        os.closerange(3, 4096)\n"
        "        return ExportResult.succeeded(self.name, str(run.run_dir), 'done')\n"
    ),
}
"""Plugins that misbehave; ``prints`` works, but writes to standard output."""

PRINTED = (
    "printed on import",
    "written to fd 1 on import",
    "printed while exporting",
    "a child of the export printed",
)


@pytest.fixture
def hostile_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    for name, source in MODULES.items():
        dist = site / f"hostile_{name}-1.0.dist-info"
        dist.mkdir(parents=True)
        (site / f"hostile_{name}.py").write_text(source)
        (dist / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: hostile-{name}\nVersion: 1.0\n"
        )
        (dist / "entry_points.txt").write_text(
            f"[evalexport.exporters]\n{name} = hostile_{name}:X\n"
        )
    return site


def _evalexport(site: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalexport", *arguments],
        env={
            **os.environ,
            "PYTHONPATH": str(site),
            "PLUGIN_TOKEN": TOKEN,
            "EVALEXPORT_PLUGIN_IMPORT_TIMEOUT": "2",
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_list_shows_each_broken_plugin_with_its_reason_and_leaks_nothing(hostile_site) -> None:
    listed = _evalexport(hostile_site, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert {"atif", "mlflow", "wandb", "evalrdl"} <= set(rows)
    loads = ("exitsexporting", "prints", "closesstdout", "closesfds")  # misbehave exporting
    broken = [name for name in MODULES if name not in loads]
    said = {name: rows[name]["summary"] for name in broken}
    assert "RuntimeError: token ****" in said["raises"]
    assert "SyntaxError" in said["syntax"]
    assert "SystemExit: 3" in said["exits"]
    assert "did not finish importing within 2 s" in said["hangs"]
    assert "Bearer ****" in said["bearer"]
    assert "does not set summary" in said["nosummary"]
    assert "does not set Config" in said["noconfig"]
    for name, summary in said.items():
        assert summary.startswith("(cannot be loaded: "), (name, summary)
        assert f"plugin hostile-{name}" in summary
        assert "\n" not in summary
    assert TOKEN not in listed.stdout + listed.stderr
    plain = _evalexport(hostile_site, "list")
    assert plain.returncode == 0
    assert TOKEN not in plain.stdout + plain.stderr


def test_every_command_that_does_not_need_a_broken_plugin_works(hostile_site, sample_run) -> None:
    assert _evalexport(hostile_site, "atif", "--help").returncode == 0
    assert _evalexport(hostile_site, "--help").returncode == 0
    inspected = _evalexport(hostile_site, "inspect", str(sample_run.rollouts))
    assert inspected.returncode == 0, inspected.stderr


@pytest.mark.parametrize("name", ["raises", "exits", "nosummary", "noconfig"])
def test_exporting_with_a_broken_plugin_fails_with_one_scrubbed_line(
    hostile_site, sample_run, name: str
) -> None:
    exported = _evalexport(
        hostile_site, name, f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--json"
    )
    assert exported.returncode == 1, exported.stderr
    result = json.loads(exported.stdout)
    assert result["status"] == "failed"
    assert f"Exporter {name!r} (plugin hostile-{name})" in result["message"]
    assert "Traceback" not in exported.stderr
    assert TOKEN not in exported.stdout + exported.stderr
    helped = _evalexport(hostile_site, name, "--help")
    assert helped.returncode == 1
    assert "Traceback" not in helped.stdout + helped.stderr


def test_a_plugin_that_exits_while_exporting_fails_its_export_only(
    hostile_site, sample_run
) -> None:
    exported = _evalexport(
        hostile_site, "exitsexporting", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--json"
    )
    assert exported.returncode == 1
    assert "called sys.exit(7) during the export" in json.loads(exported.stdout)["message"]


def test_the_python_api_returns_a_result_for_a_broken_plugin(hostile_site, sample_run) -> None:
    script = (
        "import json, sys, evalexport\n"
        "result = evalexport.export('raises', sys.argv[1])\n"
        "print(result.model_dump_json())\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script, str(sample_run.rollouts)],
        env={**os.environ, "PYTHONPATH": str(hostile_site), "PLUGIN_TOKEN": TOKEN},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)
    assert (result["status"], result["exit_code"]) == ("failed", 1)
    assert TOKEN not in completed.stdout


def test_what_a_plugin_prints_never_mixes_into_the_result_on_stdout(
    hostile_site, sample_run
) -> None:
    listed = _evalexport(hostile_site, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)  # stdout is the list alone
    exported = _evalexport(
        hostile_site, "prints", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--json"
    )
    assert exported.returncode == 0, exported.stderr
    assert len(exported.stdout.splitlines()) == 1, exported.stdout  # one line of JSON
    assert json.loads(exported.stdout)["message"] == "done"
    for text in PRINTED:
        assert text in exported.stderr, text
    assert "printed on import" in listed.stderr


def test_what_a_plugin_prints_on_import_never_mixes_into_a_plans_json(
    hostile_site, tmp_path
) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(EXAMPLE_RUN, runs / "aime24")
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        f"job:\n  benchmarks: [aime24]\n  runs_root: {runs}\nexports:\n  prints: {{}}\n"
    )
    checked = _evalexport(hostile_site, "plan", "check", str(plan))
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.startswith(f"{plan}: valid"), checked.stdout
    ran = _evalexport(hostile_site, "plan", "run", str(plan), "--json")
    assert ran.returncode == 0, ran.stderr
    (outcome,) = json.loads(ran.stdout)  # stdout is the outcomes alone
    assert outcome["result"]["message"] == "done"
    assert "printed on import" in checked.stderr + ran.stderr


def test_a_plugin_that_closes_stdout_or_sweeps_descriptors_still_gets_its_result_said(
    hostile_site, sample_run
) -> None:
    closed = _evalexport(
        hostile_site, "closesstdout", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--json"
    )
    assert closed.returncode == 0, closed.stderr
    assert json.loads(closed.stdout)["message"] == "done"  # stdout is still the result's
    assert "Traceback" not in closed.stderr
    swept = _evalexport(
        hostile_site, "closesfds", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--json"
    )
    assert "Traceback" not in swept.stderr, swept.stderr
    assert swept.returncode == 0, swept.stderr
    # Its own standard output is gone: the result is on stderr, and said to be.
    assert "closed file descriptor" in swept.stderr
    assert '"message":"done"' in swept.stderr
