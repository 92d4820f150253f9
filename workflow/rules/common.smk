# The one place that names artifact paths under results/<revision>/, and the one way a rule
# hands its command a setting: `setting(flag, dpath)`, the config value at `dpath` (Snakemake's
# lookup) as `--flag=value`, quoted for the shell. A setting reaches only the jobs whose rules
# pass it, so a config change reruns exactly the jobs whose settings changed. A rule's shell
# line is `shell_line(verb, ...)` (afbench.cli.signatures): its flags are the verb's declared
# ones, each named by what feeds it, and every flag the verb requires is given.
import json
import re
import time
from pathlib import Path
from shlex import quote

from snakemake.exceptions import IncompleteCheckpointException, WorkflowError
from snakemake.exceptions import LookupError as DpathNotFound
from snakemake.logging import logger

from afbench.core import harbor
from afbench.cli.signatures import shell_line
from afbench.core.config import (
    SOURCE_LOCATION,
    TRANSPORT_SETTINGS,
    config_digest,
    selected_models,
)
from afbench.core.errors import AfbenchError
from afbench.execution.approval import (
    approve,
    check_items,
    comparison_trials,
    partial_rounds,
    planned_trials,
    selection_size,
    unplanned_trials,
)
from afbench.kinds import (
    CATALOG as CATALOG_KIND,
    SELECTION as SELECTION_KIND,
    SEQUENTIAL_RUN as SEQUENTIAL_RUN_KIND,
    UPGRADE_PLAN as UPGRADE_PLAN_KIND,
)
from afbench.core.fsutil import canonical_digest
from afbench.plans.plan import plan_label
from afbench.upgrade.history import STORED_TABLES as HISTORY_TABLES
from afbench.exports.store import (
    PART as STORE_PART,
    default_root as default_store_root,
    on_s3,
    partition as store_partition,
    revision_files,
)
from afbench.upgrade.diff import tasks_by_action

# With --use-conda every job runs in this environment; its post-deploy script installs the
# checkout's afbench, which the rules call. Without it, the active environment's afbench.
AFBENCH_ENV = "../envs/afbench.yaml"
REVISION = config["release"]["revision"]
REV = f"{config['results_dir']}/{REVISION}"
RELEASE = f"{REV}/release"
LOGS = f"{REV}/logs"


def imports_dir(rev):
    """A revision's official imports (this config's condition and nominal budget)."""
    return (
        f"{rev}/imports/{config['import']['source_condition']}/"
        f"budget-{config['release']['nominal_budget_usd']:g}"
    )


IMPORTS = imports_dir(REV)
REPORT = f"{REV}/report"
DEMO = "demo" in config


# --- settings as command-line flags ---------------------------------------------------------
def option(flag, value):
    """`--flag=value`, quoted for the shell; the `=` keeps a value that begins with `-` a value.
    None is the empty value (a null setting); booleans are true/false."""
    if value is None:
        value = ""
    elif isinstance(value, bool):
        value = str(value).lower()
    return f"--{flag}={quote(str(value))}"


def options(flag, values):
    """`--flag=v` once per value (a repeatable flag)."""
    return " ".join(option(flag, value) for value in values)


def config_lookup(dpath):
    """Snakemake's lookup of `dpath` in the config, started at the deepest mapping its leading
    plain keys reach: dpath walks every value of the mapping it is given, so a lookup from the
    config's root costs the whole config on each of a parse's ~150 calls (0.6 s of a no-op
    rerun's CPU). A step that is missing or a pattern is left to lookup, which names the
    whole dpath when it finds nothing."""
    steps, within = dpath.split("/"), config
    while (
        len(steps) > 1
        and not re.search(r"[{}*?\[\]]", steps[0])
        and isinstance(within.get(steps[0]), dict)
    ):
        within = within[steps.pop(0)]
    try:
        value = lookup(dpath="/".join(steps), within=within)
    except DpathNotFound:
        return lookup(dpath=dpath, within=config)
    if not callable(value):
        return value

    def of(wildcards):
        try:
            return value(wildcards)
        except DpathNotFound:
            return lookup(dpath=dpath, within=config)(wildcards)

    return of


def setting(flag, dpath):
    """The config setting at `dpath` as `--flag=value`; a dpath with {wildcards} gives the
    rule a function of the job's wildcards."""
    value = config_lookup(dpath)
    if callable(value):
        return lambda wildcards: option(flag, value(wildcards))
    return option(flag, value)


class Untracked:
    """Flags handed to a command that Snakemake does not record: it reruns a job for changed
    params only when they are plain values (text, numbers, lists), so changing these reruns
    nothing. Only for settings that cannot change an output: how a file is downloaded, where
    the status page is drawn."""

    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


def transport_flags():
    return Untracked(
        " ".join(setting(key.replace("_", "-"), f"source/{key}") for key in TRANSPORT_SETTINGS)
    )


def published_flags():
    """What the authors published (release.published, models.<slug>.published_*), as the
    flags of the job that checks the imports against it."""
    models = config["models"]
    return " ".join(
        [
            setting("published-source", "release/published/source"),
            setting("published-task-rows", "release/published/task_rows"),
            options(
                "published-passes",
                [
                    f"{slug}={spec['published_passes']}"
                    for slug, spec in models.items()
                    if spec["published_passes"] is not None
                ],
            ),
            options(
                "published-over-budget",
                [
                    f"{slug}={usd!r}"
                    for slug, spec in models.items()
                    for usd in spec["published_over_budget_usd"] or []
                ],
            ),
        ]
    )


