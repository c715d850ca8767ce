"""The worker's environment is given, not inherited (SPEC §3.4).

A worker (and the SDK inside it) sees what a process needs to run (``PATH``, ``HOME``, the
locale, proxies, CA bundles), evalexport's own variables, and what its exporter declares
(:attr:`~evalexport.spec.sdk.Sdk.token_variables`, :attr:`~evalexport.spec.sdk.Sdk.
variables`, the SDK's own family ``<SDK>_``, ``WorkerSpec.environment`` and ``secrets``):
nothing else of the caller's shell. An unrelated token (``HF_TOKEN``, a cloud key) never reaches
an SDK that has no use for it, and a variable that redirects some other SDK (a tracker that
honours ``TRACKIO_SERVER_URL``) cannot turn a local export into a remote one.

Names, not families: the locale is the variables POSIX and glibc define (:data:`LOCALE`), not
any ``LC_*`` name (``LC_SECRET`` is nobody's locale), and evalexport's own are the ones it
reads (:data:`EVALEXPORT_VARIABLES`, listed in docs/environments.md; a test holds the list to
what the code reads), not any ``EVALEXPORT_*`` name (``EVALEXPORT_MY_TOKEN`` is no setting of
evalexport's). The reaper (:mod:`.descendants`) declares nothing, so it is given
:data:`BASE` alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, final

__all__ = ["BASE", "EVALEXPORT_VARIABLES", "LOCALE", "Admitted"]

_BASE_NAMES: Final = (
    # to run at all, and to find the user's own files (an SDK's config, ~/.netrc)
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LD_LIBRARY_PATH",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    # the time zone (the locale is LOCALE, below)
    "TZ",
    # proxies, in both spellings HTTP clients read
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    # certificate authorities (a corporate CA bundle)
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
)
LOCALE: Final = (
    # POSIX's locale categories and glibc's own (locale(7)), with LANGUAGE, gettext's list
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_COLLATE",
    "LC_MONETARY",
    "LC_MESSAGES",
    "LC_PAPER",
    "LC_NAME",
    "LC_ADDRESS",
    "LC_TELEPHONE",
    "LC_MEASUREMENT",
    "LC_IDENTIFICATION",
)
"""The locale variables that exist: a worker is given these, and no other ``LC_*`` name."""
EVALEXPORT_VARIABLES: Final = {
    "EVALEXPORT_CACHE_DIR": "where SDK environments and export markers are kept",
    "EVALEXPORT_INSTALLER": "uv or pip, to build SDK environments with",
    "EVALEXPORT_WORKER_TIME_LIMIT": "seconds before a worker is stopped",
    "EVALEXPORT_PLUGIN_IMPORT_TIMEOUT": "seconds a plugin's module may take to import",
    "EVALEXPORT_PROGRESS_INTERVAL": "seconds between two progress lines",
    "EVALEXPORT_LEASE_SECONDS": "seconds a remote run's lease holds unrenewed",
    "EVALEXPORT_PROCESS_TAG": "the launch a process belongs to (set by evalexport)",
    "EVALEXPORT_WORKER_BODY": "a worker's body source file (set by evalexport, read by fakes)",
    "EVALEXPORT_TEST_CACHE_DIR": "the test plugin's cache of SDK environments",
    "EVALEXPORT_GYM_ENV_DIR": "the test plugin's NeMo Gym environment",
    "EVALEXPORT_GYM_PYTHON": "the Python 3.13 the test plugin builds NeMo Gym's environment with",
}
"""Every ``EVALEXPORT_*`` variable evalexport reads, and what it sets: a worker is given these,
and no other ``EVALEXPORT_*`` name (docs/environments.md lists them; ``tests/isolation/
test_variables.py`` holds this list to the names the code reads)."""


@final
@dataclass(frozen=True)
class Admitted:
    """Which of the caller's environment variables a worker is given: exact ``names``, and
    ``families`` (a prefix such as ``MLFLOW_``)."""

    names: frozenset[str]
    families: tuple[str, ...]

    @classmethod
    def of(cls, declared: Iterable[str]) -> Admitted:
        """:data:`BASE` and what an exporter declares: names, and families written with a
        trailing ``_`` or ``*`` (``AWS_``, ``AZURE_*``)."""
        names: set[str] = {*_BASE_NAMES, *LOCALE, *EVALEXPORT_VARIABLES}
        families: list[str] = []
        for entry in declared:
            if entry.endswith("*"):
                families.append(entry[:-1])
            elif entry.endswith("_"):
                families.append(entry)
            else:
                names.add(entry)
        return cls(frozenset(names), tuple(dict.fromkeys(families)))

    def admits(self, name: str) -> bool:
        """Whether a worker is given the caller's variable ``name``."""
        return name in self.names or name.startswith(self.families)

    def given(self, environment: Mapping[str, str]) -> dict[str, str]:
        """The variables of ``environment`` (the caller's) a worker is given."""
        return {name: value for name, value in environment.items() if self.admits(name)}


BASE: Final = Admitted.of(())
"""What every worker is given of the caller's environment, and all the reaper is: what a
process needs to run (the locale among it), and evalexport's own variables."""
