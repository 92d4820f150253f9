"""The user's door: the interface page's five commands (fetch, tasks, plan, import-results,
verdict) as written there, and the other commands a user runs by hand. A command that needs
settings reads its config once (`--config FILE`, repeatable; without it, the official release's
config that ships in the package) and takes from its flags only what the page passes as flags:
no value is ever "the flag, else the config"."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import NamedTuple

from afbench.core.errors import AfbenchError
from afbench.core.fsutil import write_json
from afbench.core.settings import converter as setting
from afbench.core.settings import default
from afbench.exports.store import TABLES

from . import types
from .actions import (
    REPORT_FILES,
    RUN_FILES,
    discover_into,
    import_run,
    plan_power,
    published_warnings,
    render_report,
)
from .signatures import SWITCH, add, pick, reads, takes, values, writes

CONDITIONS = ("source-present", "source-free")
MAX_VERDICT_BYTES = 16 << 20  # a verdict is a few kilobytes; /dev/zero is refused before this


class Command(NamedTuple):
    summary: str
    example: str
    arguments: object
    run: object
    verbs: tuple = ()  # the job verbs doing what it does: the flags it shares are theirs


def _config(args: argparse.Namespace) -> dict:
    from afbench.core.config import load_config

    return load_config(args.config)


STRATIFIED = ("stratified_tasks", "stratified_seed")


def _selection_wanted(args: argparse.Namespace) -> bool:
    return bool(
        args.book
        or args.task
        or args.limit is not None
        or args.name
        or args.stratified_tasks is not None
        or args.stratified_seed is not None
    )


def _select(args: argparse.Namespace, catalog: dict) -> dict:
    from afbench.tasks.catalog import select_tasks

    name = args.name if args.name is not None else types.name(Path(args.output).stem)
    return select_tasks(catalog, name, args.task, args.book, args.limit, types.stratified(args))


def _receipt_of(release_dir: Path) -> tuple[dict, str]:
    from ..kinds import RECEIPT

    path = Path(release_dir) / "receipt.json"
    return RECEIPT.read(path), str(path)


def _check_receipt_pins(receipt: dict, receipt_path: str, config: dict, keys: list[str]) -> None:
    """A release folder used with a config: its receipt must hold that config's pins."""
    from afbench.core.config import file_for

    if receipt["release"]["revision"] != config["release"]["revision"]:
        raise AfbenchError(
            "the release folder holds another revision than the config pins; "
            "pass the --config it was fetched with, or fetch again",
            file=receipt_path,
            field="release.revision",
            expected=config["release"]["revision"],
            found=receipt["release"]["revision"],
        )
    entries = {e["key"]: e for e in receipt["files"]}
    for key in keys:
        spec = file_for(config, key)
        if key not in entries:
            raise AfbenchError(
                f"the receipt has no '{key}': that file was not fetched into this folder",
                file=receipt_path,
                field="files",
                expected=f"'{key}' among the fetched files (afbench fetch --all-models, or "
                f"--model {key})",
                found=", ".join(sorted(entries)),
            )
        found = entries[key]["actual_sha256"]
        if found != spec.sha256:
            raise AfbenchError(
                f"the receipt's '{key}' is not the file config pins; fetch it again",
                file=receipt_path,
                field=f"files.{key}",
                expected=spec.sha256,
                found=found,
            )


class ReleaseFolder(NamedTuple):
    path: Path
    receipt: dict
    receipt_path: str
    entries: dict
    release: dict


def _release_folder(release_dir: Path, config: dict) -> ReleaseFolder:
    """A fetched release folder: its receipt (read once), whose MANIFEST and SOURCES must be
    the config's pins, and its verified entries."""
    from afbench.release.identity import collect_verified

    receipt, receipt_path = _receipt_of(release_dir)
    _check_receipt_pins(receipt, receipt_path, config, ["manifest", "sources"])
    entries, release = collect_verified([(receipt_path, receipt)])
    return ReleaseFolder(Path(release_dir), receipt, receipt_path, entries, release)


def _catalog(folder: ReleaseFolder, config: dict) -> dict:
    from afbench.release.identity import license_of, read_entry
    from afbench.tasks.catalog import build_catalog

    def verified(key: str):
        return read_entry(folder.entries, key, folder.path / folder.entries[key][0]["path"])

    return build_catalog(
        verified("manifest"),
        verified("sources"),
        {"manifest": config["columns"]["manifest"], "sources": config["columns"]["sources"]},
        config["release"]["expected_counts"],
        folder.release,
        license_of(folder.release),
    )


