"""The cost meter of `snakemake execute`: a live ledger that the trial jobs share (on SLURM, from
any node), and the cost-ledger artifact a rule writes from it at the end.

The live ledger is a JSON-lines file beside the Harbor jobs folder, appended to only while its
lock (locking.held, a POSIX lock on `<ledger>.lock`) is held, so concurrent trial jobs never
interleave. Each trial reserves its cap before Harbor starts (`start`, with `worst_case_usd`:
the trial's declared cap for an agent that may call a model, 0 for nop and oracle), and closes
the reservation with exactly one of:

- `finish`: what Harbor reports it spent (`agent_result.cost_usd`, summed over the job's
  trials; an agent that may call a model and reports nothing counts at its cap), or what
  afbench saw it spend while it ran, whichever is more; beyond the cap it is an overshoot;
- `released`: the trial never reached Harbor (its export failed, the engine did not answer,
  its controller died first), so nothing was spent; the reason is recorded;
- `interrupted`: the trial reached Harbor and its holder died, or Harbor failed without a
  result: what it spent is unknown, so its cap stays held for good (`held_usd`).

A trial refused at the ceiling adds `refused`. Spent is the sum of the finished costs, held the
sum of the interrupted trials' caps, open the reservations not yet closed. A new trial starts
only if spent + held + open + its own cap stay within the ceiling; a reservation whose
controller is gone (its lock free, its pid or SLURM job gone) is closed first, by name.

The ledger is an input like any other: read strictly (a regular file, never through a link;
each line JSON with the fields of its event, typed and in range), and any damage is one error
naming the file and line, which stops every trial: money is never counted from a ledger that
cannot be read.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from afbench.core.budget import MAX_USD, USD_RULE
from afbench.core.errors import AfbenchError, Problem
from afbench.core.fsutil import parse_json_bytes
from afbench.core.locking import append_event, gone, held, read_bytes
from afbench.kinds import COST_LEDGER, FORMS, TRIAL_RECEIPT, Field
from afbench.kinds.execution import LEDGER_ENTRY, LEDGER_REQUIRED, LEDGER_TRIAL

NOTE = (
    "Costs are what Harbor recorded for each trial (agent_result.cost_usd), summed per job, or "
    "what afbench saw the trial spend while it ran, whichever is more; a trial of an agent "
    "that may call a model and reports no cost counts at its cap. Each trial reserves its cap "
    "before it starts, and starts only while spent + held + the reservations of the trials "
    "running + its own cap stay within the ceiling. A trial that spent more than its cap is an "
    "overshoot; a trial interrupted after it reached Harbor holds its cap for good (what it "
    "spent is unknown)."
)
WHAT = "cost ledger"
EVENTS = LEDGER_ENTRY.field("event").values


# --- the strict reader ----------------------------------------------------------------------
# Each field is read as LEDGER_ENTRY declares it (its type, null rule, least value, closed set,
# form), within the bounds every input of afbench keeps: text of at most 10,000 characters, a
# whole number up to 10**9, dollars finite and at most MAX_USD.
def _text(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 10_000


def _usd(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= MAX_USD
    )


def _count(low: int) -> Callable[[object], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and low <= v <= 10**9


def _check_of(field: Field) -> tuple[Callable[[object], bool], str]:
    """The check of one declared field's value, and what it expects, in words."""
    if field.type is bool:
        check, said = (lambda v: isinstance(v, bool)), "true or false"
    elif field.type is int:
        low = int(field.minimum or 0)
        check, said = _count(low), f"a whole number >= {low}"
    elif field.type is float and field.unit == "USD" and field.minimum == 0:
        check, said = _usd, USD_RULE
    elif field.type is str and field.values:
        values = field.values
        check = values.__contains__
        said = " or ".join(f"'{v}'" for v in values)
    elif field.type is str and field.pattern is not None:
        form = re.compile(field.pattern).fullmatch
        check = lambda v: _text(v) and form(v) is not None  # noqa: E731
        said = FORMS[field.pattern]
    elif field.type is str:
        check, said = _text, "text of 1 to 10,000 characters"
    else:
        raise TypeError(f"{LEDGER_ENTRY.name}: field {field.name!r} of a type the reader lacks")
    if not field.null:
        return check, said
    return (lambda v: v is None or check(v)), f"{said}, or null"


