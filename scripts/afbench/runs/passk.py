"""pass@k of a run's configurations: the unbiased estimator of Chen et al. (2021) per task over
its attempts, averaged over the tasks, with its interval clustered over the tasks' sources.
The estimator is defined here and only here."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction
from pathlib import Path

from afbench.core.errors import AfbenchError
from afbench.core.stats import clustered_mean
from afbench.kinds.runs import ATTEMPT_OUTCOMES, ATTEMPTS, PASS_AT_K

ESTIMATOR = (
    "The unbiased pass@k (Chen et al. 2021): a task with n attempts, c of them accepted, has "
    "pass@k = 1 - C(n - c, k) / C(n, k), the chance that k of its attempts drawn without "
    "replacement include an accepted one; the configuration's pass@k is its tasks' mean, for "
    "k = 1 up to the fewest attempts any task has"
)
ATTEMPT_RULE = (
    "A configuration's attempts are its attempts.csv rows without replaced_by: an attempt "
    "that a later afbench attempt replaced (a sealed comparison's rerun of an errored trial) is "
    "no attempt of pass@k. Each attempt is a success (accepted) or a failure (rejected); while "
    "any is neither (error, incomplete, unverified), or a selected task has none, there is no "
    "estimate"
)
DECIDED = ("accepted", "rejected")
MAX_INPUT_BYTES = 64 * 1024 * 1024


def pass_at_k(n: int, c: int, k: int) -> Fraction:
    """The unbiased pass@k estimator (Chen et al. 2021) for one task with n attempts, c of
    them accepted: 1 - C(n - c, k) / C(n, k), exactly. k beyond the attempts is no estimate."""
    if not 0 <= c <= n:
        raise ValueError(f"accepted attempts must be between 0 and {n}, not {c}")
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and the task's {n} attempts, not {k}")
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def read_attempt_rows(path: Path) -> list[dict]:
    """A run's attempts.csv (as afbench wrote it): each row's configuration, task, outcome and
    replaced_by (None: it counts), with its row number."""
    from afbench.core.csvtable import read_table
    from afbench.core.fsutil import csv_text_value, read_regular_file

    file = str(path)
    table = read_table(
        read_regular_file(Path(path), "run attempts", MAX_INPUT_BYTES),
        file,
        {c: c for c in ATTEMPTS.columns},
    )
    rows = []
    for number, cells in zip(table.row_numbers, table.rows, strict=True):
        row = {k: csv_text_value(cells[k]) for k in ("configuration", "task_id", "outcome")}
        if row["outcome"] not in ATTEMPT_OUTCOMES:
            raise AfbenchError(
                "not an attempt's outcome",
                file=file,
                row=number,
                field="outcome",
                expected=" / ".join(ATTEMPT_OUTCOMES),
                found=row["outcome"],
            )
        replaced_by = csv_text_value(cells["replaced_by"])
        rows.append({**row, "replaced_by": replaced_by or None, "row": number})
    return rows


def _configuration(
    label: str, shown: dict, rows: list[dict], sources: dict[str, str], confidence: float
) -> dict:
    standing = [r for r in rows if r["replaced_by"] is None]
    attempts = Counter(r["task_id"] for r in standing)
    accepted = Counter(r["task_id"] for r in standing if r["outcome"] == "accepted")
    undecided = sum(r["outcome"] not in DECIDED for r in standing)
    missing = shown["counts"]["missing"]
    tasks = sorted(attempts)
    per_task = sorted(set(attempts.values()))
    estimates, note = [], None
    if missing:
        note = f"no estimate: {missing} selected task(s) have no attempt"
    elif undecided:
        note = (
            f"no estimate: {undecided} attempt(s) neither accepted nor rejected (error, "
            "incomplete or unverified)"
        )
    else:
        clusters = [sources[t] for t in tasks]
        for k in range(1, per_task[0] + 1):
            values = [pass_at_k(attempts[t], accepted[t], k) for t in tasks]
            estimates.append({"k": k, "clustered": clustered_mean(values, clusters, confidence)})
    return {
        "configuration": label,
        "tasks": len(tasks) + missing,
        "attempts": len(standing),
        "replaced_attempts": len(rows) - len(standing),
        "attempts_per_task": per_task,
        "estimates": estimates,
        "note": note,
    }


def run_pass_at_k(
    summary: dict, rows: list[dict], attempts_file: str, catalog: dict, confidence: float
) -> dict:
    """The PASS_AT_K record of a run: per configuration of its summary, pass@k for each k from
    the attempts.csv rows (read_attempt_rows), each task clustered by its catalog source. The
    attempts must be the summary's: the same configurations, as many attempts each."""
    sources = {t["task_id"]: t["source_id"] for t in catalog["tasks"]}
    shown = {c["configuration"]: c for c in summary["configurations"]}
    by_label: dict[str, list[dict]] = {label: [] for label in shown}
    for row in rows:
        if row["configuration"] not in shown:
            raise AfbenchError(
                f"a configuration that run '{summary['run']}' does not have",
                file=attempts_file,
                row=row["row"],
                field="configuration",
                expected=" / ".join(shown),
                found=row["configuration"],
            )
        if row["task_id"] not in sources:
            raise AfbenchError(
                "a task that is not in the catalog",
                file=attempts_file,
                row=row["row"],
                field="task_id",
                expected="a task of the catalog",
                found=row["task_id"],
            )
        by_label[row["configuration"]].append(row)
    configurations = []
    for label, config in shown.items():
        counted = sum(r["replaced_by"] is None for r in by_label[label])
        if counted != config["attempts"]["total"]:
            raise AfbenchError(
                f"configuration '{label}' has other attempts than its run summary counts",
                file=attempts_file,
                field="configuration",
                expected=f"{config['attempts']['total']} attempts (summary.json)",
                found=f"{counted} rows without replaced_by",
            )
        configurations.append(_configuration(label, config, by_label[label], sources, confidence))
    return PASS_AT_K.record(
        run=summary["run"],
        estimator=ESTIMATOR,
        attempt_rule=ATTEMPT_RULE,
        confidence=confidence,
        configurations=configurations,
    )
