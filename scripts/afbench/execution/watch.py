"""The live view of a running `snakemake execute`: where each configuration stands, read from the
live cost ledger (afbench.execution.ledger) and the trial receipts, never writing anything but the
status page the trial jobs rewrite after each trial.

One function (`snapshot`) reads the files and computes every figure; the terminal (`afbench
watch`, `afbench ledger --follow`), its JSON record and the status page only render it. Per
configuration (the plan label of an agent and model): trials done, running, held (interrupted,
their cap kept for good) and left; successes, rejections and infrastructure errors so far, the
success rate with its Wilson interval (afbench.core.stats); what it spent, holds and has reserved;
for the sealed sequential comparison, where its last step stands; and a time left from the
trials' own durations. A snapshot holds no wall clock: its "as of" is the ledger's last stamp.

The ledger is read as a trial job reads it (ledger.read_entries, strict: a damaged or foreign
file is one error naming file, line and field), but a last line without its newline is a line
still being appended (a trial job on another node), so it is left for the next look. No lock is
taken: the ledger and the receipts are only read, so a view on a shared file system disturbs
no trial.
"""

from __future__ import annotations

import html
import math
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path

from afbench.core.fsutil import atomic_write_bytes
from afbench.core.stats import wilson_interval
from afbench.execution import ledger
from afbench.kinds import RUN_PLAN, SEQUENTIAL_RUN, TRIAL_RECEIPT
from afbench.plans.plan import plan_label

# a receipt's outcome as the view counts it: accepted is a success, rejected a rejection,
# anything else of a trial that ran (error, incomplete, missing, unverified, mixed, none) an
# infrastructure error; a trial refused before it ran is counted apart
SUCCESS, REJECTION = "accepted", "rejected"
# the trial receipts below the receipts folder: <selection>/<label>/<task>/attempt-<n>.json
RECEIPT_GLOB = "*/*/*/attempt-*.json"
STEP_GLOB = "step-*.json"
REFRESH_S = 10


# --- reading what is on disk ----------------------------------------------------------------
def read_receipts(folder: Path | None) -> list[tuple[str, dict]]:
    """Every trial receipt below `folder` (none if it does not exist yet), each read strictly.
    A receipt is written whole (renamed into place), so one that is there can be read."""
    if folder is None or not Path(folder).is_dir():
        return []
    paths = sorted(Path(folder).glob(RECEIPT_GLOB))
    return [(str(path), TRIAL_RECEIPT.read(path)) for path in paths]


def read_plans(paths: Iterable[Path]) -> list[dict]:
    return [RUN_PLAN.read(path) for path in paths]


def last_step(folder: Path | None) -> dict | None:
    """The sealed comparison's latest step (results/<rev>/execute/sequential/step-<n>.json),
    or None when there is none yet."""
    if folder is None or not Path(folder).is_dir():
        return None
    numbered = []
    for path in Path(folder).glob(STEP_GLOB):
        number = path.stem.removeprefix("step-")
        if number.isdigit():
            numbered.append((int(number), path))
    if not numbered:
        return None
    return SEQUENTIAL_RUN.read(max(numbered)[1])


def _seconds(start: str, end: str) -> float | None:
    try:
        return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except (TypeError, ValueError):  # a stamp unreadable, or one with an offset and one without
        return None


# --- the snapshot -----------------------------------------------------------------------------
def _empty(label: str) -> dict:
    return {
        "label": label,
        "planned": None,
        "done": 0,
        "running": 0,
        "held": 0,
        "refused": 0,
        "left": None,
        "successes": 0,
        "rejections": 0,
        "errors": 0,
        "rate": None,
        "rate_low": None,
        "rate_high": None,
        "spent_usd": 0.0,
        "held_usd": 0.0,
        "open_usd": 0.0,
        "mean_trial_s": None,
        "time_left_s": None,
    }


def _sequential(step: dict | None) -> dict | None:
    if step is None:
        return None
    look = step["looks"][-1] if step["looks"] else None
    return {
        "comparison": f"{step['comparison']['a']} against {step['comparison']['b']}",
        "step": step["step"],
        "decision": step["decision"],
        "stopped": step["stopped"],
        "stopped_by": step["stopped_by"],
        "tasks_counted": step["tasks_counted"],
        "horizon": step["horizon"],
        "e_a": None if look is None else look["e_a"],
        "e_b": None if look is None else look["e_b"],
        "for_a": None if look is None else look["favour_b"]["for_a"],
        "boundary_for_a": None if look is None else look["boundary_for_a"],
        "for_b": None if look is None else look["favour_a"]["pairs"] - look["favour_a"]["for_a"],
        "boundary_for_b": None if look is None else look["boundary_for_b"],
        # the furthest look the next trials reach: every task started by then
        "next_look_tasks": None
        if step["stopped"]
        else len({t["task_id"] for t in [*step["trials"], *step["next_trials"]]}),
        "next_trials": step["next_trials"],
        "retries": step["retries"],
        "excluded": [t["task_id"] for t in step["excluded_tasks"]],
    }


