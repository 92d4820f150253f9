"""The report a user would write in a notebook instead of `afbench report`: the yardstick that
bench/report_speed.py times beside it (issue 45).

It reads the same per-task records (each model's results CSV of the fetched release, the file
its import was made from) with pandas, groups them by configuration, gives each its success
rate with a Wilson interval, prints the table and saves one matplotlib bar chart. No checks of
the files, no clustered intervals, no paired tests: the least a user would do.

    python bench/notebook_baseline.py RESULTS_DIR OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path
from statistics import NormalDist

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd


def wilson(successes: pd.Series, n: pd.Series, confidence: float = 0.95):
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    denominator = 1 + z**2 / n
    centre = (p + z**2 / (2 * n)) / denominator
    half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denominator
    return centre - half, centre + half


def main(results: Path, out: Path) -> None:
    frames = []
    for path in sorted(results.glob("*.csv")):
        frame = pd.read_csv(path, usecols=["task_id", "source_id", "success"])
        frame["configuration"] = path.stem
        frames.append(frame)
    records = pd.concat(frames, ignore_index=True)
    table = records.groupby("configuration")["success"].agg(passes="sum", tasks="count")
    table["rate"] = table["passes"] / table["tasks"]
    table["low"], table["high"] = wilson(table["passes"], table["tasks"])
    table = table.sort_values("rate", ascending=False)
    print(table.to_string())
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(table) + 1))
    ax.barh(
        table.index[::-1],
        table["rate"][::-1],
        xerr=[(table["rate"] - table["low"])[::-1], (table["high"] - table["rate"])[::-1]],
        capsize=2,
    )
    ax.set_xlim(0, 1)
    ax.set_xlabel("success rate (95% Wilson interval)")
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "leaderboard.png")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
