# Shared helpers: artifact paths come from the afbench package, so the CLI and the rules agree.
# Each job gets only the slice of config it depends on, as JSON in params, so a config change
# reruns exactly the jobs whose slice changed.
import json
import re
import sys
from pathlib import Path
from shlex import quote as shlex_quote

from snakemake.logging import logger

sys.path.insert(0, str(Path(workflow.basedir).parent / "scripts"))

from afbench import paths as P
from afbench.paths import plan_label
from afbench.config import (
    pinned_files,
    report_slice,
    revision_dir,
    selected_models,
    unpinned_models,
)

REV = str(revision_dir(config))
_console_script = Path(sys.executable).with_name("afbench")
AFBENCH = (
    str(_console_script) if _console_script.exists() else f"{sys.executable} -m afbench.cli"
)
IMPORTS = str(
    P.imports_dir(
        config, config["import"]["source_condition"], config["import"]["budget_usd"]
    )
)
MODELS = selected_models(config)
PLAN_ITEMS = {
    (item["selection"], plan_label(item["agent"], item.get("model"))): item
    for item in config["plans"]["items"]
}

for slug in unpinned_models(config):
    logger.warning(
        f"afbench: model '{slug}' has no SHA-256 pin in config: skipped "
        f"(supply models.{slug}.sha256 to fetch and import it)"
    )


def as_json(data):
    return json.dumps(data, sort_keys=True)


def base_slice(**extra):
    """results_dir and the release identity: what every job needs."""
    return {"results_dir": config["results_dir"], "release": config["release"], **extra}


def manifest_files():
    return {key: config["files"][key] for key in ("manifest", "sources")}


def release_path(rel):
    return str(P.release_file(config, rel))


def demo_checkout():
    """The demo's git repository is built from resources/ before anything is fetched."""
    return [config["source"]["checkout"]] if "demo" in config else []


def fetch_slice(rel):
    for spec in pinned_files(config):
        if spec.path == rel:
            files = {spec.key: config["files"][spec.key]} if spec.kind != "results" else {}
            models = {spec.key: config["models"][spec.key]} if spec.kind == "results" else {}
            release = {k: config["release"][k] for k in ("repository", "revision")}
            return spec.key, as_json(
                {
                    "results_dir": config["results_dir"],
                    "release": release,
                    "source": config["source"],
                    "files": files,
                    "models": models,
                }
            )
    raise ValueError(f"not a pinned release file: {rel}")


def model_release_paths(models):
    return [release_path(config["models"][m]["path"]) for m in models]


def selection_slice(name):
    """The one configured selection a job reads, or none if config lacks it (then the job's
    selection input is missing and Snakemake says so)."""
    selections = config["selections"]
    return {name: selections[name]} if name in selections else {}


def selection_path(name):
    return str(P.selection(config, name))


def plan_paths():
    return [str(P.plan(config, sel, label)) for sel, label in PLAN_ITEMS]


def run_outputs(name):
    root = P.run_dir(config, name)
    return [str(root / f) for f in ("summary.json", "outcomes.csv", "attempts.csv")]


def report_figures():
    names = ["leaderboard", "cost_success", "per_source"]
    if len(MODELS) > 1:
        names.append("paired")
    return [str(P.report_dir(config) / "figures" / f"{n}.svg") for n in names]


def stage_targets():
    targets = {
        "fetch": [str(P.receipt(config))],
        "tasks": [str(P.catalog(config))] + [selection_path(n) for n in config["selections"]],
        "plans": plan_paths(),
        "imports": [f"{IMPORTS}/summary.json", f"{IMPORTS}/leaderboard.csv"],
        "runs": [f for name in config["runs"] for f in run_outputs(name)],
        "report": [],
    }
    if config["report"]["enabled"]:
        targets["report"] = [
            str(P.report_dir(config) / "index.html"),
            str(P.report_dir(config) / "analysis.json"),
        ] + report_figures()
    return targets


def all_artifacts():
    return [f for files in stage_targets().values() for f in files]


def all_targets():
    return all_artifacts() + [str(P.audit(config))]


def plan_slice(w):
    item = PLAN_ITEMS[(w.selection, w.label)]
    plans = dict(config["plans"], items=[item])
    if plans["repository_dir"]:
        plans["repository_dir"] = str(Path(plans["repository_dir"]).resolve())
    return as_json(
        base_slice(
            files=manifest_files(),
            models={},
            selections=selection_slice(w.selection),
            plans=plans,
        )
    )


def import_slice(models, **extra):
    return as_json(
        base_slice(
            files=manifest_files(),
            models={m: config["models"][m] for m in models},
            columns=config["columns"],
            **extra,
        )
    )
