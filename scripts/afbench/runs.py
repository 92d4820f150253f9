"""Local runs: verifier verdicts and Harbor 0.22.0 job directories. An infrastructure error has
no reward (null), never 0; unknown outcomes are shown as bounds, never guessed."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from .budget import budget_audit
from .errors import AfbenchError, Problem, raise_if
from .fsutil import check_name, parse_json_bytes

CHECKS = ("target_equivalence", "allowed_axioms", "lean_kernel", "nanoda_replay")
VERDICT_STATUSES = {"accepted": 1, "rejected": 0, "error": None}
OUTCOMES = ("accepted", "rejected", "error", "incomplete", "missing")
LOCAL_NOTE = (
    "Local run, source-free, unattested: verdict provenance (images, kernels, "
    "submitted files) is not proven by these files. Never comparable to, nor merged "
    "with, the official source-present leaderboard."
)
ATTEMPT_RULE = (
    "a task is accepted if any attempt was accepted; otherwise error if any "
    "attempt errored, incomplete if any was incomplete, else rejected"
)


def _expect(
    cond: bool,
    problems: list[Problem],
    file: str,
    field: str,
    message: str,
    expected=None,
    found=None,
) -> bool:
    if not cond:
        problems.append(Problem(message, file=file, field=field, expected=expected, found=found))
    return cond


def parse_verdict(data: bytes, file: str, task_id: str | None) -> dict:
    """A verifier verdict checked for shape and contradictions; reward 1 / 0 / null."""
    doc = parse_json_bytes(data, file, "verdict")
    problems: list[Problem] = []
    if not isinstance(doc, dict):
        raise AfbenchError("verdict must be a JSON object", file=file, found=type(doc).__name__)
    status = doc.get("status")
    _expect(
        isinstance(status, str) and status in VERDICT_STATUSES,
        problems,
        file,
        "status",
        "unknown status",
        "accepted, rejected or error",
        status,
    )
    vid = doc.get("task_id")
    if _expect(isinstance(vid, str), problems, file, "task_id", "missing task_id"):
        try:
            check_name(vid, "task_id", file=file)
        except AfbenchError as exc:
            problems.extend(exc.problems)
        if task_id is not None:
            _expect(
                vid == task_id,
                problems,
                file,
                "task_id",
                "verdict is for another task",
                task_id,
                vid,
            )
    obligations = doc.get("obligations")
    ob_ok = isinstance(obligations, list) and all(
        isinstance(o, dict)
        and isinstance(o.get("declaration"), str)
        and isinstance(o.get("status"), str)
        and o["status"] in VERDICT_STATUSES
        for o in obligations
    )
    _expect(
        ob_ok,
        problems,
        file,
        "obligations",
        "malformed obligations",
        "a list of {declaration, status, detail}",
    )
    checks = doc.get("checks")
    checks_ok = (
        isinstance(checks, dict)
        and set(checks) <= set(CHECKS)
        and all(v is None or isinstance(v, bool) for v in checks.values())
    )
    _expect(
        checks_ok,
        problems,
        file,
        "checks",
        "malformed checks",
        f"an object with booleans (or null for not run) for {', '.join(CHECKS)}",
    )
    error = doc.get("error")
    error_ok = error is None or (
        isinstance(error, dict)
        and isinstance(error.get("kind"), str)
        and isinstance(error.get("message"), str)
    )
    _expect(error_ok, problems, file, "error", "malformed error", "null or {kind, message}")
    verifier = doc.get("verifier")
    _expect(
        isinstance(verifier, dict)
        and isinstance(verifier.get("name"), str)
        and isinstance(verifier.get("version"), str),
        problems,
        file,
        "verifier",
        "missing verifier name and version",
    )
    raise_if(problems)
    passed = [checks.get(c) is True for c in CHECKS]
    obligations_pass = bool(obligations) and all(o["status"] == "accepted" for o in obligations)
    if status == "accepted":
        missing = [c for c in CHECKS if checks.get(c) is None]
        _expect(
            not missing,
            problems,
            file,
            "checks",
            "accepted verdict lacks checks; they are not assumed to have passed",
            "all four checks true",
            missing,
        )
        failed = [c for c in CHECKS if checks.get(c) is False]
        _expect(
            not failed,
            problems,
            file,
            "checks",
            "contradiction: accepted with a failed check",
            found=failed,
        )
        _expect(
            obligations_pass,
            problems,
            file,
            "obligations",
            "contradiction: accepted without every obligation accepted",
        )
        _expect(error is None, problems, file, "error", "contradiction: accepted with an error")
    elif status == "rejected":
        _expect(
            not (all(passed) and obligations_pass),
            problems,
            file,
            "status",
            "contradiction: rejected although every check and obligation passed",
        )
        _expect(
            error is None,
            problems,
            file,
            "error",
            "contradiction: rejected with an error object (an error verdict has status 'error')",
        )
    else:
        _expect(
            error is not None,
            problems,
            file,
            "error",
            "contradiction: status error without an error object",
        )
    raise_if(problems)
    return {
        "task_id": vid,
        "status": status,
        "reward": VERDICT_STATUSES[status],
        "reason": error["kind"]
        if error
        else (
            "all checks passed" if status == "accepted" else _rejection_reason(checks, obligations)
        ),
        "checks": {c: checks.get(c) for c in CHECKS},
        "obligations": {
            "total": len(obligations),
            "accepted": sum(o["status"] == "accepted" for o in obligations),
        },
        "error": error,
        "verifier": {"name": verifier["name"], "version": verifier["version"]},
        "verifier_provenance_attested": False,
        "local_capability_score": None,
    }


def _rejection_reason(checks: dict, obligations: list) -> str:
    failed = [c for c in CHECKS if checks.get(c) is False]
    if failed:
        return "failed check: " + ", ".join(failed)
    return "obligation not accepted: " + ", ".join(
        o["declaration"] for o in obligations if o["status"] != "accepted"
    )


def classify_trial(result: dict, file: str) -> dict:
    """One Harbor 0.22.0 trial's result.json -> outcome, reward, reason."""
    if not isinstance(result, dict):
        raise AfbenchError("trial result must be a JSON object", file=file)
    verifier = result.get("verifier_result")
    rewards = verifier.get("rewards") if isinstance(verifier, dict) else None
    has_reward = isinstance(rewards, dict) and "reward" in rewards
    reward = rewards.get("reward") if has_reward else None
    exc = result.get("exception_info")
    exc_type = exc.get("exception_type") if isinstance(exc, dict) else None
    if exc is not None and not (isinstance(exc_type, str) and exc_type):
        raise AfbenchError(
            "exception_info without an exception_type", file=file, field="exception_info"
        )
    numeric = isinstance(reward, int | float) and not isinstance(reward, bool)
    if has_reward and numeric and reward == 1:
        return {"outcome": "accepted", "reward": 1, "reason": exc_type or "reward 1"}
    if has_reward and numeric and reward == 0:
        # an agent timeout that still got a verdict is the agent's failure, not infrastructure
        return {"outcome": "rejected", "reward": 0, "reason": exc_type or "reward 0"}
    if has_reward:
        shown = reward if numeric and math.isfinite(reward) else repr(reward)
        return {"outcome": "error", "reward": None, "reason": f"invalid_reward ({shown})"}
    if exc_type:
        return {"outcome": "error", "reward": None, "reason": exc_type}
    return {"outcome": "error", "reward": None, "reason": "no_reward"}


