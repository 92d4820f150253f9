"""Execute one trial of a plan: the exporter, its read-only check, then `harbor run`, each
exactly as the plan gives it (the job name takes an attempt suffix), and nothing else.

Only what afbench built runs: the plan is rebuilt from its own fields and the pinned release
(plan.build_plan, as `write_plan` built it) and any difference is refused by name; the money
guard looks at the agent and model the argv will actually run. Each step runs in a clean,
stated environment (ENV_ALLOWLIST from the job's own, the variables execute.pass_env names,
execute.env, the plan's), its output goes to the job's log and its exit status is checked.

One copy of each trial: a trial holds an exclusive lock beside its Harbor job folder
(`<jobs_dir>/<job_name>.lock`, locking.held) while it runs. A second copy (a rerun after a
controller crash, a duplicate submission) waits for the first, then finds its job finished
and reuses it without running Harbor; `<job_name>.lock.log` records each holder and what it did.

Harbor resumes a job whose name and folder are unchanged, keeping every trial that has a
result.json, so running an interrupted attempt again finishes it instead of starting over.
The Harbor job folder is not an artifact of ours: the receipt names it.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from . import harbor, ledger, locking
from .errors import AfbenchError
from .fsutil import canonical_digest
from .records import TRIAL_RECEIPT, record

# What every step gets from the job's own environment, when set: where programs are, whose
# home and locale, where temporary files go, how to reach the container engine, and the proxy
# and certificate settings of the site. Nothing else of the job's environment gets through:
# a credential reaches a step only by name (execute.pass_env) or by value (execute.env).
ENV_ALLOWLIST = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
    "DOCKER_HOST",
    "DOCKER_CONFIG",
    "DOCKER_CONTEXT",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
    "APPTAINER_CACHEDIR",
    "APPTAINER_TMPDIR",
    "SINGULARITY_CACHEDIR",
    "SINGULARITY_TMPDIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)
STEPS = ("export", "check", "run")


def attempt_job_name(job_name: str, attempt: int) -> str:
    return f"{job_name}-attempt-{attempt}"


def trial_steps(plan: dict, task_id: str, attempt: int) -> dict:
    """The plan's export, check and run steps for one task, the run's job name suffixed."""
    task = next((t for t in plan["tasks"] if t["task_id"] == task_id), None)
    if task is None:
        raise AfbenchError(
            "the plan has no such task",
            field="--task",
            found=task_id,
            expected=f"one of {len(plan['tasks'])} planned tasks",
        )
    if attempt < 1:
        raise AfbenchError(
            "attempts count from 1",
            field="--attempt",
            expected="a whole number >= 1",
            found=attempt,
        )
    run = copy.deepcopy(task["run"])
    argv = run["argv"]
    at = argv.index("--job-name") + 1
    argv[at] = attempt_job_name(task["job_name"], attempt)
    jobs_dir = Path(argv[argv.index("-o") + 1])
    return {
        "export": task["export"],
        "check": task["check"],
        "run": run,
        "job_name": argv[at],
        "job_dir": str(jobs_dir / argv[at]),
        "lock": str(jobs_dir / f"{argv[at]}.lock"),
    }


def steps_digest(steps: dict) -> str:
    return canonical_digest({k: steps[k] for k in STEPS})


def run_agent(argv: list[str]) -> tuple[str, str | None]:
    """The agent and model a `harbor run` argv will run: its `-a` and `-m` values."""
    agent = argv[argv.index("-a") + 1] if "-a" in argv else harbor.DEFAULT_AGENT
    model = argv[argv.index("-m") + 1] if "-m" in argv else None
    return agent, model


# --- only what afbench built ----------------------------------------------------------------
def _differences(expected: object, found: object, where: str) -> list[str]:
    if isinstance(expected, dict) and isinstance(found, dict):
        out = []
        for key in sorted(set(expected) | set(found), key=str):
            at = f"{where}.{key}" if where else str(key)
            if key not in found:
                out.append(f"{at} is missing")
            elif key not in expected:
                out.append(f"{at} is not in the plan afbench builds")
            else:
                out += _differences(expected[key], found[key], at)
        return out
    if isinstance(expected, list) and isinstance(found, list):
        out = [
            d
            for i, (e, f) in enumerate(zip(expected, found, strict=False))
            for d in _differences(e, f, f"{where}[{i}]")
        ]
        if len(expected) != len(found):
            out.append(f"{where} has {len(found)} items, not {len(expected)}")
        return out
    if expected != found or type(expected) is not type(found):
        return [f"{where} is {json.dumps(found)}, not {json.dumps(expected)}"]
    return []


def check_plan(plan: dict, expected: dict, file: str) -> None:
    """The plan file is exactly the plan afbench builds from its fields and the pinned release,
    or one error naming every difference (an edited argv, an added flag, another release)."""
    differences = _differences(expected, plan, "")
    if differences:
        shown = "; ".join(differences[:10])
        more = f" (and {len(differences) - 10} more)" if len(differences) > 10 else ""
        raise AfbenchError(
            f"the plan is not the one afbench builds from its fields and the pinned release: "
            f"{shown}{more}; refusing to run it (write it again with `snakemake plans`)",
            file=file,
        )


def check_money(agent: str, model: str | None, allow: bool, ceiling_usd: float | None) -> None:
    """The agent the argv runs spends money unless it is nop or oracle: it needs the opt-in
    and a ceiling."""
    if not harbor.calls_a_model(agent):
        return
    what = f"agent '{agent}'" + (f" with model '{model}'" if model else "")
    if not allow:
        raise AfbenchError(
            f"{what} may call a paid model: refused without --allow-model-agent=true "
            "(execute.allow_model_agents and a ceiling execute.max_cost_usd in config)",
            field="-a",
            expected="nop or oracle, or --allow-model-agent=true",
            found=agent,
        )
    if ceiling_usd is None:
        raise AfbenchError(
            f"{what} may call a paid model: refused without a ceiling "
            "(--max-cost-usd, execute.max_cost_usd in config)",
            field="--max-cost-usd",
        )


# --- a clean, stated environment --------------------------------------------------------------
def step_environment(
    step: dict, extra_env: dict[str, str], pass_env: list[str]
) -> tuple[dict[str, str], dict[str, str]]:
    """A step's whole environment, and where each variable came from."""
    env: dict[str, str] = {}
    source: dict[str, str] = {}
    for name in ENV_ALLOWLIST:
        if name in os.environ:
            env[name], source[name] = os.environ[name], "allowlist"
    for name in pass_env:
        if name in os.environ:
            env[name], source[name] = os.environ[name], "execute.pass_env"
    for layer, values in (("execute.env", extra_env), ("plan", step.get("env", {}))):
        for name, value in values.items():
            env[name], source[name] = value, layer
    return env, source


