"""Local run summaries: each task's outcome within a configuration, its attempts, pass@k, and
the run's summary with its bounds and retries (unknown outcomes are shown as bounds, never
guessed), from the attempts the verdict and Harbor job readers (afbench.runs.verdicts,
afbench.runs.harbor_jobs) give. Configurations are never pooled; afbench's own reruns count in no
outcome, only in what their task cost. And the relations a run summary is held to: its
selection, its tables, its sealed decision."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from afbench.core.budget import budget_audit
from afbench.core.errors import AfbenchError, Problem, raise_if
from afbench.core.fsutil import check_name
from afbench.kinds.runs import ATTEMPTS as ATTEMPTS_TABLE
from afbench.kinds.runs import OUTCOME_VALUES
from afbench.kinds.runs import OUTCOMES as OUTCOMES_TABLE
from afbench.runs.harbor_jobs import check_unique_trials

OUTCOMES = OUTCOME_VALUES
LOCAL_NOTE = (
    "Local run, source-free, unattested: verdict provenance (images, kernels, "
    "submitted files) is not proven by these files. Never comparable to, nor merged "
    "with, the official source-present leaderboard."
)
ATTEMPT_RULE = (
    "within one configuration, a task is accepted if any attempt was accepted; otherwise "
    "error if any attempt errored, incomplete if any was incomplete, unverified if any was "
    "not verified, else rejected"
)
RERUN_RULE = (
    "an afbench attempt that a later one replaced (a sealed sequential comparison reruns an "
    "errored trial as a new attempt, its own Harbor job) is no attempt of its own: it counts in "
    "no outcome, attempt or pass@k, only in what its task cost"
)
CONFIGURATION_RULE = (
    "one result per configuration: agent name and version, model, and the Harbor settings that "
    "change what the agent can do (timeout multipliers and overrides, environment type, import "
    "path, resources and kwargs, agent kwargs, skills, tools and allowed hosts, instructions, "
    "job n_attempts). Configurations are never pooled; pass@k is computed within one "
    "configuration only. A trial is identified by (trial name, task, job id) and may be read "
    "once only."
)
BOUNDS_RULE = (
    "lower counts every unverified, error, incomplete and missing task as a failure; upper "
    "counts each error, incomplete and missing task as a success; an unverified task is never "
    "counted as a success, so while any task is unverified no honest upper bound exists and "
    "upper is null (verify those tasks to get one)"
)


def mark_replaced(attempts: list[dict], receipts: list[dict]) -> None:
    """afbench's own reruns among `attempts` (read from the receipts' job folders): of the
    trial receipts whose attempts replace one another (afbench.execution.sequential.rerun_receipts:
    a sealed sequential comparison's), each trial's (task, configuration) started attempts but
    the one that stands (sequential.standing_attempt, the one the decision reads) were
    replaced by it. Each Harbor trial of a replaced attempt's job folder gets `replaced_by`,
    the job name of the attempt that stands, and `rerun` (its own attempt and job, and the
    standing one's): no attempt of its own, its cost still its task's."""
    from afbench.execution.sequential import standing_attempt

    trials: dict[tuple, list[dict]] = {}
    for receipt in receipts:
        if receipt["refused"] is None:
            made = receipt["plan"]
            trials.setdefault((receipt["task_id"], made["agent"], made["model"]), []).append(
                receipt
            )
    replaced: dict[str, tuple[dict, dict]] = {}
    for tried in trials.values():
        stands = standing_attempt(tried)
        for receipt in tried:
            if receipt is not stands:
                replaced[os.fspath(Path(receipt["job_dir"]))] = (receipt, stands)
    if not replaced:
        return
    labels: dict[str, set[str]] = {}
    for attempt in attempts:
        if attempt.get("job") is not None:
            labels.setdefault(attempt["job"]["job_dir"], set()).add(attempt["configuration"])
    for attempt in attempts:
        job = attempt.get("job")
        found = replaced.get(job["job_dir"]) if job is not None else None
        if found is None:
            continue
        receipt, stands = found
        rerun = labels.get(os.fspath(Path(stands["job_dir"])), set())
        if rerun and rerun != {attempt["configuration"]}:
            raise AfbenchError(
                f"attempt {receipt['attempt']} of task '{receipt['task_id']}' and attempt "
                f"{stands['attempt']}, which replaced it, ran in different configurations: a "
                "rerun runs the trial again as it was",
                file=attempt["trial_dir"],
                field="configuration",
                expected=sorted(rerun)[0],
                found=attempt["configuration"],
            )
        attempt["replaced_by"] = stands["job_name"]
        attempt["rerun"] = {
            "job_name": receipt["job_name"],
            "attempt": receipt["attempt"],
            "stands": stands["job_name"],
            "stands_attempt": stands["attempt"],
        }


def task_outcome(attempts: list[dict]) -> str:
    outcomes = {a["outcome"] for a in attempts}
    for outcome in ("accepted", "error", "incomplete", "unverified"):
        if outcome in outcomes:
            return outcome
    return "rejected"


def _check_same_task(attempts: list[dict], label: str) -> None:
    """Attempts pooled within a configuration must have run the same task (Harbor's
    task_checksum), or they are not attempts at one task."""
    seen: dict[str, tuple[str, str]] = {}
    problems = []
    for attempt in attempts:
        checksum = attempt.get("task_checksum")
        if checksum is None:
            continue
        tid = attempt["task_id"]
        if tid not in seen:
            seen[tid] = (checksum, attempt["trial_dir"])
        elif seen[tid][0] != checksum:
            problems.append(
                Problem(
                    f"task '{tid}' differs between trials of configuration '{label}' "
                    f"(task_checksum); first seen in {seen[tid][1]}",
                    file=attempt["trial_dir"],
                    field="task_checksum",
                    expected=seen[tid][0],
                    found=checksum,
                )
            )
    raise_if(problems)


def _bounds(counts: dict, total: int) -> dict:
    upper = None if counts["unverified"] else (total - counts["rejected"]) / total
    return {
        "lower": counts["accepted"] / total,
        "upper": upper,
        "upper_withheld": f"{counts['unverified']} task(s) unverified"
        if counts["unverified"]
        else None,
    }


def _harbor_jobs(tries: list[dict]) -> list[dict] | None:
    """What each Harbor job of these trials says of itself: its Harbor version and the error
    policy that read it, whether it finished (an unfinished job: why), its retry settings and
    counts. None for verdicts."""
    jobs = {a["job"]["job_dir"]: a["job"] for a in tries if a.get("job") is not None}
    return [jobs[d] for d in sorted(jobs)] or None


def _retries(tries: list[dict], max_retries: int | None) -> dict | None:
    """How often Harbor retried these trials (each retry deleted the attempt before it): the
    retries its job.log names for them, the jobs' own counts, and the trials it retried."""
    jobs = _harbor_jobs(tries)
    if jobs is None:
        return None
    unknown = [a for a in tries if a["retries"] is None]
    retried = [a for a in tries if a["retries"]]
    counts = [j["n_retries"] for j in jobs]
    return {
        "max_retries": max_retries,
        "retries": sum(a["retries"] or 0 for a in tries),
        "retried_trials": [
            {
                "trial_name": a["trial_name"],
                "task_id": a["task_id"],
                "retries": a["retries"],
                "earlier_attempts_raised": a["first_attempts"],
                "outcome": a["outcome"],
            }
            for a in sorted(retried, key=lambda a: a["trial_dir"])
        ],
        "trials_with_unknown_retries": len(unknown),
        "jobs_n_retries": None if None in counts else sum(counts),
        "note": "Harbor deletes the folder of every attempt it retries: each retry and what "
        "the attempt before it raised are known only from the job's job.log; stats.n_retries "
        "counts every retry of the job (all its configurations)"
        + (
            f"; {len(unknown)} trial(s) of a job that may have retried but whose job.log does "
            "not account for it (no job.log, or fewer retries named than stats.n_retries): "
            "their retries are unknown"
            if unknown
            else ""
        ),
    }


RETRY_SHIFT_METHOD = (
    "Inspect's retry shift: a trial that Harbor retried after an error is not a random draw "
    "(errors come with longer, harder or costlier trials), so its final outcome is set beside "
    "the trials that ran once, and the bounds are recomputed as the protocol (-k 1, no "
    "retries) would have had them: each retried trial at its first attempt, an error whose "
    "reward Harbor did not keep"
)


def _retry_shift(selected: list[str], tries: list[dict], by_task: dict) -> dict | None:
    """Retried trials' final outcomes beside those of the trials that ran once, and the bounds
    of first attempts only; None when nothing was retried or a retry count is unknown."""
    retried = [a for a in tries if a.get("retries")]
    if not retried or any(a.get("retries") is None for a in tries):
        return None
    once = [a for a in tries if not a["retries"]]

    def outcomes(group: list[dict]) -> dict:
        return {
            "trials": len(group),
            "by_outcome": {
                o: sum(a["outcome"] == o for a in group) for o in OUTCOMES if o != "missing"
            },
        }

    first = []
    for tid in selected:
        task_tries = [{**a, "outcome": "error"} if a["retries"] else a for a in by_task[tid]]
        first.append(task_outcome(task_tries) if task_tries else "missing")
    counts = {o: first.count(o) for o in OUTCOMES}
    return {
        "method": RETRY_SHIFT_METHOD,
        "retried": outcomes(retried),
        "ran_once": outcomes(once),
        "first_attempts_only": {
            "counts": counts,
            "success_rate_bounds": _bounds(counts, len(selected)),
        },
    }


RERUN_NOTE = (
    "afbench's own reruns, by the run's attempt_rule: each replaced attempt's trials stay in "
    "attempts.csv (replaced_by: the job of the attempt that stands), and their cost in their "
    "task's cost_usd, the budget audit and replaced_cost_usd"
)


def _reruns(replaced: list[dict], rows: dict[str, dict]) -> dict | None:
    """What afbench's reruns replaced in one configuration (mark_replaced), by task: the
    attempt that stands, the task's outcome, and each replaced attempt's trials; None when
    nothing was replaced."""
    if not replaced:
        return None
    stands: dict[tuple[str, str], dict] = {}
    for a in sorted(replaced, key=lambda a: (a["task_id"], a["rerun"]["attempt"], a["trial_dir"])):
        rerun = a["rerun"]
        entry = stands.setdefault(
            (a["task_id"], rerun["stands"]),
            {
                "task_id": a["task_id"],
                "job_name": rerun["stands"],
                "attempt": rerun["stands_attempt"],
                "outcome": rows[a["task_id"]]["outcome"],
                "replaced": [],
            },
        )
        entry["replaced"].append(
            {
                "job_name": rerun["job_name"],
                "attempt": rerun["attempt"],
                "trial_name": a["trial_name"],
                "outcome": a["outcome"],
                "reason": a["reason"],
                "cost_usd": a["cost_usd"],
            }
        )
    costs = [a["cost_usd"] for a in replaced]
    return {
        "replaced_attempts": len(replaced),
        "replaced_cost_usd": None if None in costs else round(sum(costs), 6),
        "rerun_trials": [stands[key] for key in sorted(stands)],
        "note": RERUN_NOTE,
    }


def attempt_rule() -> str:
    """The rule a run summary records for its attempts: Harbor's attempts pooled
    (ATTEMPT_RULE), afbench's reruns not (RERUN_RULE), and which attempt of a rerun trial
    stands (afbench.execution.sequential.STANDING_RULE, the decision's)."""
    from afbench.execution.sequential import STANDING_RULE

    return f"{ATTEMPT_RULE}; {RERUN_RULE}; {STANDING_RULE}"


def _summarize_configuration(
    name: str, label: str, details: dict, selected: list[str], tries: list[dict], budget: float
) -> tuple[dict, list[dict]]:
    replaced = [a for a in tries if a["replaced_by"] is not None]
    # the attempts that count: every trial but those a later afbench attempt replaced
    standing = [a for a in tries if a["replaced_by"] is None] if replaced else tries
    by_task: dict[str, list[dict]] = {tid: [] for tid in selected}
    for attempt in standing:
        by_task[attempt["task_id"]].append(attempt)
    replaced_cost: dict[str, list[float]] = {}
    for attempt in replaced:
        if attempt["cost_usd"] is not None:
            replaced_cost.setdefault(attempt["task_id"], []).append(attempt["cost_usd"])
    first = tries[0]
    rows = []
    for tid in selected:
        task_tries = by_task[tid]
        outcome = task_outcome(task_tries) if task_tries else "missing"
        # what the task cost: its replaced attempts were paid for too
        costs = [a["cost_usd"] for a in task_tries if a["cost_usd"] is not None]
        costs += replaced_cost.get(tid, [])
        row = OUTCOMES_TABLE.row(
            configuration=label,
            task_id=tid,
            outcome=outcome,
            reward={"accepted": 1, "rejected": 0}.get(outcome),
            reason="; ".join(sorted({a["reason"] for a in task_tries})) or "no trial",
            attempts=len(task_tries),
            accepted_attempts=sum(a["outcome"] == "accepted" for a in task_tries),
            cost_usd=round(sum(costs), 6) if costs else None,
            agent=first["agent"],
            agent_version=first["agent_version"],
            model=first["model"],
            trial_dirs=";".join(a["trial_dir"] for a in task_tries),
        )
        rows.append(row)
    counts = {o: sum(r["outcome"] == o for r in rows) for o in OUTCOMES}
    total = len(rows)
    complete = counts["accepted"] + counts["rejected"] == total
    attempt_counts = sorted({len(by_task[t]) for t in selected})
    all_decided = all(a["outcome"] in ("accepted", "rejected") for a in standing)
    pass_k = {}
    if complete and all_decided and attempt_counts[0] > 0:
        from afbench.runs.passk import pass_at_k  # the estimator's one home

        for k in sorted({1, attempt_counts[0]}):
            pass_k[str(k)] = (
                sum(
                    float(
                        pass_at_k(
                            len(by_task[t]),
                            sum(a["outcome"] == "accepted" for a in by_task[t]),
                            k,
                        )
                    )
                    for t in selected
                )
                / total
            )
    summary = {
        "configuration": label,
        **details,
        "jobs": sorted({a["job_id"] for a in tries if a["job_id"] is not None}),
        "harbor_jobs": _harbor_jobs(tries),
        "counts": counts,
        "attempts": {
            "total": len(standing),
            "per_task": attempt_counts,
            "by_outcome": {
                o: sum(a["outcome"] == o for a in standing) for o in OUTCOMES if o != "missing"
            },
        },
        "success_rate": counts["accepted"] / total if complete else None,
        "success_rate_bounds": _bounds(counts, total),
        # Harbor's own retries, of every trial that ran (a replaced one's too)
        "retries": _retries(tries, details.get("max_retries")),
        "retry_shift": _retry_shift(selected, standing, by_task),
        "reruns": _reruns(replaced, {r["task_id"]: r for r in rows}),
        "pass_at_k": pass_k or None,
        "pass_at_k_note": None
        if pass_k
        else "not computed: some tasks or attempts have no accepted/rejected outcome",
        # every trial's cost as reported, a replaced one's too: it was paid for
        # (each attempt holds the task_id and cost_usd the audit reads: no copy of each)
        "budget_audit": budget_audit(tries, budget, f"{name} [{label}]"),
    }
    return summary, rows


def summarize_run(
    name: str, kind: str, selection: dict, attempts: list[dict], budget_usd: float, release: dict
) -> tuple[dict, list[dict]]:
    """The run's summary (one entry per configuration under `configurations`) and its outcome
    rows (one per configuration and selected task, each carrying its `configuration`)."""
    check_name(name, "run name")
    if not attempts:
        raise AfbenchError(
            f"run '{name}': no trials or verdicts found in its inputs; nothing to summarise",
            field="paths",
        )
    check_unique_trials(attempts)
    selected = selection["task_ids"]
    outside = sorted({a["task_id"] for a in attempts} - set(selected))
    if outside:
        raise AfbenchError(
            f"{len(outside)} trial task(s) are not in selection '{selection['name']}'",
            field="selection",
            expected=f"tasks of selection '{selection['name']}'",
            found=", ".join(outside[:20])
            + (f" and {len(outside) - 20} more" if len(outside) > 20 else ""),
        )
    groups: dict[str, list[dict]] = {}
    details: dict[str, dict] = {}
    for attempt in attempts:
        label = attempt["configuration"]
        groups.setdefault(label, []).append(attempt)
        known = details.setdefault(label, attempt["configuration_details"])
        if (
            known is not attempt["configuration_details"]
            and known != attempt["configuration_details"]
        ):
            raise AfbenchError(
                f"two different configurations share the label '{label}'",
                file=attempt["trial_dir"],
            )
    configurations, rows = [], []
    for label in sorted(groups):
        _check_same_task(groups[label], label)
        summary, config_rows = _summarize_configuration(
            name, label, details[label], selected, groups[label], budget_usd
        )
        configurations.append(summary)
        rows.extend(config_rows)
    summary = {
        "note": LOCAL_NOTE,
        "condition": "source-free",
        "verifier_provenance_attested": False,
        "local_capability_score": None,
        "official_leaderboard": "kept apart: never merged with the source-present table",
        "release": release,
        "run": name,
        "input_kind": kind,
        "selection": {
            "name": selection["name"],
            "selection_sha256": selection["selection_sha256"],
            "tasks": len(selected),
        },
        "configuration_rule": CONFIGURATION_RULE,
        "attempt_rule": attempt_rule(),
        "bounds_rule": BOUNDS_RULE,
        "configurations": configurations,
    }
    return summary, rows


# the two CSV tables' columns, as their Table declarations give them
OUTCOME_COLUMNS = OUTCOMES_TABLE.columns
ATTEMPT_COLUMNS = ATTEMPTS_TABLE.columns


# --- relations (afbench.kinds.relations): a run summary against its selection and tables ----
def run_of_selection(run: dict, selection: dict) -> list[Problem]:
    """RUN_OF_SELECTION: the run is of this selection (release, name, hash, size)."""
    problems = []
    if run["release"] != selection["release"]:
        problems.append(
            Problem(
                "the run is of another release than its selection",
                field="release",
                expected=selection["release"]["revision"],
                found=run["release"]["revision"],
            )
        )
    named = {
        "name": selection["name"],
        "selection_sha256": selection["selection_sha256"],
        "tasks": selection["counts"]["tasks"],
    }
    for field, value in named.items():
        if run["selection"][field] != value:
            problems.append(
                Problem(
                    "the run names another selection",
                    field=f"selection.{field}",
                    expected=value,
                    found=run["selection"][field],
                )
            )
    return problems


def run_of_tables(run: dict, tables: dict[str, Counter]) -> list[Problem]:
    """RUN_OF_TABLES: each configuration's outcome counts are its rows of outcomes.csv, its
    attempt counts its rows of attempts.csv that are attempts, and its replaced attempts
    (reruns) the rows a later attempt replaced, counted again ({table: Counter((configuration,
    outcome, replaced))}, `replaced` whether the row has a replaced_by); no row of another
    configuration."""
    problems = []
    labels = {c["configuration"] for c in run["configurations"]}
    for table, counted in sorted(tables.items()):
        strangers = sorted({label for label, _, _ in counted} - labels)
        if strangers:
            problems.append(
                Problem(
                    f"{table}.csv has rows of a configuration the summary does not have",
                    field="configurations",
                    expected="the summary's configurations",
                    found=strangers[0],
                )
            )
    outcomes, attempts = tables.get("outcomes"), tables.get("attempts")
    for index, config in enumerate(run["configurations"]):
        label = config["configuration"]
        at = f"configurations[{index}]"
        if outcomes is not None:
            counted = {k: outcomes[(label, k, False)] for k in config["counts"]}
            if counted != config["counts"]:
                problems.append(
                    Problem(
                        "the outcome counts are not the configuration's rows of outcomes.csv",
                        field=f"{at}.counts",
                        expected=counted,
                        found=config["counts"],
                    )
                )
        if attempts is not None:
            by_outcome = config["attempts"]["by_outcome"]
            counted = {k: attempts[(label, k, False)] for k in by_outcome}
            total = sum(n for (c, _, gone), n in attempts.items() if c == label and not gone)
            if counted != by_outcome or total != config["attempts"]["total"]:
                problems.append(
                    Problem(
                        "the attempt counts are not the configuration's rows of attempts.csv",
                        field=f"{at}.attempts",
                        expected={"total": total, "by_outcome": counted},
                        found={"total": config["attempts"]["total"], "by_outcome": by_outcome},
                    )
                )
            gone = sum(n for (c, _, replaced), n in attempts.items() if c == label and replaced)
            said = (config.get("reruns") or {}).get("replaced_attempts", 0)
            if gone != said:
                problems.append(
                    Problem(
                        "the replaced attempts are not the configuration's rows of attempts.csv "
                        "with a replaced_by",
                        field=f"{at}.reruns.replaced_attempts",
                        expected=gone,
                        found=said,
                    )
                )
    return problems


def run_of_decision(run: dict, source: dict) -> list[Problem]:
    """RUN_OF_DECISION: an executed run of a sealed sequential comparison beside the
    comparison's last step (`source`: {"decision": the step's record, "outcomes": its
    outcomes.csv as (row, configuration, task_id, outcome)}): for every task and configuration
    of the comparison whose trials the decision read, the run's outcome is the outcome of the
    attempt that stands (sequential.standing_attempt over the step's trials), the one the
    decision counted. An outcome the run cannot hold (a Harbor job of several trials:
    `mixed`) is left to the run's own attempt rule."""
    from afbench.execution.sequential import standing_attempt

    decided = source["decision"]
    comparison = decided["comparison"]
    checked = run.get("analysis_plan")
    if checked is None or checked["plan_sha256"] != decided["plan_sha256"]:
        return [
            Problem(
                "the executed run was not checked against the sealed plan its decision was made "
                "under",
                field="analysis_plan.plan_sha256",
                expected=decided["plan_sha256"],
                found=None if checked is None else checked["plan_sha256"],
            )
        ]
    labels = {}
    for pair in checked["comparisons"]:
        labels.setdefault(pair["a"], pair["configurations"][0])
        labels.setdefault(pair["b"], pair["configurations"][1])
    tried: dict[tuple[str, str], list[dict]] = {}
    for trial in decided["trials"]:
        if not trial["refused"]:
            tried.setdefault((trial["task_id"], trial["configuration"]), []).append(trial)
    found = {(label, task): (row, outcome) for row, label, task, outcome in source["outcomes"]}
    problems = []
    for (task, side), started in sorted(tried.items()):
        stands = standing_attempt(started)
        if stands["outcome"] not in OUTCOMES:
            continue
        label = labels.get(comparison[side])
        row, outcome = found.get((label, task), (None, None))
        if label is None or row is None:
            problems.append(
                Problem(
                    f"the run has no outcome of task '{task}' for configuration {side} "
                    f"({comparison[side]}), whose trials the decision read",
                    field="outcome",
                    expected=stands["outcome"],
                    found="no row",
                )
            )
        elif outcome != stands["outcome"]:
            problems.append(
                Problem(
                    f"task '{task}', configuration {side} ({label}): not the outcome the "
                    f"decision read (attempt {stands['attempt']}, the one that stands)",
                    row=row,
                    field="outcome",
                    expected=stands["outcome"],
                    found=outcome,
                )
            )
    return problems
