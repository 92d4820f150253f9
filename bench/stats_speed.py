"""Exact McNemar p-values for every pair of models, old implementation against new, in one run.

The report computes `mcnemar_exact` for each pair of models on the same tasks. This builds
realistic discordant counts for 45 models (990 pairs) and 200 models (19,900 pairs) on 34,100
tasks: each model has a success rate drawn from [0.30, 0.80], each pair disagrees on 5-30% of
the tasks (at least on the difference of their rates), so n runs from ~1,700 to ~17,000 and the
smaller count k from 0 to n/2. Then it times, side by side:

  old    the implementation before this change, one pair at a time (the verbatim copy in
         tests/core/test_stats.py that the bit-identity tests compare against);
  single the new `mcnemar_exact`, one pair at a time;
  batch  the new `mcnemar_exact_many` over all pairs (what the report will call).

The new side starts from an empty lgamma table each time, so its one-off cost is included.
Prints CPU (time.process_time) beside wall time and checks that all three agree to the bit.

Usage: python bench/stats_speed.py [--seed N]"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "tests"))

from test_stats import reference_mcnemar_exact  # noqa: E402

from afbench.core import stats  # noqa: E402

TASKS = 34_100


def discordant_counts(models: int, rng: random.Random) -> list[tuple[int, int]]:
    rates = [rng.uniform(0.30, 0.80) for _ in range(models)]
    pairs = []
    for i in range(models):
        for j in range(i + 1, models):
            diff = round((rates[i] - rates[j]) * TASKS)
            wanted = round(rng.uniform(0.05, 0.30) * TASKS)
            # at least |diff| discordant tasks, and n - |diff| even so the counts are integers
            n = abs(diff) + 2 * max(0, (wanted - abs(diff)) // 2)
            pairs.append(((n + diff) // 2, (n - diff) // 2))
    return pairs


def timed(work: Callable[[], list[float]]) -> tuple[list[float], float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    result = work()
    return result, time.process_time() - cpu, time.perf_counter() - wall


def fresh_new(work: Callable[[], list[float]]) -> Callable[[], list[float]]:
    def run() -> list[float]:
        del stats._LGAMMA[1:]  # measure the table's one-off cost too
        return work()

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2024)
    seed = parser.parse_args().seed
    print(f"exact McNemar over all pairs, {TASKS:,} tasks, seed {seed}")
    print(f"{'models':>6} {'pairs':>6} {'side':>6} {'CPU s':>8} {'wall s':>8} {'x old CPU':>9}")
    for models in (45, 200):
        pairs = discordant_counts(models, random.Random(seed))
        sides = {
            "old": lambda pairs=pairs: [reference_mcnemar_exact(a, b) for a, b in pairs],
            "single": fresh_new(lambda pairs=pairs: [stats.mcnemar_exact(a, b) for a, b in pairs]),
            "batch": fresh_new(lambda pairs=pairs: stats.mcnemar_exact_many(pairs)),
        }
        results, old_cpu = {}, None
        for side, work in sides.items():
            results[side], cpu, wall = timed(work)
            old_cpu = old_cpu or cpu
            speedup = f"{old_cpu / cpu:9.1f}" if side != "old" else f"{'':9}"
            print(f"{models:>6} {len(pairs):>6} {side:>6} {cpu:8.3f} {wall:8.3f} {speedup}")
        assert results["single"] == results["old"] == results["batch"], "p-values differ"
        ns = [a + b for a, b in pairs]
        inside = sum(0.0 < p < 1.0 for p in results["old"])
        print(
            f"{'':>6} discordant n {min(ns):,}..{max(ns):,}; {inside} of {len(pairs)} p-values "
            "strictly between 0 and 1; all three sides bit-identical"
        )


if __name__ == "__main__":
    main()
