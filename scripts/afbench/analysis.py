"""The analysis behind the report, computed only from the imports (never hand-entered)."""

from __future__ import annotations

from itertools import combinations

from .errors import AfbenchError, Problem, raise_if
from .records import ANALYSIS, record
from .release import stale_imports
from .stats import (
    CLUSTERED_DIFFERENCE_METHOD,
    CLUSTERED_RATE_METHOD,
    INFRASTRUCTURE_BOUNDS_METHOD,
    LETTER_DISPLAY_METHOD,
    clustered_difference_from_counts,
    clustered_rate_from_counts,
    compact_letter_display,
    discordant_counts,
    holm,
    leader_tier,
    mcnemar_exact_many,
    paired_difference_from_counts,
    pareto_frontier,
    standard_error,
    success_bounds,
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


def leaderboard_order(imports: list[dict]) -> list[dict]:
    """The leaderboard's order: most passes first, then by slug."""
    return sorted(imports, key=lambda i: (-i["passes"], i["model"]))


WILSON_METHOD = "Wilson score interval; tasks taken as independent draws"
STANDARD_ERROR_METHOD = (
    "standard error of the mean with the sample variance, sqrt(p(1-p)/(n-1)) (Miller 2024, "
    "eq. 2); tasks taken as independent draws"
)
PER_SOURCE_METHOD = "per source: passes of its tasks, with the Wilson score interval"
TIER_METHOD = (
    "leader's tier: the leader and every model whose Holm-adjusted exact McNemar p against it "
    "is at least alpha; letters: " + LETTER_DISPLAY_METHOD + ", differing meaning a "
    "Holm-adjusted p below alpha"
)
MARK_RULE = (
    "a pair is marked when its exact McNemar p with the errors resolved one way or the other "
    "falls on the other side of alpha = {alpha} from its reported p (all three unadjusted)"
)


def which_to_cite(tasks: int, sources: int) -> str:
    """The report's one sentence on which interval to cite, and why."""
    return (
        f"Cite the clustered interval: tasks of one source succeed or fail together, so for a "
        f"claim about the benchmark (sources like these, not just these tasks) the "
        f"{sources} sources, not the {tasks} tasks, are the independent draws; the Wilson "
        f"interval fits only a claim in which tasks are the unit (new tasks drawn "
        f"independently from these same sources)."
    )


FEW_SOURCES = (
    "With few sources the clustered standard error is biased low (Miller 2024), so its "
    "interval is, if anything, still too narrow."
)


def letters_text(letters: list[str]) -> str:
    """A model's letters as one cell: run together ('ab'), or with spaces when some letter has
    more than one character (past 'z': 'z aa')."""
    return ("" if all(len(x) == 1 for x in letters) else " ").join(letters)


def paired_counts(order: list[str], bits: dict[str, int], tasks: int) -> list[dict]:
    """Every pair (a before b in `order`) with its tasks solved by both, only a, only b,
    neither, from each model's successes as a bitset over one task order."""
    pairs = []
    for a, b in combinations(order, 2):
        only_a, only_b = discordant_counts(bits[a], bits[b])
        both = (bits[a] & bits[b]).bit_count()
        pairs.append(
            {
                "a": a,
                "b": b,
                "tasks": tasks,
                "both": both,
                "only_a": only_a,
                "only_b": only_b,
                "neither": tasks - both - only_a - only_b,
            }
        )
    return pairs


def paired_tests(
    order: list[str], bits: dict[str, int], tasks: int, alpha: float = ALPHA
) -> list[dict]:
    """`paired_counts` with each pair's exact McNemar p, Holm-adjusted over all pairs, and
    whether the adjusted p is below alpha."""
    pairs = paired_counts(order, bits, tasks)
    p_exact = mcnemar_exact_many([(p["only_a"], p["only_b"]) for p in pairs])
    for pair, p, p_adj in zip(pairs, p_exact, holm(p_exact), strict=True):
        pair["p_exact"], pair["p_holm"], pair["significant"] = p, p_adj, p_adj < alpha
    return pairs


def tiers(order: list[str], pairs: list[dict], alpha: float = ALPHA) -> dict[str, dict]:
    """Per model (`order` best first, `pairs` from `paired_tests`): whether it is in the
    leader's tier (its Holm-adjusted p against the leader is at least alpha) and its letters
    (two models share a letter exactly when their Holm-adjusted p is at least alpha)."""
    holm_p = {(p["a"], p["b"]): p["p_holm"] for p in pairs}
    leader = order[0]
    tier = set(leader_tier(order, {m: holm_p[leader, m] for m in order[1:]}, alpha))
    letters = compact_letter_display(order, {key: p < alpha for key, p in holm_p.items()})
    return {m: {"leader_tier": m in tier, "letters": letters[m]} for m in order}


def significance(
    order: list[str], bits: dict[str, int], tasks: int, alpha: float = ALPHA
) -> tuple[list[dict], dict[str, dict]]:
    """`paired_tests` and the `tiers` they give: the comparison summary's tiers. The report's
    analysis calls the two parts itself (it adds to the pairs in between), so both carry the
    same tiers."""
    pairs = paired_tests(order, bits, tasks, alpha)
    return pairs, tiers(order, pairs, alpha)


class _Tasks:
    """The catalog's task order and sources as bitsets over it, as the compactor's
    success_bits are."""

    def __init__(self, catalog: dict) -> None:
        self.position = {t["task_id"]: i for i, t in enumerate(catalog["tasks"])}
        masks = dict.fromkeys((s["source_id"] for s in catalog["sources"]), 0)
        for i, task in enumerate(catalog["tasks"]):
            masks[task["source_id"]] |= 1 << i
        self.sources = [(s["source_id"], s["n_tasks"]) for s in catalog["sources"]]
        self.masks = [masks[sid] for sid, _ in self.sources]
        self.sizes = [n for _, n in self.sources]

    def bits(self, task_ids: list[str]) -> int:
        out = 0
        for task_id in task_ids:
            out |= 1 << self.position[task_id]
        return out


def _errors(imp: dict, tasks: _Tasks) -> int:
    """The tasks whose reported outcome is an infrastructure error, as a bitset."""
    return tasks.bits(imp["infrastructure_errors"]["tasks"])


def leaderboard(
    imports: list[dict], catalog: dict, confidence: float, tier: dict, summary: dict
) -> list[dict]:
    """One row per model (imports reduced by `compactor`), best first: the reported passes;
    the Wilson interval and standard error (tasks independent) beside the clustered standard
    error over sources with its interval and design effect; its `tiers` entry; the
    infrastructure errors' bounds; and, from the comparison summary, the authors' published
    count."""
    source_ids = [s["source_id"] for s in catalog["sources"]]
    sizes = [s["n_tasks"] for s in catalog["sources"]]
    board = leaderboard_order(imports)
    published = {row["model"]: row for row in summary["leaderboard"]}
    rows = []
    for imp in board:
        low, high = wilson_interval(imp["passes"], imp["tasks"], confidence)
        by_source = [imp["passes_by_source"][sid] for sid in source_ids]
        facts = published.get(imp["model"], {})
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
                "clustered": clustered_rate_from_counts(by_source, sizes, confidence),
                "leader_tier": tier[imp["model"]]["leader_tier"],
                "letters": tier[imp["model"]]["letters"],
                "infrastructure_errors": imp["infrastructure_errors"]["count"],
                "infrastructure_bounds": success_bounds(
                    imp["passes"], imp["infrastructure_errors"]["count"], imp["tasks"]
                ),
                "over_budget_records": imp["budget_audit"]["over_budget_count"],
                "published_passes": facts.get("published_passes"),
                "matches_published": facts.get("matches_published"),
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
                    expected="a task of the catalog",
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
                    expected="a source of the catalog",
                    found=source_id,
                )
            by_source[source_id] += passes
        return {
            **outcomes.totals,
            "success_bits": int("".join(reversed(digits)) or "0", 2),
            "passes_by_source": by_source,
        }

    return compact