def _models(args: argparse.Namespace, config: dict) -> list[str]:
    """--all-models (every model with a pin) or the --model list, each known and pinned."""
    from afbench.core.config import missing_pin_error

    if args.all_models:
        return [slug for slug, spec in config["models"].items() if spec["sha256"]]
    slugs: list[str] = []
    for slug in args.model:
        if slug not in config["models"]:
            raise AfbenchError(
                f"unknown model '{slug}'",
                field="--model",
                expected=f"one of {sorted(config['models'])}",
                found=slug,
            )
        if not config["models"][slug]["sha256"]:
            raise missing_pin_error(config, slug)
        if slug in slugs:
            raise AfbenchError(
                "a model is listed twice", field="--model", expected="each model once", found=slug
            )
        slugs.append(slug)
    return slugs


# --- the interface page's five commands ------------------------------------------------------
def fetch(args):
    from afbench.core.config import release_files
    from afbench.release.fetch import fetch_release

    config = _config(args)
    known = {f.key: f for f in release_files(config)}
    wanted = ["manifest", "sources", *_models(args, config)]
    warnings = []
    if args.all_models:
        warnings = [
            f"model '{k}' has no SHA-256 pin in config: skipped (supply models.{k}.sha256 to "
            "fetch it)"
            for k, f in known.items()
            if f.kind == "results" and not f.sha256
        ]
    pins = [known[k] for k in dict.fromkeys(wanted)]
    skipped = [f for f in known.values() if not f.sha256]
    release_dir = Path(args.release_dir)
    receipt = fetch_release(config["release"], config["source"], pins, skipped, release_dir)
    write_json(release_dir / "receipt.json", receipt)
    return warnings


def tasks(args):
    config = _config(args)
    catalog = _catalog(_release_folder(args.release_dir, config), config)
    write_json(args.output, _select(args, catalog) if _selection_wanted(args) else catalog)


def plan(args):
    from afbench.plans.plan import build_plan

    config = _config(args)
    catalog = _catalog(_release_folder(args.release_dir, config), config)
    if not _selection_wanted(args):
        raise AfbenchError(
            "say which tasks to plan: --task ID (or --book, --limit)", field="--task"
        )
    settings = config["plans"]
    written = build_plan(
        catalog,
        _select(args, catalog),
        args.agent,
        args.model,
        args.repository_dir,
        settings["tasks_dir"],
        settings["jobs_dir"],
        settings["environment_type"],
        settings["harbor"],
    )
    write_json(args.output, written)


def import_results(args):
    import itertools
    import tempfile

    from afbench.core.config import published_facts
    from afbench.core.fsutil import (
        JSON_ELEMENT_SEPARATOR,
        atomic_write_bytes,
        json_around,
        json_element,
    )
    from afbench.imports.compare import reduced, summarize
    from afbench.imports.official import ModelSpec, import_model
    from afbench.release.identity import read_entry

    from ..kinds import OFFICIAL_REFERENCE

    config = _config(args)
    folder = _release_folder(args.release_dir, config)
    catalog = _catalog(folder, config)
    slugs = _models(args, config)
    _check_receipt_pins(folder.receipt, folder.receipt_path, config, slugs)
    # the page passes these as flags: each is checked against the pinned files and release
    budget = config["release"]["nominal_budget_usd"] if args.budget_usd is None else args.budget_usd
    # One model at a time: each import is kept only as its JSON text, spooled to a temporary
    # file, so memory stays flat in the number of models; the summary, which comes first in
    # the output, needs only their totals.
    compared = []
    with tempfile.TemporaryFile() as spool:
        for slug in slugs:
            spec = config["models"][slug]
            path = folder.path / folder.entries[slug][0]["path"]
            imported = import_model(
                catalog,
                read_entry(folder.entries, slug, path),
                ModelSpec(slug, spec["display_name"], spec["source_condition"]),
                config["columns"]["results"],
                args.source_condition,
                budget,
            )
            compared.append(reduced(imported))
            spool.write(JSON_ELEMENT_SEPARATOR if len(compared) > 1 else b"")
            spool.write(json_element(imported, args.output))
            del imported
        summary = summarize(
            compared, args.strict_budget, published_facts(config), args.strict_published
        )
        reference = OFFICIAL_REFERENCE.record(summary=summary, models=[])
        head, tail = json_around(reference, "models")
        spool.seek(0)
        atomic_write_bytes(
            args.output,
            itertools.chain([head], iter(lambda: spool.read(1 << 20), b""), [tail]),
            about=reference,
        )
    return published_warnings(summary["published"])


def verdict(args):
    from afbench.core.fsutil import path_text, read_regular_file, say, sha256_bytes
    from afbench.runs.verdicts import parse_verdict

    from ..kinds import VERDICT

    data = read_regular_file(args.path, "verdict file", MAX_VERDICT_BYTES)
    result = VERDICT.record(
        **parse_verdict(data, str(args.path), args.task),
        input={"path": path_text(args.path.resolve()), "sha256": sha256_bytes(data)},
    )
    if args.output:
        write_json(args.output, result)
    else:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        say(result, ["standard output"])


