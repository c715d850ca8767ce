"""ATIF trajectory files: the exporter (no SDK; the conversion is :mod:`evalexport.trajectory`)."""
