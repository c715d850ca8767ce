"""The ``evalrdl`` exporter: upload the run directory as it is to EvalRDL (SPEC §3.5).

A directory exporter: everything in the run directory is part of the run, nothing is copied or
picked out, so a directory holding another run's rollouts is refused. The SDK runs in its own
environment through ``backends/evalrdl/worker.py``; the service's own deduplication makes a
second upload of the same content a ``skipped`` result, so no local marker is kept.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Annotated, Any, Final

from pydantic import BeforeValidator, Field, field_validator

from evalexport import RunArtifacts
from evalexport.backends.evalrdl import worker as evalrdl_worker
from evalexport.backends.evalrdl.worker import EvalRDLPayload
from evalexport.spec import (
    DryRunPlan,
    Egress,
    Exporter,
    PlannedFile,
    Sdk,
    SdkConfig,
    Surface,
    Target,
    WorkerDelivery,
    WorkerSecretsError,
    WorkerSpec,
    human_size,
    read_directory,
    run_tracked,
)

__all__ = ["EvalRDLConfig", "EvalRDLExporter"]

NAMED_URLS = ("prod", "stg")


def _scalar_to_text(value: object) -> Any:
    """``+tags=[2024,b]`` and ``+meta.n=5`` parse as numbers; the service takes text."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value) if isinstance(value, int | float) else value


Text = Annotated[str, BeforeValidator(_scalar_to_text)]


TOKEN_VARIABLES = ("EVALRDL_TOKEN", "GITLAB_TOKEN", "GITLAB_PRIVATE_TOKEN")
UPLOAD_TIME: Final = 3600.0
"""How long an upload may take (the worker's time limit), before the verdict's own timeout."""
GLAB_TIME: Final = 60.0
"""How long ``glab auth token`` (a local read of glab's login) may take to answer, at most
(less when the user's worker time limit is less)."""
"""Where the SDK looks for its token, in order, before asking ``glab``."""


class EvalRDLConfig(SdkConfig):
    """Options of the ``evalrdl`` exporter (SPEC §3.5)."""

    label: str | None = Field(default=None, description="Label of the stored run.")
    tags: list[Text] = Field(default=[], description="Tags of the stored run, e.g. [a,b].")
    meta: dict[str, Text] = Field(
        default={}, description="Metadata of the stored run: +meta.KEY=VALUE."
    )
    parallel: int = Field(default=4, ge=1, description="Files uploaded in parallel.")
    wait: bool = Field(default=True, description="Wait for the service's verdict.")
    timeout: int = Field(default=600, gt=0, description="Seconds to wait for the verdict.")
    url: str = Field(default="prod", description="prod, stg, or the service's URL.")
    requirement: str | list[str] = Field(
        default="evalrdl>=0.0.241",
        description="The evalrdl SDK requirement; a new pin builds a new environment.",
    )

    @field_validator("meta")
    @classmethod
    def _no_secret_meta(cls, meta: dict[str, str]) -> dict[str, str]:
        secret = sorted(key for key in meta if Egress.names_a_secret(key))
        if secret:
            raise ValueError(
                f"meta keys named like secrets are refused ({', '.join(secret)}): the service "
                "stores meta in the clear. The SDK reads its token from EVALRDL_TOKEN"
            )
        return meta

    @field_validator("url")
    @classmethod
    def _known_url(cls, url: str) -> str:
        if url in NAMED_URLS or url.startswith(("https://", "http://")):
            return url
        raise ValueError(f"expected prod, stg or an http(s) URL, got {url!r}")


