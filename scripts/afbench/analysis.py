"""The analysis behind the report, computed only from the imports (never hand-entered)."""

from __future__ import annotations

from itertools import combinations

from .errors import AfbenchError, Problem, raise_if
from .records import ANALYSIS, record
from .release import stale_imports
from .stats import (
    holm,
    mcnemar_exact,
    paired_difference_from_counts,
    pareto_frontier,
    standard_error,
    wilson_interval,
)

ALPHA = 0.05


def import_problems(imports: list[tuple[str, dict]], catalog: dict, pins: dict) -> list[Problem]:
    """Model imports (totals, with their paths) not current: older than their pin (`pins`:
    release path -> SHA-256), or checked against another task catalog."""
    problems = stale_imports(imports, pins)
    stale = {problem.file for problem in problems}
    for path, imp in imports:
        others = {k: v for k, v in imp["inputs"].items() if k != imp["file"]}
        if path not in stale and others != catalog["inputs"]:
            problems.append(
                Problem(
                    f"import of model '{imp['model']}' was checked against another task catalog: "
                    f"import it again",
                    file=path,
                    field="inputs",
                )
            )
    return problems


def receipt_pins(receipt: dict) -> dict[str, str]:
    return {entry["path"]: entry["actual_sha256"] for entry in receipt["files"]}


def check_current(
    summary: tuple[str, dict], imports: list[tuple[str, dict]], catalog: dict, receipt: dict
) -> None:
    """Refuse to report numbers that are not the pinned ones: a model import older than its
    pin or than the catalog, or a summary that does not come from exactly these imports (an
    older comparison, or one whose newer run was refused)."""
    problems = import_problems(imports, catalog, receipt_pins(receipt))
    summary_path, body = summary
    expected = {path: sha for _, imp in imports for path, sha in imp["inputs"].items()}
    shown = sorted(row["model"] for row in body["leaderboard"])
    wanted = sorted(imp["model"] for _, imp in imports)
    if body["inputs"] != expected or shown != wanted:
        problems.append(
            Problem(
                "the comparison summary does not come from these model imports (an older "
                "comparison, or a newer one that was refused): compare them again",
                file=summary_path,
                field="inputs",
                expected=f"models {wanted}",
                found=f"models {shown}",
            )
        )
    raise_if(problems)
    if catalog["release"]["revision"] != receipt["release"]["revision"]:
        raise AfbenchError(
            "the catalog belongs to another revision than the receipt",
            field="release.revision",
            expected=receipt["release"]["revision"],
            found=catalog["release"]["revision"],
        )


def leaderboard(imports: list[dict], confidence: float) -> list[dict]:
    rows = []
    for imp in sorted(imports, key=lambda i: (-i["passes"], i["model"])):
        low, high = wilson_interval(imp["passes"], imp["tasks"], confidence)
        rows.append(
            {
                "model": imp["model"],
                "display_name": imp["display_name"],
                "passes": imp["passes"],
                "tasks": imp["tasks"],
                "success_rate": imp["success_rate"],
                "wilson_low": low,
                "wilson_high": high,
                "standard_error": standard_error(imp["passes"], imp["tasks"]),
                "infrastructure_errors": imp["infrastructure_errors"]["count"],
                "over_budget_records": imp["budget_audit"]["over_budget_count"],
            }
        )
    return rows


def compactor(catalog: dict):
    """A function reducing a model import's outcomes (official.Outcomes) to what the analysis
    needs: its totals, successes as a bitset over the catalog's task order, and passes per
    source. Dropping the per-task records keeps the report's memory flat in the number of
    tasks."""
    order = [t["task_id"] for t in catalog["tasks"]]
    position = {task_id: i for i, task_id in enumerate(order)}
    source_ids = [s["source_id"] for s in catalog["sources"]]
    digit = {True: "1", False: "0"}

    def compact(outcomes, file: str = "model import") -> dict:
        from collections import Counter
        from itertools import compress

        if outcomes.task_ids == order:  # the catalog's order, as import-model writes it
            digits = list(map(digit.__getitem__, outcomes.successes))
        else:
            unknown = [t for t in outcomes.task_ids if t not in position]
            if unknown:
                raise AfbenchError(
                    "a task that is not in the catalog: import the model again",
                    file=file,
                    field="task_id",
                    found=unknown[0],
                )
            digits = ["0"] * len(order)
            for task_id in compress(outcomes.task_ids, outcomes.successes):
                digits[position[task_id]] = "1"
        by_source = dict.fromkeys(source_ids, 0)
        for source_id, passes in Counter(compress(outcomes.source_ids, outcomes.successes)).items():
            if source_id not in by_source:
                raise AfbenchError(
                    "a source that is not in the catalog: import the model again",
                    file=file,
                    field="source_id",
                    found=source_id,
                )
            by_source[source_id] += passes
        return {
            **outcomes.totals,
            "success_bits": int("".join(reversed(digits)) or "0", 2),
            "passes_by_source": by_source,
        }

    return compact


