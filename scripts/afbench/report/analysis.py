"""The analysis behind the report, computed only from the imports (never hand-entered)."""

from __future__ import annotations

from itertools import combinations

from afbench.core.errors import AfbenchError, Problem, raise_if
from afbench.core.stats import (
    CLUSTERED_DIFFERENCE_METHOD,
    CLUSTERED_RATE_METHOD,
    CR0_NOTE,
    INFRASTRUCTURE_BOUNDS_METHOD,
    LETTER_DISPLAY_METHOD,
    SIGN_FLIP_METHOD,
    bell_mccaffrey_df,
    clustered_difference_from_counts,
    clustered_rate_from_counts,
    compact_letter_display,
    discordant_counts,
    holm,
    leader_tier,
    mcnemar_exact_many,
    paired_difference_from_counts,
    pareto_frontier,
    sign_flip_p,
    sign_flip_smallest_p,
    standard_error,
    success_bounds,
    wilson_interval,
)
from afbench.kinds import ANALYSIS
from afbench.release.identity import stale_imports

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
EXACT_TEST = (
    "exact McNemar test over tasks (tasks as the unit): two-sided, tail-doubled, p = min(1, "
    "2·P(X <= min(only_a, only_b))) with X ~ Binomial(only_a + only_b, 1/2); not mid-p"
)
DECISIONS = (
    "the report's decisions (★ tier, letters, *) come from the source-aware test, since its "
    "claims are about the benchmark (sources like these); the exact McNemar decisions, with "
    "tasks as the unit, stand beside them"
)
TIER_METHOD = (
    "leader's tier: the leader and every model whose Holm-adjusted sign-flip p (sources as the "
    "unit) against it is at least alpha; letters: " + LETTER_DISPLAY_METHOD + ", differing "
    "meaning a Holm-adjusted sign-flip p below alpha. The same with the exact McNemar test "
    "(tasks as the unit) is given beside them as leader_tier_tasks_as_unit and "
    "letters_tasks_as_unit"
)
MARK_RULE = (
    "a pair is marked † when the decision shown (its Holm-adjusted sign-flip p below alpha = "
    "{alpha}, over the whole family) changes when the whole family is recomputed with a's "
    "infrastructure errors counted as solved, or with b's"
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
    "With few sources the plain clustered standard error (Miller 2024, eq. 4) is biased low "
    "and a normal quantile too small: its 95% intervals covered 0.88-0.94 of simulated releases "
    "(bench/coverage.py). The clustered intervals here use the CR2 correction and a t quantile "
    "on the Bell-McCaffrey degrees of freedom (0.936-0.966 there), shown with the number of "
    "sources."
)


def by_source(bits: int, masks: list[int]) -> list[int]:
    """A bitset's count in each source (`masks`: each source's tasks as a bitset)."""
    return [(bits & mask).bit_count() for mask in masks]


def source_sums(a: int, b: int, masks: list[int]) -> list[int]:
    """Per source, tasks only a solved minus tasks only b solved: the sign-flip test's t_c."""
    only_a, only_b = a & ~b, b & ~a
    return [(only_a & m).bit_count() - (only_b & m).bit_count() for m in masks]


def count_differences(a: list[int], b: list[int]) -> list[int]:
    """`source_sums` from each model's own count in each source (`by_source`): in a source,
    the tasks only a solved minus those only b solved are a's successes minus b's, the tasks
    both solved cancelling out. One count a model instead of two a pair."""
    return [x - y for x, y in zip(a, b, strict=True)]


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
    order: list[str], bits: dict[str, int], tasks: int, masks: list[int], alpha: float = ALPHA
) -> list[dict]:
    """`paired_counts` with each pair's two tests, each Holm-adjusted over all pairs: the
    sign-flip randomisation over sources (`masks`: each source's tasks as a bitset over the
    same task order) — p_sign_flip, p_sign_flip_holm and `significant`, the decision shown —
    and the exact McNemar test over tasks — p_exact, p_holm, significant_tasks_as_unit."""
    pairs = paired_counts(order, bits, tasks)
    p_exact = mcnemar_exact_many([(p["only_a"], p["only_b"]) for p in pairs])
    counts = {model: by_source(bits[model], masks) for model in order}
    p_flip = [sign_flip_p(count_differences(counts[p["a"]], counts[p["b"]])) for p in pairs]
    for pair, p, p_adj, q, q_adj in zip(
        pairs, p_exact, holm(p_exact), p_flip, holm(p_flip), strict=True
    ):
        pair.update(
            {
                "p_exact": p,
                "p_holm": p_adj,
                "significant_tasks_as_unit": p_adj < alpha,
                "p_sign_flip": q,
                "p_sign_flip_holm": q_adj,
                "significant": q_adj < alpha,
            }
        )
    return pairs


