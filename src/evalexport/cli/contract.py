"""``evalexport contract manifest|check|verify SDK``: SDK contracts (see ``contracts/``)."""

from __future__ import annotations

import json
from pathlib import Path

from evalexport.cli._args import OK, Arguments, usage_error

SUMMARY = "SDK contracts: 'contract manifest|check|verify SDK' (see contract --help)"
VALUE_FLAGS = ("--requirement", "--fake", "--contracts")
FLAGS = VALUE_FLAGS

HELP = """usage: evalexport contract manifest SDK [--fake PATH | --requirement REQ]
       evalexport contract check SDK [--fake PATH] [--contracts DIR]
       evalexport contract verify SDK [--requirement REQ] [--contracts DIR]

manifest  print the surface manifest (parameters, defaults, annotations, what the worker reads
          back, exception bases, version) of SDK as it is installed here, in a fake's source
          tree (--fake fakes/evalrdl/src), or in a new environment built from a requirement
          (--requirement mlflow==2.22.1)
check     compare the fake's manifest with every committed manifest in DIR/SDK/ (default
          DIR: ./contracts); one finding per line; exit 1 on any finding
verify    check a real release of SDK (installed here, or built from --requirement REQ in a
          new environment) against the committed manifest of its version or, for a version
          with none, the newest one; exit 1 on any change that can break the worker"""


def run(arguments: Arguments, rest: list[str]) -> int:
    """``evalexport contract manifest|check|verify SDK``: printing and exit codes."""
    from evalexport.contracts.drift import (
        ContractError,
        check_fake,
        extract_manifest,
        verify_release,
    )

    help_asked, values = arguments.help, arguments.values
    if help_asked or len(rest) != 2 or rest[0] not in ("manifest", "check", "verify"):
        if help_asked:
            print(HELP)
            return OK
        return usage_error(
            "usage: evalexport contract manifest|check|verify SDK (see contract --help)"
        )
    action, sdk = rest
    fake = Path(values["--fake"]) if "--fake" in values else None
    contracts = Path(values.get("--contracts", "contracts"))
    try:
        if action == "manifest":
            manifest = extract_manifest(sdk, fake=fake, requirement=values.get("--requirement"))
            print(json.dumps(manifest, indent=2, sort_keys=True))
            return OK
        report = (
            check_fake(sdk, contracts, fake)
            if action == "check"
            else verify_release(sdk, contracts, values.get("--requirement"))
        )
    except ContractError as error:
        return usage_error(str(error))
    print("\n".join(report.lines))
    return report.exit_code
