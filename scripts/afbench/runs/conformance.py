"""A protocol-conformance certificate for every imported Harbor run: for each configuration,
what its trials ran compared with the release's protocol, check by check. Each check is
`passed`, `failed` (a departure, with its reason) or `not certified` (it did not compare every
trial: a trial without a task checksum, no trial's own config, a retry count Harbor left no
record of; with the reason). `conformant` is true only when every check passed, false when any
failed, and null ("not certified") otherwise: a check that left a trial uncompared never makes
a configuration conformant, and the certificate says for how many trials it compared the task
checksums ("compared N of M trials").

The protocol (the release's plans, run as written): the upstream per-task timeouts unchanged
(no timeout multiplier for the agent or the verifier, no timeout override or cap);
verification on, with the task's own verifier (no custom verifier, verifier kwargs or
verifier environment) and not install-only; nothing the task does not give the agent (no
agent kwargs, extra instructions, skills, MCP servers, loaded or resumed trajectory, simulated
user, or extra allowed hosts); the task's own environment (a container environment that runs
the task's image as written: PROTOCOL_ENVIRONMENTS; no custom environment, environment kwargs,
mounts, extra compose files, resource overrides or changed enforcement); every trial's task
exactly the exporter's output for that task (Harbor's task_checksum against the checksum of a
fresh export: conformance.exported_checksums), and, when the release pins image digests, each
pinned digest named by that exported task (its Dockerfile's FROM, or a docker_image in its
task.toml). Harbor 0.22.0 records no image identity of its own, so the image check rests on
the task checksum. Setup and environment-build timeouts are left free: they change how long
the infrastructure may take, not what the agent may do. Harbor's error policy is its own (no
`override_error_policy`), and every trial ran once: Harbor's retries (a job's
`retry.max_retries`; Harbor deletes each retried attempt) are a departure from the plans'
`-k 1` without retries, named with their count and the retry shift (runs.py), whether
Harbor's job result counts them (stats.n_retries) or its job.log names them.

The settings are the configuration's (runs.py reads them with Harbor's defaults filled in:
harbor.TRIAL_SETTINGS); nothing here reads a Harbor file itself.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path, PurePosixPath

from afbench.core import harbor
from afbench.core.errors import AfbenchError
from afbench.kinds import TASK_CHECKSUMS

# container environments that build or run the task's own image, locally, with no session
# lifetime of their own below a full-budget trial (cloud sandboxes have one:
# docs/plans-and-execution.md)
PROTOCOL_ENVIRONMENTS = frozenset({"docker", "singularity"})
# the phases whose upstream timeouts the protocol keeps: the agent's and the verifier's
PROTOCOL_PHASES = ("agent_timeout_multiplier", "verifier_timeout_multiplier")
TIMEOUT_LIMITS = (
    "agent.override_timeout_sec",
    "agent.max_timeout_sec",
    "verifier.override_timeout_sec",
    "verifier.max_timeout_sec",
)
ERROR_POLICY = ("override_error_policy",)
HINTS = (
    "agent.kwargs",
    "extra_instructions",
    "extra_instruction_paths",
    "skills",
    "agent.skills",
    "agent.mcp_servers",
    "agent.load_trajectory",
    "agent.resume_trajectory",
    "user_agent",
    "agent.extra_allowed_hosts",
)
ENVIRONMENT = (
    "environment.import_path",
    "environment.kwargs",
    "environment.mounts",
    "environment.extra_docker_compose",
    "environment.extra_allowed_hosts",
    "environment.override_cpus",
    "environment.override_memory_mb",
    "environment.override_storage_mb",
    "environment.override_gpus",
    "environment.override_tpu",
    "environment.cpu_enforcement_policy",
    "environment.memory_enforcement_policy",
)
PROTOCOL_NOTE = (
    "Checked per configuration against the release's protocol: upstream per-task timeouts "
    "(no multiplier, override or cap for the agent or the verifier), verification on with the "
    "task's own verifier, no agent kwargs or other hints, the task's own environment "
    f"({' or '.join(sorted(PROTOCOL_ENVIRONMENTS))}, nothing overridden), and every trial's "
    "task checksum equal to the exporter's output for that task (with pinned image digests: "
    "named by that task), Harbor's own error policy, and every trial run once (no retries, "
    "whether Harbor's job result counts them or its job.log names them). A check that did not "
    "compare every trial is not certified, never passed."
)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _changed(settings: dict, keys: tuple[str, ...]) -> list[tuple[str, object]]:
    defaults = harbor.TRIAL_SETTINGS
    return [(k, settings[k]) for k in keys if settings.get(k, defaults[k]) != defaults[k]]


def settings_reasons(settings: dict) -> list[str]:
    """Every way a configuration's Harbor settings leave the protocol."""
    reasons = []
    for key in PROTOCOL_PHASES:
        phase, own = harbor.TIMEOUT_MULTIPLIERS[key], settings.get(key)
        effective = settings["timeout_multiplier"] if own is None else own
        if effective != 1:
            flag = "timeout_multiplier" if own is None else key
            reasons.append(
                f"changed timeout: the {phase} timeout is multiplied by {effective:g} ({flag}); "
                "the protocol keeps the upstream per-task timeouts"
            )
    for key, value in _changed(settings, TIMEOUT_LIMITS):
        reasons.append(f"changed timeout: {key} is {_shown(value)}; the protocol sets none")
    for key, value in _changed(settings, ERROR_POLICY):
        reasons.append(
            f"changed error policy: {key} is {_shown(value)}; the protocol classifies "
            "failures by Harbor's own table"
        )
    if settings["install_only"]:
        reasons.append("install only: the agent never ran and nothing was verified")
    for key, value in _changed(settings, HINTS):
        what = "agent kwargs" if key == "agent.kwargs" else "a hint"
        reasons.append(f"{what}: {key} is {_shown(value)}; the protocol gives the agent none")
    kind = settings["environment.type"]
    if kind not in PROTOCOL_ENVIRONMENTS:
        shown = kind if kind else f"custom ({settings['environment.import_path']})"
        reasons.append(
            f"environment type {shown}, not the protocol's "
            f"({' or '.join(sorted(PROTOCOL_ENVIRONMENTS))})"
        )
    for key, value in _changed(settings, ENVIRONMENT):
        if key == "environment.import_path" and not settings["environment.type"]:
            continue  # named above
        reasons.append(f"changed environment: {key} is {_shown(value)}")
    return reasons