def tiers(
    order: list[str], pairs: list[dict], alpha: float = ALPHA, key: str = "p_sign_flip_holm"
) -> dict[str, dict]:
    """Per model (`order` best first, `pairs` from `paired_tests`): whether it is in the
    leader's tier (its Holm-adjusted p against the leader, `key`, is at least alpha) and its
    letters (two models share a letter exactly when their Holm-adjusted p is at least alpha).
    `key` p_sign_flip_holm: sources as the unit (the decisions shown); p_holm: tasks."""
    holm_p = {(p["a"], p["b"]): p[key] for p in pairs}
    leader = order[0]
    tier = set(leader_tier(order, {m: holm_p[leader, m] for m in order[1:]}, alpha))
    letters = compact_letter_display(order, {k: p < alpha for k, p in holm_p.items()})
    return {m: {"leader_tier": m in tier, "letters": letters[m]} for m in order}


def both_tiers(order: list[str], pairs: list[dict], alpha: float = ALPHA) -> dict[str, dict]:
    """`tiers` from the source-aware test (leader_tier, letters) with those from the exact
    McNemar test beside them (leader_tier_tasks_as_unit, letters_tasks_as_unit)."""
    shown = tiers(order, pairs, alpha)
    tasks = tiers(order, pairs, alpha, key="p_holm")
    return {
        m: {
            **shown[m],
            "leader_tier_tasks_as_unit": tasks[m]["leader_tier"],
            "letters_tasks_as_unit": tasks[m]["letters"],
        }
        for m in order
    }


def significance(
    order: list[str], bits: dict[str, int], tasks: int, masks: list[int], alpha: float = ALPHA
) -> tuple[list[dict], dict[str, dict]]:
    """`paired_tests` and the `both_tiers` they give: the comparison summary's tiers. The
    report's analysis calls the two parts itself (it adds to the pairs in between), so both
    carry the same tiers."""
    pairs = paired_tests(order, bits, tasks, masks, alpha)
    return pairs, both_tiers(order, pairs, alpha)


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


def _union(first: dict, second: dict) -> dict:
    """The union of two resolved clustered intervals: the bounds' interval."""
    return {"low": min(first["low"], second["low"]), "high": max(first["high"], second["high"])}


