"""The recording helper a fake SDK carries (``evalexport.testing.recording``): calls bound as the
manifests' signatures have them (``self`` only for a method named by its class path), reads and
comparisons, call sites named by the worker body's own source, and one copy of it in every
fake, identical to evalexport's."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from evalexport.contracts.recorded import check_recorded_calls
from evalexport.contracts.surface_extractor import extract
from evalexport.testing import recording
from evalexport.workers.protocol import WORKER_BODY_VARIABLE

ROOT = Path(__file__).resolve().parents[1]

FAKE = """
from tinysdk._recording import Recorder

__version__ = "1.0"
record = Recorder("tinysdk")


@record.reads("tinysdk.Run")
class Run:
    def __init__(self, run_id: str, state: str) -> None:
        self.run_id = run_id
        self.state = state


class _Logs:
    @record.calls("tinysdk.Client().logs.send")
    def send(self, text: str, *, level: int = 0) -> None:
        pass


class Client:
    @record.calls("tinysdk.Client")
    def __init__(self, project: str = "p", *, token: str | None = None) -> None:
        self.project = project
        self.logs = _Logs()

    @record.calls("tinysdk.Client.start")
    def start(self, name: str) -> Run:
        return self._internal(name)

    def _internal(self, name: str) -> Run:
        return Run(name, "running")  # the fake's own call: not the worker's


@record.calls("tinysdk.finish")
def finish(run: Run, status: str = "done") -> None:
    pass
"""

WORKER = """
import tinysdk

def run(payload):
    client = tinysdk.Client("evals")
    started = client.start("r1")
    client.logs.send("hello")
    if started.state == "finished":
        pass
    tinysdk.finish(started)
    return started.run_id
"""

SURFACE = [
    "tinysdk.Client",
    "tinysdk.Client.start",
    "tinysdk.Client().logs.send",
    "tinysdk.Run",
    "tinysdk.finish",
]


def _fake(tmp_path: Path) -> Path:
    package = tmp_path / "fake" / "tinysdk"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(FAKE)
    (package / "_recording.py").write_text(Path(recording.__file__).read_text())
    return package.parent


def _run_worker(tmp_path: Path, fake: Path, body: Path, **environment: str) -> list[dict]:
    log = tmp_path / "calls.jsonl"
    script = textwrap.dedent(
        """
        import runpy, sys
        sys.path.insert(0, sys.argv[1])
        print(runpy.run_path(sys.argv[2])["run"]({}))
        """
    )
    completed = subprocess.run(
        [sys.executable, "-I", "-c", script, str(fake), str(body)],
        env={"TINYSDK_FAKE_CALL_LOG": str(log), **environment},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_calls_bind_to_the_fakes_own_manifest_with_self_where_the_path_needs_it(
    tmp_path: Path,
) -> None:
    fake = _fake(tmp_path)
    body = tmp_path / "worker.py"
    body.write_text(WORKER)
    records = _run_worker(tmp_path, fake, body)
    calls = [r for r in records if "args" in r]
    assert [c["name"] for c in calls] == [
        "tinysdk.Client",
        "tinysdk.Client.start",
        "tinysdk.Client().logs.send",
        "tinysdk.finish",
    ]
    constructor, start, send, finish = calls
    assert constructor["args"] == ["evals"]  # no self: the class's call signature
    assert constructor["defaulted"] == {"token": "None"}
    assert len(start["args"]) == 2  # self, as the manifest's plain function has it
    assert send["args"] == ["hello"]  # reached through an instance: no self
    assert finish["defaulted"] == {"status": "'done'"}
    sys.path.insert(0, str(fake))
    try:
        manifest = extract("tinysdk", SURFACE)
    finally:
        sys.path.remove(str(fake))
        for name in [m for m in sys.modules if m == "tinysdk" or m.startswith("tinysdk.")]:
            del sys.modules[name]
    assert check_recorded_calls(records, [manifest]) == []


def test_reads_and_comparisons_are_recorded_but_not_the_fakes_own(tmp_path: Path) -> None:
    fake = _fake(tmp_path)
    body = tmp_path / "worker.py"
    body.write_text(WORKER)
    reads = [r for r in _run_worker(tmp_path, fake, body) if "read" in r]
    assert [(r["read"], r.get("compared_with")) for r in reads] == [
        ("state", None),
        ("state", "finished"),
        ("run_id", None),
    ]
    assert all(r["site"].startswith(f"{body}:") for r in reads)


def test_no_secret_a_call_was_given_is_recorded(tmp_path: Path) -> None:
    fake = _fake(tmp_path)
    body = tmp_path / "worker.py"
    token, password = "tok-a1b2c3d4e5f6", "pw-9z8y7x6w"
    body.write_text(
        "import tinysdk\n"
        "def run(payload):\n"
        f"    tinysdk.Client('https://evals:{password}@track.example/x', token={token!r})\n"
        f"    tinysdk.Client({{'api_key': {token!r}}})\n"  # under a key named like a secret
    )
    log = json.dumps(_run_worker(tmp_path, fake, body))
    assert password not in log
    assert token not in log
    assert "https://evals:****@track.example/x" in log  # what is not secret stays


def test_the_worker_bodys_copy_is_named_by_its_source(tmp_path: Path) -> None:
    fake = _fake(tmp_path)
    copy = tmp_path / "scratch" / "evalexport_worker_body.py"
    copy.parent.mkdir()
    copy.write_text(WORKER)
    source = "/home/me/plugin/src/tinytrack_exporter/worker.py"
    records = _run_worker(tmp_path, fake, copy, **{WORKER_BODY_VARIABLE: source})
    assert {r["site"].rsplit(":", 1)[0] for r in records} == {source}


def test_nothing_is_recorded_without_the_log_variable(tmp_path: Path) -> None:
    fake = _fake(tmp_path)
    body = tmp_path / "worker.py"
    body.write_text(WORKER)
    completed = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(fake)!r}); "
            f"import runpy; runpy.run_path({str(body)!r})['run']({{}})",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr
    assert not (tmp_path / "calls.jsonl").exists()


def test_the_evalrdl_fake_carries_evalexports_recorder_unchanged() -> None:
    carried = ROOT / "fakes" / "evalrdl" / "src" / "evalrdl" / "_recording.py"
    assert carried.read_text() == Path(recording.__file__).read_text(), (
        "fakes/evalrdl carries an old recorder: copy src/evalexport/testing/recording.py there"
    )


def test_the_recorder_and_the_launcher_name_the_same_variable() -> None:
    assert recording.WORKER_BODY_VARIABLE == WORKER_BODY_VARIABLE


def test_the_scaffold_copies_this_very_recorder() -> None:
    from evalexport.contracts.scaffold import RECORDER_SOURCE

    assert Path(recording.__file__).resolve() == RECORDER_SOURCE
