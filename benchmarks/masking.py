"""Masking's cost: one saved-config value against its size, and a whole export of a run whose
every row holds secret-shaped text, masked against ``+mask_rows=false``.

    python benchmarks/masking.py [--runs N]

A saved config is input, and one value can be large (a long few-shot prompt). Prints, for each
shape and size, the best of N ``mask_config`` times and the time per megabyte; a linear rule
keeps the per-megabyte figure flat as the size grows, a backtracking one multiplies it.

    python benchmarks/masking.py --texts [--runs N]

A row's JSON text masked where it stands (a trace's line): worst-case rows and the same rows
without an anchor of the rules, each against ``json.loads`` of the same text.

    python benchmarks/masking.py --rows 200,1000 [--repeat 3] [--cpu 1]

Issue #65's worst case: for each size (MiB of rollouts), a run whose every row (about 22 KB:
a long prompt and answer of prose, code and URLs) holds secret-shaped text (``api_key=sk-…`` in
the prompt, ``password: S3cr3t…`` in the middle of the answer, a Bearer header, a tool call's
arguments with an ``api_key``). Each ``--repeat`` round exports it twice to a new local MLflow
store (``sqlite:///``), in fresh processes, alternated: with the rows masked (the default) and
with ``+mask_rows=false``; the whole ``evalexport mlflow`` export is timed (reading, hashing,
both tables through the egress gate, the worker, MLflow's store). Prints the medians, their
ratio (goal: at most 1.3) and the rows masked. ``--cpu N`` pins every process of it to that
core (``taskset``), so the benchmark takes one core of a shared machine; the export's split
read then shares it too. Uses the MLflow exporter's environment (built from the package index
the first time; ``EVALEXPORT_CACHE_DIR`` says where environments are kept).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from evalexport.masking import mask_config
from evalexport.run import RunArtifacts

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


def config_values(runs: int) -> None:
    print(f"{'shape':<26} {'size':>9} {'seconds':>9} {'s per MB':>9}")
    for name, build in SHAPES.items():
        for size in SIZES:
            seconds = best_seconds(build(size), runs)
            print(f"{name:<26} {size:>9,} {seconds:>9.4f} {seconds / size * 1e6:>9.3f}")


# A worst-case row's text: a long answer's prose, LaTeX, code and URLs, as NeMo Gym's example
# rows hold them (about one anchor of the rules a kilobyte: a URL, a "key" or a "token" where no
# secret stands, as in nemo-gym 0.7.0's example rollouts).
_PARAGRAPHS = (
    "Let $S(n) = \\sum_{k=1}^{n} k^2$. We prove by induction that $S(n) = n(n+1)(2n+1)/6$. "
    "The base case $n = 1$ gives $1 = 1 \\cdot 2 \\cdot 3 / 6$, which holds. Suppose the "
    "formula holds for $n$; then $S(n+1) = S(n) + (n+1)^2$, and factoring $(n+1)$ out gives "
    "$(n+1)(n+2)(2n+3)/6$, as required.\n",
    "Next we bound the remainder. Since $7^{4} = 2401 \\equiv 401 \\pmod{1000}$, squaring "
    "repeatedly gives $7^{8} \\equiv 801$, $7^{16} \\equiv 601$ and $7^{32} \\equiv 201$; the "
    "period of $7$ modulo $1000$ divides $100$ by Euler's theorem, so only $2024 \\bmod 100 = 24$ "
    "matters here.\n",
    "```python\ndef solve(values: list[int]) -> int:\n    seen = {}\n    best = 0\n"
    "    for index, value in enumerate(values):\n        if value in seen:\n"
    "            best = max(best, index - seen[value])\n        seen.setdefault(value, index)\n"
    "    return best\n```\n",
    "The key step is to notice that the map is injective: two inputs with the same image "
    "would give the same residue, which the table rules out. See "
    "https://en.wikipedia.org/wiki/Injective_function for the definition we use.\n",
    "Checking small cases first: for $n = 2, 3, 4$ the counts are $5, 14, 30$, matching the "
    "closed form, and the difference table is constant at the third level, so the polynomial "
    "has degree three and the fit is exact.\n",
    "We now count the lattice paths. A path from $(0,0)$ to $(a,b)$ with unit steps is a word "
    "of $a$ rights and $b$ ups, so there are $\\binom{a+b}{a}$ of them; the paths that touch "
    "the diagonal are counted by the reflection principle, which pairs them with paths to "
    "$(b-1,a+1)$.\n",
    "```bash\ncurl -s https://pypi.org/pypi/sympy/json | python -m json.tool | head -n 20\n"
    "python -c 'import sympy; print(sympy.__version__)'\n```\n",
    "Finally, the answer must be an integer between $0$ and $999$; the computation above gives "
    "the residue directly, and a quick check with modular exponentiation confirms it.\n",
)
_FILLER = "".join(_PARAGRAPHS) * 6  # about 13 KB


def worst_case_row(index: int) -> dict[str, Any]:
    """A row of about 22 KB holding secret-shaped text where prose, code and tool calls do."""
    secret = f"{index:08d}Zq7Lm2Xc9Vb"
    prompt = (
        _FILLER[:-1500]
        + f"Use api_key=sk-proj-{secret}A1b2 for the search endpoint, and reply with the "
        "answer in \\boxed{}.\n"
    )
    answer = _FILLER[:5000] + f"… \\boxed{{481}} password: S3cr3t{secret} …" + _FILLER[5000:]
    call = {
        "type": "function_call",
        "name": "search",
        "call_id": f"call_{index}",
        "arguments": json.dumps({"query": "Legendre symbol", "api_key": f"tool{secret}"}),
        "status": "completed",
    }
    return {
        "_ng_task_index": index,
        "_ng_rollout_index": 0,
        "agent_ref": {"type": "responses_api_agents", "name": "math_with_search"},
        "reward": float(index % 2),
        "expected_answer": "481",
        "responses_create_params": {
            "input": [{"role": "user", "content": prompt, "type": "message"}],
            "max_output_tokens": 16384,
            "extra_headers": {"Authorization": f"Bearer hdr{secret}"},
        },
        "response": {
            "id": f"resp_{index}",
            "output": [
                call,
                {"type": "function_call_output", "call_id": f"call_{index}", "output": "42"},
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": answer, "annotations": []}],
                },
            ],
            "usage": {"input_tokens": 5200, "output_tokens": 2600},
        },
    }


def make_worst_case_run(directory: Path, megabytes: int) -> tuple[Path, int]:
    """A run of ``megabytes`` MiB of :func:`worst_case_row` rows; its rollouts file and rows."""
    from evalexport.masking import save_run_config

    directory.mkdir(parents=True, exist_ok=True)
    rollouts = directory / "worst_rollouts.jsonl"
    target, written, count = megabytes * 2**20, 0, 0
    with rollouts.open("w", encoding="utf-8") as handle:
        while written < target:
            line = json.dumps(worst_case_row(count)) + "\n"
            handle.write(line)
            written += len(line.encode())
            count += 1
    (directory / "worst_rollouts_aggregate_metrics.json").write_text(
        json.dumps([{"agent_ref": {"name": "math_with_search"}, "mean/reward": 0.5}])
    )
    save_run_config({"policy_model_name": "m", "max_tokens": 16384}, rollouts)
    return rollouts, count


def _export(rollouts: Path, store: Path, masked: bool, cpu: int | None) -> tuple[float, str]:
    """One ``evalexport mlflow`` export in a fresh process: its wall time and its message."""
    command = [
        sys.executable,
        "-m",
        "evalexport",
        "mlflow",
        f"+rollouts_jsonl_fpath={rollouts}",
        f"+mlflow_tracking_uri=sqlite:///{store / 'mlflow.db'}",
        f"+mask_rows={'true' if masked else 'false'}",
        "--json",
    ]
    if cpu is not None and shutil.which("taskset"):
        command = ["taskset", "-c", str(cpu), *command]
    RunArtifacts.from_rollouts_path(rollouts).export_marker("mlflow").unlink(missing_ok=True)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    try:
        result = json.loads(done.stdout)
    except ValueError:
        raise SystemExit(f"the export printed no result: {done.stderr[-2000:]}") from None
    if result.get("status") != "succeeded":
        raise SystemExit(f"the export failed: {result.get('message')}")
    return seconds, str(result.get("message", ""))


def rows(sizes: list[int], repeat: int, cpu: int | None) -> list[dict[str, Any]]:
    """For each size, the masked and unmasked exports' medians and their ratio."""
    figures = []
    with tempfile.TemporaryDirectory(prefix="masking-rows-") as scratch_name:
        scratch = Path(scratch_name)
        _export(*_warm(scratch), masked=True, cpu=cpu)  # builds or finds the environment
        for megabytes in sizes:
            rollouts, count = make_worst_case_run(scratch / f"run{megabytes}", megabytes)
            times: dict[bool, list[float]] = {True: [], False: []}
            said = ""
            for attempt in range(repeat):
                for masked in (True, False):
                    store = scratch / f"store{megabytes}-{attempt}-{masked}"
                    store.mkdir()
                    seconds, message = _export(rollouts, store, masked, cpu)
                    times[masked].append(seconds)
                    said = message if masked else said
                    shutil.rmtree(store)
            masked_s, unmasked_s = statistics.median(times[True]), statistics.median(times[False])
            row = {
                "megabytes": megabytes,
                "rows": count,
                "masked_seconds": round(masked_s, 2),
                "unmasked_seconds": round(unmasked_s, 2),
                "ratio": round(masked_s / unmasked_s, 3),
                "masked_rows_said": _masked_rows(said),
            }
            figures.append(row)
            print(json.dumps(row), flush=True)
            shutil.rmtree(rollouts.parent)
    return figures