def stratified_flags(stratified):
    """A stratified selection's size and seed as flags (none for another selection)."""
    if stratified is None:
        return ""
    return " ".join(
        [
            option("stratified-tasks", stratified["tasks"]),
            option("stratified-seed", stratified["seed"]),
        ]
    )


def pinned(files):
    return {key: spec for key, spec in files.items() if spec["sha256"]}


FILES = {**pinned(config["files"]), **pinned(config["models"])}  # key -> {path, sha256}
BY_PATH = {spec["path"]: key for key, spec in FILES.items()}
UNPINNED = {slug: spec for slug, spec in config["models"].items() if not spec["sha256"]}
# `--skip=slug=path` for each model without a pin: what a release check leaves out, by name
SKIPS = options("skip", [f"{slug}={spec['path']}" for slug, spec in UNPINNED.items()])

for slug in UNPINNED:
    logger.warning(
        f"afbench: model '{slug}' has no SHA-256 pin in config: skipped "
        f"(supply models.{slug}.sha256 to fetch and import it)"
    )


try:
    MODELS = selected_models(config)  # the same rule as the CLI's (afbench.core.config)
except AfbenchError as error:
    raise WorkflowError(str(error)) from None
PLAN_ITEMS = {
    (item["selection"], plan_label(item["agent"], item.get("model"))): item
    for item in config["plans"]["items"]
}


def pin_of(key):
    return f"{key}={FILES[key]['path']}@{FILES[key]['sha256']}"


def source_location():
    return config["source"][SOURCE_LOCATION[config["source"]["kind"]]]


def columns(flag, kind):
    return options(flag, [f"{ours}={theirs}" for ours, theirs in config["columns"][kind].items()])


# --- artifact paths -------------------------------------------------------------------------
def release_file(key):
    return f"{RELEASE}/{FILES[key]['path']}"


RELEASE_IDENTITY = f"{REV}/release-identity.json"
RECEIPT = f"{RELEASE}/receipt.json"


def verified(key):
    return f"{RELEASE}/verified/{key}.json"


CATALOG = f"{REV}/tasks/catalog.json"


def selection(name):
    return f"{REV}/tasks/selections/{name}.json"


def plan_files():
    return [f"{REV}/plans/{sel}/{label}.json" for sel, label in PLAN_ITEMS]


def model_import(slug):
    return f"{IMPORTS}/{slug}.json"


def run_dir(name):
    return f"{REV}/runs/{name}"


# why tasks failed (afbench.task_analysis.anatomy) and which tasks measure anything (afbench.task_analysis.items)
OFFICIAL_ANATOMY = f"{IMPORTS}/failure-anatomy.json"
TASK_TABLE = f"{IMPORTS}/task-table.json"
DERIVED_SELECTION = config["task_table"]["selection"]


def run_anatomy(name):
    return f"{run_dir(name)}/failure-anatomy.json"


def pass_at_k_file(name):
    return f"{run_dir(name)}/pass-at-k.json"


def failure_anatomies():
    """The official failure anatomy (with models to import) and each configured run's."""
    return [OFFICIAL_ANATOMY, *[run_anatomy(n) for n in config["runs"]]] if MODELS else []


def task_table_files():
    """The task table (two or more models) and, when named, its derived selection."""
    if len(MODELS) < 2:
        return []
    return [TASK_TABLE, *([selection(DERIVED_SELECTION)] if DERIVED_SELECTION else [])]


def beyond_leaderboard_inputs(run_names):
    """What the report reads beyond the leaderboard: the official failure anatomy, each local
    run's, and the task table."""
    return {
        "anatomy": OFFICIAL_ANATOMY,
        "run_anatomy": [run_anatomy(name) for name in run_names],
        "task_table": task_table_files()[:1],
    }


def report_figures():
    paired = ["paired"] if len(MODELS) > 1 else []
    names = ["leaderboard", "cost_success", "per_source", *paired, "failures"]
    return [f"{REPORT}/figures/{name}.svg" for name in names]


# --- release upgrades: the previous release keeps its own results/<revision>/ tree ----------
TASK_DIGESTS = f"{REV}/tasks/digests.json"
PREVIOUS = config["upgrade"]["previous_revision"]
PREVIOUS_REV = f"{config['results_dir']}/{PREVIOUS}" if PREVIOUS else None
UPGRADE_DIFF = f"{REV}/upgrade/diff.json"
COMPARABLE = f"{REV}/upgrade/comparable.json"
UPGRADE_PLAN = f"{REV}/upgrade/plan.json"


def previous_digests(wildcards):
    """The previous release's task digests, built by its own config (refused when absent)."""
    if PREVIOUS is None:
        refuse(
            "no previous release to compare with: set upgrade.previous_revision (and build "
            "its digests with its own config: snakemake digests)"
        )
    path = f"{PREVIOUS_REV}/tasks/digests.json"
    if not Path(path).is_file():
        refuse(
            f"the previous release's task digests are missing ({path}): build them with its "
            "own config first (snakemake digests --configfile <its config>)"
        )
    return path


# results of the previous release against results of this one, on the comparable subset
COMPARISONS = config["upgrade"]["comparisons"]
CROSS_REVISION = f"{REV}/upgrade/comparisons.json"


def revision_result(rev, side):
    """A result's files in a revision's tree: a model import, or a run's summary.json and
    outcomes.csv (upgrade.comparisons)."""
    if "model" in side:
        return [f"{imports_dir(rev)}/{side['model']}.json"]
    return [f"{rev}/runs/{side['run']}/{name}" for name in ("summary.json", "outcomes.csv")]


