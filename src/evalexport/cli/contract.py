"""``evalexport contract manifest|check|verify|matrix|scaffold``: SDK contracts (see
``contracts/``)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Final

from evalexport.cli._args import OK, Arguments, UsageError

if TYPE_CHECKING:
    from evalexport.contracts.drift import Report

SUMMARY = (
    "SDK contracts: 'contract manifest|check|verify|matrix|scaffold SDK' (see contract --help)"
)
VALUE_FLAGS = ("--requirement", "--fake", "--python", "--contracts", "--manifest", "--out")
SWITCHES = ("--write",)
_WITH_SDK = ("manifest", "check", "verify", "scaffold")
FLAGS = (*VALUE_FLAGS, *SWITCHES)

USAGES = {
    "manifest": "evalexport contract manifest SDK [--fake PATH | --requirement REQ | --python PY]"
    "\n                                        [--write [--contracts DIR]]",
    "check": "evalexport contract check SDK [--fake PATH] [--contracts DIR]",
    "verify": "evalexport contract verify SDK [--requirement REQ | --python PY] [--contracts DIR]",
    "matrix": "evalexport contract matrix [SDK ...] [--contracts DIR]",
    "scaffold": "evalexport contract scaffold SDK (--requirement REQ | --fake PATH | --python PY |"
    "\n                                         --manifest FILE) --out DIR",
}
"""Each subcommand's usage: ``contract SUB --help`` prints its own."""
_TAKES: Final = {
    "manifest": frozenset({"--fake", "--requirement", "--python", "--write", "--contracts"}),
    "check": frozenset({"--fake", "--contracts"}),
    "verify": frozenset({"--requirement", "--python", "--contracts"}),
    "matrix": frozenset({"--contracts"}),
    "scaffold": frozenset({"--requirement", "--fake", "--python", "--manifest", "--out"}),
}
"""The flags each subcommand takes (its usage's): any other is refused, never ignored."""
DESCRIPTIONS = {
    "manifest": """print the surface manifest (parameters, defaults, annotations, what the worker reads
back, exception bases, version) of SDK as it is installed here, in a fake's source tree
(--fake fakes/evalrdl/src), in a new environment built from a requirement (--requirement
mlflow==2.22.1), or as another interpreter imports it (--python /tmp/sdk-copy/bin/python: a
copy installed by hand, for a release whose own pins do not resolve); --write commits it as
DIR/SDK/VERSION.json instead, DIR being --contracts (default: where the exporter keeps its
manifests, in its source tree: never into an installed copy in site-packages). The version
names the file only when it is a version (such as 2.22.1).""",
    "check": """compare the fake's manifest (default: the fake the exporter declares) with every
committed manifest in DIR/SDK/ (default: where the exporter keeps them, else
./contracts/SDK); one finding per line; exit 1 on any finding.""",
    "verify": """check a real release of SDK (installed here, built from --requirement REQ in a new
environment, or the copy --python PY imports) against the committed manifest of its version
or, for a version with none, the newest one; exit 1 on any change that can break the worker.
It takes no --fake: a fake is 'contract check'.""",
    "matrix": """every installed exporter's SDK (or those named): an SDK with a fake has its fake
checked against its manifests (its real releases are 'contract verify SDK --requirement
SDK==VERSION' each, from the index); one without has each release it has a committed
manifest of verified, each in a new environment, from the index.""",
    "scaffold": """write an installable fake of SDK into the new directory DIR, from the surface the
exporter declares as a real release has it (--requirement tinytrack==1.0, or --python PY),
as a fake's source tree has it (--fake), or as a committed manifest records it (--manifest
contracts/SDK/VERSION.json): every name with the real signatures, exception bases and the
attributes the worker reads, every call and read recorded (each call a {"kind": "call"}
line of the call log, each attribute read back a {"kind": "read"} line), the behaviour left
as stubs marked SCAFFOLD:. 'contract check SDK --fake DIR/src' finds no drift in it as
written.""",
}
_SURFACE_NOTE = """SDK is one an installed exporter declares (its sdk.contract: built-in or plugin). Only
what the surface uses counts, in every command: its paths (what the worker calls, builds and
catches) and, of each class its reads name, those attributes (docs/plugins.md, "What the
worker reads"); a release that drops what the worker never touches passes."""


def _help(subcommand: str | None) -> str:
    """``contract --help`` (every subcommand), or one subcommand's own."""
    if subcommand in USAGES:
        return f"usage: {USAGES[subcommand]}\n\n{DESCRIPTIONS[subcommand]}\n\n{_SURFACE_NOTE}"
    usage = "usage: " + "\n       ".join(USAGES.values())
    described = "\n".join(
        f"{name:<9} " + " ".join(text.split()) for name, text in DESCRIPTIONS.items()
    )
    return f"{usage}\n\n{_SURFACE_NOTE}\n\n{described}"


HELP = _help(None)


