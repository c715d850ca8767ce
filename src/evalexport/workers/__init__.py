"""Code that runs inside an SDK's environment, with the standard library and the SDK only.

Nothing here imports the rest of evalexport: the launcher copies ``runner.py``,
``protocol.py`` (the payload and result types, the exit codes) and one worker body into an
empty directory and runs ``<env>/bin/python -I runner.py``, so no module of ours can shadow the
SDK and no module of the SDK's environment needs evalexport. The runner makes the copy of
``protocol.py`` importable as ``evalexport.workers.protocol``, the name the bodies use.
"""

from pathlib import Path

WORKER_BODIES = Path(__file__).resolve().parent
"""Where the built-in exporters' worker bodies live: ``<name>_worker.py``."""
