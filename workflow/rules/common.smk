# The one place that names artifact paths under results/<revision>/, and the one way a rule
# hands its command a setting: `setting(flag, dpath)`, the config value at `dpath` (Snakemake's
# lookup) as `--flag=value`, quoted for the shell. A setting reaches only the jobs whose rules
# pass it, so a config change reruns exactly the jobs whose settings changed.
import json
import re
import time
from pathlib import Path
from shlex import quote

from snakemake.exceptions import IncompleteCheckpointException, WorkflowError
from snakemake.logging import logger

from afbench import harbor
from afbench.config import (
    SOURCE_LOCATION,
    TRANSPORT_SETTINGS,
    config_digest,
    selected_models,
)
from afbench.errors import AfbenchError
from afbench.execute import (
    approve,
    check_items,
    planned_trials,
    selection_size,
    unplanned_trials,
)
from afbench.fsutil import canonical_digest
from afbench.plan import plan_label

# With --use-conda every job runs in this environment; its post-deploy script installs the
# checkout's afbench, which the rules call. Without it, the active environment's afbench.
AFBENCH_ENV = "../envs/afbench.yaml"
REVISION = config["release"]["revision"]
REV = f"{config['results_dir']}/{REVISION}"
RELEASE = f"{REV}/release"
LOGS = f"{REV}/logs"
IMPORTS = (
    f"{REV}/imports/{config['import']['source_condition']}/"
    f"budget-{config['release']['nominal_budget_usd']:g}"
)
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


def setting(flag, dpath):
    """The config setting at `dpath` as `--flag=value`; a dpath with {wildcards} gives the
    rule a function of the job's wildcards."""
    value = lookup(dpath=dpath, within=config)
    if callable(value):
        return lambda wildcards: option(flag, value(wildcards))
    return option(flag, value)


class Untracked:
    """Flags handed to a command that Snakemake does not record: it reruns a job for changed
    params only when they are plain values (text, numbers, lists), so changing these reruns
    nothing. Only for settings that cannot change an output: how a file is downloaded."""

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
    MODELS = selected_models(config)  # the same rule as the CLI's (afbench.config)
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


def report_figures():
    paired = ["paired"] if len(MODELS) > 1 else []
    names = ["leaderboard", "cost_success", "per_source", *paired]
    return [f"{REPORT}/figures/{name}.svg" for name in names]


ARTIFACT_MANIFEST = f"{REV}/artifacts.json"
POWER_PLAN = f"{REV}/power.json"


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
        "runs": [f"{run_dir(n)}/{f}" for n in config["runs"] for f in RUN_FILES],
        "report": [],
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


JOBS_DIR = absolute(f"{REV}/{config['plans']['jobs_dir']}")


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


def report_inputs(run_names, ledger=()):
    """What the report reads: the comparison, every model's import, the catalog, the
    receipt, the local runs named and (for the executed report) the cost ledger."""
    return {
        "summary": f"{IMPORTS}/summary.json",
        "imports": [model_import(m) for m in MODELS],
        "catalog": CATALOG,
        "receipt": RECEIPT,
        "runs": [f"{run_dir(name)}/summary.json" for name in run_names],
        "ledger": list(ledger),
    }


def report_settings_digest():
    """The settings the report shows (its provenance digest): not plans or selections."""
    return canonical_digest(
        {
            "release": config["release"],
            "models": {m: config["models"][m] for m in MODELS},
            "import": dict(config["import"], models=MODELS),
            "runs": config["runs"],
            "report": config["report"],
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


def executed_receipts(selection):
    return [
        trial_receipt(sel, label, task, attempt)
        for (sel, label) in EXECUTE_ITEMS
        if sel == selection
        for task in planned_tasks(sel, label)
        for attempt in range(1, EXECUTE["attempts"] + 1)
    ]


def all_executed_receipts(wildcards=None):
    return [r for selection in EXECUTED_SELECTIONS for r in executed_receipts(selection)]


def refuse(reason):
    """A refusal as one line. Snakemake reports any exception an input function raises, a
    WorkflowError too, inside its InputFunctionException and Traceback; SystemExit passes
    through it, and no lock is held while the DAG is built."""
    logger.error(f"afbench: refused: {reason}")
    raise SystemExit(1)


def execute_guard(wildcards):
    """Money is never spent by accident: checked (afbench.execute) when `execute` is asked
    for, before any trial starts; prints the trials, the worst-case cost, the difference the
    run can detect, what the live ledger has spent and the trials still running elsewhere."""
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
    try:
        trials = planned_trials(
            {key: written_plan(*key) for key in EXECUTE_ITEMS}, EXECUTE["attempts"]
        )
    except IncompleteCheckpointException:
        # the plans are not written yet: judge the run by what the config will plan, so a
        # refusal comes before anything runs (and a dry run shows the cost)
        sizes = {
            name: selection_size(criteria, config["release"]["expected_counts"]["tasks"])
            for name, criteria in config["selections"].items()
        }
        agents = {key: item["agent"] for key, item in EXECUTE_ITEMS.items()}
        trials = unplanned_trials(agents, sizes, EXECUTE["attempts"])
        if trials is not None:
            approve_or_refuse(trials)
        raise
    approve_or_refuse(trials)
    return all_executed_receipts()


def approve_or_refuse(trials):
    lines, refusal = approve(trials, config["release"], EXECUTE["max_cost_usd"], Path(LIVE_LEDGER))
    for line in lines:
        logger.info(line)
    if refusal:
        refuse(refusal)


def tell_cost_ledger():
    """The run's last word on money, when it wrote the cost ledger: what was spent against
    the ceiling, and whether the ceiling stopped trials from starting."""
    path = Path(COST_LEDGER)
    if not path.exists() or path.stat().st_mtime < EXECUTE_STARTED:
        return
    ledger = json.loads(path.read_text())
    ceiling = ledger["ceiling_usd"]
    ran = sum(t["status"] == "finished" for t in ledger["trials"])
    said = (
        f"spent USD {ledger['spent_usd']:g} on {ran} of {len(ledger['trials'])} trial(s), "
        f"ceiling {'none' if ceiling is None else f'USD {ceiling:g}'} (cost ledger: {path})"
    )
    if ledger["stopped"]:
        logger.warning(
            f"afbench execute: stopped at the cost ceiling: {ledger['refused']} trial(s) "
            f"not started; {said}"
        )
    else:
        logger.info(f"afbench execute: {said}")
