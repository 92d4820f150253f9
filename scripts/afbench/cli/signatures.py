"""Each job verb's signature, declared once, as data: what it reads, what it writes and the
typed settings it takes, each a flag. Three things are made from it: the verb's `afbench job`
parser (`add`), the flags the user's door shares with a job (cli.seed takes them from here),
and the shell line of the verb's rule (`shell_line`, which workflow/rules/common.smk calls).

An argument: `flag` ("--catalog", or a positional's name); `role` (reads, writes, takes);
`kind` (the afbench.kinds name of the artifact a path holds, or None); `type` (its text's
converter: cli.types, or settings.converter for a config setting, so the flag accepts exactly
what the config schema accepts there); `required` (`optional=True` in the table); `many`
(repeatable); its `default`, `help`
and `metavar`; `dest` (its name in the parsed values, when not the flag's); `group` (the name
of a set of flags of which exactly one is given). Only this module's plain tuples are built
at start-up: the converters are closures, nothing is read (bench/run.py measures a job's
start-up)."""

from __future__ import annotations

from collections import namedtuple

from afbench.core.settings import TRANSPORT_SETTINGS
from afbench.core.settings import converter as setting

from . import types

# a namedtuple from collections, not typing.NamedTuple: importing typing costs every job's
# start-up ~10 ms CPU
# `verb`: the verb whose signature the user's door took it from (pick), else None
Arg = namedtuple("Arg", "flag role kind type required many default help metavar dest group verb",
                 defaults=(None,))  # fmt: skip
Verb = namedtuple("Verb", "summary args")
NATURAL = ...  # no default given: [] for a repeatable flag, else None


def _arg(flag, role, kind, convert, help, optional, many, default, metavar, dest, group):
    if isinstance(convert, str):
        convert = setting(convert)
    if default is NATURAL:
        default = [] if many else None
    return Arg(flag, role, kind, convert, not optional, many, default, help, metavar, dest, group)


def reads(flag, kind=None, help=None, *, optional=False, many=False, type=types.input_path,
          metavar=None, dest=None, group=None, default=NATURAL):  # fmt: skip
    """A file (or folder) the verb reads."""
    metavar = metavar or kind or "FILE"
    return _arg(flag, "reads", kind, type, help, optional, many, default, metavar, dest, group)


def writes(flag, kind=None, help=None, *, optional=False, many=False, type=types.output_path,
           metavar=None, dest=None, default=NATURAL):  # fmt: skip
    """A file (or folder) the verb writes."""
    metavar = metavar or kind or "FILE"
    return _arg(flag, "writes", kind, type, help, optional, many, default, metavar, dest, None)


def takes(flag, type, help=None, *, optional=False, many=False, default=NATURAL, metavar=None,
          dest=None, group=None):  # fmt: skip
    """A typed setting: `type` a converter, or the dpath of the config setting it carries; in
    the user's door also SWITCH, or a tuple of the values it may take (argparse's choices). A
    tuple `metavar` names each of that many values."""
    return _arg(flag, "takes", None, type, help, optional, many, default, metavar, dest, group)


def name_of(arg: Arg) -> str:
    """The argument's name in the parsed values (and in a rule's shell line)."""
    return arg.dest or arg.flag.lstrip("-").replace("-", "_")


SWITCH = bool  # a `type` for the user's door: the flag given alone is true (store_true)


def add(parser, args, groups: dict | None = None) -> None:
    """The arguments as argparse flags of `parser`; `groups`: the mutually exclusive groups
    already made, by name (the user's door adds its own flags to one)."""
    groups = {} if groups is None else groups
    for arg in args:
        where = parser
        if arg.group is not None:
            if arg.group not in groups:
                groups[arg.group] = parser.add_mutually_exclusive_group(required=arg.required)
            where = groups[arg.group]
        options = {"type": arg.type, "help": arg.help, "metavar": arg.metavar}
        if arg.type is SWITCH:
            where.add_argument(arg.flag, action="store_true", help=arg.help)
            continue
        if isinstance(arg.type, tuple):
            options.update(type=None, choices=arg.type)
        if isinstance(arg.metavar, tuple):
            options["nargs"] = len(arg.metavar)
        if not arg.flag.startswith("-"):
            nargs = "+" if arg.many else None if arg.required else "?"
            where.add_argument(arg.flag, nargs=nargs, **options)
            continue
        if arg.dest:
            options["dest"] = arg.dest
        if arg.many:
            options["action"] = "append"
        if arg.required and arg.group is None:
            options["required"] = True
        where.add_argument(arg.flag, default=arg.default, **options)


