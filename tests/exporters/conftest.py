"""The evalrdl SDK the contract tests run against (the fake by default, the real one with
--with_evalrdl_sdk), and harbor's trajectory validator in an environment of its own."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evalexport.pipeline import export_run
from evalexport.spec.options import parse_options
from evalexport.testing.wheels import wheel_from_tree
from tests.conftest import session_environment
from tests.support.gym import find_python_313

FAKES = Path(__file__).resolve().parents[2] / "fakes"
CONTRACTS = Path(__file__).resolve().parents[2] / "contracts"


@pytest.fixture(scope="session")
def fake_evalrdl_wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel of fakes/evalrdl, built from the tree: no index needed to install it."""
    directory = tmp_path_factory.mktemp("fake-evalrdl")
    wheel_from_tree(directory, FAKES / "evalrdl" / "src", "evalrdl")
    return directory


@dataclass
class EvalRDLSdk:
    """The SDK under test, the token planted for it and, for the fake, its call log and store.

    A real SDK keeps neither a call log nor a store a test can read: tests assert on the
    ``ExportResult`` (the service's answer) and look at the log and the store only
    ``if evalrdl_sdk.is_fake``.
    """

    real: bool
    call_log: Path
    store: Path
    token: str
    monkeypatch: pytest.MonkeyPatch
    _distinct: set[Path] = field(default_factory=set)

    @property
    def is_fake(self) -> bool:
        return not self.real

    def _fake_only(self, what: str) -> None:
        if self.real:
            raise AssertionError(
                f"{what} is the fake's; guard this assertion with `if evalrdl_sdk.is_fake`"
            )

    def records(self) -> list[dict[str, Any]]:
        """Every line of the fake's log: calls and the worker's attribute reads."""
        self._fake_only("the call log")
        if not self.call_log.exists():
            return []
        return [json.loads(line) for line in self.call_log.read_text().splitlines()]

    def calls(self, name: str | None = None) -> list[dict[str, Any]]:
        return [
            record
            for record in self.records()
            if "read" not in record and (name is None or record["name"] == name)
        ]

    def reads(self) -> list[dict[str, Any]]:
        return [record for record in self.records() if "read" in record]

    def behave(self, behaviour: str, **settings: str) -> None:
        """Tell the fake how to behave; tests that need this cannot run on the real SDK."""
        if self.real:
            pytest.skip("tells the fake SDK how to behave; the real SDK cannot be told to")
        self.monkeypatch.setenv("EVALRDL_FAKE_BEHAVIOUR", behaviour)
        for key, value in settings.items():
            self.monkeypatch.setenv(f"EVALRDL_FAKE_{key.upper()}", value)

    def fail_if_unreachable(self, output: str) -> None:
        """With --with_evalrdl_sdk and no index serving evalrdl, say so plainly: the switch
        asked for the real SDK, so its absence is a failure, not a skip."""
        if self.real and "Cannot build the evalrdl environment" in output:
            pytest.fail(
                "--with_evalrdl_sdk asks for the real evalrdl SDK, and your index settings do "
                f"not serve it: {output[-300:]}",
                pytrace=False,
            )

    def distinct(self, sample: Any) -> None:
        """On a real service, make ``sample``'s content new: the service remembers what it has
        stored, across tests and reruns, and would report a second test's identical sample run
        as ``deduped``. A note file in the run directory does it (the directory is uploaded as
        it is); once per run directory, so a test's own second upload is still a duplicate."""
        if self.is_fake or sample.run.run_dir in self._distinct:
            return
        (sample.run.run_dir / "evalexport-test-note.txt").write_text(secrets.token_hex(16))
        self._distinct.add(sample.run.run_dir)

    def stored_runs(self) -> list[dict[str, Any]]:
        self._fake_only("the store")
        runs = self.store / "runs"
        return (
            [json.loads(p.read_text()) for p in sorted(runs.glob("*.json"))]
            if runs.exists()
            else []
        )

    def leaks(self, *texts: str) -> list[str]:
        """Where the token appears: in the given texts, the call log or the store."""
        found = [f"output {i}" for i, text in enumerate(texts) if self.token in text]
        kept = [self.call_log, *sorted(self.store.rglob("*"))] if self.is_fake else []
        for path in kept:
            if path.is_file() and self.token.encode() in path.read_bytes():
                found.append(str(path))
        return found


