"""The built-in exporters, one package a backend: its exporter (``exporter.py``), its worker
body (``worker.py``, run in the SDK's environment, with its payload type and its ``SURFACE``)
and its own helpers. A backend imports the spec, the tables and the gates, never another
backend (import-linter holds it: ``pyproject.toml``, ``[tool.importlinter]``)."""