# --- the other user commands ------------------------------------------------------------------
def verify(args):
    """Re-hash every pinned file of a fetched release folder into its receipt."""
    from afbench.core.config import pinned_files, release_files
    from afbench.release.fetch import build_receipt

    config = _config(args)
    pins = pinned_files(config)
    skipped = [f for f in release_files(config) if not f.sha256]
    paths = {spec.key: args.release_dir / spec.path for spec in pins}
    receipt = build_receipt(config["release"], config["source"], pins, paths, skipped)
    write_json(args.output or args.release_dir / "receipt.json", receipt)


IMPORT_RUN_SHARED = ("selection", "name", "kind", "path", "budget_usd", "task_checksums")


def import_run_command(args):
    outputs = {key: args.output_dir / name for key, name in RUN_FILES.items()}
    import_run(
        args.selection,
        args.name,
        args.kind,
        args.path,
        args.budget_usd,
        outputs,
        args.task_checksums,
    )


# the report's options are render-report's, its confidence defaulted as the config's
REPORT_SHARED = ("summary", "imports", "catalog", "receipt", "run", "confidence", "anatomy")
REPORT_SHARED += ("run_anatomy", "task_table", "comparisons")


def report(args):
    out = args.output_dir
    shared = {name: getattr(args, name) for name in REPORT_SHARED}
    files = {key: out / name for key, name in REPORT_FILES.items()}
    return render_report(values("render-report", **shared, **files, figure=None, pass_at_k=None))


def export(args):
    from afbench.core.errors import AfbenchError

    if args.format in ("csv", "parquet"):
        from ..frames import export

        for flag, given in (
            ("--condition", args.condition),
            ("--budget-usd", args.budget_usd),
            ("--run", args.run),
            ("--retrieved-at", args.retrieved_at),
        ):
            if given:
                raise AfbenchError(f"{flag} is for markdown, latex or eee", field=flag)
        from afbench.execution.ledger import read_entries

        ledger = read_entries(args.ledger, settled_only=True) if args.ledger else None
        export(args.root, args.output_dir, args.format, args.table, ledger)
        return
    from afbench.exports.records import write_exports

    for flag, given in (("--table", args.table), ("--ledger", args.ledger)):
        if given:
            raise AfbenchError(f"{flag} is for csv or parquet", field=flag)
    write_exports(
        args.root,
        args.output_dir,
        args.format,
        args.condition,
        args.budget_usd,
        args.run,
        args.retrieved_at,
    )


def power(args):
    plan_power(args, _model_imports(args.root, args.models) if args.models else [])


def ledger_command(args):
    from afbench.core.errors import printable
    from afbench.execution.ledger import summary_lines

    if args.follow:
        if args.release_dead:
            raise AfbenchError(
                "--follow only reads the ledger: close dead holds without it",
                field="--release-dead",
                expected="--follow or --release-dead",
                found="both",
            )
        watch_command(args)
        return
    view = {"--receipts": args.receipts, "--plan": args.plan, "--steps": args.steps}
    view |= {"--max-cost-usd": args.max_cost_usd, "--once": args.once, "--json": args.json}
    given = [flag for flag, value in view.items() if value not in (None, False, [])]
    if given:
        raise AfbenchError(
            f"{given[0]} is a flag of the live view",
            field=given[0],
            expected="--follow with it",
            found="no --follow",
        )
    for line in summary_lines(args.ledger, close_dead=args.release_dead):
        print(printable(line, 4000))


def watch_command(args):
    from afbench.core.errors import printable
    from afbench.execution.watch import follow, lines, renderable, snapshot

    def look() -> dict:
        return snapshot(args.ledger, args.receipts, args.plan, args.steps, args.max_cost_usd)

    if args.json:
        print(json.dumps(look(), sort_keys=True))
        return
    if args.once or not sys.stdout.isatty():

        def show(snap: dict) -> None:
            for line in lines(snap):
                print(printable(line, 4000), flush=True)

        if args.once:
            show(look())
            return
        follow(look, show, interval_s=args.interval_s)
        return
    from rich.live import Live

    with Live(renderable(look()), auto_refresh=False) as live:
        follow(
            look,
            lambda snap: live.update(renderable(snap), refresh=True),
            interval_s=args.interval_s,
        )


def _model_imports(root: Path | None, models: list[str]) -> list[dict]:
    """The two models' imports in the artifact folder (found by kind, one each)."""
    from ..frames import Folder
    from ..kinds import MODEL_IMPORT

    if root is None:
        raise AfbenchError(
            "--models needs the artifact folder that holds their imports",
            field="--root",
            expected="results/<revision>",
        )
    folder = Folder(root)
    found: dict[str, list] = {model: [] for model in models}
    for artifact in folder.of_kind(MODEL_IMPORT):
        data = folder.read(artifact, keep=False)
        if data.get("model") in found:
            found[data["model"]].append((artifact.path, data))
    for model, imports in found.items():
        if len(imports) != 1:
            raise AfbenchError(
                f"no import of model '{model}' in this folder"
                if not imports
                else f"{len(imports)} imports of model '{model}' in this folder; give the "
                "folder of one source condition and budget",
                file=str(root),
                expected="one import per model",
                found=", ".join(str(path) for path, _ in imports) or None,
            )
    return [found[model][0][1] for model in models]