def values(verb: str, **given):
    """The verb's values by name, as its parser makes them: each declared argument's default,
    and `given` over them (refused if it names no argument of the verb)."""
    import argparse

    declared = {name_of(arg): arg.default for arg in SIGNATURES[verb].args}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise TypeError(f"{verb} has no argument {unknown[0]}")
    return argparse.Namespace(**{**declared, **given})


def pick(verb: str, *names: str, defaulted: tuple = (), **changed: dict) -> list[Arg]:
    """The verb's arguments of these names (in this order; none: all of them), each with the
    fields `changed` names for it replaced; those `defaulted` names are optional, defaulted as
    the config schema defaults their setting (the user's door: where the rule always passes
    one)."""
    from afbench.core.settings import default

    by_name = {name_of(arg): arg for arg in SIGNATURES[verb].args}
    for name in defaulted:
        dpath = by_name[name].type.dpath
        changed[name] = {"required": False, "default": default(dpath), **changed.get(name, {})}
    return [by_name[n]._replace(**changed.get(n, {}), verb=verb) for n in names or by_name]


SOURCES = {"reads": "input", "writes": "output", "takes": "params"}


def shell_line(verb: str, *pieces: str, log: str = "2> {log:q}") -> str:
    """The shell line of a rule running `afbench job <verb>`, in the order of `pieces`. A
    piece is an argument's name, whose value is the rule's input or output of that name
    (`--catalog={input.catalog:q}`) or, for a setting, its params of that name; or `NAMES=
    SOURCE`, one or more names (comma-separated) whose flags SOURCE holds: `input.x`,
    `output.x`, `input`, `output` (a path, quoted here) or `params.x` (flags the rule formats).
    Every name must be one of the verb's arguments, and every required one is given."""
    by_name = {name_of(arg): arg for arg in SIGNATURES[verb].args}
    words, given = [f"afbench job {verb}"], set()
    for piece in pieces:
        names, _, source = piece.partition("=")
        for name in names.split(","):
            if name not in by_name or name in given:
                raise ValueError(f"afbench job {verb}: {name} is not one of its arguments, once")
            given.add(name)
        arg = by_name[names.split(",")[0]]
        if not source:
            source = f"{SOURCES[arg.role]}.{names}"
        if source.startswith("params."):
            words.append(f"{{{source}}}")
        elif not arg.flag.startswith("-"):
            words.append(f"{{{source}:q}}")
        else:
            words.append(f"{arg.flag}={{{source}:q}}")
    missing = [n for n, a in by_name.items() if a.required and a.group is None and n not in given]
    if missing:
        raise ValueError(f"afbench job {verb}: its rule does not give {', '.join(missing)}")
    return " ".join([*words, log])


# --- arguments several verbs (or both doors) take ---------------------------------------------
# The declarations are a table, one argument a line (its help on the next when long): kept as
# written, not one keyword a line.
# fmt: off
OUTPUT = writes("--output")
SOURCE = [
    takes("--source-kind", "source/kind"),
    takes("--source-location", types.nonempty, "https: base URL; git: checkout; dir: mirror folder",
          metavar="URL|DIR"),
]
STRATIFIED = [
    takes("--stratified-tasks", "selections/*/stratified/tasks", optional=True, metavar="N",
          help="draw N tasks proportionally per source (largest remainder); needs "
          "--stratified-seed"),
    takes("--stratified-seed", "selections/*/stratified/seed", optional=True, metavar="S",
          help="the draw's seed: per source, the tasks with the lowest sha256(f'{S}:{task_id}')"),
]
TASKS_DIR = takes("--tasks-dir", "plans/tasks_dir", optional=True, metavar="DIR",
                  help="where the exporter writes the tasks (default: a private temporary folder, "
                  "removed afterwards: the job writes nothing but its output)")
