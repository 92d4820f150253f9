"""Import of the official per-model results: strict validation against the MANIFEST and a budget
audit, one model at a time (the comparison of several is afbench.imports.compare)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime
from operator import methodcaller
from pathlib import Path
from typing import NamedTuple

from afbench.core.budget import budget_audit
from afbench.core.csvtable import (
    FIRST_ROW,
    cost_column,
    first_rows,
    int_column,
    paused_gc,
    per_distinct,
    raise_found,
    read_table,
)
from afbench.core.errors import AfbenchError, Problem
from afbench.core.fsutil import canonical_digest
from afbench.kinds import MODEL_IMPORT, TASK_RESULT
from afbench.kinds.official import RESULT_CONSTANTS, RESULTS_ROW

REPORTED_NOTE = (
    "Summary of results reported by the benchmark's authors (source-present "
    "condition as pinned), taken as given. It is not a local capability score and "
    "is never merged with local runs."
)
# a results file's fields, each mapped to a column (the schema's columns.results)
RESULT_FIELDS = tuple(RESULTS_ROW.columns)
CONSTANT_FIELDS = RESULT_CONSTANTS
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
        minimum=RESULTS_ROW.field("obligations_accepted").minimum,
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
    records = TASK_RESULT.rows(
        task_id=column["task_id"],
        source_id=source_ids,
        success=success,
        n_obligations=n,
        obligations_accepted=accepted,
        cost_usd=cost,
        stop_reason=stop,
        finished_at=finished,
    )
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
    return MODEL_IMPORT.record(
        note=REPORTED_NOTE,
        local_capability_score=None,
        license=catalog["license"],
        release=catalog["release"],
        model=model.slug,
        display_name=model.display_name,
        file=entry["path"],
        inputs={entry["path"]: entry["actual_sha256"], **catalog["inputs"]},
        budget_usd=budget_usd,
        **{field: constants.get(field) for field in CONSTANT_FIELDS},
        tasks=len(records),
        passes=passes,
        success_rate=passes / len(records),
        stop_reasons=dict(sorted(stop_reasons.items())),
        obligations={
            "accepted": sum(r["obligations_accepted"] for r in records),
            "total": sum(r["n_obligations"] for r in records),
        },
        infrastructure_errors={
            "count": len(infra),
            "tasks": infra,
            "note": "kept and counted as reported (unsolved); never dropped",
        },
        cost_usd={
            "total": round(sum(costs), 6),
            "mean": round(sum(costs) / len(costs), 6),
            "median": round(_median(costs), 6),
            "max": max(costs),
            "per_solved_task": round(sum(costs) / passes, 6) if passes else None,
        },
        finished_at={
            "known": sum(r["finished_at"] is not None for r in records),
            "unknown": sum(r["finished_at"] is None for r in records),
        },
        budget_audit=budget_audit(records, budget_usd, model.slug),
        extra_columns=extra,
        task_set_sha256=canonical_digest(sorted(r["task_id"] for r in records)),
        records=records,
    )


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


# The fast reader of an import's outcomes (afbench.kinds.lines: an import as afbench writes it,
# one record a line in TASK_RESULT's order, matched by an expression made from the declaration),
# with one group in each record's line: the text from its task id to its success (two strings
# side by side whose characters hold no quote, so the text between them is theirs alone, then
# the success right after them): the task's key and its outcome in one piece, one object a
# record. Against a catalog's order each piece is compared with the two it can be.
_KEY = ("task_id", "source_id")
_TAKEN = "success"


def _record_pattern(shape) -> tuple[re.Pattern, str, bytes]:
    """The expression of one record's line with the group of its key and success, the text
    between the key's two ids, and the text between the key and the success."""
    from afbench.kinds import lines

    names = shape.names
    at = names.index(_KEY[0])
    if names[at : at + 3] != [*_KEY, _TAKEN] or shape.field(_TAKEN).type is not bool:
        raise TypeError(f"{shape.name}: the fast reader needs {_KEY} side by side, then a bool")
    if not all(lines.has_pattern(f) for f in shape.fields):
        raise TypeError(f"{shape.name}: a field without a byte pattern for its declared type")
    separator = f'", "{_KEY[1]}": "'
    taken = f'", "{_TAKEN}": '.encode()
    pieces = []
    for f, piece in zip(shape.fields, lines.field_pieces(shape), strict=True):
        if f.name == _KEY[0]:
            key = b"(" + lines.TEXT + separator.encode() + lines.TEXT + taken + b"(?:true|false))"
            pieces.append(b'"' + f.name.encode() + b'": "' + key)
        elif f.name not in (_KEY[1], _TAKEN):  # the source id and success are in the group
            pieces.append(piece)
    return lines.record_pattern(pieces), separator, taken


_RECORD, _KEY_SEPARATOR, _TAKEN_SEPARATOR = _record_pattern(TASK_RESULT)
_SOLVED, _UNSOLVED = _TAKEN_SEPARATOR + b"true", _TAKEN_SEPARATOR + b"false"


class TaskOrder(NamedTuple):
    """A catalog's tasks in order, as an import's records are compared with them first."""

    task_ids: list[str]
    source_ids: list[str]
    keys: list[bytes]  # each task's record text from its task id to its source id
    solved: list[bytes]  # each task's record text from its task id to a success of true
    unsolved: list[bytes]  # the same to a success of false


