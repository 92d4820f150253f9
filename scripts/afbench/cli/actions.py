"""What both doors do the same way: read the files given, call the stage functions, write the
files given. The job commands and the seed's commands differ only in where their values come
from (typed flags, or the config read once); each action takes plain values and paths."""

from __future__ import annotations

from pathlib import Path

from ..errors import AfbenchError
from ..fsutil import csv_output, json_output, write_outputs
from ..records import (
    CATALOG,
    COST_LEDGER,
    RECEIPT,
    RUN_SUMMARY,
    SELECTION,
    SUMMARY,
    TASK_CHECKSUMS,
    TRIAL_RECEIPT,
    VERIFIED_FILE,
    read_record,
    record,
)

RUN_FILES = {"summary": "summary.json", "outcomes": "outcomes.csv", "attempts": "attempts.csv"}
REPORT_FILES = {"html": "index.html", "analysis": "analysis.json"}


def verified_entries(paths: list[Path]) -> tuple[dict, dict]:
    """Verified file entries by key, from receipts or verified-file records, and their release."""
    from ..release import collect_verified

    return collect_verified([(str(p), read_record(p, RECEIPT, VERIFIED_FILE)) for p in paths])


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
    from ..analysis import letters_text
    from ..errors import raise_if
    from ..official import LEADERBOARD_COLUMNS, read_outcomes, reduced, summarize
    from ..release import stale_imports

    read = [(str(path), reduced(read_outcomes(path))) for path in imports]
    if verified:
        entries, _ = verified_entries(verified)
        pins = {entry["path"]: entry["actual_sha256"] for entry, _ in entries.values()}
        raise_if(stale_imports(read, pins))
    result = summarize([imp for _, imp in read], strict_budget, published, strict_published)
    rows = [
        [_cell(letters_text(row[c]) if c == "letters" else row[c]) for c in LEADERBOARD_COLUMNS]
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
) -> None:
    """A local run (Harbor job folders or verdict folders) over its selection: summary (with
    each configuration's protocol-conformance certificate), outcomes and attempts, written
    together. No budget: the release's nominal budget. `task_checksums`: the exporter's
    output for the selection's tasks (conformance.exported_checksums), which a Harbor run's
    task checksums are compared with."""
    from ..conformance import certify_run
    from ..fsutil import check_name
    from ..runs import (
        ATTEMPT_COLUMNS,
        OUTCOME_COLUMNS,
        read_harbor_job,
        read_verdict_dir,
        summarize_run,
    )

    check_name(name, "run name")
    selection = read_record(selection_path, SELECTION)
    if not folders:
        raise AfbenchError("nothing to import: no job or verdict folder given", field="--path")
    budget = selection["release"]["nominal_budget_usd"] if budget_usd is None else budget_usd
    reader = read_harbor_job if kind == "harbor" else read_verdict_dir
    attempts = [a for folder in folders for a in reader(Path(folder))]
    summary, rows = summarize_run(name, kind, selection, attempts, budget, selection["release"])
    exported = read_record(task_checksums, TASK_CHECKSUMS) if task_checksums else None
    summary = {**record(RUN_SUMMARY), **certify_run(summary, attempts, kind, exported)}
    write_outputs(
        [
            csv_output(
                outputs["attempts"],
                ATTEMPT_COLUMNS,
                ([a[c] for c in ATTEMPT_COLUMNS] for a in attempts),
            ),
            csv_output(
                outputs["outcomes"],
                OUTCOME_COLUMNS,
                ([r[c] for c in OUTCOME_COLUMNS] for r in rows),
            ),
            json_output(outputs["summary"], summary),
        ],
        about=summary,
    )


def executed_job_folders(receipts: list[Path]) -> list[Path]:
    """The Harbor job folders that `afbench job run-trial` receipts name (a trial refused at
    the cost ceiling has none)."""
    read = [read_record(path, TRIAL_RECEIPT) for path in receipts]
    folders = [Path(r["job_dir"]) for r in read if not r.get("refused")]
    if read and not folders:
        raise AfbenchError(
            f"every one of the {len(read)} trial(s) was refused at the cost ceiling: nothing "
            "ran, so there is nothing to import (the cost ledger says why)",
            field="--receipt",
        )
    return folders


MAX_FIGURE_BYTES = 64 << 20  # a figure of 200 models is a few megabytes


def _report_inputs(
    summary_path: Path, import_paths: list[Path], catalog_path: Path, receipt_path: Path
) -> tuple[dict, dict, dict, list[tuple[str, dict]]]:
    """The comparison, the catalog, the receipt, and each model import reduced to what the
    analysis needs (one at a time: its records are never all held), all checked current."""
    from ..analysis import check_current, compactor, import_problems, receipt_pins
    from ..official import read_outcomes, task_order

    summary = read_record(summary_path, SUMMARY)
    catalog = read_record(catalog_path, CATALOG)
    receipt = read_record(receipt_path, RECEIPT)
    compact, order, pins = compactor(catalog), task_order(catalog), receipt_pins(receipt)
    imports = []
    for path in map(str, import_paths):
        read = read_outcomes(path, order)
        current = not import_problems([(path, read.totals)], catalog, pins)
        imports.append((path, compact(read, path) if current else read.totals))
    check_current((str(summary_path), summary), imports, catalog, receipt)  # refuses the rest
    return summary, catalog, receipt, imports


