"""What both doors do the same way: read the files given, call the stage functions, write the
files given. The job commands and the seed's commands differ only in where their values come
from (typed flags, or the config read once); each action takes plain values and paths."""

from __future__ import annotations

from pathlib import Path

from afbench.core.errors import AfbenchError
from afbench.core.fsutil import csv_output, csv_stream, json_output, write_outputs

from .. import kinds  # each kind asked for when used: a job builds only its own

RUN_FILES = {"summary": "summary.json", "outcomes": "outcomes.csv", "attempts": "attempts.csv"}
REPORT_FILES = {"html": "index.html", "analysis": "analysis.json"}


def verified_entries(paths: list[Path]) -> tuple[dict, dict]:
    """Verified file entries by key, from receipts or verified-file records, and their release."""
    from afbench.release.identity import collect_verified

    return collect_verified(
        [(str(p), kinds.read_any(p, kinds.RECEIPT, kinds.VERIFIED_FILE)) for p in paths]
    )


def compare_models(
    imports: list[Path],
    verified: list[Path],
    strict_budget: bool,
    summary: Path,
    board: Path,
    published: dict,
    strict_published: bool,
) -> list[str]:
    """The like-for-like comparison of model imports: summary and leaderboard, together.
    Returns the differences from the authors' published facts, as warnings."""
    from afbench.core.errors import raise_if
    from afbench.imports.compare import LEADERBOARD_COLUMNS, reduced, summarize
    from afbench.imports.official import read_outcomes
    from afbench.release.identity import stale_imports
    from afbench.report.page import letters_text

    read = [(str(path), reduced(read_outcomes(path))) for path in imports]
    if verified:
        entries, _ = verified_entries(verified)
        pins = {entry["path"]: entry["actual_sha256"] for entry, _ in entries.values()}
        raise_if(stale_imports(read, pins))
    result = summarize([imp for _, imp in read], strict_budget, published, strict_published)
    rows = [
        [
            _cell(letters_text(row[c]) if c.startswith("letters") else row[c])
            for c in LEADERBOARD_COLUMNS
        ]
        for row in result["leaderboard"]
    ]
    write_outputs(
        [csv_output(board, LEADERBOARD_COLUMNS, rows), json_output(summary, result)],
        about=result,
    )
    return published_warnings(result["published"])


def _cell(value: object) -> object:
    """booleans as the upstream CSVs write them"""
    return str(value).lower() if isinstance(value, bool) else value


def published_warnings(check: dict) -> list[str]:
    return [
        f"does not match the authors' published figures: {difference}"
        for difference in check["differences"]
    ]