def preregister(args):
    from afbench.plans.preregister import line, plan_facts, seal_into
    from afbench.tasks.catalog import read_selection

    selection, _ = read_selection(args.selection, args.catalog)
    plan = seal_into(plan_facts(_config(args), selection), selection, args.output)
    print(line(plan))


def decide(args):
    from afbench.core.fsutil import json_output, write_outputs
    from afbench.execution.ledger import read_receipts
    from afbench.execution.sequential import line, outcomes_from_receipts, sequential_decision
    from afbench.plans.preregister import check_sealed, read_plan

    plan = read_plan(args.plan)
    check_sealed(plan, str(args.plan))
    receipts = read_receipts(args.receipt)
    decided = sequential_decision(outcomes_from_receipts(plan, receipts), plan)
    if args.output is not None:
        write_outputs([json_output(args.output, decided)], about=decided)
    print(line(decided))


def discover(args):
    out = args.output_dir
    return discover_into(
        _config(args), args.checkout, out / "discovery.json", out / "discovered.yaml"
    )


def diff(args):
    from afbench.core.fsutil import json_output, write_outputs
    from afbench.upgrade.diff import upgrade_plan

    from .jobs import _diff, _flag_lines

    diff, comparable = _diff(args.previous, args.current, args.catalog)
    plan = upgrade_plan(diff, comparable["release"], args.attempts)
    out = args.output_dir
    write_outputs(
        [json_output(out / "diff.json", diff), json_output(out / "comparable.json", comparable)],
        about=diff,
    )
    write_json(out / "plan.json", plan)
    return _flag_lines(diff)


def compare_revisions(args):
    from afbench.upgrade.crossrev import comparison_line

    from .jobs import compare_revisions as compare

    for row in compare(args)["comparisons"]:
        print(comparison_line(row))


def audit(args):
    """Every relation between the artifacts of a results directory, checked; exit 1 unless
    all hold."""
    from .actions import audit_into

    audit_into(args.directory, args.output, args.quiet)


def _store_root(text: str):
    """--store: what store.root accepts (a local folder, or s3://bucket/prefix); a folder is
    read whole."""
    root = setting("store/root")(text)
    if root is None:
        return None
    return root if root.startswith("s3://") else types.input_tree(root)


def query(args):
    """SQL over the results store (DuckDB, embedded and imported here, so that afbench's
    start-up is unchanged), or the tables' columns."""
    from afbench.exports.store import default_root, describe, query, render

    if args.tables:
        columns, rows = ["table", "column", "type", "meaning"], describe()
    elif args.sql is None:
        raise AfbenchError(
            "a query needs its SQL",
            field="SQL",
            expected='afbench query [--store DIR|URL] "SELECT ...", or --tables',
        )
    else:
        columns, rows = query(args.store or default_root(), args.sql)
    sys.stdout.write(render(columns, rows, args.format))


def demo_generate(args):
    from afbench.release.demo import write_release

    write_release(args.out, args.upgrade_out)


def demo_repo(args):
    from afbench.core.fsutil import say
    from afbench.release.demo import build_repository

    commit = build_repository(args.release_files, args.out, args.upgrade_files)
    print(commit, file=sys.stdout)
    say(f"demo repository: commit {commit}", [args.out])


# --- every command's flags, declared as a job's are (cli.signatures) -------------------------
# A flag a command shares with its job verbs (Command.verbs) is theirs, taken with pick (its
# default or help changed where the user's door says it otherwise); the rest are its own. Each
# `_<command>_args` adds them to the command's parser: only the command asked for is built.
# The declarations are a table, one flag a line (its help on the next when long).
# fmt: off
FILE = {"metavar": "FILE"}  # a path flag of the user's door, shown as the file it is
CONFIG = reads("--config", help="config YAML (repeatable; later files merge over earlier; "
               "default: the packaged official config)", optional=True, many=True, metavar="FILE")
RELEASE = reads("--release-dir", help="a fetched release", metavar="DIR")
LEDGER = reads("--ledger", metavar="FILE", help="the live cost ledger of `snakemake execute` "
               "(results/<revision>/jobs.ledger.jsonl)")
OUT = {"type": types.output_dir(), "metavar": "OUT"}
IMPORT_RUN_SHARED = ("selection", "name", "kind", "path", "budget_usd", "task_checksums")
# the report's options are render-report's, its confidence defaulted as the config's
REPORT_SHARED = ("summary", "imports", "catalog", "receipt", "run", "confidence", "anatomy",
                 "run_anatomy", "task_table", "comparisons")


