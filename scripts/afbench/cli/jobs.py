"""`afbench job <rule>`: the Snakemake jobs' door. One command per rule of the workflow, named
after it (rule fetch_file runs `afbench job fetch-file`), with one form each: every input,
output and setting is a typed flag, required where the rule always passes it, and no config is
read at all. A setting reaches a job only if the rule hands it over, so a config change reruns
exactly the jobs whose settings changed."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections import namedtuple
from collections.abc import Callable, Iterator

from . import types
from .signatures import RELEASE_DATES, RELEASE_KEYS, SIGNATURES, add

# A job imports what its own run needs when it runs: its start-up (argument parsing, --help)
# loads no file helpers, readers or libraries (bench/run.py prints each job's start-up beside
# the previous round's).


def _later(module: str, name: str) -> Callable:
    """`module.name`, imported on its first call."""

    def call(*args, **kwargs):
        from importlib import import_module

        return getattr(import_module(module, __package__), name)(*args, **kwargs)

    call.__name__ = name
    return call


write_json = _later("afbench.core.fsutil", "write_json")
compare_models = _later(".actions", "compare_models")
discover_into = _later(".actions", "discover_into")
executed_job_folders = _later(".actions", "executed_job_folders")
import_run = _later(".actions", "import_run")
plan_power = _later(".actions", "plan_power")
render_figures = _later(".actions", "render_figures")  # it takes the parsed values
render_report = _later(".actions", "render_report")  # render-report: it takes the parsed values
verified_entries = _later(".actions", "verified_entries")


def _mapping(pairs: list[tuple[str, str]], kind: str, flag: str) -> dict[str, str]:
    """Every field of the file kind mapped exactly once. The fields are the readers' own (a
    test holds them to the schema's): reading the schema would cost the job a YAML parse."""
    from afbench.core.errors import AfbenchError
    from afbench.imports.official import RESULT_FIELDS
    from afbench.tasks.catalog import MANIFEST_FIELDS, SOURCES_FIELDS

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


def _read(args: argparse.Namespace, name: str):
    """The input `name` of the job read through the kind its verb's signature declares for it
    (a list of records for a repeatable flag; None for an optional one not given): a handler
    does not name the kind again."""
    from afbench import kinds

    from .signatures import name_of

    [arg] = [arg for arg in SIGNATURES[args.job].args if name_of(arg) == name]
    read, value = getattr(kinds, arg.kind).read, getattr(args, name)
    return [read(path) for path in value] if arg.many else None if value is None else read(value)


# --- stage 1: the release ---------------------------------------------------------------------
def build_demo_upstream(args):
    from afbench.core.fsutil import say
    from afbench.release.demo import build_repository

    commit = build_repository(args.release_files, args.output, args.upgrade_files)
    say(f"demo repository: commit {commit}", [args.output])


def _source_settings(args: argparse.Namespace, **transport: object) -> dict:
    from afbench.core.settings import SOURCE_LOCATION

    location = dict.fromkeys(SOURCE_LOCATION.values())
    location[SOURCE_LOCATION[args.source_kind]] = args.source_location
    return {"kind": args.source_kind, **location, **transport}


def fetch_file(args):
    from afbench.core.config import ReleaseFile
    from afbench.core.settings import TRANSPORT_SETTINGS
    from afbench.release.fetch import fetch_file, make_source

    source = _source_settings(args, **{key: getattr(args, key) for key in TRANSPORT_SETTINGS})
    reader = make_source(source, args.repository, args.revision)
    try:
        fetch_file(reader, ReleaseFile("file", "file", args.file, args.sha256), args.output)
    finally:
        reader.close()


def write_release_identity(args):
    from afbench.release.identity import identity

    from ..kinds import RELEASE_IDENTITY

    release = {key: getattr(args, key) for key in RELEASE_KEYS}
    release["dates"] = {key: getattr(args, key) for key in RELEASE_DATES}
    release["images"] = args.image
    write_json(args.output, RELEASE_IDENTITY.record(release=identity(release)))