FIELD_CHECKS = {f.name: _check_of(f) for f in LEDGER_ENTRY.fields if f.name != "event"}
REQUIRED = LEDGER_REQUIRED


def _entry(line: bytes, file: str, number: int) -> dict:
    try:
        entry = parse_json_bytes(line, file, f"{WHAT} line")
    except AfbenchError as error:
        raise AfbenchError(error.problems[0].message, file=file, row=number) from None
    if not isinstance(entry, dict):
        raise AfbenchError(
            "not a cost-ledger entry",
            file=file,
            row=number,
            expected="one JSON object per line, as afbench writes them",
            found=type(entry).__name__,
        )
    event = entry.get("event")
    if event not in EVENTS:
        raise AfbenchError(
            "not a cost-ledger entry",
            file=file,
            row=number,
            field="event",
            expected=f"one of {', '.join(EVENTS)}",
            found=str(event)[:100],
        )
    for name in REQUIRED[event]:
        if name not in entry:
            raise AfbenchError(
                f"a '{event}' entry lacks a field",
                file=file,
                row=number,
                field=name,
                expected=FIELD_CHECKS[name][1],
                found="nothing",
            )
    for name, value in entry.items():
        check = FIELD_CHECKS.get(name)
        if check is None and name != "event":
            raise AfbenchError(
                "a cost-ledger entry has a field the ledger does not declare",
                file=file,
                row=number,
                field=str(name)[:100],
                expected=f"only the fields of a {LEDGER_ENTRY.name} (kinds.execution)",
                found="a field of that name",
            )
        if check is not None and not check[0](value):
            shown = repr(value) if not isinstance(value, int) else f"{value}"
            raise AfbenchError(
                "a cost-ledger field is out of type or range",
                file=file,
                row=number,
                field=name,
                expected=check[1],
                found=shown[:100],
            )
    return entry


# what this process last read of each ledger: its bytes up to the last whole line, how many
# lines they hold, and their entries. The ledger is only ever appended to, so a reread checks
# that the file still begins with those bytes and parses only what follows; anything else
# (a ledger rewritten, truncated, replaced) is read whole again.
_READ: dict[str, tuple[bytes, int, list[dict]]] = {}


def read_entries(ledger: Path, *, settled_only: bool = False) -> list[dict]:
    """Every entry of the live ledger (none if it does not exist yet), each checked. With
    `settled_only` (a reader that holds no lock: afbench.execution.watch), a last line without its
    newline is one still being appended, left for the next read instead of refused."""
    data = read_bytes(ledger, WHAT)
    key = os.path.abspath(ledger)
    known, lines, entries = _READ.get(key, (b"", 0, []))
    if not (known and data.startswith(known)):
        known, lines, entries = b"", 0, []
    cut = data.rfind(b"\n") + 1
    fresh = data[len(known) : cut].split(b"\n")[:-1] if cut > len(known) else []
    whole = entries + [
        _entry(line, str(ledger), lines + n)
        for n, line in enumerate(fresh, start=1)
        if line.strip()
    ]
    _READ[key] = (data[:cut], lines + len(fresh), whole)
    tail = data[cut:]
    # a line being appended begins as afbench writes every line, `{"`: any other tail never
    # becomes an entry, so it is refused at once even by a reader that waits for the rest
    if tail.strip() and not (settled_only and tail.startswith(b'{"')):  # never kept as known
        return [*whole, _entry(tail, str(ledger), lines + len(fresh) + 1)]
    return list(whole)


