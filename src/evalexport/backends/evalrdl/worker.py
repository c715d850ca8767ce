"""EvalRDL worker body: uploads one run directory with the evalrdl SDK (SPEC §3.5).

Runs inside the evalrdl environment, standard library plus the SDK only. The token never
passes through here: the SDK reads it from EVALRDL_TOKEN, GITLAB_TOKEN, GITLAB_PRIVATE_TOKEN
or glab, and no message below includes it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypedDict

from evalexport.workers.protocol import (
    FAILED,
    NO_VERDICT,
    REFUSED,
    SUCCEEDED,
    WorkerResult,
    named_option,
    no_progress,
    result,
    silent,
)


class EvalRDLPayload(TypedDict):
    """What the EvalRDL worker receives: the directory to upload and the upload's options."""

    run_dir: str
    label: str | None
    tags: list[str]
    meta: dict[str, str]
    parallel: int
    wait: bool
    timeout: float
    url: str


SURFACE: Final = {
    "sdk": "evalrdl",
    "paths": (
        "evalrdl.Client",
        "evalrdl.Client().uploads.upload",
        "evalrdl.sdk.api.upload_plan",
        "evalrdl.EvalRDLError",
        "evalrdl.IntakeRefused",
        "evalrdl.ClientTooOld",
        "evalrdl.TokenNotFound",
    ),
    "reads": {
        "evalrdl.Client": (),  # its uploads are reached by the path Client().uploads.upload
        "evalrdl.Upload": ("needs_binding", "run_id", "state", "upload_token"),  # never built
        "evalrdl.IntakeRefused": ("reason", "stage"),
        "evalrdl.ClientTooOld": (),
        "evalrdl.EvalRDLError": (),
        "evalrdl.TokenNotFound": (),
    },
    "environment": {"EVALRDL_TOKEN": "manifest-extraction-not-a-token"},
    "fake": "fakes/evalrdl/src",
    "switch": "runs against the real evalrdl SDK",
}
"""What this body calls, builds and catches (``paths``) and reads back (``reads``) of its SDK
(``Surface.declared``: its exporter's ``sdk.contract``): plain data, so the pytest plugin
knows the SDK without importing the exporter. Keep it in step with the code below; the contract checks hold the fakes and the
real releases to it."""

WARM_UP = ("evalrdl", "evalrdl.sdk.api")
"""Imported by the runner before the payload arrives (while the parent reads the run)."""

TOKEN_HELP = (
    "No EvalRDL token found: set EVALRDL_TOKEN, GITLAB_TOKEN or GITLAB_PRIVATE_TOKEN "
    "(or log in with the glab CLI) where the export runs."
)


def _plan_problem(plans: list[dict[str, Any]], run_dir: str) -> str | None:
    if len(plans) == 1 and Path(plans[0]["dir"]) == Path(run_dir):
        return None
    planned = ", ".join(str(plan.get("dir")) for plan in plans) or "nothing"
    return (
        f"The evalrdl SDK would upload {planned} instead of the run directory {run_dir} as one "
        "upload, so the run's own files would be left out. Nothing was uploaded. Keep only "
        "the run's files in its directory, or report this layout to the EvalRDL team."
    )


def run(
    payload: EvalRDLPayload,
    progress: Callable[[int, int], None] = no_progress,
    say: Callable[[str], None] = silent,
) -> WorkerResult:
    """Upload the run directory to EvalRDL as one upload; the result says its verdict. The
    upload is one step, which a log shows under way while it lasts (the SDK's wait for the
    service's verdict can take minutes)."""
    import evalrdl
    from evalrdl.sdk.api import upload_plan

    run_dir = payload["run_dir"]
    try:
        problem = _plan_problem(upload_plan(run_dir), run_dir)
        if problem:
            return result("failed", FAILED, problem)
        client = evalrdl.Client(url=payload["url"])
        waits = f" and waiting for its verdict (at most {payload['timeout']:g} s)"
        say(f"uploading {Path(run_dir).name} to {payload['url']}{waits if payload['wait'] else ''}")
        progress(0, 1)
        uploads = client.uploads.upload(
            run_dir,
            label=payload["label"],
            tags=payload["tags"],
            meta=payload["meta"],
            parallel=payload["parallel"],
            wait=payload["wait"],
            timeout=payload["timeout"],
        )
    except evalrdl.IntakeRefused as error:
        return result(
            "failed",
            REFUSED,
            f"EvalRDL refused the upload at stage {error.stage!r}: {error.reason}",
            stage=error.stage,
            reason=error.reason,
        )
    except evalrdl.ClientTooOld as error:
        return result(
            "failed",
            FAILED,
            f"{error}. Delete the environment {sys.prefix} (evalexport envs remove evalrdl) to "
            "install the newest SDK, or pin one: "
            f"{named_option('requirement', 'evalrdl==VERSION')}",
            environment=sys.prefix,
        )
    except evalrdl.TokenNotFound:
        return result("failed", FAILED, TOKEN_HELP)
    except evalrdl.EvalRDLError as error:
        return result("failed", FAILED, f"EvalRDL upload failed: {type(error).__name__}: {error}")
    progress(1, 1)
    return _outcome(uploads, payload)


def _outcome(uploads: list[Any], payload: EvalRDLPayload) -> WorkerResult:
    if len(uploads) != 1:
        return result(
            "failed",
            FAILED,
            f"The evalrdl SDK reported {len(uploads)} uploads for {payload['run_dir']}; "
            "expected exactly one. Check the uploads on the service before exporting again.",
            upload_count=len(uploads),
        )
    upload = uploads[0]
    details: dict[str, Any] = {
        "run_id": upload.run_id,
        "receipts": {"upload_token": upload.upload_token},
        "state": upload.state,
        "url": payload["url"],
    }  # run_id, receipts and notices are typed keys of the result; the rest is for people
    if getattr(upload, "needs_binding", False):
        details["notices"] = [
            f"EvalRDL stored run {upload.run_id} but it needs binding to a model before it is "
            "scored; bind it on the service."
        ]
    if upload.state == "committed":
        return result("succeeded", SUCCEEDED, f"uploaded as EvalRDL run {upload.run_id}", **details)
    if upload.state == "deduped":
        return result(
            "skipped",
            SUCCEEDED,
            f"EvalRDL already holds this run's content as run {upload.run_id}; nothing new stored",
            skip_reason="deduped",
            **details,
        )
    if upload.state == "accepted" and not payload["wait"]:
        return result(
            "succeeded",
            SUCCEEDED,
            f"stored by EvalRDL without waiting for a verdict (upload token {upload.upload_token})",
            **details,
        )
    if upload.state == "accepted":
        return result(
            "failed",
            NO_VERDICT,
            f"stored by EvalRDL without a verdict before the timeout of {payload['timeout']} s "
            f"(upload token {upload.upload_token}); check its state on the service",
            **details,
        )
    return result(
        "failed", 1, f"EvalRDL reported an unknown upload state {upload.state!r}", **details
    )
