"""The exact installer command lines, checked with pytest-subprocess: nothing is built here."""

from __future__ import annotations

import sys

import pytest

from evalexport.isolation.environments import (
    EnvironmentBuildError,
    EnvironmentSpec,
    Installer,
    ensure_environment,
    environments_root,
    find_installer,
)

SPEC = EnvironmentSpec("evalrdl", ("evalrdl>=0.0.241",))


def _virtualenv_command(path, *installer_arguments: str) -> list[str]:
    from evalexport.host.cache import cache_dir

    return [
        sys.executable,
        "-m",
        "virtualenv",
        "--quiet",
        "--python",
        sys.executable,
        "--app-data",
        str(cache_dir() / "virtualenv-app-data"),
        "--no-periodic-update",
        *installer_arguments,
        str(path),
    ]


def _fake_virtualenv(fp, path, *installer_arguments: str) -> None:
    fp.register(
        _virtualenv_command(path, *installer_arguments),
        callback=lambda _: (path / "bin").mkdir(parents=True),
    )


def test_uv_installs_into_an_environment_created_without_seed_packages(fp) -> None:
    path = environments_root() / SPEC.directory_name()
    _fake_virtualenv(fp, path, "--no-seed")
    fp.register(
        ["/opt/uv", "pip", "install", "--python", str(path / "bin" / "python"), "evalrdl>=0.0.241"]
    )
    environment = ensure_environment(SPEC, Installer("uv", "/opt/uv"))
    assert environment.built
    assert environment.record["installer"] == "uv"
    assert environment.requirements == ["evalrdl>=0.0.241"]


def test_pip_installs_with_the_environments_own_pip(fp) -> None:
    path = environments_root() / SPEC.directory_name()
    _fake_virtualenv(fp, path, "--no-setuptools", "--no-wheel")
    fp.register(
        [
            str(path / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "evalrdl>=0.0.241",
        ]
    )
    assert ensure_environment(SPEC, Installer("pip", None)).record["installer"] == "pip"


@pytest.mark.parametrize(
    "variable", ["UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"]
)
def test_index_settings_reach_the_installer_untouched(fp, monkeypatch, variable: str) -> None:
    monkeypatch.setenv(variable, "https://evalrdl.example.com/v1/client/simple/")
    seen: list[dict[str, str]] = []

    def remember_environment(process) -> None:
        seen.append(dict(process.kwargs.get("env") or __import__("os").environ))

    path = environments_root() / SPEC.directory_name()
    fp.register(
        [fp.any()],
        callback=lambda process: (
            remember_environment(process),
            (path / "bin").mkdir(parents=True),
        ),
    )
    fp.register([fp.any()], callback=remember_environment)
    ensure_environment(SPEC, Installer("uv", "/opt/uv"))
    assert all(env[variable] == "https://evalrdl.example.com/v1/client/simple/" for env in seen)
    assert not any(
        "--index-url" in str(call) or "--extra-index-url" in str(call) for call in fp.calls
    )


def test_a_failed_install_raises_with_the_installers_error_tail_and_leaves_nothing(
    fp, monkeypatch
) -> None:
    monkeypatch.setenv(
        "UV_EXTRA_INDEX_URL", "https://user:s3cr3t-index-pw@evalrdl.example.com/simple/"
    )
    path = environments_root() / SPEC.directory_name()
    _fake_virtualenv(fp, path, "--no-seed")
    fp.register(
        [fp.any()],
        returncode=1,
        stderr="Resolved 0 packages\n  x No solution found when resolving dependencies:\n  ╰─▶ Because evalrdl was not found in the package registry (https://user:s3cr3t-index-pw@evalrdl.example.com/simple/)\n",
    )
    with pytest.raises(EnvironmentBuildError) as error:
        ensure_environment(SPEC, Installer("uv", "/opt/uv"))
    message = str(error.value)
    assert "Installing evalrdl>=0.0.241 with uv failed (exit code 1)" in message
    assert "evalrdl was not found in the package registry" in message
    assert "UV_EXTRA_INDEX_URL" in message
    assert "s3cr3t-index-pw" not in message
    assert not path.exists()


def test_a_failed_virtualenv_names_the_step(fp) -> None:
    fp.register(
        [fp.any()], returncode=2, stderr="RuntimeError: failed to find interpreter for python3.99"
    )
    with pytest.raises(
        EnvironmentBuildError, match="Creating the virtual environment failed \\(exit code 2\\)"
    ):
        ensure_environment(SPEC, Installer("uv", "/opt/uv"))


def test_find_installer_prefers_uv_and_can_be_told_to_use_pip(monkeypatch) -> None:
    assert find_installer().name == "uv"  # the uv package is installed with the test extra
    monkeypatch.setenv("EVALEXPORT_INSTALLER", "pip")
    assert find_installer() == Installer("pip", None)


def test_environment_keys_change_with_requirements_and_not_with_their_order() -> None:
    a = EnvironmentSpec("x", ("a==1", "b==2"))
    assert a.key() == EnvironmentSpec("x", ("b==2", "a==1")).key()
    assert a.key() != EnvironmentSpec("x", ("a==1", "b==3")).key()
    assert a.key() != EnvironmentSpec("y", ("a==1", "b==2")).key()
