"""SDK contracts: the surface each worker uses (``surfaces.py``), manifests of real SDK
releases and the drift checks between them and the fakes (``check.py``, ``drift.py``), and the
fakes' recorded calls held to the real signatures (``recorded.py``). See ``contracts/README.md``.
"""
