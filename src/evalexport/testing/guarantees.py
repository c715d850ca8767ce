"""The guarantees every exporter keeps, as a test suite an exporter's own tests inherit.

A test class names an exporter and inherits every guarantee, as pandas extension arrays
inherit ``pandas.tests.extension.base``::

    from evalexport.testing.guarantees import ExporterGuarantees


    class TestNotebook(ExporterGuarantees):
        exporter_name = "notebook"


    @pytest.fixture
    def exporter_options(tmp_path):  # the options the exporter needs; {} by default
        return {"store_dir": str(tmp_path / "store")}

Each test runs the exporter through evalexport's one pipeline, in this process, on a sample
run of the factory (:func:`evalexport.testing.factory.make_run`), isolated from the
developer's own HOME, caches and tokens (``evalexport_isolation``). An exporter that declares a
fake of its SDK (``sdk.contract.fake``) exports through that fake, every call and read its
worker makes recorded and held to the committed manifests (the real SDK only under its
``--with_<sdk>_sdk`` switch, or when ``exporter_options`` names a ``requirement``). A broken
guarantee fails with a message that names it:

* **one pass**: each file of the run is opened at most once by an export, its dry run and a
  rerun;
* **dry run = export**: the dry run's verdict (would export, skip or fail, and its exit code)
  is the export's, on a good run, a run with a broken line, a run exported already and with
  no credentials at all (but a service's own "already stored" (``deduped``), which only an
  upload can ask);
* **no secret leaves**: canary secrets planted in the run's saved config and in the
  exporter's token variables are in no result, output, log record, written file or worker
  payload;
* **the worker's environment is given**: a variable of the caller's shell the exporter does
  not declare reaches no worker it starts;
* **the run is untouched**: the run directory is unchanged but for the export marker;
* **a dry run writes nothing**: no file the test can see is written by a dry run;
* **a stop signal ends it cleanly**: SIGTERM during the export is a failed result with exit
  code 143, no marker, the run untouched, no process and no staging left, and a rerun exports;
* **nothing twice**: a batch's rerun of a finished export skips it, or fails, but never
  exports it a second time (a tracking or directory exporter skips it).

evalexport's own built-in exporters are held by this same suite (``tests/exporters/test_guarantees.py``,
one class per registered built-in).
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final, Protocol

import pytest

from evalexport.interrupts import signals_raise
from evalexport.results import ExportResult
from evalexport.testing.factory import SampleRun

__all__ = ["ExporterGuarantees"]

_DRY_RUN_EXPORT_RERUN = ((True, False), (False, False), (False, True))
"""``(dry_run, rerun)`` of a dry run, an export and a batch's rerun, in that order."""

_counting: collections.Counter[str] | None = None


def _count_opens(event: str, arguments: tuple[object, ...]) -> None:
    if _counting is not None and event == "open" and isinstance(arguments[0], str | bytes | Path):
        _counting[os.path.abspath(os.fsdecode(arguments[0]))] += 1  # noqa: PTH100 (not resolved)


_hooked = False


@contextlib.contextmanager
def _counted_opens() -> Iterator[collections.Counter[str]]:
    """Every file this process opens meanwhile (an ``open`` audit hook, PEP 578: it sees
    ``open()``, ``Path.open``, ``os.open`` and what libraries call)."""
    global _counting, _hooked
    if not _hooked:
        sys.addaudithook(_count_opens)  # audit hooks stay for the process: it counts on demand
        _hooked = True
    _counting = collections.Counter()
    try:
        yield _counting
    finally:
        _counting = None


