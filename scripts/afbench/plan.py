"""Exact, runnable Harbor 0.22.0 run plans: argument vectors, never shell strings, never run."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from .errors import AfbenchError
from .fsutil import check_name
from .records import PLAN, record

# `harbor run` is `harbor jobs start`; flags checked against the harbor 0.22.0 wheel's CLI.
HARBOR_AGENTS = frozenset(
    {
        "oracle",
        "nop",
        "claude-code",
        "cline-cli",
        "cortex-code",
        "terminus",
        "terminus-1",
        "terminus-2",
        "aider",
        "codex",
        "cursor-cli",
        "gemini-cli",
        "antigravity-cli",
        "rovodev-cli",
        "goose",
        "grok-build",
        "hermes",
        "junie",
        "mini-swe-agent",
        "nemo-agent",
        "swe-agent",
        "opencode",
        "openclaw",
        "openhands",
        "openhands-sdk",
        "antigravity-sdk",
        "kimi-code",
        "kimi-cli",
        "langgraph",
        "deerflow",
        "mimo",
        "mcode",
        "pi",
        "qwen-coder",
        "copilot-cli",
        "devin",
        "trae-agent",
        "computer-1",
        "eve",
        "fx",
        "dspy-rlm",
        "vibe",
    }
)
MODEL_FREE_AGENTS = frozenset({"nop", "oracle"})
MODEL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*/[A-Za-z0-9_.:@/+-]+")  # fullmatch only
# Harbor 0.22.0's EnvironmentType values (harbor/models/environment_type.py in its wheel); any
# other `-e` value Harbor takes is a custom environment's import path, module.path:ClassName.
HARBOR_ENVIRONMENT_TYPES = frozenset(
    {
        "docker",
        "daytona",
        "e2b",
        "modal",
        "runloop",
        "langsmith",
        "ec2",
        "gke",
        "ack",
        "openshift",
        "novita",
        "apple-container",
        "singularity",
        "islo",
        "tensorlake",
        "cwsandbox",
        "wandb",
        "use-computer",
        "cua-cloud",
        "blaxel",
        "opensandbox",
        "beam",
        "skypilot",
        "hf-sandbox",
        "hyperbrowser",
        "vercel",
    }
)
IMPORT_PATH = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*"
)
EXPORTER = "harbor/export.py"
AGENT_TIMEOUT_S, VERIFIER_TIMEOUT_S = 86_400, 6_000
TRAPS = [
    "-m is ignored by harbor without -a: the plan always passes -a",
    "a -p directory that is not a valid task is silently treated as a dataset: run the "
    "exporter's --check first and make sure the task directory exists",
    "reusing a --job-name with the same -o and flags resumes that job: a trial with a "
    "result.json is kept and never rerun (an errored one too: delete its trial folder to retry "
    "it); changed flags or task contents make harbor refuse to resume. Job names here are "
    "unique to (selection, agent, model, task); `afbench execute` adds an attempt suffix",
]


def check_agent(agent: str, model: str | None) -> None:
    if agent not in HARBOR_AGENTS:
        raise AfbenchError(
            "unknown Harbor 0.22.0 agent",
            field="agent",
            found=agent,
            expected=f"one of {sorted(HARBOR_AGENTS)}",
        )
    if agent in MODEL_FREE_AGENTS:
        if model is not None:
            raise AfbenchError(
                f"agent '{agent}' calls no model; do not pass a model", field="model", found=model
            )
        return
    if model is None:
        raise AfbenchError(
            f"agent '{agent}' needs an explicit model",
            field="model",
            expected="provider/model, e.g. anthropic/claude-opus-4-1",
        )
    if not isinstance(model, str) or not MODEL.fullmatch(model):
        raise AfbenchError(
            "model is not of the form provider/model",
            field="model",
            expected="provider/model, e.g. anthropic/claude-opus-4-1",
            found=model,
        )


def check_environment_type(value: object) -> str:
    """The `-e` value of `harbor run`: a Harbor 0.22.0 environment type or a custom environment's
    import path (the config schema's rule), so nothing else (e.g. `--help`) reaches the argv."""
    if isinstance(value, str) and (
        value in HARBOR_ENVIRONMENT_TYPES or (len(value) <= 500 and IMPORT_PATH.fullmatch(value))
    ):
        return value
    raise AfbenchError(
        "not a Harbor 0.22.0 environment type",
        field="plans.environment_type",
        expected=f"one of {sorted(HARBOR_ENVIRONMENT_TYPES)}, or module.path:ClassName",
        found=value if isinstance(value, str) else repr(value),
    )


def check_repository(repository_dir: str | None, revision: str) -> Path:
    if not repository_dir:
        raise AfbenchError(
            "no repository directory: set plans.repository_dir or pass "
            "--repository-dir (an absolute path to a checkout at the pinned "
            "revision)",
            field="repository_dir",
        )
    path = Path(repository_dir)
    if not path.is_absolute():
        raise AfbenchError(
            "repository directory must be an absolute path",
            field="repository_dir",
            found=str(repository_dir),
        )
    if not path.is_dir():
        raise AfbenchError("repository directory does not exist", file=str(path))
    head = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--verify", "-q", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    toplevel = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--show-toplevel"],
        capture_output=True,
        text=True,
        check=False,
    )
    if head.returncode != 0 or Path(toplevel.stdout.strip()).resolve() != path.resolve():
        raise AfbenchError("repository directory is not the top of a git checkout", file=str(path))
    if head.stdout.strip() != revision:
        raise AfbenchError(
            "checkout is not at the pinned revision",
            file=str(path),
            expected=revision,
            found=head.stdout.strip(),
        )
    if not (path / EXPORTER).is_file():
        raise AfbenchError("checkout has no exporter", file=str(path / EXPORTER))
    return path


