"""The API surface: ``Client(url=...)`` and ``Client().uploads.upload(...)``."""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from evalrdl import _fake
from evalrdl._auth import find_token
from evalrdl.exceptions import ClientTooOld, EvalRDLError, IntakeRefused
from evalrdl.models import Store, directory_digest

URLS = {"prod": "https://evalrdl.example.com", "stg": "https://evalrdl-stg.example.com"}
MINIMUM_VERSION_WHEN_TOO_OLD = "0.0.250"


UploadState = Literal["committed", "deduped", "accepted"]


@_fake.record.reads("evalrdl.Upload")
@dataclass(frozen=True)
class Upload:
    """One upload's outcome. ``state`` is ``committed``, ``deduped`` or ``accepted``."""

    dir: str
    state: UploadState
    run_id: str | None
    upload_token: str
    needs_binding: bool = False


class Uploads:
    def __init__(self, client: "Client") -> None:
        self._client = client

    @_fake.record.calls("evalrdl.Client().uploads.upload")
    def upload(
        self,
        path: str | os.PathLike[str],
        *,
        label: str | None = None,
        tags: list[str] | None = None,
        meta: dict[str, str] | None = None,
        parallel: int = 4,
        wait: bool = True,
        timeout: float = 600,
    ) -> list[Upload]:
        """Upload a directory; returns one :class:`Upload` per planned upload."""
        from evalrdl import __version__
        from evalrdl.sdk.api import upload_plan

        self._client._token or find_token()
        behaviour = _fake.behaviour()
        if behaviour == "too_old":
            raise ClientTooOld(
                f"evalrdl {__version__} is too old for {self._client.url}; "
                f"the service needs >= {MINIMUM_VERSION_WHEN_TOO_OLD}",
                MINIMUM_VERSION_WHEN_TOO_OLD,
            )
        if behaviour == "refuse":
            raise IntakeRefused(
                os.environ.get("EVALRDL_FAKE_REFUSE_STAGE", "schema"),
                os.environ.get("EVALRDL_FAKE_REFUSE_REASON", "rollouts file has no reward column"),
            )
        if behaviour == "raise":
            raise EvalRDLError("service error: HTTP 502 from the intake gateway")
        store = Store(_fake.store_dir())
        uploads = [
            self._upload_one(
                store, Path(plan["dir"]), label, tags or [], meta or {}, wait, behaviour
            )
            for plan in upload_plan(path)
        ]
        if behaviour == "extra_upload":
            uploads.append(uploads[0])
        return uploads

    def _upload_one(
        self,
        store: Store,
        directory: Path,
        label: str | None,
        tags: list[str],
        meta: dict[str, str],
        wait: bool,
        behaviour: str | None,
    ) -> Upload:
        existing = store.find(directory_digest(directory))
        if existing is not None:
            return Upload(str(directory), "deduped", existing.run_id, existing.upload_token)
        stored = store.put(directory, label, tags, meta)
        if not wait or behaviour == "no_verdict":
            return Upload(str(directory), "accepted", None, stored.upload_token)
        return Upload(
            str(directory),
            "committed",
            stored.run_id,
            stored.upload_token,
            needs_binding=behaviour == "needs_binding",
        )


class Client:
    """A client of one EvalRDL deployment: ``prod``, ``stg`` or a URL."""

    @_fake.record.calls("evalrdl.Client")
    def __init__(self, url: str = "prod", *, token: str | None = None) -> None:
        self.url = URLS.get(url, url)
        self._token = token
        self.uploads = Uploads(self)
