# The one place that names artifact paths under results/<revision>/, and the settings each
# job's command receives. Rules chain through rules.<name>.output; a job's command gets its
# {input}, {output}, {log} and single settings, so a config change reruns exactly the jobs
# whose settings changed.
import hashlib
import json
import re
from pathlib import Path
from shlex import quote

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from afbench.config import selected_models
from afbench.errors import AfbenchError
from afbench.execute import MODEL_FREE_AGENTS
from afbench.plan import plan_label

# With --use-conda every job runs in this environment; its post-deploy script installs the
# checkout's afbench, which the rules call. Without it, the active environment's afbench.
AFBENCH_ENV = "../envs/afbench.yaml"
REVISION = config["release"]["revision"]
REV = f"{config['results_dir']}/{REVISION}"
RELEASE = f"{REV}/release"
LOGS = f"{REV}/logs"
IMPORT = config["import"]
IMPORTS = f"{REV}/imports/{IMPORT['source_condition']}/budget-{IMPORT['budget_usd']:g}"
REPORT = f"{REV}/report"
DEMO = "demo" in config


def pinned(files):
    return {key: spec for key, spec in files.items() if spec["sha256"]}


FILES = {**pinned(config["files"]), **pinned(config["models"])}  # key -> {path, sha256}
BY_PATH = {spec["path"]: key for key, spec in FILES.items()}
UNPINNED = {slug: spec for slug, spec in config["models"].items() if not spec["sha256"]}

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


# --- artifact paths -------------------------------------------------------------------------
def release_file(key):
    return f"{RELEASE}/{FILES[key]['path']}"


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


def trial_receipt(selection, label, task, attempt):
    return f"{REV}/execute/{selection}/{label}/{task}/attempt-{attempt}.json"


DEMO_CHECKOUT = config["source"]["checkout"] if DEMO else []


