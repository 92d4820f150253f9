"""The comparison of model imports: refused unless like for like (one task set, source
condition, scaffold, tools, stopping policy and budget; each model once), checked against the
authors' published facts, with each model's bounds over its infrastructure errors and the
significance tiers of the paired tests (afbench.report.analysis)."""

from __future__ import annotations

from afbench.core.errors import AfbenchError, Problem, raise_if
from afbench.imports.official import (
    COMPARED_FIELDS,
    CONSTANT_FIELDS,
    REPORTED_NOTE,
    Outcomes,
    distinct_models,
    outcomes,
)
from afbench.kinds import SUMMARY
from afbench.kinds.official import LEADERBOARD_ROW


def compare(imports: list[dict], strict_budget: bool) -> dict:
    """The comparison's validity; refused (an error) unless the imports are like for like."""
    if not imports:
        raise AfbenchError(
            "no models to compare", field="--import", expected="at least one model import"
        )
    distinct_models(imports, "comparison")
    values = {field: {} for field in COMPARED_FIELDS}
    for imp in imports:
        values["task_set"][imp["model"]] = imp["task_set_sha256"]
        for field in (*CONSTANT_FIELDS, "budget_usd"):
            values[field][imp["model"]] = imp[field]
    problems = []
    for field, per_model in values.items():
        distinct = {repr(v) for v in per_model.values()}
        if len(distinct) > 1:
            shown = (
                {m: f"task set {v[:12]}" for m, v in per_model.items()}
                if field == "task_set"
                else per_model
            )
            problems.append(
                Problem(
                    f"comparison refused: models differ in {field}",
                    field=field,
                    expected="one value for every model",
                    found=str(shown),
                )
            )
    raise_if(problems)
    over = [rec for imp in imports for rec in imp["budget_audit"]["over_budget"]]
    if strict_budget and over:
        names = "; ".join(
            f"{r['source']} task {r['task_id']} cost USD {r['cost_usd']:g} "
            f"(USD {r['excess_usd']:g} over)"
            for r in over
        )
        raise AfbenchError(
            f"strict budget comparison refused: {len(over)} reported record(s) exceed the "
            f"USD {imports[0]['budget_usd']:g} budget: {names}. Nothing is capped or removed; "
            f"set import.strict_budget to false (or drop --strict-budget) for a comparison with "
            f"a full budget audit instead",
            field="strict_budget",
        )
    return {
        "valid": True,
        "like_for_like": {f: True for f in COMPARED_FIELDS},
        "strict_budget": strict_budget,
    }


def reduced(imp: dict | Outcomes) -> dict:
    """A model import (or its outcomes, as read_outcomes reads them) without its per-task
    records, with what the comparison takes from them: its successes as a bitset over its tasks
    in task-id order (the same order for every import of one task set, which the comparison
    requires), and each source's tasks as a bitset over that order (the source-aware test's
    clusters)."""
    if isinstance(imp, Outcomes):
        return {**imp.totals, "success_bits": _success_bits(imp), "source_masks": _masks(imp)}
    return {
        **{k: v for k, v in imp.items() if k != "records"},
        "success_bits": _bits(imp),
        "source_masks": _source_masks(imp),
    }


def _success_bits(imp: Outcomes) -> int:
    """Bit i set when the i-th task in task-id order succeeded."""
    successes = imp.successes
    digits = "".join(["1" if successes[i] else "0" for i in reversed(_ranking(imp))])
    return int(digits or "0", 2)


# one entry: the task set ranked last, its ranking, and its sources' masks once asked for
_LAST_RANKING: list[tuple[list, list[int], dict]] = []


def _ranking(imp: Outcomes) -> list[int]:
    """The positions of an import's records in task-id order. Every import of one comparison
    has the same task set, and as afbench writes them the same record order, so the ranking
    of the import before is reused when its records' keys are the same (one list comparison
    instead of decoding and sorting 34,100 ids per model)."""
    basis = imp._keys if imp._ids[0] is None else imp._ids[0]
    if _LAST_RANKING and _LAST_RANKING[0][0] == basis:
        return _LAST_RANKING[0][1]
    ranked = sorted(range(len(imp.task_ids)), key=imp.task_ids.__getitem__)
    _LAST_RANKING[:] = [(basis, ranked, {})]
    return ranked


