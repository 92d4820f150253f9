"""Import of the official per-model results: strict validation against the MANIFEST, a budget
audit, and comparisons refused unless they are like for like."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime
from operator import itemgetter
from pathlib import Path
from typing import NamedTuple

from .budget import budget_audit
from .csvtable import (
    FIRST_ROW,
    cost_column,
    first_rows,
    int_column,
    paused_gc,
    per_distinct,
    raise_found,
    read_table,
)
from .errors import AfbenchError, Problem, raise_if
from .fsutil import canonical_digest
from .records import MODEL_IMPORT, SUMMARY, record

REPORTED_NOTE = (
    "Summary of results reported by the benchmark's authors (source-present "
    "condition as pinned), taken as given. It is not a local capability score and "
    "is never merged with local runs."
)
RESULT_FIELDS = (
    "task_id",
    "source_id",
    "target_declaration",
    "n_obligations",
    "success",
    "obligations_accepted",
    "cost_usd",
    "stop_reason",
    "source_condition",
    "scaffold",
    "tools",
    "stopping_policy",
    "finished_at",
)  # a results file's fields, each mapped to a column (the schema's columns.results)
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


BOOLEANS = {"true": True, "false": False}


_BAD = object()


def _finished_column(texts: list[str], rows: list[int], found: list, order: int, file: str):
    """finished_at: ISO-8601 date or datetime, or empty (unknown)."""

    def parse(text: str) -> object:
        try:
            return _parse_finished(text)
        except ValueError:
            return _BAD

    values = per_distinct(texts, parse)
    if _BAD in values:
        for i, value in enumerate(values):
            if value is _BAD:
                found.append(
                    (
                        rows[i],
                        order,
                        Problem(
                            "not an ISO-8601 date or datetime",
                            file=file,
                            row=rows[i],
                            field="finished_at",
                            expected="e.g. 2026-08-01 or 2026-08-01T12:00:00Z, or empty",
                            found=texts[i],
                        ),
                    )
                )
                values[i] = None
    return values


def parse_results(
    data: bytes,
    file: str,
    mapping: dict[str, str],
    manifest: dict[str, dict],
    pinned_condition: str,
) -> tuple[list[dict], dict, list[str]]:
    """Validated per-task records; every problem in the file is reported, not just the first.

    Checked column by column; the problems come out in row order and, within a row, in the
    order of the checks, followed by the file-level ones."""
    with paused_gc():
        return _parse_results(data, file, mapping, manifest, pinned_condition)


def _parse_results(data, file, mapping, manifest, pinned_condition):
    table = read_table(data, file, mapping)
    found: list = []

    def bad(row: int, order: int, field: str, message: str, expected=None, value=None):
        found.append(
            (
                row,
                order,
                Problem(message, file=file, row=row, field=field, expected=expected, found=value),
            )
        )

    # task ids: each once, each in the MANIFEST (a repeat is reported as such, not as unknown)
    task_ids = table.columns["task_id"]
    tasks = list(map(manifest.get, task_ids))
    valid = [True] * len(task_ids)
    for i, first in first_rows(task_ids):
        valid[i] = False
        bad(
            i + FIRST_ROW,
            0,
            "task_id",
            f"duplicate task_id (first at row {first + FIRST_ROW})",
            value=task_ids[i],
        )
    if None in tasks:
        for i, task in enumerate(tasks):
            if task is None and valid[i]:
                valid[i] = False
                bad(
                    i + FIRST_ROW,
                    0,
                    "task_id",
                    "unknown task_id (not in MANIFEST)",
                    value=task_ids[i],
                )
    if False in valid:
        kept = [i for i, ok in enumerate(valid) if ok]
        column = {field: [texts[i] for i in kept] for field, texts in table.columns.items()}
        tasks = [tasks[i] for i in kept]
        numbers = [i + FIRST_ROW for i in kept]
    else:
        column = table.columns
        numbers = table.row_numbers

    # the MANIFEST's own columns, unchanged
    source_ids = [t["source_id"] for t in tasks]
    n = [t["n_obligations"] for t in tasks]
    as_text = {value: str(value) for value in set(n)}
    expected = {
        "source_id": source_ids,
        "target_declaration": [t["target_declaration"] for t in tasks],
        "n_obligations": list(map(as_text.__getitem__, n)),
    }
    for order, field in enumerate(expected, start=1):
        actual = column[field]
        if actual != expected[field]:
            for i, (want, got) in enumerate(zip(expected[field], actual, strict=True)):
                if want != got:
                    want = n[i] if field == "n_obligations" else want
                    bad(numbers[i], order, field, "differs from the MANIFEST row", want, got)

    # the model's outcome: success, obligations, cost, stop reason, finish time
    success_text = column["success"]
    success = list(map(BOOLEANS.get, success_text))
    if None in success:
        for i, won in enumerate(success):
            if won is None:
                bad(numbers[i], 4, "success", "not a boolean", "true or false", success_text[i])
    accepted = int_column(
        column["obligations_accepted"],
        numbers,
        found,
        5,
        file=file,
        field="obligations_accepted",
        maximum=n,
    )
    cost = cost_column(column["cost_usd"], numbers, found, 6, file=file, field="cost_usd")
    stop = column["stop_reason"]
    empty = per_distinct(stop, lambda reason: not reason.strip())
    solved = per_distinct(stop, lambda reason: reason == "solved")
    won_all = [won is True for won in success]

    def short_success(i: int, got: int, total: int) -> None:
        rule = "a success needs every obligation accepted"
        bad(numbers[i], 9, "obligations_accepted", rule, total, got)

    if True in empty or solved != won_all or None in success or None in accepted:
        for i, (won, reason, got, total) in enumerate(zip(success, stop, accepted, n, strict=True)):
            if empty[i]:
                bad(numbers[i], 7, "stop_reason", "empty value", "e.g. solved, gave_up")
            if won is not None and won != solved[i]:
                bad(
                    numbers[i],
                    8,
                    "stop_reason",
                    "success must hold if and only if stop_reason is 'solved'",
                    "solved" if won else "not solved",
                    reason,
                )
            if won and got is not None and got != total:
                short_success(i, got, total)
    elif accepted != n:  # every row is a clean true/false, so only a short success is left
        for i, (won, got, total) in enumerate(zip(won_all, accepted, n, strict=True)):
            if won and got != total:
                short_success(i, got, total)
    finished = _finished_column(column["finished_at"], numbers, found, 10, file)

    # file-level: every MANIFEST task present, the constant columns constant
    after = []
    if len(numbers) != len(manifest):
        present = set(task_ids)
        missing = [tid for tid in manifest if tid not in present]
        after.append(
            Problem(
                f"{len(missing)} MANIFEST task(s) missing: "
                f"{', '.join(missing[:20])}{' ...' if len(missing) > 20 else ''}",
                file=file,
                field="task_id",
            )
        )
    constants = {}
    for field in CONSTANT_FIELDS if numbers else ():
        values = column[field]
        if values.count(values[0]) == len(values):
            constants[field] = values[0]
            continue
        # the most common value; a tie goes to the value seen first
        constants[field] = Counter(values).most_common(1)[0][0]
        for i, value in enumerate(values):
            if value != constants[field]:
                after.append(
                    Problem(
                        "must be constant within the file (most rows differ)",
                        file=file,
                        row=numbers[i],
                        field=field,
                        expected=constants[field],
                        found=value,
                    )
                )
    if constants.get("source_condition", pinned_condition) != pinned_condition:
        after.append(
            Problem(
                "file's source condition differs from its pinned condition",
                file=file,
                field="source_condition",
                expected=pinned_condition,
                found=constants["source_condition"],
            )
        )
    raise_found(found, after)
    records = [
        {
            "task_id": task_id,
            "source_id": source_id,
            "success": won,
            "n_obligations": total,
            "obligations_accepted": got,
            "cost_usd": usd,
            "stop_reason": reason,
            "finished_at": when,
        }
        for task_id, source_id, won, total, got, usd, reason, when in zip(
            column["task_id"], source_ids, success, n, accepted, cost, stop, finished, strict=True
        )
    ]
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
    budget_usd = float(budget_usd)
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
        "task_set_sha256": canonical_digest(sorted(r["task_id"] for r in records)),
        "records": records,
    }


class Outcomes:
    """A model import without its records, and its records' task, source and success: what
    the comparison and the report read of an import. Read from a file, the ids are made only
    when asked for (the comparison needs the totals alone)."""

    def __init__(self, totals: dict, task_ids, source_ids, successes: list[bool]) -> None:
        self.totals, self.successes = totals, successes
        self._ids = (task_ids, source_ids)

    @classmethod
    def from_keys(cls, totals: dict, keys: list[bytes], successes: list[bool]) -> Outcomes:
        made = cls(totals, None, None, successes)
        made._keys = keys
        return made

    def _pairs(self) -> tuple[list[str], list[str]]:
        if self._ids[0] is None:
            ids = [key.decode().split(_KEY_SEPARATOR) for key in self._keys]
            self._ids = ([i for i, _ in ids], [s for _, s in ids])
        return self._ids

    @property
    def task_ids(self) -> list[str]:
        return self._pairs()[0]

    @property
    def source_ids(self) -> list[str]:
        return self._pairs()[1]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Outcomes):
            return NotImplemented
        return (self.totals, self._pairs(), self.successes) == (
            other.totals,
            other._pairs(),
            other.successes,
        )

    __hash__ = None  # type: ignore[assignment]


def outcomes(imp: dict, file: str = "model import") -> Outcomes:
    """An import's outcomes, from the import in memory."""
    records = imp.get("records")
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise AfbenchError("not a list of per-task records", file=file, field="records")
    try:
        return Outcomes(
            {k: v for k, v in imp.items() if k != "records"},
            [r["task_id"] for r in records],
            [r["source_id"] for r in records],
            [bool(r["success"]) for r in records],
        )
    except KeyError as missing:
        raise AfbenchError("a record without this field", file=file, field=str(missing)) from None


