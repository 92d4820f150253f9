"""Harbor's job and trial folders, declared once, and what afbench reads in them.

Where: a job folder (harbor/job.py's job paths) holds config.json, result.json, lock.json,
job.log and one folder per trial; a trial folder (harbor/models/trial/paths.py's TrialPaths)
holds its config.json, result.json, agent/ and verifier/. The layout is the same in every
Harbor afbench reads, 0.22.0 to 0.26.0 (checked against the 0.22.0 and 0.26.0 wheels).

What: the documents' shapes, each field read with its path named in a refusal, and where the
versions differ (HARBOR_WRITES): 0.26.0 writes a schema_version, the trial's reward_valid and
each exception's error policy into result.json; 0.25.0 and later take override_error_policy in
a trial config; 0.22.0 to 0.24.x write none of these. A trial's result.json is read into its
outcome with Harbor's own error policy (afbench.core.harbor: which table reads which version)."""

from __future__ import annotations

import codecs
import math
import os
import re

from afbench.core import harbor
from afbench.core.errors import AfbenchError

# --- the folders ------------------------------------------------------------------------------
JOB_CONFIG = "config.json"  # the JobConfig: a folder with one is a Harbor job folder
JOB_RESULT = "result.json"  # the JobResult, from the job's start; finished_at once it ends
JOB_LOCK = "lock.json"  # what Harbor resolved, with the harbor.version that wrote the job
JOB_LOG = "job.log"  # Harbor's log, a line for each retry
TRIAL_CONFIG = "config.json"  # the TrialConfig, written when the trial starts
TRIAL_RESULT = "result.json"  # the TrialResult, written when the trial ends
AGENT_DIR = "agent"  # what the agent writes as it runs (an ATIF trajectory among it)
VERIFIER_DIR = "verifier"  # what the verifier writes (its reward among it)
TRAJECTORIES = "trajectory*.json"  # in agent/: trajectory.json and its trajectory.cont-N.json


class JobFolder:
    """A Harbor job folder's files by their paths, as text (`path` + "/" + name, so a refusal
    names the file as the caller named the folder)."""

    __slots__ = ("config", "lock", "log", "path", "result")

    def __init__(self, path: str | os.PathLike) -> None:
        path = os.fspath(path)
        self.path = path
        self.config = path + "/" + JOB_CONFIG
        self.result = path + "/" + JOB_RESULT
        self.lock = path + "/" + JOB_LOCK
        self.log = path + "/" + JOB_LOG

    def trial(self, name: str) -> TrialFolder:
        """The folder of the trial `name` (Harbor names each trial folder after its trial)."""
        prefix = self.path.rstrip("/") + "/" if self.path != "/" else "/"
        return TrialFolder(prefix + name)


class TrialFolder:
    """A Harbor trial folder's files by their paths, as text."""

    __slots__ = ("agent", "config", "path", "result", "verifier")

    def __init__(self, path: str | os.PathLike) -> None:
        path = os.fspath(path)
        self.path = path
        self.config = path + "/" + TRIAL_CONFIG
        self.result = path + "/" + TRIAL_RESULT
        self.agent = path + "/" + AGENT_DIR
        self.verifier = path + "/" + VERIFIER_DIR

    @property
    def trajectories(self) -> str:
        """The glob pattern of the agent's trajectory files."""
        return self.agent + "/" + TRAJECTORIES


# --- where the versions differ ----------------------------------------------------------------
# The first Harbor version that writes each field afbench reads that not every version writes,
# by (Harbor's model, field); in an older job folder the field is absent, and read as its
# default (schema 1, reward_valid worked out from the rewards and the policies, the policy from
# the version's table, no override)
HARBOR_WRITES = {
    ("JobResult", "schema_version"): "0.26.0",
    ("TrialResult", "schema_version"): "0.26.0",
    ("TrialResult", "reward_valid"): "0.26.0",
    ("ExceptionInfo", "policy"): "0.26.0",
    ("ExceptionInfo", "policy_override"): "0.26.0",
    ("TrialConfig", "override_error_policy"): "0.25.0",
}
# the schema_version of a job's and a trial's result.json, where one is written
RESULT_SCHEMA_VERSION = 1
# the sections of a trial config that hold settings (the rest are top-level keys), and those a
# job config holds for every trial (its agents are a list, one per agent)
CONFIG_SECTIONS = ("agent", "environment", "verifier")
JOB_SECTIONS = ("environment", "verifier")
UNVERIFIED_REASON = "verification disabled"