def _model_choice(required: bool) -> list:
    return [
        takes("--all-models", SWITCH, "every model with a pin", optional=not required,
              group="models"),
        *pick("import-model", "model",
              model={"many": True, "default": [], "help": "repeatable", "group": "models"}),
    ]


def _selection() -> list:
    """select-tasks' choice of tasks (its --source is --book here)."""
    return pick("select-tasks", "source", "task", "limit", *STRATIFIED, "name",
                source={"flag": "--book", "dest": "book"},
                name={"required": False, "help": "the selection's name (default: the output "
                      "file's stem)"})


def _fetch_args(p):
    add(p, [CONFIG, writes("--release-dir", type=types.output_dir("receipt.json"), metavar="DIR",
                           help="fetch MANIFEST, SOURCES (and models) into DIR and write "
                           "DIR/receipt.json"),
            *_model_choice(required=False)])


def _tasks_args(p):
    add(p, [CONFIG, RELEASE, *pick("select-tasks", "output", output=FILE), *_selection()])


def _plan_args(p):
    agent = {"required": False, "default": "nop",
             "help": "Harbor agent (default nop) or module.path:ClassName"}
    add(p, [CONFIG, RELEASE, *pick("write-plan", "repository_dir"), *_selection(),
            *pick("write-plan", "agent", "model", "output", agent=agent, output=FILE)])


def _import_results_args(p):
    switch = {"type": SWITCH, "required": False}
    add(p, [
        CONFIG, RELEASE, *_model_choice(required=True),
        *pick("import-model", "source_condition", defaulted=("source_condition",),
              source_condition={"help": "the condition claimed: must be each file's pinned "
                                "condition (default: source-present, the paper's leaderboard)"}),
        takes("--budget-usd", types.number(0, above=True), optional=True, metavar="USD",
              help="must be the release's nominal budget (default: that budget)"),
        *pick("compare-models", "strict_budget", "strict_published", strict_budget=switch,
              strict_published={**switch, "help": "refuse the comparison if an import differs "
                                "from what the authors published (config: release.published, "
                                "models.<slug>.published_passes)"}),
        *pick("import-model", "output", output=FILE),
    ])


def _verdict_args(p):
    add(p, [
        reads("--path", help="the verdict JSON file", metavar="PATH"),
        takes("--task", types.name, "the task the verdict is for", metavar="TASK"),
        writes("--output", help="write the import here (default: standard output)",
               optional=True, metavar="OUTPUT"),
    ])


def _verify_args(p):
    add(p, [CONFIG, RELEASE, *pick("verify-release", "output", output={
        **FILE, "required": False, "help": "default: DIR/receipt.json"})])


def _import_run_args(p):
    add(p, [*pick("import-run", *IMPORT_RUN_SHARED, budget_usd={"required": False}),
            writes("--output-dir", type=types.output_dir(*RUN_FILES.values()), metavar="DIR",
                   help="writes summary.json, outcomes.csv and attempts.csv there")])


def _report_args(p):
    add(p, [*pick("render-report", *REPORT_SHARED, defaulted=("confidence",)),
            writes("--output-dir", type=types.output_dir(*REPORT_FILES.values()), metavar="DIR",
                   help="writes index.html, analysis.json and figures/*.svg there")])


def _export_args(p):
    add(p, [
        reads("--root", type=types.input_tree, metavar="DIR", help="an artifact directory "
              "(results/<revision>); artifacts are found by their kind"),
        takes("--format", ("csv", "parquet", "markdown", "latex", "eee"),
              "csv/parquet: the tables; markdown/latex: the leaderboard as a paper table of one "
              "condition and budget; eee: Every Eval Ever 0.3.0 aggregate records"),
        writes("--output-dir", **OUT, help="writes OUT/<table>.csv or .parquet"),
        takes("--table", None, "a table to write (repeatable; default: every table the folder "
              "has): " + ", ".join(TABLES), optional=True, many=True, default=None,
              metavar="NAME"),
        reads("--ledger", optional=True, metavar="FILE", help="csv/parquet: the live cost "
              "ledger of `snakemake execute` (results/<revision>/jobs.ledger.jsonl), for the "
              "ledger_entries table"),
        takes("--condition", CONDITIONS, "markdown/latex: the source condition of the table "
              "(one)", optional=True, many=True),
        takes("--budget-usd", types.number(0, above=True), "markdown/latex: the budget of the "
              "table (one)", optional=True, many=True, metavar="USD"),
        takes("--run", types.name, "eee: also a record per configuration of this local run "
              "(repeatable); refused when afbench withholds its success rate", optional=True,
              many=True, metavar="NAME"),
        takes("--retrieved-at", types.whole(0), "eee: the records' retrieved_timestamp (Unix "
              "seconds; default SOURCE_DATE_EPOCH, else now)", optional=True, metavar="EPOCH"),
    ])


