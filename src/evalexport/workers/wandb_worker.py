"""W&B worker body: one finished run as one W&B run (SPEC §3.7).

Runs inside the wandb environment, standard library plus the SDK only. The API key, if any,
reaches the SDK as WANDB_API_KEY; online mode without one fails with a message saying so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_MAX_ERROR = 600


def _result(status: str, exit_code: int, message: str, **details: Any) -> dict[str, Any]:
    return {"status": status, "exit_code": exit_code, "message": message, "details": details}


def run(payload: dict[str, Any]) -> dict[str, Any]:
    import wandb

    mode = payload["mode"]
    try:
        run = wandb.init(
            project=payload["project"],
            entity=payload["entity"],
            name=payload["name"],
            mode=mode,
            dir=payload["dir"],
            config=payload["config"],
            tags=payload["tags"],
            reinit=True,
            settings=wandb.Settings(silent=True, console="off", save_code=False, disable_git=True),
        )
        run.summary.update(payload["summary"])
        if payload["rollouts_table"]:
            table = json.loads(Path(payload["rollouts_table"]).read_text(encoding="utf-8"))
            table_key = payload["table_key"]
            run.log({table_key: wandb.Table(columns=table["columns"], data=table["data"])})
        run_id, url, run_dir = run.id, getattr(run, "url", None), run.dir
        run.finish()
    except Exception as error:
        text = " ".join(str(error).split())[:_MAX_ERROR]
        hint = ""
        if mode == "online" and ("api key" in text.lower() or "login" in text.lower()):
            hint = " Set WANDB_API_KEY or +wandb_api_key, or export with +wandb_mode=offline."
        return _result(
            "failed", 1, f"W&B export ({mode}) failed: {type(error).__name__}: {text}.{hint}"
        )
    where = url if mode == "online" and url else run_dir.rsplit("/files", 1)[0]
    return _result(
        "succeeded",
        0,
        f"exported to W&B run {run_id} ({mode}): {where}",
        run_id=run_id,
        mode=mode,
        url=url,
        run_dir=run_dir.rsplit("/files", 1)[0],
    )
