"""The worker's environment is given, not inherited (SPEC §3.4).

A worker (and the SDK inside it) sees what a process needs to run (``PATH``, ``HOME``, the
locale, proxies, CA bundles), evalexport's own variables, and what its exporter declares
(:attr:`~evalexport.spec.sdk.Sdk.token_variables`, :attr:`~evalexport.spec.sdk.Sdk.
variables`, the SDK's own family ``<SDK>_``, ``WorkerSpec.environment`` and ``secrets``):
nothing else of the caller's shell. An unrelated token (``HF_TOKEN``, a cloud key) never reaches
an SDK that has no use for it, and a variable that redirects some other SDK (a tracker that
honours ``TRACKIO_SERVER_URL``) cannot turn a local export into a remote one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, final

__all__ = ["BASE", "Admitted"]

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
    # the locale and time zone
    "LANG",
    "LANGUAGE",
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
_BASE_FAMILIES: Final = ("LC_", "EVALEXPORT_")


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
        names: set[str] = set(_BASE_NAMES)
        families: list[str] = list(_BASE_FAMILIES)
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
"""What every worker is given of the caller's environment: what a process needs to run,
and evalexport's own variables."""