# --- what the ledger says ---------------------------------------------------------------------
def state(entries: list[dict]) -> dict:
    """Spent, held and open money, and each job's story: its open reservation (a start not yet
    closed), its last closing entry (finish, released or interrupted), overshoots."""
    open_: dict[str, dict] = {}
    last: dict[str, dict] = {}
    spent = held_usd = 0.0
    overshoots, interrupted, released, refused = [], [], [], []
    for entry in entries:
        name, event = entry["job_name"], entry["event"]
        if event == "start":
            open_[name] = entry  # a start over an open one of the same trial replaces it
        elif event == "refused":
            refused.append(entry)
        else:
            open_.pop(name, None)
            last[name] = entry
            if event == "finish":
                spent += entry["cost_usd"]
                if entry.get("overshoot_usd", 0) > 0:
                    overshoots.append(entry)
            elif event == "interrupted":
                held_usd += entry["held_usd"]
                interrupted.append(entry)
            else:
                released.append(entry)
    reserved = sum(e["worst_case_usd"] for e in open_.values())
    return {
        "spent_usd": round(spent, 6),
        "held_usd": round(held_usd, 6),
        "open_usd": round(reserved, 6),
        "open": sorted(open_),
        "starts": open_,
        "last": last,
        "overshoots": overshoots,
        "interrupted": interrupted,
        "released": released,
        "refused": refused,
    }


def finished(now: dict, job_name: str) -> bool:
    last = now["last"].get(job_name)
    return job_name not in now["starts"] and last is not None and last["event"] == "finish"


def interrupted_unfinished(now: dict, job_name: str) -> dict | None:
    """The `interrupted` entry that closed this trial's last attempt, unless it ran again."""
    last = now["last"].get(job_name)
    if job_name in now["starts"] or last is None or last["event"] != "interrupted":
        return None
    return last


def committed(now: dict, *, besides: str | None = None) -> float:
    """What the ledger counts against the ceiling: spent + held + every open reservation
    (but the one of `besides`)."""
    mine = now["starts"].get(besides, {}).get("worst_case_usd", 0) if besides else 0
    return round(now["spent_usd"] + now["held_usd"] + now["open_usd"] - mine, 6)


def _jobs_dir(ledger: Path) -> Path:
    return ledger.with_name(ledger.name.removesuffix(".ledger.jsonl"))


def lock_of(ledger: Path, entry: dict) -> Path:
    """A trial's lock beside its Harbor job folder, found from the ledger's own place and the
    entry's (checked) job name: a path a ledger line names is shown, never opened."""
    return _jobs_dir(ledger) / f"{entry['job_name']}.lock"


def describe(entry: dict) -> str:
    slurm = f", SLURM job {entry['slurm_job_id']}" if entry.get("slurm_job_id") else ""
    return f"host {entry['host']}, pid {entry['pid']}{slurm}, since {entry['at']}"


def dead_holds(ledger: Path, now: dict, *, skip: frozenset = frozenset()) -> list[dict]:
    """The open reservations whose controller is gone (locking.gone), each with what closes
    it: `released` when Harbor never began its job folder, `interrupted` at its cap when it
    did (what it spent is unknown)."""
    found = []
    for name, entry in sorted(now["starts"].items()):
        if name in skip:
            continue
        why = gone(entry, lock_of(ledger, entry))
        if why is None:
            continue
        job_dir = lock_of(ledger, entry).with_suffix("")
        reached = job_dir.is_dir() and any(p.is_dir() for p in job_dir.iterdir())
        found.append(
            {
                "entry": entry,
                "why": why,
                "event": "interrupted" if reached and entry["worst_case_usd"] else "released",
                "reached_harbor": reached,
            }
        )
    return found


def dead_hold_line(hold: dict) -> str:
    entry = hold["entry"]
    if hold["event"] == "released" and not hold["reached_harbor"]:
        what = "released (Harbor never started its trial: nothing was spent)"
    elif hold["event"] == "released":
        what = "released (an agent that calls no model: nothing was spent)"
    else:
        what = (
            f"its cap USD {entry['worst_case_usd']:g} is held for good (it reached Harbor: "
            "what it spent is unknown)"
        )
    return (
        f"the hold of trial {entry['job_name']} ({describe(entry)}) belongs to a controller "
        f"that is gone ({hold['why']}): {what}"
    )


def close_dead_holds(ledger: Path, holds: list[dict]) -> None:
    """Record what closes each dead hold (under the ledger's lock, once: a hold another
    process closed meanwhile is left alone)."""
    if not holds:
        return
    with held(_lock_path(ledger), poll_s=0.02):
        still = state(read_entries(ledger))["starts"]
        for hold in holds:
            if still.get(hold["entry"]["job_name"]) == hold["entry"]:
                _close(ledger, hold)


