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

from ..settings import converter as setting
from . import types

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


write_json = _later("..fsutil", "write_json")
compare_models = _later(".actions", "compare_models")
discover_into = _later(".actions", "discover_into")
executed_job_folders = _later(".actions", "executed_job_folders")
import_run = _later(".actions", "import_run")
plan_power = _later(".actions", "plan_power")
render_figures = _later(".actions", "render_figures")
render_report = _later(".actions", "render_report")
verified_entries = _later(".actions", "verified_entries")

# every path flag says whether the job reads it or writes it (cli.types; checked by the CLI)
FILE = {"type": types.input_path, "metavar": "FILE"}
FILES = {"type": types.input_path, "metavar": "FILE", "action": "append", "default": []}
OUT = {"type": types.output_path, "metavar": "FILE"}
OUTS = {"type": types.output_path, "metavar": "FILE", "action": "append", "default": []}
CONDITIONS = ("source-present", "source-free")


# summary: str; arguments(parser); run(args) -> warning lines or None. A namedtuple from
# collections, not typing.NamedTuple: importing typing costs every job's start-up ~10 ms CPU.
Job = namedtuple("Job", "summary arguments run")


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
    p.add_argument("--upgrade-files", type=types.input_path, metavar="DIR")
    p.add_argument("--output", required=True, type=types.output_dir(), metavar="DIR")


def build_demo_upstream(args):
    from ..demo import build_repository
    from ..fsutil import say

    commit = build_repository(args.release_files, args.output, args.upgrade_files)
    say(f"demo repository: commit {commit}", [args.output])


