"""The evalexport pytest plugin: SDK switches, isolation and run-directory fixtures.

Published through the ``pytest11`` entry point, so a project that exports with evalexport gets
the same switches and fixtures by installing it:

``--with_downloads``
    run tests that build an environment from the package index.
``--with_<sdk>_sdk``, one per SDK an installed exporter declares (``sdk.contract``)
    ``--with_evalrdl_sdk`` runs the EvalRDL contract tests against the real SDK instead of the
    fake; ``--with_mlflow_sdk`` / ``--with_wandb_sdk`` add the other SDK versions of the matrix
    (they need the index too); a plugin's SDK gets its own, with the help its surface gives.
Fixtures: ``evalexport_isolation`` (a temporary HOME, caches, stores, no tokens),
``make_sample_run``/``sample_run`` (finished runs with canary secrets), ``canaries``,
``served_sdk`` (an isolated exporter's SDK for the worker: its fake, rebuilt from its source
for each test session and recorded, or the real one under ``--with_<sdk>_sdk``) and
``exporter_options`` (for :class:`~evalexport.testing.guarantees.ExporterGuarantees`).

A test marked ``downloads`` or ``<sdk>_sdk`` is skipped unless its switch is on, and the skip
reason names the switch. A test whose switch is on fails, never skips, when what it needs is
missing: the switch asked for it. A project with switches of its own (evalexport's own test
suite: ``--with_gym``, ``--with_slurm``, ``--with_browser``, ``--with_faults``) declares them
with :func:`add_switches`, :func:`mark_switches` and :func:`skip_unswitched` from its
``conftest.py``, the same three steps this plugin takes for its own.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from evalexport.masking import is_secret_variable

if TYPE_CHECKING:
    from evalexport.testing.factory import CanarySecrets, SampleRun

Switches = dict[str, tuple[str, str]]
"""Marker name -> (command-line switch, what the marked tests need)."""


def switches() -> Switches:
    """The plugin's switches: ``--with_downloads``, and ``--with_<sdk>_sdk`` for every SDK an
    installed exporter declares."""
    from evalexport.contracts.installed import declared_surfaces

    sdks = {
        f"{sdk}_sdk": (f"--with_{sdk}_sdk", surface.switch_help)
        for sdk, surface in declared_surfaces().items()
    }
    return {
        "downloads": ("--with_downloads", "builds an environment from the package index"),
        **sdks,
    }


@functools.cache
def token_variables() -> tuple[str, ...]:
    """Token variables always removed by the isolation, on top of every variable whose name is
    secret: each installed exporter's ``token_variables``, and the model providers'. Read
    (loading the exporters) the first time an isolated test needs them."""
    from evalexport.contracts.installed import installed_token_variables

    return tuple(dict.fromkeys((*installed_token_variables(), "HF_TOKEN", "OPENAI_API_KEY")))


SWITCHES = switches()
"""The switches of the exporters installed when the plugin loaded."""

_STORE_VARIABLES = (
    "MLFLOW_TRACKING_URI",
    "MLFLOW_REGISTRY_URI",
    "MLFLOW_EXPERIMENT_NAME",
    "MLFLOW_EXPERIMENT_ID",
    "MLFLOW_RUN_ID",
    "WANDB_ENTITY",
    "WANDB_PROJECT",
    "WANDB_BASE_URL",
    "WANDB_RUN_ID",
)


def add_switches(parser: pytest.Parser, declared: Switches) -> None:
    """Add a ``--with_*`` option per switch (from ``pytest_addoption``)."""
    group = parser.getgroup("evalexport", "evalexport contract tests")
    for marker, (switch, needs) in declared.items():
        group.addoption(
            switch,
            action="store_true",
            default=False,
            help=f"include the tests marked '{marker}' (each {needs})",
        )


def mark_switches(config: pytest.Config, declared: Switches) -> None:
    """Register a marker per switch, saying which switch runs its tests (from
    ``pytest_configure``)."""
    for marker, (switch, needs) in declared.items():
        config.addinivalue_line(
            "markers", f"{marker}: the test {needs}; skipped unless {switch} is given"
        )


def skip_unswitched(config: pytest.Config, items: list[pytest.Item], declared: Switches) -> None:
    """Skip the marked tests whose switch is off, naming the switch (from
    ``pytest_collection_modifyitems``)."""
    for marker, (switch, needs) in declared.items():
        if config.getoption(switch):
            continue
        skip = pytest.mark.skip(reason=f"{needs}; run with {switch} to include it")
        for item in items:
            # The marker itself: a keyword match would also take a test in a directory named
            # like a marker (tests/faults/) or a parameter whose id is one ([faults]).
            if item.get_closest_marker(marker) is not None:
                item.add_marker(skip)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the ``--with_*`` switches."""
    add_switches(parser, SWITCHES)


