"""How packages get into an SDK environment: ``uv pip install`` where uv is found (on PATH,
then the ``uv`` package), ``pip install`` otherwise, or as ``$EVALEXPORT_INSTALLER`` says."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import final

from evalexport.isolation.local_requirements import content_digest, package_name

__all__ = ["EnvironmentBuildError", "Installer", "find_installer"]


class EnvironmentBuildError(RuntimeError):
    """An environment could not be built; the message carries the installer's error tail."""


@final
@dataclass(frozen=True)
class Installer:
    """How packages get into an environment: ``uv pip install`` or ``pip install``."""

    name: str
    """``uv`` or ``pip``."""
    executable: str | None
    """The uv binary; ``None`` for pip, which runs as the environment's ``python -m pip``."""

    def virtualenv_arguments(self) -> list[str]:
        # uv installs into an environment without pip; pip needs to be seeded into it.
        """What ``virtualenv`` needs for this installer (uv brings no pip; pip must be seeded)."""
        return ["--no-seed"] if self.name == "uv" else ["--no-setuptools", "--no-wheel"]

    def install_command(self, python: Path, requirements: Sequence[str]) -> list[str]:
        """The command that installs ``requirements`` into the environment of ``python``."""
        if self.name == "uv":
            assert self.executable is not None
            # uv caches what it built from a local path by the project's metadata files; a
            # fake whose code changed must be built again.
            local = [r for r in requirements if content_digest(r) is not None]
            refresh = [f"--refresh-package={package_name(r)}" for r in local]
            return [
                self.executable,
                "pip",
                "install",
                "--python",
                str(python),
                *refresh,
                *requirements,
            ]
        return [
            str(python),
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
            *requirements,
        ]


def find_installer(prefer: str | None = None) -> Installer:
    """uv when available (on PATH, then the ``uv`` package), pip otherwise.

    ``prefer`` (or ``$EVALEXPORT_INSTALLER``) set to ``pip`` forces pip, and ``uv`` requires uv.
    Raises :class:`~evalexport.settings.SettingError` for an installer setting it cannot use.
    """
    from evalexport.settings import INSTALLER_VARIABLE, installer_choice

    choice = prefer or installer_choice()
    if choice != "pip":
        found = shutil.which("uv")
        if found is None:
            with contextlib.suppress(ImportError, FileNotFoundError):
                from uv import find_uv_bin

                found = find_uv_bin()
        if found:
            return Installer("uv", found)
        if choice == "uv":
            raise EnvironmentBuildError(
                f"{INSTALLER_VARIABLE}=uv, but uv is neither on PATH nor installed as a package"
            )
    return Installer("pip", None)