def _source(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source-kind", required=True, type=setting("source/kind"))
    p.add_argument(
        "--source-location",
        required=True,
        type=types.nonempty,
        metavar="URL|DIR",
        help="https: base URL; git: checkout; dir: mirror folder",
    )


def _source_settings(args: argparse.Namespace, **transport: object) -> dict:
    from ..settings import SOURCE_LOCATION

    location = dict.fromkeys(SOURCE_LOCATION.values())
    location[SOURCE_LOCATION[args.source_kind]] = args.source_location
    return {"kind": args.source_kind, **location, **transport}


def _fetch_file_args(p):
    _source(p)
    p.add_argument("--repository", required=True, type=setting("release/repository"))
    p.add_argument("--revision", required=True, type=setting("release/revision"))
    p.add_argument("--file", required=True, type=types.relpath, help="release-relative path")
    p.add_argument("--sha256", required=True, type=types.sha256, help="its pin")
    from ..settings import TRANSPORT_SETTINGS

    for key in TRANSPORT_SETTINGS:
        p.add_argument(f"--{key.replace('_', '-')}", required=True, type=setting(f"source/{key}"))
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
    for key in ("name", "repository", "revision", "synthetic", "lean", "mathlib", "harbor"):
        p.add_argument(f"--{key}", required=True, type=setting(f"release/{key}"))
    p.add_argument(
        "--nominal-budget-usd", required=True, type=setting("release/nominal_budget_usd")
    )
    p.add_argument("--license", required=True, type=setting("release/license"))
    for date in ("release_page", "manuscript_cover", "software_citation", "first_public_release"):
        flag = f"--{date.replace('_', '-')}"
        p.add_argument(flag, required=True, type=setting(f"release/dates/{date}"), metavar="DATE|")
    p.add_argument(
        "--image", action="append", default=[], type=types.image, metavar="ROLE=REFERENCE@DIGEST"
    )
    _output(p)


def write_release_identity(args):
    from ..kinds import RELEASE_IDENTITY
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
    write_json(args.output, RELEASE_IDENTITY.record(release=identity(release)))


def _verify_file_args(p):
    p.add_argument("--identity", required=True, help="the release identity artifact", **FILE)
    p.add_argument("--file", required=True, help="the fetched file", **FILE)
    p.add_argument("--pin", required=True, type=types.release_file, metavar="KEY=PATH@SHA256")
    _source(p)
    _output(p)


def verify_file(args):
    from ..fetch import verify_file
    from ..kinds import RELEASE_IDENTITY

    release = RELEASE_IDENTITY.read(args.identity)["release"]
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
    from ..kinds import VERIFIED_FILE

    records = [VERIFIED_FILE.read(path) for path in args.entry]
    write_json(args.output, combine_receipt(records, args.skip))


def _discover_release_args(p):
    p.add_argument(
        "--checkout",
        required=True,
        type=types.optional_input_path,
        metavar="DIR",
        help="empty: none configured (an error)",
    )
    p.add_argument("--revision", required=True, type=setting("release/revision"))
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
    from pathlib import Path

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
    task, source = setting("selections/*/tasks/*"), setting("selections/*/sources/*")
    p.add_argument("--task", action="append", default=[], type=task, metavar="ID")
    p.add_argument("--source", action="append", default=[], type=source, metavar="SOURCE_ID")
    p.add_argument("--limit", type=setting("selections/*/limit"), metavar="N")
    types.stratified_flags(p)
    p.add_argument(
        "--frozen",
        type=setting("selections/*/frozen"),
        default=False,
        help="record each member's digests (needs --digests)",
    )
    p.add_argument("--digests", help="the task digests (digest-tasks), for --frozen", **FILE)
    p.add_argument(
        "--earlier",
        help="this selection frozen on the previous release: refused if a member changed",
        **FILE,
    )
    _output(p)


def select_tasks(args):
    from ..catalog import freeze, select_tasks
    from ..errors import AfbenchError
    from ..kinds import CATALOG, SELECTION, TASK_DIGESTS

    catalog = CATALOG.read(args.catalog)
    selection = select_tasks(
        catalog, args.name, args.task, args.source, args.limit, types.stratified(args)
    )
    if args.frozen:
        if args.digests is None:
            raise AfbenchError(
                "a frozen selection records its members' digests: give --digests",
                field="--digests",
            )
        earlier = SELECTION.read(args.earlier) if args.earlier else None
        selection = freeze(selection, TASK_DIGESTS.read(args.digests), earlier)
    elif args.digests or args.earlier:
        raise AfbenchError(
            "--digests and --earlier are for a frozen selection",
            field="--frozen",
            expected="true",
            found="false",
        )
    write_json(args.output, selection)


def _digest_tasks_args(p):
    p.add_argument("--catalog", required=True, **FILE)
    p.add_argument(
        "--repository-dir",
        required=True,
        type=types.optional_text,
        metavar="DIR|",
        help="a checkout at the pinned revision (empty: catalog digests only)",
    )
    _export_folder_flag(p)
    _output(p)


def _export_folder_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tasks-dir",
        type=setting("plans/tasks_dir"),
        metavar="DIR",
        help="where the exporter writes the tasks (default: a private temporary folder, "
        "removed afterwards: the job writes nothing but its output)",
    )


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
    from ..catalog import content_digests
    from ..kinds import CATALOG

    catalog = CATALOG.read(args.catalog)
    with _export_folder(args.tasks_dir) as tasks_dir:
        digests = content_digests(catalog, args.repository_dir, tasks_dir)
    write_json(args.output, digests)


def _diff_releases_args(p):
    p.add_argument("--previous", required=True, help="the previous release's digests", **FILE)
    p.add_argument("--digests", required=True, help="this release's digests", **FILE)
    p.add_argument("--catalog", required=True, help="this release's catalog", **FILE)
    p.add_argument("--diff", required=True, **OUT)
    p.add_argument("--comparable", required=True, help="the unchanged tasks' selection", **OUT)


def diff_releases_job(args):
    from ..fsutil import json_output, write_outputs

    diff, comparable = _diff(args.previous, args.digests, args.catalog)
    write_outputs(
        [json_output(args.diff, diff), json_output(args.comparable, comparable)], about=diff
    )
    return _flag_lines(diff)


def _diff(previous, current, catalog) -> tuple[dict, dict]:
    """Both digests, each whole and true to its own files, the current one the catalog's and
    the previous one of the same repository (kinds.relations), then the diff."""
    from ..audit import hold
    from ..kinds import CATALOG, TASK_DIGESTS
    from ..kinds import relations as r
    from ..upgrade import diff_releases

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


def _compare_revisions_args(p):
    compare_revisions_args(p)
    _output(p)


