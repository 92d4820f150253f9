"""Import of the official per-model results: strict validation against the MANIFEST, a budget
audit, and comparisons refused unless they are like for like."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime

from .budget import budget_audit
from .csvtable import parse_cost, parse_int, read_table
from .errors import AfbenchError, Problem, raise_if
from .records import MODEL_IMPORT, SUMMARY, record

REPORTED_NOTE = (
    "Summary of results reported by the benchmark's authors (source-present "
    "condition as pinned), taken as given. It is not a local capability score and "
    "is never merged with local runs."
)
CONSTANT_FIELDS = ("source_condition", "scaffold", "tools", "stopping_policy")
COMPARED_FIELDS = ("task_set", *CONSTANT_FIELDS, "budget_usd")


@dataclass(frozen=True)
class ModelSpec:
    """One model's results file as config pins it."""

    slug: str
    display_name: str
    pinned_condition: str


def _parse_finished(text: str) -> str | None:
    if text == "":
        return None
    try:
        if len(text) == 10:
            date.fromisoformat(text)
        else:
            datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(text) from None
    return text


def parse_results(
    data: bytes,
    file: str,
    mapping: dict[str, str],
    manifest: dict[str, dict],
    pinned_condition: str,
) -> tuple[list[dict], dict, list[str]]:
    """Validated per-task records; every problem in the file is reported, not just the first."""
    table = read_table(data, file, mapping)
    problems: list[Problem] = []
    records, first_row = [], {}
    seen_values: dict[str, list[tuple[str, int]]] = {field: [] for field in CONSTANT_FIELDS}

    def bad(number, field, message, expected=None, found=None):
        problems.append(
            Problem(message, file=file, row=number, field=field, expected=expected, found=found)
        )

    for row, number in zip(table.rows, table.row_numbers, strict=True):
        tid = row["task_id"]
        if tid in first_row:
            bad(number, "task_id", f"duplicate task_id (first at row {first_row[tid]})", found=tid)
            continue
        first_row[tid] = number
        task = manifest.get(tid)
        if task is None:
            bad(number, "task_id", "unknown task_id (not in MANIFEST)", found=tid)
            continue
        for field in ("source_id", "target_declaration"):
            if row[field] != task[field]:
                bad(
                    number,
                    field,
                    "differs from the MANIFEST row",
                    expected=task[field],
                    found=row[field],
                )
        if row["n_obligations"] != str(task["n_obligations"]):
            bad(
                number,
                "n_obligations",
                "differs from the MANIFEST row",
                expected=task["n_obligations"],
                found=row["n_obligations"],
            )
        n = task["n_obligations"]
        success = {"true": True, "false": False}.get(row["success"])
        if success is None:
            bad(number, "success", "not a boolean", expected="true or false", found=row["success"])
        accepted = cost = None
        try:
            accepted = parse_int(
                row["obligations_accepted"],
                file=file,
                row=number,
                field="obligations_accepted",
                maximum=n,
            )
        except AfbenchError as exc:
            problems.extend(exc.problems)
        try:
            cost = parse_cost(row["cost_usd"], file=file, row=number, field="cost_usd")
        except AfbenchError as exc:
            problems.extend(exc.problems)
        stop = row["stop_reason"]
        if not stop.strip():
            bad(number, "stop_reason", "empty value", expected="e.g. solved, gave_up")
        if success is not None:
            if success != (stop == "solved"):
                bad(
                    number,
                    "stop_reason",
                    "success must hold if and only if stop_reason is 'solved'",
                    expected="solved" if success else "not solved",
                    found=stop,
                )
            if success and accepted is not None and accepted != n:
                bad(
                    number,
                    "obligations_accepted",
                    "a success needs every obligation accepted",
                    expected=n,
                    found=accepted,
                )
        try:
            finished = _parse_finished(row["finished_at"])
        except ValueError:
            finished = None
            bad(
                number,
                "finished_at",
                "not an ISO-8601 date or datetime",
                expected="e.g. 2026-08-01 or 2026-08-01T12:00:00Z, or empty",
                found=row["finished_at"],
            )
        for field in CONSTANT_FIELDS:
            seen_values[field].append((row[field], number))
        records.append(
            {
                "task_id": tid,
                "source_id": task["source_id"],
                "success": success,
                "n_obligations": n,
                "obligations_accepted": accepted,
                "cost_usd": cost,
                "stop_reason": stop,
                "finished_at": finished,
            }
        )
    missing = [tid for tid in manifest if tid not in first_row]
    if missing:
        problems.append(
            Problem(
                f"{len(missing)} MANIFEST task(s) missing: "
                f"{', '.join(missing[:20])}{' ...' if len(missing) > 20 else ''}",
                file=file,
                field="task_id",
            )
        )
    constants = {}
    for field, values in seen_values.items():
        if not values:
            continue
        counts = Counter(value for value, _ in values)
        constants[field] = counts.most_common(1)[0][0]
        for value, number in values:
            if value != constants[field]:
                bad(
                    number,
                    field,
                    "must be constant within the file (most rows differ)",
                    expected=constants[field],
                    found=value,
                )
    if constants.get("source_condition", pinned_condition) != pinned_condition:
        problems.append(
            Problem(
                "file's source condition differs from its pinned condition",
                file=file,
                field="source_condition",
                expected=pinned_condition,
                found=constants["source_condition"],
            )
        )
    raise_if(problems)
    return records, constants, table.extra_columns


