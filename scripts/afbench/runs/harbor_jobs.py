"""Harbor job folders (Harbor 0.22.0 to 0.26.0), read as a local run's attempts, each with its
meaning: Harbor's own error policy decides whether a reward counts. An infrastructure error has
no reward (null), never 0.

Each trial gets its configuration (agent name and version, model, and the settings that change
what the agent can do: timeouts, environment, attempts, retries). A trial is identified by
(trial name, task, job id) and by Harbor's trial id, and is never read twice. Harbor's retries
(it deletes each retried attempt) are read from the job's result.json and job.log."""

from __future__ import annotations

import marshal
import os
import re
import stat
import sys
from collections import Counter
from operator import itemgetter
from pathlib import Path

from afbench.core import fsutil, harbor
from afbench.core.budget import MAX_USD, USD_RULE
from afbench.core.csvtable import paused_gc
from afbench.core.errors import AfbenchError, Problem, raise_if
from afbench.core.fsutil import canonical_digest, canonical_json, parse_json_bytes
from afbench.core.harbor_files import (
    CONFIG_SECTIONS,
    JOB_SECTIONS,
    SETTING_DEFAULTS,
    JobFolder,
    TrialFolder,
    check_schema_version,
    classify_trial,
    half_written,
    job_verification_disabled,
    json_number,
    json_object,
    json_string,
    json_type,
    shape_error,
    trial_settings,
    verifier_settings,
)
from afbench.core.progress import Progress

# The largest JSON input read (a trial's result.json, a job's config.json, a verdict).
MAX_INPUT_BYTES = 64 * 1024 * 1024
# Shown in the configuration label; any other setting that differs from its default adds a
# digest of those settings to the label.
_SHOWN = {
    "agent.name",
    "agent.model_name",
    "timeout_multiplier",
    *harbor.TIMEOUT_MULTIPLIERS,
    "environment.type",
    "environment.import_path",
}


# ----------------------------------------------------------------------------- safe reading


def read_regular_file(
    path: Path | str, what: str, *, max_bytes: int = MAX_INPUT_BYTES, required: bool = True
) -> bytes | None:
    """A regular file's bytes in one open and one fstat (fsutil.read_file_once: never a link,
    FIFO, device or folder, never blocking, capped); None for an absent file when not
    `required`. A file that is there but can not be read is an error, never absent."""
    return fsutil.read_file_once(os.fspath(path), what, max_bytes, missing_ok=not required)


# ----------------------------------------------------------------------------- JSON shapes


def utf8_path(path: str) -> str:
    """A path that lands in CSV and JSON artifacts must be valid UTF-8 (a name with undecodable
    bytes reaches Python as lone surrogates)."""
    if not path.isascii():
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            shown = path.encode("utf-8", "backslashreplace").decode("ascii", "replace")
            raise AfbenchError("file name is not valid UTF-8; refusing it", file=shown) from None
    return path


# ----------------------------------------------------------------------------- trials


def _agent_info(result: dict, file: str) -> dict | None:
    info = json_object(result.get("agent_info"), file, "agent_info")
    if info is None:
        return None
    model = json_object(info.get("model_info"), file, "agent_info.model_info")
    return {
        "name": json_string(info.get("name"), file, "agent_info.name"),
        "version": json_string(info.get("version"), file, "agent_info.version"),
        "model_info": None
        if model is None
        else {
            "name": json_string(model.get("name"), file, "agent_info.model_info.name"),
            "provider": json_string(model.get("provider"), file, "agent_info.model_info.provider"),
        },
    }


def _cost(result: dict, file: str) -> float | None:
    agent_result = json_object(result.get("agent_result"), file, "agent_result")
    if agent_result is None:
        return None
    cost = json_number(agent_result.get("cost_usd"), file, "agent_result.cost_usd")
    if cost is not None and cost < 0:
        raise AfbenchError(
            "negative cost", file=file, field="agent_result.cost_usd", expected=">= 0", found=cost
        )
    if cost is not None and cost > MAX_USD:
        raise AfbenchError(
            "cost out of range",
            file=file,
            field="agent_result.cost_usd",
            expected=USD_RULE,
            found=cost,
        )
    return cost


