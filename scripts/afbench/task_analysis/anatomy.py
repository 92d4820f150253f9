"""Failure anatomy: why each failed task failed, one class per task, for every official model
and every local run configuration.

Every task a model did not solve (a local configuration did not get accepted) is put in
exactly one class, the first of CLASSES that applies (the precedence):

1. infrastructure: the environment decided, not the model (official `stop_reason`
   `infrastructure_error`; a local task whose outcome is `error`, which afbench never counts as
   a wrong answer). Nothing about the attempt says anything about the model.
2. no verdict (local runs only): nothing decided the task (`unverified`, `incomplete`,
   `missing`).
3. over budget: the record's reported cost is above the nominal budget (the budget audit's
   list): whatever else happened, it is not a result within the protocol's budget.
4. budget or time stop: the attempt ran out (official `budget_exhausted` or `time_limit`; a
   local rejection whose trial ended in Harbor's `AgentTimeoutError`): more budget or time
   might have solved it.
5. near miss: the model stopped on its own with at least `near_miss_share` of the task's proof
   obligations accepted;
6. partial: some, but fewer, obligations accepted;
7. none: no obligation accepted;
8. progress unknown (local runs only): rejected, but the run records no per-obligation
   progress (a Harbor reward is 0 or 1; a verdict's obligations are not carried into the run's
   outcomes).

The classes of a model sum to its failures (a test holds it on the demo). For local Harbor
runs each infrastructure failure also gets an advisory class from its trials' exception types
(ADVISORY): the environment's, the verifier's, the model API's, credentials or model name, or
the agent's own. It is deterministic and it never changes a verdict: the task stays an error
(reward null), counted as afbench counts errors.

Harbor 0.22.0 writes each failed trial's exception type into its result.json (the run's
`reason`) and a traceback into `exception.txt`; only the type reaches the run's artifacts, so
the logs are not read here (a job reads only its declared inputs). The table below is ours,
from Harbor 0.22.0's own exception classes and its default retry policy (RetryConfig's
`exclude_exceptions`, the errors Harbor itself deems not worth a retry); where afbench.core.harbor
carries Harbor's error-policy table, that table is the one to follow.
"""

from __future__ import annotations

import math
from collections import Counter

from afbench.core.errors import AfbenchError
from afbench.kinds import FAILURE_ANATOMY, RUN_FAILURE_ANATOMY
from afbench.kinds.analysis import ADVISORY_CLASSES, LOCAL_CLASSES, OFFICIAL_CLASSES
from afbench.kinds.analysis import FAILURE_CLASSES as CLASSES

LABELS = {
    "infrastructure": "infrastructure",
    "no_verdict": "no verdict",
    "over_budget": "over budget",
    "budget_or_time_stop": "budget or time stop",
    "near_miss": "near miss",
    "partial": "partial",
    "none": "none",
    "progress_unknown": "progress unknown",
}
STOPS = ("budget_exhausted", "time_limit")
INFRASTRUCTURE_STOP = "infrastructure_error"
NO_VERDICT = ("unverified", "incomplete", "missing")
AGENT_TIMEOUT = "AgentTimeoutError"

METHOD = (
    "each failed task in exactly one class, the first that applies: infrastructure (stop_reason "
    "infrastructure_error) > over budget (reported cost above the nominal budget) > budget or "
    "time stop (budget_exhausted or time_limit) > near miss (at least {share:g} of the task's "
    "obligations accepted) > partial (some accepted) > none (none accepted)"
)
LOCAL_METHOD = (
    "each task not accepted in exactly one class, the first that applies: infrastructure (an "
    "error outcome, never a wrong answer) > no verdict (unverified, incomplete, missing) > over "
    "budget (an attempt's reported cost above the budget) > budget or time stop (rejected after "
    "Harbor's AgentTimeoutError) > progress unknown (rejected; the run records no "
    "per-obligation results)"
)

