"""The SDK surface a worker uses: :class:`~evalexport.spec.sdk.Surface`, declared with its
exporter's :class:`~evalexport.spec.sdk.Sdk`, and imported from here by the contract
checks and by plugins of the 0.3.0 and 0.4.0 guides."""

from __future__ import annotations

from evalexport.spec.sdk import Surface

__all__ = ["Surface"]