PLAN_FIELDS = [  # what write-plan builds a plan from: run-trial rebuilds the plan from the same
    reads("--catalog", "CATALOG"),
    reads("--selection", "SELECTION"),
    takes("--agent", "plans/items/*/agent"),
    takes("--model", "plans/items/*/model", "provider/model (agents that call one)", optional=True),
    takes("--repository-dir", types.nonempty, metavar="DIR",
          help="absolute path of an upstream checkout at the pinned revision"),
    takes("--tasks-dir", "plans/tasks_dir", metavar="DIR"),
    takes("--jobs-dir", types.nonempty, metavar="DIR"),
    takes("--environment-type", "plans/environment_type"),
    takes("--harbor", "plans/harbor", metavar="EXECUTABLE"),
]
CEILING = takes("--max-cost-usd", "execute/max_cost_usd", metavar="USD|")


def trial_cap(*, optional: bool) -> Arg:
    """execute.trial_cap_usd, as every job that reserves, plans or runs trials takes it."""
    return takes("--trial-cap-usd", "execute/trial_cap_usd", optional=optional, metavar="USD|",
                 help="execute.trial_cap_usd: what a trial may spend (empty: the release's "
                 "nominal budget per task)")


def columns(flag: str, kind: str) -> Arg:
    return takes(flag, types.pair(), f"our field -> the {kind} file's column (every field, once "
                 "each)", many=True, metavar="FIELD=COLUMN", dest=f"{kind}_columns")


def keyed(section: str, keys: tuple[str, ...], **options) -> list[Arg]:
    """A setting flag for each key of a config section (--key-name <- section/key_name)."""
    return [takes(f"--{key.replace('_', '-')}", f"{section}/{key}", **options) for key in keys]


PUBLISHED = [  # what the authors published, to check the imports against (empty: nothing)
    takes("--published-source", "release/published/source"),
    takes("--published-task-rows", "release/published/task_rows"),
    takes("--published-passes", types.pair(left=types.name, right=types.whole(0)),
          "a model's published pass count (repeatable)", optional=True, many=True,
          metavar="SLUG=N"),
    takes("--published-over-budget", types.pair(left=types.name, right=types.number(0, above=True)),
          "a published cost above the budget in a model's file (repeatable)", optional=True,
          many=True, metavar="SLUG=USD"),
    takes("--strict-published", "import/strict_published"),
]
RUN_OUTPUTS = [
    writes("--summary", "RUN_SUMMARY"), writes("--outcomes", "OUTCOMES"),
    writes("--attempts", "ATTEMPTS"),
]
TASK_CHECKSUMS = reads("--task-checksums", "TASK_CHECKSUMS", optional=True,
                       help="the exporter's output for the selection (`afbench job "
                       "checksum-tasks`), which the trials' task checksums are compared with; "
                       "without it no run is certified conformant")
REPORT_INPUTS = [
    reads("--summary", "SUMMARY"),
    reads("--import", "MODEL_IMPORT", dest="imports", many=True),
    reads("--catalog", "CATALOG"),
    reads("--receipt", "RECEIPT"),
]
ANATOMY = reads("--anatomy", "FAILURE_ANATOMY",
                "the official failure anatomy (afbench job analyse-failures)", optional=True)