def task_reasons(
    attempts: list[dict], exported: dict | None, pinned: list[str]
) -> tuple[list[str], dict]:
    """Every trial's task against the exporter's output for it; what was compared."""
    with_checksum = [a for a in attempts if a.get("task_checksum")]
    counts = {
        "trials": len(attempts),
        "compared": 0,
        "differ": 0,
        "without_checksum": len(attempts) - len(with_checksum),
    }
    if exported is None:
        return [
            "task checksums not certified: no exporter output for these tasks (the import "
            "was given no task checksums: set plans.repository_dir to a checkout at the "
            "pinned revision)"
        ], counts
    reasons = []
    tasks = exported["tasks"]
    for attempt in with_checksum:
        task = tasks.get(attempt["task_id"])
        counts["compared"] += 1
        if task is None:
            counts["differ"] += 1
            reasons.append(f"task {attempt['task_id']}: not among the exported tasks")
        elif task["checksum"] != attempt["task_checksum"]:
            counts["differ"] += 1
            reasons.append(
                f"task {attempt['task_id']} differs from the exporter's output (trial "
                f"{attempt['trial_name']}: task_checksum {attempt['task_checksum'][:12]}..., "
                f"the export {task['checksum'][:12]}...)"
            )
    for tid in sorted({a["task_id"] for a in with_checksum}):
        task = tasks.get(tid)
        if task is None:
            continue
        for digest in pinned:
            if not any(ref.endswith("@" + digest) for ref in task["images"]):
                reasons.append(
                    f"task {tid}: the exported task does not name the pinned image digest "
                    f"{digest} (it names {', '.join(task['images']) or 'no image'})"
                )
    return reasons, counts