# How summarize_model's import is laid out by fsutil.json_bytes: `records` last, one record a
# line. A file in exactly this form (no escape anywhere; every value of the form afbench writes)
# is read by one regular expression over its bytes instead of being built into 34,100 dicts;
# any other text is read by the strict JSON reader. Every line matched is valid JSON with
# distinct keys, finite numbers and no escapes, so what is accepted and what is read are the
# same either way.
_TEXT = rb'[^"\\\x00-\x1f]*+'  # a JSON string's characters that need no escape
_INT = rb"-?+(?:0|[1-9][0-9]{0,17}+)"  # at most 18 digits: never refused as too long
_NUMBER = _INT + rb"(?:\.[0-9]++)?(?:[eE][+-]?[0-9]{1,2}+)?"  # a 2-digit exponent: finite
_KEY_SEPARATOR = '", "source_id": "'
_RECORD = re.compile(  # groups: the text from task id to source id; the success
    rb'^    \{"task_id": "(' + _TEXT + _KEY_SEPARATOR.encode() + _TEXT + rb')", '
    rb'"success": (true|false), "n_obligations": ' + _INT + rb", "
    rb'"obligations_accepted": ' + _INT + rb', "cost_usd": ' + _NUMBER + rb", "
    rb'"stop_reason": "' + _TEXT + rb'", "finished_at": (?:null|"' + _TEXT + rb'")\}(?:,\n|\Z)',
    re.MULTILINE,
)
_RECORDS_START = b'\n  "records": [\n'
_RECORDS_END = b"\n  ]\n}\n"