def _model_label(model_info: dict | None) -> str | None:
    if not model_info or not model_info.get("name"):
        return None
    provider = model_info.get("provider")
    return f"{provider}/{model_info['name']}" if provider else model_info["name"]


def timeout_label(settings: dict) -> str:
    """Every timeout multiplier that applies: the overall one, then each phase's own where it
    differs from the overall one (`timeout x1 (agent x2)`)."""
    overall = settings["timeout_multiplier"]
    own = [
        f"{short} x{settings[key]:g}"
        for key, short in harbor.TIMEOUT_MULTIPLIERS.items()
        if settings[key] is not None and settings[key] != overall
    ]
    return f"timeout x{overall:g}" + (f" ({', '.join(own)})" if own else "")


def harbor_configuration(
    settings: dict, agent_info: dict | None, n_attempts: int, max_retries: int = 0
) -> dict:
    """One configuration: its identity, its label (readable and deterministic: the same
    configuration always gets the same label, whatever else is imported with it) and details.
    The job's retry setting is part of it: a retried trial is not a trial run once."""
    info = agent_info or {}
    agent = info.get("name") or settings["agent.name"] or settings["agent.import_path"]
    version = info.get("version")
    model_info = info.get("model_info")
    model = settings["agent.model_name"] or _model_label(model_info)
    environment = settings["environment.type"] or settings["environment.import_path"]
    extras = {k: v for k, v in settings.items() if k not in _SHOWN and v != SETTING_DEFAULTS[k]}
    if settings["agent.name"] not in (None, agent):
        extras["agent.name"] = settings["agent.name"]
    if model_info and settings["agent.model_name"] not in (
        None,
        model_info.get("name"),
        _model_label(model_info),
    ):
        extras["agent_info.model_info"] = model_info
    if settings["environment.type"] and settings["environment.import_path"]:
        extras["environment.import_path"] = settings["environment.import_path"]
    label = (
        f"{agent} {version or '(version unknown)'} | model {model or 'none'} | env "
        f"{environment} | {timeout_label(settings)} | n_attempts {n_attempts}"
    )
    if max_retries:
        label += f" | max_retries {max_retries}"
    if extras:
        label += " | settings " + canonical_digest(extras)[:12]
    identity = {
        "agent": agent,
        "agent_version": version,
        "model": model,
        "model_info": model_info,
        "n_attempts": n_attempts,
        "max_retries": max_retries,
        "settings": settings,
    }
    return {
        "label": label,
        "key": canonical_json(identity),
        "agent": agent,
        "agent_version": version,
        "model": model,
        "details": {
            **identity,
            "environment": environment,
            "non_default_settings": extras,
        },
    }


_RETRY_LINE = re.compile(rb"Trial (\S+) failed with exception (.+?)\. Retrying in [0-9.]+ seconds")


def _harbor_version(job_dir: str) -> tuple[str | None, str]:
    """The Harbor that wrote the job (its lock.json's harbor.version) and how that is known.
    lock.json is Harbor's record of what it resolved, not data afbench scores: one that is
    absent or unreadable as JSON leaves the version unknown, said so, never a refusal."""
    file = JobFolder(job_dir).lock
    data = read_regular_file(file, "Harbor job lock", required=False)
    if data is None:
        return None, "unknown: no lock.json"
    try:
        doc = parse_json_bytes(data, file, "Harbor job lock")
    except AfbenchError:
        return None, "unknown: lock.json is not valid JSON"
    info = doc.get("harbor") if isinstance(doc, dict) else None
    version = info.get("version") if isinstance(info, dict) else None
    if not (isinstance(version, str) and harbor.VERSION.fullmatch(version)):
        return None, "unknown: lock.json names no harbor.version"
    return version, "lock.json"


