"""The source-free task catalog (MANIFEST cross-checked with SOURCES) and task selections."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from afbench.core.csvtable import (
    first_rows,
    int_column,
    name_column,
    paused_gc,
    raise_found,
    read_table,
    text_column,
)
from afbench.core.errors import AfbenchError, Problem, raise_if
from afbench.core.fsutil import canonical_digest, check_name
from afbench.kinds import CATALOG, SELECTION, TASK_DIGESTS
from afbench.kinds.tasks import MANIFEST_ROW, PART_NAMES, SOURCE

CATALOG_NOTE = (
    "Metadata view of the release's tasks (source-free): declarations, source "
    "references and workspace links. It is not a task package: no Lean workspace, "
    "toolchain or textbook text is included."
)


# the files' fields, as the catalog declares them (upstream column names are mapped in config)
MANIFEST_FIELDS = tuple(MANIFEST_ROW.names)
SOURCES_FIELDS = tuple(SOURCE.names)

# A task's catalog digests: the canonical JSON (fsutil.canonical_digest) of its MANIFEST row,
# of its source reference and of its obligations
CATALOG_DIGESTS = {
    "manifest_row": MANIFEST_FIELDS,
    "source_reference": ("source_id", "source_ref"),
    "obligations": ("target_declaration", "n_obligations"),
}
# The parts of an exported Harbor task folder, by relative path (the first rule that matches):
# what the agent is asked (the instruction and the workspace it completes: the statement), how
# it is graded, where it runs, and the oracle's reference solution. task.toml is split by its
# tables: [verifier] grades, [metadata] describes, [solution] runs the oracle, [task] declares
# the package name and version (Harbor's convention: a declaration, not content), anything else
# ([agent], [environment], schema_version, steps) sets where and how long the agent runs.
EXPORT_PARTS = (
    ("instruction.md", "statement"),
    ("environment/workspace/", "statement"),
    ("tests/", "verifier"),
    ("solution/", "solution"),
    ("environment/", "environment"),
)
TOML_PARTS = {"verifier": "verifier", "metadata": "metadata", "solution": "solution"}
PARTS = PART_NAMES
DIGESTS_NOTE = (
    "Per-task content digests. Catalog: SHA-256 of the canonical JSON of the MANIFEST row, "
    "of its source reference (source_id, source_ref) and of its obligations "
    "(target_declaration, n_obligations). Export (with a checkout at the pinned revision): "
    "the exporter's task folder, its checksum as Harbor 0.22.0 records it (task_checksum, as "
    "the conformance certificate computes it) and one digest per part (statement, verifier, "
    "environment, solution, metadata): SHA-256 of the sorted lines 'path NUL sha256 NUL mode' "
    "of the part's files and 'task.toml#table NUL canonical digest' of its task.toml tables; "
    "task.toml's [task] table is the declared package name and version, not content."
)


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
    from afbench.core.csvtable import closest

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
    digests = {task["task_id"]: catalog_digests(task) for task in tasks}
    return CATALOG.record(
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
        task_digests=digests,
    )


def catalog_digests(task: dict) -> dict[str, str]:
    """A task's catalog digests (CATALOG_DIGESTS) from its MANIFEST row."""
    return {
        name: canonical_digest({field: task[field] for field in fields})
        for name, fields in CATALOG_DIGESTS.items()
    }


def part_of(path: str) -> str:
    for rule, part in EXPORT_PARTS:
        if path == rule or (rule.endswith("/") and path.startswith(rule)):
            return part
    return "environment"