def paired_comparisons(imports: list[dict], catalog: dict, confidence: float) -> dict:
    """Every pair of models on the same tasks (imports reduced by `compactor`), a ranked above
    b: the discordant counts, the exact McNemar p (Holm-adjusted over all pairs), the paired
    difference a - b with its paired standard error, the same difference with the clustered
    standard error over sources, and what the two models' infrastructure errors could do to
    the test (resolved in favour of a, then of b)."""
    tasks = _Tasks(catalog)
    order = [imp["model"] for imp in leaderboard_order(imports)]
    bits = {imp["model"]: imp["success_bits"] for imp in imports}
    errors = {imp["model"]: _errors(imp, tasks) for imp in imports}
    n = imports[0]["tasks"]
    pairs = paired_tests(order, bits, n)
    resolved = []
    for pair in pairs:
        a, b = bits[pair["a"]], bits[pair["b"]]
        for won, lost in ((a | errors[pair["a"]], b), (a, b | errors[pair["b"]])):
            resolved.append(discordant_counts(won, lost))
    resolved_p = mcnemar_exact_many(resolved)
    for index, pair in enumerate(pairs):
        a, b = bits[pair["a"]], bits[pair["b"]]
        only_a, only_b = a & ~b, b & ~a
        difference = paired_difference_from_counts(pair["only_a"], pair["only_b"], n, confidence)
        pair.update({f"difference_{k}": v for k, v in difference.items()})
        pair["clustered"] = clustered_difference_from_counts(
            [(only_a & mask).bit_count() for mask in tasks.masks],
            [(only_b & mask).bit_count() for mask in tasks.masks],
            tasks.sizes,
            confidence,
        )
        reported = pair["p_exact"] < ALPHA
        ways = {}
        for way, offset in (("favour_a", 0), ("favour_b", 1)):
            counts = resolved[2 * index + offset]
            ways[way] = {
                "only_a": counts[0],
                "only_b": counts[1],
                "p_exact": resolved_p[2 * index + offset],
            }
        pair["infrastructure"] = {
            **ways,
            "marked": any((w["p_exact"] < ALPHA) != reported for w in ways.values()),
        }
    return {
        "test": "exact McNemar (two-sided binomial test on discordant tasks)",
        "correction": f"Holm-Bonferroni over {len(pairs)} pairs, family-wise alpha {ALPHA}",
        "difference": f"paired difference in success rate (a - b), {confidence:.0%} "
        "normal interval with the paired standard error (tasks independent)",
        "clustered_difference": CLUSTERED_DIFFERENCE_METHOD,
        "infrastructure": f"{INFRASTRUCTURE_BOUNDS_METHOD}; {MARK_RULE.format(alpha=ALPHA)}",
        "tiers": TIER_METHOD,
        "marked_pairs": sum(p["infrastructure"]["marked"] for p in pairs),
        "pairs": pairs,
    }