def check_schema_version(doc: dict, file: str, what: str) -> None:
    """A job's or a trial's result.json (`what`: "job", "trial") of the schema afbench reads:
    version 1, or none written."""
    version = doc.get("schema_version")
    if version is not None and (type(version) is not int or version != RESULT_SCHEMA_VERSION):
        raise AfbenchError(
            f"a {what} result of a schema afbench does not know (Harbor 0.22.0 to 0.26.0 write "
            "version 1, or none)",
            file=file,
            field="schema_version",
            expected=RESULT_SCHEMA_VERSION,
            found=version if isinstance(version, int | str) else json_type(version),
        )


# ----------------------------------------------------------------------------- JSON shapes


def json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def shape_error(file: str, field: str, expected: str, value: object) -> AfbenchError:
    return AfbenchError(
        "wrong JSON type", file=file, field=field, expected=expected, found=json_type(value)
    )


def json_object(value: object, file: str, field: str, *, nullable: bool = True) -> dict | None:
    if value is None and nullable:
        return None
    if not isinstance(value, dict):
        raise shape_error(file, field, "an object" + (" or null" if nullable else ""), value)
    return value


def json_string(value: object, file: str, field: str, *, nullable: bool = True) -> str | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise shape_error(file, field, "a string" + (" or null" if nullable else ""), value)
    return value