def verification_reasons(attempts: list[dict]) -> list[str]:
    """How the trials were verified (each attempt's harbor.VERIFIER_SETTINGS, as runs.py
    read them): verification on, with the task's own verifier."""
    reasons = []
    disabled = [a for a in attempts if (a.get("verifier") or {}).get("disable")]
    if disabled:
        reasons.append(
            f"verification disabled (verifier.disable) for {len(disabled)} of "
            f"{len(attempts)} trial(s), e.g. {disabled[0]['trial_name']}"
        )
    defaults = harbor.VERIFIER_SETTINGS
    for key in ("import_path", "kwargs", "env"):
        changed = [
            a
            for a in attempts
            if (a.get("verifier") or {}).get(key, defaults[key]) != defaults[key]
        ]
        if changed:
            reasons.append(
                f"changed verification: verifier.{key} is "
                f"{_shown(changed[0]['verifier'][key])} for {len(changed)} trial(s)"
            )
    return reasons


def _check(failures: list[str], compared: bool, why_not: str) -> dict:
    if failures:
        return {"status": "failed", "reasons": failures}
    if not compared:
        return {"status": "not certified", "reasons": [why_not]}
    return {"status": "passed", "reasons": []}


def _uncompared(attempts: list[dict], compared: str) -> str:
    """Why the task checksums are not certified when a trial recorded none: that trial may have
    run any task, so comparing the others certifies nothing of it."""
    missing = [a for a in attempts if not a.get("task_checksum")]
    if not missing:
        return ""
    shown = missing[0]["outcome"] + (f": {missing[0]['reason']}" if missing[0]["reason"] else "")
    return (
        f"task checksums not certified: {compared}; {len(missing)} recorded no task checksum "
        f"(e.g. {missing[0]['trial_name']}, {shown}; Harbor writes it with the trial's "
        "result.json)"
    )


def _uncounted_retries(configuration: dict) -> list[str]:
    """Each job of the configuration whose own count (its result.json's stats.n_retries)
    holds retries its job.log does not name: Harbor's counter, not the log, says a trial ran
    more than once. The count is the job's, all its configurations together."""
    found = []
    for job in configuration.get("harbor_jobs") or []:
        counted, logged = job["n_retries"], job["retries_logged"]
        if counted and counted > (logged or 0):
            named = "no job.log" if logged is None else f"its job.log names {logged}"
            found.append(f"{Path(job['job_dir']).name}: stats.n_retries {counted}, {named}")
    return found


def retry_reasons(configuration: dict) -> tuple[list[str], bool, str]:
    """Harbor's retries against the protocol's single run of each trial: the departures, whether
    the count is known, and why not. A retry counted by Harbor's job result or named by its
    job.log is a departure, whichever of the two says it."""
    retries = configuration.get("retries") or {}
    allowed = retries.get("max_retries") or 0
    count = retries.get("retries") or 0
    unknown = retries.get("trials_with_unknown_retries") or 0
    uncounted = _uncounted_retries(configuration)
    if count or uncounted:
        shift = configuration.get("retry_shift")
        parts = []
        if count:
            parts.append(
                f"Harbor retried {len(retries['retried_trials'])} trial(s) {count} time(s) "
                f"(retry.max_retries {allowed}), deleting each earlier attempt"
            )
        if uncounted:
            parts.append(
                f"Harbor's job result counts retries its job.log does not name "
                f"({'; '.join(uncounted)}; retry.max_retries {allowed}): which trials ran more "
                "than once is unknown"
            )
        text = (
            "retried: "
            + "; and ".join(parts)
            + "; the protocol runs each trial once (the plans' -k 1, no retries)"
        )
        if shift:
            bounds = shift["first_attempts_only"]["success_rate_bounds"]
            upper = "?" if bounds["upper"] is None else f"{bounds['upper']:.1%}"
            retried = shift["retried"]
            once = shift["ran_once"]
            text += (
                f". Retry shift: the retried trials ended accepted "
                f"{retried['by_outcome']['accepted']} of {retried['trials']}, the trials run "
                f"once {once['by_outcome']['accepted']} of {once['trials']}; first attempts "
                f"only, the success rate lies in {bounds['lower']:.1%}..{upper}"
            )
        return [text], True, ""
    if unknown:
        return (
            [],
            False,
            f"retries not certified: Harbor may have retried {unknown} trial(s) "
            f"(retry.max_retries {allowed}) and its job.log, which alone names them, is absent",
        )
    return [], True, ""


