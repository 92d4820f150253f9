"""The source-free task catalog (MANIFEST cross-checked with SOURCES) and task selections."""

from __future__ import annotations

from collections import Counter

from .csvtable import (
    first_rows,
    int_column,
    name_column,
    paused_gc,
    raise_found,
    read_table,
    text_column,
)
from .errors import AfbenchError, Problem, raise_if
from .fsutil import canonical_digest, check_name
from .records import CATALOG, SELECTION, record

CATALOG_NOTE = (
    "Metadata view of the release's tasks (source-free): declarations, source "
    "references and workspace links. It is not a task package: no Lean workspace, "
    "toolchain or textbook text is included."
)


MANIFEST_FIELDS = (
    "task_id",
    "source_id",
    "source_ref",
    "target_declaration",
    "n_obligations",
    "workspace",
)
SOURCES_FIELDS = ("source_id", "title", "authors", "license", "n_tasks")


def parse_manifest(data: bytes, file: str, mapping: dict[str, str]) -> tuple[list[dict], list]:
    """The MANIFEST's tasks, checked column by column; every problem in the file is reported."""
    with paused_gc():
        table = read_table(data, file, mapping)
        column, found = table.columns, []
        rows = table.row_numbers
        ids_ok = name_column(column["task_id"], rows, found, 0, file=file, field="task_id")
        name_column(column["source_id"], rows, found, 1, file=file, field="source_id")
        for order, field in enumerate(("source_ref", "target_declaration"), start=2):
            text_column(column[field], rows, found, order, file=file, field=field)
        n_obligations = int_column(
            column["n_obligations"], rows, found, 4, file=file, field="n_obligations", minimum=1
        )
        text_column(column["workspace"], rows, found, 5, file=file, field="workspace")
        for i, first in first_rows(column["task_id"], keep=ids_ok):
            found.append(
                (
                    rows[i],
                    6,
                    Problem(
                        f"duplicate task_id (first at row {rows[first]})",
                        file=file,
                        row=rows[i],
                        field="task_id",
                        expected="each task_id once",
                        found=column["task_id"][i],
                    ),
                )
            )
        raise_found(found)
        tasks = [
            {
                "task_id": task_id,
                "source_id": source_id,
                "source_ref": source_ref,
                "target_declaration": target,
                "n_obligations": n,
                "workspace": workspace,
            }
            for task_id, source_id, source_ref, target, n, workspace in zip(
                column["task_id"],
                column["source_id"],
                column["source_ref"],
                column["target_declaration"],
                n_obligations,
                column["workspace"],
                strict=True,
            )
        ]
    return tasks, table.extra_columns


def parse_sources(data: bytes, file: str, mapping: dict[str, str]) -> tuple[list[dict], list]:
    """SOURCES.csv, checked column by column; every problem in the file is reported."""
    table = read_table(data, file, mapping)
    column, found = table.columns, []
    rows = table.row_numbers
    ids_ok = name_column(column["source_id"], rows, found, 0, file=file, field="source_id")
    text_column(column["title"], rows, found, 1, file=file, field="title")
    n_tasks = int_column(column["n_tasks"], rows, found, 2, file=file, field="n_tasks")
    for i, _ in first_rows(column["source_id"], keep=ids_ok):
        found.append(
            (
                rows[i],
                3,
                Problem(
                    "duplicate source_id",
                    file=file,
                    row=rows[i],
                    field="source_id",
                    expected="each source_id once",
                    found=column["source_id"][i],
                ),
            )
        )
    raise_found(found)
    values = {**column, "n_tasks": n_tasks}
    sources = [
        dict(zip(SOURCES_FIELDS, cells, strict=True))
        for cells in zip(*(values[field] for field in SOURCES_FIELDS), strict=True)
    ]
    return sources, table.extra_columns