def _power_args(p):
    alpha, power, batches = (default(f"power/{k}") for k in ("alpha", "power", "batch_tasks"))
    add(p, [
        *pick("plan-power", "difference", "tasks", "alpha", "power", "configurations",
              defaulted=("alpha", "power", "configurations"),
              difference={"group": "question", "metavar": "D", "help": "to detect: tasks?"},
              tasks={"group": "question", "metavar": "N", "help": "have: difference?"},
              alpha={"help": f"({alpha:g})"}, power={"help": f"({power:g})"},
              configurations={"metavar": "K", "help": "configurations the report will compare "
                              "(Holm over their K(K-1)/2 pairs; default 2)"}),
        takes("--models", types.name, "two imported models: their observed discordance (needs "
              "--root)", metavar=("A", "B"), group="basis"),
        *pick("plan-power", "baseline_rate", baseline_rate={
            "group": "basis", "metavar": "P",
            "help": "the weaker model's success rate (successes taken as independent)"}),
        reads("--root", type=types.input_tree, optional=True, metavar="DIR",
              help="an artifact folder (results/<revision>) holding the two models' imports"),
        *pick("plan-power", "output", "sequential_tasks", "batch_tasks", "usd_per_task",
              defaulted=("batch_tasks", "usd_per_task"),
              output={**FILE, "required": False, "help": "also write the plan as JSON"},
              sequential_tasks={"required": False, "metavar": "N", "help": "also the sequential "
                                "test's view (afbench.execution.sequential): its expected tasks "
                                "and cost to a decision, for a run of at most N tasks (the "
                                "selection's size)"},
              batch_tasks={"metavar": "B", "help": f"its batches ({batches})"},
              usd_per_task={"default": float(default("power/usd_per_task")), "metavar": "USD",
                            "help": "what a task's two trials cost, for the expected cost "
                            "(default 400: twice the nominal USD 200)"}),
    ])


def _watch_view(*, receipts_required: bool) -> list:
    return [
        reads("--receipts", optional=not receipts_required, metavar="DIR",
              help="the trial receipts' folder (results/<revision>/execute)"),
        reads("--plan", optional=True, many=True, metavar="FILE", help="a sealed run plan "
              "(results/<revision>/execute/run-plans/<selection>/<label>.json): its "
              "configuration's trials, to count those left (repeatable)"),
        reads("--steps", optional=True, metavar="DIR",
              help="the sealed comparison's steps (results/<revision>/execute/sequential)"),
        takes("--max-cost-usd", types.number(), "the run's ceiling (default: the sealed run "
              "plans')", optional=True, metavar="USD"),
        takes("--once", SWITCH, "one snapshot, then end", optional=True, group="view"),
        takes("--json", SWITCH, "one snapshot as one JSON record", optional=True, group="view"),
        takes("--interval-s", types.number(above=True), "how often the files are read again "
              "(default 2)", optional=True, default=2.0, metavar="S"),
    ]


def _ledger_args(p):
    add(p, [
        LEDGER,
        takes("--release-dead", SWITCH, "close the holds of controllers that are gone (their "
              "lock free, their pid or SLURM job gone): released if Harbor never started, held "
              "at the cap if it did"),
        takes("--follow", SWITCH, "the live view of `afbench watch` instead, until the run ends "
              "(with its flags)"),
        *_watch_view(receipts_required=False),
    ])


def _watch_args(p):
    add(p, [LEDGER, *_watch_view(receipts_required=True)])


def _preregister_args(p):
    add(p, [CONFIG, *pick(
        "seal-analysis-plan", "selection", "catalog", "output",
        selection={**FILE, "help": "the comparison's selection artifact (made with this config)"},
        catalog={**FILE, "help": "the selection's task catalog (its tasks are checked against "
                 "their hash)"},
        output={**FILE, "help": "the sealed plan (never replaced by a different one)"})])


def _decide_args(p):
    plan = {**FILE, "flag": "--plan", "dest": "plan", "help": "the sealed analysis plan"}
    add(p, pick(
        "decide-step", "analysis_plan", "receipt", "output", analysis_plan=plan,
        receipt={**FILE, "help": "a trial receipt of either configuration (repeatable)"},
        output={**FILE, "required": False, "help": "also write the decision as JSON"}))


def _discover_args(p):
    add(p, [
        CONFIG,
        *pick("discover-release", "checkout", checkout={
            "type": types.input_path, "metavar": None, "help": "a git checkout of upstream"}),
        writes("--output-dir", type=types.output_dir("discovery.json", "discovered.yaml"),
               optional=True, default=".", metavar="DIR",
               help="writes discovery.json and discovered.yaml there (default: .)"),
    ])