def compared_results(role):
    """The previous or current result of each comparison, in order (its import or run
    summary), and the outcomes of every run among them; the previous release's are built by
    its own config, and refused here when absent."""

    def inputs(wildcards):
        rev = PREVIOUS_REV if role == "previous" else REV
        found = [revision_result(rev, pair[role]) for pair in COMPARISONS]
        if role == "previous":
            missing = [f for side in found for f in side if not Path(f).is_file()]
            if missing:
                refuse(
                    f"the previous release's results to compare are missing ({missing[0]}"
                    + (f" and {len(missing) - 1} more" if len(missing) > 1 else "")
                    + "): build them with its own config first (snakemake imports runs "
                    "--configfile <its config>)"
                )
        return {
            role: [side[0] for side in found],
            f"{role}_outcomes": list(dict.fromkeys(f for side in found for f in side[1:])),
        }

    return inputs


def compared_configurations(role):
    return options(f"{role}-configuration", [p[role].get("configuration") for p in COMPARISONS])


def cross_revision_files():
    """The comparisons across revisions, when config asks for any."""
    return [CROSS_REVISION] if COMPARISONS else []


def frozen(name):
    return config["selections"][name].get("frozen", False)


def earlier_selection(name):
    """The same selection frozen on the previous release, when there is one to hold it to."""
    if not (PREVIOUS and frozen(name)):
        return []
    path = f"{PREVIOUS_REV}/tasks/selections/{name}.json"
    return [path] if Path(path).is_file() else []


ARTIFACT_MANIFEST = f"{REV}/artifacts.json"
# beside the directory, never in it: the audit reads results/<revision> and writes nothing there
AUDIT_RECORD = f"{config['results_dir']}/audit/{REVISION}.json"
POWER_PLAN = f"{REV}/power.json"
# the results store, shared by every revision (afbench.exports.store): beside the results folder unless
# store.root says where; an S3 root through Snakemake's S3 storage plugin
STORE_ROOT = config["store"]["root"] or default_store_root(config["results_dir"])
STORE_FILES = revision_files(STORE_ROOT, REVISION)
if on_s3(STORE_ROOT):
    STORE_FILES = list(map(storage, STORE_FILES))
STORE_LOG = f"{LOGS}/store_results.log"
HISTORY = config["report"]["history"]


def stored_revisions():
    """The other revisions the results store holds now (read when the workflow is parsed: a
    revision added since reruns the report, its partitions being new inputs)."""
    found = {
        path.parent.name.removeprefix("revision=")
        for table in HISTORY_TABLES
        for path in Path(STORE_ROOT, table).glob(f"revision=*/{STORE_PART}")
    }
    return sorted(found - {REVISION})


def history_inputs(run_names):
    """What the history across revisions reads (report.history): the other revisions'
    partitions of the tables it compares, every comparable subset between this revision and
    one of them (this revision's own diff against upgrade.previous_revision, built if need be,
    and the later revision's diff against this one where it has been built), and the runs'
    outcomes."""
    if not HISTORY:
        return {"history_partitions": [], "history_comparable": [], "history_outcomes": []}
    others = stored_revisions()
    partitions = [store_partition(STORE_ROOT, t, o) for o in others for t in HISTORY_TABLES]
    later = [f"{config['results_dir']}/{o}/upgrade/comparable.json" for o in others]
    return {
        "history_partitions": [str(p) for p in partitions if p.is_file()],
        "history_comparable": [
            *([COMPARABLE] if PREVIOUS in others else []),
            *[path for path in later if Path(path).is_file()],
        ],
        "history_outcomes": [f"{run_dir(name)}/outcomes.csv" for name in run_names],
    }


def power_imports():
    """The imports of the two models whose observed discordance the planner uses."""
    wanted = config["power"]["models"]
    missing = [m for m in wanted if m not in MODELS]
    if missing:
        raise ValueError(
            f"power.models: {missing} not among the imported models (import.models, pins)"
        )
    return [model_import(m) for m in wanted]


def trial_receipt(selection, label, task, attempt):
    return f"{REV}/execute/{selection}/{label}/{task}/attempt-{attempt}.json"


DEMO_CHECKOUT = config["source"]["checkout"] if DEMO else []


def stage_targets():
    targets = {
        "fetch": [RELEASE_IDENTITY, RECEIPT],
        "tasks": [CATALOG, *[selection(n) for n in config["selections"]]],
        "plans": plan_files(),
        "imports": [f"{IMPORTS}/summary.json", f"{IMPORTS}/leaderboard.csv"],
        "runs": [
            *(f"{run_dir(n)}/{f}" for n in config["runs"] for f in RUN_FILES),
            *(pass_at_k_file(n) for n in config["runs"]),
        ],
        "report": [],
        "failures": failure_anatomies(),
        "task_table": task_table_files(),
        "comparisons": [UPGRADE_DIFF, COMPARABLE, CROSS_REVISION] if COMPARISONS else [],
    }
    if config["report"]["enabled"]:
        html, analysis = f"{REPORT}/index.html", f"{REPORT}/analysis.json"
        targets["report"] = [html, analysis, *report_figures()]
    return targets


RUN_FILES = ("summary.json", "outcomes.csv", "attempts.csv")


def all_artifacts():
    return [f for files in stage_targets().values() for f in files]


def absolute(path):
    return str(Path(path).resolve()) if path else ""


def plan_item(w):
    return PLAN_ITEMS[(w.selection, w.label)]


# relative to the revision's results folder, or absolute (a file system the trial nodes share)
JOBS_DIR = absolute(Path(REV) / config["plans"]["jobs_dir"])


