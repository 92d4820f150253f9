"""Approving a run of trials before any starts (the guard of `snakemake execute`): what the
config alone decides (configured items, pinned images, the opt-in and a ceiling for an agent
that may call a model), the planned trials of the configured plans or of a sealed comparison,
and their worst case checked against the ceiling with the live ledger's spend and holds (a
partial run in its rounds, a sealed comparison batch by batch). The trials themselves run in
afbench.execution.trial."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from afbench.core import harbor, locking
from afbench.core.errors import AfbenchError
from afbench.execution import ledger
from afbench.execution.trial import (
    describe_holder,
    paid_trial_cap_usd,
    run_agent,
    running_elsewhere,
    trial_steps,
)


# --- the guard of `snakemake execute` ---------------------------------------------------------
def check_items(
    items: list[tuple[str, str]],
    plan_items: list[tuple[str, str]],
    agents: dict[tuple[str, str], str],
    release: dict,
    allow: bool,
    ceiling_usd: float | None,
) -> None:
    """What the config alone decides, before any plan is read: items that name configured
    plan items, pinned image digests for a formal run, the opt-in and a ceiling for an agent
    that may call a model."""
    if not items:
        raise AfbenchError(
            "no items to execute",
            field="execute.items",
            expected="at least one configured plan item (plans.items), as SELECTION/AGENT",
        )
    unknown = [f"{s}/{label}" for s, label in items if (s, label) not in plan_items]
    if unknown:
        raise AfbenchError(
            "not a configured plan item",
            field="execute.items",
            expected=f"one of {[f'{s}/{label}' for s, label in plan_items]} (plans.items)",
            found=", ".join(unknown),
        )
    if not release["synthetic"] and not all(i["digest"] for i in release["images"]):
        raise AfbenchError(
            "a formal run on the official release is refused while the image digests are "
            "unpinned: the trials could not be tied to the images the authors used",
            field="release.images[].digest",
            expected="every image's sha256 digest",
            found=", ".join(i["role"] for i in release["images"] if not i["digest"]) + " unpinned",
        )
    paid = sorted({agents[key] for key in items if harbor.calls_a_model(agents[key])})
    if paid and not allow:
        raise AfbenchError(
            f"agent '{paid[0]}' may call a paid model; refused without "
            "execute.allow_model_agents: true and a ceiling execute.max_cost_usd",
            field="execute.allow_model_agents",
            expected="true",
            found="false",
        )
    if paid and ceiling_usd is None:
        raise AfbenchError(
            f"agent '{paid[0]}' may call a paid model; refused without a ceiling",
            field="execute.max_cost_usd",
            expected="a ceiling in USD",
            found="none",
        )


def planned_trials(plans: dict[tuple[str, str], dict], attempts: int) -> list[dict]:
    """Every trial of the written plans: its selection, task, job name, lock and whether its
    agent may call a model."""
    trials = []
    for (selection, _), plan in plans.items():
        for task in plan["tasks"]:
            agent, _ = run_agent(task["run"]["argv"])
            for attempt in range(1, attempts + 1):
                steps = trial_steps(plan, task["task_id"], attempt)
                trials.append(
                    {
                        "selection": selection,
                        "task_id": task["task_id"],
                        "job_name": steps["job_name"],
                        "lock": Path(steps["lock"]),
                        "paid": harbor.calls_a_model(agent),
                    }
                )
    return trials


def comparison_trials(
    analysis_plan: dict, plans: dict[str, dict | None], attempts: int
) -> list[dict]:
    """The trials a sealed comparison (afbench.plans.preregister) may run: each configuration's
    trials of the first `horizon` tasks of the plan's order, every attempt, each with its
    `batch` (1 for the first look's tasks). `plans` maps a and b to their written Harbor plans
    (None before they are written: the trials have no names yet)."""
    rule = analysis_plan["stopping_rule"]
    looks = rule.get("looks") or [rule["horizon"]]
    trials = []
    for side, configuration in analysis_plan["configurations"].items():
        plan = plans[side]
        paid = harbor.calls_a_model(configuration["agent"])
        for position, task_id in enumerate(rule["order"][: rule["horizon"]]):
            batch = next(i for i, look in enumerate(looks, start=1) if position < look)
            for attempt in range(1, attempts + 1):
                steps = trial_steps(plan, task_id, attempt) if plan is not None else None
                trials.append(
                    {
                        "selection": analysis_plan["selection"]["name"],
                        "task_id": task_id,
                        "job_name": steps["job_name"] if steps else None,
                        "lock": Path(steps["lock"]) if steps else None,
                        "paid": paid,
                        "batch": batch,
                    }
                )
    return trials


def comparison_sides(analysis_plan: dict, harbor_plans: list[Path]) -> dict[str, dict]:
    """The written Harbor plans of a sealed comparison's two configurations, by side (a, b):
    each of the sealed selection (its SHA-256) and of one configuration, both there."""
    from afbench.kinds import PLAN

    wanted = {(c["agent"], c["model"]): side for side, c in analysis_plan["configurations"].items()}
    sides: dict[str, dict] = {}
    for path in harbor_plans:
        plan = PLAN.read(path)
        side = wanted.get((plan["agent"], plan["model"]))
        sha = plan["selection"]["selection_sha256"]
        if side is None or sha != analysis_plan["selection"]["selection_sha256"] or side in sides:
            raise AfbenchError(
                "not a Harbor plan of the sealed comparison (one per configuration, of its "
                "selection)",
                file=str(path),
                expected=" or ".join(c["label"] for c in analysis_plan["configurations"].values())
                + f" on selection {analysis_plan['selection']['selection_sha256'][:12]}",
                found=f"{plan['agent']} on selection {sha[:12]}",
            )
        sides[side] = plan
    missing = sorted(set(wanted.values()) - set(sides))
    if missing:
        raise AfbenchError(
            "a configuration of the sealed comparison has no Harbor plan",
            field="--harbor-plan",
            expected="both configurations' plans",
            found=f"none for configuration {', '.join(missing)}",
        )
    return sides


def next_trials_afford(
    analysis_plan: dict,
    sides: dict[str, dict],
    ledger_path: Path,
    ceiling_usd: float | None,
    cap_usd: float | None,
) -> Callable[[list[dict]], str | None]:
    """For a sealed comparison's next trials ({task_id, configuration, attempt}), why they may
    not start at the ceiling, or None: the guard's arithmetic (worst_case) over the live ledger,
    before a batch starts, so that no batch is begun that its caps cannot finish."""

    def afford(next_trials: list[dict]) -> str | None:
        if ceiling_usd is None:
            return None
        trials = []
        for t in next_trials:
            plan = sides[t["configuration"]]
            steps = trial_steps(plan, t["task_id"], t["attempt"])
            agent, _ = run_agent(steps["run"]["argv"])
            trials.append(
                {
                    "selection": plan["selection"]["name"],
                    "task_id": t["task_id"],
                    "job_name": steps["job_name"],
                    "lock": Path(steps["lock"]),
                    "paid": harbor.calls_a_model(agent),
                }
            )
        check_run_files(trials, ledger_path)
        live = ledger.state(ledger.read_entries(ledger_path))
        cap = paid_trial_cap_usd(analysis_plan["release"]["nominal_budget_usd"], cap_usd)
        _, unfinished, total = worst_case(trials, live, cap)
        if total <= ceiling_usd:
            return None
        return (
            f"the next {len(next_trials)} trial(s) ({len(unfinished)} at their cap USD {cap:g}) "
            f"would bring the worst case to USD {total:g}, over the ceiling "
            f"execute.max_cost_usd = {ceiling_usd:g}: not started"
        )

    return afford


def selection_size(criteria: dict, release_tasks: int) -> int | None:
    """How many tasks a selection's criteria give, before the catalog is read: known for a
    list of tasks (each must exist) or for all of them, then limited; None when it filters
    by source."""
    if criteria.get("sources"):
        return None
    size = len(criteria.get("tasks") or []) or release_tasks
    return min(size, criteria["limit"]) if criteria.get("limit") else size


def unplanned_trials(
    items: dict[tuple[str, str], str], sizes: dict[str, int | None], attempts: int
) -> list[dict] | None:
    """The trials the config will plan (agents by item, task counts by selection), for the
    guard before the plans are written; None when a selection's size is not known yet."""
    if any(sizes[selection] is None for selection, _ in items):
        return None
    return [
        {
            "selection": selection,
            "task_id": f"task {i + 1}",
            "job_name": None,
            "lock": None,
            "paid": harbor.calls_a_model(agent),
        }
        for (selection, _), agent in items.items()
        for i in range(sizes[selection])
        for _ in range(attempts)
    ]


# --- a partial run ------------------------------------------------------------------------------
def partial_rounds(
    tasks: dict[str, list[str]], sources: dict[str, str], seeds: dict[str, str]
) -> dict[tuple[str, str], int]:
    """The stated order of a partial run: each selection's tasks grouped by source, each
    source's tasks shuffled with the selection's sha256 as seed (the catalog's order within a
    source may follow its chapters, and so its difficulty: a shuffled order makes the tasks
    done a random sample within each source), and round r holds the r-th task of every source.
    So whatever rounds are done, every source has as many tasks done as every other, give or
    take one (a stratified selection). Returns each (selection, task)'s round, from 1."""

    rounds = {}
    for selection, task_ids in tasks.items():
        by_source: dict[str, list[str]] = {}
        for task_id in task_ids:
            by_source.setdefault(sources[task_id], []).append(task_id)
        for source, members in by_source.items():
            order = sorted(members)
            random.Random(f"{seeds[selection]}/{source}").shuffle(order)
            for number, task_id in enumerate(order, start=1):
                rounds[(selection, task_id)] = number
    return rounds


def check_run_files(trials: list[dict], ledger_path: Path) -> None:
    """The ledger, its lock and each trial's lock and lock log are regular files or absent: a
    planted link or FIFO is refused before anything runs."""
    locking.check_regular_or_absent(ledger_path, ledger.WHAT)
    locking.check_regular_or_absent(ledger_path.with_name(ledger_path.name + ".lock"), "lock")
    for trial in trials:
        if trial["lock"] is not None:
            locking.check_regular_or_absent(trial["lock"], "lock file")
            log = trial["lock"].with_name(trial["lock"].name + ".log")
            locking.check_regular_or_absent(log, "lock log")


def worst_case(trials: list[dict], live: dict, cap: float) -> tuple[float, list[dict], float]:
    """The guard's arithmetic for `trials` against the live ledger's state: what is committed
    (spent, held for interrupted trials, and the caps other runs hold open), this run's trials
    of an agent that may call a model the ledger has not finished (a finished one is reused:
    no new cost), and the worst case, committed + each unfinished trial's cap."""
    names = {t["job_name"] for t in trials}
    paid = [t for t in trials if t["paid"]]
    unfinished = [t for t in paid if not ledger.finished(live, t["job_name"] or "")]
    elsewhere = sum(e["worst_case_usd"] for name, e in live["starts"].items() if name not in names)
    committed = round(live["spent_usd"] + live["held_usd"] + elsewhere, 6)
    return committed, unfinished, round(committed + len(unfinished) * cap, 6)


def approve(
    trials: list[dict],
    release: dict,
    ceiling_usd: float | None,
    ledger_path: Path,
    *,
    cap_usd: float | None = None,
    partial: bool = False,
    rounds: dict[tuple[str, str], int] | None = None,
    close_dead: bool = False,
    sequential: bool = False,
) -> tuple[list[str], str | None]:
    """The planned run (planned_trials, or unplanned_trials before the plans are written),
    checked against the ceiling before any trial starts: the lines to print (trials, their
    caps, the difference the run can detect, what the live ledger has spent and holds, its
    dead holds and overshoots, trials still running elsewhere, a partial run's order) and the
    refusal, if it is refused. A run whose worst case is over the ceiling is refused unless it
    is `partial` (then its `rounds` run in order, until the ceiling), or `sequential` (the
    trials of a sealed comparison carry their `batch`: it runs batch by batch and stops at the
    ceiling, so only its first batch, beside every other trial, must fit). With `close_dead`
    the holds of controllers that are gone are closed in the ledger (not in a dry run)."""
    from afbench.plans.power import execute_line

    nominal = release["nominal_budget_usd"]
    cap = paid_trial_cap_usd(nominal, cap_usd)
    paid = [t for t in trials if t["paid"]]
    worst = len(paid) * cap
    unplanned = any(t["job_name"] is None for t in trials)
    each = (
        f"the nominal USD {nominal:g} per task"
        if cap_usd is None
        else f"the cap USD {cap:g} per trial, execute.trial_cap_usd"
    )
    lines = [
        f"afbench execute: {len(trials)} trial(s), {len(paid)} with a model agent; worst-case "
        f"cost USD {worst:g} ({len(paid)} x {each})"
        + (" (counted from the config: the plans are not written yet)" if unplanned else "")
    ]
    tasks_by_selection: dict[str, set[str]] = {}
    for t in trials:
        tasks_by_selection.setdefault(t["selection"], set()).add(t["task_id"])
    for selection, tasks in sorted(tasks_by_selection.items()):
        lines.append(f"afbench execute: selection {selection}: {execute_line(len(tasks))}")
    check_run_files(trials, ledger_path)
    live = ledger.state(ledger.read_entries(ledger_path))
    dead = ledger.dead_holds(ledger_path, live)
    for hold in dead:
        lines.append(
            f"afbench execute: {ledger.dead_hold_line(hold)}"
            + ("" if close_dead else " (a dry run: not written to the ledger)")
        )
    if dead and close_dead:
        ledger.close_dead_holds(ledger_path, dead)
        live = ledger.state(ledger.read_entries(ledger_path))
    else:  # counted as they will be closed
        for hold in dead:
            name = hold["entry"]["job_name"]
            del live["starts"][name]
            live["open_usd"] = round(live["open_usd"] - hold["entry"]["worst_case_usd"], 6)
            if hold["event"] == "interrupted":
                live["held_usd"] += hold["entry"]["worst_case_usd"]
                live["last"][name] = {"event": "interrupted"}
    committed, unfinished, total = worst_case(trials, live, cap)
    if live["spent_usd"] or live["starts"] or live["held_usd"]:
        lines.append(
            f"afbench execute: the live ledger has spent USD {live['spent_usd']:g}, holds USD "
            f"{live['held_usd']:g} for {len(live['interrupted'])} interrupted trial(s) and "
            f"USD {live['open_usd']:g} for {len(live['starts'])} trial(s) started and not "
            f"finished ({ledger_path}); with {len(unfinished)} trial(s) of this run still to "
            f"finish, the worst case is USD {total:g}"
        )
    for entry in live["overshoots"][:5]:
        lines.append(
            f"afbench execute: the live ledger records an overshoot: trial {entry['job_name']} "
            f"spent USD {entry['cost_usd']:g}, USD {entry['overshoot_usd']:g} over its cap"
        )
    if len(live["overshoots"]) > 5:
        lines.append(f"afbench execute: ... and {len(live['overshoots']) - 5} more overshoot(s)")
    locks = [t["lock"] for t in trials if t["lock"] is not None]
    for lock, who in running_elsewhere(locks):
        lines.append(
            f"afbench execute: trial {lock.name.removesuffix('.lock')} is still running "
            f"elsewhere ({describe_holder(who)}): its copy here waits for it and reuses its "
            "result"
        )
    # before the plans are written the trials have no names yet: what the ledger finished
    # cannot be told from what it did not, so the sum is left to the check after the plans
    known = not unplanned or not live["last"]
    over = paid and known and (ceiling_usd is None or total > ceiling_usd)
    if not over:
        return lines, None
    spent = (
        f" (USD {committed:g} spent or held by the live ledger + {len(unfinished)} unfinished "
        f"trial(s) x USD {cap:g})"
        if committed
        else ""
    )
    if sequential and ceiling_usd is not None:
        first = [t for t in trials if t.get("batch") in (None, 1)]
        _, _, needed = worst_case(first, live, cap)
        if needed > ceiling_usd:
            return lines, (
                f"execute: sequential comparison: not even its first batch fits: USD "
                f"{needed:g}{spent and ' (with what the live ledger has spent and holds)'} is "
                f"over the ceiling execute.max_cost_usd = {ceiling_usd:g}; nothing was started"
            )
        lines.append(
            f"afbench execute: sequential comparison (the sealed analysis plan): its worst case "
            f"to the horizon is over the ceiling, so it stops at the ceiling unless a decision "
            f"comes first (the decision is valid at any stopping time); its first batch fits "
            f"(USD {needed:g} of USD {ceiling_usd:g})"
        )
        return lines, None
    if partial and ceiling_usd is not None:
        if committed + cap > ceiling_usd:
            return lines, (
                f"execute: partial run: not one trial fits: USD {committed:g} spent or held by "
                f"the live ledger + one trial's cap USD {cap:g} is over the ceiling "
                f"execute.max_cost_usd = {ceiling_usd:g}; nothing was started"
            )
        lines.append(partial_line(trials, unfinished, rounds, cap, ceiling_usd - committed, total))
        return lines, None
    return lines, (
        f"execute: worst-case cost USD {total:g}{spent} is over the ceiling "
        f"execute.max_cost_usd = {ceiling_usd}; nothing was started (execute.partial: true "
        "runs it in rounds of one task per source, in a stated order, until the ceiling)"
    )


def partial_line(
    trials: list[dict],
    unfinished: list[dict],
    rounds: dict[tuple[str, str], int] | None,
    cap: float,
    room: float,
    total: float,
) -> str:
    """What a partial run will do: its order, and how many rounds fit at their caps."""
    head = (
        f"afbench execute: partial run (execute.partial): the worst case USD {total:g} is over "
        "the ceiling, so the trials run in rounds, each round one task of every source (each "
        "source's tasks in an order shuffled with the selection's sha256 as seed), every "
        "configuration and attempt of a task in the same round; a round starts when the one "
        "before it has ended, and once a trial is refused at the ceiling no later round starts"
    )
    if rounds is None:
        return head + " (the rounds are known once the plans are written)"
    waiting = {id(t) for t in unfinished}
    needed: dict[int, float] = {}
    for t in trials:
        number = rounds[(t["selection"], t["task_id"])]
        needed[number] = needed.get(number, 0.0) + (cap if id(t) in waiting else 0.0)
    fit, used = 0, 0.0
    for number in sorted(needed):
        if used + needed[number] > room:
            break
        used += needed[number]
        fit = number
    return f"{head}; {len(needed)} round(s), {fit} of them fit at their caps"