def certify(
    configuration: dict, attempts: list[dict], exported: dict | None, release: dict
) -> dict:
    """One configuration's certificate: each check's status and reasons, and the verdict."""
    pinned = [i["digest"] for i in release["images"] if i["digest"]]
    from_trials = [a for a in attempts if a.get("settings_from", "trial") == "trial"]
    more, counts = task_reasons(attempts, exported, pinned)
    retries, retries_known, retries_unknown = retry_reasons(configuration)
    compared = f"compared {counts['compared']} of {counts['trials']} trials"
    if exported is None:
        task_check = {"status": "not certified", "reasons": more}
    else:
        task_check = _check(more, counts["without_checksum"] == 0, _uncompared(attempts, compared))
    checks = {
        "settings": _check(
            settings_reasons(configuration["settings"]),
            bool(from_trials),
            "settings not certified: no trial of this configuration recorded its own config "
            "(its settings come from the job's config.json alone)",
        ),
        "verification": _check(
            verification_reasons(from_trials),
            bool(from_trials),
            "verification not certified: no trial recorded how it was verified",
        ),
        "retries": _check(retries, retries_known, retries_unknown),
        "task_checksums": task_check,
    }
    statuses = [c["status"] for c in checks.values()]
    conformant = False if "failed" in statuses else (None if "not certified" in statuses else True)
    reasons = [r for c in checks.values() if c["status"] == "failed" for r in c["reasons"]]
    reasons += [r for c in checks.values() if c["status"] == "not certified" for r in c["reasons"]]
    return {
        "conformant": conformant,
        "status": _status(conformant),
        "reasons": reasons,
        "checks": checks,
        "task_checksums": counts,
        "compared": compared,
        "image_digests": "compared" if pinned else "not pinned by the release: not compared",
    }


def _status(conformant: bool | None) -> str:
    return {True: "conformant", False: "not conformant", None: "not certified"}[conformant]


def certify_run(summary: dict, attempts: list[dict], kind: str, exported: dict | None) -> dict:
    """The run summary with each configuration's `conformant` and `conformance`, and the
    run's own `conformant` (true only when every configuration is)."""
    if exported is not None and exported["release"]["revision"] != summary["release"]["revision"]:
        raise AfbenchError(
            "the task checksums are of another release than the run's selection",
            field="--task-checksums",
            expected=summary["release"]["revision"],
            found=exported["release"]["revision"],
        )
    configurations = []
    for configuration in summary["configurations"]:
        label = configuration["configuration"]
        if kind != "harbor":
            certificate = {
                "conformant": None,
                "status": "not checked",
                "reasons": ["verdicts: not a Harbor run, no protocol settings to compare"],
            }
        else:
            mine = [a for a in attempts if a["configuration"] == label]
            certificate = certify(configuration, mine, exported, summary["release"])
        configurations.append(
            {**configuration, "conformant": certificate["conformant"], "conformance": certificate}
        )
    flags = [c["conformant"] for c in configurations]
    conformant = False if False in flags else (None if None in flags else True)
    return {
        **summary,
        "conformant": None if kind != "harbor" else conformant,
        "certification": "not checked" if kind != "harbor" else _status(conformant),
        "protocol": PROTOCOL_NOTE if kind == "harbor" else None,
        "configurations": configurations,
    }


# --- the exporter's output -----------------------------------------------------------------------
FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)", re.IGNORECASE | re.MULTILINE)