def _retry_settings(doc: dict, file: str) -> dict:
    """The job's retry settings (Harbor's RetryConfig; the plans run none: max_retries 0)."""
    retry = json_object(doc.get("retry"), file, "retry") or {}
    max_retries = retry.get("max_retries", 0)
    if type(max_retries) is not int or max_retries < 0:
        raise AfbenchError(
            "retry.max_retries must be a whole number >= 0",
            file=file,
            field="retry.max_retries",
            expected="a whole number >= 0",
            found=max_retries if isinstance(max_retries, int | str) else json_type(max_retries),
        )
    settings = {"max_retries": max_retries}
    for key in ("include_exceptions", "exclude_exceptions"):
        value = retry.get(key)
        if value is not None and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            raise shape_error(file, f"retry.{key}", "an array of exception names or null", value)
        settings[key] = sorted(value) if value is not None else None
    return settings


def _job_result(job_dir: str) -> dict:
    """What the job's result.json says of the job: its id, whether it finished, its retry
    count. A job without one, with Harbor's own half-written one, or without finished_at is
    incomplete, with the reason; anything else that is not such a document is refused."""
    file = JobFolder(job_dir).result
    data = read_regular_file(file, "Harbor job result", required=False)
    facts = {"job_id": None, "finished": False, "incomplete": None, "n_retries": None}
    if data is None:
        facts["incomplete"] = "no job result.json: the job was stopped before it recorded any"
        return facts
    try:
        doc = parse_json_bytes(data, file, "Harbor job result")
    except AfbenchError:
        reason = half_written(data)
        if reason is None:
            raise
        facts["incomplete"] = "job " + reason
        return facts
    doc = json_object(doc, file, "(top level)", nullable=False)
    check_schema_version(doc, file, "job")
    facts["job_id"] = json_string(doc.get("id"), file, "id")
    if json_string(doc.get("finished_at"), file, "finished_at") is None:
        facts["incomplete"] = (
            "the job's result.json has no finished_at: the job was stopped, or is still running"
        )
    else:
        facts["finished"] = True
    stats = json_object(doc.get("stats"), file, "stats") or {}
    n_retries = stats.get("n_retries")
    if n_retries is not None and (type(n_retries) is not int or n_retries < 0):
        raise shape_error(file, "stats.n_retries", "a whole number >= 0", n_retries)
    facts["n_retries"] = n_retries
    return facts


def _logged_retries(job_dir: str) -> dict[str, list[str]] | None:
    """Each retried trial's first attempts, by trial name: the exception type(s) each retried
    attempt raised, from Harbor's job.log ("Trial T failed with exception E. Retrying in ...",
    written at every retry since 0.22.0, appended to on resume). None without job.log. Read a
    line at a time, so a long job's log of any size is read in bounded memory."""
    path = JobFolder(job_dir).log
    if not os.path.lexists(path):
        return None
    retried: dict[str, list[str]] = {}
    with fsutil._open_regular(Path(path), "Harbor job log") as (handle, _):
        for line in handle:
            if b"Retrying in" not in line:
                continue
            found = _RETRY_LINE.search(line)
            if found:
                name, kinds = (g.decode("utf-8", "replace") for g in found.groups())
                retried.setdefault(name, []).append(kinds)
    return retried


def _job(job_dir: str) -> dict:
    """A job's config.json (required: it makes a folder a Harbor job directory), what its
    result.json says of the job (_job_result), its Harbor version (lock.json) and the error
    policy table that reads its trials, its retry settings and its logged retries."""
    file = JobFolder(job_dir).config
    data = read_regular_file(file, "Harbor job config", required=False)
    if data is None:
        raise AfbenchError("not a Harbor job directory (no config.json)", file=job_dir)
    doc = json_object(parse_json_bytes(data, file, "Harbor job config"), file, "(top level)")
    assert doc is not None
    n_attempts = doc.get("n_attempts", 1)
    if isinstance(n_attempts, bool) or not isinstance(n_attempts, int) or n_attempts < 1:
        raise AfbenchError(
            "n_attempts must be a whole number >= 1",
            file=file,
            field="n_attempts",
            expected="a whole number >= 1",
            found=json_type(n_attempts) if not isinstance(n_attempts, int) else n_attempts,
        )
    agents = doc.get("agents")
    if agents is not None and not (
        isinstance(agents, list) and all(isinstance(a, dict) for a in agents)
    ):
        raise shape_error(file, "agents", "an array of objects", agents)
    disable = job_verification_disabled(doc, file)
    retry = _retry_settings(doc, file)
    result = _job_result(job_dir)
    version, version_from = _harbor_version(job_dir)
    logged = _logged_retries(job_dir)
    table = harbor.error_policy_table(version)
    facts = {
        "job_dir": job_dir,
        "job_id": result["job_id"],
        "harbor_version": version,
        "harbor_version_from": version_from,
        "error_policy": f"{harbor.ERROR_POLICY_TABLES[table]['source']}, and any policy the "
        "trial's result.json wrote beside an exception (Harbor 0.26)",
        "finished": result["finished"],
        "incomplete": result["incomplete"],
        "retry": retry,
        "n_retries": result["n_retries"],
        "retries_logged": None if logged is None else sum(map(len, logged.values())),
    }
    return {
        "dir": job_dir,
        "file": file,
        "doc": doc,
        "n_attempts": n_attempts,
        "agents": agents,
        "verification_disabled": disable,
        "job_id": result["job_id"],
        "policy_table": table,
        "retries": logged,
        "facts": facts,
    }


