"""The ingress gate (SPEC §1, "What is read"): everything evalexport reads from a run, a job,
a plan or a manifest passes one way in. Paths named by data stay inside their root
(:mod:`.paths`); YAML and JSON documents are read by one loader each, bounded in depth and, for
YAML, in what aliases add (:mod:`.documents`); files are opened only when they are regular
(:func:`~evalexport.host.files.open_regular`, below this package). Text from data never becomes
code: what a manifest says is parsed into values, and only values are written
(:mod:`evalexport.contracts.scaffold_input`)."""

from __future__ import annotations

from evalexport.ingress.documents import (
    MAX_ALIAS_NODES,
    MAX_DEPTH,
    DocumentRefused,
    depth_problem,
    load_json,
    load_yaml,
    one_of,
)
from evalexport.ingress.paths import (
    MAX_NAME_BYTES,
    AbsoluteNameRefused,
    LeavesRootRefused,
    LinkLeavesRootRefused,
    NameTooLongRefused,
    PathRefused,
    child,
    inside,
)

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "MAX_NAME_BYTES",
    "AbsoluteNameRefused",
    "DocumentRefused",
    "LeavesRootRefused",
    "LinkLeavesRootRefused",
    "NameTooLongRefused",
    "PathRefused",
    "child",
    "depth_problem",
    "inside",
    "load_json",
    "load_yaml",
    "one_of",
]
