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
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from afbench import locking

from conftest import (
    HARBOR,
    REPO,
    SNAKEMAKE,
    demo_revision,
    docker_leftovers,
    docker_skip_reason,
    harbor_skip_reason,
    project,
    slurm_skip_reason,
    snakemake,
    snakemake_env,
)

pytestmark = pytest.mark.snakemake
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


def test_every_refusal_of_execute_is_one_line_and_nothing_starts(tmp_path):
    root = project(tmp_path)
    paid = [{"agent": "nop"}, {"agent": "claude-code", "model": "anthropic/claude-opus-4-1"}]
    # before any plan is written, the guard counts what the config will plan: refused before
    # a single job runs, not after the plans
    fresh = snakemake(
        root,
        "execute",
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
        "all, too few tasks; McNemar at alpha 0.05, power 0.8, assuming a baseline success "
        "rate of 0.5" in said(over)
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


def trial_env(root: Path) -> dict:
    """The controller's environment: the cost agent's folder importable by Harbor (through
    execute.env) and a cost the agent reports only if it gets through (execute.pass_env)."""
    return {**snakemake_env(), "AFBENCH_TEST_AGENT_COST_USD": "500"}


@pytest.mark.harbor
@pytest.mark.docker
def test_the_live_ceiling_stops_new_trials_and_a_higher_one_resumes_them(tmp_path):
    reason = harbor_skip_reason() or docker_skip_reason()
    if reason:
        pytest.skip(reason)
    root = project(tmp_path)

    def args(ceiling):
        return overlay(
            root,
            [{"agent": COST_AGENT}],
            tasks=TASKS[:1],
            attempts=2,
            allow_model_agents=True,
            max_cost_usd=ceiling,
            env={"PYTHONPATH": str(REPO / "tests" / "harbor_agents")},
            pass_env=["AFBENCH_TEST_AGENT_COST_USD"],
        )

    def run(ceiling):
        # one trial at a time, so which one the ceiling stops is fixed: 0 spent + USD 200
        # worst case fits USD 400; then 500 spent + 200 does not
        return subprocess.run(
            [SNAKEMAKE, "execute", "--cores", "1", *args(ceiling)],
            cwd=root,
            env=trial_env(root),
            capture_output=True,
            text=True,
            timeout=600,
        )

    first = run(400)
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
    assert (
        "= USD 700 is over execute.max_cost_usd = 400; not started"
        in (by_status["refused"]["refused"])
    )
    jobs = out / "jobs"
    assert len([p for p in jobs.iterdir() if p.is_dir()]) == 1  # the refused one never began
    live = [json.loads(line) for line in (out / "jobs.ledger.jsonl").read_text().splitlines()]
    assert [e["event"] for e in live] == ["start", "finish", "refused"]
    html = (out / "report/executed/index.html").read_text()
    assert "Spent USD 500.00 of the ceiling USD 400.00" in html
    assert "Stopped at the ceiling: 1 trial(s) not started." in html
    summary = json.loads((out / "runs/executed-exec-two/summary.json").read_text())
    assert summary["conformant"] is True  # the demo's own executed run follows the protocol
    [configuration] = summary["configurations"]
    assert configuration["counts"]["rejected"] == 1 and configuration["attempts"]["total"] == 1

    # the same ceiling again: what the ledger spent counts, so the rest cannot fit
    assert_one_line_refusal(
        subprocess.run(
            [SNAKEMAKE, "execute", "-n", *args(400)],
            cwd=root,
            env=trial_env(root),
            capture_output=True,
            text=True,
            timeout=300,
        ),
        "execute: worst-case cost USD 700 (USD 500 spent or held by the live ledger + 1 "
        "unfinished trial(s) x USD 200) is over the ceiling execute.max_cost_usd = 400",
    )
    again = run(1000)  # a higher ceiling: the refused trial runs, the finished one is reused
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


@pytest.mark.harbor
@pytest.mark.docker
@pytest.mark.slurm
def test_execute_on_slurm_killed_and_rerun_at_once_runs_every_trial_exactly_once(tmp_path):
    reason = harbor_skip_reason() or docker_skip_reason() or slurm_skip_reason()
    if reason:
        pytest.skip(reason)
    root = project(tmp_path)
    args = [*overlay(root, [{"agent": "nop"}, {"agent": "oracle"}]), "--profile", "profiles/slurm"]
    # everything but the trials is light work that runs where Snakemake runs (localrules)
    snakemake(root, "plans", *args)

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
    said_first = first.communicate()[0]
    assert "submitted" in said_first.lower() and "slurm" in said_first.lower(), said_first[-3000:]
    trial = lock.name.removesuffix(".lock")
    # a duplicate submission of the running trial: its rule's own command, sent to the free
    # slot with sbatch (its receipt elsewhere); it must wait for the first copy, then reuse it
    dry = snakemake(root, "execute", "-n", "-p", *args)
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
    snakemake(root, "--unlock", *args)
    rerun = subprocess.run(  # at once, while the first copy still runs
        [SNAKEMAKE, "execute", *args],
        cwd=root,
        env=snakemake_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert rerun.returncode == 0, said(rerun)[-3000:]
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
    # the copy of the trial that was running when the controller died deferred to it
    log = [json.loads(line) for line in Path(f"{lock}.log").read_text().splitlines()]
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
