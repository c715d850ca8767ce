"""Both sides of the worker protocol agree (``workers/protocol.py``): each built-in exporter
with an SDK delivers the payload type its worker body reads, and the payload it builds for a
real run has that type's keys and value types, through JSON as the worker receives it."""

from __future__ import annotations

import importlib
import json
import runpy
import types
import typing
from pathlib import Path
from typing import Any

import pytest

from evalexport.backends.evalrdl.worker import EvalRDLPayload
from evalexport.spec.hooks import call_hook
from evalexport.spec.options import parse_options
from evalexport.spec.registry import exporter_entries, load_exporter
from evalexport.workers import protocol

ISOLATED = sorted(
    entry.name
    for entry in exporter_entries().values()
    if entry.source == "built-in" and entry.load().sdk is not None
)


def _mismatches(value: Any, expected: Any, where: str = "payload") -> list[str]:
    """Where ``value`` does not have type ``expected`` (the protocol's TypedDicts and the plain
    types they use; pydantic refuses ``typing.TypedDict`` before Python 3.12)."""
    origin, arguments = typing.get_origin(expected), typing.get_args(expected)
    if expected is Any:
        return []
    if typing.is_typeddict(expected):
        if not isinstance(value, dict):
            return [f"{where} is {type(value).__name__}, not an object"]
        hints = typing.get_type_hints(expected)
        problems = [f"{where}.{key} is missing" for key in expected.__required_keys__ - set(value)]
        problems += [
            f"{where}.{key} is not in {expected.__name__}" for key in set(value) - set(hints)
        ]
        for key in set(value) & set(hints):
            problems += _mismatches(value[key], hints[key], f"{where}.{key}")
        return problems
    if origin in (typing.Union, types.UnionType):
        options = [_mismatches(value, option, where) for option in arguments]
        return (
            [] if any(not found for found in options) else [f"{where} is {value!r}, not {expected}"]
        )
    if origin is typing.Literal:
        return [] if value in arguments else [f"{where} is {value!r}, not one of {arguments}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where} is {type(value).__name__}, not a list"]
        return [
            p
            for i, item in enumerate(value)
            for p in _mismatches(item, arguments[0], f"{where}[{i}]")
        ]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where} is {type(value).__name__}, not a mapping"]
        return [
            p
            for k, item in value.items()
            for p in _mismatches(item, arguments[1], f"{where}[{k!r}]")
        ]
    if expected is type(None):
        return [] if value is None else [f"{where} is {value!r}, not None"]
    if expected is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return [] if ok else [f"{where} is {value!r}, not a number"]
    if expected is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return [] if ok else [f"{where} is {value!r}, not an int"]
    return [] if isinstance(value, expected) else [f"{where} is {value!r}, not {expected.__name__}"]


def _payload_type_of_body(body: Path) -> Any:
    """The payload type ``run`` of a built-in body reads, from the body's module (its types'
    forward references resolve there)."""
    run = importlib.import_module(f"evalexport.backends.{body.parent.name}.worker").run
    return typing.get_type_hints(run)["payload"]


@pytest.mark.parametrize("name", ISOLATED)
def test_the_exporter_builds_the_payload_type_its_worker_reads(name: str) -> None:
    exporter = load_exporter(name)
    assert exporter.sdk is not None
    delivered = typing.get_type_hints(exporter.deliver)["return"]
    assert typing.get_origin(delivered).__name__ == "WorkerDelivery"
    (built,) = typing.get_args(delivered)
    body = importlib.import_module(f"evalexport.backends.{exporter.sdk.body.parent.name}.worker")
    read = typing.get_type_hints(body.run)["payload"]
    assert built is read  # the payload type lives beside the body that reads it
    assert read.__module__ == body.__name__
    shipped = runpy.run_path(str(exporter.sdk.body))[read.__name__]

    def written(typed: Any) -> dict[str, str]:
        return {key: hint.__forward_arg__ for key, hint in typed.__annotations__.items()}

    assert written(shipped) == written(read)  # the copy the worker runs
    assert typing.get_type_hints(runpy.run_path(str(exporter.sdk.body))["run"])["return"] is (
        protocol.WorkerResult
    )


OPTIONS = [(name, {}) for name in ISOLATED] + [("mlflow", {"traces": True})]
"""Each isolated exporter as configured by default, and the options that send more keys."""


