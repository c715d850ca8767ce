"""Every record that leaves through the ``evalexport`` loggers is scrubbed of the secrets an
export knows (its token options, the environment), at every level, whoever logged it."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

from pydantic import Field, SecretStr

import evalexport
from evalexport.results import ExportResult
from evalexport.spec import Exporter, ExporterConfig


class _ChattyConfig(ExporterConfig):
    api_token: SecretStr = Field(description="A token, as options give them.")


class _ChattyExporter(Exporter[_ChattyConfig]):
    """A plugin that logs what it should not: its token, on evalexport's loggers."""

    name = "chatty"
    summary = "Logs its token."

    def deliver(self, run, config):  # type: ignore[no-untyped-def]
        token = config.api_token.get_secret_value()
        logging.getLogger("evalexport").warning("connecting with %s", token)
        logging.getLogger("evalexport.chatty").debug("still %s", token)
        try:
            raise RuntimeError(f"refused {token}")
        except RuntimeError:
            logging.getLogger("evalexport.chatty").exception("failed once")
        return ExportResult.succeeded(self.name, str(run.run_dir), "done")


def test_a_plugins_records_are_scrubbed_of_its_token_option(sample_run, caplog) -> None:
    token = "canary-chatty-0123456789"
    with caplog.at_level(logging.DEBUG, logger="evalexport"):
        result = evalexport.export(_ChattyExporter, sample_run.rollouts, api_token=token)
    assert result.status.value == "succeeded", result.message
    assert "connecting with ****" in caplog.text
    assert "still ****" in caplog.text
    assert token not in caplog.text
    assert token not in "".join(record.exc_text or "" for record in caplog.records)


PLUGIN = """
import logging, os
from evalexport import ExportResult
from evalexport.spec import Exporter, ExporterConfig


class Chatty(Exporter[ExporterConfig]):
    name = "chatty"
    summary = "Logs a secret of the environment."

    def deliver(self, run):
        logging.getLogger("evalexport").warning("token is %s", os.environ["PLUGIN_TOKEN"])
        return ExportResult.succeeded(self.name, str(run.run_dir), "done")
"""


def test_the_cli_prints_a_plugins_records_scrubbed(sample_run, tmp_path: Path) -> None:
    site = tmp_path / "site"
    dist = site / "chatty-1.0.dist-info"
    dist.mkdir(parents=True)
    (site / "chatty_plugin.py").write_text(PLUGIN)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: chatty\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[evalexport.exporters]\nchatty = chatty_plugin:Chatty\n"
    )
    token = "canary-environment-0123456789"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalexport",
            "chatty",
            f"+rollouts_jsonl_fpath={sample_run.rollouts}",
            "--json",
        ],
        env={**os.environ, "PYTHONPATH": str(site), "PLUGIN_TOKEN": token},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert json.loads(completed.stdout)["status"] == "succeeded", completed.stderr
    assert "token is ****" in completed.stderr
    assert token not in completed.stdout + completed.stderr