def _trial_cap_usd(p, *, required: bool) -> None:
    """execute.trial_cap_usd, as every job that reserves, plans or runs trials takes it."""
    p.add_argument(
        "--trial-cap-usd",
        required=required,
        default=None,
        type=setting("execute/trial_cap_usd"),
        metavar="USD|",
        help="execute.trial_cap_usd: what a trial may spend (empty: the release's nominal "
        "budget per task)",
    )


def _plan_upgrade_args(p):
    p.add_argument("--diff", required=True, **FILE)
    p.add_argument("--catalog", required=True, help="this release's catalog", **FILE)
    p.add_argument("--attempts", required=True, type=setting("execute/attempts"), metavar="N")
    _trial_cap_usd(p, required=False)
    _output(p)


def plan_upgrade(args):
    from ..kinds import CATALOG, UPGRADE_DIFF
    from ..upgrade import upgrade_plan

    diff = UPGRADE_DIFF.read(args.diff)
    release = CATALOG.read(args.catalog)["release"]
    write_json(args.output, upgrade_plan(diff, release, args.attempts, args.trial_cap_usd))


def compare_revisions_args(p, confidence_default: float | None = None) -> None:
    """Both doors' flags: results paired in order, on the diff's comparable subset (two
    revisions) or one revision's catalog."""
    basis = p.add_mutually_exclusive_group(required=True)
    basis.add_argument(
        "--comparable",
        help="the diff's comparable subset (upgrade/comparable.json): results of two revisions",
        **FILE,
    )
    basis.add_argument("--catalog", help="the catalog: two results of its revision", **FILE)
    for flag, which in (("--previous", "the previous"), ("--current", "the current")):
        p.add_argument(
            flag,
            required=True,
            help=f"a result of {which} revision: a model import or a local run's summary.json "
            "(repeatable; --previous and --current are paired in order)",
            **FILES,
        )
        p.add_argument(
            f"{flag}-configuration",
            action="append",
            default=[],
            metavar="LABEL",
            help=f"the configuration of each {flag} run (none, or one per {flag} in order; "
            "empty for a model import or a run's only configuration)",
        )
    p.add_argument(
        "--outcomes", help="a run's outcomes.csv, in its summary's folder (repeatable)", **FILES
    )
    confidence = setting("report/confidence")
    if confidence_default is None:
        p.add_argument("--confidence", required=True, type=confidence)
    else:
        p.add_argument("--confidence", default=confidence_default, type=confidence)


def compare_revisions(args) -> dict:
    """The comparisons asked for by `compare_revisions_args`' flags, written to --output."""
    from ..crossrev import (
        catalog_subset,
        comparable_subset,
        compare_results,
        complete,
        read_side,
    )
    from ..errors import AfbenchError
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
    p.add_argument("--display-name", required=True, type=setting("models/*/display_name"))
    p.add_argument("--pinned-condition", required=True, type=setting("models/*/source_condition"))
    p.add_argument("--source-condition", required=True, type=setting("import/source_condition"))
    _columns(p, "--column", "results")
    _output(p)


def import_model(args):
    from ..kinds import CATALOG
    from ..official import ModelSpec, import_model
    from ..release import read_entry

    catalog = CATALOG.read(args.catalog)
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
    p.add_argument("--strict-budget", required=True, type=setting("import/strict_budget"))
    _published_args(p)
    p.add_argument("--summary", required=True, **OUT)
    p.add_argument("--leaderboard", required=True, **OUT)


def _published_args(p: argparse.ArgumentParser) -> None:
    """What the authors published, to check the imports against (empty: nothing published)."""
    published = "release/published"
    p.add_argument("--published-source", required=True, type=setting(f"{published}/source"))
    p.add_argument("--published-task-rows", required=True, type=setting(f"{published}/task_rows"))
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
    p.add_argument("--strict-published", required=True, type=setting("import/strict_published"))


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
    p.add_argument("--kind", required=True, type=setting("runs/*/kind"))
    p.add_argument(
        "--path",
        required=True,
        action="append",
        type=types.input_tree,
        metavar="DIR",
        help="a Harbor job folder or a verdict folder (repeatable)",
    )
    p.add_argument(
        "--path-name",
        action="append",
        type=types.nonempty,
        metavar="NAME",
        help="each --path as the config names it, in the same order: what the tables record "
        "(a storage plugin reads its own local copy)",
    )
    p.add_argument("--budget-usd", required=True, type=setting("runs/*/budget_usd"))
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
        names=args.path_name,
    )