def import_run(
    selection_path: Path,
    name: str,
    kind: str,
    folders: list[Path],
    budget_usd: float | None,
    outputs: dict[str, Path],
    task_checksums: Path | None = None,
    *,
    analysis_plan: tuple[dict, list[dict]] | None = None,
    reused: list[dict] | tuple = (),
    names: list[str] | None = None,
    reruns: list[dict] | tuple = (),
) -> None:
    """A local run (Harbor job folders or verdict folders) over its selection: summary (with
    each configuration's protocol-conformance certificate), outcomes and attempts, written
    together. No budget: the release's nominal budget. `task_checksums`: the exporter's
    output for the selection's tasks (conformance.exported_checksums), which a Harbor run's
    task checksums are compared with. `analysis_plan`: a sealed plan and the run's receipts,
    checked against each other (conformance.plan_conformance); `reused`: the receipts of an
    upgrade's results carried over from the previous release (named in the summary). `names`:
    each folder as the config names it, which the tables record (not where it was read).
    `reruns`: the receipts whose attempts replace one another (sequential.rerun_receipts):
    each trial's attempt that stands is its attempt in the run, the others recorded on it
    (runs.mark_replaced)."""
    from afbench.core.csvtable import paused_gc
    from afbench.core.fsutil import check_name
    from afbench.runs.conformance import certify_run
    from afbench.runs.harbor_jobs import read_harbor_job
    from afbench.runs.summary import ATTEMPT_COLUMNS, OUTCOME_COLUMNS, mark_replaced, summarize_run
    from afbench.runs.verdicts import read_verdict_dir

    # an import makes no reference cycles, yet the collector would walk every attempt, parsed
    # trial and row again and again as they pile up (a sixth of an import of 100,000 trials)
    with paused_gc():
        check_name(name, "run name")
        selection = kinds.SELECTION.read(selection_path)
        # what a run reads of its selection: its name, digest, release, counts and task ids,
        # not its task records (a large release's: 30 MB held through the whole import)
        selection.pop("tasks", None)
        if not folders:
            raise AfbenchError("nothing to import: no job or verdict folder given", field="--path")
        budget = selection["release"]["nominal_budget_usd"] if budget_usd is None else budget_usd
        if names is not None and len(names) != len(folders):
            raise AfbenchError(
                "each folder needs its name as the config names it",
                field="--path-name",
                expected=f"{len(folders)} (one per --path)",
                found=len(names),
            )
        reader = read_harbor_job if kind == "harbor" else read_verdict_dir
        named = names if names is not None else [None] * len(folders)
        attempts = [
            a
            for folder, name in zip(folders, named, strict=True)
            for a in reader(Path(folder), name)
        ]
        mark_replaced(attempts, list(reruns))
        summary, rows = summarize_run(name, kind, selection, attempts, budget, selection["release"])
        exported = kinds.TASK_CHECKSUMS.read(task_checksums) if task_checksums else None
        summary = certify_run(summary, attempts, kind, exported)
        beside: dict = {}
        if analysis_plan is not None:
            from afbench.runs.conformance import plan_conformance

            beside["analysis_plan"] = plan_conformance(analysis_plan[0], summary, analysis_plan[1])
        if reused:
            beside["carried_over"] = {
                "note": "results of tasks the upgrade plan reuses (unchanged), carried over from "
                "the previous release's executed trials; every other task ran on this release",
                "previous_revision": reused[0]["release"]["revision"],
                "tasks": sorted({r["task_id"] for r in reused}),
            }
        summary = kinds.RUN_SUMMARY.record(**summary, **beside)
        # the tables written as they are staged, a piece at a time: never held whole
        write_outputs(
            [
                csv_stream(
                    outputs["attempts"],
                    ATTEMPT_COLUMNS,
                    ([a[c] for c in ATTEMPT_COLUMNS] for a in attempts),
                ),
                csv_stream(
                    outputs["outcomes"],
                    OUTCOME_COLUMNS,
                    ([r[c] for c in OUTCOME_COLUMNS] for r in rows),
                ),
                json_output(outputs["summary"], summary),
            ],
            about=summary,
        )


def executed_job_folders(read: list[dict]) -> list[Path]:
    """The Harbor job folders that `afbench job run-trial` receipts name (a trial that did not
    run has none: refused at the cost ceiling, or interrupted earlier and not run again)."""
    folders = [Path(r["job_dir"]) for r in read if not r.get("refused")]
    if read and not folders:
        raise AfbenchError(
            f"none of the {len(read)} trial(s) ran (refused at the cost ceiling, or an "
            "interrupted trial of an agent that may spend money, not run again without "
            "execute.rerun_interrupted): there is nothing to import (each receipt says why)",
            field="--receipt",
        )
    return folders


MAX_FIGURE_BYTES = 64 << 20  # a figure of 200 models is a few megabytes