def task_order(catalog: dict) -> TaskOrder:
    task_ids = [t["task_id"] for t in catalog["tasks"]]
    source_ids = [t["source_id"] for t in catalog["tasks"]]
    keys = [f"{t}{_KEY_SEPARATOR}{s}".encode() for t, s in zip(task_ids, source_ids, strict=True)]
    solved = [key + _SOLVED for key in keys]
    unsolved = [key + _UNSOLVED for key in keys]
    return TaskOrder(task_ids, source_ids, keys, solved, unsolved)


def read_outcomes(path: Path | str, order: TaskOrder | None = None) -> Outcomes:
    """A model import's outcomes, read as strictly as MODEL_IMPORT.read reads the whole
    import. With the catalog's `order`, records in that order share its lists of ids."""
    from afbench.core.fsutil import MAX_JSON_BYTES, parse_json_bytes, read_regular_file

    data = read_regular_file(Path(path), MODEL_IMPORT.what, MAX_JSON_BYTES)
    read = _outcomes_as_written(data, str(path), order)
    if read is not None:
        return read
    imp = MODEL_IMPORT.check(parse_json_bytes(data, str(path), MODEL_IMPORT.what), str(path))
    return outcomes(imp, str(path))


def _outcomes_as_written(data: bytes, file: str, order: TaskOrder | None = None) -> Outcomes | None:
    """The outcomes of an import laid out as afbench writes it (kinds.lines.split: its head
    read strictly, its records one a line), each record line matching _RECORD; or None for any
    other text."""
    from afbench.kinds import lines

    parts = lines.split(MODEL_IMPORT, data, file)
    if parts is None:
        return None
    imp, first, end = parts
    found = lines.lines_match(_RECORD, data, first, end)
    if found is None:
        return None
    del imp["records"]
    if order is not None and len(found) == len(order.keys):
        # each piece is its task's solved or unsolved text: the catalog's keys, in its order
        successes = list(map(bytes.__eq__, found, order.solved))
        if successes.count(True) + sum(map(bytes.__eq__, found, order.unsolved)) == len(found):
            return Outcomes(imp, order.task_ids, order.source_ids, successes)
    successes = list(map(methodcaller("endswith", _SOLVED), found))
    solved, unsolved = -len(_SOLVED), -len(_UNSOLVED)
    keys = [piece[: solved if ok else unsolved] for piece, ok in zip(found, successes, strict=True)]
    return Outcomes.from_keys(imp, keys, successes)


def _median(values: list[float]) -> float:
    ordered, middle = sorted(values), len(values) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def import_of_catalog(imported: dict, catalog: dict) -> list[Problem]:
    """IMPORT_OF_CATALOG (afbench.kinds.relations): a model import holds the catalog's tasks,
    each once (task_set_sha256 made again), each record's source and obligations its row's."""
    problems = []
    ids = [r["task_id"] for r in imported["records"]]
    wanted = sorted(t["task_id"] for t in catalog["tasks"])
    if sorted(ids) != wanted:
        extra = sorted(set(ids) ^ set(wanted)) or sorted(
            t for t, n in Counter(ids).items() if n > 1
        )
        problems.append(
            Problem(
                "the import's tasks are not the catalog's",
                field="records",
                expected=f"the catalog's {len(wanted)} tasks, each once",
                found=f"{len(ids)} records ({extra[0] if extra else 'order'} ...)",
            )
        )
    digest = canonical_digest(sorted(ids))
    if imported["task_set_sha256"] != digest:
        problems.append(
            Problem(
                "task_set_sha256 is not that of the records' tasks",
                field="task_set_sha256",
                expected=digest,
                found=imported["task_set_sha256"],
            )
        )
    rows = {t["task_id"]: t for t in catalog["tasks"]}
    for index, record in enumerate(imported["records"]):
        row = rows.get(record["task_id"])
        for field in ("source_id", "n_obligations"):
            if row is not None and record[field] != row[field]:
                problems.append(
                    Problem(
                        "the record is not the catalog's task",
                        field=f"records[{index}].{field}",
                        expected=row[field],
                        found=record[field],
                    )
                )
    return problems


def distinct_models(imports: list[dict], what: str) -> None:
    """Each model once: by its slug, and by its results file's bytes (two slugs over one file
    would count one model's results twice, and every paired test between them would be void):
    `what` is refused otherwise (a comparison, a failure anatomy, a task table)."""
    slugs: set[str] = set()
    files: dict[str, str] = {}
    for imp in imports:
        slug = imp["model"]
        if slug in slugs:
            raise AfbenchError(
                f"{what} refused: model '{slug}' is given twice; compare each model once",
                field="model",
                expected="each model once",
                found=slug,
            )
        slugs.add(slug)
        digest = imp["inputs"].get(imp["file"])
        if digest in files:
            raise AfbenchError(
                f"{what} refused: models '{files[digest]}' and '{slug}' are one results file "
                f"(the same bytes, sha256 {digest}); compare each model once",
                field="model",
                expected="a results file of its own per model",
                found=imp["file"],
            )
        files[digest] = slug