def _assert_calls_bind_to_the_real_sdk(sdk: EvalRDLSdk) -> None:
    from evalexport.backends.evalrdl.exporter import EvalRDLExporter
    from evalexport.contracts.check import load_manifests
    from evalexport.contracts.recorded import check_recorded_calls

    problems = check_recorded_calls(
        sdk.records(),
        load_manifests(CONTRACTS / "evalrdl"),
        {"evalexport_worker_body.py": str(EvalRDLExporter.sdk.body)},
    )
    if problems:
        pytest.fail(
            "calls that would fail against the real evalrdl SDK:\n" + "\n".join(problems),
            pytrace=False,
        )


@pytest.fixture
def evalrdl_sdk(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    fake_evalrdl_wheelhouse: Path,
    tmp_path: Path,
) -> Iterator[EvalRDLSdk]:
    """The SDK under test. At teardown, every call the fake recorded must bind to the
    committed real signatures (contracts/evalrdl/), every attribute the worker read back must
    exist there with the values it compared, and every default it relied on must be the real
    default, or the test fails naming the call site."""
    real = bool(request.config.getoption("--with_evalrdl_sdk"))
    if not real:
        # Exactly as in production, only the installed package differs: the default
        # requirement evalrdl>=0.0.241 resolves to the fake through the installer's settings.
        for variable, value in (
            ("UV_NO_INDEX", "1"),
            ("UV_FIND_LINKS", str(fake_evalrdl_wheelhouse)),
            ("PIP_NO_INDEX", "1"),
            ("PIP_FIND_LINKS", str(fake_evalrdl_wheelhouse)),
        ):
            monkeypatch.setenv(variable, value)
    call_log = tmp_path / "evalrdl-calls.jsonl"
    if not real:
        monkeypatch.setenv("EVALRDL_FAKE_CALL_LOG", str(call_log))
    monkeypatch.delenv("EVALRDL_FAKE_BEHAVIOUR", raising=False)
    token = f"canary-evalrdl-token-{secrets.token_hex(8)}"
    monkeypatch.setenv("EVALRDL_TOKEN", token)
    sdk = EvalRDLSdk(real, call_log, Path(os.environ["EVALRDL_FAKE_STORE"]), token, monkeypatch)
    yield sdk
    if sdk.is_fake:
        _assert_calls_bind_to_the_real_sdk(sdk)


@pytest.fixture
def export_evalrdl(evalrdl_sdk: EvalRDLSdk) -> Callable[..., Any]:
    """``export_evalrdl(sample, **options)``: the evalrdl exporter, in process."""
    from evalexport.backends.evalrdl.exporter import EvalRDLExporter

    def export(sample: Any, **options: Any) -> Any:
        evalrdl_sdk.distinct(sample)
        exporter = EvalRDLExporter()
        config = parse_options(exporter, {"rollouts_jsonl_fpath": str(sample.rollouts), **options})
        result = export_run(exporter, sample.run, config)
        evalrdl_sdk.fail_if_unreachable(result.message)
        return result

    return export


@pytest.fixture(scope="session")
def harbor_python(sdk_env_cache: Path, evalexport_download_cache: Path) -> Path:
    """An environment of its own with harbor installed (Python >= 3.12), built as the SDKs'
    are: once, under its lock, kept with them under ``$EVALEXPORT_TEST_CACHE_DIR`` when that
    is set."""
    interpreter = find_python_313()
    if interpreter is None:
        pytest.fail("harbor's validator needs Python >= 3.12, and no Python 3.13 was found")
    return session_environment(
        sdk_env_cache, evalexport_download_cache, "harbor", "harbor", str(interpreter)
    )


@pytest.fixture(scope="session")
def harbor_validator(harbor_python: Path) -> Callable[[Path], subprocess.CompletedProcess[str]]:
    """Runs harbor's own validator (``harbor.utils.trajectory_validator``) on one file."""

    def validate(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [harbor_python, "-m", "harbor.utils.trajectory_validator", str(path)],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )

    return validate