def _report_inputs(
    summary_path: Path, import_paths: list[Path], catalog_path: Path, receipt_path: Path
) -> tuple[dict, dict, dict, list[tuple[str, dict]]]:
    """The comparison, the catalog, the receipt, and each model import reduced to what the
    analysis needs (one at a time: its records are never all held), all checked current."""
    from afbench.imports.official import read_outcomes, task_order
    from afbench.report.analysis import check_current, compactor, import_problems, receipt_pins

    summary = kinds.SUMMARY.read(summary_path)
    catalog = kinds.CATALOG.read(catalog_path)
    receipt = kinds.RECEIPT.read(receipt_path)
    compact, order, pins = compactor(catalog), task_order(catalog), receipt_pins(receipt)
    imports = []
    for path in map(str, import_paths):
        read = read_outcomes(path, order)
        current = not import_problems([(path, read.totals)], catalog, pins)
        imports.append((path, compact(read, path) if current else read.totals))
    check_current((str(summary_path), summary), imports, catalog, receipt)  # refuses the rest
    return summary, catalog, receipt, imports


def _figures_asked(asked: dict[str, Path], analysis: dict) -> None:
    from afbench.report.figures import names

    if set(asked) != set(names(analysis)):
        raise AfbenchError(
            "the figures asked for are not the figures this report has",
            field="--figure",
            expected=sorted(names(analysis)),
            found=sorted(asked),
        )


def render_figures(given) -> None:
    """The report's figures, from the models' numbers alone (local runs are not drawn), so
    only a change of those numbers redraws them. `given`: render-figures' values by the names
    its signature declares; each --figure's stem names the figure it is."""
    from afbench.report.analysis import analyse
    from afbench.report.figures import make_figures

    summary, catalog, _, imports = _report_inputs(
        given.summary, given.imports, given.catalog, given.receipt
    )
    figure_paths = {path.stem: path for path in given.figure}
    analysis = analyse(summary, [imp for _, imp in imports], catalog, [], given.confidence)
    beside = beyond_the_leaderboard(imports, [], given.anatomy, [], None)
    analysis = kinds.ANALYSIS.record(**kinds.ANALYSIS.body(analysis), **beside)
    _figures_asked(figure_paths, analysis)
    figures = make_figures(analysis)
    write_outputs(
        [(figure_paths[name], svg.encode()) for name, svg in figures.items()],
        about=f"figures: {len(figures)} drawn",
    )


def _read_figure(path: Path) -> str:
    from afbench.core.fsutil import read_regular_file

    data = read_regular_file(path, "figure", MAX_FIGURE_BYTES)
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise AfbenchError(f"figure is not UTF-8 (byte {exc.start})", file=str(path)) from None


