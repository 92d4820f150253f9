"""Query speed of the results store (afbench.exports.store): a store of 3 revisions x 45
configurations x 34,100 trials (the benchmark's tasks), one run_outcomes partition per revision
written by store.table_parquet in its declared schema, then a group-by over all of it through
`store.query` (DuckDB over the Parquet views), timed in this process: wall beside CPU (CPU
counts DuckDB's threads too).

The outcomes are synthetic (a fixed seed): the shape and the sizes are the benchmark's, the
numbers mean nothing. The store is written under bench/work/store-speed/ (kept with --reuse).
With --s3 the same store is also uploaded to moto's S3 server on 127.0.0.1 (its own process,
as the tests run it) and queried there as `afbench query --store s3://...` reads it: pyarrow's
S3 file system, Arrow datasets handed to DuckDB.

Usage: python bench/store_speed.py [--rounds N] [--reuse] [--s3]"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import statistics
import subprocess
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
    from afbench.exports import store

    shutil.rmtree(WORK, ignore_errors=True)
    for revision in range(REVISIONS):
        name = f"{revision:040x}"
        path = store.partition(WORK, "run_outcomes", name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(store.table_parquet(outcomes(revision), "run_outcomes"))
    return WORK


@contextlib.contextmanager
def on_moto(store: Path):
    """The store uploaded to a bucket of moto's S3 server on 127.0.0.1; yields its URL, with
    the storage plugin's settings in the environment."""
    import boto3

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    settings = {
        "SNAKEMAKE_STORAGE_S3_ENDPOINT_URL": endpoint,
        "SNAKEMAKE_STORAGE_S3_ACCESS_KEY": "bench",
        "SNAKEMAKE_STORAGE_S3_SECRET_KEY": "bench",
    }
    os.environ.update(settings)
    try:
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
            region_name="us-east-1",
        )
        for _ in range(200):  # until the server answers (a hang guard, not a timing)
            try:
                client.create_bucket(Bucket="bench")
                break
            except Exception:
                time.sleep(0.1)
        for path in sorted(store.rglob("*.parquet")):
            client.upload_file(str(path), "bench", f"store/{path.relative_to(store)}")
        yield "s3://bench/store"
    finally:
        for name in settings:
            os.environ.pop(name, None)
        server.terminate()
        server.wait(timeout=30)


def timed(root: str | Path, rounds: int) -> tuple[float, float, list]:
    """The query's median wall and CPU time over `rounds`, and its last result."""
    from afbench.exports import store

    walls, cpus = [], []
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        columns, result = store.query(root, QUERY)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    assert len(result) == REVISIONS * CONFIGURATIONS, len(result)
    assert sum(r[columns.index("trials")] for r in result) == REVISIONS * CONFIGURATIONS * TASKS
    return statistics.median(walls), statistics.median(cpus), result


def same(a: list[tuple], b: list[tuple]) -> bool:
    """The same rows, a float's sum equal to its precision (DuckDB's threads add in any order)."""
    import math

    def close(x: object, y: object) -> bool:
        return math.isclose(x, y, rel_tol=1e-9) if isinstance(x, float) else x == y

    return len(a) == len(b) and all(
        len(r) == len(q) and all(map(close, r, q)) for r, q in zip(a, b, strict=True)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--s3", action="store_true", help="also on moto's S3 server")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "scripts"))

    if not (args.reuse and WORK.is_dir()):
        started = time.perf_counter()
        build()
        print(f"built the store in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    size = sum(p.stat().st_size for p in WORK.rglob("*.parquet"))
    rows = REVISIONS * CONFIGURATIONS * TASKS
    wall, cpu, local = timed(WORK, args.rounds)
    verdict = "met" if wall <= TARGET_S else "MISSED"
    print(
        f"store query: group-by of {rows:,} trials ({REVISIONS} revisions x {CONFIGURATIONS} "
        f"configurations x {TASKS:,} tasks, {size / 2**20:.1f} MiB of Parquet), median of "
        f"{args.rounds}: wall {wall:.3f} s, CPU {cpu:.3f} s; target wall <= {TARGET_S:g} s: "
        f"{verdict}"
    )
    if args.s3:
        with on_moto(WORK) as url:
            wall, cpu, there = timed(url, args.rounds)
        assert same(there, local), "the store on S3 answers otherwise"
        print(
            f"the same on moto's S3 server (127.0.0.1), median of {args.rounds}: wall "
            f"{wall:.3f} s, CPU {cpu:.3f} s (the same rows)"
        )


if __name__ == "__main__":
    main()
