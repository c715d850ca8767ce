"""Isolated-exporter costs, side by side in one run.

    python benchmarks/isolation.py [--calls 10]

Prints the cold build time of an SDK environment with uv and with pip (a tiny local wheel, so
the figures are the tools' own overhead, not download time), and the overhead of a warm call —
environment lookup plus a worker round trip with a trivial body — against the same body run
in-process.
"""

from __future__ import annotations

import argparse
import os
import runpy
import statistics
import tempfile
import time
from pathlib import Path

BODY = """
def run(payload):
    return {"status": "succeeded", "exit_code": 0, "message": "ok", "details": {"n": payload["n"]}}
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=10)
    calls = parser.parse_args().calls
    with tempfile.TemporaryDirectory(prefix="isolation-bench-") as scratch:
        os.environ["EVALEXPORT_CACHE_DIR"] = str(Path(scratch) / "cache")
        os.environ["UV_CACHE_DIR"] = str(Path(scratch) / "uv-cache")
        from evalexport.isolation import (
            EnvironmentSpec,
            ensure_environment,
            find_installer,
            run_worker,
        )
        from evalexport.testing.wheels import tinysdk_wheel

        wheel = str(tinysdk_wheel(Path(scratch) / "wheels"))
        body = Path(scratch) / "body.py"
        body.write_text(BODY)
        builds = {}
        for installer in ("uv", "pip"):
            spec = EnvironmentSpec(f"bench-{installer}", (wheel,))
            start = time.perf_counter()
            environment = ensure_environment(spec, find_installer(installer))
            builds[installer] = time.perf_counter() - start
            assert environment.built
        ratio = builds["pip"] / builds["uv"]
        print(f"cold build, uv:  {builds['uv']:6.2f} s")
        print(f"cold build, pip: {builds['pip']:6.2f} s   (pip / uv: {ratio:.1f}x)")

        spec = EnvironmentSpec("bench-uv", (wheel,))
        warm = []
        for n in range(calls):
            start = time.perf_counter()
            environment = ensure_environment(spec)
            outcome = run_worker(environment, body, {"n": n}, time_limit=60)
            warm.append(time.perf_counter() - start)
            assert outcome.result is not None
            assert outcome.result["details"]["n"] == n
        local = []
        for n in range(calls):
            start = time.perf_counter()
            result = runpy.run_path(str(body))["run"]({"n": n})
            local.append(time.perf_counter() - start)
            assert result["details"]["n"] == n
        warm_ms, local_ms = statistics.median(warm) * 1000, statistics.median(local) * 1000
        print(f"warm call through a worker: {warm_ms:8.1f} ms (median of {calls})")
        print(f"same body in-process:       {local_ms:8.3f} ms")
        print(f"worker overhead per export: {warm_ms - local_ms:8.1f} ms")


if __name__ == "__main__":
    main()