def render_report(given) -> list[str]:
    """The analysis and the HTML report, written together, the HTML embedding each figure.
    `given`: render-report's values by the names its signature declares (cli.signatures: the
    job's parsed flags, or the user's door's `values("render-report", ...)`). `figure`: the
    figures render_figures drew, read; None: drawn here and written too, each in
    figures/<name>.svg beside the HTML. `ledger`: the executed trials' cost ledger, shown
    beside its ceiling; `sequential_run`: the sealed comparison's decision record
    (afbench.execution.sequential.run_step), shown with each run's check against the plan;
    `history`: a history across revisions, from the other revisions' store partitions, the
    comparable subsets and the runs' outcomes (report_history); `pass_at_k`: the runs' pass@k
    (afbench.runs.passk), shown beside them, not in the analysis; None (the user's door): each
    run's pass@k made here from the attempts.csv in its folder, where there is one (a run of tasks
    the catalog does not have is shown without it, and said: the returned warnings)."""
    if len(given.task_table) > 1:
        raise AfbenchError("one task table at most", field="--task-table")
    if len(given.comparisons) > 1:
        raise AfbenchError("one file of comparisons at most", field="--comparisons")
    history_files = [given.history_partition, given.history_comparable, given.history_outcomes]
    if not given.history and any(history_files):
        raise AfbenchError(
            "the history's inputs are given but the history is not asked for",
            field="--history",
            expected="true, with --history-partition, --history-comparable or --history-outcomes",
            found="false",
        )
    from afbench.audit.manifest import tool_versions
    from afbench.report.analysis import analyse
    from afbench.report.page import render

    summary, catalog, receipt, imports = _report_inputs(
        given.summary, given.imports, given.catalog, given.receipt
    )
    run_paths = given.run
    runs = [kinds.RUN_SUMMARY.read(path) for path in run_paths]
    warnings: list[str] = []
    if given.pass_at_k is None:
        pass_at_k, warnings = runs_pass_at_k(run_paths, runs, catalog, given.confidence)
    else:
        pass_at_k = [kinds.PASS_AT_K.read(path) for path in given.pass_at_k]
        for path, record in zip(given.pass_at_k, pass_at_k, strict=True):
            if record["run"] not in {run["run"] for run in runs}:
                raise AfbenchError(
                    "the pass@k of a run the report is not given",
                    file=str(path),
                    field="run",
                    expected=" / ".join(run["run"] for run in runs) or "a run given with --run",
                    found=record["run"],
                )
    analysis = analyse(summary, [imp for _, imp in imports], catalog, runs, given.confidence)
    beside = {}
    if given.ledger is not None:
        beside["cost_ledger"] = kinds.COST_LEDGER.read(given.ledger)
    if given.sequential_run is not None:
        beside["sequential"] = {
            "run": kinds.SEQUENTIAL_RUN.read(given.sequential_run),
            "plan_checks": [
                {"run": run["run"], **run["analysis_plan"]}
                for run in runs
                if "analysis_plan" in run
            ],
        }
    beside.update(
        beyond_the_leaderboard(
            imports,
            list(zip(run_paths, runs, strict=True)),
            given.anatomy,
            list(given.run_anatomy),
            given.task_table[0] if given.task_table else None,
        )
    )
    if given.comparisons:
        comparisons_path = given.comparisons[0]
        from afbench.upgrade.crossrev import analysis_block, complete

        with complete(comparisons_path, kinds.CROSS_REVISION.name):
            beside["cross_revision"] = analysis_block(
                kinds.CROSS_REVISION.read(comparisons_path),
                catalog,
                [imp for _, imp in imports],
                runs,
                str(comparisons_path),
            )
    if given.history:
        beside["history"] = report_history(
            catalog,
            imports,
            list(zip(run_paths, runs, strict=True)),
            given.confidence,
            *history_files,
        )
    used = {imp["file"] for _, imp in imports} | set(catalog["inputs"])
    provenance = {
        "files": [f for f in receipt["files"] if f["path"] in used],
        "release_dates": catalog["release"]["dates"],
        "config_digest": given.settings_digest or "not given",
        "versions": tool_versions(),
    }
    analysis = kinds.ANALYSIS.record(
        **kinds.ANALYSIS.body(analysis), **beside, provenance=provenance
    )
    drawn: list[tuple[Path, bytes]] = []
    html = Path(given.html)
    if given.figure is None:
        from afbench.report.figures import make_figures

        figures = make_figures(analysis)
        drawn = [
            (html.parent / "figures" / f"{name}.svg", svg.encode()) for name, svg in figures.items()
        ]
    else:
        figure_paths = {path.stem: path for path in given.figure}
        _figures_asked(figure_paths, analysis)
        figures = {name: _read_figure(path) for name, path in figure_paths.items()}
    write_outputs(
        [
            *drawn,
            json_output(given.analysis, analysis),
            (html, render(analysis, provenance, figures, pass_at_k).encode()),
        ],
        about=analysis,
    )
    return warnings


