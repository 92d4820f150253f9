"""`afbench job <rule>`: the Snakemake jobs' door. One command per rule of the workflow, named
after it (rule fetch_file runs `afbench job fetch-file`), with one form each: every input,
output and setting is a typed flag, required where the rule always passes it, and no config is
read at all. A setting reaches a job only if the rule hands it over, so a config change reruns
exactly the jobs whose settings changed."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from ..fsutil import write_json
from . import types
from .actions import (
    compare_models,
    discover_into,
    executed_job_folders,
    import_run,
    plan_power,
    render_figures,
    render_report,
    verified_entries,
)

# every path flag says whether the job reads it or writes it (cli.types; checked by the CLI)
FILE = {"type": types.input_path, "metavar": "FILE"}
FILES = {"type": types.input_path, "metavar": "FILE", "action": "append", "default": []}
OUT = {"type": types.output_path, "metavar": "FILE"}
OUTS = {"type": types.output_path, "metavar": "FILE", "action": "append", "default": []}
CONDITIONS = ("source-present", "source-free")


class Job(NamedTuple):
    summary: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], list[str] | None]


def _output(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", required=True, **OUT)


def _columns(p: argparse.ArgumentParser, flag: str, kind: str) -> None:
    p.add_argument(
        flag,
        dest=f"{kind}_columns",
        action="append",
        required=True,
        type=types.pair(),
        metavar="FIELD=COLUMN",
        help=f"our field -> the {kind} file's column (every field, once each)",
    )


def _mapping(pairs: list[tuple[str, str]], kind: str, flag: str) -> dict[str, str]:
    """Every field of the file kind mapped exactly once. The fields are the readers' own (a
    test holds them to the schema's): reading the schema would cost the job a YAML parse."""
    from ..catalog import MANIFEST_FIELDS, SOURCES_FIELDS
    from ..errors import AfbenchError
    from ..official import RESULT_FIELDS

    fields = set(
        {"manifest": MANIFEST_FIELDS, "sources": SOURCES_FIELDS, "results": RESULT_FIELDS}[kind]
    )
    mapping: dict[str, str] = {}
    for field, column in pairs:
        if field not in fields:
            raise AfbenchError(
                "not a field of this file",
                field=flag,
                expected=f"one of {sorted(fields)}",
                found=field,
            )
        if field in mapping:
            raise AfbenchError(
                "field mapped twice", field=flag, expected="each field once", found=field
            )
        mapping[field] = column
    missing = sorted(fields - set(mapping))
    if missing:
        raise AfbenchError(
            "fields without a column",
            field=flag,
            expected=f"every one of {sorted(fields)}",
            found=f"no column for {', '.join(missing)}",
        )
    return mapping


# --- stage 1: the release ---------------------------------------------------------------------
def _build_demo_upstream_args(p):
    p.add_argument("--release-files", required=True, type=types.input_path, metavar="DIR")
    p.add_argument("--output", required=True, type=types.output_dir(), metavar="DIR")


def build_demo_upstream(args):
    from ..demo import build_repository
    from ..fsutil import say

    commit = build_repository(args.release_files, args.output)
    say(f"demo repository: commit {commit}", [args.output])