def _diff_args(p):
    digests = "release's task digests (snakemake digests: tasks/digests.json)"
    add(p, [
        *pick("diff-releases", "previous", "digests", "catalog",
              previous={**FILE, "help": f"the previous {digests}"},
              digests={**FILE, "flag": "--current", "dest": "current", "help": f"this {digests}"},
              catalog={**FILE, "help": "this release's"}),
        *pick("plan-upgrade", "attempts", attempts={
            "required": False, "default": 1, "type": types.whole(1),
            "help": "trials per rerun task, for the cost (default 1)"}),
        writes("--output-dir", type=types.output_dir("diff.json", "comparable.json", "plan.json"),
               metavar="DIR", help="writes diff.json, comparable.json (the unchanged tasks' "
               "selection) and plan.json"),
    ])


def _compare_revisions_args(p):
    add(p, pick("compare-revisions", defaulted=("confidence",),
                output={"required": False, "help": "writes the JSON"}))


def _audit_args(p):
    add(p, [
        reads("directory", type=types.input_tree, metavar="DIR", help="an artifact directory"),
        *pick("audit-directory", "output", output={
            **FILE, "required": False, "help": "also write the audit's record here (outside DIR)"}),
    ])


def _query_args(p):
    add(p, [
        takes("sql", None, "the query; each store table is a view", optional=True, metavar="SQL"),
        takes("--store", _store_root, optional=True, metavar="DIR|URL", help="the results "
              "store: a folder, or s3://bucket/prefix (the endpoint and keys from "
              "SNAKEMAKE_STORAGE_S3_ENDPOINT_URL, _ACCESS_KEY and _SECRET_KEY, as Snakemake's S3 "
              "storage reads them, else AWS_ENDPOINT_URL and AWS's own chain); default: store/ in "
              "the current folder, where `snakemake store` puts a project's store with store.root "
              "and results_dir left at their defaults"),
        takes("--tables", SWITCH, "list the tables with their columns, types and meaning (no "
              "store needed)"),
        takes("--format", ("table", "csv", "json"), "aligned text (the default), CSV, or JSON (a "
              "list of objects)", optional=True, default="table"),
    ])


def _demo_generate_args(p):
    add(p, [writes("--out", **OUT, help="output folder"),
            writes("--upgrade-out", type=types.output_dir(), optional=True, metavar="DIR",
                   help="also write the files the release's second revision changes there")])


def _demo_repo_args(p):
    release = {"required": False, "default": "resources/demo-release", "metavar": None,
               "help": "the demo release files to commit (default: resources/demo-release)"}
    add(p, [*pick("build-demo-upstream", "release_files", "upgrade_files", release_files=release),
            writes("--out", **OUT, help="the repository's folder")])
# fmt: on