def runs_pass_at_k(
    run_paths: list[Path], runs: list[dict], catalog: dict, confidence: float
) -> tuple[list[dict], list[str]]:
    """Each run's pass@k (afbench.runs.passk), as the pipeline's pass-at-k job makes it, from
    the attempts.csv its import wrote beside its summary; a run without one has none, and one
    with tasks the catalog does not have (of another release) has none and a warning saying
    why; any other refusal of its attempts is the job's."""
    from afbench.runs.passk import read_attempt_rows, run_pass_at_k

    records, warnings = [], []
    in_catalog = {t["task_id"] for t in catalog["tasks"]}
    for path, summary in zip(run_paths, runs, strict=True):
        attempts = Path(path).parent / RUN_FILES["attempts"]
        if not attempts.is_file():
            continue
        rows = read_attempt_rows(attempts)
        try:
            records.append(run_pass_at_k(summary, rows, str(attempts), catalog, confidence))
        except AfbenchError as refused:
            # only a run of tasks the catalog does not have (of another release) is shown
            # without its pass@k; a damaged table is refused as the job refuses it
            if all(row["task_id"] in in_catalog for row in rows):
                raise
            warnings.append(f"run '{summary['run']}' is shown without its pass@k: {refused}")
    return records, warnings


MAX_PARTITION_BYTES = 1 << 30


def read_store_partitions(paths: list[Path], revision: str) -> list:
    """The other revisions' partitions of the tables a history reads (history.STORED_COLUMNS),
    each refused unless it is one of them, of one store, not of this revision, with both
    tables of its revision; as history.Stored, one per revision."""
    import io

    import pyarrow.parquet as pq

    from afbench.core.fsutil import read_regular_file, sha256_bytes
    from afbench.exports.store import PART, partition
    from afbench.upgrade.history import STORED_COLUMNS, Stored

    layout = f"<store>/<{'|'.join(STORED_COLUMNS)}>/revision=<revision>/{PART}"
    tables: dict[str, dict] = {}
    files: dict[str, dict] = {}
    roots = set()
    for path in map(Path, paths):
        table, folder = path.parent.parent.name, path.parent.name
        other = folder.removeprefix("revision=")
        root = path.parent.parent.parent
        if (
            table not in STORED_COLUMNS
            or not folder.startswith("revision=")
            or partition(root, table, other) != path
        ):
            raise AfbenchError(
                "not a store partition a history reads",
                file=str(path),
                field="--history-partition",
                expected=layout,
                found=str(path),
            )
        if other == revision:
            raise AfbenchError(
                "this revision's own partition: its side comes from its own artifacts (its "
                "partitions are written after its report)",
                file=str(path),
                field="--history-partition",
                expected=f"a partition of another revision than {revision}",
                found=other,
            )
        roots.add(root)
        if len(roots) > 1:
            raise AfbenchError(
                "partitions of two stores",
                file=str(path),
                field="--history-partition",
                expected=f"partitions of one store ({sorted(map(str, roots))[0]})",
                found=str(root),
            )
        if table in tables.get(other, {}):
            raise AfbenchError(
                "a partition given twice", file=str(path), field="--history-partition"
            )
        data = read_regular_file(path, "store partition", MAX_PARTITION_BYTES)
        try:
            rows = pq.read_table(io.BytesIO(data), columns=list(STORED_COLUMNS[table])).to_pylist()
        except (OSError, ValueError, KeyError) as exc:
            reason = " ".join(str(exc).split())[:200]
            raise AfbenchError(
                f"not a readable partition of {table} ({reason}); write its revision again "
                "with `snakemake store`",
                file=str(path),
                field="--history-partition",
            ) from None
        tables.setdefault(other, {})[table] = rows
        files.setdefault(other, {})[table] = {
            "table": table,
            "revision": other,
            "file": f"{table}/revision={other}/{PART}",
            "sha256": sha256_bytes(data),
            "rows": len(rows),
        }
    for other, found in tables.items():
        missing = [t for t in STORED_COLUMNS if t not in found]
        if missing:
            raise AfbenchError(
                f"revision {other}: its partition of {missing[0]} is not given",
                field="--history-partition",
                expected=str(partition(next(iter(roots)), missing[0], other)),
                found="only " + ", ".join(sorted(found)),
            )
    return [
        Stored(other, tables[other], {t: files[other][t] for t in STORED_COLUMNS})
        for other in sorted(tables)
    ]


