"""The modules that left ``evalexport.exporters`` (#57) import under their old names, the same
module objects, with a ``DeprecationWarning`` naming their home; the spec's names import from
``evalexport.exporters`` as the guides before 0.5 wrote, with no warning."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

from evalexport.exporters import MOVED


@pytest.mark.parametrize(("old", "home"), sorted(MOVED.items()))
def test_a_moved_module_imports_under_its_old_name_with_a_warning(old: str, home: str) -> None:
    code = (
        "import warnings, sys\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as said:\n"
        f"    import evalexport.exporters.{old} as old\n"
        f"import {home} as home\n"
        "assert old is home, (old, home)\n"
        "print([str(w.message) for w in said if w.category is DeprecationWarning])\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    assert f"evalexport.exporters.{old} moved to {home}" in ran.stdout


def test_the_spec_names_import_from_the_old_package_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exporters = importlib.import_module("evalexport.exporters")
        spec = importlib.import_module("evalexport.spec")
        assert exporters.Exporter is spec.Exporter
        assert exporters.WorkerDelivery is spec.WorkerDelivery
        assert set(exporters.__all__) == set(spec.__all__)