# Harbor 0.22.0's exception types (harbor.trial.errors, harbor.verifier.verifier,
# harbor.environments.base, harbor.agents.installed.base) -> whose failure it most likely is.
# Advisory: it never changes a verdict.
ADVISORY = {
    "environment": (
        "EnvironmentStartTimeoutError",
        "AgentSetupTimeoutError",
        "HealthcheckError",
        "SandboxBuildFailedError",
        "ServiceOperationsUnsupportedError",
        "GKEExecStreamClosedError",
    ),
    "verifier": (
        "VerifierTimeoutError",
        "VerifierOutputParseError",
        "RewardFileNotFoundError",
        "RewardFileEmptyError",
        "AddTestsDirError",
        "DownloadVerifierDirError",
        "invalid_reward",  # afbench: a reward that is neither 0 nor 1
        "no_reward",  # afbench: neither a reward nor an exception
    ),
    "model_api": (
        "ApiError",
        "ApiRateLimitError",
        "ApiUsageLimitError",
        "ApiInternalServerError",
        "ApiOverloadedError",
        "ApiConnectionClosedError",
        "ApiResponseStalledError",
        "ApiConnectionError",
        "ApiProviderResourceNotFoundError",
        "UnknownApiError",
        "NetworkConnectionError",
    ),
    "credentials_or_model": ("AgentAuthenticationError", "ModelNotFoundError"),
    "agent": (
        "AgentTimeoutError",
        "AgentSafetyRefusalError",
        "OutputTokenExceededError",
        "ContextWindowExceededError",
        "NonZeroAgentExitCodeError",
    ),
}
assert (*ADVISORY, "unknown", "mixed") == ADVISORY_CLASSES  # the declared set, in order
_ADVISORY_OF = {name: cls for cls, names in ADVISORY.items() for name in names}
ADVISORY_METHOD = (
    "advisory, never a verdict: each errored task's trial exception types (Harbor 0.22.0) "
    "mapped to environment, verifier, model API, credentials or model name, or the agent's own; "
    "unknown for any other type, mixed when its attempts disagree"
)
# reasons afbench writes for attempts that are not errors (harborfiles.classify_trial)
_NOT_ERRORS = {"reward 0", "reward 1", "no trial"}


def _share_ok(share: object) -> float:
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
        raise AfbenchError(
            "the near-miss share must be a number above 0 and at most 1",
            field="near_miss_share",
            expected="0 < share <= 1",
            found=share,
        )
    return float(share)


def progress_class(accepted: int, total: int, share: float) -> str:
    """near miss, partial or none, by the share of obligations accepted."""
    if accepted <= 0:
        return "none"
    return "near_miss" if accepted >= share * total else "partial"


def official_class(record: dict, over_budget: bool, share: float) -> str:
    """One failed official record's class (see the module's precedence)."""
    if record["stop_reason"] == INFRASTRUCTURE_STOP:
        return "infrastructure"
    if over_budget:
        return "over_budget"
    if record["stop_reason"] in STOPS:
        return "budget_or_time_stop"
    return progress_class(record["obligations_accepted"], record["n_obligations"], share)


def exception_types(reason: str | None) -> list[str]:
    """The exception types in a local outcome's reason (its attempts' reasons joined by '; '),
    without the reasons of attempts that were not errors."""
    types = []
    for part in (reason or "").split("; "):
        part = part.strip()
        if not part or part in _NOT_ERRORS:
            continue
        if part.startswith("invalid_reward"):
            part = "invalid_reward"
        types.append(part)
    return types


def advisory_class(reason: str | None) -> str:
    """Whose failure an errored local task most likely was, from its exception types."""
    classes = {_ADVISORY_OF.get(t, "unknown") for t in exception_types(reason)}
    if not classes:
        return "unknown"
    return classes.pop() if len(classes) == 1 else "mixed"


def local_class(row: dict, over_budget: bool) -> str:
    """One not-accepted local outcome's class (see the module's precedence)."""
    outcome = row["outcome"]
    if outcome == "error":
        return "infrastructure"
    if outcome in NO_VERDICT:
        return "no_verdict"
    if over_budget:
        return "over_budget"
    if AGENT_TIMEOUT in exception_types(row.get("reason")):
        return "budget_or_time_stop"
    return "progress_unknown"


def _counts(classes: list[str], allowed: tuple[str, ...]) -> dict[str, int]:
    found = Counter(classes)
    return {c: found.get(c, 0) for c in allowed}


def official_model(imp: dict, share: float) -> dict:
    """One model import's failures by class, and each failed task with its class."""
    over = {o["task_id"] for o in imp["budget_audit"]["over_budget"]}
    tasks = []
    for rec in imp["records"]:
        if rec["success"]:
            continue
        tasks.append(
            {
                "task_id": rec["task_id"],
                "class": official_class(rec, rec["task_id"] in over, share),
                "obligations_accepted": rec["obligations_accepted"],
                "n_obligations": rec["n_obligations"],
                "stop_reason": rec["stop_reason"],
                "cost_usd": rec["cost_usd"],
            }
        )
    failures = imp["tasks"] - imp["passes"]
    if len(tasks) != failures:
        raise AfbenchError(
            "the import's records do not add up to its passes: import the model again",
            field="records",
            expected=f"{failures} failed records",
            found=len(tasks),
        )
    return {
        "model": imp["model"],
        "display_name": imp["display_name"],
        "tasks": imp["tasks"],
        "passes": imp["passes"],
        "failures": failures,
        "counts": _counts([t["class"] for t in tasks], OFFICIAL_CLASSES),
        "failed_tasks": tasks,
    }


