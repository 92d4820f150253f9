"""Query speed of the results store (afbench.store): a store of 3 revisions x 45 configurations
x 34,100 trials (the benchmark's tasks), one run_outcomes partition per revision written by
store.table_parquet in its declared schema, then a group-by over all of it through
`store.query` (DuckDB over the Parquet views), timed in this process: wall beside CPU (CPU
counts DuckDB's threads too).

The outcomes are synthetic (a fixed seed): the shape and the sizes are the benchmark's, the
numbers mean nothing. The store is written under bench/work/store-speed/ (kept with --reuse).

Usage: python bench/store_speed.py [--rounds N] [--reuse]"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "bench" / "work" / "store-speed"
REVISIONS, CONFIGURATIONS, TASKS = 3, 45, 34_100
TARGET_S = 1.0
QUERY = (
    "SELECT revision, configuration, count(*) AS trials, "
    "count(*) FILTER (WHERE outcome = 'accepted') / count(*) AS rate, "
    "sum(cost_usd) AS spend_usd, count(*) FILTER (WHERE outcome = 'error') AS errors "
    "FROM run_outcomes GROUP BY revision, configuration ORDER BY revision, configuration"
)


def outcomes(revision: int):
    """One revision's run_outcomes: every configuration's trial of every task."""
    import numpy as np
    import pandas as pd

    from afbench.frames import typed

    rng = np.random.default_rng(revision)
    n = CONFIGURATIONS * TASKS
    configurations = [f"agent-{c:02d} 1.0.0 | model m{c:02d} | env docker" for c in range(45)]
    tasks = [f"bench_s{t // 100:03d}_t{t % 100:03d}" for t in range(TASKS)]
    outcome = rng.choice(["accepted", "rejected", "error"], n, p=[0.55, 0.4, 0.05])
    reward = np.where(outcome == "accepted", 1, np.where(outcome == "rejected", 0, -1))
    frame = pd.DataFrame(
        {
            "run": pd.Categorical(["bench-run"] * n),
            "configuration": pd.Categorical.from_codes(
                np.repeat(np.arange(CONFIGURATIONS), TASKS), configurations
            ),
            "task_id": pd.Categorical.from_codes(np.tile(np.arange(TASKS), CONFIGURATIONS), tasks),
            "outcome": pd.Categorical(outcome),
            "reward": pd.array(np.where(reward < 0, None, reward), dtype="Int64"),
            "attempts": pd.array(np.ones(n, dtype=int), dtype="Int64"),
            "accepted_attempts": pd.array((outcome == "accepted").astype(int), dtype="Int64"),
            "cost_usd": pd.array(rng.gamma(2.0, 0.6, n).round(4), dtype="Float64"),
        }
    )
    return typed(frame, "run_outcomes")


def build() -> Path:
    from afbench import store

    shutil.rmtree(WORK, ignore_errors=True)
    for revision in range(REVISIONS):
        name = f"{revision:040x}"
        path = store.partition(WORK, "run_outcomes", name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(store.table_parquet(outcomes(revision), "run_outcomes"))
    return WORK


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "scripts"))
    from afbench import store

    if not (args.reuse and WORK.is_dir()):
        started = time.perf_counter()
        build()
        print(f"built the store in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    size = sum(p.stat().st_size for p in WORK.rglob("*.parquet"))
    rows = REVISIONS * CONFIGURATIONS * TASKS
    walls, cpus = [], []
    for _ in range(args.rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        columns, result = store.query(WORK, QUERY)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    assert len(result) == REVISIONS * CONFIGURATIONS, len(result)
    assert sum(r[columns.index("trials")] for r in result) == rows
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    verdict = "met" if wall <= TARGET_S else "MISSED"
    print(
        f"store query: group-by of {rows:,} trials ({REVISIONS} revisions x {CONFIGURATIONS} "
        f"configurations x {TASKS:,} tasks, {size / 2**20:.1f} MiB of Parquet), median of "
        f"{args.rounds}: wall {wall:.3f} s, CPU {cpu:.3f} s; target wall <= {TARGET_S:g} s: "
        f"{verdict}"
    )


if __name__ == "__main__":
    main()