def pytest_configure(config: pytest.Config) -> None:
    """Register a marker per switch, saying which switch runs its tests."""
    mark_switches(config, SWITCHES)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the marked tests whose switch is off, naming the switch."""
    skip_unswitched(config, items, SWITCHES)


TEST_CACHE_VARIABLE = "EVALEXPORT_TEST_CACHE_DIR"
"""A directory test sessions may keep across runs (package downloads, SDK and Gym
environments), as a user's machine keeps its environments; unset, each session starts empty.
``scripts/test.sh`` points it into the checkout's git-ignored ``.venv/``."""


def kept_test_cache(name: str) -> Path | None:
    """``$EVALEXPORT_TEST_CACHE_DIR/name`` (made if missing) when the variable is set, else None.

    Only what is built once and then used read-only belongs there: package downloads and
    environments keyed by their requirements. A test's stores, runs and HOME never do."""
    root = os.environ.get(TEST_CACHE_VARIABLE)
    if not root:
        return None
    kept = Path(root).expanduser().resolve() / name
    kept.mkdir(parents=True, exist_ok=True)
    return kept


@pytest.fixture(scope="session")
def evalexport_download_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One package-download cache for the whole test session, never the developer's own: kept
    across sessions under ``$EVALEXPORT_TEST_CACHE_DIR`` when that is set."""
    return kept_test_cache("downloads") or tmp_path_factory.mktemp("download-cache")


_PASSED: pytest.StashKey[dict[str, bool]] = pytest.StashKey()
"""Whether each phase of a test (``setup``, ``call``) passed, for the fixtures that keep what
a failed test leaves and remove what a passing one does."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Remember whether each phase of ``item`` passed (:func:`evalexport_isolation`)."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    item.stash.setdefault(_PASSED, {})[report.when] = report.passed


def _passed(node: pytest.Item) -> bool:
    phases = node.stash.get(_PASSED, {})
    return phases.get("setup", False) and phases.get("call", False)


@pytest.fixture
def evalexport_isolation(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    evalexport_download_cache: Path,
) -> Iterator[Path]:
    """A temporary HOME, caches, tracking stores and working directory; no token variables.

    Yields the temporary root. Package downloads share one cache per test session (see
    ``evalexport_download_cache``) so environments are not downloaded anew for every test.
    The root goes when its test passes, as pytest's ``tmp_path`` does under
    ``tmp_path_retention_policy = "failed"``; a failed test's stays for a look.
    """
    root = tmp_path_factory.mktemp("isolated")
    home = root / "home"
    layout = {
        "HOME": home,
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_STATE_HOME": home / ".local" / "state",
        "EVALEXPORT_CACHE_DIR": root / "evalexport-cache",
        "WANDB_DIR": root / "wandb",
        "WANDB_CACHE_DIR": root / "wandb-cache",
        "WANDB_CONFIG_DIR": root / "wandb-config",
        "WANDB_DATA_DIR": root / "wandb-data",
        "EVALRDL_FAKE_STORE": root / "evalrdl-store",
        "PIP_CACHE_DIR": evalexport_download_cache / "pip",
        "UV_CACHE_DIR": evalexport_download_cache / "uv",
    }
    for variable, path in layout.items():
        path.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv(variable, str(path))
    for variable in list(os.environ):
        if (
            variable in token_variables()
            or variable in _STORE_VARIABLES
            or is_secret_variable(variable)
        ):
            monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    workdir = root / "work"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    yield root
    try:
        policy = request.config.getini("tmp_path_retention_policy")
    except ValueError:  # a pytest before 7.3 keeps every temporary directory
        policy = "all"
    if policy == "failed" and isinstance(request.node, pytest.Item) and _passed(request.node):
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def exporter_options() -> dict[str, object]:
    """The options :class:`~evalexport.testing.guarantees.ExporterGuarantees` exports with,
    besides the rollouts file: ``{}`` here; a test module or conftest that needs some
    overrides this fixture (``{"store_dir": str(tmp_path / "store")}``)."""
    return {}