class TaskOrder(NamedTuple):
    """A catalog's tasks in order, as an import's records are compared with them first."""

    task_ids: list[str]
    source_ids: list[str]
    keys: list[bytes]  # each task's record text from its task id to its source id


def task_order(catalog: dict) -> TaskOrder:
    task_ids = [t["task_id"] for t in catalog["tasks"]]
    source_ids = [t["source_id"] for t in catalog["tasks"]]
    keys = [f"{t}{_KEY_SEPARATOR}{s}".encode() for t, s in zip(task_ids, source_ids, strict=True)]
    return TaskOrder(task_ids, source_ids, keys)


def read_outcomes(path: Path | str, order: TaskOrder | None = None) -> Outcomes:
    """A model import's outcomes, read as strictly as read_record reads the whole import.
    With the catalog's `order`, records in that order share its lists of ids."""
    from .fsutil import MAX_JSON_BYTES, parse_json_bytes, read_regular_file
    from .records import checked, what

    data = read_regular_file(Path(path), what(MODEL_IMPORT), MAX_JSON_BYTES)
    read = _outcomes_as_written(data, str(path), order)
    if read is not None:
        return read
    imp = checked(parse_json_bytes(data, str(path), what(MODEL_IMPORT)), path, MODEL_IMPORT)
    return outcomes(imp, str(path))


def _outcomes_as_written(data: bytes, file: str, order: TaskOrder | None = None) -> Outcomes | None:
    """The outcomes of an import laid out as afbench writes it, or None for any other text.

    The text is its head (every key but `records`), then the records. The head is read by the
    strict reader with an empty list in the records' place (JSON's grammar makes the whole text
    valid if and only if that is, the records being valid values); each record line must match
    _RECORD, anchored at a line start and running to the line's end, so as many matches as
    lines cover the records exactly. A task id and a source id hold no quote, so the text
    between them is theirs alone."""
    from .fsutil import parse_json_bytes
    from .records import checked, what

    if b"\\" in data:
        return None
    if not data.isascii():
        try:
            data.decode("utf-8-sig")
        except UnicodeDecodeError:
            return None
    start = data.rfind(_RECORDS_START)
    if start < 0 or not data.endswith(_RECORDS_END):
        return None
    first, end = start + len(_RECORDS_START), len(data) - len(_RECORDS_END)
    found = _RECORD.findall(data, first, end)  # ^ holds at `first`: a line starts there
    if len(found) != data.count(b"\n", first, end) + 1:
        return None
    try:
        head = parse_json_bytes(data[:start] + b'\n  "records": []\n}\n', file, what(MODEL_IMPORT))
        imp = checked(head, file, MODEL_IMPORT)
    except AfbenchError:
        return None  # the strict reader of the whole text words the refusal
    del imp["records"]
    keys = list(map(itemgetter(0), found))
    successes = list(map(b"true".__eq__, map(itemgetter(1), found)))
    if order is not None and keys == order.keys:
        return Outcomes(imp, order.task_ids, order.source_ids, successes)
    return Outcomes.from_keys(imp, keys, successes)