COMPARE_REVISIONS = [  # results paired in order, on the diff's comparable subset or a catalog
    reads("--comparable", "SELECTION", group="basis",
          help="the diff's comparable subset (upgrade/comparable.json): results of two revisions"),
    reads("--catalog", "CATALOG", "the catalog: two results of its revision", group="basis"),
    *[arg for role, which in (("previous", "the previous"), ("current", "the current")) for arg in (
        reads(f"--{role}", many=True, help=f"a result of {which} revision: a model import or a "
              "local run's summary.json (repeatable; --previous and --current are paired in "
              "order)"),
        takes(f"--{role}-configuration", None, optional=True, many=True, metavar="LABEL",
              help=f"the configuration of each --{role} run (none, or one per --{role} in order; "
              "empty for a model import or a run's only configuration)"),
    )],
    reads("--outcomes", "OUTCOMES", "a run's outcomes.csv, in its summary's folder (repeatable)",
          optional=True, many=True),
    takes("--confidence", "report/confidence"),
]
SEALED_PLAN_FIELDS = [
    takes("--environment-type", "plans/environment_type"),
    takes("--attempts", "execute/attempts"),
]
ANALYSIS_KEYS = ("alpha", "stopping", "difference", "discordance", "baseline_rate", "power",
                 "batch_tasks", "horizon", "order_seed", "futility_power")
POWER_KEYS = ("difference", "tasks", "alpha", "power", "configurations", "baseline_rate")
RELEASE_KEYS = ("name", "repository", "revision", "synthetic", "lean", "mathlib", "harbor",
                "nominal_budget_usd", "license")
RELEASE_DATES = ("release_page", "manuscript_cover", "software_citation", "first_public_release")
SELECTION, CATALOG = reads("--selection", "SELECTION"), reads("--catalog", "CATALOG")
LEDGER = reads("--ledger", help="the run's live cost ledger")