def plan_label(agent: str, model: str | None) -> str:
    """A plan's file name: the agent, or agent__provider__model for a real model."""
    return check_name(
        agent if model is None else f"{agent}__{model.replace('/', '__')}", "plan name"
    )


def build_plan(
    catalog: dict,
    selection: dict,
    agent: str,
    model: str | None,
    repository_dir: str | None,
    tasks_dir: str,
    jobs_dir: str,
    environment_type: str,
    harbor: str = "harbor",
) -> dict:
    """The plan for one selection and one agent (and model). `tasks_dir` is relative to the
    checkout unless absolute; `jobs_dir` is made absolute; `harbor` is the executable to run."""
    release = catalog["release"]
    if selection["release"] != release:
        raise AfbenchError(
            "selection was made from another release than the catalog; rebuild it",
            field="selection.release.revision",
            expected=release["revision"],
            found=selection["release"].get("revision"),
        )
    unknown = sorted(set(selection["task_ids"]) - {t["task_id"] for t in catalog["tasks"]})
    if unknown:
        raise AfbenchError(
            "selection names tasks the catalog lacks",
            field="task_ids",
            found=", ".join(unknown[:20]),
        )
    check_agent(agent, model)
    environment_type = check_environment_type(environment_type)
    repo = check_repository(repository_dir, release["revision"])
    tasks_path = Path(tasks_dir)
    tasks_path = tasks_path if tasks_path.is_absolute() else repo / tasks_path
    jobs_path = Path(jobs_dir).resolve()
    exporter = str(repo / EXPORTER)
    label = check_name(
        agent if model is None else f"{agent}-{model.replace('/', '_')}", "agent/model label"
    )
    tasks = []
    for task_id in selection["task_ids"]:
        check_name(task_id, "task_id")
        job_name = (
            f"afbench-{selection['name']}-{label}-{task_id}-{selection['selection_sha256'][:8]}"
        )
        run = [harbor, "run", "-p", str(tasks_path / task_id), "-a", agent]
        if model is not None:
            run += ["-m", model]
        run += [
            "--job-name",
            job_name,
            "-o",
            str(jobs_path),
            "-n",
            "1",
            "-k",
            "1",
            "-y",
            "-q",
            "-e",
            environment_type,
        ]
        tasks.append(
            {
                "task_id": task_id,
                "job_name": job_name,
                "job_dir": str(jobs_path / job_name),
                "export": {"argv": ["python", exporter, "--problem", task_id], "cwd": str(repo)},
                "check": {
                    "argv": ["python", exporter, "--problem", task_id, "--check"],
                    "cwd": str(repo),
                    "read_only": True,
                },
                "run": {"argv": run, "cwd": str(repo), "env": {"HARBOR_TELEMETRY": "0"}},
            }
        )
    images = release["images"]
    return {
        **record(PLAN),
        "note": "A plan only: nothing was executed and nothing installed. Run the export, its "
        "--check, then harbor run, in that order, per task.",
        "executed": False,
        "dollar_cap_enforced": False,
        "release": release,
        "license": catalog["license"],
        "selection": {
            "name": selection["name"],
            "selection_sha256": selection["selection_sha256"],
            "tasks": len(tasks),
        },
        "agent": agent,
        "model": model,
        "expected_reward": 0 if agent == "nop" else None,
        "repository_dir": str(repo),
        "environment_type": environment_type,
        "timeouts": {
            "agent_s": AGENT_TIMEOUT_S,
            "verifier_s": VERIFIER_TIMEOUT_S,
            "preserved": "upstream per-task timeouts; the plan passes no timeout "
            "multiplier or override",
        },
        "requirements": {
            "lean": release["lean"],
            "mathlib": release["mathlib"],
            "harbor": release["harbor"],
            "images": images,
            "image_digests_required_for_formal_run": True,
            "formal_run_ready": bool(images) and all(i["digest"] for i in images),
        },
        "traps": TRAPS,
        "tasks": tasks,
    }