def _figures_asked(asked: dict[str, Path], analysis: dict) -> None:
    from ..figures import names

    if set(asked) != set(names(analysis)):
        raise AfbenchError(
            "the figures asked for are not the figures this report has",
            field="--figure",
            expected=sorted(names(analysis)),
            found=sorted(asked),
        )


def render_figures(
    summary_path: Path,
    import_paths: list[Path],
    catalog_path: Path,
    receipt_path: Path,
    confidence: float,
    figure_paths: dict[str, Path],
) -> None:
    """The report's figures, from the models' numbers alone (local runs are not drawn), so
    only a change of those numbers redraws them."""
    from ..analysis import analyse
    from ..figures import make_figures

    summary, catalog, _, imports = _report_inputs(
        summary_path, import_paths, catalog_path, receipt_path
    )
    analysis = analyse(summary, [imp for _, imp in imports], catalog, [], confidence)
    _figures_asked(figure_paths, analysis)
    figures = make_figures(analysis)
    write_outputs(
        [(figure_paths[name], svg.encode()) for name, svg in figures.items()],
        about=f"figures: {len(figures)} drawn",
    )


def _read_figure(path: Path) -> str:
    from ..fsutil import read_regular_file

    data = read_regular_file(path, "figure", MAX_FIGURE_BYTES)
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise AfbenchError(f"figure is not UTF-8 (byte {exc.start})", file=str(path)) from None


def render_report(
    summary_path: Path,
    import_paths: list[Path],
    catalog_path: Path,
    receipt_path: Path,
    run_paths: list[Path],
    confidence: float,
    settings_digest: str | None,
    html: Path,
    analysis_path: Path,
    figure_paths: dict[str, Path] | None,
    ledger_path: Path | None = None,
) -> None:
    """The analysis and the HTML report, written together, the HTML embedding each figure.
    `figure_paths`: the figures render_figures drew, read; None: drawn here and written too,
    each in figures/<name>.svg beside the HTML. `ledger_path`: the executed trials' cost
    ledger, shown beside its ceiling."""
    from ..analysis import analyse
    from ..records import tool_versions
    from ..report import render

    summary, catalog, receipt, imports = _report_inputs(
        summary_path, import_paths, catalog_path, receipt_path
    )
    runs = [read_record(path, RUN_SUMMARY) for path in run_paths]
    analysis = analyse(summary, [imp for _, imp in imports], catalog, runs, confidence)
    if ledger_path is not None:
        analysis["cost_ledger"] = read_record(ledger_path, COST_LEDGER)
    used = {imp["file"] for _, imp in imports} | set(catalog["inputs"])
    provenance = {
        "files": [f for f in receipt["files"] if f["path"] in used],
        "release_dates": catalog["release"]["dates"],
        "config_digest": settings_digest or "not given",
        "versions": tool_versions(),
    }
    drawn: list[tuple[Path, bytes]] = []
    if figure_paths is None:
        from ..figures import make_figures

        figures = make_figures(analysis)
        drawn = [
            (Path(html).parent / "figures" / f"{name}.svg", svg.encode())
            for name, svg in figures.items()
        ]
    else:
        _figures_asked(figure_paths, analysis)
        figures = {name: _read_figure(path) for name, path in figure_paths.items()}
    analysis = {**analysis, "provenance": provenance}
    write_outputs(
        [
            *drawn,
            json_output(analysis_path, analysis),
            (Path(html), render(analysis, provenance, figures).encode()),
        ],
        about=analysis,
    )


def plan_power(settings: dict, imports: list[dict], output: Path | None) -> None:
    """The run planner (afbench.power) over `settings` (difference, tasks, alpha, power,
    baseline_rate) and none or two model imports (their observed discordance): prints its one
    line, and writes its JSON to `output` when given."""
    from ..power import observed, plan

    models = observed(imports) if imports else None
    release = imports[0]["release"] if imports else None
    result = plan(**settings, models=models, release=release)
    if output is not None:
        write_outputs([json_output(output, result)], about=result)
    print(result["line"])


def discover_into(config: dict, checkout: Path, discovery: Path, fragment: Path) -> list[str]:
    """Compare `config`'s files, models and columns with the checkout at the pinned revision;
    write the discovery record and the fragment to review (config is never edited). Returns
    the warnings; a pin that differs is an error after both files are written."""
    from ..discover import discover

    report, fragment_bytes, warnings, problems = discover(config, checkout)
    write_outputs([json_output(discovery, report), (Path(fragment), fragment_bytes)], about=report)
    if problems:
        raise AfbenchError(problems=problems)
    return warnings
