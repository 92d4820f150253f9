"""Every fact afbench relies on about Harbor in one place: of 0.22.0, the release's pinned
harness, its agents, the agents that call no model, its environment types, the upstream
per-task timeouts, the trial-config settings with the defaults Harbor applies, and how it
computes a trial's task checksum (checked against the harbor 0.22.0 wheel: its CLI,
harbor/models/environment_type.py, harbor/models/trial/config.py, harbor/models/task/task.py,
and the dirhash 0.5.0 wheel it depends on); and, for reading job folders of Harbor 0.22.0 to
0.26.0, Harbor's own error policy (which exceptions leave a valid reward), as its 0.25.0 and
0.26.0 wheels define it, and which of the two reads a folder of each version.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from afbench.core.errors import AfbenchError

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
    # Harbor >= 0.25: a job's changes to the error policy below, per exception type
    "override_error_policy": {},
}
# The timeout multipliers: the overall one, and each phase's own (None: the overall one
# applies), with the short name a configuration label gives each phase
TIMEOUT_MULTIPLIERS = {
    "agent_timeout_multiplier": "agent",
    "verifier_timeout_multiplier": "verifier",
    "agent_setup_timeout_multiplier": "setup",
    "environment_build_timeout_multiplier": "build",
}
# How a trial was verified, with Harbor's defaults: `--disable-verification`, `--verifier`,
# `--verifier-kwarg` and `--ve` (Harbor leaves the last three out of a config that does not set
# them). Not part of a configuration's identity (an unverified trial is counted apart within
# its configuration); the protocol check reads them (afbench.runs.conformance).
VERIFIER_SETTINGS: dict[str, object] = {
    "disable": False,
    "import_path": None,
    "kwargs": {},
    "env": {},
}


def is_import_path(agent: str) -> bool:
    """`-a module.path:ClassName`: a custom agent Harbor imports (e.g. afbench's test agent)."""
    return len(agent) <= 500 and IMPORT_PATH.fullmatch(agent) is not None


def calls_a_model(agent: str) -> bool:
    """Whether running `agent` may spend money: everything but nop and oracle, and so every
    custom agent, whatever it says of itself."""
    return agent not in MODEL_FREE_AGENTS


def check_agent(agent: str, model: str | None) -> None:
    """A Harbor 0.22.0 agent, with a provider/model exactly when it calls one; or a custom
    agent's import path, with or without a model."""
    if isinstance(agent, str) and is_import_path(agent):
        if model is not None and not (isinstance(model, str) and MODEL.fullmatch(model)):
            raise AfbenchError(
                "model is not of the form provider/model",
                field="model",
                expected="provider/model",
                found=model,
            )
        return
    if agent not in AGENTS:
        raise AfbenchError(
            "unknown Harbor 0.22.0 agent",
            field="agent",
            found=agent,
            expected=f"one of {sorted(AGENTS)}, or a custom agent's module.path:ClassName",
        )
    if not calls_a_model(agent):
        if model is not None:
            raise AfbenchError(
                f"agent '{agent}' calls no model; do not pass a model",
                field="model",
                expected="no model",
                found=model,
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
    if isinstance(value, str) and (value in ENVIRONMENT_TYPES or is_import_path(value)):
        return value
    raise AfbenchError(
        "not a Harbor 0.22.0 environment type",
        field=field,
        expected=f"one of {sorted(ENVIRONMENT_TYPES)}, or module.path:ClassName",
        found=value if isinstance(value, str) else repr(value),
    )


def task_checksum(task_dir: Path) -> str:
    """The `task_checksum` Harbor 0.22.0 records in a trial's result.json for the task folder
    it ran: `dirhash(task_dir, "sha256")` of dirhash 0.5.0 with its defaults (checksum_of_files
    of every file below it, links followed)."""

    def walk(folder: Path, seen: frozenset, prefix: str) -> None:
        real = os.path.realpath(folder)
        if real in seen:
            raise AfbenchError("a link in the task folder leads back into itself", file=str(folder))
        with os.scandir(folder) as entries:
            for entry in entries:
                path = Path(entry.path)
                if entry.is_dir():
                    walk(path, seen | {real}, f"{prefix}{entry.name}/")
                elif entry.is_file():
                    digest = hashlib.sha256()
                    with open(path, "rb") as handle:
                        for chunk in iter(lambda: handle.read(1 << 20), b""):
                            digest.update(chunk)
                    files[prefix + entry.name] = digest.hexdigest()

    files: dict[str, str] = {}
    try:
        walk(Path(task_dir), frozenset(), "")
    except OSError as error:
        raise AfbenchError(
            f"cannot read the task folder: {error.strerror}", file=str(task_dir)
        ) from None
    checksum = checksum_of_files(files)
    if checksum is None:
        raise AfbenchError("the task folder holds no file", file=str(task_dir))
    return checksum


def checksum_of_files(files: dict[str, str]) -> str | None:
    """dirhash's SHA-256 of a folder from its files ({"path/in/it": SHA-256 of the file}), so
    that a record listing every file's digest can have its checksum derived again. Each
    folder's hash is the SHA-256 of its entries' descriptors, sorted and joined by two NULs; an
    entry's descriptor is its sorted properties joined by one NUL: `name:<name>` and
    `data:<SHA-256 of the file>` or `dirhash:<the folder's hash>`. A folder with no file below
    it is left out; None when there is no file at all."""
    tree: dict = {}
    for path, digest in files.items():
        *folders, name = path.split("/")
        node = tree
        for folder in folders:
            node = node.setdefault(folder, {})
        node[name] = digest

    def folder_hash(node: dict) -> str | None:
        descriptors = []
        for name, entry in node.items():
            if isinstance(entry, dict):
                inner = folder_hash(entry)
                if inner is not None:
                    descriptors.append(f"dirhash:{inner}\0name:{name}")
            else:
                descriptors.append(f"data:{entry}\0name:{name}")
        if not descriptors:
            return None
        return hashlib.sha256("\0\0".join(sorted(descriptors)).encode()).hexdigest()

    return folder_hash(tree)


# --- Harbor's error policy ------------------------------------------------------------------------
# Harbor >= 0.25 classifies every failure by its exception_type in one table
# (harbor/models/trial/error_policy.py: "Retry, verification, job aggregation, and API outcomes
# derive from this table"): whether Harbor retries it, whether it still grades the trial, and
# whether the reward it then records is a valid measurement of the agent. A trial's reward is
# valid only when it has rewards and every recorded exception (the trial's own, then each
# step's) has a valid reward (TrialResult.reward_valid). 0.26.0 writes each exception's policy
# and the trial's reward_valid into result.json; 0.25.0 writes neither; 0.22.0 to 0.24.0 had no
# table, and graded after any of Harbor's own agent errors all the same.


@dataclass(frozen=True)
class ErrorPolicy:
    should_retry: bool
    should_grade: bool
    has_valid_reward: bool


def _table(groups: dict[ErrorPolicy, tuple[str, ...]]) -> MappingProxyType:
    return MappingProxyType({name: policy for policy, names in groups.items() for name in names})


_SANDBOX = (
    "EnvironmentStartTimeoutError",
    "SandboxBuildFailedError",
    "AgentSetupTimeoutError",
    "HealthcheckError",
    "SandboxLikelyOutOfMemoryError",
    "MemoryLimitExceededError",
    "SSHAccessError",
    "GKEExecStreamClosedError",
    "GKEPodNotFoundError",
    "RuntimeRequestError",
    "AddTestsDirError",
    "DownloadVerifierDirError",
)
_PROVIDER_RETRIED = (
    "ApiError",
    "ApiRateLimitError",
    "ApiInternalServerError",
    "ApiOverloadedError",
    "ApiConnectionClosedError",
    "ApiResponseStalledError",
    "UnknownApiError",
    "NetworkConnectionError",
    "ApiConnectionError",
    "ApiUsageLimitError",
    # litellm's, escaping host-process agents
    "RateLimitError",
    "InternalServerError",
    "ServiceUnavailableError",
    "APIConnectionError",
    "APIError",
    "Timeout",
)
_PROVIDER_GRADED = (  # litellm's
    "BadRequestError",
    "UnprocessableEntityError",
    "UnsupportedParamsError",
    "APIResponseValidationError",
    "BudgetExceededError",
)
_PROVIDER_FATAL = (
    "AgentAuthenticationError",
    "ModelNotFoundError",
    "ApiProviderResourceNotFoundError",
    # litellm's
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
)
_HARBOR_FAILED = (
    "ServiceOperationsUnsupportedError",
    "VercelScopeError",
    "DspyImportError",
    "MissingExtraError",
    "RegradeError",
)
_VERIFIER_FAILED = (
    "VerifierTimeoutError",
    "RewardFileNotFoundError",
    "RewardFileEmptyError",
    "VerifierOutputParseError",
)
_AGENT_EXHAUSTED = (
    "AgentTimeoutError",
    "ContextWindowExceededError",
    "OutputTokenExceededError",
    "ContextLengthExceededError",
    "OutputLengthExceededError",
)
_AGENT_REFUSED = ("AgentSafetyRefusalError", "ContentPolicyViolationError")

# harbor 0.26.0, harbor/models/trial/error_policy.py, _POLICY_GROUPS and UNKNOWN_ERROR_POLICY
ERROR_POLICY_0_26 = _table(
    {
        ErrorPolicy(True, False, False): _SANDBOX,
        ErrorPolicy(True, True, False): _PROVIDER_RETRIED,
        ErrorPolicy(False, True, False): (
            "UnsupportedModelParametersError",
            *_PROVIDER_GRADED,
            *_VERIFIER_FAILED,
        ),
        ErrorPolicy(False, False, False): (*_PROVIDER_FATAL, *_HARBOR_FAILED, "CancelledError"),
        ErrorPolicy(False, True, True): (
            "NonZeroAgentExitCodeError",
            *_AGENT_EXHAUSTED,
            *_AGENT_REFUSED,
        ),
    }
)
# harbor 0.25.0, the same file: each group has a FailureCause, retry and grade, and the reward is
# valid only for the causes AGENT_EXHAUSTED_BUDGET and AGENT_REFUSED_TASK (ErrorPolicy.
# reward_valid), so an unclassified exception, NonZeroAgentExitCodeError among them, leaves no
# valid reward there and is retried, where 0.26.0 keeps its reward and does not retry it
ERROR_POLICY_0_25 = _table(
    {
        ErrorPolicy(True, False, False): _SANDBOX,
        ErrorPolicy(True, True, False): (*_PROVIDER_RETRIED, "NonZeroAgentExitCodeError"),
        ErrorPolicy(False, True, False): (*_PROVIDER_GRADED, *_VERIFIER_FAILED),
        ErrorPolicy(False, False, False): (*_PROVIDER_FATAL, *_HARBOR_FAILED, "CancelledError"),
        ErrorPolicy(False, True, True): (*_AGENT_EXHAUSTED, *_AGENT_REFUSED),
    }
)
ERROR_POLICY_TABLES = {
    "0.26.0": {
        "policies": ERROR_POLICY_0_26,
        "unknown": ErrorPolicy(True, True, True),
        "source": "harbor 0.26.0 (PyPI wheel), harbor/models/trial/error_policy.py",
    },
    "0.25.0": {
        "policies": ERROR_POLICY_0_25,
        "unknown": ErrorPolicy(True, True, False),
        "source": "harbor 0.25.0 (PyPI wheel), harbor/models/trial/error_policy.py",
    },
}
VERSION = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")


def error_policy_table(version: str | None) -> str:
    """The table that reads a job folder written by Harbor `version` (None: unknown): 0.25's
    own for 0.25.x; 0.26's for every other (0.22.0 to 0.24.x had no table of their own, and
    0.26.0 writes the policy it applied beside each exception, which is read first)."""
    if version is not None and version.startswith("0.25."):
        return "0.25.0"
    return "0.26.0"


def error_policy(exception_type: str, table: str) -> ErrorPolicy:
    """Harbor's policy for an exception type, as the named table has it."""
    chosen = ERROR_POLICY_TABLES[table]
    return chosen["policies"].get(exception_type, chosen["unknown"])