def run(arguments: Arguments, rest: list[str]) -> int:
    """``evalexport contract manifest|check|verify SDK``: printing and exit codes."""
    from evalexport.contracts.drift import (
        ContractError,
        check_fake,
        check_matrix,
        extract_manifest,
        manifest_home,
        verify_release,
    )
    from evalexport.contracts.scaffold_input import version_problem
    from evalexport.host.files import write_text_atomically
    from evalexport.ingress import child

    help_asked, values = arguments.help, arguments.values
    matrix = rest[:1] == ["matrix"]
    if help_asked or not (matrix or (len(rest) == 2 and rest[0] in _WITH_SDK)):
        if help_asked:
            print(_help(rest[0] if rest else None))
            return OK
        unknown = rest[0] if rest and rest[0] not in (*_WITH_SDK, "matrix") else None
        raise UsageError(
            (f"unknown contract command {unknown!r}; " if unknown else "")
            + "usage: evalexport contract manifest|check|verify|scaffold SDK, or contract matrix"
        )
    subcommand = "matrix" if matrix else rest[0]
    given = set(values) | set(arguments.switches)
    if refused := sorted(given - _TAKES[subcommand]):
        raise UsageError(
            f"contract {subcommand} takes no {', '.join(refused)}: "
            f"usage: {' '.join(USAGES[subcommand].split())}"
        )
    contracts = Path(values["--contracts"]) if "--contracts" in values else None
    if matrix:
        try:
            report = check_matrix(contracts, rest[1:])
        except ContractError as error:
            raise UsageError(str(error)) from None
        return _reported(report, arguments)
    action, sdk = rest
    fake = Path(values["--fake"]) if "--fake" in values else None
    if action == "scaffold":
        return _scaffold(sdk, values)
    try:
        if action == "manifest":
            manifest = extract_manifest(
                sdk,
                fake=fake,
                requirement=values.get("--requirement"),
                python=_python(values),
                alternatives="--fake PATH, --requirement REQ or --python PY",
            )
            text = json.dumps(manifest, indent=2, sort_keys=True)
            if "--write" not in arguments.switches:
                print(text)
                return OK
            # The version is the SDK's own __version__: it names a file only once it is one
            # name of a version (the ingress gate's rule for names, and the scaffold's).
            if (problem := version_problem(manifest["version"])) is not None:
                raise UsageError(f"cannot write the manifest of {sdk}: {problem}")
            home = manifest_home(sdk, contracts)
            written = child(home, f"{manifest['version']}.json", named_by="the SDK's version")
            written.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomically(written, text + "\n")
            here = Path.cwd()
            print(f"wrote {written.relative_to(here) if written.is_relative_to(here) else written}")
            return OK
        report = (
            check_fake(sdk, contracts, fake)
            if action == "check"
            else verify_release(sdk, contracts, values.get("--requirement"), _python(values))
        )
    except ContractError as error:
        raise UsageError(str(error)) from None
    return _reported(report, arguments)


def _reported(report: Report, arguments: Arguments) -> int:
    """Print ``report``'s lines; its exit code, decided."""
    arguments.decide(report.exit_code)
    print("\n".join(report.lines))
    return report.exit_code


def _python(values: dict[str, str]) -> Path | None:
    return Path(values["--python"]).absolute() if "--python" in values else None


def _scaffold(sdk: str, values: dict[str, str]) -> int:
    """``contract scaffold SDK (--requirement | --fake | --manifest) --out DIR``."""
    from evalexport.contracts.check import ContractError, load_manifest
    from evalexport.contracts.drift import extract_manifest, surface_of
    from evalexport.contracts.scaffold import ScaffoldError, write_scaffold

    flags = ("--requirement", "--fake", "--python", "--manifest")
    sources = [flag for flag in flags if flag in values]
    if len(sources) != 1 or "--out" not in values:
        raise UsageError(
            "contract scaffold SDK takes one of --requirement REQ, --fake PATH, --python PY or "
            "--manifest FILE, and --out DIR"
        )
    out = Path(values["--out"])
    try:
        if "--manifest" in values:
            manifest = load_manifest(Path(values["--manifest"]))
        else:
            manifest = extract_manifest(
                sdk,
                fake=Path(values["--fake"]) if "--fake" in values else None,
                requirement=values.get("--requirement"),
                python=_python(values),
            )
    except ContractError as error:
        raise UsageError(str(error)) from None
    if manifest["sdk"] != sdk:
        raise UsageError(f"the manifest is of {manifest['sdk']!r}, not {sdk}")
    # The fake holds what the worker uses (of each class it reads, those reads); with no
    # installed exporter declaring the SDK, the manifest's whole surface.
    surface = None
    with contextlib.suppress(ContractError):
        surface = surface_of(sdk)
    try:
        scaffold = write_scaffold(manifest, out, surface)
    except ScaffoldError as error:
        raise UsageError(str(error)) from None
    except OSError as error:
        raise UsageError(f"cannot scaffold into {out}: {error}") from None
    print(
        f"wrote a fake {sdk} {manifest['version']} in {scaffold.project} ({len(scaffold.files)} "
        f"files; its source root is {scaffold.source_root})"
    )
    print("next:")
    print(f"  fill in each stub:   grep -rn SCAFFOLD: {scaffold.source_root}")
    print(f"  check it:            evalexport contract check {sdk} --fake {scaffold.source_root}")
    print(f"  install it:          pip install {scaffold.project}")
    for note in scaffold.notes:
        print(f"note: {note}")
    return OK