def plan_params():
    """The flags write_plan builds a plan from; run_trial passes the same, to rebuild it."""
    return {
        "agent": lambda w: option("agent", plan_item(w)["agent"]),
        "model": lambda w: options("model", [m for m in [plan_item(w).get("model")] if m]),
        "repository": lambda w, input: option(
            "repository-dir",
            absolute(input.checkout if DEMO else config["plans"]["repository_dir"]),
        ),
        "tasks_dir": setting("tasks-dir", "plans/tasks_dir"),
        "jobs_dir": option("jobs-dir", JOBS_DIR),
        "environment_type": setting("environment-type", "plans/environment_type"),
        "harbor": setting("harbor", "plans/harbor"),
    }


def report_inputs(run_names, ledger=(), sequential=()):
    """What the report reads: the comparison, every model's import, the catalog, the
    receipt, the local runs named and their pass@k, and (for the executed report) the cost
    ledger and the sealed comparison's decision record."""
    return {
        "summary": f"{IMPORTS}/summary.json",
        "imports": [model_import(m) for m in MODELS],
        "catalog": CATALOG,
        "receipt": RECEIPT,
        "runs": [f"{run_dir(name)}/summary.json" for name in run_names],
        "pass_at_k": [pass_at_k_file(name) for name in run_names],
        "ledger": list(ledger),
        "sequential": list(sequential),
    }


def report_settings_digest():
    """The settings the report shows (its provenance digest): not plans or selections."""
    return canonical_digest(
        {
            "release": config["release"],
            "models": {m: config["models"][m] for m in MODELS},
            "import": dict(config["import"], models=MODELS),
            "runs": config["runs"],
            # the history's switch only when on: a report without one keeps its digest
            "report": {k: v for k, v in config["report"].items() if k != "history" or v},
            "anatomy": config["anatomy"],
            "task_table": config["task_table"],
            **({"upgrade": config["upgrade"]} if COMPARISONS else {}),
        }
    )


# --- execution (opt-in) -------------------------------------------------------------------
EXECUTE_STARTED = time.time()
EXECUTE = config["execute"]
EXECUTE_ITEMS = {
    (item["selection"], plan_label(item["agent"], item.get("model"))): item
    for item in EXECUTE["items"]
}
EXECUTED_SELECTIONS = sorted({selection for selection, _ in EXECUTE_ITEMS})
# the upstream per-task timeouts and the set-up margin, in minutes
TRIAL_RUNTIME_MIN = -(
    -(harbor.AGENT_TIMEOUT_S + harbor.VERIFIER_TIMEOUT_S + EXECUTE["setup_margin_s"]) // 60
)
# the live cost ledger the trial jobs share (beside the Harbor jobs folder, on the shared file
# system), and the artifact a rule writes from it
LIVE_LEDGER = f"{JOBS_DIR}.ledger.jsonl"
COST_LEDGER = f"{REV}/execute/cost-ledger.json"
# the live status page each trial job rewrites as it ends (afbench.execution.watch), beside the receipts
EXECUTED = f"{REV}/execute"
STATUS_PAGE = f"{EXECUTED}/status.html"
# the exporter's output for a selection, which imported Harbor runs are certified against:
# only where a checkout at the pinned revision is configured
CHECKOUT = DEMO_CHECKOUT if DEMO else config["plans"]["repository_dir"]


def task_checksums(selection):
    return [f"{REV}/tasks/checksums/{selection}.json"] if CHECKOUT else []


def provider_of(item):
    return None if item.get("model") is None else item["model"].split("/", 1)[0]


PROVIDERS = sorted({p for p in map(provider_of, EXECUTE_ITEMS.values()) if p})
for provider in PROVIDERS:
    # a global resource: at most this many model-API trials of one provider at once
    workflow.register_resource(f"api_{provider}", EXECUTE["api_jobs_per_provider"])


def provider_resources():
    def uses(provider):
        return lambda w: int(provider_of(EXECUTE_ITEMS[(w.selection, w.label)]) == provider)

    return {f"api_{provider}": uses(provider) for provider in PROVIDERS}


def written_plan(selection, label):
    """A written plan (write_plan is a checkpoint: this waits for it)."""
    plan = checkpoints.write_plan.get(selection=selection, label=label).output[0]
    return json.loads(Path(plan).read_text())


def planned_tasks(selection, label):
    return [task["task_id"] for task in written_plan(selection, label)["tasks"]]


def item_tasks(selection, label):
    """The tasks an execute item runs: its plan's, or for an upgrade item only those the
    upgrade plan reruns."""
    tasks = planned_tasks(selection, label)
    if (selection, label) in UPGRADE_ITEMS:
        return rerun_tasks(tasks)
    return tasks


def executed_receipts(selection):
    """The receipts of the selection's trials: every task and attempt of each item (of an
    upgrade item, the reruns), and those the sealed comparison's steps ran."""
    receipts = [
        trial_receipt(sel, label, task, attempt)
        for (sel, label) in EXECUTE_ITEMS
        if sel == selection and (sel, label) not in BATCHED.values()
        for task in item_tasks(sel, label)
        for attempt in range(1, EXECUTE["attempts"] + 1)
    ]
    if BATCHED and BATCHED["a"][0] == selection:
        receipts += comparison_receipts()
    return receipts


def all_executed_receipts(wildcards=None):
    return [r for selection in EXECUTED_SELECTIONS for r in executed_receipts(selection)]


def refuse(reason):
    """A refusal as one line. Snakemake reports any exception an input function raises, a
    WorkflowError too, inside its InputFunctionException and Traceback; SystemExit passes
    through it, and no lock is held while the DAG is built."""
    logger.error(f"afbench: refused: {reason}")
    raise SystemExit(1)