def run_steps(
    steps: dict, extra_env: dict[str, str], pass_env: list[str], names: tuple = STEPS
) -> dict:
    """Export, check, then harbor run (or the steps `names`), each in its stated environment;
    every line they print goes to our stderr (the job's log). Returns where each step's
    variables came from (names and sources, never values)."""
    stated = {}
    for name in names:
        step = steps[name]
        env, source = step_environment(step, extra_env, pass_env)
        stated[name] = source
        listing = ", ".join(f"{k} ({v})" for k, v in sorted(source.items()))
        sys.stderr.write(f"afbench: {name}: {json.dumps(step['argv'])}\n")
        sys.stderr.write(f"afbench: {name}: environment: {listing}\n")
        sys.stderr.flush()
        try:
            done = subprocess.run(
                step["argv"],
                cwd=step.get("cwd"),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=sys.stderr,
                stderr=sys.stderr,
                check=False,
            )
        except FileNotFoundError:
            raise AfbenchError(
                f"cannot start the {name} step: program not found",
                field=name,
                expected=f"a program on PATH {env.get('PATH')}",
                found=step["argv"][0],
            ) from None
        if done.returncode != 0:
            raise AfbenchError(
                f"the {name} step failed (its output is in this job's log): "
                f"{' '.join(step['argv'])}",
                field=name,
                expected="exit code 0",
                found=f"exit code {done.returncode}",
            )
    return stated