def check_request(model: ModelSpec, source_condition: str, budget_usd: float, nominal: float):
    if source_condition != model.pinned_condition:
        raise AfbenchError(
            f"model '{model.slug}' is pinned as {model.pinned_condition}; its results cannot be "
            f"relabelled {source_condition}",
            field="source_condition",
            expected=model.pinned_condition,
            found=source_condition,
        )
    if budget_usd != nominal:
        raise AfbenchError(
            "the budget must be the release's nominal budget; another value "
            "would be a different experiment",
            field="budget_usd",
            expected=nominal,
            found=budget_usd,
        )


def import_model(
    catalog: dict,
    results: tuple[bytes, dict],
    model: ModelSpec,
    columns: dict,
    source_condition: str,
    budget_usd: float,
) -> dict:
    """One model's results file (verified bytes and receipt entry) checked task by task
    against the catalog."""
    check_request(model, source_condition, budget_usd, catalog["release"]["nominal_budget_usd"])
    data, entry = results
    records, constants, extra = parse_results(
        data,
        entry["path"],
        columns,
        {t["task_id"]: t for t in catalog["tasks"]},
        model.pinned_condition,
    )
    return summarize_model(catalog, model, records, constants, budget_usd, entry, extra)


def summarize_model(catalog, model, records, constants, budget_usd, entry, extra) -> dict:
    costs = [r["cost_usd"] for r in records]
    passes = sum(r["success"] for r in records)
    stop_reasons: dict[str, int] = {}
    for r in records:
        stop_reasons[r["stop_reason"]] = stop_reasons.get(r["stop_reason"], 0) + 1
    infra = [r["task_id"] for r in records if r["stop_reason"] == "infrastructure_error"]
    return {
        **record(MODEL_IMPORT),
        "note": REPORTED_NOTE,
        "local_capability_score": None,
        "license": catalog["license"],
        "release": catalog["release"],
        "model": model.slug,
        "display_name": model.display_name,
        "file": entry["path"],
        "inputs": {entry["path"]: entry["actual_sha256"], **catalog["inputs"]},
        "budget_usd": budget_usd,
        **{field: constants.get(field) for field in CONSTANT_FIELDS},
        "tasks": len(records),
        "passes": passes,
        "success_rate": passes / len(records),
        "stop_reasons": dict(sorted(stop_reasons.items())),
        "obligations": {
            "accepted": sum(r["obligations_accepted"] for r in records),
            "total": sum(r["n_obligations"] for r in records),
        },
        "infrastructure_errors": {
            "count": len(infra),
            "tasks": infra,
            "note": "kept and counted as reported (unsolved); never dropped",
        },
        "cost_usd": {
            "total": round(sum(costs), 6),
            "mean": round(sum(costs) / len(costs), 6),
            "median": round(_median(costs), 6),
            "max": max(costs),
            "per_solved_task": round(sum(costs) / passes, 6) if passes else None,
        },
        "finished_at": {
            "known": sum(r["finished_at"] is not None for r in records),
            "unknown": sum(r["finished_at"] is None for r in records),
        },
        "budget_audit": budget_audit(records, budget_usd, model.slug),
        "extra_columns": extra,
        "task_set_sha256": hashlib.sha256(
            "\n".join(sorted(r["task_id"] for r in records)).encode()
        ).hexdigest(),
        "records": records,
    }


def _median(values: list[float]) -> float:
    ordered, middle = sorted(values), len(values) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def compare(imports: list[dict], strict_budget: bool) -> dict:
    """The comparison's validity; refused (an error) unless the imports are like for like."""
    if not imports:
        raise AfbenchError("no models to compare")
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
                    f"comparison refused: models differ in {field}", field=field, found=str(shown)
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


def summarize(imports: list[dict], strict_budget: bool) -> dict:
    comparison = compare(imports, strict_budget)
    board = sorted(imports, key=lambda i: (-i["passes"], i["model"]))
    over = [rec for imp in imports for rec in imp["budget_audit"]["over_budget"]]
    first = imports[0]
    return {
        **record(SUMMARY),
        "note": REPORTED_NOTE,
        "local_capability_score": None,
        "license": first["license"],
        "release": first["release"],
        "source_condition": first["source_condition"],
        "budget_usd": first["budget_usd"],
        "comparison": comparison,
        "leaderboard": [
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
            }
            for rank, i in enumerate(board, start=1)
        ],
        "budget_audit": {
            "budget_usd": first["budget_usd"],
            "over_budget_count": len(over),
            "over_budget": over,
            "strict": strict_budget,
            "note": first["budget_audit"]["note"],
        },
        "inputs": {path: sha for i in imports for path, sha in i["inputs"].items()},
    }


LEADERBOARD_COLUMNS = [
    "rank",
    "model",
    "display_name",
    "passes",
    "tasks",
    "success_rate",
    "mean_cost_usd",
    "cost_per_solved_usd",
    "infrastructure_errors",
    "over_budget_records",
]
