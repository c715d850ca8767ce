"""Startup cost of evalexport: import time and ``evalexport --help``, against bare Python.

    python benchmarks/startup.py [--runs N]

Prints the median wall time of each command over N fresh interpreters, its ratio to a bare
``python -c pass``, and the number of modules the CLI imports, and confirms that no backend
SDK is among them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

SDKS = ("mlflow", "wandb", "evalrdl", "atif", "harbor")

COMMANDS = {
    "python -c pass": "pass",
    "import pydantic (reference)": "import pydantic",
    "import evalexport": "import evalexport",
    "evalexport --help": "from evalexport.cli import main; main(['--help'])",
    "evalexport list": "from evalexport.cli import main; main(['list'])",
}


def median_seconds(code: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def modules_after(code: str) -> list[str]:
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)), file=sys.stderr)"
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    return list(json.loads(completed.stderr.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    baseline = median_seconds("pass", runs)
    print(f"median of {runs} fresh interpreters, {sys.version.split()[0]}")
    print(f"{'command':<30} {'ms':>8} {'x bare':>8}")
    for label, code in COMMANDS.items():
        seconds = baseline if code == "pass" else median_seconds(code, runs)
        print(f"{label:<30} {seconds * 1000:8.1f} {seconds / baseline:8.2f}")
    help_modules = modules_after(COMMANDS["evalexport --help"])
    bare_modules = modules_after("pass")
    sdks = sorted({name.split(".")[0] for name in help_modules} & set(SDKS))
    print(
        f"modules imported by 'evalexport --help': {len(help_modules)} "
        f"({len(help_modules) - len(bare_modules)} beyond bare Python)"
    )
    print(f"backend SDKs imported: {', '.join(sdks) if sdks else 'none'}")


if __name__ == "__main__":
    main()