def _masks(imp: Outcomes) -> dict[str, int]:
    """Each source's tasks as a bitset over task-id order (bit i: the i-th task), in source-id
    order; shared by the imports of one task set in one record order, as the ranking is."""
    ranked = _ranking(imp)
    cached = _LAST_RANKING[0][2]
    sources = imp.source_ids
    if cached.get("sources") == sources:
        return cached["masks"]
    digits = {source: ["0"] * len(ranked) for source in set(sources)}
    for bit, position in enumerate(ranked):
        digits[sources[position]][bit] = "1"
    masks = {s: int("".join(reversed(d)), 2) for s, d in sorted(digits.items())}
    cached.update(sources=sources, masks=masks)
    return masks


def _bits(imp: dict) -> int:
    if "records" not in imp:
        return imp["success_bits"]
    return _success_bits(outcomes(imp))


def _source_masks(imp: dict) -> dict[str, int]:
    if "records" not in imp:
        return imp["source_masks"]
    return _masks(outcomes(imp))


NOTHING_PUBLISHED = {"source": None, "task_rows": None, "passes": {}, "over_budget_usd": {}}
PUBLISHED_NOTE = (
    "Each import checked against what the authors published (config: release.published, "
    "models.<slug>.published_passes and published_over_budget_usd), as published facts with "
    "their source; a difference is shown, never hidden"
)


def check_published(imports: list[dict], published: dict) -> tuple[dict, list[Problem]]:
    """The imports against the authors' published facts: `published` holds the `source`, the
    release's `task_rows` (or None), the published pass count per model slug (`passes`) and
    the published costs above the budget per model slug (`over_budget_usd`). Returns the check
    and one Problem per difference, each naming the model, both values and the source. Task
    rows are checked once every model with a published count is imported (they are counted
    across the published leaderboard's files)."""
    source = published["source"]
    cited = f"(published: {source})"
    problems: list[Problem] = []
    models = {}
    for imp in imports:
        model, passes = imp["model"], imp["passes"]
        want = published["passes"].get(model)
        if want is None:
            models[model] = {"published_passes": None, "passes": passes, "matches": None}
            continue
        models[model] = {
            "published_passes": want,
            "passes": passes,
            "difference": passes - want,
            "matches": passes == want,
        }
        if passes != want:
            problems.append(
                Problem(
                    f"model '{model}': the import has {passes} passes, the authors' leaderboard "
                    f"{want} {cited}",
                    field=f"models.{model}.published_passes",
                    expected=want,
                    found=passes,
                )
            )
    by_model = {imp["model"]: imp for imp in imports}
    over_budget = {}
    for model, costs in sorted(published["over_budget_usd"].items()):
        if model not in by_model:
            continue
        found = sorted(r["cost_usd"] for r in by_model[model]["budget_audit"]["over_budget"])
        want = sorted(costs)
        over_budget[model] = {
            "published_usd": want,
            "imported_usd": found,
            "matches": found == want,
        }
        if found != want:
            problems.append(
                Problem(
                    f"model '{model}': the import's costs above the budget are USD {found}, the "
                    f"authors published USD {want} {cited}",
                    field=f"models.{model}.published_over_budget_usd",
                    expected=want,
                    found=found,
                )
            )
    task_rows = None
    if published["task_rows"] is not None:
        counted = sorted(published["passes"])
        missing = [m for m in counted if m not in by_model]
        task_rows = {"published": published["task_rows"], "models": counted}
        if not counted or missing:
            task_rows.update(
                imported=None,
                matches=None,
                note="not checked: counted across every model with a published pass count; "
                + (f"not imported: {', '.join(missing)}" if counted else "none has one"),
            )
        else:
            rows = sum(by_model[m]["tasks"] for m in counted)
            task_rows.update(imported=rows, matches=rows == published["task_rows"])
            if rows != published["task_rows"]:
                problems.append(
                    Problem(
                        f"the imports of the {len(counted)} published models have {rows} task "
                        f"rows, the authors published {published['task_rows']} {cited}",
                        field="release.published.task_rows",
                        expected=published["task_rows"],
                        found=rows,
                    )
                )
    checked = [m["matches"] for m in models.values() if m["matches"] is not None]
    checked += [o["matches"] for o in over_budget.values()]
    checked += [task_rows["matches"]] if task_rows and task_rows["matches"] is not None else []
    return {
        "source": source,
        "note": PUBLISHED_NOTE,
        "matches": all(checked) if checked else None,
        "models": models,
        "over_budget": over_budget,
        "task_rows": task_rows,
        "differences": [p.message for p in problems],
    }, problems