def _trial_task(trial: Path, result: dict | None) -> str:
    if result is not None and isinstance(result.get("task_name"), str):
        return result["task_name"]
    config = trial / "config.json"
    if config.is_file():
        try:
            doc = parse_json_bytes(config.read_bytes(), str(config), "trial config")
            return Path(doc["task"]["path"]).name
        except (AfbenchError, KeyError, TypeError):
            pass
    return trial.name.split("__")[0]


def read_harbor_job(job_dir: Path) -> list[dict]:
    job_dir = Path(job_dir)
    if not (job_dir / "config.json").is_file():
        raise AfbenchError("not a Harbor job directory (no config.json)", file=str(job_dir))
    attempts = []
    trials = sorted(p for p in job_dir.iterdir() if p.is_dir() and not p.is_symlink())
    progress = Progress(len(trials), f"reading {job_dir.name}")
    for trial in trials:
        progress.step()
        result_file = trial / "result.json"
        if result_file.is_symlink():
            raise AfbenchError(
                "trial result.json is a symbolic link; refusing it", file=str(result_file)
            )
        if not result_file.is_file():
            attempt = {"outcome": "incomplete", "reward": None, "reason": "no result.json"}
            result = None
        else:
            result = parse_json_bytes(result_file.read_bytes(), str(result_file), "trial result")
            attempt = classify_trial(result, str(result_file))
        agent, model, cost = _agent_fields(result)
        attempts.append(
            {
                "task_id": _trial_task(trial, result),
                **attempt,
                "cost_usd": cost,
                "agent": agent,
                "model": model,
                "trial_dir": str(trial),
            }
        )
    progress.done()
    return attempts


def _agent_fields(result: dict | None) -> tuple[str | None, str | None, float | None]:
    if not isinstance(result, dict):
        return None, None, None
    agent_cfg = (result.get("config") or {}).get("agent") or {}
    info = result.get("agent_info") or {}
    agent = agent_cfg.get("name") or info.get("name")
    model = agent_cfg.get("model_name")
    cost = (result.get("agent_result") or {}).get("cost_usd")
    if cost is not None and (
        isinstance(cost, bool)
        or not isinstance(cost, int | float)
        or not math.isfinite(cost)
        or cost < 0
    ):
        cost = None
    return (
        agent if isinstance(agent, str) else None,
        model if isinstance(model, str) else None,
        cost,
    )