def cross_check(tasks: list[dict], sources: list[dict], expected: dict, files: dict) -> None:
    """MANIFEST against SOURCES and the release's declared counts. `tasks` is in MANIFEST order
    (parse_manifest keeps every row), so a task's row in spreadsheet numbering (the header is
    row 1) is its index + 2."""
    from .csvtable import closest

    problems = []
    known = {s["source_id"] for s in sources}
    suggestions: dict[str, list[str]] = {}
    for index, task in enumerate(tasks):
        if task["source_id"] not in known:
            if task["source_id"] not in suggestions:
                suggestions[task["source_id"]] = closest(task["source_id"], sorted(known))
            near = suggestions[task["source_id"]]
            problems.append(
                Problem(
                    f"task '{task['task_id']}': source_id not in SOURCES",
                    file=files["manifest"],
                    row=index + 2,
                    field="source_id",
                    found=task["source_id"],
                    expected=f"one of the {len(known)} sources in {files['sources']}"
                    + (f" (closest: {', '.join(near)})" if near else ""),
                )
            )
    per_source = Counter(t["source_id"] for t in tasks)
    for source in sources:
        count = per_source[source["source_id"]]
        if count != source["n_tasks"]:
            problems.append(
                Problem(
                    f"n_tasks of source '{source['source_id']}' does not match the MANIFEST",
                    file=files["sources"],
                    field="n_tasks",
                    expected=count,
                    found=source["n_tasks"],
                )
            )
    actual = {
        "tasks": len(tasks),
        "sources": len(sources),
        "obligations": sum(t["n_obligations"] for t in tasks),
    }
    for key, value in actual.items():
        if value != expected[key]:
            problems.append(
                Problem(
                    f"the release declares {expected[key]} {key}",
                    file=files["manifest"],
                    field=key,
                    expected=expected[key],
                    found=value,
                )
            )
    raise_if(problems)


def build_catalog(
    manifest: tuple[bytes, dict],
    sources: tuple[bytes, dict],
    columns: dict,
    expected_counts: dict,
    release: dict,
    license: str,
) -> dict:
    """The catalog from verified MANIFEST and SOURCES bytes, each with its receipt entry."""
    (manifest_bytes, manifest_entry), (sources_bytes, sources_entry) = manifest, sources
    names = {"manifest": manifest_entry["path"], "sources": sources_entry["path"]}
    tasks, task_extra = parse_manifest(manifest_bytes, names["manifest"], columns["manifest"])
    source_rows, source_extra = parse_sources(sources_bytes, names["sources"], columns["sources"])
    cross_check(tasks, source_rows, expected_counts, names)
    tree = f"https://github.com/{release['repository']}/tree/{release['revision']}/"
    return record(
        CATALOG,
        note=CATALOG_NOTE,
        release=release,
        license=license,
        inputs={e["path"]: e["actual_sha256"] for e in (manifest_entry, sources_entry)},
        extra_columns={names["manifest"]: task_extra, names["sources"]: source_extra},
        counts={
            "tasks": len(tasks),
            "sources": len(source_rows),
            "obligations": sum(t["n_obligations"] for t in tasks),
        },
        sources=source_rows,
        tasks=[{**task, "workspace_url": tree + task["workspace"]} for task in tasks],
    )


def _unique(values: list, what: str) -> None:
    dupes = sorted({v for v in values if values.count(v) > 1})
    if dupes:
        raise AfbenchError(
            f"{what} listed twice", field=what, expected=f"each {what} once", found=dupes[0]
        )