def report_history(
    catalog: dict,
    imports: list[tuple[str, dict]],
    runs: list[tuple[Path, dict]],
    confidence: float,
    partitions: list[Path],
    comparable: list[Path],
    outcomes: list[Path],
) -> dict:
    """The report's history across revisions (afbench.upgrade.history): this revision's sides from
    the imports and runs it shows (each run's outcomes.csv beside its summary), the other
    revisions' from their store partitions, compared on the comparable subsets given."""
    from afbench.task_analysis.anatomy import configuration_rows, read_outcome_rows
    from afbench.upgrade.crossrev import (
        compact_official_side,
        comparable_subset,
        complete,
        local_side,
    )
    from afbench.upgrade.history import history

    revision = catalog["release"]["revision"]
    stored = read_store_partitions(partitions, revision)
    subsets = []
    for path in comparable:
        selection = kinds.SELECTION.read(path)
        with complete(path, kinds.SELECTION.name):
            subsets.append((comparable_subset(selection, str(path)), str(path)))
    sides = [compact_official_side(imp, catalog) for _, imp in imports]
    beside = {Path(path).parent: Path(path) for path in outcomes}
    for run_path, summary in runs:
        table = beside.get(Path(run_path).parent)
        if table is None:
            raise AfbenchError(
                f"run '{summary['run']}': its outcomes are needed for its history, and none "
                "given is in its folder",
                file=str(run_path),
                field="--history-outcomes",
                expected=str(Path(run_path).parent / "outcomes.csv"),
                found=", ".join(map(str, outcomes)) or "none",
            )
        rows = configuration_rows(summary, read_outcome_rows(table), str(table))
        for configuration in summary["configurations"]:
            sides.append(local_side(summary, rows, configuration["configuration"]))
    return history(revision, catalog["inputs"], sides, stored, subsets, confidence)


def beyond_the_leaderboard(
    imports: list[tuple[str, dict]],
    runs: list[tuple[Path, dict]],
    anatomy_path: Path | None,
    run_anatomy_paths: list[Path],
    task_table_path: Path | None,
) -> dict:
    """The analysis' keys beyond the leaderboard, from their artifacts, each checked to come
    from exactly the imports (and runs) the report shows: `anatomy` (afbench.task_analysis.anatomy)
    and `task_table` (afbench.task_analysis.items). A key whose artifact is not given is left
    out."""
    from afbench.task_analysis.anatomy import (
        analysis_block,
        check_official_anatomy,
        check_run_anatomy,
    )
    from afbench.task_analysis.items import analysis_block as task_table_block
    from afbench.task_analysis.items import check_task_table

    shown = [imp for _, imp in imports]
    out: dict = {}
    if run_anatomy_paths and anatomy_path is None:
        raise AfbenchError(
            "the local runs' failure anatomies are shown beside the official one: give it too",
            field="--anatomy",
            expected="the official failure anatomy, with --run-anatomy",
        )
    if anatomy_path is not None:
        official = kinds.FAILURE_ANATOMY.read(anatomy_path)
        check_official_anatomy(official, shown, str(anatomy_path))
        by_run = {}
        for path in run_anatomy_paths:
            anatomy = kinds.RUN_FAILURE_ANATOMY.read(path)
            by_run.setdefault(anatomy.get("run"), (path, anatomy))
        local = []
        for run_path, summary in runs:
            if summary["run"] not in by_run:
                if run_anatomy_paths:
                    raise AfbenchError(
                        f"no failure anatomy of run '{summary['run']}' among those given",
                        file=str(run_path),
                        field="--run-anatomy",
                    )
                continue
            path, anatomy = by_run.pop(summary["run"])
            check_run_anatomy(anatomy, summary, str(path))
            local.append(anatomy)
        for path, anatomy in by_run.values():
            raise AfbenchError(
                "a run's failure anatomy whose run the report does not show",
                file=str(path),
                expected=f"one of the runs {[summary['run'] for _, summary in runs]}",
                found=anatomy.get("run"),
            )
        out["anatomy"] = analysis_block(official, local)
    if task_table_path is not None:
        table = kinds.TASK_TABLE.read(task_table_path)
        check_task_table(table, shown, str(task_table_path))
        out["task_table"] = task_table_block(table)
    return out