def execute_guard(wildcards):
    """Money is never spent by accident: checked (afbench.execution.approval) when `execute` is asked
    for, before any trial starts; prints the trials, the worst-case cost, the difference the
    run can detect, what the live ledger has spent and holds, and the trials still running
    elsewhere."""
    if len(EXECUTE_ITEMS) != len(EXECUTE["items"]):
        refuse(
            "execute.items: a plan item listed twice (an item with upgrade: true and one "
            "without are the same plan item: list it once)"
        )
    try:
        check_items(
            list(EXECUTE_ITEMS),
            list(PLAN_ITEMS),
            {key: item["agent"] for key, item in EXECUTE_ITEMS.items()},
            config["release"],
            EXECUTE["allow_model_agents"],
            EXECUTE["max_cost_usd"],
        )
    except AfbenchError as error:
        refuse(error)
    analysis_plan = sealed_comparison()
    sealed_runs()
    plain = [key for key in EXECUTE_ITEMS if key not in BATCHED.values()]
    attempts = EXECUTE["attempts"]
    try:
        trials = planned_trials({key: item_plan(*key) for key in plain}, attempts)
        if BATCHED:
            sides = {side: written_plan(*key) for side, key in BATCHED.items()}
            trials += comparison_trials(analysis_plan, sides, attempts)
    except IncompleteCheckpointException:
        if all(Path(f"{REV}/plans/{s}/{label}.json").exists() for s, label in EXECUTE_ITEMS):
            raise  # written already: judged once Snakemake has checked them, not before
        # the plans are not written yet: judge the run by what the config will plan, so a
        # refusal comes before anything runs (and a dry run shows the cost); a real run says
        # its summary once, when the plans are written
        sizes = {
            name: selection_size(criteria, config["release"]["expected_counts"]["tasks"])
            for name, criteria in config["selections"].items()
        }
        agents = {key: EXECUTE_ITEMS[key]["agent"] for key in plain}
        trials = None if UPGRADE_ITEMS else unplanned_trials(agents, sizes, attempts)
        if trials is not None:
            if BATCHED:
                trials += comparison_trials(analysis_plan, {"a": None, "b": None}, attempts)
            approve_or_refuse(trials, None, say=workflow.dryrun)
        raise
    approve_or_refuse(trials, partial_rounds_of_run() if EXECUTE["partial"] else None)
    if BATCHED:
        return [*all_executed_receipts(), SEQUENTIAL_DECISION]
    return all_executed_receipts()


GUARD_SAID = []


def approve_or_refuse(trials, rounds, say=True):
    """The guard's summary, said once per run (Snakemake evaluates the guard again each time
    it updates the DAG), and its refusal, if any."""
    if GUARD_SAID:
        return
    try:
        lines, refusal = approve(
            trials,
            config["release"],
            EXECUTE["max_cost_usd"],
            Path(LIVE_LEDGER),
            cap_usd=EXECUTE["trial_cap_usd"],
            partial=EXECUTE["partial"],
            rounds=rounds,
            close_dead=say and not workflow.dryrun,
            sequential=bool(BATCHED),
        )
    except AfbenchError as error:
        refuse(error)
    planned = not any(t["job_name"] is None for t in trials)
    if refusal or say:
        for line in [*lines, *comparison_lines(), *(upgrade_lines() if planned else [])]:
            logger.info(line)
    if refusal:
        refuse(refusal)
    if rounds is not None or planned:
        GUARD_SAID.append(True)  # the plans' own count: said, and never again


PARTIAL_ROUNDS = {}


def partial_rounds_of_run():
    """Each executed (selection, task)'s round in a partial run (afbench.execution.approval.partial_rounds),
    from the written plans and the catalog's sources (read once)."""
    if not PARTIAL_ROUNDS:
        PARTIAL_ROUNDS.update(_partial_rounds())
    return PARTIAL_ROUNDS


def _partial_rounds():
    catalog = CATALOG_KIND.read(CATALOG)
    sources = {task["task_id"]: task["source_id"] for task in catalog["tasks"]}
    tasks, seeds = {}, {}
    for selection, label in EXECUTE_ITEMS:
        plan = written_plan(selection, label)
        tasks.setdefault(selection, [])
        tasks[selection] += [t for t in item_tasks(selection, label) if t not in tasks[selection]]
        seeds[selection] = plan["selection"]["selection_sha256"]
    return partial_rounds(tasks, sources, seeds)


def partial_round(wildcards):
    """The trial's round in a partial run, or None."""
    if not EXECUTE["partial"]:
        return None
    return partial_rounds_of_run()[(wildcards.selection, wildcards.task)]


def earlier_round_receipts(wildcards):
    """In a partial run, a trial waits for every trial of the round before its own, and runs
    only if each of them did (afbench job run-trial --earlier-receipt)."""
    if not EXECUTE["partial"]:
        return []
    rounds = partial_rounds_of_run()
    mine = rounds[(wildcards.selection, wildcards.task)]
    return [
        trial_receipt(selection, label, task, attempt)
        for (selection, label) in EXECUTE_ITEMS
        for task in item_tasks(selection, label)
        if rounds[(selection, task)] == mine - 1
        for attempt in range(1, EXECUTE["attempts"] + 1)
    ]


