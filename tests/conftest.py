"""Fixtures shared by the test suite: the CLI, in process and as a real subprocess."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalexport.cli import main
from evalexport.interrupts import STOP_SIGNALS
from evalexport.testing.plugin import TEST_CACHE_VARIABLE, kept_test_cache
from tests.support.gym import GymOracle
from tests.support.mlflow_server import MLflowServer
from tests.support.shared_server import shared_server, stop_left_behind

pytest_plugins = ["pytester"]

PLUGIN_SITE = Path(__file__).parent / "support" / "plugin_site"


@dataclass(frozen=True)
class CliRun:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


@pytest.fixture
def plugin_site(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Install the test plugin exporters (``recording``, ``broken``, ...) by entry point."""
    monkeypatch.syspath_prepend(str(PLUGIN_SITE))
    monkeypatch.setenv(
        "PYTHONPATH",
        os.pathsep.join(filter(None, [str(PLUGIN_SITE), os.environ.get("PYTHONPATH")])),
    )
    return PLUGIN_SITE


@pytest.fixture
def signals_as_a_terminal_leaves_them() -> Iterator[None]:
    """Every stop signal at its default, as a terminal's foreground job has them: the suite may
    itself run under ``nohup`` (SIGHUP ignored) or as a background job (SIGINT ignored), and
    what is ignored when evalexport starts stays ignored (``tests/test_interrupts.py``)."""
    previous = {signum: signal.signal(signum, signal.SIG_DFL) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@pytest.fixture
def evalrdl_token(monkeypatch: pytest.MonkeyPatch) -> str:
    """An EvalRDL token in the environment: EvalRDL refuses a dry run without one, as it
    refuses the export."""
    token = "evalrdl-test-token-not-a-secret"
    monkeypatch.setenv("EVALRDL_TOKEN", token)
    return token


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliRun]:
    """Run ``evalexport ARGS`` in this process."""

    def run(*args: str) -> CliRun:
        capsys.readouterr()
        code = main([str(arg) for arg in args])
        captured = capsys.readouterr()
        return CliRun(code, captured.out, captured.err)

    return run