# --- one copy of each trial ---------------------------------------------------------------------
def job_finished(job_dir: Path) -> bool:
    """A Harbor job that ran to its end: its result.json has `finished_at`, and as many trial
    folders have a result.json as the job had trials."""
    try:
        result = json.loads((job_dir / "result.json").read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(result, dict) or not result.get("finished_at"):
        return False
    done = sum(1 for p in job_dir.iterdir() if p.is_dir() and (p / "result.json").is_file())
    return done >= 1 and done == result.get("n_total_trials")


def _log(lock: Path, event: dict) -> None:
    """One line of the lock's log, written only while the lock is held (so on NFS too no two
    writers meet)."""
    locking.append_event(lock.with_name(lock.name + ".log"), event, mode=0o666)


def running_elsewhere(locks: list[Path]) -> list[tuple[Path, dict]]:
    """The trials whose lock another process holds now: (lock file, its holder)."""
    return [(lock, who) for lock in locks if (who := locking.holder(lock)) is not None]


def describe_holder(who: dict) -> str:
    slurm = f", SLURM job {who['slurm_job_id']}" if who.get("slurm_job_id") else ""
    return f"host {who.get('host')}, pid {who.get('pid')}{slurm}, since {who.get('since')}"


def execute_trial(
    plan: dict,
    plan_sha256: str,
    task_id: str,
    attempt: int,
    *,
    extra_env: dict[str, str],
    pass_env: list[str],
    ceiling_usd: float | None,
    ledger_path: Path,
    read_job,
) -> dict:
    """Run (or reuse) one trial under its lock and return its receipt. `read_job(job_dir)` reads
    the Harbor job's attempts (runs.read_harbor_job)."""
    steps = trial_steps(plan, task_id, attempt)
    agent, model = run_agent(steps["run"]["argv"])
    paid = harbor.calls_a_model(agent)
    nominal = plan["release"]["nominal_budget_usd"]
    worst = nominal if paid else 0.0
    trial = {
        "job_name": steps["job_name"],
        "task_id": task_id,
        "attempt": attempt,
        "agent": agent,
        "model": model,
    }
    lock = Path(steps["lock"])

    waited: dict = {}

    def waiting(who: dict | None) -> None:
        waited.update(holder=who, since=time.monotonic())
        shown = describe_holder(who) if who else "a holder that wrote nothing yet"
        sys.stderr.write(
            f"afbench: trial {steps['job_name']} is running elsewhere ({shown}): waiting for "
            "it, then reusing its result\n"
        )
        sys.stderr.flush()

    def log(event: str, **more) -> None:
        _log(lock, {"event": event, "job_name": steps["job_name"], **more})

    refused = None
    environment = None
    with locking.held(lock, on_wait=waiting):
        log(
            "acquired",
            waited_s=round(time.monotonic() - waited["since"], 1) if waited else 0,
            waited_for=waited.get("holder"),
        )
        job_dir = Path(steps["job_dir"])
        if job_finished(job_dir):
            action = "reused"
            sys.stderr.write(f"afbench: {steps['job_name']}: finished already; reusing it\n")
            attempts = read_job(job_dir)
            if not ledger.has_finish(ledger_path, steps["job_name"]):
                ledger.finish(ledger_path, trial, [a["cost_usd"] for a in attempts], paid, nominal)
        else:
            refused = ledger.start(ledger_path, trial, worst, ceiling_usd)
            if refused is not None:
                action, attempts = "refused", []
                sys.stderr.write(f"afbench: {steps['job_name']}: {refused}\n")
            else:
                action = "harbor run"
                try:
                    environment = run_steps(steps, extra_env, pass_env)
                except BaseException:
                    log("released", action="harbor run failed")
                    raise
                attempts = read_job(job_dir)
                ledger.finish(ledger_path, trial, [a["cost_usd"] for a in attempts], paid, nominal)
        log("released", action=action)
    return trial_receipt(
        plan,
        plan_sha256,
        task_id,
        attempt,
        steps,
        attempts,
        run=(agent, model),
        worst_case_usd=worst,
        refused=refused,
        environment=environment,
        action=action,
    )


def trial_receipt(
    plan: dict,
    plan_sha256: str,
    task_id: str,
    attempt: int,
    steps: dict,
    attempts: list[dict],
    *,
    run: tuple[str, str | None],
    worst_case_usd: float,
    refused: str | None,
    environment: dict | None,
    action: str,
) -> dict:
    """What ran and what came of it: the argv digest, the job folder, each trial's id,
    outcome, cost and result file hash; or that the trial was refused at the cost ceiling."""
    trials = []
    for found in attempts:
        result = Path(found["trial_dir"]) / "result.json"
        trials.append(
            {
                "trial_name": Path(found["trial_dir"]).name,
                "task_id": found["task_id"],
                "outcome": found["outcome"],
                "reward": found["reward"],
                "reason": found["reason"],
                "cost_usd": found["cost_usd"],
                "result_sha256": hashlib.sha256(result.read_bytes()).hexdigest()
                if result.is_file()
                else None,
            }
        )
    outcomes = sorted({t["outcome"] for t in trials})
    if refused is not None:
        outcome = "not started"
    else:
        outcome = outcomes[0] if len(outcomes) == 1 else ("none" if not outcomes else "mixed")
    return record(
        TRIAL_RECEIPT,
        release=plan["release"],
        plan={
            "selection": plan["selection"],
            "agent": plan["agent"],
            "model": plan["model"],
            "sha256": plan_sha256,
        },
        task_id=task_id,
        attempt=attempt,
        run_agent=run[0],
        run_model=run[1],
        argv_sha256=steps_digest(steps),
        steps={k: steps[k] for k in STEPS},
        environment=environment,
        job_name=steps["job_name"],
        job_dir=steps["job_dir"],
        lock=steps["lock"],
        action=action,
        worst_case_usd=worst_case_usd,
        refused=refused,
        trials=trials,
        outcome=outcome,
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


def approve(
    trials: list[dict],
    release: dict,
    ceiling_usd: float | None,
    ledger_path: Path,
) -> tuple[list[str], str | None]:
    """The planned run (planned_trials, or unplanned_trials before the plans are written),
    checked against the ceiling before any trial starts: the lines to print (trials,
    worst-case cost, the difference the run can detect, what the live ledger has spent,
    trials still running elsewhere) and the refusal, if it is refused."""
    from .stats import mcnemar_detectable_difference

    nominal = release["nominal_budget_usd"]
    paid = [t for t in trials if t["paid"]]
    worst = len(paid) * nominal
    unplanned = any(t["job_name"] is None for t in trials)
    lines = [
        f"afbench execute: {len(trials)} trial(s), {len(paid)} with a model agent; worst-case "
        f"cost USD {worst:g} ({len(paid)} x the nominal USD {nominal:g} per task)"
        + (" (counted from the config: the plans are not written yet)" if unplanned else "")
    ]
    tasks_by_selection: dict[str, set[str]] = {}
    for t in trials:
        tasks_by_selection.setdefault(t["selection"], set()).add(t["task_id"])
    for selection, tasks in sorted(tasks_by_selection.items()):
        try:
            found = mcnemar_detectable_difference(len(tasks), baseline_rate=0.5)
            detect = f"a paired difference of {100 * found['difference']:.1f} pp or more"
        except ValueError:
            detect = "no paired difference at all, too few tasks"
        lines.append(
            f"afbench execute: selection {selection}: {len(tasks)} task(s) can detect "
            f"{detect}; McNemar at alpha 0.05, power 0.8, assuming a baseline success rate of "
            "0.5 and independent successes of the two configurations compared"
        )
    # what the live ledger has spent counts too: a trial it finished is reused (no new cost),
    # every other one may still spend its worst case, and so may the trials of other runs it
    # holds open
    live = ledger.state(ledger.read_entries(ledger_path))
    names = {t["job_name"] for t in paid}
    finished = {name for name, e in live["last"].items() if e["event"] == "finish"}
    unfinished = [t for t in paid if t["job_name"] not in finished]
    elsewhere = sum(
        e["worst_case_usd"]
        for name, e in live["last"].items()
        if e["event"] == "start" and name not in names
    )
    total = live["spent_usd"] + elsewhere + len(unfinished) * nominal
    if live["spent_usd"] or live["open"]:
        lines.append(
            f"afbench execute: the live ledger has spent USD {live['spent_usd']:g} and holds "
            f"USD {live['open_usd']:g} for {len(live['open'])} trial(s) started and not "
            f"finished ({ledger_path}); with {len(unfinished)} trial(s) of this run still to "
            f"finish, the worst case is USD {total:g}"
        )
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
    refusal = None
    if paid and known and (ceiling_usd is None or total > ceiling_usd):
        spent = (
            f" (USD {live['spent_usd'] + elsewhere:g} spent or held by the live ledger + "
            f"{len(unfinished)} unfinished trial(s) x USD {nominal:g})"
            if live["spent_usd"] or elsewhere
            else ""
        )
        refusal = (
            f"execute: worst-case cost USD {total:g}{spent} is over the ceiling "
            f"execute.max_cost_usd = {ceiling_usd}; nothing was started"
        )
    return lines, refusal