def _close(ledger: Path, hold: dict) -> None:
    """Write what closes one dead hold (the ledger's lock held)."""
    entry = hold["entry"]
    close = {k: entry[k] for k in ("job_name", "task_id", "attempt", "agent", "model")}
    reason = f"its controller is gone ({describe(entry)}: {hold['why']})"
    if hold["event"] == "released":
        _append(ledger, {"event": "released", **close, "reason": reason})
    else:
        _append(
            ledger,
            {
                "event": "interrupted",
                **close,
                "held_usd": entry["worst_case_usd"],
                "reason": reason,
            },
        )


# --- what the trial jobs write ------------------------------------------------------------------
def _lock_path(ledger: Path) -> Path:
    return ledger.with_name(ledger.name + ".lock")


def _append(ledger: Path, entry: dict) -> dict:
    """Add one entry, checked as the reader checks it: never a line it would refuse."""
    written = append_event(ledger, entry, what=WHAT, check=lambda line: _entry(line, "", 0))
    return written


def start(
    ledger: Path,
    trial: dict,
    worst_case_usd: float,
    ceiling_usd: float | None,
    *,
    lock: Path | None = None,
) -> str | None:
    """Reserve `trial`'s cap (job_name, task_id, attempt, agent, model), or refuse it: returns
    the reason when spent + held + the open reservations + its own would pass the ceiling.
    Dead holds of other trials are closed first, by name (on standard error)."""
    import sys

    ledger.parent.mkdir(parents=True, exist_ok=True)
    with held(_lock_path(ledger), poll_s=0.02):
        now = state(read_entries(ledger))
        dead = dead_holds(ledger, now, skip=frozenset({trial["job_name"]}))
        for hold in dead:
            sys.stderr.write(f"afbench: {dead_hold_line(hold)}\n")
            _close(ledger, hold)
        if dead:
            now = state(read_entries(ledger))
        others = committed(now, besides=trial["job_name"])
        total = round(others + worst_case_usd, 6)
        if ceiling_usd is not None and worst_case_usd and total > ceiling_usd:
            reason = (
                f"cost ceiling: spent USD {now['spent_usd']:g} + held USD "
                f"{now['held_usd']:g} + USD {others - now['spent_usd'] - now['held_usd']:g} "
                f"for the trials started and not finished + this trial's cap USD "
                f"{worst_case_usd:g} = USD {total:g} is over execute.max_cost_usd = "
                f"{ceiling_usd:g}; not started"
            )
            _append(ledger, {"event": "refused", **trial, "reason": reason})
            return reason
        entry = {"event": "start", **trial, "worst_case_usd": worst_case_usd}
        if lock is not None:
            entry["lock"] = str(lock)
        _append(ledger, entry)
    return None


def refuse(ledger: Path, trial: dict, reason: str) -> None:
    ledger.parent.mkdir(parents=True, exist_ok=True)
    with held(_lock_path(ledger), poll_s=0.02):
        read_entries(ledger)  # a damaged ledger is refused before anything is added to it
        _append(ledger, {"event": "refused", **trial, "reason": reason})


def finish(
    ledger: Path,
    trial: dict,
    costs: list[float | None],
    paid: bool,
    cap_usd: float,
    *,
    running_cost_usd: float | None = None,
    stopped: str | None = None,
) -> dict:
    """Close the trial's reservation with what it spent: the sum of its trials' reported costs
    (an unreported cost counts at the cap for an agent that may call a model, 0 otherwise), or
    the running cost afbench saw, whichever is more; beyond the cap, an overshoot."""
    reported = all(c is not None for c in costs)
    cost = sum(c if c is not None else (cap_usd if paid else 0.0) for c in costs)
    if running_cost_usd is not None:
        cost = max(cost, running_cost_usd)
    cost = round(cost, 6)
    with held(_lock_path(ledger), poll_s=0.02):
        read_entries(ledger)
        return _append(
            ledger,
            {
                "event": "finish",
                **trial,
                "cost_usd": cost,
                "cost_reported": reported,
                "trials": len(costs),
                "cap_usd": cap_usd,
                "overshoot_usd": round(max(0.0, cost - cap_usd), 6) if paid else 0.0,
                "running_cost_usd": running_cost_usd,
                "stopped": stopped,
            },
        )


