"""Real environments, built with a tiny local package: reuse, keys, locking, interrupted builds."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalexport.isolation.environments import (
    RECORD_NAME,
    EnvironmentBuildError,
    EnvironmentSpec,
    ensure_environment,
    environments_root,
    find_installer,
    list_environments,
)

INSTALLERS = ["uv", "pip"]


@pytest.mark.parametrize("installer", INSTALLERS)
def test_an_environment_is_built_once_and_reused(installer: str, tinysdk_1: str) -> None:
    spec = EnvironmentSpec("echo", (tinysdk_1,))
    first = ensure_environment(spec, find_installer(installer))
    record_before = (first.path / RECORD_NAME).read_text()
    second = ensure_environment(spec, find_installer(installer))
    assert (first.built, second.built) == (True, False)
    assert second.path == first.path
    assert (second.path / RECORD_NAME).read_text() == record_before
    version = subprocess.run(
        [second.python, "-I", "-c", "import tinysdk; print(tinysdk.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert version.stdout.strip() == "1.0"
    assert first.record["installer"] == installer


def test_a_changed_requirement_builds_a_new_environment(wheelhouse: Path) -> None:
    one = ensure_environment(
        EnvironmentSpec("echo", (str(wheelhouse / "tinysdk-1.0-py3-none-any.whl"),))
    )
    two = ensure_environment(
        EnvironmentSpec("echo", (str(wheelhouse / "tinysdk-2.0-py3-none-any.whl"),))
    )
    assert one.path != two.path
    assert two.built
    assert sorted(env.path for env in list_environments()) == sorted([one.path, two.path])


def test_the_installers_own_index_settings_apply(wheelhouse: Path, monkeypatch) -> None:
    monkeypatch.setenv("UV_NO_INDEX", "1")
    monkeypatch.setenv("UV_FIND_LINKS", str(wheelhouse))
    environment = ensure_environment(EnvironmentSpec("echo", ("tinysdk==2.0",)))
    version = subprocess.run(
        [environment.python, "-I", "-c", "import tinysdk; print(tinysdk.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert version.stdout.strip() == "2.0"


@pytest.mark.parametrize("installer", INSTALLERS)
def test_a_requirement_that_cannot_be_installed_fails_with_the_installers_error(
    installer: str, wheelhouse: Path, monkeypatch
) -> None:
    monkeypatch.setenv("UV_NO_INDEX", "1")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    spec = EnvironmentSpec("echo", ("tinysdk==9.9",))
    with pytest.raises(EnvironmentBuildError) as error:
        ensure_environment(spec, find_installer(installer))
    assert f"Installing tinysdk==9.9 with {installer} failed" in str(error.value)
    assert "tinysdk" in str(error.value).split("failed", 1)[1]
    assert not (environments_root() / spec.directory_name()).exists()


BUILD_ONE = """
import json, sys
from evalexport.isolation.environments import EnvironmentSpec, ensure_environment
environment = ensure_environment(EnvironmentSpec("echo", (sys.argv[1],)))
print(json.dumps({"path": str(environment.path), "built": environment.built}))
"""


def test_two_concurrent_first_uses_build_once(tinysdk_1: str) -> None:
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", BUILD_ONE, tinysdk_1], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    reports = [json.loads(process.communicate(timeout=300)[0]) for process in processes]
    assert reports[0]["path"] == reports[1]["path"]
    assert sorted(report["built"] for report in reports) == [False, True]


def test_a_killed_build_is_rebuilt_never_used(wheelhouse: Path, monkeypatch) -> None:
    # An index that accepts connections and never answers keeps the installer busy.
    silent_index = socket.socket()
    silent_index.bind(("127.0.0.1", 0))
    silent_index.listen(16)
    port = silent_index.getsockname()[1]
    spec = EnvironmentSpec("echo", ("tinysdk==1.0",))
    path = environments_root() / spec.directory_name()
    hanging = {
        **os.environ,
        "EVALEXPORT_INSTALLER": "pip",
        "PIP_INDEX_URL": f"http://127.0.0.1:{port}/simple",
        "PIP_TIMEOUT": "60",
        "PIP_RETRIES": "0",
    }
    build = subprocess.Popen(
        [sys.executable, "-c", BUILD_ONE, "tinysdk==1.0"], env=hanging, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 120
        while not (path / "bin" / "python").exists():
            assert time.monotonic() < deadline, "the build never created its environment"
            assert build.poll() is None, "the build ended before it could be interrupted"
            time.sleep(0.1)
        time.sleep(1.0)
    finally:
        os.killpg(build.pid, signal.SIGKILL)
        build.wait()
        silent_index.close()
    assert path.exists()
    assert not (path / RECORD_NAME).exists()
    assert list_environments() == []

    monkeypatch.setenv("EVALEXPORT_INSTALLER", "pip")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheelhouse))
    rebuilt = ensure_environment(spec)
    assert rebuilt.built
    assert rebuilt.path == path
    assert (path / RECORD_NAME).exists()


def test_a_credential_in_a_requirement_url_is_never_listed(cli, tmp_path) -> None:
    import json
    import os

    from evalexport.isolation.environments import RECORD_NAME, environments_root

    secret = "s3cr3tTokenValue"
    env = environments_root() / "evalrdl-py3.11-0123456789abcdef"
    (env / "bin").mkdir(parents=True)
    record = {
        "exporter": "evalrdl",
        "requirements": [f"evalrdl @ https://user:{secret}@pkgs.example.com/evalrdl.whl"],
        "python_version": "3.11",
        "installer": "uv",
        "created_at": "2026-11-30T00:00:00+00:00",
    }
    (env / RECORD_NAME).write_text(json.dumps(record))
    plain, as_json = cli("envs"), cli("envs", "--json")
    assert "evalrdl @ https://user:****@pkgs.example.com/evalrdl.whl" in plain.stdout
    assert secret not in plain.output + as_json.output
    assert os.environ["EVALEXPORT_CACHE_DIR"] in str(env)


def test_a_build_says_what_it_installs_and_how_long_it_took(
    tinysdk_1: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first use waits for the build: the log says so at its start, on the way, and at
    its end; a reuse says nothing."""
    import evalexport.isolation.environments as environments

    caplog.set_level("INFO", logger="evalexport.progress")
    monkeypatch.setattr(environments, "_HEARTBEAT_FLOOR", 0.05)  # a beat while pip installs
    monkeypatch.setenv("EVALEXPORT_PROGRESS_INTERVAL", "0")
    spec = EnvironmentSpec("echo", (tinysdk_1,))
    built = ensure_environment(spec, find_installer("pip"))
    said = [r.getMessage() for r in caplog.records if r.name == "evalexport.progress"]
    assert said[0].startswith(f"echo: building the echo SDK environment in {built.path} ")
    assert f"with {tinysdk_1} on Python {spec.python_version}" in said[0]
    assert said[1] == f"echo: installing {tinysdk_1} with pip"
    assert any(line.startswith(f"echo: still installing {tinysdk_1} with pip (") for line in said)
    assert said[-1].startswith("echo: built the echo SDK environment in ")
    caplog.clear()
    ensure_environment(spec, find_installer("pip"))
    assert [r for r in caplog.records if r.name == "evalexport.progress"] == []


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_a_fake_rebuilt_under_the_same_version_is_served_as_it_is_now(
    installer: str, tmp_path: Path
) -> None:
    """A plugin's tests rebuild its fake's wheel after an edit, version unchanged: the next
    export gets the new code, never the environment (or the installer's cache) of the old."""
    from evalexport.testing.wheels import build_wheel

    def fake(origin: str) -> str:
        modules = {"tinysdk/__init__.py": f"__version__ = '1.0'\nORIGIN = {origin!r}\n"}
        return str(build_wheel(tmp_path / "wheels", "tinysdk", "1.0", modules))

    served = []
    for origin in ("before the edit", "after the edit"):
        spec = EnvironmentSpec("echo", (fake(origin),))
        environment = ensure_environment(spec, find_installer(installer))
        shown = subprocess.run(
            [str(environment.python), "-c", "import tinysdk; print(tinysdk.ORIGIN)"],
            capture_output=True,
            text=True,
            check=True,
        )
        served.append((environment.path, shown.stdout.strip()))
    (first, before), (second, after) = served
    assert (before, after) == ("before the edit", "after the edit")
    assert first != second


@pytest.mark.downloads
def test_a_local_project_is_built_from_a_copy_never_written_into_and_built_once(
    tmp_path: Path,
) -> None:
    """``+requirement=<a project directory>`` (the way to use ``fakes/evalrdl``): the
    installer builds a copy, so the user's tree gains no ``build/`` or ``*.egg-info``, its
    content is the same afterwards, and the next use finds the same environment."""
    import shutil

    from evalexport.isolation import list_environments
    from evalexport.isolation.local_requirements import content_digest

    project = tmp_path / "evalrdl"
    shutil.copytree(Path(__file__).resolve().parents[2] / "fakes" / "evalrdl", project)
    before = sorted(str(p.relative_to(project)) for p in project.rglob("*"))
    digest = content_digest(str(project))
    spec = EnvironmentSpec("evalrdl", (str(project),))
    first = ensure_environment(spec, find_installer("pip"))
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*")) == before
    assert content_digest(str(project)) == digest
    again = ensure_environment(EnvironmentSpec("evalrdl", (str(project),)), find_installer("pip"))
    assert (again.path, again.built) == (first.path, False)
    assert [environment.path for environment in list_environments()] == [first.path]
    assert not list(first.path.parent.glob("*.lock"))  # the build's lock is kept elsewhere
