"""A third party's isolated exporter gets evalexport's SDK contracts with no edit to evalexport.

``tests/support/thirdparty_site`` holds ``tinytrack_exporter``, installed through its
``.dist-info``: an isolated exporter whose worker drives the tinytrack SDK, with a fake of that
SDK (three calls), a committed manifest, and its surface declared in ``sdk_contract``.
``tests/support/thirdparty_drift`` is tinytrack as a later release changed it. Everything runs
as a plugin author would run it, in subprocesses with only the plugin on the path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent / "support"
SITE = SUPPORT / "thirdparty_site"
PLUGIN = SITE / "tinytrack_exporter"
DRIFT = SUPPORT / "thirdparty_drift"


def _run(*command: str, cwd: Path | None = None, **environment: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        command,
        env={**os.environ, "PYTHONPATH": str(SITE), **environment},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _evalexport(*arguments: str) -> subprocess.CompletedProcess:
    return _run(sys.executable, "-m", "evalexport", *arguments)


def test_the_manifest_command_extracts_the_plugins_fake_as_committed() -> None:
    completed = _evalexport("contract", "manifest", "tinytrack", "--fake", str(PLUGIN / "fake"))
    assert completed.returncode == 0, completed.stderr
    committed = json.loads((PLUGIN / "contracts" / "1.0.json").read_text())
    assert json.loads(completed.stdout) == committed


def test_check_finds_its_fake_and_manifests_and_catches_a_drift() -> None:
    clean = _evalexport("contract", "check", "tinytrack")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "Success: no drift (fake tinytrack 1.0 against real 1.0)" in clean.stdout
    drifted = _evalexport("contract", "check", "tinytrack", "--fake", str(DRIFT))
    assert drifted.returncode == 1, drifted.stdout + drifted.stderr
    assert (
        'tinytrack.Client.log: parameter "metrics" of real 1.0 is "values" in the fake (renamed)'
        in drifted.stdout
    )
    assert 'attribute "run_id" of real 1.0 is missing in the fake' in drifted.stdout


def test_the_matrix_includes_the_plugins_sdk() -> None:
    completed = _evalexport("contract", "matrix", "tinytrack")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert completed.stdout.startswith("tinytrack: Success: no drift")


def test_its_workers_calls_on_the_fake_bind_to_the_committed_manifest(tmp_path) -> None:
    call_log = tmp_path / "calls.jsonl"
    body = (
        "import runpy, sys\n"
        "run = runpy.run_path(sys.argv[1])['run']\n"
        "print(run({'project': 'evals', 'name': 'aime24-run', 'metrics': {'accuracy': 0.5}}))\n"
    )
    completed = _run(
        sys.executable,
        "-c",
        body,
        str(PLUGIN / "worker.py"),
        PYTHONPATH=str(PLUGIN / "fake"),
        TINYTRACK_FAKE_CALL_LOG=str(call_log),
    )
    assert completed.returncode == 0, completed.stderr
    check = (
        "import sys\n"
        "from pathlib import Path\n"
        "from evalexport.contracts.recorded import check_call_log\n"
        "print('\\n'.join(check_call_log('tinytrack', Path(sys.argv[1]))))\n"
    )
    bound = _run(sys.executable, "-c", check, str(call_log))
    assert bound.returncode == 0, bound.stderr
    assert bound.stdout.strip() == ""  # every call binds
    drifted = tmp_path / "drifted" / "tinytrack"
    drifted.mkdir(parents=True)
    manifest = _evalexport("contract", "manifest", "tinytrack", "--fake", str(DRIFT))
    (drifted / "2.0.json").write_text(manifest.stdout)
    check_drift = check.replace(
        "Path(sys.argv[1])", "Path(sys.argv[1]), contracts=Path(sys.argv[2])"
    )
    problems = _run(sys.executable, "-c", check_drift, str(call_log), str(tmp_path / "drifted"))
    assert "tinytrack.Client.log(...) would fail against real 2.0" in problems.stdout
    assert "worker.py:" in problems.stdout  # the call site, for the reader to open


def test_the_pytest_plugin_derives_its_switch_and_its_token_variable(tmp_path) -> None:
    (tmp_path / "test_marked.py").write_text(
        "import os, pytest\n\n"
        "@pytest.mark.tinytrack_sdk\n"
        "def test_real():\n"
        "    pass\n\n"
        "def test_isolated(evalexport_isolation):\n"
        "    assert 'TINYTRACK_TOKEN' not in os.environ\n"
    )
    # its temporary directories in this test's (pytest's default keeps them under $TMPDIR)
    basetemp = ("--basetemp", str(tmp_path / ".basetemp"))
    arguments = ("-m", "pytest", "-q", "-p", "no:cacheprovider", *basetemp, "-rs", str(tmp_path))
    completed = _run(sys.executable, *arguments, cwd=tmp_path, TINYTRACK_TOKEN="tt-secret-token")
    assert completed.returncode == 0, completed.stdout
    assert "runs against the real tinytrack SDK; run with --with_tinytrack_sdk" in completed.stdout
    assert "1 passed, 1 skipped" in completed.stdout
    switched = _run(sys.executable, *arguments, "--with_tinytrack_sdk", cwd=tmp_path)
    assert "2 passed" in switched.stdout, switched.stdout


def _installed_copy(tmp_path: Path, source: Path | None) -> Path:
    """The plugin installed as a copy into ``tmp_path/site`` (its RECORD lists its files), from
    the source tree ``source`` (its ``direct_url.json``), or from an index (``None``)."""
    import shutil

    site = tmp_path / "site"
    shutil.copytree(PLUGIN, site / "tinytrack_exporter")
    dist_info = site / "tinytrack_exporter-0.1.0.dist-info"
    shutil.copytree(SITE / "tinytrack_exporter-0.1.0.dist-info", dist_info)
    files = sorted(p.relative_to(site) for p in site.rglob("*") if p.is_file())
    (dist_info / "RECORD").write_text("".join(f"{p},,\n" for p in files))
    if source is not None:
        (dist_info / "direct_url.json").write_text(
            json.dumps({"url": source.as_uri(), "dir_info": {}})
        )
    return site


def _write_drifted_manifest(site: Path) -> subprocess.CompletedProcess:
    """``contract manifest tinytrack --fake DRIFT --write`` with the plugin installed in site."""
    command = ("contract", "manifest", "tinytrack", "--fake", str(DRIFT), "--write")
    return _run(sys.executable, "-m", "evalexport", *command, PYTHONPATH=str(site))


def test_a_new_manifest_is_written_into_the_plugins_source_tree_not_its_installed_copy(
    tmp_path,
) -> None:
    import shutil

    project = tmp_path / "project"
    shutil.copytree(PLUGIN, project / "src" / "tinytrack_exporter")
    site = _installed_copy(tmp_path, project)
    before = sorted(p.relative_to(site) for p in site.rglob("*"))
    written = _write_drifted_manifest(site)
    assert written.returncode == 0, written.stderr
    target = project / "src" / "tinytrack_exporter" / "contracts" / "2.0.json"
    assert written.stdout.strip() == f"wrote {target}"
    assert json.loads(target.read_text())["version"] == "2.0"
    assert sorted(p.relative_to(site) for p in site.rglob("*")) == before


def test_a_copy_installed_from_an_index_is_never_written_into(tmp_path) -> None:
    site = _installed_copy(tmp_path, None)
    refused = _write_drifted_manifest(site)
    assert refused.returncode == 2
    assert "live in an installed copy of its exporter" in refused.stderr
    assert "pass --contracts DIR" in refused.stderr
    assert not (site / "tinytrack_exporter" / "contracts" / "2.0.json").exists()
