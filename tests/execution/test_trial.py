"""`snakemake execute`: the plans' trials run through Snakemake (on a real one-node SLURM
cluster when one is up, in Harbor's own docker environment on its node), imported per
configuration with a protocol-conformance certificate and shown in the report with the cost
ledger; money is never spent by accident (every refusal one line, a live ceiling that stops
new trials part-way); a killed controller rerun at once never runs a trial twice, and no
container is left behind."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from afbench.core import locking
from afbench.core.config import load_config
from afbench.core.errors import AfbenchError
from afbench.core.fsutil import json_bytes
from afbench.execution import ledger
from afbench.execution.approval import partial_rounds
from afbench.execution.trial import (
    ENV_ALLOWLIST,
    check_money,
    check_plan,
    execute_trial,
    job_finished,
    job_state,
    run_steps,
    running_cost,
)
from afbench.release.identity import identity

from conftest import (
    BASE_IMAGE,
    HARBOR,
    REPO,
    SNAKEMAKE,
    TASK,
    declared,
    demo_revision,
    docker_leftovers,
    docker_skip_reason,
    harbor_skip_reason,
    holder_process,
    job,
    plan_fields,
    project,
    slurm_skip_reason,
    snakemake,
    snakemake_env,
    wait_until,
)

TASKS = ["demo_s01_t001", "demo_s01_t002"]
COST_AGENT = "cost_agent:CostAgent"  # tests/harbor_agents: model-free, reports a cost


def overlay(root: Path, items: list[dict], tasks=TASKS, **execute) -> list[str]:
    """Config over config/demo.yaml: a selection of `tasks`, plans for `items`, their trials."""
    cfg = {
        "selections": {"exec-two": {"tasks": tasks}},
        "plans": {
            "environment_type": "docker",  # Harbor's own, on the node (make docker)
            "harbor": str(HARBOR),
            "items": [{"selection": "exec-two", **item} for item in items],
        },
        "execute": {
            "items": [{"selection": "exec-two", **item} for item in items],
            **execute,
        },
    }
    (root / "exec.yaml").write_text(yaml.safe_dump(cfg))
    return ["--configfile", "config/demo.yaml", "exec.yaml"]


@pytest.fixture
def built(demo_project, tmp_path) -> Path:
    """A copy of the demo project as `make demo` left it (its release fetched, imports and
    figures drawn): a run of `snakemake execute` there does only the trials and what reads
    them."""
    root = tmp_path / "project"
    shutil.copytree(demo_project, root, symlinks=True)
    return root


def out_dir(root: Path) -> Path:
    return root / "results" / demo_revision()


def receipts(root: Path) -> dict[str, dict]:
    found = (out_dir(root) / "execute").glob("*/*/*/*.json")
    return {str(p.relative_to(root)): json.loads(p.read_text()) for p in found}


def said(result: subprocess.CompletedProcess | str) -> str:
    return result if isinstance(result, str) else result.stdout + result.stderr


def assert_one_line_refusal(result: subprocess.CompletedProcess, message: str) -> None:
    """Refused with exit 1 in one line, without Snakemake's exception report around it."""
    assert result.returncode == 1, said(result)[-2000:]
    lines = [line for line in said(result).splitlines() if "afbench: refused:" in line]
    assert len(lines) == 1 and message in lines[0], said(result)[-2000:]
    for wrapper in ("Traceback", "InputFunctionException", "WorkflowError", "Exception"):
        assert wrapper not in said(result), said(result)[-2000:]


@pytest.mark.snakemake
def test_every_refusal_of_execute_is_one_line_and_nothing_starts(tmp_path):
    root = project(tmp_path)
    paid = [{"agent": "nop"}, {"agent": "claude-code", "model": "anthropic/claude-opus-4-1"}]
    # before any plan is written, the guard counts what the config will plan: refused before
    # a single job runs, not after the plans (a dry run: a real one is refused before that,
    # its paid run not sealed)
    fresh = snakemake(
        root,
        "execute",
        "-n",
        *overlay(root, paid, allow_model_agents=True, max_cost_usd=300),
        check=False,
    )
    assert "(counted from the config: the plans are not written yet)" in said(fresh)
    assert_one_line_refusal(
        fresh, "execute: worst-case cost USD 400 is over the ceiling execute.max_cost_usd = 300"
    )
    assert not (root / "results").exists()
    args = overlay(root, paid)
    snakemake(root, "plans", *args)  # plans are cheap and safe; trials are not
    assert_one_line_refusal(
        snakemake(root, "execute", *args, check=False),
        "field 'execute.allow_model_agents': agent 'claude-code' may call a paid model; refused "
        "without execute.allow_model_agents: true and a ceiling execute.max_cost_usd",
    )
    args = overlay(root, paid, allow_model_agents=True)
    assert_one_line_refusal(
        snakemake(root, "execute", "-n", *args, check=False),
        "field 'execute.max_cost_usd': agent 'claude-code' may call a paid model; refused without "
        "a ceiling (expected a ceiling in USD, found 'none')",
    )
    args = overlay(root, paid, allow_model_agents=True, max_cost_usd=300)
    over = snakemake(root, "execute", "-n", *args, check=False)
    assert "afbench execute: 4 trial(s), 2 with a model agent; worst-case cost USD 400" in said(
        over
    )
    assert (
        "afbench execute: selection exec-two: 2 task(s) can detect no paired difference at "
        "all, too few tasks; exact McNemar (tasks as the unit) at alpha 0.05, power 0.8 (exact), "
        "assuming a baseline success rate of 0.5" in said(over)
    )
    assert_one_line_refusal(
        over, "execute: worst-case cost USD 400 is over the ceiling execute.max_cost_usd = 300"
    )
    # a custom agent (by import path) may call a model, whatever it is: the guard says so
    custom = overlay(root, [{"agent": COST_AGENT}])
    assert_one_line_refusal(
        snakemake(root, "execute", "-n", *custom, check=False),
        f"field 'execute.allow_model_agents': agent '{COST_AGENT}' may call a paid model",
    )
    formal = root / "formal.yaml"
    formal.write_text("release: {synthetic: false}\n")
    assert_one_line_refusal(
        snakemake(
            root, "execute", "-n", *overlay(root, [{"agent": "nop"}]), str(formal), check=False
        ),
        "field 'release.images[].digest': a formal run on the official release is refused while "
        "the image digests are unpinned",
    )
    nothing = root / "nothing.yaml"
    nothing.write_text("execute: {items: []}\n")
    assert_one_line_refusal(
        snakemake(root, "execute", "-n", *args, str(nothing), check=False),
        "field 'execute.items': no items to execute",
    )
    assert not (out_dir(root) / "execute").exists()
    assert not (out_dir(root) / "jobs").exists()  # no Harbor job began
    # a damaged live ledger, or a link planted at it or at a trial's lock: refused before
    # anything runs, in one line naming the file and line, nothing outside touched
    ledger_path = out_dir(root) / "jobs.ledger.jsonl"
    ledger_path.write_text('{"event": "finish", "cost_usd": NaN}\n')
    args = overlay(root, paid, allow_model_agents=True, max_cost_usd=1000)
    assert_one_line_refusal(
        snakemake(root, "execute", "-n", *args, check=False),
        f"{ledger_path}: row 1: cost ledger line is not valid JSON: NaN is not valid JSON",
    )
    victim = tmp_path / "outside.txt"
    victim.write_text("keep me\n")
    ledger_path.unlink()
    ledger_path.symlink_to(victim)
    assert_one_line_refusal(
        snakemake(root, "execute", "-n", *args, check=False),
        f"{ledger_path}: the cost ledger is a symbolic link, not a regular file; refusing it",
    )
    ledger_path.unlink()
    (out_dir(root) / "jobs").mkdir()
    plan = out_dir(root) / "plans/exec-two/claude-code__anthropic__claude-opus-4-1.json"
    job = json.loads(plan.read_text())["tasks"][0]["job_name"]  # the trial of demo_s01_t001
    lock = out_dir(root) / "jobs" / f"{job}-attempt-1.lock"
    lock.symlink_to(victim)
    assert_one_line_refusal(
        snakemake(root, "execute", "-n", *args, check=False),
        f"{lock}: the lock file is a symbolic link, not a regular file; refusing it",
    )
    assert victim.read_text() == "keep me\n" and not ledger_path.exists()


def readme_example(test: str) -> tuple[str, str]:
    """The README's config block and shell block that name `test` as theirs, as written."""
    from test_readme import blocks

    found = [(language, text) for marker, language, text in blocks() if marker and test in marker]
    assert [language for language, _ in found] == ["yaml", "sh"], found
    return found[0][1], found[1][1]


def as_checkout(root: Path) -> dict:
    """`root` as a checkout after `make setup` and `make harbor` (their venvs, the test agents),
    and an environment without the venv: the README's own lines activate it."""
    (root / ".venv").symlink_to(REPO / ".venv")
    (root / ".harbor-venv").symlink_to(REPO / ".harbor-venv")
    shutil.copytree(REPO / "tests" / "harbor_agents", root / "tests" / "harbor_agents")
    venv = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != venv)
    return {**os.environ, "PATH": path}