def tell_cost_ledger():
    """The run's last word on money, when it wrote the cost ledger: what was spent against
    the ceiling, what is held, each overshoot, and whether the ceiling stopped trials from
    starting or interrupted trials were not run again."""
    path = Path(COST_LEDGER)
    if not path.exists() or path.stat().st_mtime < EXECUTE_STARTED:
        return
    ledger = json.loads(path.read_text())
    ceiling = ledger["ceiling_usd"]
    ran = sum(t["status"] == "finished" for t in ledger["trials"])
    held = f", USD {ledger['held_usd']:g} held for interrupted trials" if ledger["held_usd"] else ""
    said = (
        f"spent USD {ledger['spent_usd']:g} on {ran} of {len(ledger['trials'])} trial(s){held}, "
        f"ceiling {'none' if ceiling is None else f'USD {ceiling:g}'} (cost ledger: {path})"
    )
    for trial in ledger["trials"]:
        if trial["overshoot_usd"]:
            logger.warning(
                f"afbench execute: overshoot: trial {trial['job_name']} spent USD "
                f"{trial['cost_usd']:g}, USD {trial['overshoot_usd']:g} over its cap USD "
                f"{trial['worst_case_usd']:g}"
                + (f" (stopped at {trial['stopped']})" if trial["stopped"] else "")
            )
    if ledger["interrupted_not_rerun"]:
        logger.warning(
            f"afbench execute: {ledger['interrupted_not_rerun']} interrupted trial(s) of an "
            "agent that may spend money not run again (execute.rerun_interrupted: true runs "
            "them; their possible spend stays held)"
        )
    if ledger["stopped"]:
        logger.warning(
            f"afbench execute: stopped at the cost ceiling: {ledger['refused']} trial(s) "
            f"not started; {said}"
        )
    else:
        logger.info(f"afbench execute: {said}")


# --- the sealed analysis plan (opt-in) --------------------------------------------------------
ANALYSIS_PLAN = f"{REV}/execute/analysis-plan.json"


def preregistered_selection():
    """The comparison's selection artifact, once config names a comparison it can seal
    (afbench.plans.preregister.plan_facts: its configurations are plan items of the selection).
    A plan sealed already is never rewritten for a changed config: Snakemake's write
    protection does not hold for root, so a config that differs from the sealed plan is
    refused here, naming each difference, before any job runs."""
    from afbench.plans.preregister import check_plan, plan_facts, read_plan

    try:
        facts = plan_facts(config)
        if Path(ANALYSIS_PLAN).exists():
            problems = check_plan(read_plan(ANALYSIS_PLAN), facts, ANALYSIS_PLAN)
            if problems:
                raise AfbenchError(
                    "the config no longer matches the sealed analysis plan, which is never "
                    "replaced (remove it to seal a new one): "
                    + "; ".join(str(problem) for problem in problems)
                )
    except AfbenchError as error:
        refuse(error)
    return selection(facts["selection"]["name"])


def run_plan_file(selection_name, label):
    return f"{REV}/execute/run-plans/{selection_name}/{label}.json"


def paid_runs():
    """The execute items whose agent may call a model, outside the sealed comparison: each is
    a paid run of one configuration, sealed on its own (rule seal_run_plan)."""
    compared = set(COMPARED.values())
    return [
        key
        for key, item in EXECUTE_ITEMS.items()
        if harbor.calls_a_model(item["agent"]) and key not in compared
    ]


def sealed_runs():
    """Every paid run has a sealed plan: a paid run of one configuration starts only under
    its plan (`snakemake preregister`), which the config still matches; checked when the DAG
    is built, before any ledger line or Harbor call. A dry run spends nothing: it says so."""
    from afbench.plans.preregister import no_run_plan, require_run_plan, run_plan
    from afbench.release.identity import identity

    for key in paid_runs():
        item, path = EXECUTE_ITEMS[key], run_plan_file(*key)
        artifact = Path(selection(key[0]))
        try:
            if not artifact.exists() or not Path(path).exists():
                raise no_run_plan(path, key[1], key[0])
            planned = run_plan(
                release=identity(config["release"]),
                selection=SELECTION_KIND.read(artifact),
                agent=item["agent"],
                model=item.get("model"),
                environment_type=config["plans"]["environment_type"],
                attempts=EXECUTE["attempts"],
                ceiling_usd=EXECUTE["max_cost_usd"],
                trial_cap_usd=EXECUTE["trial_cap_usd"],
            )
            require_run_plan(path, planned)
        except AfbenchError as error:
            if not workflow.dryrun:
                refuse(error)
            logger.warning(f"afbench execute: a real run is refused: {error}")


def preregistered():
    """What `snakemake preregister` seals: the comparison's plan, when config names one, and
    each paid run's."""
    targets = [ANALYSIS_PLAN] if config["preregister"]["comparison"] is not None else []
    return targets + [run_plan_file(*key) for key in paid_runs()]


def paid_run_flag(wildcards, key):
    item = EXECUTE_ITEMS[(wildcards.selection, wildcards.label)]
    return option(key, item.get(key))


def comparison_flag(side, key):
    """Configuration `side`'s agent or model as `--{side}-{key}=value`."""
    comparison = config["preregister"]["comparison"]
    return option(f"{side}-{key}", None if comparison is None else comparison[side].get(key))


# --- the sealed comparison, run batch by batch (opt-in) ---------------------------------------
SEQUENTIAL_DECISION = f"{REV}/execute/decision.json"


def sequential_step(step):
    return f"{REV}/execute/sequential/step-{step}.json"


def comparison_keys():
    """The (selection, plan label) of the preregistered comparison's configurations a and b,
    or {} when config names none."""
    comparison = config["preregister"]["comparison"]
    if comparison is None:
        return {}
    return {
        side: (comparison["selection"], plan_label(spec["agent"], spec.get("model")))
        for side, spec in ((side, comparison[side]) for side in ("a", "b"))
    }