def _import_executed_args(p):
    p.add_argument("--selection", required=True, **FILE)
    p.add_argument("--name", required=True, type=types.name)
    p.add_argument("--receipt", required=True, help="a trial receipt (repeatable)", **FILES)
    p.add_argument(
        "--reused-receipt",
        help="a previous release's receipt of a task the upgrade plan reuses (repeatable)",
        **FILES,
    )
    p.add_argument(
        "--analysis-plan",
        type=types.optional_input_path,
        default=None,
        metavar="FILE|",
        help="the sealed analysis plan the run is checked against (empty: none)",
    )
    p.add_argument(
        "--plan-sha256",
        type=types.optional(types.sha256),
        default=None,
        metavar="SHA|",
        help="the seal the run was approved against",
    )
    _task_checksums(p)
    _run_outputs(p)


def import_executed(args):
    from ..execute import read_receipts
    from ..preregister import read_approved_plan
    from ..sequential import rerun_receipts

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
def _plan_power_args(p):
    for key in ("difference", "tasks", "alpha", "power", "configurations", "baseline_rate"):
        p.add_argument(f"--{key.replace('_', '-')}", required=True, type=setting(f"power/{key}"))
    p.add_argument(
        "--import", dest="imports", help="two models' imports (or none: a baseline rate)", **FILES
    )
    for key in ("sequential_tasks", "batch_tasks", "usd_per_task"):
        p.add_argument(f"--{key.replace('_', '-')}", required=True, type=setting(f"power/{key}"))
    _output(p)


def plan_power_job(args):
    from ..kinds import MODEL_IMPORT

    settings = {
        key: getattr(args, key)
        for key in ("difference", "tasks", "alpha", "power", "configurations", "baseline_rate")
    }
    imports = [MODEL_IMPORT.read(path) for path in args.imports]
    sequential = (
        None
        if args.sequential_tasks is None
        else {
            "tasks": args.sequential_tasks,
            "batch_tasks": args.batch_tasks,
            "usd_per_task": args.usd_per_task,
        }
    )
    plan_power(settings, imports, args.output, sequential)


# --- the sealed analysis plan (opt-in) -----------------------------------------------------------
def _seal_analysis_plan_args(p):
    p.add_argument("--selection", required=True, **FILE)
    p.add_argument("--catalog", required=True, help="the selection's catalog", **FILE)
    for side in ("a", "b"):
        side_setting = f"preregister/comparison/{side}"
        p.add_argument(f"--{side}-agent", required=True, type=setting(f"{side_setting}/agent"))
        p.add_argument(f"--{side}-model", required=True, type=setting(f"{side_setting}/model"))
    p.add_argument("--environment-type", required=True, type=setting("plans/environment_type"))
    p.add_argument("--attempts", required=True, type=setting("execute/attempts"))
    for key in (
        "alpha",
        "stopping",
        "difference",
        "discordance",
        "baseline_rate",
        "power",
        "batch_tasks",
        "horizon",
        "order_seed",
        "futility_power",
    ):
        p.add_argument(
            f"--{key.replace('_', '-')}", required=True, type=setting(f"preregister/{key}")
        )
    p.add_argument("--max-cost-usd", required=True, type=setting("execute/max_cost_usd"))
    _trial_cap_usd(p, required=True)
    _output(p)


def seal_analysis_plan(args):
    from ..catalog import read_selection
    from ..preregister import ANALYSIS_KEYS, facts_from_settings, seal_into, selection_criteria

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


def _seal_run_plan_args(p):
    p.add_argument("--selection", required=True, **FILE)
    p.add_argument("--catalog", required=True, help="the selection's catalog", **FILE)
    p.add_argument("--agent", required=True, type=setting("plans/items/*/agent"))
    p.add_argument("--model", required=True, type=setting("plans/items/*/model"))
    p.add_argument("--environment-type", required=True, type=setting("plans/environment_type"))
    p.add_argument("--attempts", required=True, type=setting("execute/attempts"))
    p.add_argument("--max-cost-usd", required=True, type=setting("execute/max_cost_usd"))
    _trial_cap_usd(p, required=True)
    _output(p)