def per_source(imports: list[dict], catalog: dict, confidence: float) -> list[dict]:
    rows = []
    for source in catalog["sources"]:
        sid, n = source["source_id"], source["n_tasks"]
        passes = {imp["model"]: imp["passes_by_source"][sid] for imp in imports}
        intervals = {m: wilson_interval(k, n, confidence) if n else None for m, k in passes.items()}
        rows.append(
            {
                "source_id": sid,
                "title": source["title"],
                "tasks": n,
                "passes": passes,
                "rates": {m: (k / n if n else None) for m, k in passes.items()},
                "wilson": {
                    m: None if i is None else {"low": i[0], "high": i[1]}
                    for m, i in intervals.items()
                },
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
                    # the protocol-conformance certificate (afbench.conformance): None for
                    # verdicts and for summaries imported before certificates existed
                    "conformant": config.get("conformant"),
                    "conformance_reasons": (config.get("conformance") or {}).get("reasons", []),
                }
            )
    return rows


def analyse(
    summary: dict, imports: list[dict], catalog: dict, runs: list[dict], confidence: float
) -> dict:
    paired = paired_comparisons(imports, catalog, confidence)
    tier = tiers([imp["model"] for imp in leaderboard_order(imports)], paired["pairs"])
    return {
        **record(ANALYSIS),
        "note": summary["note"],
        "license": summary["license"],
        "release": summary["release"],
        "confidence": confidence,
        "source_condition": summary["source_condition"],
        "budget_usd": summary["budget_usd"],
        "alpha": ALPHA,
        "methods": {
            "success_rate_independent": WILSON_METHOD,
            "standard_error": STANDARD_ERROR_METHOD,
            "success_rate_clustered": CLUSTERED_RATE_METHOD,
            "tiers": TIER_METHOD,
            "infrastructure_bounds": "passes with every infrastructure error as a failure "
            "(as reported) .. as a success",
            "per_source": PER_SOURCE_METHOD,
            "which_to_cite": which_to_cite(
                catalog["counts"]["tasks"], catalog["counts"]["sources"]
            ),
            "few_sources": FEW_SOURCES,
        },
        "published": summary["published"],
        "leaderboard": leaderboard(imports, catalog, confidence, tier, summary),
        "paired": paired,
        "per_source": per_source(imports, catalog, confidence),
        "cost_success": cost_success(imports),
        "budget_audit": summary["budget_audit"],
        "local_runs": local_run_rows(runs),
    }