def stage_targets():
    targets = {
        "fetch": [RECEIPT],
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


# --- settings as command-line flags ---------------------------------------------------------
def flags(name, values):
    """`--name v` for each value, each quoted for the shell."""
    return " ".join(f"--{name} {quote(str(v))}" for v in values)


def digest(data):
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def source_flags(location=None):
    """The source settings; `location` overrides config's (the demo checkout a job declares
    as input is read where Snakemake staged it)."""
    source, release = config["source"], config["release"]
    key = {"https": "base_url", "git": "checkout", "dir": "mirror"}[source["kind"]]
    values = {
        "source-kind": source["kind"],
        "source-location": location or source[key],
        "repository": release["repository"],
        "revision": release["revision"],
        "connect-timeout-s": source["connect_timeout_s"],
        "read-timeout-s": source["read_timeout_s"],
        "total-timeout-s": source["total_timeout_s"],
        "retries": source["retries"],
        "backoff-factor": source["backoff_factor"],
        "max-bytes": source["max_bytes"],
    }
    return " ".join(flags(name, [value]) for name, value in values.items())


def skip_flags():
    return flags("skip", [f"{slug}={spec['path']}" for slug, spec in UNPINNED.items()])


def pin_flags():
    pins = [f"{key}={spec['path']}@{spec['sha256']}" for key, spec in FILES.items()]
    return f"{flags('pin', pins)} {skip_flags()}"


def identity_flags():
    release = config["release"]
    images = [f"{i['role']}={i['reference'] or ''}@{i['digest'] or ''}" for i in release["images"]]
    values = {
        "release-name": release["name"],
        "synthetic": str(release["synthetic"]).lower(),
        "lean": release["lean"],
        "mathlib": release["mathlib"],
        "harbor-version": release["harbor"],
        "nominal-budget-usd": release["nominal_budget_usd"],
    }
    named = " ".join(flags(n, [v]) for n, v in values.items())
    return f"{named} {flags('image', images)}"


def column_flags(kind, flag=None):
    pairs = [f"{ours}={theirs}" for ours, theirs in config["columns"][kind].items()]
    return flags(flag or f"{kind}-column", pairs)


def discover_column_flags():
    pairs = [
        f"{kind}.{ours}={theirs}"
        for kind, mapping in config["columns"].items()
        for ours, theirs in mapping.items()
    ]
    return flags("column", pairs)


def display_name_flags():
    return flags(
        "display-name",
        [f"{s}={m['display_name']}" for s, m in config["models"].items()],
    )


def expected_counts():
    counts = config["release"]["expected_counts"]
    return f"{counts['tasks']},{counts['sources']},{counts['obligations']}"


def selection_flags(name):
    criteria = config["selections"][name]
    limit = [] if criteria["limit"] is None else [criteria["limit"]]
    return " ".join(
        [
            flags("task", criteria["tasks"]),
            flags("book", criteria["sources"]),
            flags("limit", limit),
        ]
    )


def absolute(path):
    return str(Path(path).resolve()) if path else ""


def plan_item(w):
    return PLAN_ITEMS[(w.selection, w.label)]


def report_inputs(run_names):
    """What the report reads: the comparison, every model's import, the catalog, the
    receipt and the local runs named."""
    return {
        "summary": f"{IMPORTS}/summary.json",
        "imports": [model_import(m) for m in MODELS],
        "catalog": CATALOG,
        "receipt": RECEIPT,
        "runs": [f"{run_dir(name)}/summary.json" for name in run_names],
    }


def report_settings_digest():
    """The settings the report shows (its provenance digest): not plans or selections."""
    return digest(
        {
            "release": config["release"],
            "models": {m: config["models"][m] for m in MODELS},
            "import": dict(IMPORT, models=MODELS),
            "runs": config["runs"],
            "report": config["report"],
        }
    )


# --- execution (opt-in) -------------------------------------------------------------------
EXECUTE = config["execute"]
EXECUTE_ITEMS = {
    (item["selection"], plan_label(item["agent"], item.get("model"))): item
    for item in EXECUTE["items"]
}
EXECUTED_SELECTIONS = sorted({selection for selection, _ in EXECUTE_ITEMS})
# the upstream per-task timeouts (agent 86,400 s, verifier 6,000 s) and the set-up margin
TRIAL_RUNTIME_MIN = -(-(86_400 + 6_000 + EXECUTE["setup_margin_s"]) // 60)


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


def planned_tasks(selection, label):
    """The tasks of a written plan (write_plan is a checkpoint: this waits for it)."""
    plan = checkpoints.write_plan.get(selection=selection, label=label).output[0]
    return [task["task_id"] for task in json.loads(Path(plan).read_text())["tasks"]]


def executed_receipts(selection):
    return [
        trial_receipt(sel, label, task, attempt)
        for (sel, label) in EXECUTE_ITEMS
        if sel == selection
        for task in planned_tasks(sel, label)
        for attempt in range(1, EXECUTE["attempts"] + 1)
    ]


def execute_guard(wildcards):
    """Money is never spent by accident: checked when `execute` is asked for, before any
    trial starts; prints the number of trials and the worst-case cost."""
    if not EXECUTE_ITEMS:
        raise ValueError("execute: no items configured (execute.items names plan items)")
    unknown = [key for key in EXECUTE_ITEMS if key not in PLAN_ITEMS]
    if unknown:
        raise ValueError(f"execute.items: not a configured plan item (plans.items): {unknown}")
    release = config["release"]
    if not release["synthetic"] and not all(i["digest"] for i in release["images"]):
        raise ValueError(
            "execute: a formal run on the official release is refused while the image "
            "digests are unpinned (release.images[].digest): the trials could not be tied to "
            "the images the authors used"
        )
    paid = [item for item in EXECUTE_ITEMS.values() if item["agent"] not in MODEL_FREE_AGENTS]
    if paid and not EXECUTE["allow_model_agents"]:
        raise ValueError(
            f"execute: agent '{paid[0]['agent']}' calls a paid model; refused without "
            f"execute.allow_model_agents: true and a ceiling execute.max_cost_usd"
        )
    trials = {key: len(planned_tasks(*key)) * EXECUTE["attempts"] for key in EXECUTE_ITEMS}
    paid_trials = sum(trials[key] for key, item in EXECUTE_ITEMS.items() if item in paid)
    worst = paid_trials * release["nominal_budget_usd"]
    logger.info(
        f"afbench execute: {sum(trials.values())} trial(s), {paid_trials} with a model agent; "
        f"worst-case cost USD {worst:g} ({paid_trials} x the nominal USD "
        f"{release['nominal_budget_usd']:g} per task)"
    )
    ceiling = EXECUTE["max_cost_usd"]
    if paid and (ceiling is None or worst > ceiling):
        raise ValueError(
            f"execute: worst-case cost USD {worst:g} is over the ceiling "
            f"execute.max_cost_usd = {ceiling}; nothing was started"
        )
    return [
        receipt for selection in EXECUTED_SELECTIONS for receipt in executed_receipts(selection)
    ]