def seal_run_plan(args):
    from ..catalog import read_selection
    from ..errors import AfbenchError
    from ..fsutil import json_output, write_outputs
    from ..preregister import run_plan

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


def _decide_step_args(p):
    p.add_argument(
        "--analysis-plan",
        required=True,
        help="the sealed analysis plan (read, never rebuilt: the workflow does not declare it)",
        **FILE,
    )
    p.add_argument(
        "--plan-sha256",
        required=True,
        type=types.sha256,
        help="the seal the run was approved against (a plan sealed since is refused)",
    )
    p.add_argument(
        "--harbor-plan", required=True, help="each configuration's Harbor run plan", **FILES
    )
    p.add_argument("--receipt", help="a trial receipt of the comparison (repeatable)", **FILES)
    p.add_argument("--step", required=True, type=types.whole(0), metavar="N")
    p.add_argument("--ledger", required=True, help="the run's live cost ledger", **FILE)
    p.add_argument(
        "--max-cost-usd", required=True, type=setting("execute/max_cost_usd"), metavar="USD|"
    )
    _trial_cap_usd(p, required=True)
    _output(p)


def decide_step(args):
    from ..approval import comparison_sides, next_trials_afford
    from ..execute import read_receipts
    from ..preregister import read_approved_plan
    from ..sequential import run_line, run_step

    plan = read_approved_plan(args.analysis_plan, args.plan_sha256)
    sides = comparison_sides(plan, args.harbor_plan)
    receipts = read_receipts(args.receipt)
    afford = next_trials_afford(plan, sides, args.ledger, args.max_cost_usd, args.trial_cap_usd)
    run = run_step(plan, receipts, step=args.step, afford=afford)
    write_json(args.output, run)
    print(run_line(run), file=sys.stderr)


# --- stage 6: the report and the artifact manifest ------------------------------------------
def _report_input_args(p):
    p.add_argument("--summary", required=True, **FILE)
    p.add_argument("--import", dest="imports", required=True, **FILES)
    p.add_argument("--catalog", required=True, **FILE)
    p.add_argument("--receipt", required=True, **FILE)


def _render_figures_args(p):
    _report_input_args(p)
    p.add_argument("--confidence", required=True, type=setting("report/confidence"))
    p.add_argument("--figure", required=True, help="a figure to draw; its stem names it", **OUTS)
    p.add_argument("--anatomy", help="the official failure anatomy", **FILE)


def render_figures_job(args):
    render_figures(
        args.summary,
        args.imports,
        args.catalog,
        args.receipt,
        args.confidence,
        {path.stem: path for path in args.figure},
        args.anatomy,
    )


def _render_report_args(p):
    _report_input_args(p)
    p.add_argument("--run", help="a local run's summary.json (repeatable)", **FILES)
    p.add_argument("--confidence", required=True, type=setting("report/confidence"))
    p.add_argument("--settings-digest", required=True, type=types.sha256)
    p.add_argument(
        "--figure", required=True, help="a drawn figure to embed; its stem names it", **FILES
    )
    p.add_argument("--html", required=True, **OUT)
    p.add_argument("--analysis", required=True, **OUT)
    p.add_argument("--ledger", help="the executed trials' cost ledger", **FILE)
    p.add_argument(
        "--sequential-run", help="the sealed comparison's decision record (execute)", **FILE
    )
    p.add_argument("--anatomy", help="the official failure anatomy", **FILE)
    p.add_argument("--run-anatomy", help="a local run's failure anatomy (repeatable)", **FILES)
    p.add_argument("--task-table", help="the task table (at most once)", **FILES)
    p.add_argument("--comparisons", help="the comparisons across revisions (at most once)", **FILES)
    p.add_argument(
        "--history",
        type=setting("report/history"),
        default=False,
        help="show each configuration's history across the revisions of the results store",
    )
    p.add_argument(
        "--history-partition",
        help="another revision's partition of official_results or run_outcomes (repeatable)",
        **FILES,
    )
    p.add_argument(
        "--history-comparable",
        help="a comparable subset between this revision and another (repeatable)",
        **FILES,
    )
    p.add_argument(
        "--history-outcomes", help="a run's outcomes.csv, beside its --run (repeatable)", **FILES
    )