def verify_file(args):
    from afbench.release.fetch import verify_file

    release = _read(args, "identity")["release"]
    source = _source_settings(args)
    write_json(args.output, verify_file(release, source, args.pin, args.file))


def verify_release(args):
    from afbench.release.fetch import combine_receipt

    write_json(args.output, combine_receipt(_read(args, "entry"), args.skip))


def discover_release(args):
    from afbench.core.errors import AfbenchError

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
    from pathlib import Path

    return discover_into(config, Path(args.checkout), args.discovery, args.fragment)


# --- stage 2: tasks -------------------------------------------------------------------------
def export_catalog(args):
    from afbench.release.identity import license_of, read_entry
    from afbench.tasks.catalog import build_catalog

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


def select_tasks(args):
    from afbench.core.errors import AfbenchError
    from afbench.tasks.catalog import freeze, select_tasks

    catalog = _read(args, "catalog")
    selection = select_tasks(
        catalog, args.name, args.task, args.source, args.limit, types.stratified(args)
    )
    if args.frozen:
        if args.digests is None:
            raise AfbenchError(
                "a frozen selection records its members' digests: give --digests",
                field="--digests",
            )
        earlier = _read(args, "earlier")
        selection = freeze(selection, _read(args, "digests"), earlier)
    elif args.digests or args.earlier:
        raise AfbenchError(
            "--digests and --earlier are for a frozen selection",
            field="--frozen",
            expected="true",
            found="false",
        )
    write_json(args.output, selection)


@contextlib.contextmanager
def _export_folder(tasks_dir: str | None) -> Iterator[str]:
    """The folder the release's exporter writes into: the one asked for, or a private
    temporary one removed afterwards, so that a pipeline job leaves the checkout it reads as
    it was (under a storage plugin, a write there would be lost; anywhere, it is undeclared)."""
    if tasks_dir is not None:
        yield tasks_dir
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="afbench-export-") as folder:
        yield folder


def digest_tasks(args):
    from afbench.tasks.catalog import content_digests

    catalog = _read(args, "catalog")
    with _export_folder(args.tasks_dir) as tasks_dir:
        digests = content_digests(catalog, args.repository_dir, tasks_dir)
    write_json(args.output, digests)


def diff_releases_job(args):
    from afbench.core.fsutil import json_output, write_outputs

    diff, comparable = _diff(args.previous, args.digests, args.catalog)
    write_outputs(
        [json_output(args.diff, diff), json_output(args.comparable, comparable)], about=diff
    )
    return _flag_lines(diff)


def _diff(previous, current, catalog) -> tuple[dict, dict]:
    """Both digests, each whole and true to its own files, the current one the catalog's and
    the previous one of the same repository (kinds.relations), then the diff."""
    from afbench.audit.directory import hold
    from afbench.upgrade.diff import diff_releases

    from ..kinds import CATALOG, TASK_DIGESTS
    from ..kinds import relations as r

    old, new, tasks = TASK_DIGESTS.read(previous), TASK_DIGESTS.read(current), CATALOG.read(catalog)
    hold(
        [
            (r.DIGESTS_OF_ITSELF, old, previous),
            (r.DIGESTS_OF_ITSELF, new, current),
            (r.DIGESTS_OF_CATALOG, new, current, tasks, str(catalog)),
            (r.PREVIOUS_DIGESTS, old, previous, new, str(current)),
        ]
    )
    return diff_releases(old, new, tasks)


def _flag_lines(diff: dict) -> list[str]:
    return [f"task {f['task_id']}: {f['message']}" for f in diff["flagged"]]


def plan_upgrade(args):
    from afbench.upgrade.diff import upgrade_plan

    diff, release = _read(args, "diff"), _read(args, "catalog")["release"]
    write_json(args.output, upgrade_plan(diff, release, args.attempts, args.trial_cap_usd))