# fmt: off
COMMANDS: dict[str, Command] = {
    "fetch": Command(
        "fetch release files and verify every byte against its SHA-256 pin",
        "afbench fetch --release-dir .cache/autoformbench-af1aa38 --all-models\n"
        "afbench fetch --config config/demo.yaml --release-dir demo-release --all-models",
        _fetch_args, fetch, ("fetch-file",)),
    "tasks": Command(
        "export the source-free task catalog, or a selection of it",
        "afbench tasks --release-dir .cache/autoformbench-af1aa38 --output tasks.json\n"
        "afbench tasks --release-dir .cache/autoformbench-af1aa38 --book algebraic_topology_i "
        "--limit 2 --output topology-two.json",
        _tasks_args, tasks, ("export-catalog", "select-tasks")),
    "plan": Command(
        "write a Harbor 0.22.0 run plan (argument vectors; never executed)",
        "afbench plan --release-dir .cache/autoformbench-af1aa38 --repository-dir "
        "/absolute/path/to/autoformbench --task alg_top_theorem107 --agent nop "
        "--output nop-plan.json",
        _plan_args, plan, ("write-plan", "select-tasks")),
    "import-results": Command(
        "import the official per-model results and compare them",
        "afbench import-results --release-dir .cache/autoformbench-af1aa38 --all-models "
        "--source-condition source-present --budget-usd 200 --output reference.json",
        _import_results_args, import_results, ("import-model", "compare-models")),
    "verdict": Command(
        "check one verifier verdict JSON (reward 1 / 0 / null)",
        "afbench verdict --path /absolute/path/to/verdict.json --task alg_top_theorem107 "
        "--output verdict-import.json",
        _verdict_args, verdict),
    "verify": Command(
        "re-hash a fetched release folder against the config's pins into its receipt",
        "afbench verify --release-dir .cache/autoformbench-af1aa38",
        _verify_args, verify, ("verify-file", "verify-release")),
    "import-run": Command(
        "import a local run: Harbor job folders or verdict folders",
        "afbench import-run --selection two.json --name my-run --kind harbor "
        "--path jobs/job-1 --path jobs/job-2 --output-dir my-run",
        _import_run_args, import_run_command, ("import-run",)),
    "report": Command(
        "write the analysis, the figures and the HTML report",
        "afbench report --summary summary.json --import a.json --import b.json "
        "--catalog tasks.json --receipt REL/receipt.json --output-dir report",
        _report_args, report, ("render-report", "render-figures")),
    "export": Command(
        "write the artifact directory's tables (CSV, parquet), the leaderboard as a paper "
        "table (Markdown, LaTeX) or Every Eval Ever records",
        "afbench export --root results/SHA1 --format csv --output-dir tables\n"
        "afbench export --root results/SHA1 --format parquet --output-dir tables "
        "--table leaderboard --table official_results\n"
        "afbench export --root results/SHA1 --format latex --condition source-present "
        "--output-dir paper\n"
        "afbench export --root results/SHA1 --format eee --run my-run --output-dir eee",
        _export_args, export),
    "power": Command(
        "plan a run: the tasks a paired comparison needs, or the difference it can detect",
        "afbench power --difference 0.1 --alpha 0.05 --power 0.8 --baseline-rate 0.5\n"
        "afbench power --difference 0.05 --models demo-model-c demo-model-d --root results/REV\n"
        "afbench power --tasks 100 --baseline-rate 0.5 --output power.json\n"
        "afbench power --difference 0.1 --configurations 9 --models demo-model-c demo-model-d "
        "--root results/REV\n"
        "afbench power --difference 0.1 --baseline-rate 0.3 --sequential-tasks 341",
        _power_args, power, ("plan-power",)),
    "preregister": Command(
        "seal the analysis plan of a paired comparison before it spends anything",
        "afbench preregister --config config/demo.yaml --config config/compare-demo.yaml "
        "--selection demo-compare.json --output plan.json",
        _preregister_args, preregister, ("seal-analysis-plan",)),
    "decide": Command(
        "the sequential test's decision from a sealed plan and the trials run so far",
        "afbench decide --plan analysis-plan.json --receipt a-1.json --receipt b-1.json",
        _decide_args, decide, ("decide-step",)),
    "ledger": Command(
        "list the live cost ledger: spent, holds (and whose), overshoots, interrupted trials",
        "afbench ledger --ledger results/REV/jobs.ledger.jsonl\n"
        "afbench ledger --ledger results/REV/jobs.ledger.jsonl --release-dead",
        _ledger_args, ledger_command),
    "watch": Command(
        "the live view of a running `snakemake execute`: each configuration's trials, "
        "outcomes, rate and money, until the run ends",
        "afbench watch --ledger results/REV/jobs.ledger.jsonl --receipts results/REV/execute\n"
        "afbench watch --ledger results/REV/jobs.ledger.jsonl --receipts results/REV/execute "
        "--plan results/REV/execute/run-plans/SEL/LABEL.json --once\n"
        "afbench ledger --ledger results/REV/jobs.ledger.jsonl --follow",
        _watch_args, watch_command),
    "audit": Command(
        "check that every artifact of a results directory agrees with what it came from",
        "afbench audit results/SHA1\nafbench audit results/SHA1 --output audit.json",
        _audit_args, audit, ("audit-directory",)),
    "query": Command(
        "run SQL over the results store of every revision (DuckDB); list its tables",
        'afbench query "SELECT revision, count(*) FROM run_outcomes GROUP BY 1"\n'
        'afbench query --store store --format csv "SELECT * FROM leaderboard"\n'
        'afbench query --store s3://bucket/prefix "SELECT * FROM receipts"\n'
        "afbench query --tables",
        _query_args, query),
    "discover": Command(
        "read pins, paths and columns from an upstream checkout; write a fragment to review",
        "afbench discover --checkout /abs/autoformbench --output-dir discovered",
        _discover_args, discover, ("discover-release",)),
    "diff": Command(
        "compare two revisions' tasks; the comparable subset and the upgrade plan",
        "afbench diff --previous old/digests.json --current digests.json --catalog catalog.json "
        "--output-dir upgrade",
        _diff_args, diff, ("diff-releases", "plan-upgrade")),
    "compare-revisions": Command(
        "compare results of two revisions on the tasks the diff calls unchanged",
        "afbench compare-revisions --comparable comparable.json --previous old/model-c.json "
        "--current new/model-d.json\n"
        "afbench compare-revisions --comparable comparable.json --previous old/summary.json "
        "--outcomes old/outcomes.csv --current new/summary.json --outcomes new/outcomes.csv "
        "--current-configuration 'oracle 0.22.0 | docker' --output comparisons.json\n"
        "afbench compare-revisions --catalog catalog.json --previous a.json --current b.json",
        _compare_revisions_args, compare_revisions, ("compare-revisions",)),
}

DEMO: dict[str, Command] = {
    "generate": Command(
        "generate the synthetic demo release's files",
        "afbench demo generate --out resources/demo-release "
        "--upgrade-out resources/demo-release-upgrade",
        _demo_generate_args, demo_generate),
    "repo": Command(
        "build the demo release's git repository (a reproducible commit)",
        "afbench demo repo --release-files resources/demo-release --out demo-upstream",
        _demo_repo_args, demo_repo, ("build-demo-upstream",)),
}
# fmt: on
