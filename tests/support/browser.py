"""A headless Chromium (Debian's ``chromium``) that opens a page as a user would and says what
it shows: the rendered page's DOM, and a screenshot. The ``--with_browser`` tests and
``scripts/trace_screenshot.py`` use it on MLflow's UI."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

__all__ = [
    "BrowserMissing",
    "chromium",
    "rendered",
    "rendered_showing",
    "screenshot",
    "trace_view_url",
]


class BrowserMissing(RuntimeError):
    """No Chromium here; the message says how to install it."""


def chromium() -> str:
    """The Chromium binary, or :class:`BrowserMissing` saying how to get one."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if (found := shutil.which(name)) is not None:
            return found
    raise BrowserMissing(
        "no Chromium found: install Debian's (apt-get install chromium), as .ci/run does"
    )


def _run(url: str, *extra: str, budget_ms: int = 20_000) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",  # as root in CI
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--window-size=1500,950",
            f"--virtual-time-budget={budget_ms}",  # lets the page's scripts render it
            *extra,
            url,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )


def rendered(url: str) -> str:
    """The page's DOM once its scripts have rendered it."""
    completed = _run(url, "--dump-dom")
    if completed.returncode != 0:
        raise RuntimeError(f"chromium could not open {url}: {completed.stderr[-2000:]}")
    return completed.stdout


def rendered_showing(url: str, texts: list[str], attempts: int = 3) -> str:
    """The rendered page once it shows every one of ``texts`` (a fresh server's first pages
    can render before its data arrives: opened again, up to ``attempts`` times); the last
    rendering if it never does, for the caller's assertion to show."""
    page = ""
    for _ in range(attempts):
        page = rendered(url)
        if all(text in page for text in texts):
            break
    return page


def screenshot(url: str, path: Path) -> Path:
    """A PNG of the rendered page at ``path``."""
    completed = _run(url, f"--screenshot={path}")
    if completed.returncode != 0 or not path.is_file():
        raise RuntimeError(f"chromium made no screenshot of {url}: {completed.stderr[-2000:]}")
    return path


def trace_view_url(server: str, experiment_id: str, trace_id: str) -> str:
    """Where MLflow's UI shows one trace of an experiment (its Traces tab, the trace open)."""
    return (
        f"{server.rstrip('/')}/#/experiments/{experiment_id}/traces?selectedEvaluationId={trace_id}"
    )


def traces_list_url(server: str, experiment_id: str) -> str:
    """Where MLflow's UI lists an experiment's traces (its Traces tab: a row a trace, a column
    for each assessment)."""
    return f"{server.rstrip('/')}/#/experiments/{experiment_id}/traces?startTimeLabel=ALL"
