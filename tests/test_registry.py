"""The exporter registry: built-ins plus the evalexport.exporters entry-point group."""

from __future__ import annotations

import pytest

from evalexport.spec.registry import (
    ExporterLoadError,
    UnknownExporterError,
    exporter_entries,
    load_exporter,
)


def test_plugins_are_found_through_the_entry_point_group(plugin_site) -> None:
    entries = exporter_entries()
    assert entries["recording"].target == "recording_exporter:RecordingExporter"
    assert entries["recording"].source == "plugin recording-exporter"
    assert load_exporter("recording").name == "recording"


def test_listing_exporters_imports_none_of_them(plugin_site) -> None:
    import sys

    sys.modules.pop("recording_exporter", None)
    exporter_entries()
    assert "recording_exporter" not in sys.modules


def test_an_unknown_exporter_names_itself_and_the_available_ones(plugin_site) -> None:
    with pytest.raises(
        UnknownExporterError, match=r"unknown exporter 'nope'; available exporters: .*recording"
    ):
        load_exporter("nope")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("not-an-exporter", "not an evalexport Exporter subclass"),
        ("missing-module", "cannot be loaded from recording_exporter_missing:Exporter"),
    ],
)
def test_a_broken_plugin_is_reported_by_name(plugin_site, name: str, message: str) -> None:
    with pytest.raises(ExporterLoadError, match=message):
        load_exporter(name)


def test_the_registrys_names_still_import_from_the_spec_with_a_warning_naming_their_module() -> (
    None
):
    """0.5.0's door left the registry out of ``evalexport.spec.__all__``; a plugin or script
    that imported its names from there keeps working until 1.0, told where they live."""
    import evalexport.spec

    with pytest.warns(DeprecationWarning, match=r"import it from evalexport\.spec\.registry"):
        moved = evalexport.spec.load_exporter
    assert moved is load_exporter
    assert "load_exporter" not in evalexport.spec.__all__
