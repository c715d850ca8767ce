"""Differential property tests (SPEC §5): calls built from the real signatures' annotations,
made on the fake (and, with --with_evalrdl_sdk, on the real SDK), must end the same way.

Without the real SDK the reference is the committed manifest: the fake must refuse (TypeError)
exactly the calls that do not bind to the real signature.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalexport.contracts.check import load_manifests
from evalexport.contracts.recorded import bind_call
from evalexport.isolation import EnvironmentSpec, ensure_environment, run_worker
from tests.exporters.conftest import CONTRACTS

PROBE = (
    Path(__file__).resolve().parent.parent / "support" / "worker_bodies" / "evalrdl_call_probe.py"
)
MANIFEST = load_manifests(CONTRACTS / "evalrdl")[-1]
TARGETS = ("evalrdl.Client", "evalrdl.Client().uploads.upload", "evalrdl.sdk.api.upload_plan")

_SCALARS: dict[str, st.SearchStrategy[Any]] = {
    "None": st.none(),
    "str": st.text(max_size=8),
    "int": st.integers(-2, 16),
    "float": st.floats(-1, 1e4, allow_nan=False),
    "bool": st.booleans(),
    "list[str]": st.lists(st.text(max_size=5), max_size=3),
    "dict[str, str]": st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
}


def _value(name: str, annotation: str | None, run_dir: str) -> st.SearchStrategy[Any]:
    if name == "path":
        return st.sampled_from([run_dir, run_dir + "/missing"])
    if name == "url":
        return st.sampled_from(["prod", "stg", "https://evalrdl.internal.example"])
    parts = [part.strip() for part in (annotation or "None").split("|")]
    return st.one_of([_SCALARS.get(part, st.none()) for part in parts])


@st.composite
def calls(draw: st.DrawFn, run_dir: str) -> dict[str, Any]:
    """A call of one target, mostly well-formed; sometimes missing an argument or with one too many."""
    target = draw(st.sampled_from(TARGETS))
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for parameter in MANIFEST["entries"][target]["parameters"]:
        if parameter["has_default"] and draw(st.booleans()):
            continue
        if not parameter["has_default"] and draw(st.integers(0, 9)) == 0:
            continue  # drop a required argument
        value = draw(_value(parameter["name"], parameter["annotation"], run_dir))
        if parameter["kind"] == "POSITIONAL_OR_KEYWORD" and not kwargs and draw(st.booleans()):
            args.append(value)
        else:
            kwargs[parameter["name"]] = value
    if draw(st.integers(0, 9)) == 0:
        kwargs["bogus_option"] = 1
    return {"target": target, "name": target, "args": args, "kwargs": kwargs}


@pytest.fixture
def probe_environments(evalrdl_sdk, fake_evalrdl_wheelhouse: Path):
    """The fake's environment, and the real SDK's with --with_evalrdl_sdk."""
    (wheel,) = fake_evalrdl_wheelhouse.glob("evalrdl-*.whl")
    fake = ensure_environment(EnvironmentSpec("evalrdl-probe", (str(wheel),)))
    real = None
    if evalrdl_sdk.real:
        from evalexport.isolation import EnvironmentBuildError

        try:
            real = ensure_environment(EnvironmentSpec("evalrdl", ("evalrdl>=0.0.241",)))
        except EnvironmentBuildError as error:
            pytest.fail(
                "--with_evalrdl_sdk asks for the real evalrdl SDK, and your index settings do "
                f"not serve it: {str(error)[-300:]}",
                pytrace=False,
            )
    return fake, real


def _outcomes(environment, batch: list[dict[str, Any]]) -> list[str]:
    outcome = run_worker(environment, PROBE, {"calls": batch}, time_limit=300)
    assert outcome.result is not None, outcome.log_tail()
    return list(outcome.result["details"]["outcomes"])


def test_calls_end_the_same_way_on_the_fake_and_the_real_signature(
    probe_environments, sample_run, monkeypatch
) -> None:
    # These calls are malformed on purpose: keep them out of the log the binding check reads.
    monkeypatch.delenv("EVALRDL_FAKE_CALL_LOG", raising=False)
    fake, real = probe_environments
    run_dir = str(sample_run.run.run_dir)

    @settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.lists(calls(run_dir), min_size=15, max_size=15))
    def check(batch: list[dict[str, Any]]) -> None:
        fake_outcomes = _outcomes(fake, batch)
        for call, outcome in zip(batch, fake_outcomes, strict=True):
            refused_by_signature = bind_call(MANIFEST, call) is not None
            assert (outcome == "raised builtins.TypeError") == refused_by_signature, (call, outcome)
        if real is not None:
            assert _outcomes(real, batch) == fake_outcomes

    check()