def release(ledger: Path, trial: dict, reason: str) -> None:
    """Close the trial's reservation: it never reached Harbor, so nothing was spent."""
    with held(_lock_path(ledger), poll_s=0.02):
        now = state(read_entries(ledger))
        if trial["job_name"] in now["starts"]:
            _append(ledger, {"event": "released", **trial, "reason": reason})


def interrupt(ledger: Path, trial: dict, held_usd: float, reason: str) -> bool:
    """Close the trial's reservation as interrupted after it reached Harbor: `held_usd` (its
    cap, or what it is known to have spent) stays held for good. False if it was not open."""
    with held(_lock_path(ledger), poll_s=0.02):
        now = state(read_entries(ledger))
        if trial["job_name"] not in now["starts"]:
            return False
        _append(
            ledger,
            {"event": "interrupted", **trial, "held_usd": round(held_usd, 6), "reason": reason},
        )
    return True


def allowance(ledger: Path, job_name: str, cap_usd: float, ceiling_usd: float | None) -> float:
    """What a running trial may spend in all: its cap, or less when what the others committed
    has grown since it started (a trial that passed its cap unseen): the ceiling minus spent,
    held and every other open reservation."""
    if ceiling_usd is None:
        return cap_usd
    with held(_lock_path(ledger), poll_s=0.02):
        now = state(read_entries(ledger))
    others = committed(now, besides=job_name)
    return max(0.0, min(cap_usd, ceiling_usd - others))


# --- the artifact -------------------------------------------------------------------------------
def _partial(receipts: list[dict]) -> dict | None:
    """A partial run's rounds: how many trials of each ran, and how many did not."""
    rounds: dict[int, dict] = {}
    for receipt in receipts:
        number = receipt.get("round")
        if number is None:
            continue
        counts = rounds.setdefault(number, {"round": number, "ran": 0, "not_run": 0})
        counts["not_run" if receipt.get("refused") else "ran"] += 1
    if not rounds:
        return None
    ordered = [rounds[n] for n in sorted(rounds)]
    complete = 0
    for counts in ordered:
        if counts["not_run"]:
            break
        complete = counts["round"]
    return {"rounds": ordered, "complete_rounds": complete}


def trial_key(receipt: dict) -> tuple:
    """Which trial a receipt is of: its release and selection, its task, its configuration (the
    plan's agent and model) and its attempt."""
    made = receipt["plan"]
    return (
        receipt["release"]["revision"],
        made["selection"]["selection_sha256"],
        receipt["task_id"],
        made["agent"],
        made["model"] or "",
        receipt["attempt"],
    )


def receipt_of_trial(
    receipt: dict, other: dict, other_file: str = "another receipt"
) -> list[Problem]:
    """A receipt beside another of the same trial (trial_key): the same content, or the
    problem of the field they differ in (the outcome when they differ in it)."""
    if receipt == other or trial_key(receipt) != trial_key(other):
        return []
    body = TRIAL_RECEIPT.body(other)
    differ = [k for k in body if body[k] != receipt.get(k)]
    field = "outcome" if "outcome" in differ else differ[0]
    made = receipt["plan"]
    model = f", model {made['model']}" if made["model"] else ""
    shown = other[field]
    return [
        Problem(
            f"two different receipts of one trial (task {receipt['task_id']}, agent "
            f"{made['agent']}{model}, attempt {receipt['attempt']}): this one and {other_file}; "
            "a trial has one receipt",
            field=field,
            expected=f"the other receipt's {field}"
            + (f", {shown!r}" if isinstance(shown, str | int | float) else ""),
            found=receipt.get(field),
        )
    ]


