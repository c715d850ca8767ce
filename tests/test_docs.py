"""The docs keep their word: every code block in the README and ``docs/`` is run by a test or
says it is illustrative, every ``SPEC §`` cited is a section of ``docs/SPEC.md``, and nothing
cites a document the repository does not hold.

A block is marked by the HTML comment just before it: ``<!-- tested: tests/PATH.py -->`` (the
test reads this document and runs the block) or ``<!-- illustrative: why -->``. A comment
``<!-- the code blocks of this section run in tests/PATH.py -->`` marks every block up to the
next heading of the same or a higher level.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").rglob("*.md")])
_FENCE = re.compile(r"^```(\w*)\s*$")
_TESTED = re.compile(r"<!-- tested: (\S+) -->")
_SECTION = re.compile(r"<!-- the code blocks of this section run in (\S+) -->")
_ILLUSTRATIVE = re.compile(r"<!-- illustrative(: [^>]*)? -->")


def _blocks(path: Path) -> list[tuple[int, str | None]]:
    """``(line, the test that runs it or None if illustrative or unmarked)`` per code block;
    raises naming a block that is neither."""
    lines = path.read_text().splitlines()
    found: list[tuple[int, str | None]] = []
    section: tuple[int, str] | None = None  # (heading level, test)
    inside = False
    for number, line in enumerate(lines, start=1):
        if inside:
            inside = not line.startswith("```")
            continue
        heading = re.match(r"^(#+) ", line)
        if heading and section is not None and len(heading.group(1)) <= section[0]:
            section = None
        if match := _SECTION.search(line):
            headings = (re.match(r"^(#+) ", text) for text in reversed(lines[:number]))
            level = next((len(h.group(1)) for h in headings if h), 1)
            section = (level, match.group(1))
        if not _FENCE.match(line):
            continue
        inside = True
        before = next((lines[i] for i in range(number - 2, -1, -1) if lines[i].strip()), "")
        if tested := _TESTED.search(before):
            found.append((number, tested.group(1)))
        elif _ILLUSTRATIVE.search(before):
            found.append((number, None))
        elif section is not None:
            found.append((number, section[1]))
        else:
            raise AssertionError(
                f"{path.relative_to(ROOT)}:{number}: a code block that no test runs and that "
                "is not marked illustrative"
            )
    return found


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_code_block_is_run_by_a_test_that_reads_it_or_is_illustrative(path: Path) -> None:
    for line, test in _blocks(path):
        if test is None:
            continue
        test_file = ROOT / test
        assert test_file.is_file(), f"{path.relative_to(ROOT)}:{line}: no test file {test}"
        assert path.name in test_file.read_text(), (
            f"{path.relative_to(ROOT)}:{line}: {test} does not read {path.name}"
        )


def _spec_sections() -> set[str]:
    spec = (ROOT / "docs" / "SPEC.md").read_text()
    return set(re.findall(r"^#+ §([0-9][0-9.a-z]*) ", spec, re.M))


def test_every_spec_section_cited_is_one_of_the_projects_own_spec() -> None:
    sections = _spec_sections()
    cited: dict[str, list[str]] = {}
    for path in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "src").rglob("*.py")]:
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            for section in re.findall(r"§\s?([0-9][0-9.]*[a-z]?)", line):
                cited.setdefault(section.rstrip("."), []).append(
                    f"{path.relative_to(ROOT)}:{number}"
                )
    unknown = {section: where for section, where in cited.items() if section not in sections}
    assert unknown == {}, f"cited but not in docs/SPEC.md: {unknown}"


def test_nothing_cites_a_document_the_repository_does_not_hold() -> None:
    outside = []
    for path in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "src").rglob("*.py")]:
        text = path.read_text()
        if "../shared" in text or "shared/SPEC" in text:
            outside.append(str(path.relative_to(ROOT)))
        for named in re.findall(
            r"`((?:docs|contracts|tests|benchmarks|examples|fakes|scripts)/[\w./-]+\.(?:md|py|sh|toml|json))`",
            text,
        ):
            if not (ROOT / named).exists():
                outside.append(f"{path.relative_to(ROOT)} names {named}")
    assert outside == []


def test_the_testing_guide_lists_every_knob_of_make_sample_run_with_its_type() -> None:
    import inspect

    from evalexport.testing.factory import make_run

    guide = (ROOT / "docs" / "testing.md").read_text()
    cells = [
        re.split(r"(?<!\\)\|", row)
        for row in guide.split("## `make_sample_run`'s knobs", 1)[1].splitlines()
        if row.startswith("| `")
    ]
    table = {cell[1].strip(" `"): cell[2].strip(" `").replace("\\|", "|") for cell in cells}
    knobs = {
        name: str(parameter.annotation)
        for name, parameter in inspect.signature(make_run).parameters.items()
        if name != "directory"
    }
    assert table == knobs