def compare_revisions(args) -> dict:
    """The comparisons asked for by `compare_revisions_args`' flags, written to --output."""
    from afbench.core.errors import AfbenchError
    from afbench.upgrade.crossrev import (
        catalog_subset,
        comparable_subset,
        compare_results,
        complete,
        read_side,
    )

    from ..kinds import CATALOG, SELECTION

    if len(args.previous) != len(args.current):
        raise AfbenchError(
            "--previous and --current are paired in order: give as many of each",
            field="--current",
            expected=f"{len(args.previous)} (as many as --previous)",
            found=len(args.current),
        )
    configurations = {}
    for role in ("previous", "current"):
        given = getattr(args, f"{role}_configuration")
        if given and len(given) != len(getattr(args, role)):
            raise AfbenchError(
                f"--{role}-configuration: none, or one per --{role} in order",
                field=f"--{role}-configuration",
                expected=len(getattr(args, role)),
                found=len(given),
            )
        configurations[role] = given or [None] * len(getattr(args, role))
    if args.comparable is not None:
        with complete(args.comparable, SELECTION.name):
            subset = comparable_subset(SELECTION.read(args.comparable), str(args.comparable))
    else:
        with complete(args.catalog, CATALOG.name):
            subset = catalog_subset(CATALOG.read(args.catalog))
    from pathlib import Path

    outcomes = {Path(path).parent: path for path in args.outcomes}
    pairs = [
        (read_side(before, outcomes, cb), read_side(after, outcomes, ca))
        for before, after, cb, ca in zip(
            args.previous,
            args.current,
            configurations["previous"],
            configurations["current"],
            strict=True,
        )
    ]
    result = compare_results(pairs, subset, args.confidence)
    if args.output is not None:
        write_json(args.output, result)
    return result


def compare_revisions_job(args):
    compare_revisions(args)


# --- stage 3: plans -------------------------------------------------------------------------
def write_plan(args):
    write_json(args.output, _built_plan(args))


# --- stage 4: official results --------------------------------------------------------------
def import_model(args):
    from afbench.imports.official import ModelSpec, import_model
    from afbench.release.identity import read_entry

    catalog = _read(args, "catalog")
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


def _published(args: argparse.Namespace) -> dict:
    from afbench.core.errors import AfbenchError

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
        names=args.path_name,
    )


def import_executed(args):
    from afbench.execution.ledger import read_receipts
    from afbench.execution.sequential import rerun_receipts
    from afbench.plans.preregister import read_approved_plan

    outputs = {key: getattr(args, key) for key in ("summary", "outcomes", "attempts")}
    # the reused receipts are another release's trials: each set is read together on its own
    receipts, reused = read_receipts(args.receipt), read_receipts(args.reused_receipt)
    folders = executed_job_folders([*receipts, *reused])
    checked, reruns = None, []
    if args.analysis_plan is not None:
        plan = read_approved_plan(args.analysis_plan, args.plan_sha256)
        checked, reruns = (plan, receipts), rerun_receipts(plan, receipts)
    import_run(
        args.selection,
        args.name,
        "harbor",
        folders,
        None,
        outputs,
        args.task_checksums,
        analysis_plan=checked,
        reused=reused,
        reruns=reruns,
    )


# --- the run planner (opt-in) --------------------------------------------------------------
def plan_power_job(args):
    plan_power(args, _read(args, "imports"))


# --- the sealed analysis plan (opt-in) -----------------------------------------------------------
def seal_analysis_plan(args):
    from afbench.plans.preregister import (
        ANALYSIS_KEYS,
        facts_from_settings,
        seal_into,
        selection_criteria,
    )
    from afbench.tasks.catalog import read_selection

    selection, _ = read_selection(args.selection, args.catalog)
    facts = facts_from_settings(
        release=selection["release"],
        selection=selection["name"],
        criteria=selection_criteria(selection["criteria"]),
        sides={
            side: {"agent": getattr(args, f"{side}_agent"), "model": getattr(args, f"{side}_model")}
            for side in ("a", "b")
        },
        environment_type=args.environment_type,
        attempts=args.attempts,
        analysis={key: getattr(args, key) for key in ANALYSIS_KEYS},
        ceiling_usd=args.max_cost_usd,
        trial_cap_usd=args.trial_cap_usd,
    )
    seal_into(facts, selection, args.output)