def plan_power(given, imports: list[dict]) -> None:
    """The run planner (afbench.plans.power) over plan-power's values (`given`, by the names
    its signature declares: difference, tasks, alpha, power, configurations, baseline_rate)
    and none or two model imports (their observed discordance and its variation between
    sources): prints its one line, and writes its JSON to `output` when given. With
    `sequential_tasks`, the sequential test's view beside it (its batches and cost per task
    from `batch_tasks` and `usd_per_task`), and its line."""
    from afbench.plans.power import observed, plan, with_sequential

    keys = ("difference", "tasks", "alpha", "power", "configurations", "baseline_rate")
    models = observed(imports) if imports else None
    release = imports[0]["release"] if imports else None
    result = plan(**{key: getattr(given, key) for key in keys}, models=models, release=release)
    if given.sequential_tasks is not None:
        result = with_sequential(
            result, given.sequential_tasks, given.batch_tasks, given.usd_per_task
        )
    if given.output is not None:
        write_outputs([json_output(given.output, result)], about=result)
    print(result["line"])
    if given.sequential_tasks is not None:
        print(result["sequential"]["line"])


def discover_into(config: dict, checkout: Path, discovery: Path, fragment: Path) -> list[str]:
    """Compare `config`'s files, models and columns with the checkout at the pinned revision;
    write the discovery record and the fragment to review (config is never edited). Returns
    the warnings; a pin that differs is an error after both files are written."""
    from afbench.release.discover import discover

    report, fragment_bytes, warnings, problems = discover(config, checkout)
    write_outputs([json_output(discovery, report), (Path(fragment), fragment_bytes)], about=report)
    if problems:
        raise AfbenchError(problems=problems)
    return warnings


def audit_lines(record: dict) -> list[str]:
    """One line per check: held or failed, the relation, the artifact and what it is derived
    from, then each problem on a line of its own."""
    lines = []
    for check in record["checks"]:
        source = f" <- {check['derived_from']}" if check["derived_from"] else ""
        state = "held  " if check["held"] else "FAILED"
        lines.append(
            f"{state} {check['relation']} ({check['method']}): {check['artifact']}{source}"
        )
        lines += [f"         {problem}" for problem in check["problems"]]
    return lines


def audit_into(directory: Path, output: Path | None, quiet: bool = False) -> None:
    """Audit `directory`, print a line per check, write the record to `output` (never inside
    the directory audited; the write names the outcome) and fail (exit 1) unless every check
    held."""
    import sys

    from afbench.audit.directory import audit_directory
    from afbench.core.errors import NotHeld, printable
    from afbench.core.fsutil import write_json

    from .say import DESCRIBERS

    directory = Path(directory)
    if output is not None and Path(output).resolve().is_relative_to(directory.resolve()):
        raise AfbenchError(
            "the audit never writes into the directory it audits",
            file=str(output),
            expected=f"a file outside {directory}",
        )
    record = audit_directory(directory)
    for line in audit_lines(record):
        print(printable(line, 4000))
    sys.stdout.flush()
    if output is not None:
        write_json(output, record)
    elif not quiet:
        print(f"afbench: {DESCRIBERS['AUDIT'](record)}", file=sys.stderr)
    if not record["held"]:
        checks = record["counts"]["checks"]
        raise NotHeld(
            f"audit of {directory}: {record['counts']['failed']} of {checks} checks failed"
            if checks
            else f"audit of {directory}: no artifact to audit"
        )