# the top-level keys of a trial config that hold settings (the rest are in its sections)
_TOP_SETTINGS = tuple(key for key in harbor.TRIAL_SETTINGS if "." not in key)


def _job_trial_config(job: dict, trial: str) -> dict:
    """For an incomplete trial without its own config.json: the job's settings, when the job
    has only one agent (otherwise the trial's configuration can not be told)."""
    agents = job["agents"] or [{}]
    if len(agents) != 1:
        raise AfbenchError(
            f"incomplete trial without config.json in a job with {len(agents)} agents: "
            "its configuration can not be told",
            file=trial,
        )
    doc = job["doc"]
    config = {k: doc[k] for k in _TOP_SETTINGS if k in doc}
    config["agent"] = agents[0]
    for name in JOB_SECTIONS:
        if name in doc:
            config[name] = doc[name]
    return config


def _disagree(file: str, field: str, what: str, expected: object, found: object) -> AfbenchError:
    return AfbenchError(
        f"the job's own facts disagree: {what}; refusing this trial (a renamed, copied or "
        "edited trial folder is not the trial Harbor ran)",
        file=file,
        field=field,
        expected=expected,
        found=found,
    )


def _trial_prefix(task_id: str) -> str:
    """How Harbor 0.22.0 begins the name of every trial of this task (TrialConfig.
    generate_trial_name: the task's name, at most 32 characters, then two underscores)."""
    return task_id.rsplit("/", 1)[-1][:32].rstrip("_-") + "__"


def _check_trial_facts(
    folder: str,
    file: str,
    task_id: str,
    trial_name: str,
    config_trial_name: object,
    task_path: object,
    job_id: object,
    job: dict,
) -> None:
    """A trial's names agree with each other and with its folder and job: the folder is named
    after the trial, the trial after its task, the task after its path, and the trial's job
    is the job it sits in."""
    if trial_name != folder:
        raise _disagree(
            file,
            "trial_name",
            "the trial folder's name is not its trial's name",
            folder,
            trial_name,
        )
    if config_trial_name is not None and config_trial_name != trial_name:
        raise _disagree(
            file,
            "config.trial_name",
            "the trial's config names another trial",
            trial_name,
            config_trial_name,
        )
    if not trial_name.startswith(_trial_prefix(task_id)):
        raise _disagree(
            file,
            "trial_name",
            f"the trial is not named after its task '{task_id}'",
            _trial_prefix(task_id) + "...",
            trial_name,
        )
    if isinstance(task_path, str) and task_path and "/" not in task_id:
        named = task_path.rstrip("/").rsplit("/", 1)[-1]
        if named != task_id:
            raise _disagree(
                file,
                "config.task.path",
                "the trial's task path names another task",
                f".../{task_id}",
                task_path,
            )
    known = job["job_id"]
    if known is not None and isinstance(job_id, str) and job_id != known:
        raise _disagree(
            file,
            "config.job_id",
            "the trial belongs to another job than the folder it is in",
            f"{known} (the job's result.json)",
            job_id,
        )