def _count_ledger(
    row: Callable[[str], dict], entries: list[dict], now: dict
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each configuration's money and its running and held trials, from the ledger; returns
    the durations of its finished trials (start to finish) and how long each running trial has
    run by the ledger's last stamp, by configuration."""
    durations: dict[str, list[float]] = {}
    running: dict[str, list[float]] = {}
    last = max((entry["at"] for entry in entries), default=None)
    started: dict[str, str] = {}
    for entry in entries:
        label = plan_label(entry["agent"], entry["model"])
        event = entry["event"]
        if event == "start":
            started[entry["job_name"]] = entry["at"]
        elif event == "finish":
            row(label)["spent_usd"] += entry["cost_usd"]
            since = started.pop(entry["job_name"], None)
            took = None if since is None else _seconds(since, entry["at"])
            if took is not None and took >= 0:
                durations.setdefault(label, []).append(took)
        elif event == "interrupted":
            row(label)["held"] += 1
            row(label)["held_usd"] += entry["held_usd"]
            started.pop(entry["job_name"], None)
        elif event == "released":
            started.pop(entry["job_name"], None)
    for entry in now["starts"].values():
        label = plan_label(entry["agent"], entry["model"])
        made = row(label)
        made["running"] += 1
        made["open_usd"] += entry["worst_case_usd"]
        ran = _seconds(entry["at"], last) if last is not None else None
        running.setdefault(label, []).append(max(0.0, ran or 0.0))
    return durations, running


def _count_receipts(row: Callable[[str], dict], receipts: list[tuple[str, dict]]) -> dict:
    """Each configuration's closed trials and their outcomes, from the receipts; returns the
    (task, attempt) of each configuration's receipts."""
    receipted: dict[str, set[tuple[str, int]]] = {}
    for _, receipt in receipts:
        label = plan_label(receipt["plan"]["agent"], receipt["plan"]["model"])
        made = row(label)
        receipted.setdefault(label, set()).add((receipt["task_id"], receipt["attempt"]))
        if receipt["refused"] is not None:
            made["refused"] += 1
            continue
        made["done"] += 1
        if receipt["outcome"] == SUCCESS:
            made["successes"] += 1
        elif receipt["outcome"] == REJECTION:
            made["rejections"] += 1
        else:
            made["errors"] += 1
    return receipted


def _left_of_step(row: Callable[[str], dict], step: dict, receipted: dict) -> None:
    """A compared configuration without a run plan: what is left is what its last step asked
    for and has no receipt yet, but for the trials running."""
    waiting: dict[str, int] = {}
    for trial in step["next_trials"]:
        if (trial["task_id"], trial["attempt"]) not in receipted.get(trial["label"], set()):
            waiting[trial["label"]] = waiting.get(trial["label"], 0) + 1
    for label in {t["label"] for t in step["next_trials"]}:
        made = row(label)
        if made["planned"] is None:
            made["left"] = max(0, waiting.get(label, 0) - made["running"])


def _figures(made: dict, took: list[float], ran: list[float]) -> None:
    """What follows from the counts: trials left, the rate and its interval, the time left
    (`took`: finished trials' durations; `ran`: how long each running trial has run). The
    time left is what the running trials still need at the mean (the longest of them; one
    already past the mean counts none), then the trials left, as many at once as run now."""
    if made["planned"] is not None:
        closed = made["done"] + made["refused"]
        made["left"] = max(0, made["planned"] - closed - made["running"])
    if made["done"]:
        made["rate"] = made["successes"] / made["done"]
        made["rate_low"], made["rate_high"] = wilson_interval(made["successes"], made["done"])
    if took:
        made["mean_trial_s"] = round(sum(took) / len(took), 3)
    if made["left"] is not None and made["mean_trial_s"] is not None:
        mean = made["mean_trial_s"]
        finishing = max((max(0.0, mean - seconds) for seconds in ran), default=0.0)
        made["time_left_s"] = round(finishing + mean * made["left"] / max(1, made["running"]), 3)
    for key in ("spent_usd", "held_usd", "open_usd"):
        made[key] = round(made[key], 6)


def snapshot(
    ledger_path: Path,
    receipts_dir: Path | None = None,
    plans: Iterable[Path] = (),
    steps_dir: Path | None = None,
    ceiling_usd: float | None = None,
) -> dict:
    """Where the run stands, from the ledger, the receipts, the sealed run plans (each
    configuration's planned trials: its tasks times its attempts) and the comparison's last
    step: a JSON-able record that the terminal, the JSON line and the status page render."""
    entries = ledger.read_entries(ledger_path, settled_only=True)
    now = ledger.state(entries)
    receipts = read_receipts(receipts_dir)
    run_plans = read_plans(plans)
    step = last_step(steps_dir)
    if ceiling_usd is None and run_plans:
        ceiling_usd = min(p["money"]["ceiling_usd"] for p in run_plans)
    rows: dict[str, dict] = {}

    def row(label: str) -> dict:
        return rows.setdefault(label, _empty(label))

    for plan in run_plans:
        side = plan["configuration"]
        made = row(side["label"])
        made["planned"] = (made["planned"] or 0) + plan["selection"]["tasks"] * side["attempts"]
    durations, running = _count_ledger(row, entries, now)
    receipted = _count_receipts(row, receipts)
    if step is not None:
        _left_of_step(row, step, receipted)
    # a configuration with no finished trial yet is estimated from the others'
    every = [seconds for took in durations.values() for seconds in took]
    for label, made in rows.items():
        _figures(made, durations.get(label) or every, running.get(label, []))
    sequential = _sequential(step)
    job_names = {receipt["job_name"] for _, receipt in receipts}
    configurations = [rows[label] for label in sorted(rows)]
    committed = ledger.committed(now)
    # a configuration whose trials left are unknown leaves the run's time left unknown
    times = [
        m["time_left_s"] for m in configurations if m["left"] is None or m["left"] or m["running"]
    ]
    over = _over(entries, receipts_dir is not None, configurations, job_names, sequential)
    return {
        "as_of": max((entry["at"] for entry in entries), default=None),
        "ledger": str(ledger_path),
        "receipts": None if receipts_dir is None else str(receipts_dir),
        "configurations": configurations,
        "money": {
            "spent_usd": now["spent_usd"],
            "held_usd": now["held_usd"],
            "open_usd": now["open_usd"],
            "ceiling_usd": ceiling_usd,
            "left_usd": None if ceiling_usd is None else round(ceiling_usd - committed, 6),
        },
        "sequential": sequential,
        "time_left_s": None if None in times else round(sum(times), 3) if times else 0.0,
        "over": over,
    }


def _over(
    entries: list[dict],
    with_receipts: bool,
    configurations: list[dict],
    job_names: set[str],
    sequential: dict | None,
) -> bool:
    """The run has ended: something ran, nothing is reserved, nothing is left to run (where
    the plans or the comparison's step say how much there is), a sealed comparison has
    stopped, and every trial the ledger finished or refused has its receipt (written just
    after its last ledger line; a released or interrupted trial's job may write none)."""
    if not entries:
        return False
    if any(made["running"] for made in configurations):
        return False
    if any(made["left"] for made in configurations):
        return False
    if sequential is not None and not sequential["stopped"]:
        return False
    last = {entry["job_name"]: entry["event"] for entry in entries}
    owed = {name for name, event in last.items() if event in ("finish", "refused")}
    return not with_receipts or owed <= job_names


# --- rendering ------------------------------------------------------------------------------------
def _usd(value: float | None) -> str:
    return "none" if value is None else f"USD {value:g}"


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)