def export_digests(task_dir: Path) -> dict:
    """An exported task folder's digests: Harbor's checksum of the whole folder, each file and
    task.toml table with its part, one digest per part, and the declared package name and
    version ([task] of task.toml). Symbolic links are refused (a task folder is plain files)."""
    import os
    import tomllib

    from afbench.core.fsutil import sha256_file
    from afbench.core.harbor import task_checksum

    task_dir = Path(task_dir)
    entries: dict[str, dict] = {}
    declared = {"name": None, "version": None}
    for root, folders, files in os.walk(task_dir):
        folders.sort()
        for name in [*folders, *files]:
            if (Path(root) / name).is_symlink():
                raise AfbenchError(
                    "the exported task holds a symbolic link", file=str(Path(root) / name)
                )
        for name in sorted(files):
            path = Path(root) / name
            rel = path.relative_to(task_dir).as_posix()
            if rel == "task.toml":
                continue
            entries[rel] = {
                "part": part_of(rel),
                "sha256": sha256_file(path, "exported task file"),
                "executable": bool(path.stat().st_mode & 0o111),
            }
    toml_path = task_dir / "task.toml"
    if toml_path.is_file():
        try:
            table = tomllib.loads(toml_path.read_bytes().decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            raise AfbenchError(
                f"the exported task.toml is not TOML: {error}", file=str(toml_path)
            ) from None
        package = table.pop("task", None)
        if isinstance(package, dict):
            declared = {
                "name": package.get("name") if isinstance(package.get("name"), str) else None,
                "version": package.get("version")
                if isinstance(package.get("version"), str)
                else None,
            }
            rest = {k: v for k, v in package.items() if k not in ("name", "version")}
            if rest:  # the package's description, authors, keywords: metadata
                table["task"] = rest
        for key in sorted(table):
            entries[f"task.toml#{key}"] = {
                "part": TOML_PARTS.get(key, "metadata" if key == "task" else "environment"),
                "sha256": canonical_digest(_plain(table[key])),
                "executable": False,
            }
    return {
        "checksum": task_checksum(task_dir),
        "parts": part_digests(entries),
        "files": dict(sorted(entries.items())),
        "task_toml_sha256": sha256_file(toml_path, "exported task.toml")
        if toml_path.is_file()
        else None,
        "declared": declared,
        "regrade": regrade_refusal(table if toml_path.is_file() else {}),
    }


def part_digests(files: dict[str, dict]) -> dict[str, str]:
    """One digest per part: SHA-256 of the sorted lines 'path NUL sha256 NUL mode' of its
    files and task.toml tables."""
    import hashlib

    parts = {}
    for part in PARTS:
        lines = sorted(
            f"{rel}\0{e['sha256']}\0{'x' if e['executable'] else '-'}\n"
            for rel, e in files.items()
            if e["part"] == part
        )
        parts[part] = hashlib.sha256("".join(lines).encode()).hexdigest()
    return parts


def exported_checksum(export: dict) -> str | None:
    """Harbor's task checksum of an exported task, derived again from its digests record: the
    files it lists and task.toml (its tables are listed, its bytes' digest beside them)."""
    from afbench.core.harbor import checksum_of_files

    files = {
        rel: e["sha256"] for rel, e in export["files"].items() if not rel.startswith("task.toml#")
    }
    if export["task_toml_sha256"] is not None:
        files["task.toml"] = export["task_toml_sha256"]
    return checksum_of_files(files)


def _plain(value: object) -> object:
    """A TOML value as JSON can hold it (dates as their ISO text)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def regrade_refusal(table: dict) -> str | None:
    """Why Harbor 0.22.0 cannot regrade the task (harbor.trial.regrade.check_task_regradable:
    no [[steps]], and a verifier in its own environment, which grades the trial's recorded
    artifacts), or None when it can."""
    if table.get("steps"):
        return "the task has [[steps]]; Harbor 0.22.0 does not regrade multi-step tasks"
    verifier = table.get("verifier") if isinstance(table.get("verifier"), dict) else {}
    mode = verifier.get("environment_mode")
    if mode == "separate" or (mode is None and verifier.get("environment") is not None):
        return None
    return (
        "the task's verifier runs in the agent's environment (shared mode): Harbor regrades "
        'only a verifier in its own environment ([verifier] environment_mode = "separate"), '
        "which needs no live agent environment"
    )


def content_digests(catalog: dict, repository_dir: str | None, tasks_dir: str) -> dict:
    """Every task's digests: the catalog's, and, with a checkout at the pinned revision, those
    of the task folder its exporter writes (export_digests). The exports run as a plan's export
    step does (plan.export_steps), a few at a time."""
    from concurrent.futures import ThreadPoolExecutor

    release = catalog["release"]
    rows = {t["task_id"]: {f: t[f] for f in MANIFEST_FIELDS} for t in catalog["tasks"]}
    exported: dict[str, dict | None] = dict.fromkeys(rows)
    source: dict = {"exported": False, "reason": "no checkout configured (plans.repository_dir)"}
    if repository_dir:
        from afbench.execution.trial import run_steps
        from afbench.plans.plan import check_repository, export_steps, tasks_folder

        repo = check_repository(repository_dir, release["revision"])
        folder = tasks_folder(repo, tasks_dir)

        def export(task_id: str) -> dict:
            run_steps(export_steps(repo, task_id, folder), {}, [], names=("export",))
            return export_digests(folder / task_id)

        with ThreadPoolExecutor(max_workers=4) as pool:
            exported = dict(zip(rows, pool.map(export, rows), strict=True))
        source = {"exported": True, "reason": None}
    return TASK_DIGESTS.record(
        note=DIGESTS_NOTE,
        release=release,
        license=catalog["license"],
        inputs=catalog["inputs"],
        export=source,
        tasks={
            task_id: {
                "row": row,
                **catalog["task_digests"][task_id],
                "export": exported[task_id],
            }
            for task_id, row in rows.items()
        },
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
    the lowest sha256(f"{S}:{task_id}") (afbench.core.stats.stratified_selection), in MANIFEST
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
    digest = selection_hash(catalog, ids)
    return SELECTION.record(
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
    from afbench.core.stats import stratified_selection

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


# a task's class is its most consequential change: what it asks, where it runs, how it is
# graded, then what only describes it (the oracle's solution included: no agent sees it)
PART_CLASS = {
    "statement": "statement-changed",
    "environment": "environment-changed",
    "verifier": "verifier-changed",
    "solution": "metadata-changed",
    "metadata": "metadata-changed",
}
SEVERITY = ("statement-changed", "environment-changed", "verifier-changed", "metadata-changed")
# catalog-only comparison (no exported content): which MANIFEST fields state the task
STATING_FIELDS = ("target_declaration", "n_obligations")


def compare_task(old: dict, new: dict, basis: str) -> dict:
    """One task's class, the parts that changed and every changed file, task.toml table or
    MANIFEST field."""
    fields = [f for f in MANIFEST_FIELDS if old["row"][f] != new["row"][f]]
    changed = [f"MANIFEST.csv:{field}" for field in fields]
    parts: list[str] = []
    if basis == "export":
        before, after = old["export"], new["export"]
        for part in PARTS:
            if before["parts"][part] == after["parts"][part]:
                continue
            parts.append(part)
            files = sorted(set(before["files"]) | set(after["files"]))
            changed += [
                f
                for f in files
                if (before["files"].get(f) or after["files"].get(f))["part"] == part
                and before["files"].get(f) != after["files"].get(f)
            ]
        if fields and not parts:
            parts.append("metadata")  # the MANIFEST row moved; the task's content did not
    else:
        if any(f in STATING_FIELDS for f in fields):
            parts.append("statement")
        if any(f not in STATING_FIELDS for f in fields):
            parts.append("metadata")
    classes = {PART_CLASS[p] for p in parts}
    kind = next((c for c in SEVERITY if c in classes), "unchanged")
    return {"class": kind, "parts": parts, "changed": changed}


def freeze(selection: dict, digests: dict, earlier: dict | None) -> dict:
    """The selection frozen: each member's digests (content_digests) recorded. Against
    `earlier`, the same selection frozen on an earlier revision, every member must be the same
    task with the same content, or the selection is refused naming each member and what
    changed (compare_task)."""
    if digests["release"]["revision"] != selection["release"]["revision"]:
        raise AfbenchError(
            "the task digests are of another release than the selection",
            field="--digests",
            expected=selection["release"]["revision"],
            found=digests["release"]["revision"],
        )
    members = {tid: digests["tasks"][tid] for tid in selection["task_ids"]}
    exported = bool(digests["export"]["exported"])
    since = selection["release"]["revision"]
    if earlier is not None:
        frozen = earlier.get("frozen")
        if earlier.get("name") != selection["name"] or not isinstance(frozen, dict):
            raise AfbenchError(
                "the earlier selection is not this selection frozen",
                field="--earlier",
                expected=f"selection '{selection['name']}' with frozen: true",
                found=earlier.get("name"),
            )
        exported = exported and frozen["basis"] == "export"
        basis = "export" if exported else "manifest"
        was = frozen["members"]
        problems = []
        for tid in was:
            if tid not in members:
                where = "the release" if tid not in digests["tasks"] else "the selection"
                problems.append(
                    Problem(
                        f"frozen selection '{selection['name']}': member {tid} is no longer "
                        f"in {where}",
                        field=f"selections/{selection['name']}",
                        expected=f"the members frozen at {frozen['since']}",
                        found=f"{tid} removed",
                    )
                )
                continue
            change = compare_task(was[tid], members[tid], basis)
            if change["class"] != "unchanged":
                problems.append(
                    Problem(
                        f"frozen selection '{selection['name']}': member {tid} is "
                        f"{change['class']} ({', '.join(change['changed'])})",
                        field=f"selections/{selection['name']}",
                        expected=f"{tid} as frozen at {frozen['since']}",
                        found=change["class"],
                    )
                )
        for tid in members:
            if tid not in was:
                problems.append(
                    Problem(
                        f"frozen selection '{selection['name']}': task {tid} joins it on this "
                        "revision",
                        field=f"selections/{selection['name']}",
                        expected=f"the members frozen at {frozen['since']}",
                        found=f"{tid} added",
                    )
                )
        raise_if(problems)
        since = frozen["since"]
    return SELECTION.record(
        **SELECTION.body(selection),
        frozen={
            "since": since,
            "basis": "export" if exported else "manifest",
            "members_sha256": canonical_digest(members),
            "members": members,
        },
    )


# --- relations (afbench.kinds.relations): what binds the tasks' artifacts to their sources ----
def _differs(field: str, message: str, expected: object, found: object) -> Problem:
    return Problem(message, field=field, expected=expected, found=found)


def _safe(task_id: str, field: str) -> list[Problem]:
    try:
        check_name(task_id, field)
    except AfbenchError as error:
        return error.problems
    return []


def catalog_holds(catalog: dict, _: None = None) -> list[Problem]:
    """CATALOG_OF_ITSELF: the counts, each source's n_tasks and each task's catalog digests
    derived again from its rows."""
    tasks, problems = catalog["tasks"], []
    ids = [t["task_id"] for t in catalog["tasks"]]
    for task_id, n in Counter(ids).items():
        if n > 1:
            problems.append(_differs("tasks", "a task is listed twice", "each task once", task_id))
    actual = {
        "tasks": len(tasks),
        "sources": len(catalog["sources"]),
        "obligations": sum(t["n_obligations"] for t in tasks),
    }
    for key, value in actual.items():
        if catalog["counts"][key] != value:
            problems.append(
                _differs(
                    f"counts.{key}",
                    "the count is not that of the list",
                    value,
                    catalog["counts"][key],
                )
            )
    per_source = Counter(t["source_id"] for t in tasks)
    for source in catalog["sources"]:
        if source["n_tasks"] != per_source[source["source_id"]]:
            problems.append(
                _differs(
                    f"sources.{source['source_id']}.n_tasks",
                    "the source's n_tasks is not the count of its tasks",
                    per_source[source["source_id"]],
                    source["n_tasks"],
                )
            )
    unknown = sorted(set(per_source) - {s["source_id"] for s in catalog["sources"]})
    if unknown:
        problems.append(
            _differs("tasks", "a task's source is not listed", "a listed source", unknown[0])
        )
    digests = catalog["task_digests"]
    if set(digests) != set(ids):
        extra = sorted(set(digests) ^ set(ids))
        problems.append(
            _differs(
                "task_digests",
                "the digests are not of the catalog's tasks",
                "one entry per task",
                extra[0],
            )
        )
    for task in tasks:
        recorded = digests.get(task["task_id"])
        if recorded is not None and recorded != catalog_digests(task):
            problems.append(
                _differs(
                    f"task_digests.{task['task_id']}",
                    "the task's catalog digests are not those of its row",
                    catalog_digests(task),
                    recorded,
                )
            )
    return problems


def digests_hold(digests: dict, _: None = None) -> list[Problem]:
    """DIGESTS_OF_ITSELF: each key is a safe task id and its row's; each task's catalog
    digests are those of its row, and each exported task's part digests and Harbor checksum
    those of its files (derived again)."""
    problems: list[Problem] = []
    exported = digests["export"]["exported"]
    for task_id, entry in digests["tasks"].items():
        at = f"tasks.{task_id}"
        problems += _safe(task_id, at)
        if entry["row"]["task_id"] != task_id:
            problems.append(
                _differs(
                    f"{at}.row.task_id",
                    "the key names another task than its row",
                    task_id,
                    entry["row"]["task_id"],
                )
            )
        derived = catalog_digests(entry["row"])
        for name, digest in derived.items():
            if entry[name] != digest:
                problems.append(
                    _differs(
                        f"{at}.{name}",
                        f"the {name} digest is not that of the task's row",
                        digest,
                        entry[name],
                    )
                )
        export = entry["export"]
        if (export is not None) != exported:
            problems.append(
                _differs(
                    f"{at}.export",
                    "the task's export does not match export.exported",
                    "an export" if exported else "null",
                    "null" if export is None else "an export",
                )
            )
        if export is None:
            continue
        parts = part_digests(export["files"])
        for part, digest in parts.items():
            if export["parts"][part] != digest:
                problems.append(
                    _differs(
                        f"{at}.export.parts.{part}",
                        f"the {part} digest is not that of the task's files",
                        digest,
                        export["parts"][part],
                    )
                )
        checksum = exported_checksum(export)
        if export["checksum"] != checksum:
            problems.append(
                _differs(
                    f"{at}.export.checksum",
                    "Harbor's task checksum is not that of the task's files and task.toml",
                    checksum,
                    export["checksum"],
                )
            )
    return problems


def digests_agree_with_catalog(digests: dict, catalog: dict) -> list[Problem]:
    """DIGESTS_OF_CATALOG: the same revision and inputs, the same task set, and each task's
    MANIFEST row and catalog digests the catalog's."""
    problems: list[Problem] = []
    if digests["release"]["revision"] != catalog["release"]["revision"]:
        problems.append(
            _differs(
                "release.revision",
                "the digests are of another revision than the catalog",
                catalog["release"]["revision"],
                digests["release"]["revision"],
            )
        )
    if digests["inputs"] != catalog["inputs"]:
        problems.append(
            _differs(
                "inputs",
                "the digests were made from other release files than the catalog",
                catalog["inputs"],
                digests["inputs"],
            )
        )
    rows = {t["task_id"]: t for t in catalog["tasks"]}
    missing = [task_id for task_id in rows if task_id not in digests["tasks"]]
    unknown = [task_id for task_id in digests["tasks"] if task_id not in rows]
    if missing:
        problems.append(
            _differs(
                "tasks",
                f"{len(missing)} task(s) of the catalog have no digests",
                "every task of the catalog",
                ", ".join(missing[:5]),
            )
        )
    if unknown:
        problems.append(
            _differs(
                "tasks",
                f"{len(unknown)} task(s) are not in the catalog",
                "only the catalog's tasks",
                ", ".join(unknown[:5]),
            )
        )
    for task_id, entry in digests["tasks"].items():
        task = rows.get(task_id)
        if task is None:
            continue
        for field in MANIFEST_FIELDS:
            if entry["row"][field] != task[field]:
                problems.append(
                    _differs(
                        f"tasks.{task_id}.row.{field}",
                        "the row is not the catalog's",
                        task[field],
                        entry["row"][field],
                    )
                )
        for name, digest in catalog["task_digests"].get(task_id, {}).items():
            if entry[name] != digest:
                problems.append(
                    _differs(
                        f"tasks.{task_id}.{name}",
                        "the digest is not the catalog's",
                        digest,
                        entry[name],
                    )
                )
    return problems


def read_selection(path: Path | str, catalog_path: Path | str) -> tuple[dict, dict]:
    """A selection and its catalog, read and held to each other (SELECTION_OF_CATALOG): its
    task ids hash to its selection_sha256 and each is the catalog's, or one refusal naming
    both files. What seals a plan or builds one reads its selection through here."""
    from afbench.audit.directory import hold
    from afbench.kinds import relations

    selection, catalog = SELECTION.read(path), CATALOG.read(catalog_path)
    hold([(relations.SELECTION_OF_CATALOG, selection, str(path), catalog, str(catalog_path))])
    return selection, catalog


def selection_hash(catalog: dict, task_ids: list[str]) -> str:
    """A selection's selection_sha256: its catalog's revision and inputs and its task ids."""
    return canonical_digest(
        {
            "revision": catalog["release"]["revision"],
            "inputs": catalog["inputs"],
            "task_ids": task_ids,
        }
    )


def selection_of_catalog(selection: dict, catalog: dict) -> list[Problem]:
    """SELECTION_OF_CATALOG: the release, selection_sha256 of the task ids, each task's row
    the catalog's, the counts; a selection made by criteria alone is made again from them and
    must be the same record."""
    problems: list[Problem] = []
    if selection["release"] != catalog["release"]:
        problems.append(
            _differs(
                "release",
                "the selection is of another release than the catalog",
                catalog["release"]["revision"],
                selection["release"]["revision"],
            )
        )
    ids = selection["task_ids"]
    digest = selection_hash(catalog, ids)
    if selection["selection_sha256"] != digest:
        problems.append(
            _differs(
                "selection_sha256",
                "the selection's task ids do not hash to its selection_sha256",
                digest,
                selection["selection_sha256"],
            )
        )
    rows = {t["task_id"]: t for t in catalog["tasks"]}
    unknown = [task_id for task_id in ids if task_id not in rows]
    if unknown:
        problems.append(
            _differs(
                "task_ids",
                "a task is not in the catalog",
                "a task of the catalog",
                ", ".join(unknown[:5]),
            )
        )
    twice = sorted(task_id for task_id, n in Counter(ids).items() if n > 1)
    if twice:
        problems.append(_differs("task_ids", "a task is listed twice", "each task once", twice[0]))
    if [t["task_id"] for t in selection["tasks"]] != ids:
        problems.append(
            _differs(
                "tasks",
                "the tasks are not the task ids, in order",
                len(ids),
                len(selection["tasks"]),
            )
        )
    for index, task in enumerate(selection["tasks"]):
        if task["task_id"] in rows and task != rows[task["task_id"]]:
            problems.append(
                _differs(
                    f"tasks[{index}]",
                    "the task's row is not the catalog's",
                    task["task_id"],
                    "another row",
                )
            )
    counts = {
        "tasks": len(ids),
        "obligations": sum(rows[t]["n_obligations"] for t in ids if t in rows),
    }
    if selection["counts"] != counts:
        problems.append(
            _differs("counts", "the counts are not the tasks'", counts, selection["counts"])
        )
    if problems or any(k in selection for k in ("derived", "comparable", "frozen")):
        return problems
    criteria = selection["criteria"]
    drawn = criteria["stratified"]
    try:
        again = select_tasks(
            catalog,
            selection["name"],
            tasks=criteria["tasks"],
            sources=criteria["sources"],
            limit=criteria["limit"],
            stratified=None if drawn is None else {"tasks": drawn["tasks"], "seed": drawn["seed"]},
        )
    except AfbenchError as error:
        return [
            _differs(
                "criteria",
                f"the criteria select nothing: {error}",
                "criteria that select the tasks",
                criteria,
            )
        ]
    if again != selection:
        problems.append(
            _differs(
                "task_ids",
                "the criteria select other tasks from the catalog",
                f"{again['counts']['tasks']} tasks, sha256 {again['selection_sha256']}",
                f"{len(ids)} tasks",
            )
        )
    return problems
