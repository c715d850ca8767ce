"""Token lookup, in the real SDK's order. There is no login cache."""

import os
import shutil
import subprocess

from evalrdl.exceptions import TokenNotFound

TOKEN_VARIABLES = ("EVALRDL_TOKEN", "GITLAB_TOKEN", "GITLAB_PRIVATE_TOKEN")


def find_token() -> str:
    for variable in TOKEN_VARIABLES:
        token = os.environ.get(variable)
        if token:
            return token
    glab = shutil.which("glab")
    if glab:
        completed = subprocess.run(
            [glab, "auth", "token"], capture_output=True, text=True, check=False
        )
        if completed.returncode == 0 and completed.stdout.strip():
            return completed.stdout.strip()
    raise TokenNotFound(
        "no EvalRDL token: set EVALRDL_TOKEN, GITLAB_TOKEN or GITLAB_PRIVATE_TOKEN, "
        "or log in with glab"
    )
