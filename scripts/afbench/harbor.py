"""Every fact afbench relies on about Harbor 0.22.0, the release's pinned harness, in one place:
its agents, the agents that call no model, its environment types, the upstream per-task
timeouts, and the trial-config settings with the defaults Harbor applies. Checked against the
harbor 0.22.0 wheel (its CLI, harbor/models/environment_type.py and harbor/models/trial/config.py).
"""

from __future__ import annotations

import re

from .errors import AfbenchError

VERSION = "0.22.0"

# `harbor run -a NAME`: the agents the 0.22.0 wheel registers
AGENTS = frozenset(
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
# the agents that call no model, so spend no money: everything else needs the opt-in
MODEL_FREE_AGENTS = frozenset({"nop", "oracle"})
# Harbor's EnvironmentType values; any other `-e` value Harbor takes is a custom environment's
# import path, module.path:ClassName
ENVIRONMENT_TYPES = frozenset(
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
MODEL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*/[A-Za-z0-9_.:@/+-]+")  # provider/model

# The upstream per-task timeouts (each task.toml of the release): the agent's and the verifier's
AGENT_TIMEOUT_S = 86_400
VERIFIER_TIMEOUT_S = 6_000
# what every `harbor run` of afbench gets in its environment
RUN_ENV = {"HARBOR_TELEMETRY": "0"}

# Harbor's defaults: the agent when a trial config names none, the environment when it gives
# neither a type nor an import path
DEFAULT_AGENT = "oracle"
DEFAULT_ENVIRONMENT = "docker"
# The settings of a TrialConfig that change what the agent can do or how long it may try, with
# the value Harbor uses when the field is absent or null. Scheduling and book-keeping
# (n_concurrent, trials_dir, delete, force_build, artifacts) are left out.
TRIAL_SETTINGS: dict[str, object] = {
    "agent.name": None,
    "agent.import_path": None,
    "agent.model_name": None,
    "agent.kwargs": {},
    "agent.skills": [],
    "agent.mcp_servers": [],
    "agent.extra_allowed_hosts": [],
    "agent.override_timeout_sec": None,
    "agent.override_setup_timeout_sec": None,
    "agent.max_timeout_sec": None,
    "agent.resume_trajectory": False,
    "agent.load_trajectory": None,
    "install_only": False,
    "timeout_multiplier": 1.0,
    "agent_timeout_multiplier": None,
    "verifier_timeout_multiplier": None,
    "agent_setup_timeout_multiplier": None,
    "environment_build_timeout_multiplier": None,
    "user_agent": None,
    "skills": [],
    "extra_instruction_paths": [],
    "extra_instructions": [],
    "environment.type": None,
    "environment.import_path": None,
    "environment.kwargs": {},
    "environment.cpu_enforcement_policy": "auto",
    "environment.memory_enforcement_policy": "auto",
    "environment.override_cpus": None,
    "environment.override_memory_mb": None,
    "environment.override_storage_mb": None,
    "environment.override_gpus": None,
    "environment.override_tpu": None,
    "environment.mounts": None,
    "environment.extra_docker_compose": [],
    "environment.extra_allowed_hosts": [],
    "verifier.override_timeout_sec": None,
    "verifier.max_timeout_sec": None,
}


def calls_a_model(agent: str) -> bool:
    return agent not in MODEL_FREE_AGENTS


def check_agent(agent: str, model: str | None) -> None:
    """A Harbor 0.22.0 agent, with a provider/model exactly when it calls one."""
    if agent not in AGENTS:
        raise AfbenchError(
            "unknown Harbor 0.22.0 agent",
            field="agent",
            found=agent,
            expected=f"one of {sorted(AGENTS)}",
        )
    if not calls_a_model(agent):
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


def check_environment_type(value: object, field: str = "plans.environment_type") -> str:
    """The `-e` value of `harbor run`: a Harbor 0.22.0 environment type or a custom environment's
    import path, so nothing else (e.g. `--help`) reaches the argv."""
    if isinstance(value, str) and (
        value in ENVIRONMENT_TYPES or (len(value) <= 500 and IMPORT_PATH.fullmatch(value))
    ):
        return value
    raise AfbenchError(
        "not a Harbor 0.22.0 environment type",
        field=field,
        expected=f"one of {sorted(ENVIRONMENT_TYPES)}, or module.path:ClassName",
        found=value if isinstance(value, str) else repr(value),
    )