@pytest.fixture
def canaries() -> CanarySecrets:
    """Fresh canary secrets for one test."""
    from evalexport.testing.factory import CanarySecrets

    return CanarySecrets()


@pytest.fixture
def make_sample_run(tmp_path: Path, canaries: CanarySecrets) -> Callable[..., SampleRun]:
    """A factory of finished runs: ``make_sample_run(name="run", **knobs)``.

    Each call writes a run into ``tmp_path / name`` with this test's canary secrets planted
    in its config; knobs are those of :func:`evalexport.testing.factory.make_run`.
    """

    from evalexport.testing.factory import make_run

    def factory(name: str = "run", **knobs: Any) -> SampleRun:
        knobs.setdefault("canaries", canaries)
        return make_run(tmp_path / name, **knobs)

    return factory


@pytest.fixture
def sample_run(make_sample_run: Callable[..., SampleRun]) -> SampleRun:
    """A complete, well-formed finished run with canary secrets in its saved config."""
    return make_sample_run()


@pytest.fixture
def served_sdk(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[[str], ServedSdk]:
    """``served_sdk("tinytrack")``: the SDK an isolated exporter's worker gets in this test.

    Without ``--with_tinytrack_sdk``: a wheel of the fake the exporter declares
    (``sdk.contract.fake``), built from its source now, so an edited fake is what the worker
    gets whatever its version says; pass ``.requirement`` as the export's ``requirement``
    option, and every call and read the worker makes is recorded in ``.call_log``
    (``$TINYTRACK_FAKE_CALL_LOG``), which ``.problems()`` checks against the committed
    manifests. With the switch: the exporter's own requirement (``.requirement`` is ``None``),
    the real SDK, and nothing recorded.
    """
    from evalexport.contracts.drift import surface_of

    def serve(sdk: str) -> ServedSdk:
        surface = surface_of(sdk)
        if request.config.getoption(f"--with_{sdk}_sdk", default=False):
            return ServedSdk(sdk, None, None)
        if surface.fake is None:
            raise pytest.UsageError(f"{sdk} declares no fake (sdk.contract.fake) to serve")
        from evalexport.testing.wheels import wheel_from_tree

        wheelhouse = tmp_path_factory.mktemp(f"{sdk}-fake")
        wheel = wheel_from_tree(wheelhouse, Path(surface.fake), sdk)
        call_log = wheelhouse / "calls.jsonl"
        monkeypatch.setenv(f"{sdk.upper()}_FAKE_CALL_LOG", str(call_log))
        return ServedSdk(sdk, str(wheel), call_log)

    return serve


class ServedSdk:
    """What :func:`served_sdk` serves: the requirement to export with, and the fake's log."""

    def __init__(self, sdk: str, requirement: str | None, call_log: Path | None) -> None:
        self.sdk = sdk
        self.requirement = requirement
        """A wheel of the fake, or ``None``: the exporter's own requirement (the real SDK)."""
        self.call_log = call_log
        """Where the fake records the worker's calls and reads; ``None`` for the real SDK."""

    @property
    def options(self) -> dict[str, str]:
        """The export options that serve this SDK: ``{"requirement": wheel}`` for the fake."""
        return {"requirement": self.requirement} if self.requirement else {}

    def problems(self) -> list[str]:
        """Each recorded call or read that would fail against a committed manifest of the real
        SDK, naming the worker's line (``[]`` for the real SDK, which records nothing)."""
        if self.call_log is None or not self.call_log.exists():
            return []
        from evalexport.contracts.recorded import check_call_log

        return check_call_log(self.sdk, self.call_log)