# --- every verb -----------------------------------------------------------------------------
SIGNATURES: dict[str, Verb] = {
    "build-demo-upstream": Verb("the demo release's git repository, at its reproducible commit", [
        reads("--release-files", help="the demo release files to commit", metavar="DIR"),
        reads("--upgrade-files", optional=True, metavar="DIR",
              help="commit the release's second revision too: these files over the first"),
        writes("--output", type=types.output_dir(), metavar="DIR"),
    ]),
    "fetch-file": Verb("fetch one release file and check it against its pin", [
        *SOURCE,
        takes("--repository", "release/repository"),
        takes("--revision", "release/revision"),
        takes("--file", types.relpath, "release-relative path"),
        takes("--sha256", types.sha256, "its pin"),
        *keyed("source", TRANSPORT_SETTINGS),
        OUTPUT,
    ]),
    "write-release-identity": Verb("the release identity every artifact carries", [
        *keyed("release", RELEASE_KEYS),
        *keyed("release/dates", RELEASE_DATES, metavar="DATE|"),
        takes("--image", types.image, optional=True, many=True, metavar="ROLE=REFERENCE@DIGEST"),
        writes("--output", "RELEASE_IDENTITY"),
    ]),
    "verify-file": Verb("re-hash one fetched file against its pin: its verified-file record", [
        reads("--identity", "RELEASE_IDENTITY", "the release identity artifact"),
        reads("--file", help="the fetched file"),
        takes("--pin", types.release_file, metavar="KEY=PATH@SHA256"),
        *SOURCE,
        writes("--output", "VERIFIED_FILE"),
    ]),
    "verify-release": Verb("the release's receipt from its verified-file records", [
        reads("--entry", "VERIFIED_FILE", "a verified-file record (repeatable)", many=True),
        takes("--skip", types.unpinned_file, "a file the config names without a pin (repeatable)",
              optional=True, many=True, metavar="KEY=PATH"),
        writes("--output", "RECEIPT"),
    ]),
    "discover-release": Verb("read pins, paths and columns from an upstream checkout", [
        reads("--checkout", help="empty: none configured (an error)",
              type=types.optional_input_path, metavar="DIR"),
        takes("--revision", "release/revision"),
        takes("--pin", types.release_file, optional=True, many=True),
        takes("--skip", types.unpinned_file, optional=True, many=True),
        takes("--column", types.pair(), many=True, metavar="KIND.FIELD=COLUMN"),
        takes("--display-name", types.pair(), optional=True, many=True, metavar="SLUG=NAME"),
        writes("--discovery", "DISCOVERY"),
        writes("--fragment"),
    ]),
    "export-catalog": Verb("the source-free task catalog from verified MANIFEST and SOURCES", [
        reads("--manifest"),
        reads("--sources"),
        reads("--verified", "VERIFIED_FILE", "MANIFEST's and SOURCES' verified records", many=True),
        columns("--manifest-column", "manifest"),
        columns("--sources-column", "sources"),
        takes("--expected-counts", types.counts, metavar="TASKS,SOURCES,OBLIGATIONS"),
        writes("--output", "CATALOG"),
    ]),
    "select-tasks": Verb("one named selection of the catalog", [
        CATALOG,
        takes("--name", types.name),
        takes("--task", "selections/*/tasks/*", "keep this task (repeatable)", optional=True,
              many=True, metavar="ID"),
        takes("--source", "selections/*/sources/*", "keep tasks of this source (repeatable)",
              optional=True, many=True, metavar="SOURCE_ID"),
        takes("--limit", "selections/*/limit", "the first N selected tasks", optional=True,
              metavar="N"),
        *STRATIFIED,
        takes("--frozen", "selections/*/frozen", "record each member's digests (needs --digests)",
              optional=True, default=False),
        reads("--digests", "TASK_DIGESTS", "the task digests (digest-tasks), for --frozen",
              optional=True),
        reads("--earlier", "SELECTION", optional=True,
              help="this selection frozen on the previous release: refused if a member changed"),
        writes("--output", "SELECTION"),
    ]),
    "digest-tasks": Verb("every task's content digests: catalog, and the exported task's parts", [
        CATALOG,
        takes("--repository-dir", types.optional_text, metavar="DIR|",
              help="a checkout at the pinned revision (empty: catalog digests only)"),
        TASKS_DIR,
        writes("--output", "TASK_DIGESTS"),
    ]),
    "diff-releases": Verb(
        "two revisions compared task by task, and the unchanged tasks as a selection", [
        reads("--previous", "TASK_DIGESTS", "the previous release's digests"),
        reads("--digests", "TASK_DIGESTS", "this release's digests"),
        reads("--catalog", "CATALOG", "this release's catalog"),
        writes("--diff", "UPGRADE_DIFF"),
        writes("--comparable", "SELECTION", "the unchanged tasks' selection"),
    ]),
    "plan-upgrade": Verb(
        "the upgrade plan: reuse, regrade, rerun or drop per task, and its cost", [
        reads("--diff", "UPGRADE_DIFF"),
        reads("--catalog", "CATALOG", "this release's catalog"),
        takes("--attempts", "execute/attempts", metavar="N"),
        trial_cap(optional=True),
        writes("--output", "UPGRADE_PLAN"),
    ]),
    "compare-revisions": Verb(
        "results of two revisions compared on the tasks the diff calls unchanged",
        [*COMPARE_REVISIONS, writes("--output", "CROSS_REVISION")],
    ),
    "write-plan": Verb("a Harbor 0.22.0 run plan for one selection and agent",
                       [*PLAN_FIELDS, writes("--output", "PLAN")]),
    "import-model": Verb("one model's official results against the catalog", [
        CATALOG,
        reads("--verified", "VERIFIED_FILE", "the results file's verified record"),
        reads("--results"),
        takes("--model", types.name, metavar="SLUG"),
        takes("--display-name", "models/*/display_name"),
        takes("--pinned-condition", "models/*/source_condition"),
        takes("--source-condition", "import/source_condition"),
        columns("--column", "results"),
        writes("--output", "MODEL_IMPORT"),
    ]),
    "compare-models": Verb("the like-for-like comparison: summary and leaderboard", [
        reads("--import", "MODEL_IMPORT", dest="imports", many=True),
        reads("--verified", "VERIFIED_FILE", optional=True, many=True,
              help="refuse imports older than these verified records' pins (repeatable)"),
        takes("--strict-budget", "import/strict_budget",
              "refuse the comparison if any reported cost exceeds the budget"),
        *PUBLISHED,
        writes("--summary", "SUMMARY"),
        writes("--leaderboard"),
    ]),
    "import-run": Verb("a local run's Harbor job or verdict folders", [
        reads("--selection", "SELECTION", "the selection the run was made on"),
        takes("--name", types.name, "the run's name"),
        takes("--kind", "runs/*/kind"),
        reads("--path", help="a Harbor job folder or a verdict folder (repeatable)", many=True,
              default=None, type=types.input_tree, metavar="DIR"),
        takes("--path-name", types.nonempty, optional=True, many=True, default=None,
              metavar="NAME", help="each --path as the config names it, in the same order: what "
              "the tables record (a storage plugin reads its own local copy)"),
        takes("--budget-usd", "runs/*/budget_usd",
              "the budget audit's budget (none: the release's nominal budget)"),
        TASK_CHECKSUMS,
        *RUN_OUTPUTS,
    ]),
    "import-executed": Verb("the executed trials of one selection as a local run", [
        SELECTION,
        takes("--name", types.name),
        reads("--receipt", "TRIAL_RECEIPT", "a trial receipt (repeatable)", many=True),
        reads("--reused-receipt", "TRIAL_RECEIPT", optional=True, many=True,
              help="a previous release's receipt of a task the upgrade plan reuses (repeatable)"),
        reads("--analysis-plan", "ANALYSIS_PLAN", optional=True, type=types.optional_input_path,
              metavar="FILE|", help="the sealed analysis plan the run is checked against "
              "(empty: none)"),
        takes("--plan-sha256", types.optional(types.sha256),
              "the seal the run was approved against", optional=True, metavar="SHA|"),
        TASK_CHECKSUMS,
        *RUN_OUTPUTS,
    ]),
    "render-figures": Verb("the report's figures, from the models' numbers", [
        *REPORT_INPUTS,
        takes("--confidence", "report/confidence"),
        writes("--figure", help="a figure to draw; its stem names it", many=True),
        ANATOMY,
    ]),
    "render-report": Verb("the analysis and the HTML report, embedding the figures", [
        *REPORT_INPUTS,
        reads("--run", "RUN_SUMMARY", "a local run's summary.json (repeatable)", optional=True,
              many=True),
        takes("--confidence", "report/confidence"),
        takes("--settings-digest", types.sha256),
        reads("--figure", help="a drawn figure to embed; its stem names it", many=True),
        writes("--html"),
        writes("--analysis", "ANALYSIS"),
        reads("--ledger", "COST_LEDGER", "the executed trials' cost ledger", optional=True),
        reads("--sequential-run", "SEQUENTIAL_RUN",
              "the sealed comparison's decision record (execute)", optional=True),
        ANATOMY,
        reads("--run-anatomy", "RUN_FAILURE_ANATOMY",
              "a local run's failure anatomy (repeatable; with --anatomy)", optional=True,
              many=True),
        reads("--pass-at-k", "PASS_AT_K", "a local run's pass@k (repeatable)", optional=True,
              many=True),
        reads("--task-table", "TASK_TABLE",
              "the task table (afbench job analyse-tasks; at most once)", optional=True, many=True),
        reads("--comparisons", "CROSS_REVISION", optional=True, many=True,
              help="the comparisons across revisions (afbench compare-revisions --output; at "
              "most once)"),
        takes("--history", "report/history", optional=True, default=False,
              help="show each configuration's history across the revisions of the results store"),
        reads("--history-partition", optional=True, many=True, help="another revision's "
              "partition of official_results or run_outcomes (repeatable)"),
        reads("--history-comparable", "SELECTION", optional=True, many=True,
              help="a comparable subset between this revision and another (repeatable)"),
        reads("--history-outcomes", "OUTCOMES", optional=True, many=True,
              help="a run's outcomes.csv, beside its --run (repeatable)"),
    ]),
    "analyse-failures": Verb("why the official models' failed tasks failed, one class each", [
        reads("--import", "MODEL_IMPORT", dest="imports", many=True),
        takes("--near-miss-share", "anatomy/near_miss_share",
              "a failure with at least this share of its obligations accepted is a near miss"),
        writes("--output", "FAILURE_ANATOMY"),
    ]),
    "analyse-run-failures": Verb(
        "why a local run's tasks failed, one class each (advisory infrastructure classes)", [
        reads("--summary", "RUN_SUMMARY", "the run's summary.json"),
        reads("--outcomes", "OUTCOMES", "the run's outcomes.csv"),
        writes("--output", "RUN_FAILURE_ANATOMY"),
    ]),
    "pass-at-k": Verb("pass@k of each configuration of a run, clustered over its sources", [
        reads("--summary", "RUN_SUMMARY", "the run's summary.json"),
        reads("--attempts", "ATTEMPTS", "the run's attempts.csv"),
        CATALOG,
        takes("--confidence", "report/confidence"),
        writes("--output", "PASS_AT_K"),
    ]),
    "analyse-tasks": Verb(
        "the task table (solves, discrimination, difficulty) and the discriminative subset", [
        CATALOG,
        reads("--import", "MODEL_IMPORT", dest="imports", many=True),
        *keyed("task_table", ("shuffles", "seed", "alpha", "min_discrimination")),
        writes("--output", "TASK_TABLE", "the task table"),
        takes("--selection-name", types.name, "the derived selection's name", optional=True),
        writes("--selection", "SELECTION", "the derived discriminative subset", optional=True),
    ]),
    "write-artifact-manifest": Verb("every artifact with its SHA-256", [
        reads("files", many=True),
        reads("--root", metavar="DIR"),
        takes("--revision", "release/revision"),
        takes("--config-digest", types.sha256),
        writes("--output", "ARTIFACT_MANIFEST"),
    ]),
    "audit-directory": Verb("every relation between a results directory's artifacts, checked", [
        reads("--manifest", "ARTIFACT_MANIFEST",
              "the directory's artifact manifest: the directory audited is its folder"),
        writes("--output", "AUDIT"),
    ]),
    "store-results": Verb(
        "this revision's tables as Parquet in the results store of every revision", [
        reads("--manifest", "ARTIFACT_MANIFEST", "the revision's artifact manifest: the folder "
              "read is its folder (artifacts found by their kind)"),
        takes("--revision", "release/revision"),
        reads("--ledger", optional=True, help="the live cost ledger of `snakemake execute` (none "
              "yet: no entries); its entries of the folder's trials are stored"),
        writes("--output", many=True, dest="outputs",
               help="each table's partition, <store>/<table>/revision=<revision>/part-0.parquet"),
    ]),
    "plan-power": Verb("the run planner: tasks for a difference, or the difference for tasks", [
        *keyed("power", POWER_KEYS),
        reads("--import", "MODEL_IMPORT", "two models' imports (or none: a baseline rate)",
              optional=True, many=True, dest="imports"),
        *keyed("power", ("sequential_tasks", "batch_tasks", "usd_per_task")),
        writes("--output", "POWER_PLAN"),
    ]),
    "seal-analysis-plan": Verb("the sealed analysis plan of a paired comparison (never replaced)", [
        SELECTION,
        reads("--catalog", "CATALOG", "the selection's catalog"),
        *[takes(f"--{side}-{key}", f"preregister/comparison/{side}/{key}")
          for side in ("a", "b") for key in ("agent", "model")],
        *SEALED_PLAN_FIELDS,
        *keyed("preregister", ANALYSIS_KEYS),
        takes("--max-cost-usd", "execute/max_cost_usd"),
        trial_cap(optional=False),
        writes("--output", "ANALYSIS_PLAN"),
    ]),
    "seal-run-plan": Verb("the sealed plan of a paid run of one configuration", [
        SELECTION,
        reads("--catalog", "CATALOG", "the selection's catalog"),
        takes("--agent", "plans/items/*/agent"),
        takes("--model", "plans/items/*/model"),
        *SEALED_PLAN_FIELDS,
        takes("--max-cost-usd", "execute/max_cost_usd"),
        trial_cap(optional=False),
        writes("--output", "RUN_PLAN"),
    ]),
    "decide-step": Verb(
        "a sealed comparison after one step of its run: the decision, or what runs next", [
        reads("--analysis-plan", "ANALYSIS_PLAN", "the sealed analysis plan (read, never "
              "rebuilt: the workflow does not declare it)"),
        takes("--plan-sha256", types.sha256,
              "the seal the run was approved against (a plan sealed since is refused)"),
        reads("--harbor-plan", "PLAN", "each configuration's Harbor run plan", many=True),
        reads("--receipt", "TRIAL_RECEIPT", "a trial receipt of the comparison (repeatable)",
              optional=True, many=True),
        takes("--step", types.whole(0), metavar="N"),
        LEDGER,
        CEILING,
        trial_cap(optional=False),
        writes("--output", "SEQUENTIAL_RUN"),
    ]),
    "run-trial": Verb("one planned trial: export, check, harbor run; its receipt", [
        reads("--plan", "PLAN"),
        *PLAN_FIELDS,
        takes("--task", types.name, metavar="ID"),
        takes("--attempt", types.whole(1), metavar="N"),
        takes("--env", types.pair(right=types.text), "extra environment for the steps "
              "(repeatable)", optional=True, many=True, metavar="NAME=VALUE"),
        takes("--pass-env", types.variable, "a variable of this job's environment the steps get "
              "too (repeatable)", optional=True, many=True, metavar="NAME"),
        takes("--allow-model-agent", "execute/allow_model_agents",
              "true lets an agent other than nop/oracle run (it spends money)"),
        CEILING._replace(
            help="the run's ceiling (empty: none; an agent that may call a model needs one)"),
        trial_cap(optional=True),
        takes("--rerun-interrupted", "execute/rerun_interrupted", optional=True, default=False,
              help="true runs again a paid trial whose earlier copy was interrupted"),
        takes("--meter-interval-s", "execute/meter_interval_s", optional=True, default=5.0,
              metavar="S", help="how often a running trial's visible cost is read"),
        reads("--earlier-receipt", "TRIAL_RECEIPT", optional=True, many=True,
              help="a receipt of the round before in a partial run (repeatable)"),
        takes("--partial-round", types.optional(types.whole(1)), optional=True, metavar="N|",
              help="the trial's round in a partial run (empty: not a partial run)"),
        LEDGER,
        writes("--output", "TRIAL_RECEIPT", "the trial receipt"),
        writes("--status-page", optional=True, type=types.optional(types.output_path),
               metavar="FILE|", help="the run's status page, rewritten once the receipt is "
               "written (afbench.execution.watch)"),
        reads("--status-receipts", optional=True, type=types.optional_input_path, metavar="DIR|",
              help="the folder of the run's trial receipts, for the status page"),
        reads("--status-plan", "RUN_PLAN", "a sealed run plan, for the status page",
              optional=True, many=True),
        reads("--status-steps", optional=True, type=types.optional_input_path, metavar="DIR|",
              help="the sealed comparison's steps, for the status page (empty: none)"),
    ]),
    "checksum-tasks": Verb(
        "the exporter's output for a selection's tasks, as Harbor's task checksums", [
        SELECTION,
        takes("--repository-dir", types.nonempty, metavar="DIR"),
        takes("--repository-name", types.nonempty, optional=True, metavar="DIR",
              help="the checkout as the config names it: what the record names the exporter "
              "under"),
        TASKS_DIR,
        writes("--output", "TASK_CHECKSUMS"),
    ]),
    "write-cost-ledger": Verb("the cost ledger of the executed trials, from the live ledger", [
        reads("--receipt", "TRIAL_RECEIPT", "a trial receipt (repeatable)", many=True),
        LEDGER,
        takes("--max-cost-usd", "execute/max_cost_usd"),
        writes("--output", "COST_LEDGER"),
    ]),
}
# fmt: on
# decide-comparison runs decide-step's handler: the last step, derived again
SIGNATURES["decide-comparison"] = Verb(
    "the sealed comparison's decision record: its last step, derived again",
    SIGNATURES["decide-step"].args,
)