def shell(root: Path, text: str, env: dict, timeout=900) -> subprocess.CompletedProcess:
    """A README shell block run as written, in `root`."""
    return subprocess.run(
        ["bash", "-e", "-c", text],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def shell_until(root: Path, text: str, env: dict, line: str, timeout=900):
    """A README shell block started as written, in `root`, once it has said a line starting
    with `line`: the function that waits for its end and gives what it said."""
    running = subprocess.Popen(
        ["bash", "-e", "-c", text],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    seen = threading.Event()

    def read() -> None:
        for said_line in running.stdout:
            lines.append(said_line)
            if said_line.startswith(line):
                seen.set()
        seen.set()  # it ended without saying it: the caller's assertions say so

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert seen.wait(timeout), f"the block never said {line!r}"  # a hang guard

    def ended() -> subprocess.CompletedProcess:
        code = running.wait(timeout)
        reader.join(timeout)
        return subprocess.CompletedProcess(running.args, code, "".join(lines), "")

    return ended


def slurm(action: str, job_id: str) -> None:
    """scontrol suspend or resume of one SLURM job, which must still be in the queue."""
    done = subprocess.run(["scontrol", action, job_id], capture_output=True, text=True)
    assert done.returncode == 0, f"scontrol {action} {job_id}: {done.stderr}"


@pytest.mark.snakemake
@pytest.mark.harbor
@pytest.mark.docker
def test_the_live_ceiling_stops_new_trials_and_a_higher_one_resumes_them(built):
    """The README's cost-agent example as written: the model-free test agent reports USD 500
    per trial; a USD 400 ceiling runs the first (an overshoot past its USD 200 cap) and refuses
    the second; a higher ceiling runs the second."""
    reason = harbor_skip_reason() or docker_skip_reason()
    if reason:
        pytest.skip(reason)
    root = built
    env = as_checkout(root)
    config, block = readme_example("test_the_live_ceiling_stops_new_trials")
    (root / "my-cost-run.yaml").write_text(config)
    assert "--cores 1" in block  # one trial at a time: which one the ceiling stops is fixed
    assert block.index("snakemake preregister") < block.index("snakemake execute")

    def run(ceiling=None):
        text = block
        if ceiling is not None:  # the same command with a higher ceiling over it
            (root / "higher.yaml").write_text(f"execute: {{max_cost_usd: {ceiling}}}\n")
            text = block.replace("my-cost-run.yaml", "my-cost-run.yaml higher.yaml")
            # the ceiling is sealed with the run: a new ceiling is a new plan
            shutil.rmtree(out_dir(root) / "execute" / "run-plans")
        return shell(root, text, env)

    first = run()
    assert first.returncode == 0, said(first)[-3000:]
    assert (
        "afbench execute: stopped at the cost ceiling: 1 trial(s) not started; spent USD 500 "
        "on 1 of 2 trial(s), ceiling USD 400" in said(first)
    )
    out = out_dir(root)
    cost = json.loads((out / "execute/cost-ledger.json").read_text())
    assert (cost["kind"], cost["spent_usd"], cost["ceiling_usd"], cost["stopped"]) == (
        "afbench cost ledger",
        500.0,
        400.0,
        True,
    )
    by_status = {t["status"]: t for t in cost["trials"]}
    assert set(by_status) == {"finished", "refused"}
    assert by_status["finished"]["cost_usd"] == 500.0  # the agent's cost, passed by name
    # its cost shows only at the end (no trajectory while it runs): past its cap USD 200, an
    # overshoot, and no trial starts once spent has passed the ceiling
    assert (cost["overshoots"], cost["overshoot_usd"]) == (1, 300.0)
    assert by_status["finished"]["overshoot_usd"] == 300.0
    assert (
        "spent USD 500 + held USD 0 + USD 0 for the trials started and not finished + this "
        "trial's cap USD 200 = USD 700 is over execute.max_cost_usd = 400; not started"
        in (by_status["refused"]["refused"])
    )
    assert "afbench execute: overshoot: trial afbench-exec-one-cost_agent__CostAgent-" in said(
        first
    )
    assert "spent USD 500, USD 300 over its cap USD 200" in said(first)
    jobs = out / "jobs"
    assert len([p for p in jobs.iterdir() if p.is_dir()]) == 1  # the refused one never began
    live = [json.loads(line) for line in (out / "jobs.ledger.jsonl").read_text().splitlines()]
    assert [e["event"] for e in live] == ["start", "finish", "refused"]
    assert (live[1]["cost_usd"], live[1]["overshoot_usd"], live[1]["stopped"]) == (500, 300, None)
    assert live[1]["running_cost_usd"] is None  # nothing of its cost was visible while it ran
    html = (out / "report/executed/index.html").read_text()
    assert "Spent USD 500.00 of the ceiling USD 400.00" in html
    assert "Stopped at the ceiling: 1 trial(s) not started." in html
    assert "1 overshoot(s): USD 300.00 spent past their caps." in html
    summary = json.loads((out / "runs/executed-exec-one/summary.json").read_text())
    assert summary["conformant"] is True  # the demo's own executed run follows the protocol
    [configuration] = summary["configurations"]
    assert configuration["counts"]["rejected"] == 1 and configuration["attempts"]["total"] == 1

    # the same ceiling again: what the ledger spent counts, so the rest cannot fit
    assert_one_line_refusal(
        shell(root, block.replace("snakemake execute", "snakemake execute -n"), env),
        "execute: worst-case cost USD 700 (USD 500 spent or held by the live ledger + 1 "
        "unfinished trial(s) x USD 200) is over the ceiling execute.max_cost_usd = 400",
    )
    again = run(ceiling=1000)  # the refused trial runs, the finished one is reused
    assert again.returncode == 0, said(again)[-3000:]
    assert "spent USD 1000 on 2 of 2 trial(s), ceiling USD 1000" in said(again)
    cost = json.loads((out / "execute/cost-ledger.json").read_text())
    assert (cost["spent_usd"], cost["stopped"]) == (1000.0, False)
    ran = [
        e["action"]
        for lock in jobs.glob("*.lock.log")
        for e in map(json.loads, lock.read_text().splitlines())
        if e["event"] == "released"
    ]
    assert sorted(ran) == ["harbor run", "harbor run", "refused", "reused"]
    assert docker_leftovers(jobs) == []


def lock_files(root: Path) -> list[Path]:
    return sorted((out_dir(root) / "jobs").glob("*.lock"))


@pytest.mark.snakemake
@pytest.mark.harbor
@pytest.mark.docker
@pytest.mark.slurm
def test_execute_on_slurm_killed_and_rerun_at_once_runs_every_trial_exactly_once(built, tmp_path):
    """The README's my-run.yaml, copied as written into a checkout with `make setup`'s and
    `make harbor`'s venvs; its controller killed while its one SLURM job runs, a duplicate of
    that trial submitted by hand, then the README's own two lines (the venv activated by the
    block, Harbor found relative to the config file) run at once: every trial ran exactly once,
    on SLURM, in Harbor's docker environment, and the summary is said once, with the plans'
    real count."""
    reason = harbor_skip_reason() or docker_skip_reason() or slurm_skip_reason()
    if reason:
        pytest.skip(reason)
    root = built
    env = as_checkout(root)
    config, block = readme_example("test_execute_on_slurm_killed_and_rerun_at_once")
    (root / "my-run.yaml").write_text(config)
    assert yaml.safe_load(config)["plans"]["harbor"] == ".harbor-venv/bin/harbor"  # relative
    args = ["--profile", "profiles/slurm", "--configfile", "config/demo.yaml", "my-run.yaml"]
    assert f"snakemake execute {' '.join(args)}" in block
    # everything but the trials is light work that runs where Snakemake runs (localrules)
    snakemake(root, "plans", *args)
    # each trial's rule command, for a duplicate submission below
    dry = snakemake(root, "execute", "-n", "-p", *args)

    def controller(*extra: str) -> subprocess.Popen:
        return subprocess.Popen(
            [SNAKEMAKE, "execute", *args, *extra],
            cwd=root,
            env=snakemake_env(),
            start_new_session=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    # one SLURM job at a time, so the cluster has free slots when the controller dies
    first = controller("--jobs", "1")
    deadline = time.monotonic() + 240
    running = {}
    while time.monotonic() < deadline and not running and first.poll() is None:
        running = {lock: who for lock in lock_files(root) if (who := locking.holder(lock))}
        time.sleep(0.2)
    assert len(running) == 1, f"not one trial holding its lock: {running}"
    [(lock, holder)] = running.items()
    os.killpg(first.pid, signal.SIGKILL)  # the controller dies; its SLURM job goes on
    # and SLURM holds it still (suspended, its lock held) until both later copies have seen it
    # running, so what they see does not depend on how long its trial takes
    slurm("suspend", holder["slurm_job_id"])
    said_first = first.communicate()[0]
    assert "submitted" in said_first.lower() and "slurm" in said_first.lower(), said_first[-3000:]
    trial = lock.name.removesuffix(".lock")
    snakemake(root, "--unlock", *args)  # the first controller is dead: no other one runs
    # a duplicate submission of the running trial: its rule's own command, sent to the free
    # slot with sbatch (its receipt elsewhere); it must wait for the first copy, then reuse it
    [(label, task)] = [
        (label, task)
        for label in ("nop", "oracle")
        for task in TASKS
        if trial.startswith(f"afbench-exec-two-{label}-{task}-")
    ]
    [command] = [
        line.removeprefix("Shell command: ")
        for line in said(dry).splitlines()
        if line.startswith("Shell command: afbench job run-trial ")
        and f"/execute/exec-two/{label}/{task}/attempt-1.json" in line
    ]
    duplicate = re.sub(r"--output=\S+", f"--output={tmp_path / 'duplicate.json'}", command)
    duplicate = duplicate.split(" 2> ")[0]
    submitted_copy = subprocess.run(
        ["sbatch", "--parsable", "-o", str(tmp_path / "duplicate.log"), "--wrap", duplicate],
        cwd=root,
        env=snakemake_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    waiting = ""
    while "waiting for it" not in waiting:
        assert time.monotonic() < deadline, "the duplicate never waited for the first copy"
        log = tmp_path / "duplicate.log"
        waiting = log.read_text() if log.exists() else ""
        time.sleep(0.2)
    assert (
        f"afbench: trial {trial} is running elsewhere (host {holder['host']}, pid "
        f"{holder['pid']}, SLURM job {holder['slurm_job_id']}" in waiting
    )
    # the README's lines, at once, while the first copy runs; it goes on once they saw it
    rerun = shell_until(root, block, env, "afbench execute: trial " + trial)
    slurm("resume", holder["slurm_job_id"])
    rerun = rerun()
    assert rerun.returncode == 0, said(rerun)[-3000:]
    summary = [x for x in said(rerun).splitlines() if x.startswith("afbench execute: ")]
    assert (
        summary.count(
            "afbench execute: 4 trial(s), 0 with a model agent; worst-case cost USD 0 (0 x the "
            "nominal USD 200 per task)"
        )
        == 1
    )
    assert not [x for x in summary if "the plans are not written yet" in x]
    assert holder["slurm_job_id"]  # the first copy runs in a SLURM job
    assert (
        f"afbench execute: trial {trial} is still running elsewhere (host {holder['host']}, "
        f"pid {holder['pid']}, SLURM job {holder['slurm_job_id']}, since {holder['since']})"
        in said(rerun)
    )
    assert "afbench execute: 4 trial(s), 0 with a model agent" in said(rerun)
    while subprocess.run(["squeue", "-h"], capture_output=True, text=True).stdout.strip():
        assert time.monotonic() < deadline + 300, "SLURM jobs did not finish"
        time.sleep(1)

    out = out_dir(root)
    jobs = out / "jobs"
    trials = receipts(root)
    assert len(trials) == 4
    by_agent = {}
    for receipt in trials.values():
        [ran] = receipt["trials"]
        by_agent.setdefault(receipt["plan"]["agent"], []).append(ran["reward"])
        job_dir = Path(receipt["job_dir"])
        # exactly one Harbor trial per job: no second copy ever ran Harbor on it
        assert [p.name for p in job_dir.iterdir() if p.is_dir()] == [ran["trial_name"]]
        result = job_dir / ran["trial_name"] / "result.json"
        assert json.loads(result.read_text())["config"]["environment"]["type"] == "docker"
        assert hashlib.sha256(result.read_bytes()).hexdigest() == (ran["result_sha256"])
        log = [json.loads(line) for line in Path(receipt["lock"] + ".log").read_text().splitlines()]
        actions = [e["action"] for e in log if e["event"] == "released"]
        assert actions.count("harbor run") == 1 and set(actions) <= {"harbor run", "reused"}
    assert by_agent == {"nop": [0, 0], "oracle": [1, 1]}
    assert all(
        r["steps"]["run"]["argv"][0] == str(root / ".harbor-venv/bin/harbor")
        for r in trials.values()
    )
    # the copy of the trial that was running when the controller died deferred to it
    log = [
        e
        for e in map(json.loads, Path(f"{lock}.log").read_text().splitlines())
        if e["event"] in ("acquired", "released")
    ]
    sessions = [(e["slurm_job_id"], e.get("action")) for e in log]
    assert sessions[:4] == [
        (holder["slurm_job_id"], None),
        (holder["slurm_job_id"], "harbor run"),
        (submitted_copy, None),  # the duplicate got the lock only when the first let it go
        (submitted_copy, "reused"),
    ]
    waited = log[2]
    assert waited["waited_s"] > 0 and waited["waited_for"]["pid"] == holder["pid"]
    assert [a for _, a in sessions[4:]] in ([None, "reused"], [])  # the rerun's own copy
    assert json.loads((tmp_path / "duplicate.json").read_text())["action"] == "reused"
    # one SLURM job by the first controller; the rerun's four (a copy of the running one)
    submitted = [
        re.findall(r"submitted with SLURM jobid (\d+)", s) for s in (said_first, said(rerun))
    ]
    assert [len(jobs) for jobs in submitted] == [1, 4] and holder["slurm_job_id"] in submitted[0]

    summary = json.loads((out / "runs/executed-exec-two/summary.json").read_text())
    counts = {c["configuration"].split()[0]: c["counts"] for c in summary["configurations"]}
    assert counts["nop"]["rejected"] == 2 and counts["oracle"]["accepted"] == 2
    assert summary["conformant"] is True
    assert all(
        c["conformance"]["task_checksums"]["compared"] == 2 for c in summary["configurations"]
    )
    html = (out / "report/executed/index.html").read_text()
    assert "executed-exec-two" in html and "oracle 1.0.0" in html
    assert "Spent USD 0.00 of the ceiling none (model-free agents only)" in html
    assert docker_leftovers(jobs) == []


# --- a ceiling that bounds spend, and no trial paid twice ---------------------------------------
SPEND_AGENT = "spend_agent:SpendAgent"  # tests/harbor_agents: model-free, spends step by step
AGENTS_DIR = str(REPO / "tests" / "harbor_agents")
SPEND_SETTINGS = [
    "AFBENCH_TEST_SPEND_STEP_USD",
    "AFBENCH_TEST_SPEND_STEP_S",
    "AFBENCH_TEST_SPEND_STEPS",
    "AFBENCH_TEST_SPEND_HIDDEN",
    "AFBENCH_TEST_SPEND_STARTED",  # the agent says it began (a file the test waits for)
    "AFBENCH_TEST_SPEND_UNTIL",  # the agent ends only once this file exists
    "AFBENCH_TEST_AGENT_COST_USD",
]


def paid(root: Path, items: list[dict], tasks=TASKS[:1], **execute) -> list[str]:
    """overlay() for the test agents: allowed, their folder importable by Harbor, their
    settings passed by name from the controller's environment."""
    return overlay(
        root,
        items,
        tasks=tasks,
        allow_model_agents=True,
        env={"PYTHONPATH": AGENTS_DIR},
        pass_env=SPEND_SETTINGS,
        **execute,
    )


def execute(root: Path, args: list[str], *extra: str, env: dict | None = None, timeout=600):
    """`snakemake execute`; a real run's paid runs sealed first as the config now has them
    (`snakemake preregister`; a config the guard refuses anyway seals nothing)."""
    if "-n" not in extra:
        shutil.rmtree(out_dir(root) / "execute" / "run-plans", ignore_errors=True)
        snakemake(root, "preregister", *args, check=False)
    return subprocess.run(
        [SNAKEMAKE, "execute", *extra, *args],
        cwd=root,
        env={**snakemake_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def live_ledger(root: Path) -> list[dict]:
    path = out_dir(root) / "jobs.ledger.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def docker_skip() -> str | None:
    return harbor_skip_reason() or docker_skip_reason()


@pytest.mark.snakemake
@pytest.mark.harbor
@pytest.mark.docker
def test_a_running_cost_afbench_can_see_stops_the_trial_at_its_cap(built):
    """The agent writes its trajectory in Harbor's ATIF format as it goes (as Harbor's
    terminus-2 does): afbench reads its running cost and stops Harbor at the cap, which ends
    the trial and records what it spent; unstopped it would spend USD 2,400."""
    if reason := docker_skip():
        pytest.skip(reason)
    root = built
    args = paid(
        root, [{"agent": SPEND_AGENT}], max_cost_usd=1000, trial_cap_usd=100, meter_interval_s=0.5
    )
    # a step every 3 s: the meter (every 0.5 s) and Harbor's stop have 2.5 s before a fourth
    # step could be spent, however loaded the machine (the test holds it to exactly three)
    env = {
        "AFBENCH_TEST_SPEND_STEP_USD": "40",
        "AFBENCH_TEST_SPEND_STEP_S": "3",
        "AFBENCH_TEST_SPEND_STEPS": "60",
    }
    result = execute(root, args, "--cores", "1", env=env)
    assert result.returncode == 0, said(result)[-3000:]
    [start, finish] = live_ledger(root)
    assert (start["event"], start["worst_case_usd"]) == ("start", 100)
    assert (finish["event"], finish["stopped"]) == ("finish", "cap")
    assert finish["running_cost_usd"] == 120  # three steps seen: the third passed the cap
    assert finish["cost_usd"] == 120 and finish["overshoot_usd"] == 20  # one step's worth
    log = next((out_dir(root) / "logs/run_trial").rglob("*.log")).read_text()
    assert "afbench: run: the trial has spent USD 120, at its cap (USD 100): stopping Harbor" in log
    [receipt] = receipts(root).values()
    [ran] = receipt["trials"]
    assert receipt["meter"]["stopped"] == "cap" and ran["cost_usd"] == 120  # Harbor's record
    cost = json.loads((out_dir(root) / "execute/cost-ledger.json").read_text())
    assert cost["trials"][0]["stopped"] == "cap" and cost["spent_usd"] == 120
    assert "(stopped at cap)" in said(result)
    assert docker_leftovers(out_dir(root) / "jobs") == []


@pytest.mark.snakemake
@pytest.mark.harbor
@pytest.mark.docker
def test_a_partial_run_runs_rounds_of_one_task_per_source_until_the_ceiling(built):
    if reason := docker_skip():
        pytest.skip(reason)
    root = built
    tasks = ["demo_s01_t001", "demo_s01_t002", "demo_s02_t001", "demo_s02_t002"]
    env = {"AFBENCH_TEST_AGENT_COST_USD": "150"}
    whole = paid(root, [{"agent": COST_AGENT}], tasks=tasks, max_cost_usd=400)
    assert_one_line_refusal(
        execute(root, whole, "-n", env=env),
        "execute: worst-case cost USD 800 is over the ceiling execute.max_cost_usd = 400; nothing "
        "was started (execute.partial: true runs it in rounds of one task per source",
    )
    args = paid(root, [{"agent": COST_AGENT}], tasks=tasks, max_cost_usd=400, partial=True)
    result = execute(root, args, "--cores", "2", env=env)
    assert result.returncode == 0, said(result)[-3000:]
    assert "afbench execute: partial run (execute.partial)" in said(result)
    assert "2 round(s), 1 of them fit at their caps" in said(result)
    ran = {r["task_id"]: r for r in receipts(root).values()}
    done = sorted(task for task, r in ran.items() if r["action"] == "harbor run")
    # round 1 (one task of each source) fits: 0 + 200 + 200 <= 400; it spends 2 x 150, and
    # round 2 does not (300 + 200 > 400): one task of every source is done, no more
    assert len(done) == 2 and {t[:9] for t in done} == {"demo_s01_", "demo_s02_"}
    assert {r["round"] for r in ran.values() if r["action"] == "harbor run"} == {1}
    assert all(r["refused"] and r["round"] == 2 for t, r in ran.items() if t not in done)
    cost = json.loads((out_dir(root) / "execute/cost-ledger.json").read_text())
    assert cost["partial"] == {
        "rounds": [{"round": 1, "ran": 2, "not_run": 0}, {"round": 2, "ran": 0, "not_run": 2}],
        "complete_rounds": 1,
    }
    assert cost["spent_usd"] == 300 and cost["stopped"] is True
    summary = json.loads((out_dir(root) / "runs/executed-exec-two/summary.json").read_text())
    assert summary["configurations"][0]["attempts"]["total"] == 2
    assert docker_leftovers(out_dir(root) / "jobs") == []


def verifier_gate(folder: Path, path: str) -> Path:
    """A `docker` in front of the engine's own, on PATH: it holds every verifier run (an exec
    naming the task's test.sh) until its process group is killed and passes everything else on.
    The model-free trial then stays in flight, its container up, however long the paid one takes
    to start on a loaded machine (`nop` alone is over in seconds)."""
    docker = shutil.which("docker", path=path)
    assert docker, f"no docker on PATH {path}"
    folder.mkdir()
    script = folder / "docker"
    script.write_text(
        "#!/bin/bash\n"
        'case " $* " in *" exec "*test.sh*) exec sleep 900 ;; esac\n'
        f'exec {shlex.quote(docker)} "$@"\n'
    )
    script.chmod(0o755)
    return folder


def project_containers(jobs: Path) -> dict[str, str]:
    """The running containers of the trials under `jobs`: compose project -> status."""
    prefixes = tuple(
        re.sub(r"[^a-z0-9_-]", "-", p.name.lower()) + "__" for p in jobs.glob("*/*") if p.is_dir()
    )
    if not prefixes:
        return {}
    lines = subprocess.run(
        [
            "docker",
            "ps",
            "--filter",
            "label=com.docker.compose.project",
            "--format",
            '{{.Label "com.docker.compose.project"}}\t{{.State}}',
        ],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.splitlines()
    return {p: s for p, _, s in (x.partition("\t") for x in lines) if p.startswith(prefixes)}


@pytest.mark.snakemake
@pytest.mark.harbor
@pytest.mark.docker
def test_killing_the_controller_group_mid_trial_pays_no_trial_twice_and_leaves_nothing(built):
    """A closed terminal or a cancelled allocation: the controller's whole process group dies
    while a paid and a model-free trial run; their containers stay up. The rerun removes them,
    holds the paid trial's possible spend at its cap and does not run it again without the
    opt-in (with it, it runs: the engine test below); the model-free one runs again and ends
    once."""
    if reason := docker_skip():
        pytest.skip(reason)
    root = built
    items = [{"agent": "nop"}, {"agent": SPEND_AGENT}]
    args = paid(root, items, max_cost_usd=1000)
    slow = {
        "AFBENCH_TEST_SPEND_STEP_USD": "1",
        "AFBENCH_TEST_SPEND_STEP_S": "1",
        "AFBENCH_TEST_SPEND_STEPS": "600",
    }
    snakemake(root, "plans", "preregister", *args)  # a paid run: its plan sealed
    jobs = out_dir(root) / "jobs"
    env = snakemake_env()
    gate = verifier_gate(root.parent / "gate", env["PATH"])
    first = subprocess.Popen(
        [SNAKEMAKE, "execute", "--cores", "2", *args],
        cwd=root,
        env={**env, **slow, "PATH": f"{gate}{os.pathsep}{env['PATH']}"},
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 240
    up: dict[str, str] = {}
    spent: list[Path] = []
    while time.monotonic() < deadline and first.poll() is None:
        up = project_containers(jobs)
        spent = list(jobs.glob("*SpendAgent*/*/agent/trajectory.json"))
        if len(up) == 2 and all(s == "running" for s in up.values()) and spent:
            break
        time.sleep(0.2)
    if first.poll() is not None:
        pytest.fail(
            f"the controller ended before both trials ran:\n{first.communicate()[0][-3000:]}"
        )
    assert len(up) == 2 and spent, f"not both trials running: {up}"
    os.killpg(first.pid, signal.SIGKILL)  # the controller and its trial jobs, Harbor too
    first.communicate()

    snakemake(root, "--unlock", *args)  # no other controller runs here
    # what Harbor started stays up, unreported, until the rerun: the one it must clear
    assert len(project_containers(jobs)) == 2
    rerun = execute(root, args, "--cores", "2", env=slow)
    assert rerun.returncode == 0, said(rerun)[-3000:]
    assert docker_leftovers(jobs) == []  # containers, networks, images, volumes: none
    by_agent = {r["plan"]["agent"]: r for r in receipts(root).values()}
    spend, nop = by_agent[SPEND_AGENT], by_agent["nop"]
    assert (spend["action"], spend["trials"]) == ("interrupted", [])
    assert "not run again without execute.rerun_interrupted: true" in spend["refused"]
    entries = live_ledger(root)
    [interrupted] = [e for e in entries if e["event"] == "interrupted" and "Spend" in e["job_name"]]
    assert interrupted["held_usd"] == 200  # its cap: what it spent before it died is unknown
    assert interrupted["reason"].startswith("its controller is gone (host ")
    assert "its lock is free, pid " in interrupted["reason"]
    # the rerun named it before anything started
    assert "belongs to a controller that is gone (its lock is free, pid " in said(
        rerun
    ) and "its cap USD 200 is held for good (it reached Harbor: what it spent is unknown)" in said(
        rerun
    )
    assert "1 interrupted trial(s) of an agent that may spend money not run again" in said(rerun)
    # the model-free trial ran again, and its job holds one trial, with its result
    [trial_dir] = [p for p in Path(nop["job_dir"]).iterdir() if p.is_dir()]
    assert (trial_dir / "result.json").is_file() and nop["outcome"] == "rejected"
    [aside] = jobs.glob(Path(nop["job_dir"]).name + ".interrupted-*")
    assert [p for p in aside.iterdir() if p.is_dir() and not (p / "result.json").exists()]
    assert "removed what the interrupted copy left: container " in (
        (out_dir(root) / "logs/run_trial/exec-two/nop/demo_s01_t001/attempt-1.log").read_text()
    )


PRIVATE_ENGINE_POOL = "base=10.231.0.0/16,size=24"


class PrivateEngine:
    """A dockerd of this test's own (its socket, data, exec root and pid file in a tmp dir, no
    iptables, its own address pool), so that stopping it touches nobody else's containers."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.host = f"unix://{base}/docker.sock"
        self.process: subprocess.Popen | None = None

    def start(self) -> str | None:
        if shutil.which("dockerd") is None or os.geteuid() != 0:
            return "a private dockerd needs root and the dockerd program"
        log = open(self.base / "dockerd.log", "ab")  # noqa: SIM115 - the daemon writes it
        self.process = subprocess.Popen(
            [
                "dockerd",
                "--host",
                self.host,
                "--data-root",
                str(self.base / "data"),
                "--exec-root",
                str(self.base / "exec"),
                "--pidfile",
                str(self.base / "docker.pid"),
                "--iptables=false",
                "--ip-forward=false",
                "--bridge=none",
                "--default-address-pool",
                PRIVATE_ENGINE_POOL,
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return (
                    f"the private dockerd exited: {(self.base / 'dockerd.log').read_text()[-500:]}"
                )
            if self.docker("info", "--format", "{{.ServerVersion}}").returncode == 0:
                return None
            time.sleep(0.5)
        return "the private dockerd did not answer in 60 s"

    def docker(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["docker", "-H", self.host, *args], capture_output=True, timeout=120, **kw
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=120)


@pytest.fixture
def private_engine(tmp_path_factory):
    if reason := docker_skip():
        pytest.skip(reason)
    # a short path: a unix socket's path is at most 107 bytes
    base = Path(tempfile.mkdtemp(prefix="afbench-engine-"))
    engine = PrivateEngine(base)
    reason = engine.start()
    if reason:
        engine.stop()
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(reason)
    saved = subprocess.run(
        ["docker", "save", BASE_IMAGE], capture_output=True, timeout=300, check=True
    ).stdout
    engine.docker("load", input=saved, check=True)
    yield engine
    engine.stop()
    subprocess.run(["rm", "-rf", str(base)], check=False, timeout=300)


def own_processes(pattern: str, root: Path) -> list[str]:
    """The processes whose command line matches `pattern` (pgrep -f) and that run in `root`
    or below it (Snakemake runs its jobs in the project folder)."""
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    own = []
    for pid in found.split():
        try:
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:  # ended meanwhile
            continue
        if cwd == root.resolve() or root.resolve() in cwd.parents:
            own.append(f"{pid} in {cwd}")
    return own


@pytest.mark.snakemake
@pytest.mark.harbor
@pytest.mark.docker
def test_a_docker_engine_stopped_mid_run_fails_it_by_name_and_leaves_nothing(
    built, private_engine, monkeypatch, tmp_path
):
    root = built
    args = paid(root, [{"agent": SPEND_AGENT}], max_cost_usd=1000)
    started = tmp_path / "agent-started"
    env = {
        "DOCKER_HOST": private_engine.host,
        "AFBENCH_TEST_SPEND_STEP_USD": "1",
        "AFBENCH_TEST_SPEND_STEP_S": "1",
        "AFBENCH_TEST_SPEND_STEPS": "600",
        "AFBENCH_TEST_SPEND_HIDDEN": "1",  # its cost shows only at the end
        "AFBENCH_TEST_SPEND_STARTED": str(started),
    }
    snakemake(root, "plans", "preregister", *args)  # a paid run: its plan sealed
    jobs = out_dir(root) / "jobs"
    run = subprocess.Popen(
        [SNAKEMAKE, "execute", "--cores", "1", *args],
        cwd=root,
        env={**snakemake_env(), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    wait_until(started.exists, "the agent never started", run)  # its container is up
    assert private_engine.docker("ps", "-q", text=True).stdout.split()
    private_engine.stop()
    output = run.communicate(timeout=600)[0]
    assert run.returncode != 0, output[-3000:]
    named = [
        line
        for line in output.splitlines()
        if line.startswith("afbench: error: ")
        and f"the Docker engine at DOCKER_HOST={private_engine.host} stopped answering" in line
    ]
    assert len(named) == 1, output[-3000:]
    # nothing of the run's own runs on, holds its lock or holds money open (its own: other
    # worktrees' tests on this machine run trials of the same name, in folders of their own)
    assert own_processes("run-trial .*exec-two", root) == []
    assert all(locking.holder(lock) is None for lock in jobs.glob("*.lock"))
    entries = live_ledger(root)
    assert [e["event"] for e in entries] == ["start", "interrupted"]
    assert entries[1]["held_usd"] == 200 and "stopped answering" in entries[1]["reason"]
    assert not [p for p in jobs.iterdir() if p.is_dir() and ".interrupted-" not in p.name]

    # the engine back: what the trial left in it is removed by the next run, before it runs
    assert private_engine.start() is None
    assert private_engine.docker("ps", "-aq", text=True).stdout.split()  # left behind
    monkeypatch.setenv("DOCKER_HOST", private_engine.host)
    again = paid(root, [{"agent": SPEND_AGENT}], max_cost_usd=1000, rerun_interrupted=True)
    rerun = execute(root, again, "--cores", "1", env={**env, "AFBENCH_TEST_SPEND_STEPS": "1"})
    assert rerun.returncode == 0, said(rerun)[-3000:]
    assert docker_leftovers(jobs) == []
    assert private_engine.docker("ps", "-aq", text=True).stdout.split() == []


@pytest.mark.snakemake
@pytest.mark.harbor
@pytest.mark.docker
def test_a_full_disk_mid_trial_holds_its_cap_and_the_rerun_pays_once(built, tmp_path):
    """The jobs folder on a small file system of its own (tmpfs) that fills while the agent
    runs: Harbor 0.22.0 dies with ENOSPC (exit 1) and leaves an empty result.json. The trial job
    holds its cap, sets the folder aside and fails; once space is freed the rerun does not run
    the paid trial again, and with the opt-in runs it once, in a clean folder. The agent ends
    only once the disk is full (AFBENCH_TEST_SPEND_UNTIL), never before on a slow machine."""
    if reason := docker_skip():
        pytest.skip(reason)
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs for the jobs folder needs root")
    root = built
    args = paid(root, [{"agent": SPEND_AGENT}], max_cost_usd=1000)
    snakemake(root, "plans", "preregister", *args)  # a paid run: its plan sealed
    jobs = out_dir(root) / "jobs"
    jobs.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(jobs)], check=True)
    try:
        env = {
            "AFBENCH_TEST_SPEND_STEP_USD": "1",
            "AFBENCH_TEST_SPEND_STEP_S": "1",
            "AFBENCH_TEST_SPEND_STEPS": "8",
            "AFBENCH_TEST_SPEND_HIDDEN": "1",
            "AFBENCH_TEST_SPEND_UNTIL": str(tmp_path / "disk-full"),
        }
        run = subprocess.Popen(
            [SNAKEMAKE, "execute", "--cores", "1", *args],
            cwd=root,
            env={**snakemake_env(), **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 240
        while not list(jobs.glob("*/*/agent")):
            assert time.monotonic() < deadline and run.poll() is None, "the trial never ran"
            time.sleep(0.2)
        with open(jobs / "filler", "wb") as filler:  # the disk fills while the agent runs
            try:
                while True:
                    filler.write(b"\0" * 65536)
                    filler.flush()
            except OSError:
                pass
        (tmp_path / "disk-full").touch()  # the agent may end now
        output = run.communicate(timeout=600)[0]
        assert run.returncode != 0, output[-3000:]
        [error] = [x for x in output.splitlines() if x.startswith("afbench: error: ")]
        assert "harbor run exited with code 1 and left the trial without a result" in error
        assert "what it may have spent, USD 200, is held" in error
        [aside] = jobs.glob("*.interrupted-1")
        [trial] = [p for p in aside.iterdir() if p.is_dir()]
        assert (trial / "result.json").read_bytes() == b""  # Harbor's own, on a full disk
        assert [e["event"] for e in live_ledger(root)] == ["start", "interrupted"]
        (jobs / "filler").unlink()

        # space again: the paid trial is not run twice without the opt-in, nor held twice
        # (and with nothing else in the run, there is nothing to import: the run says so)
        rerun = execute(root, args, "--cores", "1", env=env)
        assert rerun.returncode != 0 and "none of the 1 trial(s) ran" in said(rerun)
        [receipt] = receipts(root).values()
        assert receipt["action"] == "interrupted"
        assert "not run again without execute.rerun_interrupted: true" in receipt["refused"]
        assert [e["event"] for e in live_ledger(root)] == ["start", "interrupted"]
        again = paid(root, [{"agent": SPEND_AGENT}], max_cost_usd=1000, rerun_interrupted=True)
        done = execute(root, again, "--cores", "1", env={**env, "AFBENCH_TEST_SPEND_STEPS": "1"})
        assert done.returncode == 0, said(done)[-3000:]
        [receipt] = receipts(root).values()
        [ran] = receipt["trials"]
        assert receipt["action"] == "harbor run" and ran["cost_usd"] == 1
        assert [p.name for p in Path(receipt["job_dir"]).iterdir() if p.is_dir()] == [
            ran["trial_name"]
        ]
        entries = live_ledger(root)
        assert [e["event"] for e in entries] == ["start", "interrupted", "start", "finish"]
        assert entries[1]["held_usd"] == 200 and entries[3]["cost_usd"] == 1
        assert docker_leftovers(jobs) == []
    finally:
        subprocess.run(["umount", str(jobs)], check=False)


@pytest.mark.snakemake
def test_execute_follows_the_upgrade_plan_and_reruns_only_its_reruns(tmp_path):
    """On the demo's two revisions, an execute item with `upgrade: true` plans trials of
    exactly the tasks the upgrade plan reruns (the demo's 5: a statement, a verifier Harbor
    cannot regrade, an environment, an added task, a statement under a patch bump), nothing
    else, with the guard's cost line the plan's own; the previous release's results are
    carried over only for tasks the plan reuses."""
    from afbench.release import demo

    root = project(tmp_path)
    first = yaml.safe_load((root / "config/demo.yaml").read_text())["release"]["revision"]
    second = yaml.safe_load((root / "config/demo-upgrade.yaml").read_text())["release"]["revision"]
    item = {"selection": "upgrade-all", "agent": COST_AGENT}
    (root / "up.yaml").write_text(
        yaml.safe_dump(
            {
                "selections": {"upgrade-all": {}},
                "plans": {"environment_type": "docker", "items": [item]},
                "execute": {
                    "items": [{**item, "upgrade": True}],
                    "allow_model_agents": True,
                    "max_cost_usd": 5000,
                },
            }
        )
    )
    upgrade = ["--configfile", "config/demo.yaml", "config/demo-upgrade.yaml", "up.yaml"]
    # the first revision's tree, as config/demo-upgrade.yaml says (its executed report
    # compares results across the revisions)
    snakemake(root, "imports", "runs", "digests", "--configfile", "config/demo.yaml")
    # results of the first revision's run, where its execute writes them: one of a task the
    # plan reuses, one of a task it reruns (only the receipts' places matter to the DAG)
    old = root / "results" / first / "execute/upgrade-all/cost_agent__CostAgent"
    reused, rerun = "demo_s01_t001", demo.UPGRADE["statement-changed"]
    for task in (reused, rerun):
        (old / task).mkdir(parents=True)
        (old / task / "attempt-1.json").write_text("{}")
    snakemake(root, "diff", "plans", *upgrade)
    plan = json.loads((root / "results" / second / "upgrade/plan.json").read_text())
    reruns = sorted(t["task_id"] for t in plan["tasks"] if t["action"] == "rerun")
    made = sorted(task for kind, task in demo.UPGRADE.items() if kind != "removed")
    assert reruns == made and len(reruns) == 5
    dry = snakemake(root, "execute", "-n", *upgrade)
    out = dry.stdout + dry.stderr
    planned_trials = sorted(set(re.findall(r"task=(demo_[a-z0-9_]+), attempt=1", out)))
    assert planned_trials == reruns  # exactly the plan's reruns, nothing else
    assert re.search(r"^run_trial +5$", out, re.MULTILINE)
    assert f"afbench execute: {plan['cost']['line']}" in out  # the guard's line is the plan's
    assert "5 trial(s), 5 with a model agent; worst-case cost USD 1000" in plan["cost"]["line"]
    assert "reruns 5 task(s); reuses 336 (carried over: 1 earlier result(s)" in out
    imported = re.search(r"rule import_executed:\n    input: ([^\n]*)", out).group(1)
    assert f"{first}/execute/upgrade-all/cost_agent__CostAgent/{reused}/attempt-1.json" in (
        imported
    )
    assert f"{first}/execute/upgrade-all/cost_agent__CostAgent/{rerun}/" not in imported


# --- a clean, stated environment ---------------------------------------------------------------
def test_each_step_gets_only_the_allowlist_the_named_variables_and_its_settings(
    tmp_path, monkeypatch, capfd
):
    monkeypatch.setenv("AFBENCH_TEST_SECRET", "never-seen")
    monkeypatch.setenv("AFBENCH_TEST_KEY", "passed-by-name")
    dump = "import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], 'w'))"
    steps = {
        name: {"argv": [sys.executable, "-c", dump, str(tmp_path / f"{name}.json")]}
        for name in ("export", "check")
    }
    steps["run"] = {
        "argv": [sys.executable, "-c", dump, str(tmp_path / "run.json")],
        "env": {"HARBOR_TELEMETRY": "0"},
    }
    stated = run_steps(steps, {"FROM_CONFIG": "1"}, ["AFBENCH_TEST_KEY"])
    seen = json.loads((tmp_path / "run.json").read_text())
    assert "AFBENCH_TEST_SECRET" not in seen and seen["AFBENCH_TEST_KEY"] == "passed-by-name"
    assert seen["FROM_CONFIG"] == "1" and seen["HARBOR_TELEMETRY"] == "0"
    others = set(seen) - {"AFBENCH_TEST_KEY", "FROM_CONFIG", "HARBOR_TELEMETRY"}
    assert others <= set(ENV_ALLOWLIST) | {"LC_CTYPE"}  # Python may set LC_CTYPE for itself
    assert stated["run"]["HARBOR_TELEMETRY"] == "plan" and stated["export"]["PATH"] == "allowlist"
    log = capfd.readouterr().err
    assert "afbench: run: environment: AFBENCH_TEST_KEY (execute.pass_env)" in log
    assert "never-seen" not in log and "passed-by-name" not in log  # names, never values


def test_a_failing_step_stops_the_trial_its_output_in_the_log(capfd):
    fails = [sys.executable, "-c", "import sys; print('why it failed', file=sys.stderr); exit(3)"]
    with pytest.raises(AfbenchError, match=r"the check step failed .*found 'exit code 3'"):
        run_steps(
            {"export": {"argv": [sys.executable, "-c", ""]}, "check": {"argv": fails}},
            {},
            [],
            names=("export", "check"),
        )
    assert "why it failed" in capfd.readouterr().err


# --- receipts read together: one per trial -----------------------------------------------------
def receipt_file(path: Path, task: str, outcome: str, *costs: float | None, agent="oracle") -> Path:
    """A trial receipt on disk: one attempt of `task` by `agent`, a trial per cost."""
    from afbench.kinds import TRIAL_RECEIPT
    from afbench.kinds.execution import TRIAL

    trials = [declared(TRIAL, outcome=outcome, cost_usd=cost) for cost in costs or (0.0,)]
    made = declared(
        TRIAL_RECEIPT,
        plan={
            "selection": {"name": "s", "selection_sha256": "5" * 64, "tasks": 2},
            "agent": agent,
            "model": None,
            "sha256": "0" * 64,
        },
        task_id=task,
        attempt=1,
        trials=trials,
        outcome=outcome,
    )
    path.write_bytes(json_bytes(made))
    return path


def test_receipts_read_together_are_one_per_trial_in_any_order(tmp_path):
    from afbench.execution.ledger import read_receipts

    a = receipt_file(tmp_path / "a.json", "t1", "accepted", 1.5)
    nop = receipt_file(tmp_path / "nop.json", "t1", "rejected", agent="nop")
    copy = tmp_path / "copy-of-a.json"
    shutil.copyfile(a, copy)
    once = read_receipts([a, nop])
    assert [(r["plan"]["agent"], r["outcome"]) for r in once] == [
        ("nop", "rejected"),
        ("oracle", "accepted"),
    ]
    # the same receipt twice counts once, and the files' order changes nothing
    assert read_receipts([copy, nop, a]) == read_receipts([nop, a]) == once
    forged = receipt_file(tmp_path / "forged.json", "t1", "rejected", 1.5)
    said = set()
    for given in ([forged, a], [a, forged], [a, nop, copy, forged]):
        with pytest.raises(AfbenchError) as refused:
            read_receipts(given)
        [problem] = refused.value.problems
        said.add((problem.file, problem.field, str(refused.value)))
    [(file, field, line)] = said
    assert (file, field) == (str(forged), "outcome")  # each file named, the field, both verdicts
    assert f"this one and {a}" in line and "'accepted'" in line and "'rejected'" in line


def test_a_receipts_cost_is_finite_and_not_negative(tmp_path):
    from afbench.execution.ledger import read_receipts

    negative = receipt_file(tmp_path / "negative.json", "t1", "accepted", 1.0)
    negative.write_text(negative.read_text().replace('"cost_usd": 1.0', '"cost_usd": -1.0'))
    with pytest.raises(AfbenchError) as refused:
        read_receipts([negative])
    [problem] = refused.value.problems
    assert (problem.file, problem.field) == (str(negative), "trials[0].cost_usd")
    infinite = receipt_file(tmp_path / "infinite.json", "t1", "accepted", 1.0)
    infinite.write_text(infinite.read_text().replace('"cost_usd": 1.0', '"cost_usd": 1e999'))
    with pytest.raises(AfbenchError, match="overflows"):
        read_receipts([infinite])
    # each 1e308 is a finite float; their sum is not: refused where it overflows
    one = receipt_file(tmp_path / "one.json", "t1", "accepted", 1e308)
    two = receipt_file(tmp_path / "two.json", "t2", "accepted", 1.0, 1e308)
    assert read_receipts([one])[0]["trials"][0]["cost_usd"] == 1e308
    for given in ([one, two], [two, one]):
        with pytest.raises(AfbenchError, match="add up beyond a float's range") as refused:
            read_receipts(given)
        [problem] = refused.value.problems
        assert (problem.file, problem.field) == (str(two), "trials[1].cost_usd")


# --- only what afbench built, and the money guard on what actually runs -----------------------
def run_trial_flags(tmp_path: Path, **more: str) -> list[str]:
    flags = {
        "task": TASK,
        "attempt": "1",
        "allow-model-agent": "false",
        "max-cost-usd": "",
        "ledger": str(tmp_path / "jobs.ledger.jsonl"),
        "output": str(tmp_path / "receipt.json"),
        **more,
    }
    return [f"--{k}={v}" for k, v in flags.items()]


def test_run_trial_refuses_a_plan_that_is_not_the_one_afbench_builds(tmp_path, checkout):
    fields = plan_fields(tmp_path, checkout, "nop", HARBOR)
    plan = tmp_path / "nop.json"
    job("write-plan", *fields, f"--output={plan}")
    doc = json.loads(plan.read_text())
    argv = doc["tasks"][0]["run"]["argv"]
    argv[argv.index("-q") :] = ["--timeout-multiplier", "2", *argv[argv.index("-q") :]]
    plan.write_text(json.dumps(doc))
    with pytest.raises(AfbenchError) as refused:
        job("run-trial", f"--plan={plan}", *fields, *run_trial_flags(tmp_path))
    message = str(refused.value)
    assert "the plan is not the one afbench builds from its fields and the pinned release" in (
        message
    )
    assert 'tasks[0].run.argv[15] is "--timeout-multiplier", not "-q"' in message
    assert "tasks[0].run.argv has 20 items, not 18" in message
    # the config's agent is not the plan's: the rebuilt plan names it
    job("write-plan", *fields, f"--output={plan}")
    oracle = [f if not f.startswith("--agent=") else "--agent=oracle" for f in fields]
    with pytest.raises(AfbenchError, match=r'agent is "nop", not "oracle"'):
        job("run-trial", f"--plan={plan}", *oracle, *run_trial_flags(tmp_path))
    assert not (tmp_path / "jobs").exists() and not (tmp_path / "receipt.json").exists()


def test_run_trial_guards_money_on_the_agent_the_argv_runs(tmp_path, checkout):
    fields = plan_fields(tmp_path, checkout, "cost_agent:CostAgent", HARBOR)
    plan = tmp_path / "cost.json"
    job("write-plan", *fields, f"--output={plan}")
    argv = json.loads(plan.read_text())["tasks"][0]["run"]["argv"]
    assert argv[argv.index("-a") + 1] == "cost_agent:CostAgent"
    with pytest.raises(AfbenchError, match="agent 'cost_agent:CostAgent' may call a paid model"):
        job("run-trial", f"--plan={plan}", *fields, *run_trial_flags(tmp_path))
    with pytest.raises(AfbenchError, match="refused without a ceiling"):
        job(
            "run-trial",
            f"--plan={plan}",
            *fields,
            *run_trial_flags(tmp_path, **{"allow-model-agent": "true"}),
        )
    assert not (tmp_path / "jobs").exists()
    check_money("nop", None, False, None)  # model-free: nothing to guard
    with pytest.raises(AfbenchError, match="with model 'p/m' may call a paid model"):
        check_money("codex", "p/m", False, 10)


def test_check_plan_names_every_difference():
    expected = {"agent": "nop", "tasks": [{"run": {"argv": ["harbor", "run"]}}]}
    found = {"agent": "nop", "tasks": [{"run": {"argv": ["harbor", "run", "--ak", "x=1"]}}]}
    with pytest.raises(AfbenchError, match=r"tasks\[0\]\.run\.argv has 4 items, not 2"):
        check_plan(found, expected, "p.json")
    check_plan(expected, json.loads(json.dumps(expected)), "p.json")


def test_a_job_is_finished_when_every_trial_has_a_readable_result(tmp_path):
    job_dir = tmp_path / "job"
    assert job_state(job_dir) == "absent"
    (job_dir / "t__1").mkdir(parents=True)
    assert job_state(job_dir) == "incomplete"  # no result.json of the job
    (job_dir / "result.json").write_text(json.dumps({"finished_at": None, "n_total_trials": 1}))
    assert job_state(job_dir) == "incomplete"  # its one trial has no result
    (job_dir / "t__1" / "result.json").write_text("")  # Harbor's 0-byte file: a full disk
    assert job_state(job_dir) == "incomplete"
    (job_dir / "t__1" / "result.json").write_text('{"cut": ')
    assert job_state(job_dir) == "incomplete"
    # Harbor's resume keeps a trial with its result (one it stopped with SIGINT too, whose
    # job has no finished_at yet), so it never runs again
    (job_dir / "t__1" / "result.json").write_text("{}")
    assert job_state(job_dir) == "finished" and job_finished(job_dir)
    (job_dir / "t__2").mkdir()
    assert job_state(job_dir) == "incomplete"  # a trial more than the job has
    (job_dir / "result.json").write_text("")
    assert not job_finished(job_dir)


def test_the_guard_prints_what_the_run_can_detect_and_what_runs_elsewhere(tmp_path):
    from afbench.execution.approval import approve, planned_trials

    release = {"nominal_budget_usd": 200.0}
    jobs = tmp_path / "jobs"

    def plan(agent: str, n: int) -> dict:
        argv = ["harbor", "run", "-a", agent, "--job-name", "J", "-o", str(jobs)]
        # the job names afbench gives (plan.agent_label: a custom agent's ':' as '__')
        return {
            "tasks": [
                {
                    "task_id": f"t{i}",
                    "job_name": f"j-{agent.replace(':', '__')}-{i}",
                    "export": {},
                    "check": {},
                    "run": {"argv": list(argv)},
                }
                for i in range(n)
            ]
        }

    plans = {("fifty", "nop"): plan("nop", 50), ("fifty", "a__B"): plan("a:B", 50)}
    held = holder_process(jobs / "j-nop-3-attempt-1.lock", tmp_path / "release")
    assert held.stdout.readline().startswith("held")
    try:
        lines, refusal = approve(
            planned_trials(plans, 1), release, 20_000, tmp_path / "jobs.ledger.jsonl"
        )
    finally:
        (tmp_path / "release").touch()
        held.wait(timeout=10)
    assert lines[0] == (
        "afbench execute: 100 trial(s), 50 with a model agent; worst-case cost USD 10000 (50 x "
        "the nominal USD 200 per task)"
    )
    assert lines[1].startswith(
        "afbench execute: selection fifty: 50 task(s) can detect a paired difference of 28.7 pp "
        "or more; exact McNemar (tasks as the unit) at alpha 0.05, power 0.8 (exact), assuming "
        "a baseline success rate of 0.5"
    )
    assert lines[2].startswith(
        "afbench execute: trial j-nop-3-attempt-1 is still running elsewhere (host "
    )
    assert f"pid {held.pid}" in lines[2] and refusal is None
    _, refusal = approve(planned_trials(plans, 1), release, 9_999, tmp_path / "jobs.ledger.jsonl")
    assert refusal == (
        "execute: worst-case cost USD 10000 is over the ceiling execute.max_cost_usd = 9999; "
        "nothing was started (execute.partial: true runs it in rounds of one task per source, "
        "in a stated order, until the ceiling)"
    )
    # a trial the ledger finished is reused (its cost counts once); another run's open one
    # still may spend its worst case
    path = tmp_path / "jobs.ledger.jsonl"

    def trial(name: str) -> dict:
        return {"job_name": name, "task_id": "t0", "attempt": 1, "agent": "a:B", "model": None}

    ledger.start(path, trial("j-a__B-0-attempt-1"), 200, None)
    ledger.finish(path, trial("j-a__B-0-attempt-1"), [350.0], paid=True, cap_usd=200)
    ledger.start(path, trial("another-run"), 200, None)
    lines, refusal = approve(planned_trials(plans, 1), release, 10_349, path)
    assert refusal == (
        "execute: worst-case cost USD 10350 (USD 550 spent or held by the live ledger + 49 "
        "unfinished trial(s) x USD 200) is over the ceiling execute.max_cost_usd = 10349; "
        "nothing was started (execute.partial: true runs it in rounds of one task per source, "
        "in a stated order, until the ceiling)"
    )
    assert approve(planned_trials(plans, 1), release, 10_350, path)[1] is None


def test_before_the_plans_the_guard_counts_what_the_config_will_plan(tmp_path):
    from afbench.execution.approval import approve, selection_size, unplanned_trials

    assert selection_size({"tasks": ["a", "b"], "sources": [], "limit": None}, 341) == 2
    assert selection_size({"tasks": [], "sources": [], "limit": 5}, 341) == 5
    assert selection_size({"tasks": [], "sources": [], "limit": None}, 341) == 341
    assert selection_size({"tasks": [], "sources": ["s"], "limit": 5}, 341) is None
    items = {("all", "nop"): "nop", ("all", "codex__p__m"): "codex"}
    trials = unplanned_trials(items, {"all": 341}, 2)
    lines, refusal = approve(trials, {"nominal_budget_usd": 200.0}, 1000, tmp_path / "none")
    assert lines[0] == (
        "afbench execute: 1364 trial(s), 682 with a model agent; worst-case cost USD 136400 "
        "(682 x the nominal USD 200 per task) (counted from the config: the plans are not "
        "written yet)"
    )
    assert "341 task(s) can detect a paired difference of 11.0 pp or more" in lines[1]
    assert refusal.startswith("execute: worst-case cost USD 136400 is over the ceiling")
    assert unplanned_trials(items, {"all": None}, 1) is None


def trajectory(path: Path, costs: list[float | None], total: float | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    steps = [
        {"step_id": i, "source": "agent", "metrics": {"cost_usd": c} if c is not None else None}
        for i, c in enumerate(costs, start=1)
    ]
    doc = {"schema_version": "ATIF-v1.7", "agent": {"name": "a"}, "steps": steps}
    if total is not None:
        doc["final_metrics"] = {"total_cost_usd": total}
    path.write_text(json.dumps(doc))


def test_the_running_cost_is_what_the_trajectories_show_or_nothing(tmp_path):
    job_dir = tmp_path / "job"
    seen: dict = {}
    assert running_cost(job_dir, seen) is None  # no job yet
    (job_dir / "t__1" / "agent").mkdir(parents=True)
    assert running_cost(job_dir, seen) is None  # an agent that writes no trajectory
    trajectory(job_dir / "t__1/agent/trajectory.json", [1.5, None, 2.0])
    assert running_cost(job_dir, seen) == 3.5
    trajectory(job_dir / "t__1/agent/trajectory.json", [1.5, 2.0, 3.0], total=10.0)
    assert running_cost(job_dir, seen) == 10.0  # the running total, when it is more
    # a file caught mid-write keeps its last good reading
    (job_dir / "t__1/agent/trajectory.json").write_text('{"steps": [')
    assert running_cost(job_dir, seen) == 10.0
    # a continuation (terminus-2's linear history) and a second trial of the job
    trajectory(job_dir / "t__1/agent/trajectory.cont-1.json", [20.0])
    trajectory(job_dir / "t__2/agent/trajectory.json", [4.0])
    assert running_cost(job_dir, seen) == 24.0
    # what is not a cost never counts: NaN is not JSON, a negative or a boolean is no cost
    for bad in (
        '{"steps": [{"metrics": {"cost_usd": NaN}}]}',
        '{"steps": [{"metrics": {"cost_usd": -5}}], "final_metrics": {"total_cost_usd": true}}',
    ):
        (job_dir / "t__2/agent/trajectory.json").write_text(bad)
        assert running_cost(job_dir, {}) == 20.0


def test_a_partial_runs_rounds_keep_every_source_within_one_task_of_the_others():
    sources = {f"s{s}_t{t}": f"s{s}" for s in range(1, 5) for t in range(1, 2 + 3 * s)}
    tasks = {"sel": sorted(sources)}
    rounds = partial_rounds(tasks, sources, {"sel": "ab" * 32})
    assert set(rounds) == {("sel", t) for t in sources}
    assert max(rounds.values()) == 13  # the largest source's 13 tasks
    for last in range(1, 14):
        done = Counter(sources[t] for (_, t), r in rounds.items() if r <= last)
        # every source that has tasks left has exactly `last` done: a stratified selection
        assert all(n == min(last, 1 + 3 * int(s[1:])) for s, n in done.items())
    # the same seed gives the same order; another selection's seed another one
    assert partial_rounds(tasks, sources, {"sel": "ab" * 32}) == rounds
    assert partial_rounds(tasks, sources, {"sel": "cd" * 32}) != rounds


def the_plan(tmp_path: Path, checkout: Path, agent: str, environment: str) -> dict:
    from afbench.plans.plan import build_plan

    release = identity(load_config([REPO / "config/demo.yaml"])["release"])
    catalog = {"release": release, "license": "x", "tasks": [{"task_id": TASK}]}
    selection = {
        "name": "one",
        "task_ids": [TASK],
        "selection_sha256": "0" * 64,
        "release": release,
    }
    return build_plan(
        catalog,
        selection,
        agent,
        None,
        str(checkout),
        "tasks",
        str(tmp_path / "jobs"),
        environment,
        str(tmp_path / "no-harbor"),
    )


DEAD_START = """
import sys
from pathlib import Path
from afbench.core import locking
path = Path(sys.argv[1])
t = {"job_name": sys.argv[2], "task_id": sys.argv[3], "attempt": 1, "agent": sys.argv[4],
     "model": None}
with locking.held(path.with_name(path.name + ".lock")):
    locking.append_event(path, {"event": "start", **t, "worst_case_usd": 200.0})
"""


def broken_job(job_dir: Path) -> Path:
    """What Harbor leaves when the disk fills mid-trial: its files there, but empty."""
    trial = job_dir / f"{TASK}__Xy7aBcD"
    (trial / "agent").mkdir(parents=True)
    (job_dir / "config.json").write_text("{}")
    (job_dir / "result.json").write_text("")
    (trial / "config.json").write_text("{}")
    (trial / "result.json").write_text("")
    return trial


def test_after_a_full_disk_a_paid_trial_is_held_at_its_cap_and_not_run_again(tmp_path, checkout):
    # (an environment without a container engine to clean: the docker case is
    # tests/execution/test_trial.py's, with real containers)
    plan = the_plan(tmp_path, checkout, "cost_agent:CostAgent", "singularity")
    name = f"{plan['tasks'][0]['job_name']}-attempt-1"
    job_dir = tmp_path / "jobs" / name
    broken_job(job_dir)
    path = tmp_path / "jobs.ledger.jsonl"
    args = [sys.executable, "-c", DEAD_START, str(path), name, TASK, "cost_agent:CostAgent"]
    subprocess.run(args, check=True, timeout=60)  # its holder reserved, then died
    assert job_state(job_dir) == "incomplete"

    def never(job_dir):
        raise AssertionError("no Harbor job is read: none ran")

    receipt = execute_trial(
        plan,
        "0" * 64,
        TASK,
        1,
        extra_env={},
        pass_env=[],
        ceiling_usd=1000,
        ledger_path=path,
        read_job=never,
    )
    assert receipt["action"] == "interrupted" and receipt["trials"] == []
    assert "not run again without execute.rerun_interrupted: true" in receipt["refused"]
    now = ledger.state(ledger.read_entries(path))
    assert (now["open"], now["held_usd"], now["spent_usd"]) == ([], 200, 0)
    [held] = now["interrupted"]
    assert "died after Harbor began the trial; it left no result" in held["reason"]
    assert not job_dir.exists()  # out of Harbor's way, kept as evidence
    [aside] = (tmp_path / "jobs").glob(f"{name}.interrupted-*")
    assert (aside / f"{TASK}__Xy7aBcD" / "result.json").read_bytes() == b""
    # run again without the opt-in: the same answer, and nothing held twice
    again = execute_trial(
        plan,
        "0" * 64,
        TASK,
        1,
        extra_env={},
        pass_env=[],
        ceiling_usd=1000,
        ledger_path=path,
        read_job=never,
    )
    assert again["action"] == "interrupted"
    assert ledger.state(ledger.read_entries(path))["held_usd"] == 200
    log = [json.loads(x) for x in (tmp_path / "jobs" / f"{name}.lock.log").read_text().splitlines()]
    assert [e.get("action") for e in log if e["event"] == "released"] == ["interrupted"] * 2


def test_after_a_full_disk_a_model_free_trial_runs_again(tmp_path, checkout):
    """The rerun sets the broken folder aside and starts Harbor afresh (here a Harbor that is
    not installed: the trial fails before Harbor, and its hold is released)."""
    plan = the_plan(tmp_path, checkout, "nop", "singularity")
    name = f"{plan['tasks'][0]['job_name']}-attempt-1"
    job_dir = tmp_path / "jobs" / name
    broken_job(job_dir)
    path = tmp_path / "jobs.ledger.jsonl"
    subprocess.run(
        [sys.executable, "-c", DEAD_START, str(path), name, TASK, "nop"], check=True, timeout=60
    )
    from afbench.core.errors import AfbenchError

    with pytest.raises(AfbenchError, match="cannot start the run step: program not found"):
        execute_trial(
            plan,
            "0" * 64,
            TASK,
            1,
            extra_env={},
            pass_env=[],
            ceiling_usd=None,
            ledger_path=path,
            read_job=lambda d: [],
        )
    events = [e["event"] for e in ledger.read_entries(path)]
    assert events == ["start", "interrupted", "start", "released"]
    assert len(list((tmp_path / "jobs").glob(f"{name}.interrupted-*"))) == 1


@pytest.mark.snakemake
def test_a_paid_run_of_one_configuration_starts_only_under_its_sealed_plan(tmp_path):
    """Every paid run has a sealed plan: an agent that may call a model, allowed and under a
    ceiling, with no comparison configured, is refused before any ledger line or Harbor call
    until `snakemake preregister` seals its selection, configuration, caps and estimate; a
    changed ceiling is refused against that plan; model-free agents need none."""
    root = project(tmp_path)
    paid = [{"agent": "claude-code", "model": "anthropic/claude-opus-4-1"}]
    args = overlay(root, paid, allow_model_agents=True, max_cost_usd=1000)
    ledger_path = out_dir(root) / "jobs.ledger.jsonl"
    assert_one_line_refusal(
        snakemake(root, "execute", *args, check=False),
        "no sealed plan for the paid run of claude-code__anthropic__claude-opus-4-1 on "
        "exec-two: a paid run starts only after its plan is sealed",
    )
    assert not ledger_path.exists() and not (out_dir(root) / "jobs").exists()
    snakemake(root, "preregister", *args)
    sealed = (
        out_dir(root) / "execute/run-plans/exec-two/claude-code__anthropic__claude-opus-4-1.json"
    )
    plan = json.loads(sealed.read_text())
    assert plan["kind"] == "afbench sealed run plan"
    assert plan["configuration"]["agent"] == "claude-code"
    assert plan["money"] == {
        "per_trial_cap_usd": 200.0,
        "ceiling_usd": 1000.0,
        "worst_case_usd": 400.0,
    }
    assert plan["selection"]["tasks"] == 2 and plan["estimate"]["estimand"].startswith(
        "the success rate of claude-code__anthropic__claude-opus-4-1"
    )
    dry = snakemake(root, "execute", "-n", *args)
    assert "a real run is refused" not in said(dry)
    raised = overlay(root, paid, allow_model_agents=True, max_cost_usd=2000)
    assert_one_line_refusal(
        snakemake(root, "execute", *raised, check=False),
        "field 'money.ceiling_usd': differs from the sealed run plan",
    )
    assert not ledger_path.exists() and not (out_dir(root) / "jobs").exists()
    free = overlay(root, [{"agent": "nop"}, {"agent": "oracle"}])
    assert "afbench: refused" not in said(snakemake(root, "execute", "-n", *free))
