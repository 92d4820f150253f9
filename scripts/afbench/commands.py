"""The CLI's commands: read config and inputs, call the stage modules, write artifacts."""

from __future__ import annotations

import json
from argparse import Namespace
from pathlib import Path

from . import paths
from .config import load_config, revision_dir
from .errors import AfbenchError
from .fsutil import (
    atomic_write_bytes,
    check_name,
    path_text,
    read_json_file,
    read_regular_file,
    write_csv,
    write_json,
)
from .paths import plan_label

MAX_VERDICT_BYTES = 16 << 20  # a verdict is a few kilobytes; /dev/zero is refused before this


def _config(args: Namespace) -> dict:
    if args.config_json:
        # Passed by the Snakefile, which has already validated it against the same schema.
        return json.loads(args.config_json)
    return load_config([Path(p) for p in args.config])


def cmd_fetch(args: Namespace) -> list[str]:
    from .fetch import fetch_release

    return fetch_release(_config(args), args.only)


def _load_catalog(config: dict, build_if_missing: bool = True) -> dict:
    from .catalog import build_catalog, check_catalog_current

    path = paths.catalog(config)
    if path.exists():
        catalog = read_json_file(path, "catalog")
        check_catalog_current(config, catalog, str(path))
        return catalog
    if not build_if_missing:
        raise AfbenchError("catalog not built yet (run `afbench tasks`)", file=str(path))
    catalog = build_catalog(config)
    write_json(path, catalog)
    return catalog


def _write_selection(config: dict, catalog: dict, name: str, criteria: dict) -> dict:
    from .catalog import select_tasks

    selection = select_tasks(
        catalog, name, criteria.get("tasks"), criteria.get("books"), criteria.get("limit")
    )
    write_json(paths.selection(config, name), selection)
    return selection


def _configured_selection(config: dict, name: str) -> dict:
    check_name(name, "selection name")
    if name not in config["selections"]:
        raise AfbenchError(
            f"no selection named '{name}' in config",
            expected=f"one of {sorted(config['selections'])}",
            field="selections",
        )
    return config["selections"][name]