def seal_run_plan(args):
    from afbench.core.errors import AfbenchError
    from afbench.core.fsutil import json_output, write_outputs
    from afbench.plans.preregister import run_plan
    from afbench.tasks.catalog import read_selection

    if args.max_cost_usd is None:
        raise AfbenchError(
            "a paid run is sealed with its ceiling", field="--max-cost-usd", expected="USD"
        )
    selection, _ = read_selection(args.selection, args.catalog)
    plan = run_plan(
        release=selection["release"],
        selection=selection,
        agent=args.agent,
        model=args.model,
        environment_type=args.environment_type,
        attempts=args.attempts,
        ceiling_usd=args.max_cost_usd,
        trial_cap_usd=args.trial_cap_usd,
    )
    write_outputs([json_output(args.output, plan)], about=plan)


def decide_step(args):
    from afbench.execution.approval import comparison_sides, next_trials_afford
    from afbench.execution.ledger import read_receipts
    from afbench.execution.sequential import run_line, run_step
    from afbench.plans.preregister import read_approved_plan

    plan = read_approved_plan(args.analysis_plan, args.plan_sha256)
    sides = comparison_sides(plan, args.harbor_plan)
    receipts = read_receipts(args.receipt)
    afford = next_trials_afford(plan, sides, args.ledger, args.max_cost_usd, args.trial_cap_usd)
    run = run_step(plan, receipts, step=args.step, afford=afford)
    write_json(args.output, run)
    print(run_line(run), file=sys.stderr)


# --- stage 6: the report and the artifact manifest ------------------------------------------
def write_artifact_manifest(args):
    from afbench.audit.manifest import build_manifest

    manifest = build_manifest(args.root, args.files, args.config_digest, args.revision)
    write_json(args.output, manifest)


def audit_directory(args):
    from .actions import audit_into

    return audit_into(args.manifest.parent, args.output)


# --- the results store: this revision's tables in the dataset of every revision -----------
def store_results(args):
    from afbench.execution.ledger import read_entries
    from afbench.exports.store import store_revision

    # the settled lines only: a trial of another run may be appending to the ledger right now
    entries = read_entries(args.ledger, settled_only=True) if args.ledger else []
    store_revision(args.manifest.parent, args.outputs, args.revision, entries)


# --- beyond the leaderboard: why tasks failed, which tasks measure anything -----------------
def analyse_failures(args):
    from afbench.task_analysis.anatomy import official_anatomy

    write_json(args.output, official_anatomy(_read(args, "imports"), args.near_miss_share))


def analyse_run_failures(args):
    from afbench.task_analysis.anatomy import local_anatomy, read_outcome_rows

    summary, rows = _read(args, "summary"), read_outcome_rows(args.outcomes)
    write_json(args.output, local_anatomy(summary, rows, str(args.outcomes)))


def pass_at_k(args):
    from afbench.runs.passk import read_attempt_rows, run_pass_at_k

    summary, rows = _read(args, "summary"), read_attempt_rows(args.attempts)
    catalog = _read(args, "catalog")
    write_json(
        args.output, run_pass_at_k(summary, rows, str(args.attempts), catalog, args.confidence)
    )