def paired_comparisons(imports: list[dict], confidence: float) -> dict:
    """Every pair of models on the same tasks (imports reduced by `compactor`)."""
    order = [row["model"] for row in leaderboard(imports, confidence)]
    bits = {imp["model"]: imp["success_bits"] for imp in imports}
    n = imports[0]["tasks"]
    pairs = []
    for a, b in combinations(order, 2):
        only_a = (bits[a] & ~bits[b]).bit_count()
        only_b = (bits[b] & ~bits[a]).bit_count()
        both = (bits[a] & bits[b]).bit_count()
        pairs.append(
            {
                "a": a,
                "b": b,
                "tasks": n,
                "both": both,
                "only_a": only_a,
                "only_b": only_b,
                "neither": n - both - only_a - only_b,
                "p_exact": mcnemar_exact(only_a, only_b),
                **{
                    f"difference_{k}": v
                    for k, v in paired_difference_from_counts(only_a, only_b, n, confidence).items()
                },
            }
        )
    adjusted = holm([p["p_exact"] for p in pairs])
    for pair, p_adj in zip(pairs, adjusted, strict=True):
        pair["p_holm"] = p_adj
        pair["significant"] = p_adj < ALPHA
    return {
        "test": "exact McNemar (two-sided binomial test on discordant tasks)",
        "correction": f"Holm-Bonferroni over {len(pairs)} pairs, family-wise alpha {ALPHA}",
        "difference": f"paired difference in success rate (a - b), {confidence:.0%} "
        "normal interval with the paired standard error",
        "pairs": pairs,
    }


def per_source(imports: list[dict], catalog: dict) -> list[dict]:
    rows = []
    for source in catalog["sources"]:
        sid, n = source["source_id"], source["n_tasks"]
        passes = {imp["model"]: imp["passes_by_source"][sid] for imp in imports}
        rows.append(
            {
                "source_id": sid,
                "title": source["title"],
                "tasks": n,
                "passes": passes,
                "rates": {m: (k / n if n else None) for m, k in passes.items()},
            }
        )
    return rows


def cost_success(imports: list[dict]) -> dict:
    points = {imp["model"]: (imp["cost_usd"]["mean"], imp["success_rate"]) for imp in imports}
    frontier = pareto_frontier(points)
    return {
        "axis": "mean reported cost per task (USD) against success rate",
        "models": [
            {
                "model": imp["model"],
                "display_name": imp["display_name"],
                "mean_cost_usd": imp["cost_usd"]["mean"],
                "cost_per_solved_usd": imp["cost_usd"]["per_solved_task"],
                "total_cost_usd": imp["cost_usd"]["total"],
                "success_rate": imp["success_rate"],
                "on_frontier": imp["model"] in frontier,
            }
            for imp in sorted(imports, key=lambda i: i["cost_usd"]["mean"])
        ],
        "frontier": frontier,
    }


LOCAL_OUTCOMES = ("accepted", "rejected", "unverified", "error", "incomplete", "missing")


def local_run_rows(runs: list[dict]) -> list[dict]:
    """One row per (run, configuration): a local run is never pooled across agents, models or
    settings, so neither is its line in the report."""
    rows = []
    for run in runs:
        if not isinstance(run.get("configurations"), list):
            raise AfbenchError(
                f"run '{run.get('run')}': its summary has no per-configuration results (written "
                "by an older afbench, which pooled configurations); import the run again",
                field="configurations",
            )
        for config in run["configurations"]:
            rows.append(
                {
                    "run": run["run"],
                    "configuration": config["configuration"],
                    "selection": run["selection"]["name"],
                    "tasks": run["selection"]["tasks"],
                    "counts": {k: config["counts"][k] for k in LOCAL_OUTCOMES},
                    "success_rate": config["success_rate"],
                    "success_rate_bounds": config["success_rate_bounds"],
                    "pass_at_k": config["pass_at_k"],
                }
            )
    return rows


def analyse(
    summary: dict, imports: list[dict], catalog: dict, runs: list[dict], confidence: float
) -> dict:
    return {
        **record(ANALYSIS),
        "note": summary["note"],
        "license": summary["license"],
        "release": summary["release"],
        "confidence": confidence,
        "source_condition": summary["source_condition"],
        "budget_usd": summary["budget_usd"],
        "leaderboard": leaderboard(imports, confidence),
        "paired": paired_comparisons(imports, confidence),
        "per_source": per_source(imports, catalog),
        "cost_success": cost_success(imports),
        "budget_audit": summary["budget_audit"],
        "local_runs": local_run_rows(runs),
    }