def render_report_job(args):
    from ..errors import AfbenchError

    if len(args.task_table) > 1:
        raise AfbenchError("one task table at most", field="--task-table")
    if len(args.comparisons) > 1:
        raise AfbenchError("one file of comparisons at most", field="--comparisons")
    given = [args.history_partition, args.history_comparable, args.history_outcomes]
    if not args.history and any(given):
        raise AfbenchError(
            "the history's inputs are given but the history is not asked for",
            field="--history",
            expected="true, with --history-partition, --history-comparable or --history-outcomes",
            found="false",
        )
    history = None
    if args.history:
        history = {
            "partitions": args.history_partition,
            "comparable": args.history_comparable,
            "outcomes": args.history_outcomes,
        }
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
        args.anatomy,
        args.run_anatomy,
        args.task_table[0] if args.task_table else None,
        args.comparisons[0] if args.comparisons else None,
        sequential_path=args.sequential_run,
        history=history,
    )


def _write_artifact_manifest_args(p):
    p.add_argument("files", nargs="+", type=types.input_path, metavar="FILE")
    p.add_argument("--root", required=True, type=types.input_path, metavar="DIR")
    p.add_argument("--revision", required=True, type=setting("release/revision"))
    p.add_argument("--config-digest", required=True, type=types.sha256)
    _output(p)


def write_artifact_manifest(args):
    from ..artifacts import build_manifest

    manifest = build_manifest(args.root, args.files, args.config_digest, args.revision)
    write_json(args.output, manifest)


def _audit_directory_args(p):
    p.add_argument(
        "--manifest",
        required=True,
        help="the directory's artifact manifest: the directory audited is its folder",
        **FILE,
    )
    _output(p)


def audit_directory(args):
    from .actions import audit_into

    return audit_into(args.manifest.parent, args.output)


# --- the results store: this revision's tables in the dataset of every revision -----------
def _store_results_args(p):
    p.add_argument(
        "--manifest",
        required=True,
        help="the revision's artifact manifest: the folder read is its folder (artifacts found "
        "by their kind)",
        **FILE,
    )
    p.add_argument("--revision", required=True, type=setting("release/revision"))
    p.add_argument(
        "--ledger",
        help="the live cost ledger of `snakemake execute` (none yet: no entries); its entries of "
        "the folder's trials are stored",
        **FILE,
    )
    p.add_argument(
        "--output",
        dest="outputs",
        required=True,
        help="each table's partition, <store>/<table>/revision=<revision>/part-0.parquet",
        **OUTS,
    )


def store_results(args):
    from ..ledger import read_entries
    from ..store import store_revision

    # the settled lines only: a trial of another run may be appending to the ledger right now
    entries = read_entries(args.ledger, settled_only=True) if args.ledger else []
    store_revision(args.manifest.parent, args.outputs, args.revision, entries)


# --- beyond the leaderboard: why tasks failed, which tasks measure anything -----------------
def _analyse_failures_args(p):
    p.add_argument("--import", dest="imports", required=True, **FILES)
    p.add_argument(
        "--near-miss-share",
        required=True,
        type=setting("anatomy/near_miss_share"),
        help="a failure with at least this share of its obligations accepted is a near miss",
    )
    _output(p)


def analyse_failures(args):
    from ..anatomy import official_anatomy
    from ..kinds import MODEL_IMPORT

    imports = [MODEL_IMPORT.read(path) for path in args.imports]
    write_json(args.output, official_anatomy(imports, args.near_miss_share))


def _analyse_run_failures_args(p):
    p.add_argument("--summary", required=True, help="the run's summary.json", **FILE)
    p.add_argument("--outcomes", required=True, help="the run's outcomes.csv", **FILE)
    _output(p)