def _same(imports: list[dict], field: str) -> object:
    values = {repr(imp[field]) for imp in imports}
    if len(values) > 1:
        raise AfbenchError(
            "the model imports differ in a field they must share: import them again together",
            field=field,
            expected="one value",
            found=sorted(values),
        )
    return imports[0][field]


def official_anatomy(imports: list[dict], near_miss_share: float) -> dict:
    """The failure anatomy of the official model imports (whole imports, with records), in the
    leaderboard's order (most passes first, then by slug)."""
    from afbench.imports.official import distinct_models
    from afbench.report.analysis import leaderboard_order

    share = _share_ok(near_miss_share)
    distinct_models(imports, "failure anatomy")
    if not imports:
        raise AfbenchError("no model import given", field="--import")
    condition = _same(imports, "source_condition")
    budget = _same(imports, "budget_usd")
    release = _same(imports, "release")
    models = [official_model(imp, share) for imp in leaderboard_order(imports)]
    return FAILURE_ANATOMY.record(
        scope="official",
        note="Why the reported failures failed: the authors' records as given, one class per "
        "failed task. Not a local capability score.",
        license=imports[0]["license"],
        release=release,
        source_condition=condition,
        budget_usd=budget,
        near_miss_share=share,
        method=METHOD.format(share=share),
        classes=list(OFFICIAL_CLASSES),
        labels={c: LABELS[c] for c in OFFICIAL_CLASSES},
        inputs={p: s for imp in imports for p, s in sorted(imp["inputs"].items())},
        models=models,
    )


def configuration_rows(summary: dict, rows: list[dict], file: str = "outcomes") -> dict:
    """A run's outcome rows (runs.OUTCOME_COLUMNS) by configuration, refused unless they are
    this summary's: each configuration's rows one per selected task, counted as it counts
    them."""
    known = {c["configuration"]: c for c in summary["configurations"]}
    by_config: dict[str, list[dict]] = {label: [] for label in known}
    for row in rows:
        if row["configuration"] not in by_config:
            raise AfbenchError(
                f"a configuration that run '{summary['run']}' does not have (not the outcomes "
                "of this summary)",
                file=file,
                field="configuration",
                expected=sorted(known),
                found=row["configuration"],
            )
        by_config[row["configuration"]].append(row)
    for label, config in known.items():
        config_rows = by_config[label]
        if len(config_rows) != summary["selection"]["tasks"]:
            raise AfbenchError(
                f"run '{summary['run']}', configuration '{label}': its outcomes are not one "
                "row per selected task (not the outcomes of this summary)",
                file=file,
                expected=f"{summary['selection']['tasks']} rows",
                found=f"{len(config_rows)} rows",
            )
        counted = Counter(r["outcome"] for r in config_rows)
        if any(counted.get(o, 0) != n for o, n in config["counts"].items()):
            raise AfbenchError(
                f"run '{summary['run']}', configuration '{label}': its outcomes do not match "
                "its summary's counts (not the outcomes of this summary)",
                file=file,
                field="outcome",
                expected=config["counts"],
                found=dict(counted),
            )
    return by_config


def local_anatomy(summary: dict, rows: list[dict], file: str = "outcomes") -> dict:
    """A local run's failure anatomy, per configuration, from its summary (each
    configuration's budget audit) and its outcome rows (runs.OUTCOME_COLUMNS)."""
    configurations = []
    by_config = configuration_rows(summary, rows, file)
    for config in summary["configurations"]:
        label = config["configuration"]
        config_rows = by_config[label]
        counted = Counter(r["outcome"] for r in config_rows)
        over = {o["task_id"] for o in config["budget_audit"]["over_budget"]}
        tasks = []
        for row in config_rows:
            if row["outcome"] == "accepted":
                continue
            cls = local_class(row, row["task_id"] in over)
            tasks.append(
                {
                    "task_id": row["task_id"],
                    "class": cls,
                    "outcome": row["outcome"],
                    "reason": row["reason"],
                    "advisory": advisory_class(row["reason"]) if cls == "infrastructure" else None,
                    "cost_usd": row["cost_usd"],
                }
            )
        advisory = Counter(t["advisory"] for t in tasks if t["advisory"] is not None)
        configurations.append(
            {
                "configuration": label,
                "tasks": len(config_rows),
                "accepted": counted.get("accepted", 0),
                "failures": len(tasks),
                "counts": _counts([t["class"] for t in tasks], LOCAL_CLASSES),
                "advisory": {c: advisory.get(c, 0) for c in ADVISORY_CLASSES},
                "failed_tasks": tasks,
            }
        )
    return RUN_FAILURE_ANATOMY.record(
        scope="local run",
        note="Why the local run's tasks failed, one class per task; infrastructure failures "
        "carry an advisory class that never changes a verdict. Source-free, unattested.",
        release=summary["release"],
        run=summary["run"],
        selection=summary["selection"],
        method=LOCAL_METHOD,
        advisory_method=ADVISORY_METHOD,
        classes=list(LOCAL_CLASSES),
        labels={c: LABELS[c] for c in LOCAL_CLASSES},
        advisory_classes=list(ADVISORY_CLASSES),
        configurations=configurations,
    )