def summarize(
    imports: list[dict],
    strict_budget: bool,
    published: dict | None = None,
    strict_published: bool = False,
) -> dict:
    """The comparison of model imports (each with its records, or `reduced`): refused unless
    like for like; with the authors' published facts checked (a difference refused only with
    `strict_published`), each model's bounds over its infrastructure errors, and the
    significance tiers of the paired tests (afbench.report.analysis): from the sign-flip test over
    sources, with those of the exact McNemar test over tasks beside them."""
    from afbench.core.stats import success_bounds
    from afbench.report.analysis import ALPHA, TIER_METHOD, leaderboard_order, significance

    comparison = compare(imports, strict_budget)
    check, problems = check_published(imports, published or NOTHING_PUBLISHED)
    if strict_published and problems:
        raise AfbenchError(
            problems=[
                Problem(
                    f"strict published check refused: {p.message}; set import.strict_published "
                    f"to false (or drop --strict-published) to see the difference in the report",
                    field=p.field,
                    expected=p.expected,
                    found=p.found,
                )
                for p in problems
            ]
        )
    board = leaderboard_order(imports)
    order = [i["model"] for i in board]
    masks = _source_masks(imports[0])
    if any(_source_masks(i) != masks for i in imports[1:]):
        raise AfbenchError(
            "comparison refused: the imports put the same tasks in different sources; import "
            "every model again against one catalog",
            field="source_id",
        )
    _, tier = significance(
        order, {i["model"]: _bits(i) for i in imports}, imports[0]["tasks"], list(masks.values())
    )
    over = [rec for imp in imports for rec in imp["budget_audit"]["over_budget"]]
    first = imports[0]
    return SUMMARY.record(
        note=REPORTED_NOTE,
        local_capability_score=None,
        license=first["license"],
        release=first["release"],
        source_condition=first["source_condition"],
        budget_usd=first["budget_usd"],
        comparison=comparison,
        published=check,
        tiers={"alpha": ALPHA, "method": TIER_METHOD},
        leaderboard=[
            {
                "rank": rank,
                "model": i["model"],
                "display_name": i["display_name"],
                "passes": i["passes"],
                "tasks": i["tasks"],
                "success_rate": i["success_rate"],
                "mean_cost_usd": i["cost_usd"]["mean"],
                "cost_per_solved_usd": i["cost_usd"]["per_solved_task"],
                "infrastructure_errors": i["infrastructure_errors"]["count"],
                "over_budget_records": i["budget_audit"]["over_budget_count"],
                **tier[i["model"]],
                **_upper_bound(
                    success_bounds(i["passes"], i["infrastructure_errors"]["count"], i["tasks"])
                ),
                "published_passes": check["models"][i["model"]]["published_passes"],
                "matches_published": check["models"][i["model"]]["matches"],
            }
            for rank, i in enumerate(board, start=1)
        ],
        budget_audit={
            "budget_usd": first["budget_usd"],
            "over_budget_count": len(over),
            "over_budget": over,
            "strict": strict_budget,
            "note": first["budget_audit"]["note"],
        },
        inputs={path: sha for i in imports for path, sha in i["inputs"].items()},
    )


def _upper_bound(bounds: dict) -> dict:
    return {
        "passes_errors_as_successes": bounds["passes_high"],
        "success_rate_errors_as_successes": bounds["rate_high"],
    }


# leaderboard.csv: the summary's leaderboard rows, letters as text
LEADERBOARD_COLUMNS = LEADERBOARD_ROW.names


def summary_of_import(summary: dict, imported: dict) -> list[Problem]:
    """SUMMARY_OF_IMPORT (afbench.kinds.relations): the summary's leaderboard row of the
    model is the import's (passes, tasks, rate, errors), from the same results file."""
    row = next((r for r in summary["leaderboard"] if r["model"] == imported["model"]), None)
    if row is None:
        return [
            Problem(
                "the summary has no row of the model",
                field="leaderboard",
                expected=imported["model"],
                found=", ".join(r["model"] for r in summary["leaderboard"]),
            )
        ]
    problems = []
    facts = {
        "passes": imported["passes"],
        "tasks": imported["tasks"],
        "success_rate": imported["success_rate"],
        "infrastructure_errors": imported["infrastructure_errors"]["count"],
    }
    for field, value in facts.items():
        if row[field] != value:
            problems.append(
                Problem(
                    "the leaderboard row is not the import's",
                    field=f"leaderboard.{imported['model']}.{field}",
                    expected=value,
                    found=row[field],
                )
            )
    digest = imported["inputs"].get(imported["file"])
    if summary["inputs"].get(imported["file"]) != digest:
        problems.append(
            Problem(
                "the summary was made from another results file",
                field=f"inputs.{imported['file']}",
                expected=digest,
                found=summary["inputs"].get(imported["file"]),
            )
        )
    return problems