def _median(values: list[float]) -> float:
    ordered, middle = sorted(values), len(values) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def _check_distinct(imports: list[dict]) -> None:
    """Each model once: by its slug, and by its results file's bytes (two slugs over one file
    would count one model's results twice, and every paired test between them would be void)."""
    slugs: set[str] = set()
    files: dict[str, str] = {}
    for imp in imports:
        slug = imp["model"]
        if slug in slugs:
            raise AfbenchError(
                f"comparison refused: model '{slug}' is given twice; compare each model once",
                field="model",
                expected="each model once",
                found=slug,
            )
        slugs.add(slug)
        digest = imp["inputs"].get(imp["file"])
        if digest in files:
            raise AfbenchError(
                f"comparison refused: models '{files[digest]}' and '{slug}' are one results file "
                f"(the same bytes, sha256 {digest}); compare each model once",
                field="model",
                expected="a results file of its own per model",
                found=imp["file"],
            )
        files[digest] = slug


def compare(imports: list[dict], strict_budget: bool) -> dict:
    """The comparison's validity; refused (an error) unless the imports are like for like."""
    if not imports:
        raise AfbenchError(
            "no models to compare", field="--import", expected="at least one model import"
        )
    _check_distinct(imports)
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
    requires)."""
    if isinstance(imp, Outcomes):
        return {**imp.totals, "success_bits": _success_bits(imp)}
    return {**{k: v for k, v in imp.items() if k != "records"}, "success_bits": _bits(imp)}


def _success_bits(imp: Outcomes) -> int:
    """Bit i set when the i-th task in task-id order succeeded."""
    successes = imp.successes
    digits = "".join(["1" if successes[i] else "0" for i in reversed(_ranking(imp))])
    return int(digits or "0", 2)


_LAST_RANKING: list[tuple[list, list[int]]] = []  # one entry: the task set ranked last


def _ranking(imp: Outcomes) -> list[int]:
    """The positions of an import's records in task-id order. Every import of one comparison
    has the same task set, and as afbench writes them the same record order, so the ranking
    of the import before is reused when its records' keys are the same (one list comparison
    instead of decoding and sorting 34,100 ids per model)."""
    basis = imp._keys if imp._ids[0] is None else imp._ids[0]
    if _LAST_RANKING and _LAST_RANKING[0][0] == basis:
        return _LAST_RANKING[0][1]
    ranked = sorted(range(len(imp.task_ids)), key=imp.task_ids.__getitem__)
    _LAST_RANKING[:] = [(basis, ranked)]
    return ranked


def _bits(imp: dict) -> int:
    if "records" not in imp:
        return imp["success_bits"]
    return _success_bits(outcomes(imp))


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
    significance tiers of the paired exact McNemar tests (afbench.analysis)."""
    from .analysis import ALPHA, TIER_METHOD, leaderboard_order, significance
    from .stats import success_bounds

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
    _, tier = significance(order, {i["model"]: _bits(i) for i in imports}, imports[0]["tasks"])
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
        "published": check,
        "tiers": {"alpha": ALPHA, "method": TIER_METHOD},
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
                "leader_tier": tier[i["model"]]["leader_tier"],
                "letters": tier[i["model"]]["letters"],
                **_upper_bound(
                    success_bounds(i["passes"], i["infrastructure_errors"]["count"], i["tasks"])
                ),
                "published_passes": check["models"][i["model"]]["published_passes"],
                "matches_published": check["models"][i["model"]]["matches"],
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


def _upper_bound(bounds: dict) -> dict:
    return {
        "passes_errors_as_successes": bounds["passes_high"],
        "success_rate_errors_as_successes": bounds["rate_high"],
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
    "leader_tier",
    "letters",
    "passes_errors_as_successes",
    "success_rate_errors_as_successes",
    "published_passes",
    "matches_published",
]