def _rate(made: dict) -> str:
    if made["rate"] is None:
        return "no trial yet"
    return f"{made['rate']:.3f} [{made['rate_low']:.3f}, {made['rate_high']:.3f}]"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    hours, rest = divmod(math.ceil(seconds), 3600)
    minutes, rest = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{rest:02d}s" if hours else f"{minutes}m{rest:02d}s"


COLUMNS = (
    ("configuration", lambda m: m["label"]),
    ("done", lambda m: str(m["done"])),
    ("running", lambda m: str(m["running"])),
    ("held", lambda m: str(m["held"])),
    ("left", lambda m: _count(m["left"])),
    ("successes", lambda m: str(m["successes"])),
    ("rejections", lambda m: str(m["rejections"])),
    ("infrastructure errors", lambda m: str(m["errors"])),
    ("refused", lambda m: str(m["refused"])),
    ("rate [95% Wilson]", _rate),
    ("spent USD", lambda m: f"{m['spent_usd']:g}"),
    ("held USD", lambda m: f"{m['held_usd']:g}"),
    ("reserved USD", lambda m: f"{m['open_usd']:g}"),
    ("time left", lambda m: _duration(m["time_left_s"])),
)


def head_line(snap: dict) -> str:
    money = snap["money"]
    end = "the run has ended" if snap["over"] else "running"
    return (
        f"{snap['ledger']}: as of {snap['as_of'] or 'no entry yet'}: {end}; spent "
        f"{_usd(money['spent_usd'])}, held {_usd(money['held_usd'])}, reserved "
        f"{_usd(money['open_usd'])}, ceiling {_usd(money['ceiling_usd'])}, left under it "
        f"{_usd(money['left_usd'])}; time left {_duration(snap['time_left_s'])}"
    )


