"""Hydra-style +key=value overrides (SPEC §3.2)."""

from __future__ import annotations

import pytest

from evalexport.spec.options import parse_options, path_options, text_options
from evalexport.spec.overrides import OverrideError, parse_overrides


def test_values_parse_as_yaml_scalars_and_flow_lists() -> None:
    assert parse_overrides(
        [
            "+label=smoke",
            "+tags=[a,b]",
            "+wait=false",
            "+timeout=600",
            "ratio=0.5",
            "+url=https://host/x?y=1",
            "+empty=",
            "+none=null",
            "+day=2026-11-30",
        ]
    ) == {
        "label": "smoke",
        "tags": ["a", "b"],
        "wait": False,
        "timeout": 600,
        "ratio": 0.5,
        "url": "https://host/x?y=1",
        "empty": "",
        "none": None,
        "day": "2026-11-30",
    }


def test_dotted_keys_build_nested_mappings() -> None:
    assert parse_overrides(["+meta.source=manual", "+meta.owner=eval-team"]) == {
        "meta": {"source": "manual", "owner": "eval-team"}
    }


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        (["+label"], "has no '='"),
        (["+=x"], "invalid key ''"),
        (["+a..b=1"], "invalid key 'a..b'"),
        (["+label=a", "label=b"], r"option \+label is given more than once"),
        (["+meta=1", "+meta.source=x"], r"conflicts with \+meta, which is a value"),
        (["+tags=[a,b"], r"override '\+tags=\[a,b': cannot parse the value"),
    ],
)
def test_malformed_overrides_are_refused_by_name(tokens: list[str], message: str) -> None:
    with pytest.raises(OverrideError, match=message):
        parse_overrides(tokens)


@pytest.mark.parametrize(
    "token", ["+meta.api_token=@canarysecret", "+hf_token=[canarysecret", "+hf_token={canarysecret"]
)
def test_a_malformed_secret_option_is_refused_without_echoing_its_value(token: str) -> None:
    with pytest.raises(OverrideError) as raised:
        parse_overrides([token])
    assert "canarysecret" not in str(raised.value)
    assert "****" in str(raised.value)


@pytest.mark.parametrize("value", ["31415926535897932384", "yes", "no", "@at", "a: b", "[x]"])
def test_a_text_option_takes_any_value_as_written(value: str) -> None:
    assert parse_overrides([f"+token={value}"], text_keys={"token"}) == {"token": value}


@pytest.mark.parametrize(
    "written",
    ["/x/traj #2", "/x/run: one/out", "#first/out", "out\nlines", "'quoted'", "1.0", "null"],
)
def test_a_path_option_takes_its_text_as_given(written: str, tmp_path) -> None:
    from evalexport.backends.atif.exporter import AtifExporter

    options = parse_overrides(
        [f"+output_dirpath={written}", "+agent_version=1"],
        text_options(AtifExporter),
        path_options(AtifExporter),
    )
    assert options["output_dirpath"] == written
    config = parse_options(
        AtifExporter, {"rollouts_jsonl_fpath": str(tmp_path / "r.jsonl"), **options}
    )
    assert str(config.output_dirpath) == written