def task_images(task_dir: Path) -> list[str]:
    """The images an exported task names: its Dockerfile's FROM lines and the docker_image of
    its task.toml's environment and verifier environment."""
    found = []
    dockerfile = task_dir / "environment" / "Dockerfile"
    if dockerfile.is_file():
        found += FROM.findall(dockerfile.read_text(encoding="utf-8", errors="replace"))
    toml = task_dir / "task.toml"
    if toml.is_file():
        try:
            doc = tomllib.loads(toml.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            raise AfbenchError(
                f"the exported task.toml is not TOML: {error}", file=str(toml)
            ) from None
        for section in (doc.get("environment"), (doc.get("verifier") or {}).get("environment")):
            if isinstance(section, dict) and isinstance(section.get("docker_image"), str):
                found.append(section["docker_image"])
    return sorted(set(found))


def exported_checksums(
    selection: dict, repository_dir: str, tasks_dir: str, repository_name: str | None = None
) -> dict:
    """Export each task of the selection with the release's exporter (its export, then its
    read-only check, as a plan runs them) and record Harbor's task checksum of the result and
    the images it names. `repository_name`: the checkout as the config names it, which the
    record names the exporter under (not where this machine keeps it). What the exporter
    prints is shown only when a step fails: a job's log holds its summary line (a trial's log,
    where every step's line is the record, differs)."""
    from afbench.execution.trial import run_steps
    from afbench.plans.plan import EXPORTER, check_repository, export_steps, tasks_folder

    release = selection["release"]
    repo = check_repository(repository_dir, release["revision"])
    tasks_path = tasks_folder(repo, tasks_dir)
    tasks = {}
    for task_id in selection["task_ids"]:
        steps = export_steps(repo, task_id, tasks_path)
        run_steps(steps, {}, [], names=("export", "check"), quiet=True)
        task_dir = tasks_path / task_id
        tasks[task_id] = {
            "checksum": harbor.task_checksum(task_dir),
            "images": task_images(task_dir),
        }
    return TASK_CHECKSUMS.record(
        release=release,
        selection={"name": selection["name"], "selection_sha256": selection["selection_sha256"]},
        exporter=str(PurePosixPath(repository_name) / EXPORTER)
        if repository_name
        else str(repo / EXPORTER),
        checksum="Harbor 0.22.0's task_checksum: dirhash 0.5.0, sha256, of the task folder",
        tasks=tasks,
    )


# --- the run against its sealed analysis plan ---------------------------------------------------
PLAN_NOTE = (
    "The executed run checked against its sealed analysis plan "
    "(afbench.plans.preregister.check_plan): the release, the selection and its SHA-256, each "
    "configuration as its trials ran it "
    "(agent, model, Harbor environment, attempts, the timeouts the trials had) and each "
    "trial's cap, each from the receipts and the trials' own settings, and every trial one of "
    "the plan's first `horizon` tasks. A comparison is confirmatory only when it is the plan's "
    "primary comparison and the run is as planned; every other comparison is exploratory."
)


def _timeout(base: float, override: object, most: object, specific: object, general: object):
    """The timeout a trial ran with under Harbor's settings (override, else the base times its
    multiplier, at most the cap)."""
    if override is not None:
        seconds = float(override)
    else:
        factor = specific if specific is not None else (1.0 if general is None else general)
        seconds = base * float(factor)
    return min(seconds, float(most)) if most is not None else seconds


def _ran_with(settings: dict) -> tuple[str | None, str | None]:
    return settings.get("agent.name") or settings.get("agent.import_path"), settings.get(
        "agent.model_name"
    )


def run_facts(plan: dict, summary: dict, receipts: list[dict]) -> tuple[dict, list[str]]:
    """What the executed run shows, in the sealed plan's terms (preregister.plan_facts), and
    the departures only a run can have (trials outside the plan's horizon, trials of neither
    configuration). What a run cannot show (the analysis settings, the ceiling) is taken as
    sealed: the workflow checked the config against them before any trial."""
    from afbench.plans.plan import plan_label

    sealed = plan["configurations"]
    extra: list[str] = []
    horizon = set(plan["stopping_rule"]["order"][: plan["stopping_rule"]["horizon"]])
    outside = sorted({r["task_id"] for r in receipts} - horizon)
    if outside:
        extra.append(
            f"trials of {len(outside)} task(s) outside the plan's first "
            f"{plan['stopping_rule']['horizon']} tasks: {', '.join(outside[:5])}"
        )
    shas = sorted({r["plan"]["selection"]["selection_sha256"] for r in receipts})
    releases = [r["release"] for r in receipts]
    configurations, caps = {}, {}
    for side, want in sealed.items():
        mine = [
            r
            for r in receipts
            if (r["plan"]["agent"], r["plan"]["model"])
            == (
                want["agent"],
                want["model"],
            )
        ]
        started = [r for r in mine if r["refused"] is None]
        ran = sorted({(r["run_agent"], r["run_model"]) for r in started}, key=str)
        agent, model = ran[0] if len(ran) == 1 else (want["agent"], want["model"])
        if len(ran) > 1:
            extra.append(f"configuration {side} ran {len(ran)} different agents: {ran}")
        found = [c for c in summary["configurations"] if _ran_with(c["settings"]) == (agent, model)]
        settings = found[0]["settings"] if found else {}
        most = max((r["attempt"] for r in mine), default=0)
        configurations[side] = {
            "label": plan_label(agent, model),
            "agent": agent,
            "model": model,
            "environment_type": settings.get("environment.type", want["environment_type"]),
            "attempts": want["attempts"] if most <= want["attempts"] else most,
            "agent_timeout_s": _timeout(
                harbor.AGENT_TIMEOUT_S,
                settings.get("agent.override_timeout_sec"),
                settings.get("agent.max_timeout_sec"),
                settings.get("agent_timeout_multiplier"),
                settings.get("timeout_multiplier"),
            )
            if found
            else want["agent_timeout_s"],
            "verifier_timeout_s": _timeout(
                harbor.VERIFIER_TIMEOUT_S,
                settings.get("verifier.override_timeout_sec"),
                settings.get("verifier.max_timeout_sec"),
                settings.get("verifier_timeout_multiplier"),
                settings.get("timeout_multiplier"),
            )
            if found
            else want["verifier_timeout_s"],
        }
        # a cap other than the sealed one, if any trial had one: check_plan names it
        sealed_cap = plan["money"]["per_trial_cap_usd"][side]
        worst = sorted({r["worst_case_usd"] for r in mine})
        caps[side] = next((cap for cap in worst if cap != sealed_cap), sealed_cap)
    labels = {(c["agent"], c["model"]) for c in sealed.values()}
    strays = sorted(
        {plan_label(r["plan"]["agent"], r["plan"]["model"]) for r in receipts}
        - {plan_label(*key) for key in labels}
    )
    if strays:
        extra.append(f"trials of neither configuration: {', '.join(strays)}")
    facts = {
        "release": releases[0] if releases and all(r == releases[0] for r in releases) else None,
        "selection": {
            "name": summary["selection"]["name"],
            "criteria": plan["selection"]["criteria"],
            "selection_sha256": shas[0] if len(shas) == 1 else shas,
            "order": plan["stopping_rule"]["order"],
        },
        "configurations": configurations,
        "analysis": plan["analysis"],
        "money": {"per_trial_cap_usd": caps, "ceiling_usd": plan["money"]["ceiling_usd"]},
    }
    if not receipts:
        facts["release"] = plan["release"]
        facts["selection"]["selection_sha256"] = plan["selection"]["selection_sha256"]
    elif facts["release"] is None:
        extra.append("the trials ran more than one release")
        facts["release"] = plan["release"]
    return facts, extra


def plan_conformance(plan: dict, summary: dict, receipts: list[dict]) -> dict:
    """The run's record against its sealed analysis plan: as planned or not (each departure
    named), and the role of each comparison of two of its configurations (preregister.
    comparison_role: confirmatory only for the plan's primary comparison run as planned)."""
    from itertools import combinations

    from afbench.plans.plan import plan_label
    from afbench.plans.preregister import check_plan, comparison_role

    facts, extra = run_facts(plan, summary, receipts)
    problems = check_plan(plan, facts)
    shown = [str(p) for p in problems] + extra
    labelled = [
        (c["configuration"], plan_label(*_ran_with(c["settings"])))
        for c in summary["configurations"]
        if _ran_with(c["settings"])[0] is not None
    ]
    comparisons = []
    for (x, x_label), (y, y_label) in combinations(labelled, 2):
        role = comparison_role(plan, summary["selection"]["name"], x_label, y_label, shown)
        comparisons.append({"a": x_label, "b": y_label, "configurations": [x, y], **role})
    return {
        "note": PLAN_NOTE,
        "plan_sha256": plan["sealed_sha256"],
        "primary_comparison": {
            key: plan["primary_comparison"][key] for key in ("selection", "a", "b")
        },
        "as_planned": not shown,
        "problems": shown,
        "comparisons": comparisons,
    }