def _incomplete_trial(trial: str, name: str, job: dict) -> dict:
    """What a trial without result.json tells: its task, name, job and settings (from its own
    config.json when Harbor wrote one, else from the folder's name and the job)."""
    file = TrialFolder(trial).config
    data = read_regular_file(file, "trial config", required=False)
    if data is not None and not data.strip():
        data = None  # Harbor's own empty one (a full disk): as if it had written none
    if data is None:
        return {
            "task_id": name.split("__")[0],
            "trial_name": name,
            "job_id": job["job_id"],
            "settings": trial_settings(_job_trial_config(job, trial), job["file"], ""),
            "settings_from": "job",
        }
    doc = json_object(parse_json_bytes(data, file, "trial config"), file, "(top level)")
    assert doc is not None
    task = json_object(doc.get("task"), file, "task") or {}
    path = json_string(task.get("path"), file, "task.path")
    task_name = json_string(task.get("name"), file, "task.name")
    trial_name = json_string(doc.get("trial_name"), file, "trial_name") or name
    job_id = json_string(doc.get("job_id"), file, "job_id")
    task_id = path.rstrip("/").rsplit("/", 1)[-1] if path else task_name or name.split("__")[0]
    _check_trial_facts(name, file, task_id, trial_name, None, path, job_id, job)
    return {
        "task_id": task_id,
        "trial_name": trial_name,
        "job_id": job_id or job["job_id"],
        "settings": trial_settings(doc, file, ""),
        "settings_from": "trial",
    }


def _trial_folders(job_dir: str) -> list[str]:
    """The names of a job folder's trial folders, sorted; anything but trial folders and
    regular job files is refused, and a folder that can not be listed is an error."""
    names = []
    try:
        with os.scandir(job_dir) as entries:
            for entry in entries:
                name = entry.name
                if name.startswith("."):
                    continue  # not Harbor's (its trial folders are named <task>__<id>)
                if not name.isascii():
                    utf8_path(entry.path)
                if entry.is_dir(follow_symlinks=False):
                    names.append(name)
                elif entry.is_symlink():
                    raise AfbenchError(
                        "symbolic link in a Harbor job directory; refusing it (Harbor writes "
                        "trial folders and job files, never links)",
                        file=entry.path,
                    )
                elif not entry.is_file(follow_symlinks=False):
                    kind = fsutil.file_kind(entry.stat(follow_symlinks=False).st_mode)
                    raise AfbenchError(
                        f"neither a trial folder nor a job file ({kind}); refusing it",
                        file=entry.path,
                    )
    except OSError as exc:
        raise AfbenchError(
            f"cannot list the Harbor job directory: {exc.strerror}", file=job_dir
        ) from None
    names.sort()
    return names


def read_harbor_job(job_dir: Path, named: str | None = None) -> list[dict]:
    """Every trial of one Harbor job directory (0.22.0 to 0.26.0), with its outcome, its
    configuration, its retries and the job's own facts (`job`: _job). `named`: the folder as
    the config names it, which the attempts record in place of `job_dir` (where this machine,
    or a storage plugin, keeps its copy); refusals still name `job_dir`, the files read.

    A symbolic link, FIFO, socket or device in the job directory, and a result.json that is not
    a regular file, are refused; a trial folder without result.json, or with Harbor's own empty
    or half-written one, is `incomplete`; a folder or file that can not be read is an error,
    never absent. The job's own facts must agree:
    each trial folder is named after its trial, each trial after its task and its task path,
    each belongs to this job (its job id), no trial id is there twice, and no task has more
    trials of a configuration than the job's n_attempts (times its agents).

    Linear in the trials: each result.json is opened once (O_NOFOLLOW) and checked with one
    fstat, and the settings of a trial config are read once per distinct configuration."""
    job_dir = utf8_path(os.fspath(job_dir))
    try:
        info = os.stat(job_dir)
    except FileNotFoundError:
        raise AfbenchError("not a Harbor job directory (no such folder)", file=job_dir) from None
    except OSError as exc:
        raise AfbenchError(
            f"cannot read the Harbor job directory: {exc.strerror}", file=job_dir
        ) from None
    if not stat.S_ISDIR(info.st_mode):
        raise AfbenchError("not a Harbor job directory (not a folder)", file=job_dir)
    job = {**_job(job_dir), "named": named}
    names = _trial_folders(job_dir)
    # the loop makes no reference cycles, yet the collector would walk every attempt and parsed
    # trial again and again as they pile up (about 7% of an import of 100,000 trials)
    with (
        paused_gc(),
        Progress(len(names), f"reading {os.path.basename(job_dir.rstrip('/')) or job_dir}") as bar,
    ):
        attempts = _read_trials(job, job_dir, names, bar)
    _check_attempt_counts(job, attempts)
    if named is not None:
        record_as(attempts, job_dir, named)
        job["facts"]["job_dir"] = named
    # no trial twice in one job: each is named after its folder (one name per folder) and no
    # trial id is read twice (_read_trials); across jobs, summarize_run's check_unique_trials
    return attempts