def analyse_run_failures(args):
    from ..anatomy import local_anatomy, read_outcome_rows
    from ..kinds import RUN_SUMMARY

    summary = RUN_SUMMARY.read(args.summary)
    rows = read_outcome_rows(args.outcomes)
    write_json(args.output, local_anatomy(summary, rows, str(args.outcomes)))


def _analyse_tasks_args(p):
    p.add_argument("--catalog", required=True, **FILE)
    p.add_argument("--import", dest="imports", required=True, **FILES)
    for key in ("shuffles", "seed", "alpha", "min_discrimination"):
        flag = f"--{key.replace('_', '-')}"
        p.add_argument(flag, required=True, type=setting(f"task_table/{key}"))
    p.add_argument("--output", required=True, help="the task table", **OUT)
    p.add_argument("--selection-name", type=types.name, help="the derived selection's name")
    p.add_argument("--selection", help="the derived discriminative subset", **OUT)


def analyse_tasks(args):
    from ..errors import AfbenchError
    from ..fsutil import json_output, sha256_bytes, write_outputs
    from ..items import discriminative_selection, task_table
    from ..kinds import CATALOG, MODEL_IMPORT

    if (args.selection is None) != (args.selection_name is None):
        raise AfbenchError(
            "a derived selection needs both its name and its file",
            field="--selection-name" if args.selection_name is None else "--selection",
        )
    catalog = CATALOG.read(args.catalog)
    imports = [MODEL_IMPORT.read(path) for path in args.imports]
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
def _plan_fields(p: argparse.ArgumentParser) -> None:
    """What write-plan builds a plan from: run-trial rebuilds the plan from the same."""
    p.add_argument("--catalog", required=True, **FILE)
    p.add_argument("--selection", required=True, **FILE)
    p.add_argument("--agent", required=True, type=setting("plans/items/*/agent"))
    p.add_argument(
        "--model", type=setting("plans/items/*/model"), help="provider/model (agents that call one)"
    )
    p.add_argument("--repository-dir", required=True, type=types.nonempty, metavar="DIR")
    p.add_argument("--tasks-dir", required=True, type=setting("plans/tasks_dir"), metavar="DIR")
    p.add_argument("--jobs-dir", required=True, type=types.nonempty, metavar="DIR")
    p.add_argument("--environment-type", required=True, type=setting("plans/environment_type"))
    p.add_argument("--harbor", required=True, type=setting("plans/harbor"), metavar="EXECUTABLE")


def _built_plan(args: argparse.Namespace) -> dict:
    from ..catalog import read_selection
    from ..plan import build_plan

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
        type=setting("execute/allow_model_agents"),
        help="true lets an agent other than nop/oracle run (it spends money)",
    )
    p.add_argument(
        "--max-cost-usd",
        required=True,
        type=setting("execute/max_cost_usd"),
        metavar="USD|",
        help="the run's ceiling (empty: none; an agent that may call a model needs one)",
    )
    _trial_cap_usd(p, required=False)
    p.add_argument(
        "--rerun-interrupted",
        default=False,
        type=setting("execute/rerun_interrupted"),
        help="true runs again a paid trial whose earlier copy was interrupted",
    )
    p.add_argument(
        "--meter-interval-s",
        default=5.0,
        type=setting("execute/meter_interval_s"),
        metavar="S",
        help="how often a running trial's visible cost is read",
    )
    p.add_argument(
        "--earlier-receipt",
        help="a receipt of the round before in a partial run (repeatable)",
        **FILES,
    )
    p.add_argument(
        "--partial-round",
        default=None,
        type=types.optional(types.whole(1)),
        metavar="N|",
        help="the trial's round in a partial run (empty: not a partial run)",
    )
    p.add_argument("--ledger", required=True, help="the run's live cost ledger", **FILE)
    p.add_argument("--output", required=True, help="the trial receipt", **OUT)
    p.add_argument(
        "--status-page",
        type=types.optional(types.output_path),
        metavar="FILE|",
        help="the run's status page, rewritten once the receipt is written (afbench.watch)",
    )
    p.add_argument(
        "--status-receipts",
        type=types.optional_input_path,
        metavar="DIR|",
        help="the folder of the run's trial receipts, for the status page",
    )
    p.add_argument("--status-plan", help="a sealed run plan, for the status page", **FILES)
    p.add_argument(
        "--status-steps",
        type=types.optional_input_path,
        metavar="DIR|",
        help="the sealed comparison's steps, for the status page (empty: none)",
    )