def read_outcome_rows(path) -> list[dict]:
    """A run's outcomes.csv (as afbench wrote it) as rows of plain values: text unescaped,
    cost a number or None."""
    from pathlib import Path

    from afbench.core.csvtable import read_table
    from afbench.core.fsutil import csv_text_value, read_regular_file
    from afbench.runs.harbor_jobs import MAX_INPUT_BYTES
    from afbench.runs.summary import OUTCOME_COLUMNS, OUTCOMES

    file = str(path)
    table = read_table(
        read_regular_file(Path(path), "run outcomes", MAX_INPUT_BYTES),
        file,
        {c: c for c in OUTCOME_COLUMNS},
    )
    rows = []
    for number, cells in zip(table.row_numbers, table.rows, strict=True):
        row = {k: csv_text_value(v) for k, v in cells.items()}
        if row["outcome"] not in OUTCOMES:
            raise AfbenchError(
                "not an outcome",
                file=file,
                row=number,
                field="outcome",
                expected=" / ".join(OUTCOMES),
                found=row["outcome"],
            )
        try:
            cost = float(row["cost_usd"]) if row["cost_usd"] else None
        except ValueError:
            cost = math.nan
        if cost is not None and not math.isfinite(cost):
            raise AfbenchError(
                "not a finite number",
                file=file,
                row=number,
                field="cost_usd",
                expected="a number such as 12.5, or empty",
                found=row["cost_usd"],
            )
        rows.append({**row, "cost_usd": cost})
    return rows


def check_run_anatomy(anatomy: dict, summary: dict, file: str) -> None:
    """Refuse a run's anatomy that was not made from this run summary."""
    if (
        anatomy.get("scope") != "local run"
        or (anatomy["run"], anatomy["selection"])
        != (
            summary["run"],
            summary["selection"],
        )
        or [c["configuration"] for c in anatomy["configurations"]]
        != [c["configuration"] for c in summary["configurations"]]
    ):
        raise AfbenchError(
            "the run's failure anatomy was not made from this run's summary: build it again",
            file=file,
            expected=f"run '{summary['run']}'",
            found=f"run '{anatomy.get('run')}'",
        )


def summary_of(anatomy: dict) -> dict:
    """What the analysis and the report carry of an anatomy: the counts, not the tasks."""
    if anatomy["scope"] == "official":
        return {
            "models": [
                {k: v for k, v in m.items() if k != "failed_tasks"} for m in anatomy["models"]
            ],
        }
    return {
        "run": anatomy["run"],
        "configurations": [
            {k: v for k, v in c.items() if k != "failed_tasks"} for c in anatomy["configurations"]
        ],
    }


def analysis_block(official: dict | None, runs: list[dict]) -> dict:
    """The analysis' `anatomy` key: the official models' classes and each local run's."""
    return {
        "classes": list(CLASSES),
        "labels": dict(LABELS),
        "method": official["method"] if official else None,
        "local_method": LOCAL_METHOD,
        "near_miss_share": official["near_miss_share"] if official else None,
        "advisory_method": ADVISORY_METHOD,
        "advisory_classes": list(ADVISORY_CLASSES),
        "official": summary_of(official)["models"] if official else None,
        "local_runs": [summary_of(run) for run in runs],
    }


def _shown_models(imports: list[dict]) -> tuple[dict, list]:
    from afbench.report.analysis import leaderboard_order

    inputs = {p: s for imp in imports for p, s in sorted(imp["inputs"].items())}
    models = [(imp["model"], imp["passes"]) for imp in leaderboard_order(imports)]
    return inputs, models


def check_made_from(artifact: dict, models: list, imports: list[dict], file: str) -> None:
    """Refuse an artifact that was not made from exactly these model imports (their pins and
    passes): an older one, or one of other models."""
    inputs, shown = _shown_models(imports)
    if artifact["inputs"] != inputs or models != shown:
        raise AfbenchError(
            f"the {artifact['kind'].removeprefix('afbench ')} was not made from the model "
            "imports the report shows (an older one?): build it again",
            file=file,
            field="inputs",
            expected=f"models {[m for m, _ in shown]}",
            found=f"models {[m for m, _ in models]}",
        )


def check_official_anatomy(anatomy: dict, imports: list[dict], file: str) -> None:
    if anatomy.get("scope") != "official":
        raise AfbenchError(
            "not the official failure anatomy",
            file=file,
            field="scope",
            expected="official",
            found=anatomy.get("scope"),
        )
    check_made_from(anatomy, [(m["model"], m["passes"]) for m in anatomy["models"]], imports, file)