def select_tasks(
    catalog: dict,
    name: str,
    tasks: list[str] | None = None,
    sources: list[str] | None = None,
    limit: object = None,
    stratified: dict | None = None,
) -> dict:
    """A deterministic selection: MANIFEST order, filtered by sources and tasks, then limited;
    or, with `stratified` ({"tasks": N, "seed": S}), N of the tasks of the sources (all, or
    those given) drawn proportionally per source by the largest remainder, each source's by
    the lowest sha256(f"{S}:{task_id}") (afbench.stats.stratified_selection), in MANIFEST
    order.

    `sources` are source ids (the seed CLI's `--book`)."""
    check_name(name, "selection name")
    tasks, sources = list(tasks or []), list(sources or [])
    _unique(tasks, "task")
    _unique(sources, "source")
    if limit is not None and not _whole(limit, 1):
        raise AfbenchError(
            "limit must be a whole number of at least 1",
            field="limit",
            expected="a whole number >= 1",
            found=str(limit),
        )
    if stratified is not None:
        _check_stratified(stratified, tasks, limit)
    all_ids = {t["task_id"] for t in catalog["tasks"]}
    all_sources = {s["source_id"] for s in catalog["sources"]}
    problems = [
        Problem("unknown task", field="task", expected="a task_id of the catalog", found=t)
        for t in tasks
        if t not in all_ids
    ]
    problems += [
        Problem(
            "unknown source_id (--book)",
            field="source",
            found=b,
            expected=f"one of {sorted(all_sources)}",
        )
        for b in sources
        if b not in all_sources
    ]
    raise_if(problems)
    chosen = [
        t
        for t in catalog["tasks"]
        if (not sources or t["source_id"] in sources) and (not tasks or t["task_id"] in tasks)
    ]
    if not chosen:
        raise AfbenchError(
            "the selection is empty: none of the tasks asked for (--task) is of the sources "
            "asked for (--book, or the job's --source)",
            field="task",
            expected=f"a task of source {' or '.join(sources)}" if sources else "a task",
            found=f"tasks {', '.join(tasks)}" if tasks else "no task of these sources",
        )
    if limit is not None:
        chosen = chosen[:limit]
    drawn = None
    if stratified is not None:
        chosen, drawn = _stratified(catalog, chosen, stratified)
    ids = [t["task_id"] for t in chosen]
    digest = canonical_digest(
        {"revision": catalog["release"]["revision"], "inputs": catalog["inputs"], "task_ids": ids}
    )
    return record(
        SELECTION,
        note=CATALOG_NOTE,
        name=name,
        release=catalog["release"],
        license=catalog["license"],
        criteria={
            "tasks": tasks,
            "sources": sources,
            "limit": limit,
            "stratified": drawn,
            "order": "MANIFEST order, filtered by sources and tasks, then limited"
            if drawn is None
            else "MANIFEST order, filtered by sources, then a stratified draw",
        },
        selection_sha256=digest,
        counts={"tasks": len(chosen), "obligations": sum(t["n_obligations"] for t in chosen)},
        task_ids=ids,
        tasks=chosen,
    )


def _whole(value: object, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _check_stratified(stratified: dict, tasks: list[str], limit: object) -> None:
    if not (
        isinstance(stratified, dict)
        and set(stratified) == {"tasks", "seed"}
        and _whole(stratified["tasks"], 1)
        and _whole(stratified["seed"], 0)
    ):
        raise AfbenchError(
            "a stratified selection is {tasks: N, seed: S}",
            field="stratified",
            expected="N a whole number >= 1, S a whole number >= 0",
            found=str(stratified),
        )
    if tasks or limit is not None:
        raise AfbenchError(
            "a stratified selection draws its own tasks: give it no task list or limit (sources "
            "narrow it)",
            field="stratified",
            expected="no task list and no limit",
            found="a task list" if tasks else f"limit {limit}",
        )


def _stratified(catalog: dict, chosen: list[dict], stratified: dict) -> tuple[list[dict], dict]:
    from .stats import stratified_selection

    total, seed = stratified["tasks"], stratified["seed"]
    if total > len(chosen):
        raise AfbenchError(
            "a stratified selection cannot draw more tasks than its sources have",
            field="stratified.tasks",
            expected=f"at most {len(chosen)}",
            found=total,
        )
    present = {t["source_id"] for t in chosen}
    drawn = stratified_selection(
        [(t["task_id"], t["source_id"]) for t in chosen],
        [s["source_id"] for s in catalog["sources"] if s["source_id"] in present],
        total,
        seed,
    )
    keep = set(drawn["task_ids"])
    return [t for t in chosen if t["task_id"] in keep], {
        "tasks": total,
        "seed": seed,
        "allocation": drawn["allocation"],
        "method": drawn["method"],
    }