def record_as(attempts: list[dict], folder: str, named: str) -> None:
    """Each attempt's trial_dir under `named` instead of `folder`, the trial's own name kept."""
    read_under, shown_under = (os.path.join(f, "") for f in (folder, named))
    for attempt in attempts:
        attempt["trial_dir"] = shown_under + attempt["trial_dir"].removeprefix(read_under)


def _trial_retries(job: dict, trial_name: str) -> tuple[int | None, list[str]]:
    """How often Harbor retried this trial before the attempt whose folder is left, and what
    each earlier attempt raised: from job.log. A trial job.log does not name ran once only
    when no retry is unaccounted for: no job.log, or one naming fewer retries than the job's
    own stats.n_retries (a log cut short, or replaced), leaves it unknown (None) unless no
    retry can have happened (max_retries 0, or the job counts none)."""
    facts = job["facts"]
    first = (job["retries"] or {}).get(trial_name, [])
    if first:
        return len(first), first
    counted, logged = facts["n_retries"], facts["retries_logged"]
    if logged is not None and (counted is None or counted <= logged):
        return 0, []
    if facts["retry"]["max_retries"] == 0 or counted == 0:
        return 0, []
    return None, []


def _read_trials(job: dict, job_dir: str, names: list[str], bar: Progress) -> list[dict]:
    """read_harbor_job's loop over the trial folders `names` of `job`."""
    # each trial folder's path and its result.json's, as JobFolder.trial names them, without
    # a TrialFolder of five paths for each trial
    under = JobFolder(job_dir).trial("").path
    result_file = TrialFolder("").result
    n_attempts, disabled = job["n_attempts"], job["verification_disabled"]
    max_retries = job["facts"]["retry"]["max_retries"]
    table = job["policy_table"]
    fallback_job_id = job["job_id"]
    if fallback_job_id is None:
        fallback_job_id = f"job at {job['named'] or os.path.realpath(job_dir)}"
    read = fsutil.read_file_once
    intern = sys.intern
    attempts, pending = [], []
    configurations: dict[str, dict] = {}
    # a trial's settings sections, serialised -> [its configuration, its verifier settings]
    known: dict[bytes, list] = {}
    trial_ids: dict[str, str] = {}
    graded: dict[bytes, dict] = {}  # classify_trial's fields, serialised -> its classification
    for name in names:
        bar.advance()
        trial = under + name
        file = trial + result_file
        data = read(file, "trial result.json", MAX_INPUT_BYTES, missing_ok=True)
        reason = "no result.json" if data is None else None
        if data is not None:
            try:
                result = parse_json_bytes(data, file, "trial result")
            except AfbenchError:
                reason = half_written(data)
                if reason is None:
                    raise
        if reason is not None:
            facts = _incomplete_trial(trial, name, job)
            retries, first = _trial_retries(job, facts["trial_name"])
            attempt = {
                "task_id": facts["task_id"],
                "outcome": "incomplete",
                "reward": None,
                "reason": reason,
                "cost_usd": None,
                "trial_name": facts["trial_name"],
                "trial_id": None,
                "job_id": facts["job_id"] or fallback_job_id,
                "trial_dir": trial,
                "task_checksum": None,
                "settings_from": facts["settings_from"],
                "retries": retries,
                "first_attempts": first,
                "job": job["facts"],
                "replaced_by": None,
            }
            pending.append((attempt, facts["settings"]))
            attempts.append(attempt)
            continue
        config = result.get("config") if type(result) is dict else None
        if type(config) is dict:
            # a trial's outcome is classify_trial's of these fields alone (and of the job's
            # verifier.disable and policy table): one classification per distinct set of them,
            # serialised as the settings are below (most trials of a job have one of a few)
            grade = marshal.dumps(
                (
                    result.get("schema_version"),
                    result.get("verifier_result"),
                    result.get("exception_info"),
                    result.get("step_results"),
                    result.get("reward_valid"),
                    config.get("verifier"),
                ),
                2,
            )
            attempt = graded.get(grade)
            if attempt is None:
                attempt = graded[grade] = classify_trial(
                    result, file, verification_disabled=disabled, policy_table=table
                )
        else:
            attempt = classify_trial(
                result, file, verification_disabled=disabled, policy_table=table
            )
        if type(config) is not dict:
            config = json_object(config, file, "config", nullable=False)
        task_id = result.get("task_name")
        if type(task_id) is not str:
            task_id = json_string(task_id, file, "task_name", nullable=False)
        trial_name = result.get("trial_name")
        if type(trial_name) is not str:
            trial_name = json_string(trial_name, file, "trial_name", nullable=False)
        job_id = config.get("job_id")
        if job_id is not None and type(job_id) is not str:
            job_id = json_string(job_id, file, "config.job_id")
        task = config.get("task")
        task_path = task.get("path") if type(task) is dict else None
        _check_trial_facts(
            name, file, task_id, trial_name, config.get("trial_name"), task_path, job_id, job
        )
        trial_id = result.get("id")
        if trial_id is not None and type(trial_id) is not str:
            trial_id = json_string(trial_id, file, "id")
        if trial_id is not None:
            if trial_id in trial_ids:
                raise _disagree(
                    file,
                    "id",
                    f"two trial folders hold the same trial (the other is {trial_ids[trial_id]})",
                    "a trial id of its own",
                    trial_id,
                )
            trial_ids[trial_id] = trial
        # settings are read once per configuration: the sections that hold them, serialised,
        # key the configuration already made from them. marshal's version 2 writes each value
        # with its type (1, 1.0 and True differ) and no back-references, so equal sections give
        # equal bytes and a key is never shared by two different settings; at half repr's cost
        key = marshal.dumps(
            (
                *map(config.get, CONFIG_SECTIONS),
                [config.get(k) for k in _TOP_SETTINGS],
                result.get("agent_info"),
            ),
            2,
        )
        seen = known.get(key)
        if seen is None:
            settings = trial_settings(config, file)
            made = harbor_configuration(
                settings, _agent_info(result, file), n_attempts, max_retries
            )
            configuration = configurations.setdefault(made["key"], made)
            seen = known[key] = [configuration, None, _configuration_fields(configuration)]
        checksum = result.get("task_checksum")
        if checksum is not None and type(checksum) is not str:
            checksum = json_string(checksum, file, "task_checksum")
        retries, first = _trial_retries(job, trial_name)
        cost = _cost(result, file)
        if seen[1] is None:  # the verifier section is part of the key: read once per key
            seen[1] = verifier_settings(config, file, disabled)
        # the text a job repeats (its id, each task's name and checksum, the reasons) held
        # once, not once per trial; the trial's name is its folder's (checked above)
        attempts.append(
            {
                "task_id": intern(task_id),
                "outcome": attempt["outcome"],
                "reward": attempt["reward"],
                "reason": intern(attempt["reason"]),
                "cost_usd": cost,
                "trial_name": name,
                "trial_id": trial_id,
                "job_id": intern(job_id) if job_id else fallback_job_id,
                "trial_dir": trial,
                "task_checksum": checksum if checksum is None else intern(checksum),
                "verifier": seen[1],
                "settings_from": "trial",
                "retries": retries,
                "first_attempts": first,
                "job": job["facts"],
                "replaced_by": None,
                **seen[2],
            }
        )
    for attempt, settings in pending:
        # an incomplete trial has no agent_info: take it from the finished trials of this job
        # with the very same settings when they agree on one; otherwise the version is unknown
        infos = {
            canonical_json([c["agent"], c["agent_version"], c["details"]["model_info"]]): c
            for c in configurations.values()
            if c["details"]["settings"] == settings
        }
        like = next(iter(infos.values())) if len(infos) == 1 else None
        info = (
            {
                "name": like["agent"],
                "version": like["agent_version"],
                "model_info": like["details"]["model_info"],
            }
            if like
            else None
        )
        configuration = harbor_configuration(settings, info, n_attempts, max_retries)
        configuration = configurations.setdefault(configuration["key"], configuration)
        attempt.update(_configuration_fields(configuration))
    return attempts


