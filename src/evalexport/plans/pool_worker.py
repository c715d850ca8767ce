"""One export process of a ``plan run`` pool (:mod:`evalexport.plans.pool`).

``python -m evalexport.plans.pool_worker`` reads one task per line on stdin (``{"benchmark",
"exporter", "rollouts", "options"}``), runs it with :func:`~evalexport.plans.batch.export_task`
and writes its ``ExportResult`` as one JSON line on stdout, until stdin closes. Anything else
that would go to stdout (a plugin exporter's print, an SDK's banner) goes to stderr, so it
cannot be mistaken for a result. A stop signal stops the export under way, which reports it;
the process then exits with 128 + the signal.
"""

from __future__ import annotations

import logging
import os
import sys


def main() -> int:
    """One process of the pool: read tasks on stdin, write outcomes on stdout, until stdin closes."""
    from evalexport.interrupts import (
        STOP_SIGNALS,
        Interrupted,
        deferred,
        signal_name,
        signals_raise,
    )
    from evalexport.plans.batch import export_task
    from evalexport.plans.model import ExportTask
    from evalexport.results import ExitCode

    stop_signals = {signal_name(signum): signum for signum in STOP_SIGNALS}

    # Exporters and workers log (e.g. a stored run that needs binding); users read it on stderr,
    # where exports of several benchmarks run at once: each line names its benchmark.
    logging.basicConfig(
        level=logging.INFO, format="evalexport: [%(benchmark)s] %(message)s", stream=sys.stderr
    )
    from evalexport.masking import SCRUBBER

    benchmark = _Benchmark()
    for handler in logging.getLogger().handlers:  # what reaches stderr is scrubbed
        handler.addFilter(SCRUBBER)
        handler.addFilter(benchmark)
    results = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    try:
        with signals_raise():
            for line in sys.stdin:
                task = ExportTask.from_json(line)
                benchmark.current = task.benchmark
                result = export_task(task)
                with deferred() as held:  # a result half written is a result lost
                    results.write(result.model_dump_json() + "\n")
                    results.flush()
                held.raise_held()  # written whole; the stop it held comes now
                if result.exit_code.stopped_by_signal:  # the export was stopped: so are we
                    return int(result.exit_code)
                late = stop_signals.get(str(result.interrupted_by))
                if late is not None:  # it came after the export landed, which stands
                    return int(ExitCode.for_signal(late))
    except Interrupted as interruption:
        return interruption.exit_code
    return 0


class _Benchmark(logging.Filter):
    """Names the benchmark whose export logged a record (``%(benchmark)s``)."""

    current = ""

    def filter(self, record: logging.LogRecord) -> bool:
        record.benchmark = self.current
        return True


if __name__ == "__main__":
    sys.exit(main())