def json_number(value: object, file: str, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise shape_error(file, field, "a finite number or null", value)
    return float(value)


def _section(doc: dict, name: str, file: str, prefix: str) -> dict:
    return json_object(doc.get(name), file, prefix + name) or {}


# ----------------------------------------------------------------------------- half-written


_WHITESPACE = " \t\n\r"
_ESCAPES = '"\\/bfnrt'
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_START = re.compile(r"-?(?:0|[1-9][0-9]*)?(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?")
_NUMBER_CHARS = frozenset("0123456789+-.eE")
_LITERALS = ("true", "false", "null")


def _string_end(text: str, i: int) -> int | None:
    """The index after the JSON string that opens at text[i]; None when the text ends inside
    it; -1 when it is not a JSON string."""
    i += 1
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            return i + 1
        if c == "\\":
            if i + 1 == n:
                return None
            if text[i + 1] == "u":
                digits = text[i + 2 : i + 6]
                if any(d not in "0123456789abcdefABCDEF" for d in digits):
                    return -1
                if len(digits) < 4:
                    return None
                i += 6
                continue
            if text[i + 1] not in _ESCAPES:
                return -1
            i += 2
            continue
        if c < " ":
            return -1
        i += 1
    return None


def _json_prefix(text: str) -> bool:
    """Whether `text` is the beginning of a JSON document cut short: nothing in it is wrong,
    it only stops before the document is whole (as a file does whose writer was stopped)."""
    n = len(text)
    i = 0
    stack: list[str] = []
    expect = "value"  # value | key | colon | next (a comma or the close) | end
    first = False  # just after an opening bracket: the close is allowed where a value is due
    while True:
        while i < n and text[i] in _WHITESPACE:
            i += 1
        if i == n:
            return expect != "end"
        c = text[i]
        if expect == "end":
            return False
        if expect == "colon":
            if c != ":":
                return False
            i, expect = i + 1, "value"
            continue
        if expect == "next" or (first and c in "]}"):
            if c == "," and not first:
                i += 1
                expect = "key" if stack[-1] == "{" else "value"
                continue
            if c != {"{": "}", "[": "]"}[stack[-1]]:
                return False
            stack.pop()
            i, first = i + 1, False
            expect = "next" if stack else "end"
            continue
        first = False
        if expect == "key":
            if c != '"':
                return False
            end = _string_end(text, i)
            if end is None:
                return True
            if end < 0:
                return False
            i, expect = end, "colon"
            continue
        if c in "{[":
            stack.append(c)
            i += 1
            expect, first = ("key" if c == "{" else "value"), True
            continue
        if c == '"':
            end = _string_end(text, i)
        elif c.isalpha():
            end = i
            while end < n and text[end].isalpha():
                end += 1
            word = text[i:end]
            if end == n:
                return any(lit.startswith(word) for lit in _LITERALS)
            if word not in _LITERALS:
                return False
        else:
            end = i
            while end < n and text[end] in _NUMBER_CHARS:
                end += 1
            if end == n:
                return end > i and _NUMBER_START.fullmatch(text, i, end) is not None
            if _NUMBER.fullmatch(text, i, end) is None:
                return False
        if end is None:
            return True
        if end < 0:
            return False
        i = end
        expect = "next" if stack else "end"


def half_written(data: bytes) -> str | None:
    """Why a file that does not parse is a half-written JSON document (empty, or cut short
    mid-document: what Harbor leaves when the jobs folder's disk fills or it is killed while it
    writes), or None when it is something else."""
    if not data.strip():
        return f"result.json is empty ({len(data)} bytes): Harbor never finished writing it"
    try:  # a multi-byte character cut at the end is part of the cut, not a wrong byte
        text = codecs.getincrementaldecoder("utf-8-sig")().decode(data, final=False)
    except UnicodeDecodeError:
        return None
    if _json_prefix(text):
        return (
            f"result.json ends mid-document ({len(data)} bytes): Harbor never finished writing it"
        )
    return None


# ----------------------------------------------------------------------------- trial results


def job_verification_disabled(doc: dict, file: str) -> bool:
    """A job config's verifier.disable (`harbor run --disable-verification`), false if unset."""
    verifier = json_object(doc.get("verifier"), file, "verifier") or {}
    disable = verifier.get("disable", False)
    if not isinstance(disable, bool):
        raise shape_error(file, "verifier.disable", "true or false", disable)
    return disable


def _verification_disabled(result: dict, file: str, job_default: bool) -> bool:
    config = json_object(result.get("config"), file, "config") or {}
    verifier = json_object(config.get("verifier"), file, "config.verifier")
    if verifier is None or verifier.get("disable") is None:
        return job_default
    disable = verifier["disable"]
    if not isinstance(disable, bool):
        raise shape_error(file, "config.verifier.disable", "true or false", disable)
    return disable


_POLICY_FIELDS = ("should_retry", "should_grade", "has_valid_reward")


def _policy(doc: object, file: str, field: str, *, partial: bool) -> dict | None:
    """A written ErrorPolicy (all three booleans) or ErrorPolicyOverride (any of them)."""
    doc = json_object(doc, file, field)
    if doc is None:
        return None
    if set(doc) - set(_POLICY_FIELDS) or (not partial and set(doc) != set(_POLICY_FIELDS)):
        raise AfbenchError(
            "not one of Harbor's error policies",
            file=file,
            field=field,
            expected=f"{'some of ' if partial else ''}{', '.join(_POLICY_FIELDS)}",
            found=", ".join(sorted(doc)) or "no field",
        )
    for key, value in doc.items():
        if not isinstance(value, bool) and not (partial and value is None):
            raise shape_error(file, f"{field}.{key}", "true or false", value)
    return doc


def recorded_exceptions(result: dict, file: str, table: str) -> list[dict]:
    """The trial's exceptions, its own first, then each step's in step order (Harbor's
    TrialResult.recorded_exceptions), each with the error policy Harbor applied: the one it
    wrote beside the exception (0.26), else `table`'s with the override it wrote applied."""
    found = []
    steps = result.get("step_results")
    if steps is not None and not isinstance(steps, list):
        raise shape_error(file, "step_results", "an array or null", steps)
    places = [("exception_info", result.get("exception_info"))]
    for index, step in enumerate(steps or []):
        step = json_object(step, file, f"step_results[{index}]", nullable=False)
        places.append((f"step_results[{index}].exception_info", step.get("exception_info")))
    for field, doc in places:
        exc = json_object(doc, file, field)
        if exc is None:
            continue
        kind = exc.get("exception_type")
        if not (isinstance(kind, str) and kind):
            raise AfbenchError(f"{field} without an exception_type", file=file, field=field)
        written = _policy(exc.get("policy"), file, field + ".policy", partial=False)
        if written is not None:
            policy, source = written, "written by Harbor"
        else:
            policy = harbor.error_policy(kind, table).__dict__.copy()
            override = _policy(
                exc.get("policy_override"), file, field + ".policy_override", partial=True
            )
            policy.update({k: v for k, v in (override or {}).items() if v is not None})
            source = f"Harbor {table}'s table" + (" with the override" if override else "")
        found.append({"where": field, "type": kind, "policy": policy, "policy_source": source})
    return found


def classify_trial(
    result: dict, file: str, *, verification_disabled: bool = False, policy_table: str = "0.26.0"
) -> dict:
    """One Harbor trial's result.json -> outcome, reward, reason, read with Harbor's error
    policy (`policy_table`: harbor.error_policy_table of the Harbor that wrote it): a reward
    beside an exception whose policy says the reward is not valid is an error, never a score.

    `verification_disabled` is the job's `verifier.disable`, used when the trial's own config
    does not say."""
    if not isinstance(result, dict):
        raise AfbenchError(
            "trial result must be a JSON object",
            file=file,
            expected="a JSON object",
            found=json_type(result),
        )
    check_schema_version(result, file, "trial")
    verifier = json_object(result.get("verifier_result"), file, "verifier_result")
    rewards = (
        json_object(verifier.get("rewards"), file, "verifier_result.rewards") if verifier else None
    )
    has_reward = rewards is not None and "reward" in rewards
    reward = rewards.get("reward") if has_reward else None
    exceptions = recorded_exceptions(result, file, policy_table)
    exc_type = exceptions[0]["type"] if exceptions else None
    invalid = [e for e in exceptions if not e["policy"]["has_valid_reward"]]
    valid = bool(rewards) and not invalid
    written = result.get("reward_valid")
    if written is not None:
        if not isinstance(written, bool):
            raise shape_error(file, "reward_valid", "true or false", written)
        if written != valid:
            raise AfbenchError(
                "contradiction: reward_valid disagrees with the rewards and the error "
                "policies written beside the exceptions",
                file=file,
                field="reward_valid",
                expected=valid,
                found=written,
            )
    disabled = _verification_disabled(result, file, verification_disabled)
    if disabled and has_reward:
        raise AfbenchError(
            "contradiction: a reward although verification was disabled",
            file=file,
            field="verifier_result.rewards.reward",
        )
    numeric = isinstance(reward, int | float) and not isinstance(reward, bool)
    facts = {"exceptions": [e["type"] for e in exceptions], "reward_valid": valid}
    if has_reward and not (numeric and reward in (0, 1)):
        shown = reward if numeric and math.isfinite(reward) else repr(reward)
        return {
            "outcome": "error",
            "reward": None,
            "reason": f"invalid_reward ({shown})",
            **facts,
        }
    if has_reward and invalid:
        # Harbor graded the trial, but its own policy says the reward measures the outage,
        # not the agent: an error, whichever way the verifier went
        return {
            "outcome": "error",
            "reward": None,
            "reason": f"{invalid[0]['type']}: reward {reward:g} not valid (Harbor's error "
            f"policy, {invalid[0]['policy_source']})",
            **facts,
        }
    if has_reward and reward == 1:
        return {"outcome": "accepted", "reward": 1, "reason": exc_type or "reward 1", **facts}
    if has_reward:
        # an agent timeout that still got a verdict is the agent's failure, not infrastructure
        return {"outcome": "rejected", "reward": 0, "reason": exc_type or "reward 0", **facts}
    if disabled and exc_type in (None, "AgentTimeoutError"):
        # nothing went wrong with the infrastructure: nobody checked the answer
        reason = UNVERIFIED_REASON + (f"; {exc_type}" if exc_type else "")
        return {"outcome": "unverified", "reward": None, "reason": reason, **facts}
    if exc_type:
        return {"outcome": "error", "reward": None, "reason": exc_type, **facts}
    return {"outcome": "error", "reward": None, "reason": "no_reward", **facts}


def _normal(value: object) -> object:
    """Numbers compared by value (1 and 1.0 are one setting)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return float(value)


def _kind(key: str, default: object) -> str:
    if isinstance(default, dict):
        return "object"
    if isinstance(default, list):
        return "array"
    if isinstance(default, bool):
        return "bool"
    if key.endswith(("_multiplier", "_sec", "_mb", "_cpus", "_gpus", "_tpu")):
        return "number"
    if key.endswith(("name", "import_path", "type", "_policy")):
        return "string"
    return "any"


# (section, field, key, default, kind) for each setting, worked out once
_FIELDS = [
    (*key.rpartition(".")[::2], key, _normal(default), _kind(key, default))
    for key, default in harbor.TRIAL_SETTINGS.items()
]


SETTING_DEFAULTS = {key: default for _, _, key, default, _ in _FIELDS}


def trial_settings(config: dict, file: str, prefix: str = "config.") -> dict:
    """The behaviour-changing settings of a Harbor 0.22.0 trial config (a result.json's
    resolved `config`, or a trial's own config.json), defaults filled in."""
    sections = {"": config}
    for name in CONFIG_SECTIONS:
        sections[name] = _section(config, name, file, prefix)
    settings = {}
    for section, field, key, default, kind in _FIELDS:
        value = sections[section].get(field)
        if value is None:
            settings[key] = default
            continue
        if kind == "object":
            value = json_object(value, file, prefix + key, nullable=False)
        elif kind == "array" and not isinstance(value, list):
            raise shape_error(file, prefix + key, "an array", value)
        elif kind == "bool" and not isinstance(value, bool):
            raise shape_error(file, prefix + key, "true or false", value)
        elif kind == "number":
            value = json_number(value, file, prefix + key)
        elif kind == "string":
            value = json_string(value, file, prefix + key)
        settings[key] = value
    for key in harbor.TIMEOUT_MULTIPLIERS:
        if settings[key] == settings["timeout_multiplier"]:
            settings[key] = None  # the overall multiplier applies: the same behaviour
    if settings["agent.name"] is None and settings["agent.import_path"] is None:
        settings["agent.name"] = harbor.DEFAULT_AGENT
    if settings["environment.type"] is None and settings["environment.import_path"] is None:
        settings["environment.type"] = harbor.DEFAULT_ENVIRONMENT
    return settings


def verifier_settings(config: dict, file: str, job_default: bool) -> dict:
    """How the trial was verified (harbor.VERIFIER_SETTINGS), for the protocol check."""
    verifier = json_object(config.get("verifier"), file, "config.verifier") or {}
    settings = {}
    for key, default in harbor.VERIFIER_SETTINGS.items():
        value = verifier.get(key)
        if value is None:
            value = job_default if key == "disable" else default
        elif isinstance(default, dict):
            value = json_object(value, file, f"config.verifier.{key}", nullable=False)
        elif isinstance(default, bool) and not isinstance(value, bool):
            raise shape_error(file, f"config.verifier.{key}", "true or false", value)
        else:
            value = json_string(value, file, f"config.verifier.{key}") if default is None else value
        settings[key] = value
    return settings