def _check_attempt_counts(job: dict, attempts: list[dict]) -> None:
    """A job runs each task n_attempts times per agent: more trials than that of one task and
    configuration are not this job's attempts (a trial folder copied in, or two jobs merged),
    and would be counted as best-of-more under a label that says n_attempts."""
    limit = job["n_attempts"] * max(1, len(job["agents"] or ()))
    key = itemgetter("task_id", "configuration")
    over = [k for k, n in Counter(map(key, attempts)).items() if n > limit]
    if over:
        task_id, label = over[0]
        dirs = [a["trial_dir"] for a in attempts if key(a) == over[0]]
        more = f"; and {len(over) - 1} more task(s) like it" if len(over) > 1 else ""
        shown = ", ".join(os.path.basename(d) for d in dirs[:5])
        shown += f" and {len(dirs) - 5} more" if len(dirs) > 5 else ""
        raise AfbenchError(
            f"the job's own facts disagree: it says n_attempts {job['n_attempts']}"
            f"{' with ' + str(len(job['agents'])) + ' agents' if job['agents'] else ''}, yet "
            f"holds {len(dirs)} trials of task '{task_id}' in configuration '{label}' ({shown})"
            f"{more}; refusing the job (trials copied in, or two jobs in one folder?)",
            file=job["file"],
            field="n_attempts",
            expected=f"at most {limit} trial(s) per task and configuration",
            found=len(dirs),
        )