def _source(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source-kind", required=True, choices=["https", "git", "dir"])
    p.add_argument(
        "--source-location",
        required=True,
        type=types.nonempty,
        metavar="URL|DIR",
        help="https: base URL; git: checkout; dir: mirror folder",
    )


def _source_settings(args: argparse.Namespace, **transport: object) -> dict:
    from ..config import SOURCE_LOCATION

    location = dict.fromkeys(SOURCE_LOCATION.values())
    location[SOURCE_LOCATION[args.source_kind]] = args.source_location
    return {"kind": args.source_kind, **location, **transport}


def _fetch_file_args(p):
    _source(p)
    p.add_argument("--repository", required=True, type=types.nonempty, metavar="OWNER/NAME")
    p.add_argument("--revision", required=True, type=types.commit)
    p.add_argument("--file", required=True, type=types.relpath, help="release-relative path")
    p.add_argument("--sha256", required=True, type=types.sha256, help="its pin")
    for flag in ("--connect-timeout-s", "--read-timeout-s", "--total-timeout-s"):
        p.add_argument(flag, required=True, type=types.number(0, above=True), metavar="S")
    p.add_argument("--retries", required=True, type=types.whole(0))
    p.add_argument("--backoff-factor", required=True, type=types.number(0))
    p.add_argument("--max-bytes", required=True, type=types.whole(1))
    _output(p)


def fetch_file(args):
    from ..config import ReleaseFile
    from ..fetch import fetch_file, make_source

    source = _source_settings(
        args,
        connect_timeout_s=args.connect_timeout_s,
        read_timeout_s=args.read_timeout_s,
        total_timeout_s=args.total_timeout_s,
        retries=args.retries,
        backoff_factor=args.backoff_factor,
        max_bytes=args.max_bytes,
    )
    reader = make_source(source, args.repository, args.revision)
    try:
        fetch_file(reader, ReleaseFile("file", "file", args.file, args.sha256), args.output)
    finally:
        reader.close()


def _write_release_identity_args(p):
    p.add_argument("--name", required=True, type=types.nonempty)
    p.add_argument("--repository", required=True, type=types.nonempty, metavar="OWNER/NAME")
    p.add_argument("--revision", required=True, type=types.commit)
    p.add_argument("--synthetic", required=True, type=types.boolean)
    p.add_argument("--lean", required=True, type=types.nonempty)
    p.add_argument("--mathlib", required=True, type=types.commit)
    p.add_argument("--harbor", required=True, type=types.nonempty)
    p.add_argument("--nominal-budget-usd", required=True, type=types.number(0, above=True))
    p.add_argument("--license", required=True, type=types.nonempty)
    for date in ("release-page", "manuscript-cover", "software-citation", "first-public-release"):
        p.add_argument(f"--{date}", required=True, type=types.date, metavar="YYYY-MM-DD|")
    p.add_argument(
        "--image", action="append", default=[], type=types.image, metavar="ROLE=REFERENCE@DIGEST"
    )
    _output(p)


def write_release_identity(args):
    from ..records import RELEASE_IDENTITY, record
    from ..release import identity

    release = {
        "name": args.name,
        "repository": args.repository,
        "revision": args.revision,
        "synthetic": args.synthetic,
        "lean": args.lean,
        "mathlib": args.mathlib,
        "harbor": args.harbor,
        "nominal_budget_usd": args.nominal_budget_usd,
        "license": args.license,
        "dates": {
            "release_page": args.release_page,
            "manuscript_cover": args.manuscript_cover,
            "software_citation": args.software_citation,
            "first_public_release": args.first_public_release,
        },
        "images": args.image,
    }
    write_json(args.output, record(RELEASE_IDENTITY, release=identity(release)))


def _verify_file_args(p):
    p.add_argument("--identity", required=True, help="the release identity artifact", **FILE)
    p.add_argument("--file", required=True, help="the fetched file", **FILE)
    p.add_argument("--pin", required=True, type=types.release_file, metavar="KEY=PATH@SHA256")
    _source(p)
    _output(p)


def verify_file(args):
    from ..fetch import verify_file
    from ..records import RELEASE_IDENTITY, read_record

    release = read_record(args.identity, RELEASE_IDENTITY)["release"]
    source = _source_settings(args)
    write_json(args.output, verify_file(release, source, args.pin, args.file))


def _verify_release_args(p):
    p.add_argument("--entry", required=True, help="a verified-file record (repeatable)", **FILES)
    p.add_argument(
        "--skip",
        action="append",
        default=[],
        type=types.unpinned_file,
        metavar="KEY=PATH",
        help="a file the config names without a pin (repeatable)",
    )
    _output(p)


def verify_release(args):
    from ..fetch import combine_receipt
    from ..records import VERIFIED_FILE, read_record

    records = [read_record(path, VERIFIED_FILE) for path in args.entry]
    write_json(args.output, combine_receipt(records, args.skip))


def _discover_release_args(p):
    p.add_argument(
        "--checkout",
        required=True,
        type=types.optional_input_path,
        metavar="DIR",
        help="empty: none configured (an error)",
    )
    p.add_argument("--revision", required=True, type=types.commit)
    p.add_argument("--pin", action="append", default=[], type=types.release_file)
    p.add_argument("--skip", action="append", default=[], type=types.unpinned_file)
    p.add_argument(
        "--column",
        action="append",
        required=True,
        type=types.pair(),
        metavar="KIND.FIELD=COLUMN",
    )
    p.add_argument(
        "--display-name", action="append", default=[], type=types.pair(), metavar="SLUG=NAME"
    )
    p.add_argument("--discovery", required=True, **OUT)
    p.add_argument("--fragment", required=True, **OUT)


def discover_release(args):
    from ..errors import AfbenchError

    if not args.checkout:
        raise AfbenchError(
            "no checkout to discover from: set discover.checkout in config to an upstream "
            "checkout that has the pinned commit",
            field="discover.checkout",
        )
    names = dict(args.display_name)
    columns: dict[str, list] = {"manifest": [], "sources": [], "results": []}
    for key, value in args.column:
        kind, _, field = key.partition(".")
        if kind not in columns or not field:
            raise AfbenchError(
                "not KIND.FIELD",
                field="--column",
                expected=f"KIND.FIELD=COLUMN, KIND one of {sorted(columns)}",
                found=key,
            )
        columns[kind].append((field, value))
    files = [*args.pin, *args.skip]
    config = {
        "release": {"revision": args.revision},
        "files": {
            f.key: {"path": f.path, "sha256": f.sha256} for f in files if f.kind != "results"
        },
        "models": {
            f.key: {"path": f.path, "sha256": f.sha256, "display_name": names.get(f.key, f.key)}
            for f in files
            if f.kind == "results"
        },
        "columns": {kind: _mapping(pairs, kind, "--column") for kind, pairs in columns.items()},
    }
    return discover_into(config, Path(args.checkout), args.discovery, args.fragment)


# --- stage 2: tasks -------------------------------------------------------------------------
def _export_catalog_args(p):
    p.add_argument("--manifest", required=True, **FILE)
    p.add_argument("--sources", required=True, **FILE)
    p.add_argument(
        "--verified", required=True, help="MANIFEST's and SOURCES' verified records", **FILES
    )
    _columns(p, "--manifest-column", "manifest")
    _columns(p, "--sources-column", "sources")
    p.add_argument(
        "--expected-counts", required=True, type=types.counts, metavar="TASKS,SOURCES,OBLIGATIONS"
    )
    _output(p)


def export_catalog(args):
    from ..catalog import build_catalog
    from ..release import license_of, read_entry

    entries, release = verified_entries(args.verified)
    catalog = build_catalog(
        read_entry(entries, "manifest", args.manifest),
        read_entry(entries, "sources", args.sources),
        {
            "manifest": _mapping(args.manifest_columns, "manifest", "--manifest-column"),
            "sources": _mapping(args.sources_columns, "sources", "--sources-column"),
        },
        args.expected_counts,
        release,
        license_of(release),
    )
    write_json(args.output, catalog)


def _select_tasks_args(p):
    p.add_argument("--catalog", required=True, **FILE)
    p.add_argument("--name", required=True, type=types.name)
    p.add_argument("--task", action="append", default=[], type=types.name, metavar="ID")
    p.add_argument("--source", action="append", default=[], type=types.name, metavar="SOURCE_ID")
    p.add_argument("--limit", type=types.whole(1), metavar="N")
    types.stratified_flags(p)
    _output(p)


def select_tasks(args):
    from ..catalog import select_tasks
    from ..records import CATALOG, read_record

    catalog = read_record(args.catalog, CATALOG)
    selection = select_tasks(
        catalog, args.name, args.task, args.source, args.limit, types.stratified(args)
    )
    write_json(args.output, selection)


# --- stage 3: plans -------------------------------------------------------------------------
def _write_plan_args(p):
    _plan_fields(p)
    _output(p)


def write_plan(args):
    write_json(args.output, _built_plan(args))


# --- stage 4: official results --------------------------------------------------------------
def _import_model_args(p):
    p.add_argument("--catalog", required=True, **FILE)
    p.add_argument("--verified", required=True, help="the results file's verified record", **FILE)
    p.add_argument("--results", required=True, **FILE)
    p.add_argument("--model", required=True, type=types.name, metavar="SLUG")
    p.add_argument("--display-name", required=True, type=types.nonempty)
    p.add_argument("--pinned-condition", required=True, choices=CONDITIONS)
    p.add_argument("--source-condition", required=True, choices=CONDITIONS)
    _columns(p, "--column", "results")
    _output(p)


def import_model(args):
    from ..official import ModelSpec, import_model
    from ..records import CATALOG, read_record
    from ..release import read_entry

    catalog = read_record(args.catalog, CATALOG)
    entries, _ = verified_entries([args.verified])
    imported = import_model(
        catalog,
        read_entry(entries, args.model, args.results),
        ModelSpec(args.model, args.display_name, args.pinned_condition),
        _mapping(args.results_columns, "results", "--column"),
        args.source_condition,
        catalog["release"]["nominal_budget_usd"],
    )
    write_json(args.output, imported)


def _compare_models_args(p):
    p.add_argument("--import", dest="imports", required=True, **FILES)
    p.add_argument(
        "--verified",
        help="refuse imports older than these verified records' pins (repeatable)",
        **FILES,
    )
    p.add_argument("--strict-budget", required=True, type=types.boolean)
    _published_args(p)
    p.add_argument("--summary", required=True, **OUT)
    p.add_argument("--leaderboard", required=True, **OUT)


def _published_args(p: argparse.ArgumentParser) -> None:
    """What the authors published, to check the imports against (empty: nothing published)."""
    p.add_argument("--published-source", required=True, type=types.optional_text, metavar="TEXT|")
    p.add_argument(
        "--published-task-rows", required=True, type=types.optional(types.whole(1)), metavar="N|"
    )
    p.add_argument(
        "--published-passes",
        action="append",
        default=[],
        type=types.pair(left=types.name, right=types.whole(0)),
        metavar="SLUG=N",
        help="a model's published pass count (repeatable)",
    )
    p.add_argument(
        "--published-over-budget",
        action="append",
        default=[],
        type=types.pair(left=types.name, right=types.number(0, above=True)),
        metavar="SLUG=USD",
        help="a published cost above the budget in a model's file (repeatable)",
    )
    p.add_argument("--strict-published", required=True, type=types.boolean)


def _published(args: argparse.Namespace) -> dict:
    from ..errors import AfbenchError

    passes: dict[str, int] = {}
    for slug, count in args.published_passes:
        if slug in passes:
            raise AfbenchError(
                "a model's count is given twice",
                field="--published-passes",
                expected="each model once",
                found=slug,
            )
        passes[slug] = count
    over: dict[str, list[float]] = {}
    for slug, usd in args.published_over_budget:
        over.setdefault(slug, []).append(usd)
    if args.published_source is None and (passes or over or args.published_task_rows):
        raise AfbenchError(
            "published facts need their source", field="--published-source", expected="text"
        )
    return {
        "source": args.published_source,
        "task_rows": args.published_task_rows,
        "passes": passes,
        "over_budget_usd": over,
    }


def compare_models_job(args):
    return compare_models(
        args.imports,
        args.verified,
        args.strict_budget,
        args.summary,
        args.leaderboard,
        _published(args),
        args.strict_published,
    )


# --- stage 5: local runs --------------------------------------------------------------------
def _run_outputs(p: argparse.ArgumentParser) -> None:
    for key in ("summary", "outcomes", "attempts"):
        p.add_argument(f"--{key}", required=True, **OUT)


def _import_run_args(p):
    p.add_argument("--selection", required=True, help="the selection the run was made on", **FILE)
    p.add_argument("--name", required=True, type=types.name)
    p.add_argument("--kind", required=True, choices=["harbor", "verdicts"])
    p.add_argument(
        "--path",
        required=True,
        action="append",
        type=types.input_tree,
        metavar="DIR",
        help="a Harbor job folder or a verdict folder (repeatable)",
    )
    p.add_argument("--budget-usd", required=True, type=types.number(0, above=True))
    _task_checksums(p)
    _run_outputs(p)


def _task_checksums(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--task-checksums",
        type=types.input_path,
        metavar="FILE",
        help="the exporter's output for the selection (checksum-tasks): without it no run is "
        "certified conformant",
    )


def import_run_job(args):
    outputs = {key: getattr(args, key) for key in ("summary", "outcomes", "attempts")}
    import_run(
        args.selection,
        args.name,
        args.kind,
        args.path,
        args.budget_usd,
        outputs,
        args.task_checksums,
    )


def _import_executed_args(p):
    p.add_argument("--selection", required=True, **FILE)
    p.add_argument("--name", required=True, type=types.name)
    p.add_argument("--receipt", required=True, help="a trial receipt (repeatable)", **FILES)
    _task_checksums(p)
    _run_outputs(p)


def import_executed(args):
    outputs = {key: getattr(args, key) for key in ("summary", "outcomes", "attempts")}
    folders = executed_job_folders(args.receipt)
    import_run(args.selection, args.name, "harbor", folders, None, outputs, args.task_checksums)


# --- the run planner (opt-in) --------------------------------------------------------------
def _plan_power_args(p):
    optional = types.optional
    fraction = types.number(0, above=True, below=1)
    p.add_argument("--difference", required=True, type=optional(fraction), metavar="D|")
    p.add_argument("--tasks", required=True, type=optional(types.whole(1)), metavar="N|")
    p.add_argument("--alpha", required=True, type=fraction)
    p.add_argument("--power", required=True, type=types.number(0.5, below=1))
    p.add_argument("--baseline-rate", required=True, type=optional(fraction), metavar="P|")
    p.add_argument(
        "--import", dest="imports", help="two models' imports (or none: a baseline rate)", **FILES
    )
    _output(p)


def plan_power_job(args):
    from ..records import MODEL_IMPORT, read_record

    settings = {
        key: getattr(args, key)
        for key in ("difference", "tasks", "alpha", "power", "baseline_rate")
    }
    imports = [read_record(path, MODEL_IMPORT) for path in args.imports]
    plan_power(settings, imports, args.output)


# --- stage 6: the report and the artifact manifest ------------------------------------------
def _report_input_args(p):
    p.add_argument("--summary", required=True, **FILE)
    p.add_argument("--import", dest="imports", required=True, **FILES)
    p.add_argument("--catalog", required=True, **FILE)
    p.add_argument("--receipt", required=True, **FILE)


def _render_figures_args(p):
    _report_input_args(p)
    p.add_argument("--confidence", required=True, type=types.confidence)
    p.add_argument("--figure", required=True, help="a figure to draw; its stem names it", **OUTS)


def render_figures_job(args):
    render_figures(
        args.summary,
        args.imports,
        args.catalog,
        args.receipt,
        args.confidence,
        {path.stem: path for path in args.figure},
    )


def _render_report_args(p):
    _report_input_args(p)
    p.add_argument("--run", help="a local run's summary.json (repeatable)", **FILES)
    p.add_argument("--confidence", required=True, type=types.confidence)
    p.add_argument("--settings-digest", required=True, type=types.sha256)
    p.add_argument(
        "--figure", required=True, help="a drawn figure to embed; its stem names it", **FILES
    )
    p.add_argument("--html", required=True, **OUT)
    p.add_argument("--analysis", required=True, **OUT)
    p.add_argument("--ledger", help="the executed trials' cost ledger", **FILE)


def render_report_job(args):
    render_report(
        args.summary,
        args.imports,
        args.catalog,
        args.receipt,
        args.run,
        args.confidence,
        args.settings_digest,
        args.html,
        args.analysis,
        {path.stem: path for path in args.figure},
        args.ledger,
    )


def _write_artifact_manifest_args(p):
    p.add_argument("files", nargs="+", type=types.input_path, metavar="FILE")
    p.add_argument("--root", required=True, type=types.input_path, metavar="DIR")
    p.add_argument("--revision", required=True, type=types.commit)
    p.add_argument("--config-digest", required=True, type=types.sha256)
    _output(p)


def write_artifact_manifest(args):
    from ..artifacts import build_manifest

    manifest = build_manifest(args.root, args.files, args.config_digest, args.revision)
    write_json(args.output, manifest)


# --- stage 7 (opt-in): trials ---------------------------------------------------------------
def _plan_fields(p: argparse.ArgumentParser) -> None:
    """What write-plan builds a plan from: run-trial rebuilds the plan from the same."""
    p.add_argument("--catalog", required=True, **FILE)
    p.add_argument("--selection", required=True, **FILE)
    p.add_argument("--agent", required=True, type=types.agent)
    p.add_argument("--model", type=types.model, help="provider/model (agents that call one)")
    p.add_argument("--repository-dir", required=True, type=types.nonempty, metavar="DIR")
    p.add_argument("--tasks-dir", required=True, type=types.nonempty, metavar="DIR")
    p.add_argument("--jobs-dir", required=True, type=types.nonempty, metavar="DIR")
    p.add_argument("--environment-type", required=True, type=types.environment_type)
    p.add_argument("--harbor", required=True, type=types.nonempty, metavar="EXECUTABLE")


def _built_plan(args: argparse.Namespace) -> dict:
    from ..plan import build_plan
    from ..records import CATALOG, SELECTION, read_record

    return build_plan(
        read_record(args.catalog, CATALOG),
        read_record(args.selection, SELECTION),
        args.agent,
        args.model,
        args.repository_dir,
        args.tasks_dir,
        args.jobs_dir,
        args.environment_type,
        args.harbor,
    )


def _run_trial_args(p):
    p.add_argument("--plan", required=True, **FILE)
    _plan_fields(p)
    p.add_argument("--task", required=True, type=types.name, metavar="ID")
    p.add_argument("--attempt", required=True, type=types.whole(1), metavar="N")
    p.add_argument(
        "--env",
        action="append",
        default=[],
        type=types.pair(right=types.text),
        metavar="NAME=VALUE",
        help="extra environment for the steps (repeatable)",
    )
    p.add_argument(
        "--pass-env",
        action="append",
        default=[],
        type=types.variable,
        metavar="NAME",
        help="a variable of this job's environment the steps get too (repeatable)",
    )
    p.add_argument(
        "--allow-model-agent",
        required=True,
        type=types.boolean,
        help="true lets an agent other than nop/oracle run (it spends money)",
    )
    p.add_argument(
        "--max-cost-usd",
        required=True,
        type=types.optional(types.number(0, above=True)),
        metavar="USD|",
        help="the run's ceiling (empty: none; an agent that may call a model needs one)",
    )
    p.add_argument("--ledger", required=True, help="the run's live cost ledger", **FILE)
    p.add_argument("--output", required=True, help="the trial receipt", **OUT)


def run_trial(args):
    from ..execute import check_money, check_plan, execute_trial, run_agent, trial_steps
    from ..fsutil import sha256_file
    from ..records import PLAN, read_record
    from ..runs import read_harbor_job

    plan = read_record(args.plan, PLAN)
    check_plan(plan, _built_plan(args), str(args.plan))
    agent, model = run_agent(trial_steps(plan, args.task, args.attempt)["run"]["argv"])
    check_money(agent, model, args.allow_model_agent, args.max_cost_usd)
    receipt = execute_trial(
        plan,
        sha256_file(args.plan),
        args.task,
        args.attempt,
        extra_env=dict(args.env),
        pass_env=args.pass_env,
        ceiling_usd=args.max_cost_usd,
        ledger_path=args.ledger,
        read_job=read_harbor_job,
    )
    write_json(args.output, receipt)


def _checksum_tasks_args(p):
    p.add_argument("--selection", required=True, **FILE)
    p.add_argument("--repository-dir", required=True, type=types.nonempty, metavar="DIR")
    p.add_argument("--tasks-dir", required=True, type=types.nonempty, metavar="DIR")
    _output(p)


def checksum_tasks(args):
    from ..conformance import exported_checksums
    from ..records import SELECTION, read_record

    selection = read_record(args.selection, SELECTION)
    write_json(args.output, exported_checksums(selection, args.repository_dir, args.tasks_dir))


def _write_cost_ledger_args(p):
    p.add_argument("--receipt", required=True, help="a trial receipt (repeatable)", **FILES)
    p.add_argument("--ledger", required=True, help="the run's live cost ledger", **FILE)
    p.add_argument(
        "--max-cost-usd",
        required=True,
        type=types.optional(types.number(0, above=True)),
        metavar="USD|",
    )
    _output(p)


def write_cost_ledger(args):
    from ..ledger import build_ledger

    write_json(args.output, build_ledger(args.ledger, args.receipt, args.max_cost_usd))


JOBS: dict[str, Job] = {
    "build-demo-upstream": Job(
        "the demo release's git repository, at its reproducible commit",
        _build_demo_upstream_args,
        build_demo_upstream,
    ),
    "fetch-file": Job(
        "fetch one release file and check it against its pin", _fetch_file_args, fetch_file
    ),
    "write-release-identity": Job(
        "the release identity every artifact carries",
        _write_release_identity_args,
        write_release_identity,
    ),
    "verify-file": Job(
        "re-hash one fetched file against its pin: its verified-file record",
        _verify_file_args,
        verify_file,
    ),
    "verify-release": Job(
        "the release's receipt from its verified-file records",
        _verify_release_args,
        verify_release,
    ),
    "discover-release": Job(
        "read pins, paths and columns from an upstream checkout",
        _discover_release_args,
        discover_release,
    ),
    "export-catalog": Job(
        "the source-free task catalog from verified MANIFEST and SOURCES",
        _export_catalog_args,
        export_catalog,
    ),
    "select-tasks": Job("one named selection of the catalog", _select_tasks_args, select_tasks),
    "write-plan": Job(
        "a Harbor 0.22.0 run plan for one selection and agent", _write_plan_args, write_plan
    ),
    "import-model": Job(
        "one model's official results against the catalog", _import_model_args, import_model
    ),
    "compare-models": Job(
        "the like-for-like comparison: summary and leaderboard",
        _compare_models_args,
        compare_models_job,
    ),
    "import-run": Job(
        "a local run's Harbor job or verdict folders", _import_run_args, import_run_job
    ),
    "import-executed": Job(
        "the executed trials of one selection as a local run",
        _import_executed_args,
        import_executed,
    ),
    "render-figures": Job(
        "the report's figures, from the models' numbers", _render_figures_args, render_figures_job
    ),
    "render-report": Job(
        "the analysis and the HTML report, embedding the figures",
        _render_report_args,
        render_report_job,
    ),
    "write-artifact-manifest": Job(
        "every artifact with its SHA-256", _write_artifact_manifest_args, write_artifact_manifest
    ),
    "plan-power": Job(
        "the run planner: tasks for a difference, or the difference for tasks",
        _plan_power_args,
        plan_power_job,
    ),
    "run-trial": Job(
        "one planned trial: export, check, harbor run; its receipt", _run_trial_args, run_trial
    ),
    "checksum-tasks": Job(
        "the exporter's output for a selection's tasks, as Harbor's task checksums",
        _checksum_tasks_args,
        checksum_tasks,
    ),
    "write-cost-ledger": Job(
        "the cost ledger of the executed trials, from the live ledger",
        _write_cost_ledger_args,
        write_cost_ledger,
    ),
}