def analyse_tasks(args):
    from afbench.core.errors import AfbenchError
    from afbench.core.fsutil import json_output, sha256_bytes, write_outputs
    from afbench.task_analysis.items import discriminative_selection, task_table

    if (args.selection is None) != (args.selection_name is None):
        raise AfbenchError(
            "a derived selection needs both its name and its file",
            field="--selection-name" if args.selection_name is None else "--selection",
        )
    catalog, imports = _read(args, "catalog"), _read(args, "imports")
    table = task_table(
        imports, catalog, args.shuffles, args.seed, args.alpha, args.min_discrimination
    )
    outputs = [json_output(args.output, table)]
    if args.selection is not None:
        digest = sha256_bytes(outputs[0][1])
        derived = discriminative_selection(table, catalog, args.selection_name, digest)
        outputs.append(json_output(args.selection, derived))
    write_outputs(outputs, about=table)


# --- stage 7 (opt-in): trials ---------------------------------------------------------------
def _built_plan(args: argparse.Namespace) -> dict:
    from afbench.plans.plan import build_plan
    from afbench.tasks.catalog import read_selection

    selection, catalog = read_selection(args.selection, args.catalog)
    return build_plan(
        catalog,
        selection,
        args.agent,
        args.model,
        args.repository_dir,
        args.tasks_dir,
        args.jobs_dir,
        args.environment_type,
        args.harbor,
    )


def _write_status_page(args: argparse.Namespace) -> None:
    """The status page after this trial: what it shows is not the trial's result, so a page
    that cannot be written is said on standard error and the trial's receipt stands."""
    from afbench.core.errors import AfbenchError, tell
    from afbench.execution.watch import rewrite_status_page, snapshot

    def look() -> dict:
        return snapshot(
            args.ledger,
            args.status_receipts,
            args.status_plan,
            args.status_steps,
            args.max_cost_usd,
        )

    try:
        rewrite_status_page(args.status_page, look)
    except AfbenchError as error:
        tell(f"afbench: warning: the status page is not rewritten: {error}")


def run_trial(args):
    from afbench.core.fsutil import sha256_file
    from afbench.execution.ledger import read_receipts
    from afbench.execution.trial import (
        check_money,
        check_plan,
        execute_trial,
        run_agent,
        trial_steps,
    )
    from afbench.runs.harbor_jobs import read_harbor_job

    from ..kinds import PLAN, TRIAL_RECEIPT

    plan = PLAN.read(args.plan)
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
        cap_usd=args.trial_cap_usd,
        rerun_interrupted=args.rerun_interrupted,
        meter_interval_s=args.meter_interval_s,
        earlier=read_receipts(args.earlier_receipt),
    )
    fields = {**TRIAL_RECEIPT.body(receipt), "round": args.partial_round}
    write_json(args.output, TRIAL_RECEIPT.record(**fields))
    if args.status_page is not None:
        _write_status_page(args)


# a second copy of a trial waits on the trial's own lock for as long as the first runs (hours),
# then reuses its receipt: never refused after the bounded wait of the outputs' lock
run_trial.takes_its_own_turn = True


def checksum_tasks(args):
    from afbench.runs.conformance import exported_checksums

    selection = _read(args, "selection")
    with _export_folder(args.tasks_dir) as tasks_dir:
        checksums = exported_checksums(
            selection, args.repository_dir, tasks_dir, args.repository_name
        )
    write_json(args.output, checksums)


def write_cost_ledger(args):
    from afbench.execution.ledger import build_ledger

    write_json(args.output, build_ledger(args.ledger, args.receipt, args.max_cost_usd))


# summary: str; arguments(parser); run(args) -> warning lines or None. A namedtuple from
# collections, not typing.NamedTuple: importing typing costs every job's start-up ~10 ms CPU.
Job = namedtuple("Job", "summary arguments run")


def _job(verb: str, signature) -> Job:
    """The verb's parser from its signature (cli.signatures) and its handler: the function of
    this module named after it (`<name>_job` where `<name>` is the action both doors call)."""
    name = {"decide-comparison": "decide-step"}.get(verb, verb).replace("-", "_")
    run = globals().get(f"{name}_job") or globals()[name]
    return Job(signature.summary, lambda parser: add(parser, signature.args), run)


JOBS: dict[str, Job] = {verb: _job(verb, signature) for verb, signature in SIGNATURES.items()}
