"""The cost meter of `snakemake execute`: a live ledger that the trial jobs share (on SLURM, from
any node), and the cost-ledger artifact a rule writes from it at the end.

The live ledger is a JSON-lines file beside the Harbor jobs folder, appended to only while its
lock (locking.held, a POSIX lock on `<ledger>.lock`) is held, so concurrent trial jobs never
interleave. Each trial adds `start` before its `harbor run` (with the worst case it may spend:
the release's nominal budget per task for an agent that may call a model, 0 for nop and
oracle) and `finish` after it (the cost Harbor reports, `agent_result.cost_usd`, summed over
the job's trials); a trial refused at the ceiling adds `refused`. A trial's state is its last
start or finish: spent is the sum of finished costs, and every start without a finish (running,
or interrupted and never finished) still counts at its worst case. A new trial starts only if
spent + those worst cases + its own stay within the ceiling.

A finished trial whose agent may call a model but reports no cost is counted at the nominal
budget (its spend is unknown, so it is taken at its worst case) and marked `cost_reported:
false`. What a trial spent before an interruption is not in Harbor's results and so not here.
"""

from __future__ import annotations

import json
from pathlib import Path

from .errors import AfbenchError
from .locking import append_event, held
from .records import COST_LEDGER, TRIAL_RECEIPT, read_record, record

NOTE = (
    "Costs are what Harbor recorded for each trial (agent_result.cost_usd), summed per job; a "
    "trial of an agent that may call a model and reports no cost counts at the nominal budget. "
    "A trial starts only while spent + the worst case of every trial started and not finished "
    "+ its own worst case stay within the ceiling."
)


def _lock_path(ledger: Path) -> Path:
    return ledger.with_name(ledger.name + ".lock")


def read_entries(ledger: Path) -> list[dict]:
    """Every entry of the live ledger (none if it does not exist yet)."""
    try:
        text = ledger.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError as error:
        raise AfbenchError(
            f"cannot read the cost ledger: {error.strerror}", file=str(ledger)
        ) from None
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        if not isinstance(entry, dict) or entry.get("event") not in ("start", "finish", "refused"):
            raise AfbenchError(
                "not a cost-ledger entry",
                file=str(ledger),
                row=number,
                expected="one JSON object per line, as afbench writes them",
                found=line[:200],
            )
        entries.append(entry)
    return entries


def state(entries: list[dict]) -> dict:
    """Spent, the worst cases still open (started, not finished), and each job's last state."""
    last: dict[str, dict] = {}
    for entry in entries:
        if entry["event"] in ("start", "finish"):
            last[entry["job_name"]] = entry
    spent = sum(e["cost_usd"] for e in last.values() if e["event"] == "finish")
    open_ = {name: e for name, e in last.items() if e["event"] == "start"}
    return {
        "spent_usd": round(spent, 6),
        "open_usd": round(sum(e["worst_case_usd"] for e in open_.values()), 6),
        "open": sorted(open_),
        "last": last,
    }


def start(
    ledger: Path, trial: dict, worst_case_usd: float, ceiling_usd: float | None
) -> str | None:
    """Record that `trial` (job_name, task_id, attempt, agent, model) starts, or refuse it:
    returns the reason when spent + the open worst cases + its own would pass the ceiling."""
    ledger.parent.mkdir(parents=True, exist_ok=True)
    with held(_lock_path(ledger), poll_s=0.02):
        now_state = state(read_entries(ledger))
        others = now_state["open_usd"]
        mine = now_state["last"].get(trial["job_name"])
        if mine is not None and mine["event"] == "start":
            others -= mine["worst_case_usd"]  # an interrupted start of this very trial
        total = now_state["spent_usd"] + others + worst_case_usd
        if ceiling_usd is not None and total > ceiling_usd:
            reason = (
                f"cost ceiling: spent USD {now_state['spent_usd']:g} + USD {others:g} for the "
                f"trials started and not finished + this trial's worst case USD "
                f"{worst_case_usd:g} = USD {total:g} is over execute.max_cost_usd = "
                f"{ceiling_usd:g}; not started"
            )
            append_event(ledger, {"event": "refused", **trial, "reason": reason})
            return reason
        append_event(ledger, {"event": "start", **trial, "worst_case_usd": worst_case_usd})
    return None


def finish(
    ledger: Path, trial: dict, costs: list[float | None], paid: bool, nominal: float
) -> dict:
    """Record what a finished job spent: the sum of its trials' reported costs (an unreported
    cost counts at the nominal budget for an agent that may call a model, 0 otherwise)."""
    reported = all(c is not None for c in costs)
    cost = sum(c if c is not None else (nominal if paid else 0.0) for c in costs)
    with held(_lock_path(ledger), poll_s=0.02):
        return append_event(
            ledger,
            {
                "event": "finish",
                **trial,
                "cost_usd": round(cost, 6),
                "cost_reported": reported,
                "trials": len(costs),
            },
        )


def has_finish(ledger: Path, job_name: str) -> bool:
    last = state(read_entries(ledger))["last"].get(job_name)
    return last is not None and last["event"] == "finish"


def build_ledger(ledger: Path, receipts: list[Path], ceiling_usd: float | None) -> dict:
    """The cost-ledger artifact for the trials of these receipts, from the live ledger."""
    read = [(str(p), read_record(p, TRIAL_RECEIPT)) for p in receipts]
    if not read:
        raise AfbenchError("no trial receipts given", field="--receipt")
    release = read[0][1]["release"]
    entries = read_entries(ledger)
    whole = state(entries)
    trials = []
    for _, receipt in read:
        name = receipt["job_name"]
        last = whole["last"].get(name)
        if receipt.get("refused"):
            status, cost, reported = "refused", None, None
        elif last is None:
            status, cost, reported = "not in the ledger", None, None
        elif last["event"] == "finish":
            status, cost, reported = "finished", last["cost_usd"], last["cost_reported"]
        else:
            status, cost, reported = "started, not finished", None, None
        trials.append(
            {
                "job_name": name,
                "task_id": receipt["task_id"],
                "attempt": receipt["attempt"],
                "agent": receipt["run_agent"],
                "model": receipt["run_model"],
                "status": status,
                "cost_usd": cost,
                "cost_reported": reported,
                "worst_case_usd": receipt["worst_case_usd"],
                "refused": receipt.get("refused"),
            }
        )
    spent = round(sum(t["cost_usd"] or 0 for t in trials), 6)
    n_refused = sum(t["status"] == "refused" for t in trials)
    return record(
        COST_LEDGER,
        release=release,
        ceiling_usd=ceiling_usd,
        spent_usd=spent,
        ledger_spent_usd=whole["spent_usd"],
        ledger_open_usd=whole["open_usd"],
        trials=trials,
        refused=n_refused,
        stopped=n_refused > 0,
        live_ledger=str(ledger),
        note=NOTE,
    )