def leaderboard(
    imports: list[dict], catalog: dict, confidence: float, tier: dict, summary: dict
) -> list[dict]:
    """One row per model (imports reduced by `compactor`), best first: the reported passes;
    the Wilson interval and standard error (tasks independent) beside the clustered (CR2)
    interval over sources with its degrees of freedom and design effect; its `both_tiers`
    entry; the infrastructure errors' bounds, with the union of the clustered intervals of the
    errors counted as failures and as successes; and, from the comparison summary, the
    authors' published count."""
    tasks = _Tasks(catalog)
    source_ids = [sid for sid, _ in tasks.sources]
    board = leaderboard_order(imports)
    published = {row["model"]: row for row in summary["leaderboard"]}
    rows = []
    for imp in board:
        low, high = wilson_interval(imp["passes"], imp["tasks"], confidence)
        passes_by_source = [imp["passes_by_source"][sid] for sid in source_ids]
        errors = by_source(_errors(imp, tasks), tasks.masks)
        facts = published.get(imp["model"], {})
        clustered = clustered_rate_from_counts(passes_by_source, tasks.sizes, confidence)
        solved = clustered_rate_from_counts(
            [k + e for k, e in zip(passes_by_source, errors, strict=True)], tasks.sizes, confidence
        )
        bounds = success_bounds(imp["passes"], imp["infrastructure_errors"]["count"], imp["tasks"])
        rows.append(
            {
                "model": imp["model"],
                "display_name": imp["display_name"],
                "passes": imp["passes"],
                "tasks": imp["tasks"],
                "success_rate": imp["success_rate"],
                "wilson_low": low,
                "wilson_high": high,
                "standard_error": standard_error(imp["passes"], imp["tasks"])
                if imp["tasks"] >= 2
                else None,  # one task has no sample variance
                "clustered": clustered,
                **tier[imp["model"]],
                "infrastructure_errors": imp["infrastructure_errors"]["count"],
                "infrastructure_bounds": {
                    **bounds,
                    "clustered": _union(clustered, solved),
                },
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


def _resolved_family(
    order: list[str],
    errors: dict[str, int],
    counts: dict[str, list[int]],
    solved: dict[str, list[int]],
    pairs: list[dict],
) -> dict[str, tuple[list[float], list[float]]]:
    """Per model with infrastructure errors: the whole family's sign-flip p-values and their
    Holm adjustment with that model's errors counted as solved (every other model as
    reported). Only the pairs with that model change; the rest keep their p. `counts` and
    `solved`: each model's successes by source, without and with its errors."""
    reported = [p["p_sign_flip"] for p in pairs]
    family = {}
    for model in order:
        if not errors[model]:
            continue
        resolved = {**counts, model: solved[model]}
        p = list(reported)
        for i, pair in enumerate(pairs):
            if model in (pair["a"], pair["b"]):
                p[i] = sign_flip_p(count_differences(resolved[pair["a"]], resolved[pair["b"]]))
        family[model] = (p, holm(p))
    return family


def _changed_tiers(
    order: list[str], pairs: list[dict], family: dict, shown: dict[str, dict]
) -> list[dict]:
    """The resolutions under which the ★ tier or the letters would differ from those shown."""
    changes = []
    for model, (p, adjusted) in family.items():
        decided = [a < ALPHA for a in adjusted]
        if decided == [pair["significant"] for pair in pairs]:
            continue  # the same decisions give the same tier and letters
        resolved = [
            {**pair, "p_sign_flip": q, "p_sign_flip_holm": q_adj}
            for pair, q, q_adj in zip(pairs, p, adjusted, strict=True)
        ]
        tier = tiers(order, resolved)
        if all(tier[m] == {k: shown[m][k] for k in tier[m]} for m in order):
            continue
        changes.append(
            {
                "errors_solved_for": model,
                "leader_tier": [m for m in order if tier[m]["leader_tier"]],
                "letters": {m: tier[m]["letters"] for m in order},
                "leader_tier_changes": any(
                    tier[m]["leader_tier"] != shown[m]["leader_tier"] for m in order
                ),
                "letters_change": any(tier[m]["letters"] != shown[m]["letters"] for m in order),
            }
        )
    return changes


def paired_comparisons(imports: list[dict], catalog: dict, confidence: float) -> dict:
    """Every pair of models on the same tasks (imports reduced by `compactor`), a ranked above
    b: the discordant counts; the sign-flip randomisation test over sources and the exact
    McNemar test over tasks, each Holm-adjusted over all pairs; the paired difference a - b
    with its paired standard error (tasks independent) and with its CR2 interval over sources;
    and what the two models' infrastructure errors could do to the decision shown (each
    resolved in favour of a, then of b, the whole family recomputed), with the tier and
    letter changes that could follow."""
    tasks = _Tasks(catalog)
    order = [imp["model"] for imp in leaderboard_order(imports)]
    bits = {imp["model"]: imp["success_bits"] for imp in imports}
    errors = {imp["model"]: _errors(imp, tasks) for imp in imports}
    n = imports[0]["tasks"]
    pairs = paired_tests(order, bits, n, tasks.masks)
    counts = {model: by_source(bits[model], tasks.masks) for model in order}
    solved = {model: by_source(bits[model] | errors[model], tasks.masks) for model in order}
    family = _resolved_family(order, errors, counts, solved, pairs)
    resolved = []
    for pair in pairs:
        a, b = bits[pair["a"]], bits[pair["b"]]
        for won, lost in ((a | errors[pair["a"]], b), (a, b | errors[pair["b"]])):
            resolved.append(discordant_counts(won, lost))
    resolved_p = mcnemar_exact_many(resolved)

    def clustered(a: int, b: int, count_a: list[int], count_b: list[int]) -> dict:
        # in a source, only a = a's successes - both's, only b = b's successes - both's
        both = by_source(a & b, tasks.masks)
        return clustered_difference_from_counts(
            count_differences(count_a, both),
            count_differences(count_b, both),
            tasks.sizes,
            confidence,
        )

    for index, pair in enumerate(pairs):
        a, b = bits[pair["a"]], bits[pair["b"]]
        difference = (
            paired_difference_from_counts(pair["only_a"], pair["only_b"], n, confidence)
            if n >= 2
            # one task: the difference is its own, with no spread to give it an error
            else {
                "difference": (pair["only_a"] - pair["only_b"]) / n,
                "standard_error": None,
                "low": None,
                "high": None,
            }
        )
        pair.update({f"difference_{k}": v for k, v in difference.items()})
        count_a, count_b = counts[pair["a"]], counts[pair["b"]]
        pair["clustered"] = clustered(a, b, count_a, count_b)
        ways = {}
        for way, model, offset in (("favour_a", pair["a"], 0), ("favour_b", pair["b"], 1)):
            only_a, only_b = resolved[2 * index + offset]
            p, adjusted = family.get(model, (None, None))
            p_flip = pair["p_sign_flip"] if p is None else p[index]
            p_flip_holm = pair["p_sign_flip_holm"] if adjusted is None else adjusted[index]
            won = (
                (a | errors[pair["a"]], b, solved[pair["a"]], count_b)
                if way == "favour_a"
                else (a, b | errors[pair["b"]], count_a, solved[pair["b"]])
            )
            ways[way] = {
                "only_a": only_a,
                "only_b": only_b,
                "p_exact": resolved_p[2 * index + offset],
                "p_sign_flip": p_flip,
                "p_sign_flip_holm": p_flip_holm,
                "significant": p_flip_holm < ALPHA,
                "clustered": clustered(*won),
            }
        pair["infrastructure"] = {
            **ways,
            "marked": any(w["significant"] != pair["significant"] for w in ways.values()),
            "clustered": _union(ways["favour_a"]["clustered"], ways["favour_b"]["clustered"]),
        }
    shown = both_tiers(order, pairs)
    sources = sum(1 for size in tasks.sizes if size)
    smallest = sign_flip_smallest_p(sources, len(pairs))
    return {
        "decisions": DECISIONS,
        "test": SIGN_FLIP_METHOD,
        "test_tasks_as_unit": EXACT_TEST,
        "correction": f"Holm-Bonferroni over all {len(pairs)} pairs of the {len(order)} models, "
        f"for each test separately; family-wise alpha {ALPHA}",
        "sources": sources,
        "difference": f"paired difference in success rate (a - b), {confidence:.0%} "
        "normal interval with the paired standard error (tasks independent)",
        "clustered_difference": CLUSTERED_DIFFERENCE_METHOD,
        "infrastructure": f"{INFRASTRUCTURE_BOUNDS_METHOD}; {MARK_RULE.format(alpha=ALPHA)}",
        "tiers": TIER_METHOD,
        "smallest_p_holm": smallest,
        "decidable": bool(pairs) and smallest < ALPHA,
        "marked_pairs": sum(p["infrastructure"]["marked"] for p in pairs),
        "tier_changes": _changed_tiers(order, pairs, family, shown),
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
                    # the protocol-conformance certificate (afbench.runs.conformance): None for
                    # verdicts and for summaries imported before certificates existed
                    "conformant": config.get("conformant"),
                    "conformance_reasons": (config.get("conformance") or {}).get("reasons", []),
                    # "not certified": a check left a trial uncompared (afbench.runs.conformance)
                    "certification": (config.get("conformance") or {}).get("status"),
                }
            )
    return rows


def conventions(catalog: dict, pairs: int) -> dict:
    """The conventions behind every interval and decision, written down once."""
    sizes = [s["n_tasks"] for s in catalog["sources"]]
    sources = sum(1 for size in sizes if size)
    return {
        "alpha": ALPHA,
        "two_sided": True,
        "exact_p": "tail-doubled (not mid-p): " + EXACT_TEST,
        "holm_family": f"all {pairs} pairs of the models compared, once for each test",
        "sources": sources,
        "tasks": sum(sizes),
        "df": bell_mccaffrey_df(sizes),
        "df_method": "Bell-McCaffrey (2002) with independent tasks; each interval has its own "
        "df (its 'df' field), under the intra-source correlation it estimates (Imbens & "
        "Kolesar 2016)",
        "randomisation": {
            "draws": f"all 2^{sources} = {2**sources:,} sign patterns, counted exactly",
            "seed": None,
            "monte_carlo_error": 0.0,
        },
    }


def analyse(
    summary: dict, imports: list[dict], catalog: dict, runs: list[dict], confidence: float
) -> dict:
    paired = paired_comparisons(imports, catalog, confidence)
    tier = both_tiers([imp["model"] for imp in leaderboard_order(imports)], paired["pairs"])
    return ANALYSIS.record(
        note=summary["note"],
        license=summary["license"],
        release=summary["release"],
        confidence=confidence,
        source_condition=summary["source_condition"],
        budget_usd=summary["budget_usd"],
        alpha=ALPHA,
        methods={
            "success_rate_independent": WILSON_METHOD,
            "standard_error": STANDARD_ERROR_METHOD,
            "success_rate_clustered": CLUSTERED_RATE_METHOD,
            "clustered_difference": CLUSTERED_DIFFERENCE_METHOD,
            "clustered_cr0": CR0_NOTE,
            "decisions": DECISIONS,
            "paired_test": SIGN_FLIP_METHOD,
            "paired_test_tasks_as_unit": EXACT_TEST,
            "tiers": TIER_METHOD,
            "infrastructure_bounds": "passes with every infrastructure error as a failure "
            "(as reported) .. as a success; its clustered interval is the union of the two "
            "resolutions' clustered intervals",
            "per_source": PER_SOURCE_METHOD,
            "which_to_cite": which_to_cite(
                catalog["counts"]["tasks"], catalog["counts"]["sources"]
            ),
            "few_sources": FEW_SOURCES,
            "conventions": conventions(catalog, len(paired["pairs"])),
        },
        published=summary["published"],
        leaderboard=leaderboard(imports, catalog, confidence, tier, summary),
        paired=paired,
        per_source=per_source(imports, catalog, confidence),
        cost_success=cost_success(imports),
        budget_audit=summary["budget_audit"],
        local_runs=local_run_rows(runs),
    )


# --- relations (afbench.kinds.relations): the report's analysis against what it read --------
def analysis_of_summary(analysis: dict, summary: dict) -> list[Problem]:
    """ANALYSIS_OF_SUMMARY: the analysis shows the summary's models with its counts."""
    analysis = ANALYSIS.view(analysis)
    if (analysis.source_condition, analysis.budget_usd) != (
        summary["source_condition"],
        summary["budget_usd"],
    ):
        return []  # the analysis of another condition's imports
    rows = {r["model"]: r for r in summary["leaderboard"]}
    shown = {r["model"]: r for r in analysis.leaderboard}
    problems = []
    if sorted(rows) != sorted(shown):
        problems.append(
            Problem(
                "the analysis shows other models than the summary",
                field="leaderboard",
                expected=", ".join(sorted(rows)),
                found=", ".join(sorted(shown)),
            )
        )
    for model in sorted(set(rows) & set(shown)):
        for field in ("passes", "tasks", "success_rate", "infrastructure_errors"):
            if shown[model][field] != rows[model][field]:
                problems.append(
                    Problem(
                        "the analysis' row is not the summary's",
                        field=f"leaderboard.{model}.{field}",
                        expected=rows[model][field],
                        found=shown[model][field],
                    )
                )
    return problems


def analysis_of_receipt(analysis: dict, receipt: dict) -> list[Problem]:
    """ANALYSIS_OF_RECEIPT: the provenance the report shows is the receipt's files."""
    analysis = ANALYSIS.view(analysis)
    if analysis.provenance["files"] == receipt["files"]:
        return []
    return [
        Problem(
            "the provenance shown is not the receipt's files",
            field="provenance.files",
            expected=f"{len(receipt['files'])} files as verified",
            found=f"{len(analysis.provenance['files'])} files",
        )
    ]


def analysis_of_run(analysis: dict, run: dict) -> list[Problem]:
    """ANALYSIS_OF_RUN: each configuration of the run the report shows has the run's counts."""
    analysis = ANALYSIS.view(analysis)
    problems = []
    configurations = {c["configuration"]: c for c in run["configurations"]}
    for index, shown in enumerate(analysis.local_runs):
        if shown["run"] != run["run"]:
            continue
        config = configurations.get(shown["configuration"])
        if config is None:
            problems.append(
                Problem(
                    "the analysis shows a configuration the run does not have",
                    field=f"local_runs[{index}].configuration",
                    expected="one of the run's configurations",
                    found=shown["configuration"],
                )
            )
            continue
        for field in ("counts", "success_rate", "conformant"):
            if shown[field] != config[field]:
                problems.append(
                    Problem(
                        "the analysis' configuration is not the run's",
                        field=f"local_runs[{index}].{field}",
                        expected=config[field],
                        found=shown[field],
                    )
                )
    return problems