def one_per_trial(read: Iterable[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """Trial receipts read together ((file, receipt) pairs, each read with TRIAL_RECEIPT.read):
    one per trial (release, selection, task, configuration, attempt), in that order whatever
    the order of the files. The same receipt twice (equal content) counts once; two different
    receipts of one trial are refused, naming both files and the field they differ in (the
    outcome when they differ in it), since which of them is the trial's is not for afbench to
    guess. Their costs (each finite and >= 0, as the kind reads them) must add up to a finite
    number of USD: a sum beyond a float's range is refused at the file that overflows it."""
    kept: dict[tuple, tuple[str, dict]] = {}
    for file, receipt in sorted(read, key=lambda pair: pair[0]):
        key = trial_key(receipt)
        if key not in kept:
            kept[key] = (file, receipt)
            continue
        first_file, first = kept[key]
        differing = receipt_of_trial(receipt, first, first_file)
        if differing:
            differing[0].file = file
            raise AfbenchError(problems=differing)
    ordered = [kept[key] for key in sorted(kept)]
    total = 0.0
    for file, receipt in ordered:
        for i, trial in enumerate(receipt["trials"]):
            total += trial["cost_usd"] or 0.0
            if not math.isfinite(total):
                raise AfbenchError(
                    "the trials' costs add up beyond a float's range",
                    file=file,
                    field=f"trials[{i}].cost_usd",
                    expected="costs whose sum is a finite number of USD",
                    found=trial["cost_usd"],
                )
    return ordered


def read_receipts(paths: Iterable[Path | str]) -> list[dict]:
    """The trial receipts at `paths`, read together (one_per_trial)."""
    return [r for _, r in one_per_trial((str(p), TRIAL_RECEIPT.read(p)) for p in paths)]


# what a cost ledger's trial copies from its receipt (build_ledger, ledger_of_receipts)
_FROM_RECEIPT = {
    "task_id": "task_id",
    "attempt": "attempt",
    "agent": "run_agent",
    "model": "run_model",
    "worst_case_usd": "worst_case_usd",
    "refused": "refused",
    "action": "action",
}


def build_ledger(ledger: Path, receipts: list[Path], ceiling_usd: float | None) -> dict:
    """The cost-ledger artifact for the trials of these receipts, from the live ledger."""
    read = one_per_trial((str(p), TRIAL_RECEIPT.read(p)) for p in receipts)
    if not read:
        raise AfbenchError("no trial receipts given", field="--receipt")
    release = read[0][1]["release"]
    whole = state(read_entries(ledger))
    held_by_job: dict[str, float] = {}
    for entry in whole["interrupted"]:
        held_by_job[entry["job_name"]] = held_by_job.get(entry["job_name"], 0) + entry["held_usd"]
    trials = []
    for _, receipt in read:
        name = receipt["job_name"]
        last = whole["last"].get(name)
        cost = overshoot = stopped = None
        reported = None
        if receipt.get("refused"):
            status = "refused" if receipt.get("action") != "interrupted" else "not run again"
        elif name in whole["starts"]:
            status = "started, not finished"
        elif last is None:
            status = "not in the ledger"
        elif last["event"] == "finish":
            status, cost, reported = "finished", last["cost_usd"], last["cost_reported"]
            overshoot, stopped = last.get("overshoot_usd", 0.0), last.get("stopped")
        else:
            status = last["event"]
        values = {
            **{field: receipt.get(source) for field, source in _FROM_RECEIPT.items()},
            "job_name": name,
            "status": status,
            "cost_usd": cost,
            "cost_reported": reported,
            "overshoot_usd": overshoot,
            "stopped": stopped,
            "held_usd": round(held_by_job.get(name, 0.0), 6),
        }
        trials.append({field: values[field] for field in LEDGER_TRIAL.names})
    totals = _totals(trials)
    return COST_LEDGER.record(
        release=release,
        ceiling_usd=ceiling_usd,
        **{k: totals[k] for k in ("spent_usd", "held_usd", "overshoots", "overshoot_usd")},
        ledger_spent_usd=whole["spent_usd"],
        ledger_held_usd=whole["held_usd"],
        ledger_open_usd=whole["open_usd"],
        trials=trials,
        refused=totals["refused"],
        stopped=totals["refused"] > 0,
        interrupted_not_rerun=sum(t["action"] == "interrupted" for t in trials),
        partial=_partial([r for _, r in read]),
        live_ledger=str(ledger),
        note=NOTE,
    )


def _totals(trials: list[dict]) -> dict:
    """A cost ledger's totals over its trials."""
    over = [t for t in trials if t["overshoot_usd"]]
    return {
        "spent_usd": round(sum(t["cost_usd"] or 0 for t in trials), 6),
        "held_usd": round(sum(t["held_usd"] for t in trials), 6),
        "overshoots": len(over),
        "overshoot_usd": round(sum(t["overshoot_usd"] for t in over), 6),
        "refused": sum(t["status"] == "refused" for t in trials),
    }


def ledger_of_receipts(cost_ledger: dict, receipts: list[dict]) -> list[Problem]:
    """The cost ledger beside the trial receipts it was written over: one trial per receipt
    (by job name), each field it copies equal, and its totals the sums of its trials."""
    problems = []
    by_job = {r["job_name"]: r for r in receipts}
    listed = Counter(t["job_name"] for t in cost_ledger["trials"])
    for name in sorted(set(by_job) - set(listed)):
        problems.append(
            Problem(
                "a trial receipt's trial is not in the cost ledger",
                field="trials",
                expected=f"a trial of job {name}",
                found="none",
            )
        )
    for index, trial in enumerate(cost_ledger["trials"]):
        receipt = by_job.get(trial["job_name"])
        at = f"trials[{index}]"
        if receipt is None or listed[trial["job_name"]] > 1:
            problems.append(
                Problem(
                    "the cost ledger lists a trial no receipt has, or one trial twice",
                    field=f"{at}.job_name",
                    expected="the job of one trial receipt, once",
                    found=trial["job_name"],
                )
            )
            continue
        for field, source in _FROM_RECEIPT.items():
            if trial[field] != receipt.get(source):
                problems.append(
                    Problem(
                        "the cost ledger's trial differs from its receipt",
                        field=f"{at}.{field}",
                        expected=f"the receipt's {source}, {receipt.get(source)!r}",
                        found=trial[field],
                    )
                )
    for field, total in _totals(cost_ledger["trials"]).items():
        if cost_ledger[field] != total:
            problems.append(
                Problem(
                    "the cost ledger's total is not the sum of its trials",
                    field=field,
                    expected=total,
                    found=cost_ledger[field],
                )
            )
    return problems


# --- `afbench ledger` ------------------------------------------------------------------------
def summary_lines(ledger: Path, *, close_dead: bool = False) -> list[str]:
    """What the live ledger holds, in lines: spent, held and open money; every open hold with
    its holder, and whether that controller is gone (closed here with `close_dead`); every
    overshoot; the interrupted and released trials."""
    now = state(read_entries(ledger))
    dead = dead_holds(ledger, now)
    if dead and close_dead:
        close_dead_holds(ledger, dead)
    gone_names = {hold["entry"]["job_name"]: hold for hold in dead}
    done = sum(e["event"] == "finish" for e in now["last"].values())
    lines = [
        f"{ledger}: spent USD {now['spent_usd']:g} on {done} "
        f"finished trial(s); held USD {now['held_usd']:g} for {len(now['interrupted'])} "
        f"interrupted trial(s); open USD {now['open_usd']:g} for {len(now['starts'])} trial(s) "
        f"started and not finished; {len(now['overshoots'])} overshoot(s); "
        f"{len(now['refused'])} refusal(s)"
    ]
    for name, entry in sorted(now["starts"].items()):
        hold = gone_names.get(name)
        if hold is None:
            lines.append(
                f"hold: trial {name}, USD {entry['worst_case_usd']:g}, by {describe(entry)}: "
                "running"
            )
        else:
            done = "closed now" if close_dead else "close it with --release-dead"
            lines.append(f"hold: {dead_hold_line(hold)} ({done})")
    for entry in now["overshoots"]:
        lines.append(
            f"overshoot: trial {entry['job_name']} spent USD {entry['cost_usd']:g}, USD "
            f"{entry['overshoot_usd']:g} over its cap USD {entry.get('cap_usd', 0):g}"
            + (
                f" (stopped at {entry['stopped']})"
                if entry.get("stopped")
                else " (not seen while it ran)"
            )
        )
    for entry in now["interrupted"]:
        lines.append(
            f"interrupted: trial {entry['job_name']}, USD {entry['held_usd']:g} held: "
            f"{entry['reason']}"
        )
    for entry in now["released"]:
        lines.append(f"released: trial {entry['job_name']}: {entry['reason']}")
    return lines