def _warm(scratch: Path) -> tuple[Path, Path]:
    rollouts, _ = make_worst_case_run(scratch / "warm", 1)
    store = scratch / "warm-store"
    store.mkdir()
    return rollouts, store


def _masked_rows(message: str) -> int | None:
    marker = "secrets were masked in "
    if marker not in message:
        return None
    return int(message.split(marker, 1)[1].split(" ", 1)[0])


def row_texts(count: int, rounds: int) -> None:
    """Microseconds of CPU a row's JSON text costs the egress gate's row masking (the text of a
    trace's line, :meth:`~evalexport.egress.Egress.row`): worst-case rows (every one holding
    secrets, with a non-Latin-1 character, as an answer often has) and the same rows with every
    anchor of the rules taken out, each against ``json.loads`` of the same text (the floor:
    masking a text by parsing it cannot cost less). The best of ``rounds``, in this process."""
    import re
    import time

    from evalexport.masking.values import ValueMasking

    worst = [json.dumps(worst_case_row(index), ensure_ascii=False) for index in range(count)]
    anchors = re.compile(r"(?i)api_key|password|bearer|secret|token|auth|key|sk-|@|pass|basic")
    plain = [anchors.sub("x", text) for text in worst]
    masking = ValueMasking((), "free")

    def cpu(work: Any, texts: list[str]) -> float:
        best = float("inf")
        for _ in range(rounds):
            started = time.process_time()
            for text in texts:
                work(text)
            best = min(best, time.process_time() - started)
        return best / len(texts) * 1e6

    print(f"{'rows':<28} {'KB':>6} {'json.loads':>11} {'masked':>9} {'ratio':>6}")
    for name, texts in (("worst case", worst), ("no anchor", plain)):
        floor, masked = cpu(json.loads, texts), cpu(masking.json_text, texts)
        size = sum(map(len, texts)) / len(texts) / 1e3
        print(f"{name:<28} {size:>6.1f} {floor:>9.1f}us {masked:>7.1f}us {masked / floor:>5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rows", help="sizes in MiB, comma-separated: the row-heavy export")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=None, help="pin the benchmark to this core")
    parser.add_argument("--texts", action="store_true", help=row_texts.__doc__)
    arguments = parser.parse_args()
    if arguments.texts:
        row_texts(2000, arguments.runs)
    elif arguments.rows:
        if arguments.cpu is not None:
            os.sched_setaffinity(0, {arguments.cpu})
        rows([int(size) for size in arguments.rows.split(",")], arguments.repeat, arguments.cpu)
    else:
        config_values(arguments.runs)


if __name__ == "__main__":
    main()
