"""Masking time against the size of one saved-config value.

    python benchmarks/masking.py [--runs N]

A saved config is input, and one value can be large (a long few-shot prompt). Prints, for each
shape and size, the best of N ``mask_config`` times and the time per megabyte; a linear rule
keeps the per-megabyte figure flat as the size grows, a backtracking one multiplies it.
"""

from __future__ import annotations

import argparse
import time

from evalexport.masking import mask_config

SHAPES = {
    "one letter repeated": lambda n: "p" * n,
    "few-shot prompt": lambda n: (
        "Question: what is 17 * 23?\nAnswer: 391. See https://example.com/a?page=2 and "
        "api_key: sk-abcdefghijklmnopqrstuvwx1234 in the env.\n" * (n // 130 + 1)
    )[:n],
    "header line, long spaces": lambda n: "a: x" + " " * n + "y",
    "URL without a host": lambda n: "https://" + "a" * n,
}
SIZES = (5_000, 10_000, 20_000, 100_000, 1_000_000)


def best_seconds(text: str, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        mask_config({"prompt": text})
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    arguments = parser.parse_args()
    print(f"{'shape':<26} {'size':>9} {'seconds':>9} {'s per MB':>9}")
    for name, build in SHAPES.items():
        for size in SIZES:
            seconds = best_seconds(build(size), arguments.runs)
            print(f"{name:<26} {size:>9,} {seconds:>9.4f} {seconds / size * 1e6:>9.3f}")


if __name__ == "__main__":
    main()