# the comparison's execute items, when execute.items runs both (then its trials follow the
# sealed plan)
COMPARISON_KEYS = comparison_keys()
COMPARED = COMPARISON_KEYS if set(COMPARISON_KEYS.values()) <= set(EXECUTE_ITEMS) else {}
# a sequential comparison runs in batches (the checkpoint decide_step); a fixed-n one runs
# every task, as any item does
BATCHED = COMPARED if config["preregister"]["stopping"] == "sequential" else {}
SEALED = {}


def sealed_comparison():
    """The sealed analysis plan of the comparison execute runs (None when it runs none), read
    here when the DAG is built and never declared as an input: Snakemake would otherwise seal
    a missing plan itself, or try to seal again a plan whose rule changed. A paid comparison
    starts only under a plan sealed before it (`snakemake preregister`) that the config still
    matches (afbench.plans.preregister.require_plan: each differing field named)."""
    from afbench.plans.preregister import plan_facts, read_plan, require_plan

    if "plan" in SEALED:
        return SEALED["plan"]
    comparison = config["preregister"]["comparison"]
    try:
        if comparison is None:
            if Path(ANALYSIS_PLAN).exists():
                primary = read_plan(ANALYSIS_PLAN)["primary_comparison"]
                keys = {(primary["selection"], primary[side]) for side in ("a", "b")}
                if keys <= set(EXECUTE_ITEMS):
                    raise AfbenchError(
                        "execute.items runs the comparison of the sealed analysis plan, but the "
                        "config no longer names it",
                        file=ANALYSIS_PLAN,
                        field="preregister.comparison",
                        expected=f"{primary['a']} against {primary['b']} on "
                        f"{primary['selection']}, as sealed",
                        found="none",
                    )
            SEALED["plan"] = None
            return None
        keys = comparison_keys()
        ran = [side for side, key in keys.items() if key in EXECUTE_ITEMS]
        if not ran:
            SEALED["plan"] = None
            return None
        if len(ran) == 1:
            raise AfbenchError(
                f"execute.items runs configuration {ran[0]} of the preregistered comparison "
                "without the other: a comparison runs both, batch by batch",
                field="execute.items",
                expected=" and ".join(f"{s}/{label}" for s, label in keys.values()),
                found="/".join(keys[ran[0]]),
            )
        if BATCHED and EXECUTE["partial"]:
            raise AfbenchError(
                "a sequential comparison stops at the ceiling batch by batch already: "
                "execute.partial does not apply to it",
                field="execute.partial",
                expected="false",
                found="true",
            )
        artifact = Path(selection(comparison["selection"]))
        chosen = SELECTION_KIND.read(artifact) if artifact.exists() else None
        facts = plan_facts(config, chosen)
    except AfbenchError as error:
        refuse(error)
    try:
        SEALED["plan"] = require_plan(ANALYSIS_PLAN, facts)
    except AfbenchError as error:
        if not Path(ANALYSIS_PLAN).exists():
            refuse(error)
        refuse(
            "the config no longer matches the sealed analysis plan, so the comparison does not "
            "start (the plan is never replaced: remove it to seal a new one): "
            + "; ".join(str(problem) for problem in error.problems)
        )
    return SEALED["plan"]


def analysis_plan_flags(selection_name):
    """For the selection of the sealed comparison execute runs, the plan its import is checked
    against (read, never declared: sealed_comparison), with the seal the run was approved
    against; else nothing."""
    if not COMPARED or COMPARED["a"][0] != selection_name:
        return ""
    plan = sealed_comparison()
    return " ".join(
        [option("analysis-plan", ANALYSIS_PLAN), option("plan-sha256", plan["sealed_sha256"])]
    )


def comparison_lines():
    """What the guard says of the sealed comparison execute runs."""
    plan = SEALED.get("plan")
    if not COMPARED or plan is None:
        return []
    stopping, primary = plan["stopping_rule"], plan["primary_comparison"]
    how = (
        f"in batches of {stopping['batch_tasks']} tasks of its order to at most {stopping['horizon']}, "
        "deciding after each batch"
        if stopping["kind"] == "sequential"
        else f"all {stopping['horizon']} tasks, tested once at the end"
    )
    if stopping["kind"] == "sequential":
        from afbench.execution.sequential import RERUN_THEN_EXCLUDE, error_rule

        attempts = plan["configurations"]["a"]["attempts"]
        how += (
            f"; a trial ending in an infrastructure error runs again at the next step, up to "
            f"{attempts} attempt(s) in all, and a task still erring is left out for both"
            if error_rule(plan) == RERUN_THEN_EXCLUDE
            else "; infrastructure errors are bounds, rerun only at the horizon (a plan sealed "
            "before afbench sealed a rule for them)"
        )
    return [
        f"afbench execute: the sealed comparison {primary['a']} against {primary['b']} on "
        f"{primary['selection']} (analysis plan sealed {plan['sealed_sha256'][:12]}, which the "
        f"config matches: confirmatory) runs {how}"
    ]


def read_step(step):
    """A step of the comparison, once its checkpoint is done: read as the artifact it is (a
    damaged one is refused by name, never followed)."""
    path = checkpoints.decide_step.get(step=step).output[0]
    try:
        run = SEQUENTIAL_RUN_KIND.read(path)
    except AfbenchError as error:
        refuse(error)
    if run.get("step") != step or not (run.get("stopped") or run.get("next_trials")):
        refuse(
            f"{path}: not step {step} of a comparison that stopped or names its next trials: "
            "remove it to decide the step again"
        )
    return run


def comparison_run():
    """The comparison's steps so far, each read as its checkpoint completes, up to the first
    that stopped: (each step's record, the last step's number)."""
    runs, step = [], 0
    while True:
        runs.append(read_step(step))
        if runs[-1]["stopped"]:
            return runs, step
        step += 1


