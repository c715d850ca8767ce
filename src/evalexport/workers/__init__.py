"""The wire between evalexport and a worker in an SDK's environment, standard library only.

Nothing here imports the rest of evalexport: the launcher copies ``runner.py``,
``protocol.py`` (the payload and result types, the exit codes) and one worker body (each
backend keeps its own: ``evalexport/backends/<name>/worker.py``) into an empty directory and runs ``<env>/bin/python -I runner.py``, so no module of ours can shadow the
SDK and no module of the SDK's environment needs evalexport. The runner makes the copy of
``protocol.py`` importable as ``evalexport.workers.protocol``, the name the bodies use.
"""

from pathlib import Path

WORKER_BODIES = Path(__file__).resolve().parent
"""This directory (the runner and the protocol). Plugin API 2 and 3 exported it; the
built-ins' bodies are now in their backends (``evalexport/backends/<name>/worker.py``)."""