def read_verdict_dir(folder: Path) -> list[dict]:
    folder = Path(folder)
    if not folder.is_dir():
        raise AfbenchError("verdict folder not found", file=str(folder))
    attempts = []
    for path in sorted(folder.glob("*.json")):
        if path.is_symlink():
            raise AfbenchError("verdict file is a symbolic link; refusing it", file=str(path))
        verdict = parse_verdict(path.read_bytes(), str(path), None)
        outcome = verdict["status"]
        attempts.append(
            {
                "task_id": verdict["task_id"],
                "outcome": outcome,
                "reward": verdict["reward"],
                "reason": verdict["reason"],
                "cost_usd": None,
                "agent": None,
                "model": None,
                "trial_dir": str(path),
            }
        )
    return attempts


def task_outcome(attempts: list[dict]) -> str:
    outcomes = {a["outcome"] for a in attempts}
    for outcome in ("accepted", "error", "incomplete"):
        if outcome in outcomes:
            return outcome
    return "rejected"


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator (Chen et al. 2021) for one task."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def summarize_run(
    name: str, kind: str, selection: dict, attempts: list[dict], budget_usd: float, release: dict
) -> tuple[dict, list[dict]]:
    check_name(name, "run name")
    selected = selection["task_ids"]
    outside = sorted({a["task_id"] for a in attempts} - set(selected))
    if outside:
        raise AfbenchError(
            f"{len(outside)} trial task(s) are not in selection "
            f"'{selection['name']}': {', '.join(outside[:20])}",
            field="selection",
        )
    by_task: dict[str, list[dict]] = {tid: [] for tid in selected}
    for attempt in attempts:
        by_task[attempt["task_id"]].append(attempt)
    rows = []
    for tid in selected:
        tries = by_task[tid]
        outcome = task_outcome(tries) if tries else "missing"
        costs = [a["cost_usd"] for a in tries if a["cost_usd"] is not None]
        rows.append(
            {
                "task_id": tid,
                "outcome": outcome,
                "reward": {"accepted": 1, "rejected": 0}.get(outcome),
                "reason": "; ".join(sorted({a["reason"] for a in tries})) or "no trial",
                "attempts": len(tries),
                "accepted_attempts": sum(a["outcome"] == "accepted" for a in tries),
                "cost_usd": round(sum(costs), 6) if costs else None,
                "agent": ";".join(sorted({a["agent"] for a in tries if a["agent"]})) or None,
                "model": ";".join(sorted({a["model"] for a in tries if a["model"]})) or None,
                "trial_dirs": ";".join(a["trial_dir"] for a in tries),
            }
        )
    counts = {o: sum(r["outcome"] == o for r in rows) for o in OUTCOMES}
    total = len(rows)
    decided = counts["accepted"] + counts["rejected"]
    complete = decided == total
    attempt_counts = sorted({len(by_task[t]) for t in selected})
    all_decided = all(a["outcome"] in ("accepted", "rejected") for a in attempts)
    pass_k = {}
    if complete and all_decided and attempt_counts and attempt_counts[0] > 0:
        for k in sorted({1, attempt_counts[0]}):
            pass_k[str(k)] = (
                sum(
                    pass_at_k(
                        len(by_task[t]), sum(a["outcome"] == "accepted" for a in by_task[t]), k
                    )
                    for t in selected
                )
                / total
            )
    summary = {
        "kind": "afbench local run summary",
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
            "tasks": total,
        },
        "counts": counts,
        "attempts": {"total": len(attempts), "per_task": attempt_counts, "rule": ATTEMPT_RULE},
        "success_rate": counts["accepted"] / total if complete else None,
        "success_rate_bounds": {
            "lower": counts["accepted"] / total,
            "upper": (total - counts["rejected"]) / total,
            "rule": "lower counts every error, incomplete and missing task as a failure; upper "
            "counts each as a success",
        },
        "pass_at_k": pass_k or None,
        "pass_at_k_note": None
        if pass_k
        else "not computed: some attempts have no accepted/rejected outcome",
        "budget_audit": budget_audit(
            [{"task_id": a["task_id"], "cost_usd": a["cost_usd"]} for a in attempts],
            budget_usd,
            name,
        ),
    }
    return summary, rows


class Progress:
    """A one-line progress bar on stderr for large imports (only on a terminal)."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.label, self.count = total, label, 0
        self.enabled = total >= 1000 and sys.stderr.isatty()

    def step(self) -> None:
        self.count += 1
        if self.enabled and (self.count % 500 == 0 or self.count == self.total):
            width = 30
            filled = width * self.count // self.total
            sys.stderr.write(
                f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.count}/{self.total}"
            )
            sys.stderr.flush()

    def done(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


OUTCOME_COLUMNS = [
    "task_id",
    "outcome",
    "reward",
    "reason",
    "attempts",
    "accepted_attempts",
    "cost_usd",
    "agent",
    "model",
    "trial_dirs",
]
ATTEMPT_COLUMNS = [
    "task_id",
    "outcome",
    "reward",
    "reason",
    "cost_usd",
    "agent",
    "model",
    "trial_dir",
]
