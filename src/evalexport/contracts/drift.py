"""Extract manifests and check for drift: what ``evalexport contract manifest|check|verify``
returns (the CLI prints it, ``evalexport.cli.contract``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import final

from evalexport.contracts.check import (
    ContractError,
    Finding,
    Sides,
    apply_allowlist,
    compare_manifests,
    load_allowlist,
    load_manifests,
)
from evalexport.contracts.installed import installed_surfaces
from evalexport.contracts.narrowing import (
    narrowed,
    unread_findings,
    where_found,
    whole_class_note,
)
from evalexport.contracts.surface_extractor import ManifestPayload
from evalexport.contracts.surfaces import Surface
from evalexport.isolation.environments import Environment

__all__ = [
    "ContractError",
    "Report",
    "check_fake",
    "check_matrix",
    "extract_manifest",
    "fake_findings",
    "manifest_home",
    "surface_of",
    "verify_release",
]

EXTRACTOR = Path(__file__).resolve().parent / "surface_extractor.py"

_FROM_TREE = """
import json, runpy, sys
sys.path.insert(0, sys.argv[1])
extractor = runpy.run_path(sys.argv[2])
print(json.dumps(extractor["extract"](sys.argv[3], json.loads(sys.argv[4]))))
"""


@final
@dataclass
class Report:
    """What a contract command found: the lines it prints and the findings behind them."""

    lines: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """1 on any finding, else 0."""
        return 1 if self.findings else 0


def _found(findings: list[Finding]) -> str:
    return f"Found {len(findings)} error{'' if len(findings) == 1 else 's'}"


def surface_of(sdk: str) -> Surface:
    """The surface an installed exporter declares for ``sdk`` (its ``sdk.contract``)."""
    surfaces = installed_surfaces()
    try:
        return surfaces[sdk]
    except KeyError:
        raise ContractError(
            f"unknown SDK {sdk!r}: no installed exporter declares it (sdk.contract); known: "
            f"{', '.join(surfaces) or 'none'}"
        ) from None


def extract_manifest(
    sdk: str,
    *,
    fake: Path | None = None,
    requirement: str | tuple[str, ...] | None = None,
    python: Path | None = None,
    alternatives: str = "--requirement REQ or --python PY",
) -> dict[str, object]:
    """The manifest of ``sdk`` from a source tree, a new environment, an installed copy (the
    interpreter ``python`` imports it: any environment it is installed in, however it got
    there), or this interpreter. ``alternatives``: the flags the asking command takes to name
    another, said when ``sdk`` is not installed here."""
    surface = surface_of(sdk)
    if python is not None:
        return _extract_with(surface, _installed(python))
    if fake is not None:
        if not (fake / sdk).is_dir():
            raise ContractError(
                f"{fake} holds no package {sdk!r}; pass the fake's source root (e.g. fakes/{sdk}/src)"
            )
        completed = subprocess.run(
            [
                sys.executable,
                "-c",
                _FROM_TREE,
                str(fake),
                str(EXTRACTOR),
                sdk,
                json.dumps(list(surface.extracted)),
            ],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, **surface.environment},
        )
        if completed.returncode != 0:
            raise ContractError(f"extracting {sdk} from {fake} failed:\n{completed.stderr[-2000:]}")
        manifest: dict[str, object] = json.loads(completed.stdout)
        return manifest
    if requirement is not None:
        return _extract_in_environment(surface, requirement)
    import runpy

    for key, value in surface.environment.items():
        os.environ.setdefault(key, value)
    try:
        extracted: dict[str, object] = runpy.run_path(str(EXTRACTOR))["extract"](
            sdk, list(surface.extracted)
        )
    except ImportError as error:
        raise ContractError(
            f"{sdk} is not installed here ({error}); run this inside an environment that has it, "
            f"or pass {alternatives}"
        ) from None
    return extracted


def _extract_in_environment(
    surface: Surface, requirement: str | tuple[str, ...]
) -> dict[str, object]:
    from evalexport.isolation import EnvironmentBuildError, EnvironmentSpec, ensure_environment

    requirements = (requirement,) if isinstance(requirement, str) else requirement
    try:
        environment = ensure_environment(EnvironmentSpec(f"contract-{surface.sdk}", requirements))
    except EnvironmentBuildError as error:
        raise ContractError(
            f"{error}\n{_from_an_installed_copy(surface.sdk, requirements)}"
        ) from None
    return _extract_with(surface, environment)


def _from_an_installed_copy(sdk: str, requirements: tuple[str, ...]) -> str:
    """What to do when a release's environment cannot be built from the index: make its
    manifest from a copy installed by hand (a release whose own pins do not resolve yet,
    ``mlflow==3.18.0`` pinning an unpublished ``mlflow-tracing``)."""
    release = requirements[0]
    return (
        f"If {release} itself installs but its pins do not resolve on your index, make its "
        "manifest from a copy installed by hand and pass that interpreter with --python "
        "(manifest, verify and scaffold take it):\n"
        "  python -m venv /tmp/sdk-copy\n"
        f"  /tmp/sdk-copy/bin/pip install --no-deps '{release}'\n"
        "  /tmp/sdk-copy/bin/pip install ...  # the packages its import then asks for\n"
        f"  evalexport contract verify {sdk} --python /tmp/sdk-copy/bin/python\n"
        f"  evalexport contract manifest {sdk} --python /tmp/sdk-copy/bin/python --write\n"
        '(contracts/README.md, "A release whose pins do not resolve")'
    )


def _installed(python: Path) -> Environment:
    """The virtual environment whose interpreter is ``python``: one the SDK is installed in."""
    environment = Environment(python.parent.parent, {"exporter": "contract"})
    if not python.is_file() or not environment.python.is_file():
        raise ContractError(
            f"{python} is not the python of a virtual environment; pass ENV/bin/python of "
            "the environment the release is installed in (python -m venv ENV)"
        )
    return environment


def _extract_with(surface: Surface, environment: Environment) -> dict[str, object]:
    from evalexport.isolation import run_worker

    payload: ManifestPayload = {
        "sdk": surface.sdk,
        "surface": list(surface.extracted),
        "environment": surface.environment,
    }
    outcome = run_worker(environment, EXTRACTOR, payload, time_limit=600)
    manifest = outcome.result.get("output") if outcome.result else None
    if manifest is None or outcome.result is None or outcome.result["status"] != "succeeded":
        raise ContractError(
            f"extracting {surface.sdk} in {environment.path} failed: {outcome.log_tail()}"
        )
    return manifest


def manifest_home(sdk: str, contracts: Path | None = None) -> Path:
    """Where new manifests of ``sdk`` are written: ``contracts/<sdk>`` when ``contracts`` is
    given, else where its exporter keeps them. An exporter used from its source tree (a
    checkout, an editable install) keeps them there; one installed as a copy (site-packages)
    has them written into the source tree it was installed from (its ``direct_url.json``),
    never into the copy."""
    directory = surface_of(sdk).manifest_directory(contracts).absolute()
    if contracts is not None:
        return directory
    owner = _installed_copy_of(directory)
    if owner is None:
        return directory
    root, project = owner
    if project is None:
        raise ContractError(
            f"the manifests of {sdk} live in an installed copy of its exporter ({directory}); "
            "new manifests belong in your project's source tree: pass --contracts DIR (the "
            f"directory holding {sdk}/), or install the exporter from its source tree "
            "(pip install -e .)"
        )
    relative = directory.relative_to(root)
    candidates = [project / relative, project / "src" / relative]
    return next((c for c in candidates if c.parent.is_dir()), candidates[0])


def _installed_copy_of(directory: Path) -> tuple[Path, Path | None] | None:
    """``(the directory it was installed into, the local source tree it came from, if any)``
    when an installer put ``directory`` where it is (a distribution's RECORD lists files in
    it); ``None`` when it is a source tree."""
    import importlib.metadata
    from urllib.parse import unquote, urlparse

    for distribution in importlib.metadata.distributions():
        root = Path(str(distribution.locate_file(""))).absolute()
        if not directory.is_relative_to(root):
            continue
        listed = (
            Path(str(distribution.locate_file(file))).absolute()
            for file in distribution.files or []
        )
        if not any(path.is_relative_to(directory) for path in listed):
            continue
        origin = json.loads(distribution.read_text("direct_url.json") or "{}")
        url = urlparse(str(origin.get("url", "")))
        editable = bool(origin.get("dir_info", {}).get("editable"))
        local = url.scheme == "file" and not editable and Path(unquote(url.path)).is_dir()
        return root, Path(unquote(url.path)) if local else None
    return None


def check_fake(sdk: str, contracts: Path | None = None, fake: Path | None = None) -> Report:
    """The fake's manifest against every committed manifest of the real SDK.

    ``contracts``: a directory holding ``<sdk>/`` (default: where the surface keeps its
    manifests); ``fake``: the fake's source root (default: the surface's ``fake``)."""
    surface = surface_of(sdk)
    if surface.fake is None:
        raise ContractError(f"{sdk} has no fake to check; use 'evalexport contract verify {sdk}'")
    directory = surface.manifest_directory(contracts)
    manifests = load_manifests(directory)
    if not manifests:
        raise ContractError(f"no committed manifests in {directory}")
    fake_manifest = extract_manifest(sdk, fake=fake or Path(surface.fake))
    found = fake_findings(
        [narrowed(m, surface) for m in manifests], narrowed(fake_manifest, surface)
    )
    unread: dict[Finding, list[str]] = {}
    for manifest in manifests:
        for finding in unread_findings(manifest, surface, _REAL):
            unread.setdefault(finding, []).append(str(manifest["version"]))
    found += [
        replace(finding, message=finding.message.replace(_REAL, f"real {', '.join(versions)}"))
        for finding, versions in unread.items()
    ]
    findings = apply_allowlist(found, load_allowlist(directory), sdk)
    versions = ", ".join(str(m["version"]) for m in manifests)
    report = Report(findings=findings)
    report.lines = [finding.line() for finding in findings]
    report.lines += whole_class_note(findings, surface)
    report.lines.append(
        f"{_found(findings) if findings else 'Success: no drift'} "
        f"(fake {sdk} {fake_manifest['version']} against real {versions})"
    )
    return report


_REAL = "\0real\0"


def fake_findings(manifests: list[dict[str, object]], fake: dict[str, object]) -> list[Finding]:
    """What ``fake`` gets wrong about the real SDK, each problem once: a difference that every
    manifest it shows in words alike is one finding naming those versions (``real 0.0.241,
    0.0.250``), so a faithful new manifest adds no finding of its own."""
    sides = Sides(_REAL, "the fake", exact=True)
    versions: dict[Finding, list[str]] = {}
    for real in manifests:
        for finding in compare_manifests(real, fake, sides):
            versions.setdefault(finding, []).append(str(real["version"]))
    return [
        replace(finding, message=finding.message.replace(_REAL, f"real {', '.join(found)}"))
        for finding, found in versions.items()
    ]


def verify_release(
    sdk: str,
    contracts: Path | None = None,
    requirement: str | tuple[str, ...] | None = None,
    python: Path | None = None,
) -> Report:
    """A real release of ``sdk`` against the committed manifests: the one of its own version,
    or, for a version with none yet, the newest. Any change that can break the worker is a
    finding, whether or not the version has a committed manifest.

    The release is the one installed here, the one ``requirement`` installs in a new
    environment (``mlflow==3.18.0``, or a wheel's path), or the copy the interpreter
    ``python`` imports (installed by hand, where the release's own pins do not resolve).
    """
    surface = surface_of(sdk)
    directory = surface.manifest_directory(contracts)
    committed = load_manifests(directory)
    if not committed:
        raise ContractError(
            f"no committed manifests in {directory}; extract one first: "
            f"evalexport contract manifest {sdk} --requirement {sdk}==VERSION > {directory}/VERSION.json"
        )
    manifest = extract_manifest(sdk, requirement=requirement, python=python)
    version = str(manifest["version"])
    own = [m for m in committed if str(m["version"]) == version]
    reference = own[0] if own else committed[-1]
    findings = compare_manifests(
        narrowed(reference, surface),
        narrowed(manifest, surface),
        Sides.release(reference, manifest),
    )
    findings += unread_findings(manifest, surface, f"{sdk} {version}")
    against = (
        "its committed manifest"
        if own
        else f"the newest committed manifest, {reference['version']} ({version} has none of its own)"
    )
    report = Report(findings=findings)
    report.lines = [finding.line() for finding in findings]
    report.lines += whole_class_note(findings, surface)
    if findings:
        report.lines.append(
            f"{_found(findings)}: {where_found(findings, surface)}, {sdk} {version} differs from "
            f"{against}. Follow it in the worker and the fake before committing its manifest."
        )
    else:
        report.lines.append(
            f"Success: {sdk} {version} has the worker's surface and matches {against}"
        )
        if not own:
            try:
                home = f"into {manifest_home(sdk, contracts)}"
            except ContractError:
                home = "with --contracts DIR (your project's contracts)"
            given = f" --contracts {contracts}" if contracts is not None else ""
            source = f"--python {python}" if python else f"--requirement {sdk}=={version}"
            report.lines.append(
                f"Commit its manifest {home}: evalexport contract manifest {sdk} {source} "
                f"--write{given}"
            )
    return report


def check_matrix(contracts: Path | None = None, sdks: list[str] | None = None) -> Report:
    """Every installed exporter's SDK contract, derived from what is installed and committed:
    an SDK with a fake has the fake checked against its manifests; one without has each
    release of its committed manifests verified in an environment of its own (with the
    surface's companions). What the tox contract environment runs: a new exporter's SDK is in
    it once its exporter declares ``sdk.contract`` and its manifests are committed.
    ``sdks``: only these (each must be installed)."""
    report = Report()
    surfaces = {sdk: surface_of(sdk) for sdk in sdks} if sdks else installed_surfaces()
    for sdk, surface in surfaces.items():
        if surface.fake is not None:
            checked = [check_fake(sdk, contracts)]
        else:
            versions = [
                str(m["version"]) for m in load_manifests(surface.manifest_directory(contracts))
            ]
            if not versions:
                raise ContractError(
                    f"no committed manifests of {sdk} in {surface.manifest_directory(contracts)}"
                )
            checked = [
                verify_release(sdk, contracts, (f"{sdk}=={version}", *surface.companions))
                for version in versions
            ]
        for part in checked:
            report.findings.extend(part.findings)
            report.lines.extend(f"{sdk}: {line}" for line in part.lines)
    return report
