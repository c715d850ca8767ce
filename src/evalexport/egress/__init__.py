"""The egress gate (SPEC §2, "What leaves"): everything an export sends to a service passes one
masking function, :func:`~evalexport.masking.values.mask_value`, through one object, the
export's :class:`Egress`, made by the pipeline and applied by it.

Two ways out, one door: what the read writes for the service (the rollouts and samples tables,
the traces, the copies of the run's config, metrics and health files) is masked as it is
written, through the gate the pipeline made for the export (:func:`current`); what the
delivery hands the worker (params, tags, metric names, config, summary, a job's identity) is
masked by the pipeline at the door (:meth:`Egress.payload`), but for the payload keys the
delivery names as addresses (where to send, which local files to read), which the worker needs
as they are.
"""

from __future__ import annotations

from evalexport.egress.gate import (
    Egress,
    RowsMasked,
    SecretScan,
    current,
    sending,
)

__all__ = ["Egress", "RowsMasked", "SecretScan", "current", "sending"]