class EvalRDLExporter(Exporter[EvalRDLConfig, list[PlannedFile]]):
    """Upload the run directory as it is to the EvalRDL service, through its SDK in an environment
    of its own."""

    name = "evalrdl"
    summary = "Upload the run directory as it is to the EvalRDL service."
    kind = "directory"
    sdk = Sdk(
        body=Path(evalrdl_worker.__file__),
        token_variables=TOKEN_VARIABLES,
        contract=Surface.declared(evalrdl_worker.SURFACE),
    )

    def resolve(self, config: EvalRDLConfig, time_limit: float | None) -> Target:
        """The service, and the worker: the SDK's requirement; the upload gets an hour, plus
        the verdict's timeout when waiting for it; the token, from a token variable or, when
        none is set, from ``glab`` (:func:`_token`). Without one, the dry run and the export
        alike refuse here, before anything is read or built."""
        limit = config.timeout + UPLOAD_TIME if config.wait else UPLOAD_TIME
        refusal = None
        secrets: dict[str, str] = {}
        try:
            secrets = _token(min(time_limit, GLAB_TIME) if time_limit else GLAB_TIME)
        except WorkerSecretsError as error:
            refusal = str(error)
        return Target(
            where=f"EvalRDL {config.url}",
            refusal=refusal,
            worker=WorkerSpec(
                requirements=config.requirements(), time_limit=limit, secrets=secrets
            ),
        )

    def read(self, run: RunArtifacts) -> list[PlannedFile]:
        """Every file of the run directory opens (it is uploaded as it is), each once
        (:func:`~evalexport.spec.read_directory`): the files, as the plan lists them."""
        return read_directory(run, uploader="EvalRDL")

    def plan(
        self, run: RunArtifacts, config: EvalRDLConfig, target: Target, prepared: list[PlannedFile]
    ) -> DryRunPlan:
        """Every file of the run directory: it is uploaded as it is."""
        files = prepared
        # The service reads the aggregate metrics itself; the upload does not flatten them.
        total = human_size(sum(item.size_bytes for item in files))
        upload = [f"label: {config.label}" if config.label else "label: none (the service's)"]
        upload.append(f"tags: {', '.join(config.tags) or 'none'}")
        upload.append(f"meta keys: {', '.join(sorted(config.meta)) or 'none'}")
        upload.append(
            f"wait: up to {config.timeout} s for the service's verdict"
            if config.wait
            else "wait: no (the upload token is the receipt)"
        )
        return DryRunPlan(
            exporter=self.name,
            target=target.where,
            files=files,
            sections={"upload": upload},
            summary=f"{len(files)} files ({total}) of {run.run_dir} would be uploaded as they "
            f"are, as one upload to {target.where}",
        )

    def deliver(self, run: RunArtifacts, config: EvalRDLConfig) -> WorkerDelivery[EvalRDLPayload]:
        return WorkerDelivery(
            {
                "run_dir": str(run.run_dir),
                "label": config.label,
                "tags": list(config.tags),
                "meta": dict(config.meta),
                "parallel": config.parallel,
                "wait": config.wait,
                "timeout": config.timeout,
                "url": config.url,
            },
            addresses=frozenset({"run_dir", "url"}),  # the directory uploaded, the service
        )


def _token(limit: float) -> dict[str, str]:
    """The worker's token: none to add when a token variable is set (the worker inherits it,
    and results scrub token variables already); else the token ``glab auth token`` gives,
    asked once, within ``limit`` seconds, and handed to the worker as ``EVALRDL_TOKEN``, so the
    SDK does not ask ``glab`` again and the token is scrubbed from what the worker reports.
    :class:`WorkerSecretsError` says what to set when there is none."""
    if any(os.environ.get(name) for name in TOKEN_VARIABLES):
        return {}
    glab = shutil.which("glab")
    if glab is None:
        raise WorkerSecretsError(
            "No EvalRDL token: EVALRDL_TOKEN, GITLAB_TOKEN and GITLAB_PRIVATE_TOKEN are unset, "
            "and glab is not on PATH to ask. Set EVALRDL_TOKEN, or install glab and log in "
            "with glab auth login."
        )
    try:
        completed = run_tracked([glab, "auth", "token"], timeout=limit)
    except subprocess.TimeoutExpired:
        raise WorkerSecretsError(
            f"No EvalRDL token: `glab auth token` did not answer within {limit:g} s. "
            "Set EVALRDL_TOKEN, or check glab (glab auth status)."
        ) from None
    except OSError as error:
        raise WorkerSecretsError(
            f"No EvalRDL token: `glab auth token` could not run ({error.strerror or error}). "
            "Set EVALRDL_TOKEN, or check glab (glab auth status)."
        ) from None
    token = completed.stdout.strip()
    if completed.returncode != 0 or not token:
        # What glab printed is not echoed: it may hold the token it rejected.
        raise WorkerSecretsError(
            f"No EvalRDL token: EVALRDL_TOKEN, GITLAB_TOKEN and GITLAB_PRIVATE_TOKEN are "
            f"unset, and `glab auth token` gave none (exit code {completed.returncode}; "
            "`glab auth status` says why). Set EVALRDL_TOKEN, or log in with glab auth login."
        )
    return {"EVALRDL_TOKEN": token}