def sequential_line(seq: dict) -> str:
    if seq["e_a"] is None:
        evidence = "no look yet"
    else:
        evidence = (
            f"evidence log e_a {seq['e_a']:g} (a: {seq['for_a']} of boundary "
            f"{seq['boundary_for_a']}), log e_b {seq['e_b']:g} (b: {seq['for_b']} of boundary "
            f"{seq['boundary_for_b']})"
        )
    where = (
        f"stopped ({seq['stopped_by']})"
        if seq["stopped"]
        else f"next look at {seq['next_look_tasks']} task(s)"
    )
    reruns = sum(t["attempt"] > 1 for t in seq["next_trials"])
    errors = "".join(
        (
            f"; {seq['retries']} trial(s) rerun after an error" if seq["retries"] else "",
            f", {reruns} more next" if reruns else "",
            f"; left out: {', '.join(seq['excluded'])}" if seq["excluded"] else "",
        )
    )
    return (
        f"comparison {seq['comparison']}: step {seq['step']}, {seq['decision']} after "
        f"{seq['tasks_counted']} of at most {seq['horizon']} task(s); {evidence}; {where}{errors}"
    )


def lines(snap: dict) -> list[str]:
    """The snapshot as plain lines: the run's head, one line per configuration, the
    comparison's step."""
    out = [head_line(snap)]
    for made in snap["configurations"]:
        out.append(
            f"{made['label']}: " + ", ".join(f"{name} {show(made)}" for name, show in COLUMNS[1:])
        )
    if snap["sequential"] is not None:
        out.append(sequential_line(snap["sequential"]))
    return out


def renderable(snap: dict):
    """The snapshot as a rich table (rich is imported here, only by a command that draws)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(title=head_line(snap), title_justify="left", expand=False)
    for name, _ in COLUMNS:
        table.add_column(name, justify="left" if name == "configuration" else "right")
    for made in snap["configurations"]:
        table.add_row(*(show(made) for _, show in COLUMNS))
    parts = [table]
    if snap["sequential"] is not None:
        parts.append(Text(sequential_line(snap["sequential"])))
    return Group(*parts)


def status_html(snap: dict, refresh_s: int = REFRESH_S) -> str:
    """The status page: the same figures, refreshing itself; nothing in it but the snapshot."""
    escape = html.escape
    head = "".join(f"<th>{escape(name)}</th>" for name, _ in COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(show(made))}</td>" for _, show in COLUMNS) + "</tr>"
        for made in snap["configurations"]
    )
    sequential = (
        f"<p>{escape(sequential_line(snap['sequential']))}</p>"
        if snap["sequential"] is not None
        else ""
    )
    refresh = "" if snap["over"] else f'<meta http-equiv="refresh" content="{refresh_s}">\n'
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"{refresh}<title>afbench execute: status</title>\n"
        "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px}td{text-align:right}"
        "td:first-child{text-align:left}</style>\n</head>\n<body>\n"
        f"<h1>afbench execute: status</h1>\n<p>{escape(head_line(snap))}</p>\n"
        f"<table>\n<tr>{head}</tr>\n{body}\n</table>\n{sequential}\n</body>\n</html>\n"
    )


def write_status_page(path: Path, snap: dict) -> None:
    """Rewrite the status page whole (renamed into place: a browser never reads half of it)."""
    atomic_write_bytes(Path(path), status_html(snap).encode(), about=snap)


def rewrite_status_page(path: Path, look: Callable[[], dict]) -> dict:
    """Draw the status page from a look at the files, and again while a look after the rename
    finds them changed; returns the snapshot drawn. Two trial jobs that end together rename
    their pages in either order, the older one possibly last: the job that renames last looks
    after it, so the page left standing is drawn from the files as the last trial left them."""
    snap = look()
    while True:
        write_status_page(path, snap)
        again = look()
        if again == snap:
            return snap
        snap = again


# --- following a run --------------------------------------------------------------------------
def follow(
    look: Callable[[], dict],
    show: Callable[[dict], None],
    *,
    interval_s: float,
    wait: Callable[[float], None] = time.sleep,
) -> dict:
    """Look, show what changed, wait, until the run has ended; returns the last snapshot."""
    shown = None
    while True:
        snap = look()
        if snap != shown:
            show(snap)
            shown = snap
        if snap["over"]:
            return snap
        wait(interval_s)