def step_receipts(run):
    """The receipts of the trials a step asked for next."""
    selection_name = BATCHED["a"][0]
    return [
        trial_receipt(selection_name, t["label"], t["task_id"], t["attempt"])
        for t in run["next_trials"]
    ]


def comparison_receipts_before(step):
    """The receipts of every trial the steps before `step` asked for."""
    return [receipt for earlier in range(step) for receipt in step_receipts(read_step(earlier))]


def comparison_receipts():
    """The receipts of every trial the comparison ran, to the step where it stopped."""
    runs, _ = comparison_run()
    return [receipt for run in runs for receipt in step_receipts(run)]


def comparison_plans(wildcards=None):
    """The Harbor plans of the comparison's two configurations."""
    return [f"{REV}/plans/{selection}/{label}.json" for selection, label in BATCHED.values()]


def status_params():
    """What a trial job's status page is drawn from: the receipts' folder, the sealed run plans
    (each paid run's trials, to count those left) and the sealed comparison's steps. Untracked:
    the page is no part of the trial's receipt, so a change here reruns no trial."""
    flags = [
        option("status-page", STATUS_PAGE),
        option("status-receipts", EXECUTED),
        options("status-plan", [run_plan_file(*key) for key in paid_runs()]),
        option("status-steps", f"{EXECUTED}/sequential" if BATCHED else None),
    ]
    return {"status": Untracked(" ".join(f for f in flags if f))}


def decide_params():
    """What a step of the comparison is decided with: the sealed plan (its path and the seal
    the run was approved against; it holds the attempts a trial may take), the receipts so
    far, and the ceiling the next trials must fit under (the live ledger, at each trial's
    cap)."""
    return {
        "analysis_plan": option("analysis-plan", ANALYSIS_PLAN),
        "sealed": lambda w: option("plan-sha256", sealed_comparison()["sealed_sha256"]),
        "harbor_plans": lambda w, input: options("harbor-plan", input.harbor_plans),
        "receipts": lambda w, input: options("receipt", input.receipts),
        "ledger": option("ledger", LIVE_LEDGER),
        "ceiling": setting("max-cost-usd", "execute/max_cost_usd"),
        "cap": setting("trial-cap-usd", "execute/trial_cap_usd"),
    }


def last_step(wildcards=None):
    return sequential_step(comparison_run()[1])


def tell_decision():
    """The comparison's last word, when this run wrote its decision record."""
    from afbench.execution.sequential import run_line

    path = Path(SEQUENTIAL_DECISION)
    if path.exists() and path.stat().st_mtime >= EXECUTE_STARTED:
        logger.info(run_line(json.loads(path.read_text())))


# --- an upgrade, as its plan says (opt-in) ----------------------------------------------------
UPGRADE_ITEMS = {key for key, item in EXECUTE_ITEMS.items() if item.get("upgrade")}


def upgrade_plan_file():
    """The upgrade plan (snakemake diff), once written: an execute item with `upgrade: true`
    runs only the tasks it reruns."""
    if PREVIOUS is None:
        refuse(
            "execute.items: an item with upgrade: true follows the upgrade plan, which needs "
            "the previous release (upgrade.previous_revision)"
        )
    return checkpoints.plan_upgrade.get().output[0]


def upgrade_actions(tasks):
    """`tasks` by what the upgrade plan does with them (afbench.upgrade.diff.tasks_by_action)."""
    try:
        plan = UPGRADE_PLAN_KIND.read(upgrade_plan_file())
        return tasks_by_action(plan, tasks, REVISION, PREVIOUS)
    except AfbenchError as error:
        refuse(error)


def rerun_tasks(tasks):
    return upgrade_actions(tasks)["rerun"]


def item_plan(selection, label):
    """A written plan, for an upgrade item only with the tasks the upgrade plan reruns."""
    plan = written_plan(selection, label)
    if (selection, label) not in UPGRADE_ITEMS:
        return plan
    keep = set(rerun_tasks([task["task_id"] for task in plan["tasks"]]))
    return {**plan, "tasks": [task for task in plan["tasks"] if task["task_id"] in keep]}


def upgrade_lines():
    """What the guard says of each execute item that follows the upgrade plan."""
    lines = []
    for sel, label in sorted(UPGRADE_ITEMS):
        actions = upgrade_actions(planned_tasks(sel, label))
        carried = len(reused_receipts(sel))
        lines.append(
            f"afbench execute: {sel}/{label} follows the upgrade plan ({UPGRADE_PLAN}): "
            f"reruns {len(actions['rerun'])} task(s); reuses {len(actions['reuse'])} "
            f"(carried over: {carried} earlier result(s) of the previous release)"
            + (
                f"; {len(actions['regrade'])} to regrade are neither run nor carried over "
                "(Harbor 0.22.0 cannot regrade a trial)"
                if actions["regrade"]
                else ""
            )
        )
    return lines


def reused_receipts(selection):
    """The previous release's receipts of the selection's upgrade items, for the tasks the
    upgrade plan reuses (and only those), where that release's execute wrote them."""
    found = []
    for sel, label in sorted(UPGRADE_ITEMS):
        if sel != selection:
            continue
        for task in upgrade_actions(planned_tasks(sel, label))["reuse"]:
            for attempt in range(1, EXECUTE["attempts"] + 1):
                path = f"{PREVIOUS_REV}/execute/{sel}/{label}/{task}/attempt-{attempt}.json"
                if Path(path).is_file():
                    found.append(path)
    return found
