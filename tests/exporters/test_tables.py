"""The rollouts table (``tables/rollouts.py``): a long rollout is written piece by piece, into
the same text, and no export holds more copies of a long line than reading it takes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalexport.tables import rollouts as tables


def _json_values(scalars: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    """Rows built of ``scalars`` and texts, nested in lists and objects."""
    return st.recursive(
        scalars | st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=8), children, max_size=4)
        ),
        max_leaves=30,
    )


JSON_VALUES = _json_values(st.none() | st.booleans() | st.integers() | st.floats())


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(row=JSON_VALUES)
def test_a_row_written_in_pieces_is_the_cell_written_whole(row, monkeypatch) -> None:
    monkeypatch.setattr(tables, "_PIECE", 3)  # every string longer than 3 is cut
    whole = json.dumps(
        json.dumps(row, ensure_ascii=False, separators=(",", ":")), ensure_ascii=False
    )
    assert "".join(tables._escaped_pieces(row)) == whole[1:-1]


STRICT_JSON_VALUES = _json_values(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([1e16, 1e-7, 1.5e-5, 1.7976931348623157e308, 5e-324, -0.0, 10**40])
)
"""What a line msgspec reads can hold: JSON without NaN, infinities or lone surrogates."""


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(row=STRICT_JSON_VALUES)
def test_a_strict_row_is_written_by_msgspec_with_the_values_json_writes(row, monkeypatch) -> None:
    """The cell of a row read as strict JSON holds the same values as ``json``'s would; only
    an exponent may be spelled otherwise (``1e16`` for ``1e+16``). Written in pieces, it is the
    same text as written whole."""
    import msgspec

    text = tables._compact(row, strict_json=True)
    assert text == msgspec.json.encode(row).decode()
    assert json.loads(text) == json.loads(tables._compact(row, strict_json=False)) == row
    monkeypatch.setattr(tables, "_PIECE", 3)
    pieces = "".join(tables._escaped_pieces(row, strict_json=True))
    assert pieces == json.dumps(text, ensure_ascii=False)[1:-1]


def test_a_row_json_alone_reads_keeps_its_nan_and_its_lone_surrogate(tmp_path) -> None:
    """A line msgspec refuses (``NaN``, a lone surrogate) is read by ``json``, and its cell is
    ``json``'s: msgspec would write ``null`` for the NaN and refuse the surrogate."""
    from evalexport.reading.rollouts import Rollout

    row = {"score": float("nan"), "text": "\ud800", "big": 1e16}
    table = tables.write_table_rows([Rollout(1, row, 40)], tmp_path / "t.json", None)
    (cell,) = json.loads(table.read_text(encoding="utf-8"))["data"][0]
    assert cell == '{"score":NaN,"text":"\ud800","big":1e+16}'


def test_a_value_msgspec_cannot_write_falls_back_to_json(tmp_path) -> None:
    """A record said to be strict that is not (a hook put a lone surrogate in it): json's
    cell, never a failed export."""
    from evalexport.reading.rollouts import Rollout

    rollout = Rollout(1, {"text": "\ud800", "n": 1e16}, 20, strict_json=True)
    table = tables.write_table_rows([rollout], tmp_path / "t.json", None)
    (cell,) = json.loads(table.read_text(encoding="utf-8"))["data"][0]
    assert cell == '{"text":"\ud800","n":1e+16}'


def test_a_line_msgspec_reads_is_written_by_msgspec(make_sample_run, tmp_path) -> None:
    sample = make_sample_run(agents=("aime24_math_tool_agent",))
    lines = sample.rollouts.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    record["tiny"] = 1e-7
    lines[0] = json.dumps(record)
    sample.rollouts.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert next(sample.run.iter_rollouts()).strict_json
    table = tables.write_rollouts_table(sample.run, tmp_path / "t.json")
    (cell,) = json.loads(table.read_text(encoding="utf-8"))["data"][0]
    assert cell.endswith(',"tiny":1e-7}')  # msgspec's spelling; json's is 1e-07
    assert json.loads(cell)["tiny"] == 1e-7


def test_a_table_with_a_long_rollout_is_the_same_file_either_way(
    make_sample_run, tmp_path, monkeypatch
) -> None:
    sample = make_sample_run()
    lines = sample.rollouts.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    record["note"] = 'a "quoted"\\ line\nwith \u00e9 and \U0001f600 ' * 20_000
    lines[0] = json.dumps(record, ensure_ascii=False)
    sample.rollouts.write_text("\n".join(lines) + "\n", encoding="utf-8")
    whole = tables.write_rollouts_table(sample.run, tmp_path / "whole.json").read_bytes()
    monkeypatch.setattr(tables, "STREAMED_ABOVE", 1000)
    monkeypatch.setattr(tables, "_PIECE", 4096)
    pieces = tables.write_rollouts_table(sample.run, tmp_path / "pieces.json").read_bytes()
    assert pieces == whole
    assert json.loads(whole)["data"][0] == [
        json.dumps(tables.rollout_for_export(record), ensure_ascii=False, separators=(",", ":"))
    ]