@pytest.mark.parametrize(("name", "options"), OPTIONS, ids=lambda value: str(value))
def test_the_payload_built_for_a_run_matches_its_type(
    name: str, options: dict[str, object], sample_run, tmp_path: Path
) -> None:
    exporter = load_exporter(name)()
    config = parse_options(exporter, {"rollouts_jsonl_fpath": str(sample_run.rollouts), **options})
    handed: dict[str, Any] = {"run": sample_run.run, "config": config}
    handed["target"] = call_hook(exporter.resolve, **handed, time_limit=None)  # as the pipeline
    handed["prepared"] = call_hook(exporter.read, **handed)
    try:
        delivery = call_hook(exporter.deliver, **handed, fingerprint="sha256:0", scratch=tmp_path)
    finally:
        if (discard := getattr(handed["prepared"], "discard", None)) is not None:
            discard()
    payload = json.loads(json.dumps(delivery.payload))
    assert set(options) <= set(payload) or not options  # the option's key is sent
    assert exporter.sdk is not None
    assert _mismatches(payload, _payload_type_of_body(exporter.sdk.body)) == []


def test_a_payload_of_the_wrong_shape_is_refused_by_the_check() -> None:
    payload = {
        "run_dir": "/r",
        "label": None,
        "tags": ["a"],
        "meta": {},
        "parallel": 4,
        "wait": True,
        "timeout": 600,
        "url": "prod",
    }
    assert _mismatches(payload, EvalRDLPayload) == []
    wrong = {**payload, "wait": "maybe", "tags": [1], "colour": "red"}
    del wrong["url"]
    assert sorted(_mismatches(wrong, EvalRDLPayload)) == [
        "payload.colour is not in EvalRDLPayload",
        "payload.tags[0] is 1, not str",
        "payload.url is missing",
        "payload.wait is 'maybe', not bool",
    ]


# -- the worker's result --------------------------------------------------------------------


def test_a_result_carries_what_the_parent_reads_back_as_typed_keys() -> None:
    built = protocol.result(
        "skipped",
        protocol.SUCCEEDED,
        "already there",
        run_id="r-1",
        skip_reason="deduped",
        notices=["bind it"],
        receipts={"upload_token": "upl-1"},
        state="deduped",
    )
    assert built == {
        "status": "skipped",
        "exit_code": 0,
        "message": "already there",
        "details": {"state": "deduped"},
        "run_id": "r-1",
        "skip_reason": "deduped",
        "notices": ["bind it"],
        "receipts": {"upload_token": "upl-1"},
    }
    assert protocol.worker_result_from(json.loads(json.dumps(built))) == built


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"status": "succeeded", "exit_code": 0, "message": "", "run_ID": "r"}, "'run_ID'"),
        ({"status": "succeeded", "exit_code": 0, "message": "", "notice": []}, "'notice'"),
        ({"status": "succeeded", "exit_code": 0}, "needs 'message'"),
        ({"status": "done", "exit_code": 0, "message": ""}, "status 'done'"),
        ({"status": "failed", "exit_code": "1", "message": ""}, "not an integer"),
        ({"status": "failed", "exit_code": 1, "message": "", "run_id": 5}, "run_id 5"),
        ({"status": "failed", "exit_code": 1, "message": "", "notices": [1]}, "not all text"),
        (["succeeded"], "a JSON object"),
    ],
)
def test_a_worker_result_with_a_misspelled_key_or_a_wrong_type_is_refused(
    data: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        protocol.worker_result_from(data)


def test_exit_codes_and_the_fingerprint_tag_are_defined_once() -> None:
    from evalexport import guard, results
    from evalexport.backends.mlflow import exporter as mlflow
    from evalexport.backends.wandb import exporter as wandb
    from evalexport.cli import _args

    assert results.ExitCode is protocol.ExitCode
    assert (_args.OK, _args.FAILED, _args.USAGE) == (0, 1, 2)
    assert mlflow.FINGERPRINT_TAG is guard.FINGERPRINT_TAG
    assert wandb.FINGERPRINT_KEY is guard.FINGERPRINT_SUMMARY_KEY


def test_a_stop_signals_exit_code_is_128_plus_its_number_in_one_place() -> None:
    import signal

    assert [protocol.ExitCode.for_signal(s) for s in (signal.SIGHUP, signal.SIGINT)] == [
        protocol.ExitCode.HANGUP,
        protocol.ExitCode.INTERRUPTED,
    ]
    assert protocol.ExitCode.for_signal(signal.SIGTERM) == 143
    assert protocol.ExitCode.TERMINATED.stopped_by_signal
    assert not protocol.ExitCode.REFUSED.stopped_by_signal


def test_no_module_but_the_exit_codes_writes_the_signal_rule() -> None:
    import re

    source = Path(protocol.__file__).resolve().parent.parent
    writers = sorted(
        str(path.relative_to(source))
        for path in source.rglob("*.py")
        if re.search(r"128 \+ [\w.]*(signum|stopping|interrupted_by)", path.read_text())
        and path.name != "exit_codes.py"
    )
    assert writers == []