def _parse_limit(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise AfbenchError("--limit must be a whole number", field="limit", found=text) from None
    if value < 1:
        raise AfbenchError("--limit must be at least 1", field="limit", found=text)
    return value


def cmd_tasks(args: Namespace) -> None:
    from .catalog import build_catalog

    config = _config(args)
    adhoc = args.name or args.task or args.book or args.limit is not None
    if adhoc:
        if not args.name:
            raise AfbenchError("an ad-hoc selection needs --name", field="name")
        criteria = {"tasks": args.task, "books": args.book, "limit": _parse_limit(args.limit)}
        _write_selection(config, _load_catalog(config), args.name, criteria)
        return
    if args.selection:
        catalog = _load_catalog(config, build_if_missing=False)
        for name in args.selection:
            _write_selection(config, catalog, name, _configured_selection(config, name))
        return
    catalog = build_catalog(config)
    write_json(paths.catalog(config), catalog)
    if not args.catalog_only:
        for name, criteria in config["selections"].items():
            _write_selection(config, catalog, name, criteria)


def _load_selection(config: dict, name: str) -> dict:
    check_name(name, "selection name")
    path = paths.selection(config, name)
    catalog = _load_catalog(config)
    if path.exists():
        selection = read_json_file(path, "selection")
        if selection.get("release") != catalog["release"] or selection.get("task_ids") is None:
            raise AfbenchError(
                "selection is stale: rebuild it with `afbench tasks`", file=str(path)
            )
        return selection
    return _write_selection(config, catalog, name, _configured_selection(config, name))


def _abs_from_config(value: str | None) -> str | None:
    return None if value is None else str(Path(value).resolve())


def cmd_plan(args: Namespace) -> None:
    from .plan import build_plan

    config = _config(args)
    if args.selection:
        items = [{"selection": args.selection, "agent": args.agent or "nop", "model": args.model}]
        repository = args.repository_dir or _abs_from_config(config["plans"]["repository_dir"])
    else:
        if args.agent or args.model:
            raise AfbenchError("--agent and --model go with --selection", field="selection")
        items = config["plans"]["items"]
        if not items:
            raise AfbenchError("no plans configured (plans.items) and no --selection given")
        repository = args.repository_dir or _abs_from_config(config["plans"]["repository_dir"])
    seen = set()
    for item in items:
        key = (item["selection"], item["agent"], item.get("model"))
        if key in seen:
            raise AfbenchError("plan listed twice", field="plans.items", found=str(key))
        seen.add(key)
    jobs_dir = Path(config["plans"]["jobs_dir"])
    jobs_dir = jobs_dir if jobs_dir.is_absolute() else revision_dir(config) / jobs_dir
    for item in items:
        selection = _load_selection(config, item["selection"])
        plan = build_plan(config, selection, item["agent"], item.get("model"), repository, jobs_dir)
        label = plan_label(item["agent"], item.get("model"))
        write_json(paths.plan(config, item["selection"], label), plan)


def cmd_import_results(args: Namespace) -> None:
    from .config import selected_models
    from .official import LEADERBOARD_COLUMNS, import_model, summarize

    config = _config(args)
    settings = config["import"]
    condition = args.source_condition or settings["source_condition"]
    budget = args.budget_usd if args.budget_usd is not None else settings["budget_usd"]
    strict = settings["strict_budget"] if args.strict_budget is None else args.strict_budget
    if args.model:
        config["import"]["models"] = args.model
    elif args.all_models:
        config["import"]["models"] = []
    models = selected_models(config)
    imports = []
    if not args.summary_only:
        for slug in models:
            record = import_model(config, slug, condition, budget)
            write_json(paths.model_import(config, condition, budget, slug), record)
            del record["records"]  # the summary needs only the totals: keep memory flat
            imports.append(record)
    if args.models_only:
        return
    if args.summary_only:
        from .official import check_request

        for slug in models:
            check_request(config, slug, condition, budget)
            path = paths.model_import(config, condition, budget, slug)
            record = read_json_file(path, "model import")
            if (
                record.get("inputs", {}).get(config["models"][slug]["path"])
                != config["models"][slug]["sha256"]
            ):
                raise AfbenchError("model import is stale: import it again", file=str(path))
            del record["records"]
            imports.append(record)
    out = paths.imports_dir(config, condition, budget)
    for stale in (out / "summary.json", out / "leaderboard.csv"):
        stale.unlink(missing_ok=True)
    summary = summarize(config, imports, strict)
    write_csv(
        out / "leaderboard.csv",
        LEADERBOARD_COLUMNS,
        ([row[c] for c in LEADERBOARD_COLUMNS] for row in summary["leaderboard"]),
    )
    write_json(out / "summary.json", summary)


def cmd_verdict(args: Namespace) -> None:
    from .fsutil import sha256_bytes
    from .runs import parse_verdict

    check_name(args.task, "task id")
    path = Path(args.path)
    data = read_regular_file(path, "verdict file", MAX_VERDICT_BYTES)
    verdict = parse_verdict(data, str(path), args.task)
    record = {
        "kind": "afbench verdict import",
        **verdict,
        "input": {"path": path_text(path.resolve()), "sha256": sha256_bytes(data)},
    }
    if args.output:
        write_json(Path(args.output), record)
    else:
        print(json.dumps(record, indent=2, ensure_ascii=False))


def cmd_import_run(args: Namespace) -> None:
    from .catalog import release_header
    from .fsutil import json_bytes
    from .runs import (
        ATTEMPT_COLUMNS,
        OUTCOME_COLUMNS,
        read_harbor_job,
        read_verdict_dir,
        summarize_run,
    )

    config = _config(args)
    if args.run:
        if args.run not in config["runs"]:
            raise AfbenchError(
                f"no run named '{args.run}' in config",
                field="runs",
                expected=f"one of {sorted(config['runs'])}",
            )
        spec = config["runs"][args.run]
        name, kind, inputs = args.run, spec["kind"], spec["paths"]
        selection_name, budget = spec["selection"], spec["budget_usd"]
    else:
        if not (args.name and args.kind and args.path and args.selection):
            raise AfbenchError(
                "an ad-hoc run needs --name, --kind, --path and --selection "
                "(or --run NAME from config)"
            )
        name, kind, inputs, selection_name = args.name, args.kind, args.path, args.selection
        budget = (
            args.budget_usd
            if args.budget_usd is not None
            else config["release"]["nominal_budget_usd"]
        )
    check_name(name, "run name")
    selection = _load_selection(config, selection_name)
    reader = read_harbor_job if kind == "harbor" else read_verdict_dir
    attempts = [a for folder in inputs for a in reader(Path(folder))]
    summary, rows = summarize_run(name, kind, selection, attempts, budget, release_header(config))
    out = paths.run_dir(config, name)
    write_csv(
        out / "attempts.csv", ATTEMPT_COLUMNS, ([a[c] for c in ATTEMPT_COLUMNS] for a in attempts)
    )
    write_csv(
        out / "outcomes.csv", OUTCOME_COLUMNS, ([r[c] for c in OUTCOME_COLUMNS] for r in rows)
    )
    atomic_write_bytes(out / "summary.json", json_bytes(summary))


def cmd_report(args: Namespace) -> None:
    from .analysis import analyse, compactor
    from .audit import tool_versions
    from .config import config_digest, report_slice, selected_models
    from .figures import make_figures
    from .report import render

    config = report_slice(_config(args))
    settings = config["import"]
    condition, budget = settings["source_condition"], settings["budget_usd"]
    summary = read_json_file(
        paths.imports_dir(config, condition, budget) / "summary.json", "import summary"
    )
    catalog = _load_catalog(config, build_if_missing=False)
    compact = compactor(catalog)
    imports = [
        compact(read_json_file(paths.model_import(config, condition, budget, slug), "model import"))
        for slug in selected_models(config)
    ]
    runs = [
        read_json_file(paths.run_dir(config, name) / "summary.json", "run summary")
        for name in config["runs"]
    ]
    analysis = analyse(summary, imports, catalog, runs, config["report"]["confidence"])
    receipt = read_json_file(paths.receipt(config), "receipt")
    provenance = {
        "files": [
            f for f in receipt["files"] if f["key"] in {"manifest", "sources", *config["models"]}
        ],
        "config_digest": config_digest(config),
        "versions": tool_versions(),
    }
    figures = make_figures(analysis)
    out = paths.report_dir(config)
    for name, svg in figures.items():
        atomic_write_bytes(out / "figures" / f"{name}.svg", svg.encode())
    write_json(out / "analysis.json", {**analysis, "provenance": provenance})
    atomic_write_bytes(out / "index.html", render(analysis, provenance, figures).encode())


def cmd_audit(args: Namespace) -> None:
    from .audit import build_audit
    from .config import config_digest

    config = _config(args)
    root = revision_dir(config)
    files = [Path(f) for f in args.file] if args.file else None
    write_json(
        paths.audit(config),
        build_audit(root, config_digest(config), config["release"]["revision"], files),
    )


def cmd_demo(args: Namespace) -> None:
    from .demo import build_repository, write_release

    if args.action == "generate":
        write_release(Path(args.out))
    else:
        print(build_repository(Path(args.release_files), Path(args.out)))


def cmd_discover(args: Namespace) -> list[str]:
    from .discover import discover

    config = _config(args)
    return discover(config, Path(args.checkout))
