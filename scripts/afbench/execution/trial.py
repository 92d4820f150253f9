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

Never paid twice: each trial reserves its cap in the live ledger (afbench.execution.ledger) before
it starts. A copy that finds its trial interrupted (its holder died, or Harbor failed, without a
result) holds the trial's cap for good, sets the job folder aside, removes what its environment
left in the container engine (afbench.core.containers), and runs it again only for an agent that
calls no model, or with the opt-in. While Harbor runs, the trial's cost is read where Harbor
0.22.0 lets it be seen (an ATIF trajectory the agent writes as it goes) and Harbor is stopped at
the cap; the engine is asked every few seconds whether it still answers.
"""

from __future__ import annotations

import copy
import functools
import glob
import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from afbench.core import harbor, locking
from afbench.core.containers import engine_name, engine_problem, remove_leftovers
from afbench.core.errors import AfbenchError
from afbench.core.fsutil import canonical_digest, parse_json_bytes, read_file_once
from afbench.core.harbor_files import TRAJECTORIES, JobFolder, TrialFolder
from afbench.execution import ledger
from afbench.kinds import TRIAL_RECEIPT

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


def trial_cap_usd(agent: str, nominal_budget_usd: float, cap_usd: float | None = None) -> float:
    """What one trial of `agent` may spend, as the live ledger reserves it: `cap_usd`
    (execute.trial_cap_usd) or else the release's nominal budget per task for an agent that may
    call a model; nothing for nop and oracle. The one place the cap is decided: the guard, each
    trial, the sealed analysis plan and the upgrade plan's cost line all ask here."""
    return paid_trial_cap_usd(nominal_budget_usd, cap_usd) if harbor.calls_a_model(agent) else 0.0