def _write_status_page(args: argparse.Namespace) -> None:
    """The status page after this trial: what it shows is not the trial's result, so a page
    that cannot be written is said on standard error and the trial's receipt stands."""
    from ..errors import AfbenchError
    from ..watch import rewrite_status_page, snapshot
    from . import tell

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
    from ..execute import (
        check_money,
        check_plan,
        execute_trial,
        read_receipts,
        run_agent,
        trial_steps,
    )
    from ..fsutil import sha256_file
    from ..harborjobs import read_harbor_job
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


def _checksum_tasks_args(p):
    p.add_argument("--selection", required=True, **FILE)
    p.add_argument("--repository-dir", required=True, type=types.nonempty, metavar="DIR")
    p.add_argument(
        "--repository-name",
        type=types.nonempty,
        metavar="DIR",
        help="the checkout as the config names it: what the record names the exporter under",
    )
    _export_folder_flag(p)
    _output(p)


def checksum_tasks(args):
    from ..conformance import exported_checksums
    from ..kinds import SELECTION

    selection = SELECTION.read(args.selection)
    with _export_folder(args.tasks_dir) as tasks_dir:
        checksums = exported_checksums(
            selection, args.repository_dir, tasks_dir, args.repository_name
        )
    write_json(args.output, checksums)


def _write_cost_ledger_args(p):
    p.add_argument("--receipt", required=True, help="a trial receipt (repeatable)", **FILES)
    p.add_argument("--ledger", required=True, help="the run's live cost ledger", **FILE)
    p.add_argument("--max-cost-usd", required=True, type=setting("execute/max_cost_usd"))
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
    "digest-tasks": Job(
        "every task's content digests: catalog, and the exported task's parts",
        _digest_tasks_args,
        digest_tasks,
    ),
    "diff-releases": Job(
        "two revisions compared task by task, and the unchanged tasks as a selection",
        _diff_releases_args,
        diff_releases_job,
    ),
    "plan-upgrade": Job(
        "the upgrade plan: reuse, regrade, rerun or drop per task, and its cost",
        _plan_upgrade_args,
        plan_upgrade,
    ),
    "compare-revisions": Job(
        "results of two revisions compared on the tasks the diff calls unchanged",
        _compare_revisions_args,
        compare_revisions_job,
    ),
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
    "analyse-failures": Job(
        "why the official models' failed tasks failed, one class each",
        _analyse_failures_args,
        analyse_failures,
    ),
    "analyse-run-failures": Job(
        "why a local run's tasks failed, one class each (advisory infrastructure classes)",
        _analyse_run_failures_args,
        analyse_run_failures,
    ),
    "analyse-tasks": Job(
        "the task table (solves, discrimination, difficulty) and the discriminative subset",
        _analyse_tasks_args,
        analyse_tasks,
    ),
    "write-artifact-manifest": Job(
        "every artifact with its SHA-256", _write_artifact_manifest_args, write_artifact_manifest
    ),
    "audit-directory": Job(
        "every relation between a results directory's artifacts, checked",
        _audit_directory_args,
        audit_directory,
    ),
    "store-results": Job(
        "this revision's tables as Parquet in the results store of every revision",
        _store_results_args,
        store_results,
    ),
    "plan-power": Job(
        "the run planner: tasks for a difference, or the difference for tasks",
        _plan_power_args,
        plan_power_job,
    ),
    "seal-analysis-plan": Job(
        "the sealed analysis plan of a paired comparison (never replaced)",
        _seal_analysis_plan_args,
        seal_analysis_plan,
    ),
    "seal-run-plan": Job(
        "the sealed plan of a paid run of one configuration",
        _seal_run_plan_args,
        seal_run_plan,
    ),
    "decide-step": Job(
        "a sealed comparison after one step of its run: the decision, or what runs next",
        _decide_step_args,
        decide_step,
    ),
    "decide-comparison": Job(
        "the sealed comparison's decision record: its last step, derived again",
        _decide_step_args,
        decide_step,
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