def _configuration_fields(configuration: dict) -> dict:
    return {
        "configuration": configuration["label"],
        "agent": configuration["agent"],
        "agent_version": configuration["agent_version"],
        "model": configuration["model"],
        "configuration_details": configuration["details"],
        "identity": None,
    }


def _identities(attempt: dict) -> list[tuple]:
    """What makes a trial the trial it is: (trial name, task, job id), and Harbor's own trial
    id (a new UUID for every trial Harbor runs, retries included) whatever the job ids say."""
    if attempt.get("identity") is not None:
        return [attempt["identity"]]
    keys = [("trial", attempt["trial_name"], attempt["task_id"], attempt["job_id"])]
    if attempt.get("trial_id"):
        keys.append(("trial id", attempt["trial_id"]))
    return keys


def check_unique_trials(attempts: list[dict]) -> None:
    """Refuse a trial (or verdict file) seen twice: the same folder passed twice, or a copy
    (in another job folder too, whatever job id its copy was given). Duplicates are grouped by
    the pair of folders holding them, each group naming both paths of its first trial."""
    first: dict[tuple, str] = {}
    groups: dict[tuple[str, str], list[tuple[str, str, tuple]]] = {}
    for attempt in attempts:
        path = attempt["trial_dir"]
        keys = _identities(attempt)
        for key in keys:
            if key in first:
                pair = (str(Path(first[key]).parent), str(Path(path).parent))
                groups.setdefault(pair, []).append((first[key], path, key))
                break
        for key in keys:
            first.setdefault(key, path)
    problems = []
    for (one, other), dups in groups.items():
        a, b, key = dups[0]
        if key[0] == "trial":
            what = f"trial '{key[1]}' (task {key[2]}, job {key[3]})"
        elif key[0] == "trial id":
            what = f"trial (Harbor's trial id {key[1]}, whatever job id each copy names)"
        else:
            what = "verdict file"
        more = f"; and {len(dups) - 1} more of {one} seen again in {other}" if len(dups) > 1 else ""
        if a == b:
            more += " (the same folder given twice?)"
        problems.append(
            Problem(
                f"the same {what} is read twice: {a} and {b}{more}; pass each trial once",
                file=b,
                field="paths",
            )
        )
    raise_if(problems)