def paid_trial_cap_usd(nominal_budget_usd: float, cap_usd: float | None = None) -> float:
    """The cap of a trial of an agent that may call a model (trial_cap_usd)."""
    return float(nominal_budget_usd if cap_usd is None else cap_usd)


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
    steps: dict,
    extra_env: dict[str, str],
    pass_env: list[str],
    names: tuple = STEPS,
    *,
    quiet: bool = False,
) -> dict:
    """Export, check, then harbor run (or the steps `names`), each in its stated environment;
    every line they print goes to our stderr (the job's log), or with `quiet` only the output
    of a step that fails. Returns where each step's variables came from (names and sources,
    never values)."""
    stated = {}
    for name in names:
        step = steps[name]
        env, source = step_environment(step, extra_env, pass_env)
        stated[name] = source
        listing = ", ".join(f"{k} ({v})" for k, v in sorted(source.items()))
        if not quiet:
            sys.stderr.write(f"afbench: {name}: {json.dumps(step['argv'])}\n")
            sys.stderr.write(f"afbench: {name}: environment: {listing}\n")
            sys.stderr.flush()
        try:
            done = subprocess.run(
                step["argv"],
                cwd=step.get("cwd"),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE if quiet else sys.stderr,
                stderr=subprocess.STDOUT if quiet else sys.stderr,
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
            if quiet:
                sys.stderr.write(done.stdout.decode("utf-8", "replace"))
                sys.stderr.flush()
            raise AfbenchError(
                f"the {name} step failed (its output is in this job's log): "
                f"{' '.join(step['argv'])}",
                field=name,
                expected="exit code 0",
                found=f"exit code {done.returncode}",
            )
    return stated


# --- one copy of each trial ---------------------------------------------------------------------
MAX_RESULT_BYTES = 64 << 20
MAX_TRAJECTORY_BYTES = 256 << 20
STOP_GRACE_S = 120  # Harbor's own teardown after SIGINT: ~12 s measured (10 s of it Docker's)
ENGINE_CHECK_S = 5.0  # how often a running trial asks whether its container engine answers


def _json_object(path: Path | str, what: str, max_bytes: int) -> dict | None:
    """A JSON object file Harbor wrote, or None when it is absent, empty, cut short or not an
    object (Harbor's half-written files after a crash or a full disk)."""
    try:
        data = read_file_once(str(path), what, max_bytes, missing_ok=True)
        doc = parse_json_bytes(data, str(path), what) if data else None
    except AfbenchError:
        return None
    return doc if isinstance(doc, dict) else None


def trial_folders(job_dir: Path) -> list[Path]:
    try:
        return sorted(p for p in job_dir.iterdir() if p.is_dir() and not p.is_symlink())
    except FileNotFoundError:
        return []


def job_state(job_dir: Path) -> str:
    """`absent`; `finished` when every trial of the Harbor job has its result (its result.json
    names how many, and each trial folder has a readable result.json: Harbor's resume keeps
    those trials and runs none again); otherwise `incomplete` (a holder died mid-trial, or
    Harbor failed, or the disk filled: a trial without a result, an empty or cut-short file)."""
    if not job_dir.exists():
        return "absent"
    job = _json_object(JobFolder(job_dir).result, "Harbor job result.json", MAX_RESULT_BYTES)
    trials = trial_folders(job_dir)
    total = job.get("n_total_trials") if job else None
    if not isinstance(total, int) or total < 1 or len(trials) != total:
        return "incomplete"
    for trial in trials:
        result = TrialFolder(trial).result
        if _json_object(result, "trial result.json", MAX_RESULT_BYTES) is None:
            return "incomplete"
    return "finished"


def job_finished(job_dir: Path) -> bool:
    return job_state(job_dir) == "finished"


def _trajectory_cost(doc: dict) -> float | None:
    """The cost a trajectory in Harbor's ATIF format shows: its final_metrics' running total,
    or the sum of its steps' costs, whichever is more (None if it shows none)."""

    def usd(value: object) -> float | None:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return float(value) if ok and math.isfinite(value) and value >= 0 else None

    total = usd((doc.get("final_metrics") or {}).get("total_cost_usd"))
    steps = [
        usd((step.get("metrics") or {}).get("cost_usd"))
        for step in doc.get("steps") or []
        if isinstance(step, dict) and isinstance(step.get("metrics"), dict | None)
    ]
    summed = sum(c for c in steps if c is not None) if any(c is not None for c in steps) else None
    found = [c for c in (total, summed) if c is not None]
    return max(found) if found else None


def running_cost(job_dir: Path, seen: dict) -> float | None:
    """What the trials of a running Harbor job have spent so far, where Harbor 0.22.0 lets it
    be seen: the trajectories an agent writes while it runs, in Harbor's ATIF format, at
    `<trial>/agent/trajectory.json` (and its continuations `trajectory.cont-N.json`), as
    Harbor's terminus-2 does after every episode. Harbor's own cost fields (the trial's
    `agent_result.cost_usd`) are written only when the trial ends, and its installed agents
    (claude-code, codex, ...) report their cost only then: for them None until the end. `seen`
    caches each file's last reading by its size and mtime (a file caught mid-write keeps its
    last good reading)."""
    costs = []
    for trial in trial_folders(job_dir):
        found = None
        for path in sorted(Path(TrialFolder(trial).agent).glob(TRAJECTORIES)):
            try:
                info = path.lstat()
            except OSError:
                continue
            key = (info.st_size, info.st_mtime_ns)
            cached = seen.get(path)
            if cached is None or cached[0] != key:
                doc = _json_object(path, "agent trajectory", MAX_TRAJECTORY_BYTES)
                cost = _trajectory_cost(doc) if doc is not None else None
                if cost is None and cached is not None:
                    cost = cached[1]
                seen[path] = cached = (key, cost)
            if cached[1] is not None:
                found = max(found or 0.0, cached[1])
        if found is not None:
            costs.append(found)
    return round(sum(costs), 6) if costs else None


def _log(lock: Path, event: dict) -> None:
    """One line of the lock's log, written only while the lock is held (so on NFS too no two
    writers meet)."""
    locking.append_event(lock.with_name(lock.name + ".log"), event, mode=0o666, what="lock log")


def running_elsewhere(locks: list[Path]) -> list[tuple[Path, dict]]:
    """The trials whose lock another process holds now: (lock file, its holder)."""
    return [(lock, who) for lock in locks if (who := locking.holder(lock)) is not None]


def describe_holder(who: dict) -> str:
    slurm = f", SLURM job {who['slurm_job_id']}" if who.get("slurm_job_id") else ""
    return f"host {who.get('host')}, pid {who.get('pid')}{slurm}, since {who.get('since')}"


# --- running Harbor, with the meter ---------------------------------------------------------------
def _stop(process: subprocess.Popen, grace_s: float) -> None:
    """Stop Harbor as Ctrl-C does (SIGINT: it cancels the trial, tears its environment down and
    writes the trial's result with what the agent spent), then kill it if it does not end."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def run_harbor(
    step: dict,
    env: dict[str, str],
    job_dir: Path,
    *,
    meter: bool,
    limit: Callable[[], tuple[float, str]],
    interval_s: float,
    engine: Callable[[], str | None] | None = None,
) -> dict:
    """`harbor run`, its output in the job's log. With `meter` (an agent that may spend money),
    every `interval_s` the running cost (running_cost) is compared with what the trial may
    spend (`limit()`: its cap, or what the ceiling leaves, and which); at it, Harbor is
    stopped. With `engine`, every ENGINE_CHECK_S the container engine is asked whether it
    still answers (`engine()`: why not, or None): Harbor notices a dead engine only when the
    agent next touches its environment, so afbench stops it. An interruption of this process
    stops Harbor too, before it is passed on."""
    try:
        process = subprocess.Popen(
            step["argv"],
            cwd=step.get("cwd"),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sys.stderr,
            stderr=sys.stderr,
        )
    except FileNotFoundError:
        raise AfbenchError(
            "cannot start the run step: program not found",
            field="run",
            expected=f"a program on PATH {env.get('PATH')}",
            found=step["argv"][0],
        ) from None
    seen: dict = {}
    meter_said = {"running_cost_usd": None, "stopped": None, "limit_usd": None, "engine": None}
    asked = time.monotonic()
    try:
        while True:
            try:
                returncode = process.wait(timeout=min(interval_s, ENGINE_CHECK_S))
                break
            except subprocess.TimeoutExpired:
                pass
            if meter_said["stopped"] or meter_said["engine"]:
                continue
            if engine is not None and time.monotonic() - asked >= ENGINE_CHECK_S:
                asked = time.monotonic()
                if problem := engine():
                    meter_said["engine"] = problem
                    say(f"run: the container engine stopped answering ({problem}): stopping Harbor")
                    _stop(process, STOP_GRACE_S)
                    continue
            if not meter:
                continue
            cost = running_cost(job_dir, seen)
            if cost is None:
                continue
            meter_said["running_cost_usd"] = cost
            allowed, why = limit()
            if cost >= allowed:
                meter_said.update(stopped=why, limit_usd=allowed)
                shown = "its cap" if why == "cap" else "what the ceiling leaves it"
                sys.stderr.write(
                    f"afbench: run: the trial has spent USD {cost:g}, at {shown} (USD "
                    f"{allowed:g}): stopping Harbor (SIGINT), which ends the trial and records "
                    "what it spent\n"
                )
                sys.stderr.flush()
                _stop(process, STOP_GRACE_S)
    except BaseException:
        _stop(process, STOP_GRACE_S)
        raise
    if meter:
        final = running_cost(job_dir, seen)
        if final is not None:
            meter_said["running_cost_usd"] = max(final, meter_said["running_cost_usd"] or 0)
    return {"returncode": returncode, **meter_said}


def set_aside(job_dir: Path) -> Path:
    """Move an interrupted Harbor job folder out of Harbor's way (it would run the trial again
    beside a broken one, or refuse the job), keeping it as evidence:
    `<jobs_dir>/<job>.interrupted-<n>`."""
    n = 1
    while (aside := job_dir.with_name(f"{job_dir.name}.interrupted-{n}")).exists():
        n += 1
    job_dir.rename(aside)
    return aside


def _aside(job_dir: Path) -> list[Path]:
    return sorted(job_dir.parent.glob(f"{glob.escape(job_dir.name)}.interrupted-*"))


def _reported(attempts: list[dict]) -> float | None:
    costs = [a["cost_usd"] for a in attempts]
    return sum(costs) if costs and all(c is not None for c in costs) else None


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
    cap_usd: float | None = None,
    rerun_interrupted: bool = False,
    meter_interval_s: float = 5.0,
    earlier: list[dict] | None = None,
) -> dict:
    """Run (or reuse) one trial under its lock and return its receipt. `read_job(job_dir)` reads
    the Harbor job's attempts (harborjobs.read_harbor_job). `cap_usd` is what the trial may spend
    (None: the release's nominal budget); `earlier` the receipts of a partial run's earlier
    round (one not run stops this one)."""
    steps = trial_steps(plan, task_id, attempt)
    agent, model = run_agent(steps["run"]["argv"])
    paid = harbor.calls_a_model(agent)
    cap = trial_cap_usd(agent, plan["release"]["nominal_budget_usd"], cap_usd)
    trial = {
        "job_name": steps["job_name"],
        "task_id": task_id,
        "attempt": attempt,
        "agent": agent,
        "model": model,
    }
    name = steps["job_name"]
    lock = Path(steps["lock"])
    job_dir = Path(steps["job_dir"])
    docker = plan.get("environment_type") == "docker"
    run_env, _ = step_environment(steps["run"], extra_env, pass_env)

    waited: dict = {}

    def waiting(who: dict | None) -> None:
        waited.update(holder=who, since=time.monotonic())
        shown = describe_holder(who) if who else "a holder that wrote nothing yet"
        say(f"trial {name} is running elsewhere ({shown}): waiting for it, then reusing its result")

    def log(event: str, **more) -> None:
        _log(lock, {"event": event, "job_name": name, **more})

    def receipt(action: str, attempts: list[dict], **more) -> dict:
        return trial_receipt(
            plan,
            plan_sha256,
            task_id,
            attempt,
            steps,
            attempts,
            run=(agent, model),
            worst_case_usd=cap,
            action=action,
            **{"refused": None, "environment": None, "meter": None, **more},
        )

    with locking.held(lock, on_wait=waiting):
        log(
            "acquired",
            waited_s=round(time.monotonic() - waited["since"], 1) if waited else 0,
            waited_for=waited.get("holder"),
        )
        try:
            now = ledger.state(ledger.read_entries(ledger_path))
        except AfbenchError as error:
            log("released", action="refused: the cost ledger cannot be read")
            raise AfbenchError(
                f"the cost ledger cannot be read, so no trial starts: {error}",
                file=str(ledger_path),
            ) from None
        state = job_state(job_dir)
        if state == "finished":
            say(f"{name}: finished already; reusing it")
            attempts = read_job(job_dir)
            if not ledger.finished(now, name):
                ledger.finish(ledger_path, trial, [a["cost_usd"] for a in attempts], paid, cap)
            log("released", action="reused")
            return receipt("reused", attempts)

        # What a holder that died left: its open reservation, a job folder without results,
        # and the containers of that folder's trials.
        open_start = now["starts"].get(name)
        if state == "incomplete":
            seen = running_cost(job_dir, {})
            held_usd = max(cap, seen or 0.0) if paid else 0.0
            who = describe_holder(open_start) if open_start else "a holder that is gone"
            aside = set_aside(job_dir)
            if open_start:
                ledger.interrupt(
                    ledger_path,
                    trial,
                    held_usd,
                    f"its holder ({who}) died after Harbor began the trial; it left no "
                    f"result (set aside as {aside.name})",
                )
            say(
                f"{name}: interrupted earlier ({who}): Harbor's job folder has no result; set "
                f"aside as {aside}"
                + (f"; its possible spend USD {held_usd:g} is held" if paid else "")
            )
        elif open_start:
            ledger.release(
                ledger_path,
                trial,
                f"its holder ({describe_holder(open_start)}) died before Harbor began the trial",
            )
        leftovers = _aside(job_dir)
        if docker and leftovers:
            problem = engine_problem(run_env)
            if problem:
                log("released", action="refused: the Docker engine does not answer")
                raise AfbenchError(
                    f"{engine_name(run_env)} does not answer ({problem}): the containers an "
                    f"interrupted copy of trial {name} left cannot be removed, and Harbor's "
                    "docker environment cannot run",
                    field="plans.environment_type",
                )
            names = [t.name for folder in leftovers for t in trial_folders(folder)]
            removed = remove_leftovers(names, run_env)
            if removed:
                say(f"{name}: removed what the interrupted copy left: {', '.join(removed)}")
                log("cleaned", removed=removed)

        now = ledger.state(ledger.read_entries(ledger_path))
        gone_before = ledger.interrupted_unfinished(now, name)
        if paid and gone_before and not rerun_interrupted:
            why = (
                f"interrupted earlier ({gone_before['reason']}); what it spent is unknown, so "
                f"its cap USD {gone_before['held_usd']:g} stays held, and an agent that may "
                "spend money is not run again without execute.rerun_interrupted: true"
            )
            say(f"{name}: {why}")
            log("released", action="interrupted")
            return receipt("interrupted", [], refused=why)
        stop = next((r for r in earlier or [] if r.get("refused")), None)
        if stop is not None:
            why = (
                f"partial run: trial {stop['job_name']} of an earlier round did not run "
                f"({stop['action']}); later rounds are not started, so the trials that ran "
                "stay a stratified selection"
            )
            ledger.refuse(ledger_path, trial, why)
            say(f"{name}: {why}")
            log("released", action="refused")
            return receipt("refused", [], refused=why)
        refused = ledger.start(ledger_path, trial, cap, ceiling_usd, lock=lock)
        if refused is not None:
            say(f"{name}: {refused}")
            log("released", action="refused")
            return receipt("refused", [], refused=refused)

        # what every way of ending without a usable result passes on: the trial and its places
        failed = functools.partial(
            _failed, name, trial, paid, cap, job_dir, run_env, docker, ledger_path, log
        )
        try:
            environment = run_steps(steps, extra_env, pass_env, names=("export", "check"))
            environment["run"] = step_environment(steps["run"], extra_env, pass_env)[1]
            if docker and (problem := engine_problem(run_env)):
                raise AfbenchError(
                    f"{engine_name(run_env)} does not answer ({problem}): Harbor's docker "
                    "environment cannot run the trial",
                    field="plans.environment_type",
                )
            listing = ", ".join(f"{k} ({v})" for k, v in sorted(environment["run"].items()))
            say(f"run: {json.dumps(steps['run']['argv'])}")
            say(f"run: environment: {listing}")
            log("harbor run", argv_sha256=steps_digest(steps))
            ran = run_harbor(
                steps["run"],
                run_env,
                job_dir,
                meter=paid,
                limit=lambda: _limit(ledger_path, name, cap, ceiling_usd),
                interval_s=meter_interval_s,
                engine=(lambda: engine_problem(run_env)) if docker else None,
            )
        except AfbenchError as error:
            if job_dir.exists():
                raise failed(str(error)) from None
            ledger.release(ledger_path, trial, f"it never reached Harbor: {error}")
            log("released", action="released: never reached Harbor")
            raise AfbenchError(
                f"{error.problems[0].message} (trial {name} never reached Harbor; its hold of "
                f"USD {cap:g} is released)",
                file=error.problems[0].file,
                field=error.problems[0].field or "run",
                expected=error.problems[0].expected,
                found=error.problems[0].found,
            ) from None
        except BaseException:
            failed("its trial job was interrupted")
            raise

        if docker and (problem := ran["engine"] or engine_problem(run_env)):
            raise failed(
                f"{engine_name(run_env)} stopped answering during the trial ({problem})",
                engine=True,
                read_job=read_job,
            )
        if job_state(job_dir) != "finished":
            raise failed(
                f"harbor run exited with code {ran['returncode']} and left the trial without a "
                "result (a full disk, a crash)",
                running_cost_usd=ran["running_cost_usd"],
            )
        if ran["returncode"] != 0:
            say(f"{name}: harbor run exited with code {ran['returncode']}; its trial has a result")
        attempts = read_job(job_dir)
        finish = ledger.finish(
            ledger_path,
            trial,
            [a["cost_usd"] for a in attempts],
            paid,
            cap,
            running_cost_usd=ran["running_cost_usd"],
            stopped=ran["stopped"],
        )
        if finish["overshoot_usd"]:
            say(
                f"{name}: overshoot: it spent USD {finish['cost_usd']:g}, USD "
                f"{finish['overshoot_usd']:g} over its cap USD {cap:g}"
                + (
                    ""
                    if ran["stopped"]
                    else " (its running cost was not visible to afbench: "
                    "see docs/plans-and-execution.md)"
                )
            )
        log("released", action="harbor run")
    return receipt(
        "harbor run",
        attempts,
        environment=environment,
        meter={
            "running_cost_usd": ran["running_cost_usd"],
            "stopped": ran["stopped"],
            "cost_usd": finish["cost_usd"],
            "overshoot_usd": finish["overshoot_usd"],
        },
    )


def say(text: str) -> None:
    sys.stderr.write(f"afbench: {text}\n")
    sys.stderr.flush()


def _limit(ledger_path: Path, name: str, cap: float, ceiling: float | None) -> tuple[float, str]:
    allowed = ledger.allowance(ledger_path, name, cap, ceiling)
    return allowed, ("cap" if allowed >= cap else "ceiling")


def _failed(
    name: str,
    trial: dict,
    paid: bool,
    cap: float,
    job_dir: Path,
    env: dict[str, str],
    docker: bool,
    ledger_path: Path,
    log: Callable[..., None],
    cause: str,
    *,
    engine: bool = False,
    read_job=None,
    running_cost_usd: float | None = None,
) -> AfbenchError:
    """A trial that reached Harbor and ended without a usable result: what it may have spent is
    held (its reported cost when Harbor recorded one, else its cap), the containers its
    environment left are removed (when the engine answers), and its job folder is set aside so
    that a rerun starts afresh. Returns the error to raise."""
    known = None
    if engine and read_job is not None and job_state(job_dir) == "finished":
        try:
            known = _reported(read_job(job_dir))
        except AfbenchError:
            known = None
    seen = running_cost(job_dir, {}) if job_dir.exists() else None
    seen = max(seen or 0.0, running_cost_usd or 0.0)
    held_usd = max(cap, seen, known or 0.0) if paid else 0.0
    names = [t.name for t in trial_folders(job_dir)]
    aside = set_aside(job_dir) if job_dir.exists() else None
    cleaned = ""
    if docker and not engine and names and engine_problem(env) is None:
        removed = remove_leftovers(names, env)
        cleaned = f"; removed {', '.join(removed)}" if removed else "; nothing left in Docker"
    elif docker and names:
        cleaned = "; its containers are removed when the engine answers again, by the next run"
    where = f"; its job folder is set aside as {aside}" if aside else ""
    ledger.interrupt(ledger_path, trial, held_usd, f"{cause}{where}")
    try:
        log("released", action="failed: " + cause[:200])
    except AfbenchError as error:  # a full disk: the ledger has it, the job's log says so
        say(f"{name}: the lock log could not be written ({error})")
    money = (
        f"; what it may have spent, USD {held_usd:g}, is held"
        + (" (it is run again only with execute.rerun_interrupted: true)" if paid else "")
        if paid
        else ""
    )
    return AfbenchError(f"trial {name}: {cause}{money}{where}{cleaned}", field="harbor run")


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
    meter: dict | None = None,
) -> dict:
    """What ran and what came of it: the argv digest, the job folder, each trial's id,
    outcome, cost and result file hash, and what the meter saw; or why the trial did not run
    (`refused`: at the cost ceiling, after a partial run's earlier round stopped, or as an
    interrupted trial of an agent that may spend money, not run again without the opt-in)."""
    trials = []
    for found in attempts:
        result = Path(TrialFolder(found["trial_dir"]).result)
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
    return TRIAL_RECEIPT.record(
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
        meter=meter,
        trials=trials,
        outcome=outcome,
        round=None,
    )