# Peak resident memory of this process since the reset (VmHWM after clear_refs 5): not the
# process's rusage, which Linux carries over from the parent across exec.
PEAK_OF = """
import json, sys
from pathlib import Path
from evalexport.run import RunArtifacts
from evalexport.tables.rollouts import write_rollouts_table
run = RunArtifacts.from_rollouts_path(sys.argv[1])

def high_water():
    status = Path("/proc/self/status").read_text()
    return int(next(l for l in status.splitlines() if l.startswith("VmHWM")).split()[1]) * 1024

Path("/proc/self/clear_refs").write_text("5")
before = high_water()
if sys.argv[2] == "read":
    for _ in run.iter_rollouts():
        pass
else:
    write_rollouts_table(run, Path(sys.argv[3]))
print(high_water() - before)
"""


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's /proc")
def test_a_long_line_costs_the_table_no_more_memory_than_reading_it(
    make_sample_run, tmp_path
) -> None:
    """What bounds an export's memory is the longest line: reading it holds its bytes or its
    text, and the parsed record (about 2x the line); the table may add nothing to that."""
    sample = make_sample_run()
    lines = sample.rollouts.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    record["response"]["output"][0]["content"][0]["text"] = "Check once more. " * 2_000_000
    lines[0] = json.dumps(record)
    sample.rollouts.write_text("\n".join(lines) + "\n", encoding="utf-8")
    line = len(lines[0])
    del lines, record

    def growth(*how: str) -> int:
        completed = subprocess.run(
            [sys.executable, "-c", PEAK_OF, str(sample.rollouts), *how],
            capture_output=True,
            text=True,
            check=True,
        )
        return int(completed.stdout)

    reading = growth("read")
    table = growth("table", str(tmp_path / "rollouts.json"))
    assert reading < 2.6 * line, f"reading holds {reading / line:.2f}x the line"
    assert table < reading + 0.3 * line, f"the table holds {table / line:.2f}x the line"


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "in pieces"])
def test_every_secret_the_export_knows_is_masked_in_both_tables(
    make_sample_run, tmp_path, monkeypatch, streamed
) -> None:
    """A token the export was given, or a secret-named variable holds, pasted into a prompt
    and a final answer, reaches neither Gym's table nor the samples table; a secret whose JSON
    form differs (a quote in it) neither; every other cell is as the rollout holds it."""
    from evalexport.masking.scrubbing import known_secrets
    from evalexport.tables.samples import SamplesTable

    given = 'tok-given-7c1e9a"quoted'
    monkeypatch.setenv("EVAL_SERVICE_TOKEN", "envsecret-5d2b8f0a")
    sample = make_sample_run()
    lines = sample.rollouts.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    record["responses_create_params"]["input"][0]["content"] += f" {given} envsecret-5d2b8f0a"
    record["response"]["output"][-1]["content"][0]["text"] += f" {given} envsecret-5d2b8f0a"
    lines[0] = json.dumps(record, ensure_ascii=False)
    sample.rollouts.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if streamed:
        monkeypatch.setattr(tables, "STREAMED_ABOVE", 100)
        monkeypatch.setattr(tables, "_PIECE", 7)  # the secrets are longer than a piece

    samples = SamplesTable(tmp_path)
    with known_secrets([given]):
        table = tables.write_table_rows(
            samples.rows(sample.run.iter_rollouts()), tmp_path / "t.json"
        )
    samples.write(tmp_path / "samples.json")

    for path in (table, tmp_path / "samples.json"):
        text = path.read_text(encoding="utf-8")
        assert "envsecret-5d2b8f0a" not in text, path.name
        assert "tok-given-7c1e9a" not in text, path.name
        assert "****" in text, path.name
    cells = [json.loads(row[0]) for row in json.loads(table.read_text())["data"]]
    assert len(cells) == len(lines)
    assert cells[1] == tables.rollout_for_export(json.loads(lines[1]))  # untouched


def test_the_read_masks_both_tables_through_the_gate_the_export_made_once(
    make_sample_run, monkeypatch
) -> None:
    """Resolved once and handed down: the rollouts table and the samples table pass the one
    gate the export made (the secrets it knows asked for once, before the read), and both
    mask."""
    from evalexport.egress import Egress, gate, sending
    from evalexport.masking.scrubbing import known_secrets
    from evalexport.tables.prepare import prepare

    sample = make_sample_run()
    lines = sample.rollouts.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    record["response"]["output"][-1]["content"][0]["text"] += " tok-once-4e8a1c"  # both tables
    lines[0] = json.dumps(record, ensure_ascii=False)
    sample.rollouts.write_text("\n".join(lines) + "\n", encoding="utf-8")
    asked: list[int] = []
    known = gate.secrets_known

    def counted() -> list[str]:
        asked.append(1)
        return known()

    monkeypatch.setattr(gate, "secrets_known", counted)
    with known_secrets(["tok-once-4e8a1c"]):
        the_gate = Egress()
    with sending(the_gate):
        prepared = prepare(sample.run, rollouts_table=True)
    try:
        assert len(asked) == 1
        assert the_gate.rows_masked().rows == 1  # one rollout, in both tables
        assert prepared.rollouts_table is not None
        for path in (prepared.rollouts_table, prepared.rollouts_table.with_name("samples.json")):
            text = path.read_text(encoding="utf-8")
            assert "tok-once-4e8a1c" not in text, path.name
            assert "****" in text, path.name
    finally:
        prepared.discard()