@pytest.fixture
def cli_process() -> Callable[..., CliRun]:
    """Run ``python -m evalexport ARGS`` as a real subprocess."""

    def run(*args: str, timeout: float = 120) -> CliRun:
        completed = subprocess.run(
            [sys.executable, "-m", "evalexport", *map(str, args)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return CliRun(completed.returncode, completed.stdout, completed.stderr)

    return run


@pytest.fixture(scope="session")
def sdk_env_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache of real-SDK environments (mlflow, wandb) shared by the whole session, and by
    later sessions under ``$EVALEXPORT_TEST_CACHE_DIR`` (environments are built under a lock and
    keyed by their requirements, so parallel test processes share them as users' exports do)."""
    return kept_test_cache("sdk-envs") or tmp_path_factory.mktemp("sdk-envs")


_SESSION_STATE = ("unwritten-markers", "slurm")
"""What exports keep in their cache besides environments: a test session's own state, never
carried into the next session through the kept SDK cache."""


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The kept SDK cache keeps environments, not the session's state: once every test
    process has finished (in pytest-xdist's controller, or the only process), the records of
    unwritten markers and Slurm work directories exports left there are removed; and the
    session's MLflow server is stopped if a test process ended without counting itself out.
    After a passing run the session's temporary directory (the shared server's store, the
    test processes' directories) is removed here, saying so: pytest removes it too, silently,
    and it can take minutes."""
    if hasattr(session.config, "workerinput"):
        return
    factory = getattr(session.config, "_tmp_path_factory", None)
    if isinstance(factory, pytest.TempPathFactory):
        basetemp = factory.getbasetemp()
        stop_left_behind(basetemp)
        kept_when = session.config.getini("tmp_path_retention_policy")
        if exitstatus == 0 and kept_when == "failed" and factory._given_basetemp is None:
            _remove_saying_so(session, basetemp)
    if not os.environ.get(TEST_CACHE_VARIABLE):
        return
    kept = Path(os.environ[TEST_CACHE_VARIABLE]).expanduser().resolve() / "sdk-envs"
    for name in _SESSION_STATE:
        shutil.rmtree(kept / name, ignore_errors=True)


def _remove_saying_so(session: pytest.Session, directory: Path) -> None:
    size = sum(
        entry.stat(follow_symlinks=False).st_size
        for entry in directory.rglob("*")
        if entry.is_file() and not entry.is_symlink()
    )
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"\nevalexport: removing this session's temporary files ({size / 2**20:.0f} MiB "
            f"in {directory}): every test passed"
        )
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def use_sdk_env_cache(sdk_env_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Exports in this test reuse the session's SDK environments instead of building anew."""
    monkeypatch.setenv("EVALEXPORT_CACHE_DIR", str(sdk_env_cache))
    return sdk_env_cache


def session_environment(
    cache: Path, download_cache: Path, exporter: str, requirement: str, python: str = sys.executable
) -> Path:
    """Build (once, under the environment's lock) the environment ``requirement`` gives, from
    the interpreter ``python``; its python."""
    from evalexport.isolation import EnvironmentSpec, ensure_environment

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALEXPORT_CACHE_DIR", str(cache))
        patch.setenv("UV_CACHE_DIR", str(download_cache / "uv"))
        patch.setenv("PIP_CACHE_DIR", str(download_cache / "pip"))
        return ensure_environment(EnvironmentSpec(exporter, (requirement,), python)).python


MLFLOW_REQUIREMENT = "mlflow>=2.10,<4"
"""The mlflow exporter's default requirement (checked against the exporter by a test)."""


@pytest.fixture(scope="session")
def mlflow_env_python(sdk_env_cache: Path, evalexport_download_cache: Path) -> Path:
    return session_environment(
        sdk_env_cache, evalexport_download_cache, "mlflow", MLFLOW_REQUIREMENT
    )


@pytest.fixture
def mlflow_python(use_sdk_env_cache: Path, mlflow_env_python: Path) -> Path:
    """The mlflow exporter's environment (built once per session); exports in this test reuse it."""
    return mlflow_env_python


WANDB_REQUIREMENT = "wandb>=0.16,<1"
"""The wandb exporter's default requirement (checked against the exporter by a test)."""


@pytest.fixture(scope="session")
def wandb_env_python(sdk_env_cache: Path, evalexport_download_cache: Path) -> Path:
    return session_environment(sdk_env_cache, evalexport_download_cache, "wandb", WANDB_REQUIREMENT)


@pytest.fixture
def wandb_python(use_sdk_env_cache: Path, wandb_env_python: Path) -> Path:
    """The wandb exporter's environment (built once per session); exports in this test reuse it."""
    return wandb_env_python


def _session_root(factory: pytest.TempPathFactory) -> Path:
    """The temporary directory every test process of the session shares: pytest-xdist gives
    each of its processes one inside the session's."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def shared_mlflow_server(mlflow_env_python: Path, tmp_path_factory: pytest.TempPathFactory):
    """One server for the session, whichever test process starts it
    (:mod:`tests.support.shared_server`); each test uses an experiment of its own."""
    with shared_server(_session_root(tmp_path_factory), mlflow_env_python) as server:
        yield server


@pytest.fixture
def mlflow_server(
    shared_mlflow_server: MLflowServer,
    mlflow_python: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> MLflowServer:
    """The session's server, an experiment of this test's own its default
    (``$MLFLOW_EXPERIMENT_NAME``): an export that names none lands there, not in the
    benchmark's experiment every test shares (a finished run of the same data there is
    skipped for, and tests export the same sample run)."""
    import hashlib

    own = hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:12]
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", f"test-{own}")
    return shared_mlflow_server


@pytest.fixture
def own_mlflow_server(mlflow_python: Path, tmp_path: Path):
    """A server this test may stop and restart."""
    server = MLflowServer(mlflow_python, tmp_path / "mlflow-server")
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def gym_oracle(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    evalexport_download_cache: Path,
) -> Iterator[GymOracle]:
    """NeMo Gym's own code, answering in a worker (see :mod:`tests.support.gym`).

    The environment is built once per session (about a minute), or kept across sessions in
    ``$EVALEXPORT_GYM_ENV_DIR`` when that is set, else under ``$EVALEXPORT_TEST_CACHE_DIR``
    when that is (built under a lock: parallel test processes build it once). Use it from tests marked
    ``gym``. When it cannot be built the test fails: the switch asked for it.
    """
    from tests.support.gym import ensure_gym_environment

    if not request.config.getoption("--with_gym"):
        pytest.skip("runs NeMo Gym 0.7.0 as the test oracle; run with --with_gym to include it")
    configured = os.environ.get("EVALEXPORT_GYM_ENV_DIR")
    kept = kept_test_cache("gym")
    if configured:
        directory = Path(configured)
    elif kept is not None:
        directory = kept / "env"
    else:
        directory = tmp_path_factory.mktemp("gym") / "env"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("UV_CACHE_DIR", str(evalexport_download_cache / "uv"))
        python = ensure_gym_environment(directory)
    oracle = GymOracle(python)
    yield oracle
    oracle.close()