def _tree(root: Path) -> dict[str, str]:
    """Every file under ``root``: its path relative to it, and the hash of its bytes."""
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*")) if root.exists() else []:
        if path.is_file() and not path.is_symlink():
            found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _children() -> set[int]:
    """The live processes whose parent is this one (``/proc``, where there is one)."""
    me = str(os.getpid())
    found: set[int] = set()
    for entry in Path("/proc").glob("[0-9]*") if Path("/proc").is_dir() else []:
        with contextlib.suppress(OSError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if fields[1] == me and fields[0] != "Z":
                found.add(int(entry.name))
    return found


class Export(Protocol):
    """The ``export`` fixture: the exporter under test, through evalexport's pipeline."""

    def __call__(
        self,
        sample: SampleRun,
        *,
        dry_run: bool = False,
        rerun: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> ExportResult: ...


REFUSED_SETTINGS: Final[tuple[tuple[str, str], ...]] = (
    ("WANDB_MODE", "OFFLINE"),
    ("WANDB_PROJECT", "team/project"),
    ("MLFLOW_EXPERIMENT_NAME", "e" * 600),
)
"""The SDKs' own variables set to what the SDK refuses or spells otherwise, that every
exporter's dry run is held to (a plugin adds its SDK's: :attr:`ExporterGuarantees.
refused_settings`)."""
_SETTINGS_GUARANTEE: Final = (
    "test_guarantee_a_dry_run_tells_the_exports_verdict_on_settings_an_sdk_refuses"
)


def _checked_settings(owner: str, settings: object) -> tuple[tuple[str, str], ...]:
    """``settings`` as :attr:`ExporterGuarantees.refused_settings` must hold them, or an error
    naming the class and the entry: pairs of texts, each variable a name one can set."""
    usage = 'pairs (variable, value) of texts, as [("TINYTRACK_PROJECT", "team/project")]'
    if isinstance(settings, str | bytes) or not isinstance(settings, Sequence):
        raise TypeError(f"{owner}.refused_settings is {settings!r}; it holds {usage}")
    checked = []
    for entry in settings:
        if not (
            isinstance(entry, tuple | list)
            and len(entry) == 2
            and all(isinstance(part, str) for part in entry)
        ):
            raise TypeError(f"{owner}.refused_settings holds {entry!r}; it holds {usage}")
        variable, value = entry
        if not variable or "=" in variable or "\0" in variable or "\0" in value:
            raise ValueError(
                f"{owner}.refused_settings names {variable[:60]!r}, which cannot be set as an "
                "environment variable (empty, or holding '=' or a NUL)"
            )
        checked.append((variable, value))
    return tuple(checked)


class ExporterGuarantees:
    """The guarantees of an exporter named by ``exporter_name``; see the module's text."""

    exporter_name: ClassVar[str]
    """The exporter under test, as ``evalexport list`` names it."""
    refused_settings: ClassVar[Sequence[tuple[str, str]]] = ()
    """Settings the exporter's SDK refuses, or reads otherwise than they are written, as
    ``(variable, value)`` (``("TINYTRACK_PROJECT", "team/project")``): each is held to "a dry
    run tells the export's verdict" beside the ones this suite knows (:data:`REFUSED_SETTINGS`).
    """

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """The settings-an-SDK-refuses guarantee runs once a setting: W&B's and MLflow's, and
        the class's own :attr:`refused_settings`."""
        if metafunc.definition.originalname == _SETTINGS_GUARANTEE:
            own = _checked_settings(type(self).__name__, type(self).refused_settings)
            metafunc.parametrize(("variable", "value"), list(dict.fromkeys(REFUSED_SETTINGS + own)))

    # -- what a guarantee runs ------------------------------------------------------------------

    @pytest.fixture(autouse=True)
    def _isolated(self, evalexport_isolation: Path) -> Path:
        """No guarantee touches the developer's HOME, caches, stores or tokens."""
        return evalexport_isolation

    @pytest.fixture
    def guaranteed_run(self, make_sample_run: Callable[..., SampleRun]) -> SampleRun:
        """The run each guarantee exports: one agent (ATIF takes one per file), canaries
        planted in its saved config, which is saved masked, as evaluations save it."""
        return make_sample_run("guaranteed", agents=("aime24_math_tool_agent",))

    @pytest.fixture
    def served(
        self, request: pytest.FixtureRequest, exporter_options: dict[str, object]
    ) -> Iterator[Any]:
        """The SDK every guarantee exports through, for an exporter that declares a fake
        (``sdk.contract.fake``): a wheel of the fake, its calls and reads recorded and held to
        the committed manifests when the test ends (``served_sdk``); the real SDK, from the
        exporter's own requirement, under ``--with_<sdk>_sdk``. ``None`` for an exporter
        with no fake, or none of its own to serve."""
        from evalexport.spec.registry import load_exporter

        sdk = load_exporter(self.exporter_name).sdk
        contract = sdk.contract if sdk is not None else None
        if contract is None or contract.fake is None or "requirement" in exporter_options:
            yield None  # no fake, or the test serves an SDK of its own
            return
        served = request.getfixturevalue("served_sdk")(contract.sdk)
        yield served
        problems = served.problems()
        assert not problems, self._broken(
            "every call and read its worker makes fits the SDK's committed manifests, but: "
            + "; ".join(problems)
        )

    @pytest.fixture
    def export(self, exporter_options: dict[str, object], served: Any) -> Callable[..., Any]:
        """``export(sample, dry_run=False, rerun=False, progress=None)``: the exporter, run
        through the pipeline as a batch's rerun would when ``rerun``; through the served SDK
        (:meth:`served`) unless ``exporter_options`` names a ``requirement`` of its own."""
        from evalexport.pipeline import ExportRequest, run_export

        sdk_options = dict(served.options) if served is not None else {}

        def run(
            sample: SampleRun,
            *,
            dry_run: bool = False,
            rerun: bool = False,
            progress: Callable[[int, int], None] | None = None,
        ) -> ExportResult:
            options = {
                "rollouts_jsonl_fpath": str(sample.rollouts),
                **sdk_options,
                **exporter_options,
            }
            request = ExportRequest(
                self.exporter_name,
                options,
                dry_run=dry_run,
                progress=progress,
                skip_finished=rerun,
            )
            return run_export(request)

        return run

    def _broken(self, message: str) -> str:
        return f"guarantee broken for exporter {self.exporter_name!r}: {message}"

    # -- the guarantees ---------------------------------------------------------------------------

    def test_guarantee_each_file_of_the_run_is_opened_once(
        self, export: Export, guaranteed_run: SampleRun
    ) -> None:
        """One pass: the dry run, the export and a rerun each open every file of the run at most once."""
        run = guaranteed_run.run
        files = (run.rollouts, run.aggregate_metrics, run.saved_config)
        for what, dry_run in (("dry run", True), ("export", False), ("rerun", False)):
            with _counted_opens() as opens:
                result = export(guaranteed_run, dry_run=dry_run)
            twice = {path.name: opens[str(path)] for path in files if opens[str(path)] > 1}
            assert not twice, self._broken(
                f"each file of the run is opened once, but its {what} ({result.status.value}: "
                f"{result.message[:200]}) opened {twice}"
            )

    def test_guarantee_a_dry_run_tells_the_exports_verdict(
        self,
        export: Export,
        make_sample_run: Callable[..., SampleRun],
        guaranteed_run: SampleRun,
    ) -> None:
        """Dry run = export: on a good run, a broken one and one exported already, the dry run's
        status, exit code and skip reason are the export's."""
        broken = make_sample_run("broken", agents=("aime24_math_tool_agent",), malformed_lines=[2])
        for label, sample in (("a good run", guaranteed_run), ("a broken line", broken)):
            dry = export(sample, dry_run=True)
            real = export(sample)
            self._same_verdict(label, dry, real)
        dry = export(guaranteed_run, dry_run=True)  # exported now: a rerun's verdict
        rerun = export(guaranteed_run)
        self._same_verdict("a run exported already", dry, rerun)

    def test_guarantee_a_dry_run_tells_the_exports_verdict_without_credentials(
        self,
        export: Export,
        make_sample_run: Callable[..., SampleRun],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """Dry run = export without credentials too: with none of the variables the SDK reads
        credentials from set (and no credential helper on PATH), the dry run's verdict is the
        export's; an export that needs a token refuses before anything is built."""
        from evalexport.spec.registry import load_exporter

        for variable in getattr(load_exporter(self.exporter_name).sdk, "token_variables", ()):
            monkeypatch.delenv(variable, raising=False)
        monkeypatch.setenv("PATH", os.defpath)  # a credential helper (glab) is not to be found
        sample = make_sample_run("no-credentials", agents=("aime24_math_tool_agent",))
        dry = export(sample, dry_run=True)
        real = export(sample)
        self._same_verdict("a run exported without credentials", dry, real)

    def test_guarantee_a_dry_run_tells_the_exports_verdict_on_rows_no_one_expects(
        self, export: Export, make_sample_run: Callable[..., SampleRun]
    ) -> None:
        """Dry run = export on rows Gym would not write but JSON allows: a timestamp past the
        year 9999 (milliseconds written as seconds), a lone surrogate (``"\\ud800"``) in a
        text, a task index that is a text beside integers."""
        sample = make_sample_run("odd-rows", agents=("aime24_math_tool_agent",))
        write_odd_rows(sample.rollouts)
        dry = export(sample, dry_run=True)
        real = export(sample)
        self._same_verdict("rows no one expects", dry, real)

    def test_guarantee_a_dry_run_tells_the_exports_verdict_on_settings_an_sdk_refuses(
        self,
        export: Export,
        make_sample_run: Callable[..., SampleRun],
        monkeypatch: pytest.MonkeyPatch,
        variable: str,
        value: str,
    ) -> None:
        """Dry run = export when an SDK's own variable holds what the SDK refuses (or spells
        differently, as ``OFFLINE``): found before anything is built, or taken as meant."""
        monkeypatch.setenv(variable, value)
        sample = make_sample_run(f"setting-{variable[:40]}", agents=("aime24_math_tool_agent",))
        dry = export(sample, dry_run=True)
        real = export(sample)
        self._same_verdict(f"{variable}={value[:20]!r}", dry, real)

    def test_guarantee_a_dry_run_tells_the_exports_verdict_on_a_link_round_the_run(
        self, export: Export, make_sample_run: Callable[..., SampleRun]
    ) -> None:
        """Dry run = export on a run directory holding a link to itself (``self -> .``), which
        an upload following links goes round forever."""
        sample = make_sample_run("looped", agents=("aime24_math_tool_agent",))
        (sample.run.run_dir / "self").symlink_to(".")
        dry = export(sample, dry_run=True)
        real = export(sample)
        self._same_verdict("a link round the run directory", dry, real)

    @pytest.mark.parametrize(
        "hostile",
        [
            "a config key that is no text",
            "a config that is a YAML alias bomb",
            "a config that links out of the run",
            "a health file nested 950 deep",
            "a health file that is a FIFO",
            "a row holding secrets",
            "a row nested 300 deep",
        ],
    )
    def test_guarantee_a_dry_run_tells_the_exports_verdict_on_hostile_files(
        self, export: Export, make_sample_run: Callable[..., SampleRun], hostile: str
    ) -> None:
        """Dry run = export on files a careless or hostile hand wrote (#56): each is read by
        the same gate in both (:mod:`evalexport.ingress`), refused or masked alike."""
        sample = make_sample_run(f"hostile-{hostile[:12]}", agents=("aime24_math_tool_agent",))
        write_hostile(sample, hostile)
        dry = export(sample, dry_run=True)
        real = export(sample)
        self._same_verdict(hostile, dry, real)

    def _same_verdict(self, label: str, dry: ExportResult, real: ExportResult) -> None:
        from evalexport.results import ExportStatus, SkipReason

        if real.skip_reason is SkipReason.DEDUPED and dry.status is ExportStatus.SUCCEEDED:
            return  # the service's own verdict: a dry run cannot ask it without uploading
        verdict = (dry.status, dry.exit_code, dry.skip_reason)
        assert verdict == (real.status, real.exit_code, real.skip_reason), self._broken(
            f"a dry run tells the export's verdict, but on {label} the dry run said "
            f"{dry.summary_line()!r} and the export {real.summary_line()!r}"
        )

    def test_guarantee_no_secret_leaves(
        self,
        export: Export,
        make_sample_run: Callable[..., SampleRun],
        evalexport_isolation: Path,
        caplog: pytest.LogCaptureFixture,
        capfd: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path,
    ) -> None:
        """No canary planted in the saved config or the token variables is in a result, an
        output, a log record, a file written outside the run or a worker payload."""
        from evalexport.spec.registry import load_exporter

        # A hand-written saved config that was never masked: every export masks it again.
        sample = make_sample_run(
            "unmasked", agents=("aime24_math_tool_agent",), mask_saved_config=False
        )
        canaries = list(sample.canaries.all)
        for index, variable in enumerate(
            getattr(load_exporter(self.exporter_name).sdk, "token_variables", ())
        ):
            canary = f"canary-token-{index}-{sample.canaries.suffix}"
            monkeypatch.setenv(variable, canary)
            canaries.append(canary)
        payloads = _recorded_payloads(monkeypatch)
        texts: list[str] = []
        with caplog.at_level(logging.DEBUG):
            for dry_run, rerun in _DRY_RUN_EXPORT_RERUN:
                texts.append(export(sample, dry_run=dry_run, rerun=rerun).model_dump_json())
        captured = capfd.readouterr()
        texts += [captured.out, captured.err, caplog.text, json.dumps(payloads, default=str)]
        leaks = [f"output {i}" for i, text in enumerate(texts) for c in canaries if c in text]
        for root in {tmp_path, evalexport_isolation}:
            for path in sorted(root.rglob("*")):
                if sample.run.run_dir in path.parents or not path.is_file() or path.is_symlink():
                    continue  # the run itself holds the canaries: it is where they were planted
                if path.suffix in (".pyc", ".so") or "site-packages" in path.parts:
                    continue
                data = path.read_bytes()
                leaks += [f"{path}" for c in canaries if c.encode() in data]
        assert not leaks, self._broken(f"no secret leaves, but a canary was found in {leaks}")

    def test_guarantee_the_worker_is_given_no_unrelated_variable(
        self, export: Export, guaranteed_run: SampleRun, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A variable of the caller's shell the exporter does not declare (an unrelated
        token, a variable that would redirect another SDK, a name that only looks like the
        locale's or evalexport's) reaches no worker it starts: a worker is given its
        environment, not the caller's (:mod:`evalexport.isolation.variables`), and is given
        evalexport's own variables."""
        from evalexport.isolation.variables import EVALEXPORT_VARIABLES
        from evalexport.spec.registry import load_exporter

        sdk = load_exporter(self.exporter_name).sdk
        admitted = sdk.admitted() if sdk is not None else None
        planted = {
            name: f"unrelated-{index}-{guaranteed_run.canaries.suffix}"
            for index, name in enumerate(
                (
                    "HF_TOKEN",
                    "TRACKIO_SERVER_URL",
                    "EVALEXPORT_GUARANTEE_PROBE_X",
                    "LC_SECRET",
                    "UNRELATED_KEY",
                )
            )
            if admitted is None or not admitted.admits(name)
        }
        for name, value in planted.items():
            monkeypatch.setenv(name, value)
        own = "EVALEXPORT_PROGRESS_INTERVAL"  # evalexport's own, at its default
        assert own in EVALEXPORT_VARIABLES
        monkeypatch.setenv(own, "5")
        launched = _launched_environments(monkeypatch)
        for dry_run, rerun in _DRY_RUN_EXPORT_RERUN:
            export(guaranteed_run, dry_run=dry_run, rerun=rerun)
        reached = sorted(
            {
                name
                for environment in launched
                for name, value in planted.items()
                if environment.get(name) == value
            }
        )
        assert not reached, self._broken(
            f"the worker is given only what its exporter declares, but it saw {reached}"
        )
        assert all(env.get(own) == "5" for env in launched), self._broken(
            "a worker is given evalexport's own variables"
        )

    def test_guarantee_the_run_directory_is_unchanged_but_for_the_marker(
        self, export: Export, guaranteed_run: SampleRun
    ) -> None:
        """The dry run, the export and a rerun change no file of the run and add none but the
        marker."""
        before = _tree(guaranteed_run.run.run_dir)
        for dry_run, rerun in _DRY_RUN_EXPORT_RERUN:
            export(guaranteed_run, dry_run=dry_run, rerun=rerun)
        after = _tree(guaranteed_run.run.run_dir)
        marker = guaranteed_run.run.export_marker(self.exporter_name).name
        changed = sorted(name for name in before if after.get(name) != before[name])
        added = sorted(set(after) - set(before) - {marker})
        assert (changed, added) == ([], []), self._broken(
            f"the run directory is unchanged but for the marker, but the export changed "
            f"{changed} and added {added}"
        )

    def test_guarantee_a_dry_run_writes_nothing(
        self,
        export: Export,
        guaranteed_run: SampleRun,
        evalexport_isolation: Path,
        tmp_path: Path,
    ) -> None:
        """A dry run writes no file anywhere the test can see (the run, the exporter's output
        or store, the isolated HOME and stores), but evalexport's own cache."""
        cache = Path(os.environ.get("EVALEXPORT_CACHE_DIR", evalexport_isolation / "cache"))

        def everything() -> dict[str, str]:
            seen: dict[str, str] = {}
            for root in {tmp_path, evalexport_isolation}:
                for name, digest in _tree(root).items():
                    if cache not in (root / name).parents:
                        seen[str(root / name)] = digest
            return seen

        before = everything()
        dry = export(guaranteed_run, dry_run=True)
        after = everything()
        written = sorted(name for name in after if before.get(name) != after[name])
        assert written == [], self._broken(
            f"a dry run writes nothing, but its dry run ({dry.summary_line()[:200]!r}) wrote "
            f"{written}"
        )

    def test_guarantee_a_stop_signal_ends_it_cleanly(
        self,
        export: Export,
        guaranteed_run: SampleRun,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """SIGTERM once the run is read (or at the first progress report) fails the export with
        exit code 143, leaving the run as it was, no staging and no process; a rerun exports."""
        from evalexport.results import ExitCode, ExportStatus
        from evalexport.spec.hooks import call_hook
        from evalexport.spec.registry import load_exporter

        exporter_class = load_exporter(self.exporter_name)
        run_before = _tree(guaranteed_run.run.run_dir)
        around = {p for p in tmp_path.iterdir()}
        children = _children()
        sent = threading.Event()

        def stop(*_: object) -> None:
            if not sent.is_set():
                sent.set()
                os.kill(os.getpid(), signal.SIGTERM)

        read = exporter_class.read

        def read_then_stop(exporter: object, run: object, config: Any, target: Any) -> Any:
            prepared = call_hook(read.__get__(exporter), run=run, config=config, target=target)
            if not config.dry_run:
                stop()  # the export has read the run and is about to deliver it
            return prepared

        monkeypatch.setattr(exporter_class, "read", read_then_stop)
        with signals_raise():
            result = export(guaranteed_run, progress=stop)
        assert sent.is_set()
        assert (result.status, result.exit_code) == (
            ExportStatus.FAILED,
            ExitCode.TERMINATED,
        ), self._broken(
            f"a stop signal ends the export as a failure with exit code 143, but it ended "
            f"{result.summary_line()!r} (exit code {int(result.exit_code)})"
        )
        left = _tree(guaranteed_run.run.run_dir)
        assert left == run_before, self._broken(
            "a stop signal leaves the run directory as it was (no marker), but it changed: "
            f"{sorted(set(left) ^ set(run_before))}"
        )
        stray = sorted(str(p) for p in set(tmp_path.iterdir()) - around if p.name.startswith("."))
        assert not stray, self._broken(f"a stop signal leaves no staging behind, but left {stray}")
        orphans = _children() - children
        assert not orphans, self._broken(
            f"a stop signal leaves no process behind, but processes {sorted(orphans)} live on"
        )
        monkeypatch.setattr(exporter_class, "read", read)
        again = export(guaranteed_run)
        assert again.status is ExportStatus.SUCCEEDED, self._broken(
            f"after a stop signal a rerun exports, but it ended {again.summary_line()!r}"
        )

    def test_guarantee_a_rerun_never_exports_the_run_twice(
        self, export: Export, guaranteed_run: SampleRun
    ) -> None:
        """A batch's rerun of a finished export skips it or fails, never succeeds a second time;
        a tracking or directory exporter skips it."""
        from evalexport.results import ExportStatus
        from evalexport.spec.registry import load_exporter

        first = export(guaranteed_run)
        assert first.status is ExportStatus.SUCCEEDED, self._broken(
            f"a good run exports, but it ended {first.summary_line()!r}"
        )
        rerun = export(guaranteed_run, rerun=True)
        assert rerun.status is not ExportStatus.SUCCEEDED, self._broken(
            f"a rerun never exports the run twice, but it said {rerun.summary_line()!r}. An "
            "output exporter says its output is there already with Target(..., "
            "already_exported=WHAT_SAYS_SO) returned by resolve (a batch's rerun then skips), "
            "or refuses an existing output with Target(..., refusal=WHY); a tracking one "
            'declares kind = "tracking" and its export marker skips the rerun'
        )
        if load_exporter(self.exporter_name).kind in ("tracking", "directory"):
            assert rerun.status is ExportStatus.SKIPPED, self._broken(
                "a tracking or directory exporter's rerun skips what it exported, but it "
                f"ended {rerun.summary_line()!r}"
            )


def write_odd_rows(rollouts: Path) -> None:
    """Rewrite three rows of ``rollouts``: a turn's timestamp 1e20 s, a field holding a lone
    surrogate, and a task index given as text."""
    rows = [json.loads(line) for line in rollouts.read_text(encoding="utf-8").splitlines()]
    turns = rows[0].get("ng_trajectory", {}).get("turns") or [{}]
    turns[0]["timestamp"] = 1e20
    for row in rows:  # a text column of the samples table, a surrogate in its first cell
        row["grader_note"] = "plain"
    rows[0]["grader_note"] = "unpaired \ud800 surrogate"
    rows[1]["_ng_task_index"] = str(rows[1]["_ng_task_index"])
    rollouts.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


_ALIAS_BOMB = "".join(
    f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * 9) if level else 'lol'}]\n"
    for level in range(9)
)


def write_hostile(sample: SampleRun, hostile: str) -> None:
    """Write one of the hostile files of :meth:`ExporterGuarantees.
    test_guarantee_a_dry_run_tells_the_exports_verdict_on_hostile_files` into ``sample``."""
    run = sample.run
    if hostile == "a config key that is no text":
        with run.saved_config.open("a", encoding="utf-8") as config:
            config.write("1: one\n")
    elif hostile == "a config that is a YAML alias bomb":
        run.saved_config.write_text(_ALIAS_BOMB, encoding="utf-8")
    elif hostile == "a config that links out of the run":
        outside = run.run_dir.parent / f"{run.run_dir.name}-outside.yaml"
        outside.write_bytes(run.saved_config.read_bytes())
        run.saved_config.unlink()
        run.saved_config.symlink_to(outside)
    elif hostile == "a health file nested 950 deep":
        deep = '{"nested": ' * 950 + "{}" + "}" * 950
        run.quality_summary.write_text('{"run": ' + deep + "}", encoding="utf-8")
    elif hostile == "a health file that is a FIFO":
        os.mkfifo(run.rollout_verdicts)
    else:
        lines = run.rollouts.read_text(encoding="utf-8").splitlines()
        row = json.loads(lines[0])
        if hostile == "a row holding secrets":
            row["responses_create_params"]["extra_headers"] = {
                "Authorization": "Bearer abcdefgh12345678ijklmnop"
            }
            row["tool_args"] = json.dumps({"api_key": "a-tool-key-value"})
        else:
            row["nested"] = json.loads("[" * 300 + "]" * 300)
        lines[0] = json.dumps(row, ensure_ascii=False)
        run.rollouts.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _launched_environments(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, str]]:
    """The environment of every worker an exporter launches, recorded as it is started."""
    import subprocess

    environments: list[dict[str, str]] = []
    popen = subprocess.Popen

    def recorded(*arguments: Any, **keywords: Any) -> Any:
        command = arguments[0] if arguments else keywords.get("args", ())
        if any(str(part).endswith("evalexport_worker_runner.py") for part in command):
            environments.append(dict(keywords.get("env") or {}))
        return popen(*arguments, **keywords)

    monkeypatch.setattr(subprocess, "Popen", recorded)  # the launcher's, as every module's
    return environments


def _recorded_payloads(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every payload an isolated exporter hands its worker, recorded as it is sent."""
    from evalexport.isolation import launcher

    payloads: list[object] = []
    send = launcher.StartedWorker.run

    def recorded(worker: Any, payload: Any, *arguments: Any, **keywords: Any) -> Any:
        payloads.append(payload)
        return send(worker, payload, *arguments, **keywords)

    monkeypatch.setattr(launcher.StartedWorker, "run", recorded)
    return payloads
