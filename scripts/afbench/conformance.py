"""A protocol-conformance certificate for every imported Harbor run: for each configuration,
what its trials ran compared with the release's protocol, `conformant: true` only when every
check passed and `false` with every reason otherwise.

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
the infrastructure may take, not what the agent may do.

The settings are the configuration's (runs.py reads them with Harbor's defaults filled in:
harbor.TRIAL_SETTINGS); nothing here reads a Harbor file itself.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from . import harbor
from .errors import AfbenchError
from .records import TASK_CHECKSUMS, record

# container environments that build or run the task's own image, locally, with no session
# lifetime of their own below a full-budget trial (cloud sandboxes have one: README)
PROTOCOL_ENVIRONMENTS = frozenset({"docker", "singularity"})
TIMEOUT_LIMITS = (
    "agent.override_timeout_sec",
    "agent.max_timeout_sec",
    "verifier.override_timeout_sec",
    "verifier.max_timeout_sec",
)
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
    "named by that task)."
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
    for phase in ("agent", "verifier"):
        own = settings.get(f"{phase}_timeout_multiplier")
        effective = settings["timeout_multiplier"] if own is None else own
        if effective != 1:
            flag = "timeout_multiplier" if own is None else f"{phase}_timeout_multiplier"
            reasons.append(
                f"changed timeout: the {phase} timeout is multiplied by {effective:g} ({flag}); "
                "the protocol keeps the upstream per-task timeouts"
            )
    for key, value in _changed(settings, TIMEOUT_LIMITS):
        reasons.append(f"changed timeout: {key} is {_shown(value)}; the protocol sets none")
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
            "task checksums not compared: no exporter output for these tasks (the import "
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


def certify(
    configuration: dict, attempts: list[dict], exported: dict | None, release: dict
) -> dict:
    """One configuration's certificate."""
    pinned = [i["digest"] for i in release["images"] if i["digest"]]
    reasons = settings_reasons(configuration["settings"]) + verification_reasons(attempts)
    more, counts = task_reasons(attempts, exported, pinned)
    reasons += more
    return {
        "conformant": not reasons,
        "reasons": reasons,
        "task_checksums": counts,
        "image_digests": "compared" if pinned else "not pinned by the release: not compared",
    }


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
                "reasons": ["verdicts: not a Harbor run, no protocol settings to compare"],
            }
        else:
            mine = [a for a in attempts if a["configuration"] == label]
            certificate = certify(configuration, mine, exported, summary["release"])
        configurations.append(
            {**configuration, "conformant": certificate["conformant"], "conformance": certificate}
        )
    flags = [c["conformant"] for c in configurations]
    return {
        **summary,
        "conformant": None if kind != "harbor" else all(flags),
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


def exported_checksums(selection: dict, repository_dir: str, tasks_dir: str) -> dict:
    """Export each task of the selection with the release's exporter (its export, then its
    read-only check, as a plan runs them) and record Harbor's task checksum of the result and
    the images it names."""
    from .execute import run_steps
    from .plan import EXPORTER, check_repository, export_steps, tasks_folder

    release = selection["release"]
    repo = check_repository(repository_dir, release["revision"])
    tasks_path = tasks_folder(repo, tasks_dir)
    tasks = {}
    for task_id in selection["task_ids"]:
        run_steps(export_steps(repo, task_id), {}, [], names=("export", "check"))
        task_dir = tasks_path / task_id
        tasks[task_id] = {
            "checksum": harbor.task_checksum(task_dir),
            "images": task_images(task_dir),
        }
    return record(
        TASK_CHECKSUMS,
        release=release,
        selection={"name": selection["name"], "selection_sha256": selection["selection_sha256"]},
        exporter=str(repo / EXPORTER),
        checksum="Harbor 0.22.0's task_checksum: dirhash 0.5.0, sha256, of the task folder",
        tasks=tasks,
    )
