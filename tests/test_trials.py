"""What keeps `snakemake execute` safe with money, piece by piece and for real (real processes,
real files, a real git checkout): one copy of each trial (a POSIX lock that a second process
waits for and a dead holder never keeps), the live cost ledger shared by concurrent writers,
a clean stated environment for every step, a plan that must be the one afbench builds, the
money guard on the agent the argv runs, and the protocol checks of an imported run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from afbench import conformance, harbor, ledger, locking
from afbench.config import load_config
from afbench.errors import AfbenchError
from afbench.execute import ENV_ALLOWLIST, check_money, check_plan, job_finished, run_steps
from afbench.records import CATALOG, SELECTION, TRIAL_RECEIPT, record
from afbench.release import identity

from conftest import HARBOR, REPO, harbor_skip_reason, job

TASK = "demo_s01_t001"


# --- one copy of each trial: the lock ---------------------------------------------------------
HOLD = """
import sys, time
from pathlib import Path
from afbench import locking
lock, release = Path(sys.argv[1]), Path(sys.argv[2])
def waiting(who):
    print("waiting for", who["pid"], flush=True)
with locking.held(lock, on_wait=waiting, poll_s=0.05) as me:
    print("held", me["pid"], flush=True)
    while not release.exists():
        time.sleep(0.02)
print("released", flush=True)
"""


def holder_process(lock: Path, release: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock), str(release)],
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_second_copy_waits_for_the_first_and_a_dead_holder_blocks_nobody(tmp_path):
    lock = tmp_path / "jobs" / "trial.lock"
    first = holder_process(lock, tmp_path / "release-first")
    assert first.stdout.readline().split() == ["held", str(first.pid)]
    who = locking.holder(lock)
    assert who["pid"] == first.pid and who["host"] and who["since"]
    second = holder_process(lock, tmp_path / "release-second")
    assert second.stdout.readline().split() == ["waiting", "for", str(first.pid)]
    time.sleep(0.3)
    assert second.poll() is None and locking.holder(lock)["pid"] == first.pid  # still waiting
    (tmp_path / "release-first").touch()
    assert first.stdout.readline().strip() == "released"
    assert second.stdout.readline().split() == ["held", str(second.pid)]
    assert locking.holder(lock)["pid"] == second.pid
    os.kill(second.pid, signal.SIGKILL)  # the holder dies: the kernel drops its lock
    second.wait(timeout=10)
    first.wait(timeout=10)
    assert locking.holder(lock) is None
    with locking.held(lock) as me:
        assert locking.holder(lock) == me  # never opens a lock file this process holds
    assert locking.holder(lock) is None


# --- the live cost ledger ----------------------------------------------------------------------
def trial(name: str) -> dict:
    return {"job_name": name, "task_id": TASK, "attempt": 1, "agent": "a:B", "model": None}


def test_a_trial_starts_only_within_the_ceiling_counting_open_worst_cases(tmp_path):
    path = tmp_path / "jobs.ledger.jsonl"
    assert ledger.start(path, trial("t1"), 200, 500) is None
    assert ledger.start(path, trial("t2"), 200, 500) is None
    refused = ledger.start(path, trial("t3"), 200, 500)  # 0 spent + 400 open + 200 > 500
    assert refused.startswith("cost ceiling: spent USD 0 + USD 400 for the trials started")
    assert "= USD 600 is over execute.max_cost_usd = 500; not started" in refused
    ledger.finish(path, trial("t1"), [30.5], paid=True, nominal=200)
    ledger.finish(path, trial("t2"), [None], paid=True, nominal=200)  # no cost: its worst case
    assert ledger.state(ledger.read_entries(path))["spent_usd"] == 230.5
    assert ledger.start(path, trial("t3"), 200, 500) is None  # 230.5 + 200 <= 500
    # t3 is interrupted (no finish); its rerun replaces its own open worst case, no other's
    assert ledger.start(path, trial("t3"), 200, 500) is None
    assert ledger.start(path, trial("t4"), 200, 500).startswith(
        "cost ceiling: spent USD 230.5 + USD 200"
    )
    assert ledger.start(path, trial("nop"), 0, None) is None  # no ceiling: model-free
    events = [(e["event"], e["job_name"]) for e in ledger.read_entries(path)]
    assert events.count(("refused", "t3")) == 1 and events[-1] == ("start", "nop")
    assert all(e["host"] and e["pid"] == os.getpid() for e in ledger.read_entries(path))
    (path.parent / "bad.jsonl").write_text('{"event": "start"}\n{"no": 1}\n')
    with pytest.raises(AfbenchError, match="row 2: not a cost-ledger entry"):
        ledger.read_entries(path.parent / "bad.jsonl")


APPEND = """
import sys
from pathlib import Path
from afbench import ledger
path, me = Path(sys.argv[1]), sys.argv[2]
for i in range(25):
    t = {"job_name": f"{me}-{i}", "task_id": "t", "attempt": 1, "agent": "a:B", "model": None}
    assert ledger.start(path, t, 1, None) is None
    ledger.finish(path, t, [0.01], paid=True, nominal=1)
"""


def test_concurrent_trial_jobs_share_one_ledger_without_losing_an_entry(tmp_path):
    path = tmp_path / "jobs.ledger.jsonl"
    writers = [
        subprocess.Popen([sys.executable, "-c", APPEND, str(path), f"w{n}"]) for n in range(6)
    ]
    assert [w.wait(timeout=120) for w in writers] == [0] * 6
    entries = ledger.read_entries(path)
    assert len(entries) == 6 * 25 * 2
    assert ledger.state(entries)["spent_usd"] == pytest.approx(1.5)
    assert ledger.state(entries)["open"] == []


def receipt(name: str, refused: str | None = None) -> dict:
    return record(
        TRIAL_RECEIPT,
        release={"revision": "a" * 40},
        task_id=TASK,
        attempt=1,
        job_name=name,
        run_agent="a:B",
        run_model=None,
        worst_case_usd=200.0,
        refused=refused,
    )


def test_the_cost_ledger_artifact_covers_its_trials_beside_the_ceiling(tmp_path):
    path = tmp_path / "jobs.ledger.jsonl"
    ledger.start(path, trial("t1"), 200, 300)
    ledger.finish(path, trial("t1"), [250.0], paid=True, nominal=200)
    reason = ledger.start(path, trial("t2"), 200, 300)
    files = []
    for name, refused in (("t1", None), ("t2", reason)):
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps(receipt(name, refused)))
    built = ledger.build_ledger(path, files, 300)
    assert (built["spent_usd"], built["ceiling_usd"], built["stopped"]) == (250.0, 300, True)
    assert [(t["job_name"], t["status"], t["cost_usd"]) for t in built["trials"]] == [
        ("t1", "finished", 250.0),
        ("t2", "refused", None),
    ]


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


# --- only what afbench built, and the money guard on what actually runs -----------------------
@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    from afbench import demo

    root = tmp_path_factory.mktemp("upstream") / "demo-upstream"
    demo.build_repository(REPO / "resources/demo-release", root)
    return root


def plan_inputs(tmp_path: Path, checkout: Path, agent: str) -> list[str]:
    release = identity(load_config([REPO / "config/demo.yaml"])["release"])
    catalog = tmp_path / "catalog.json"
    catalog.write_text(
        json.dumps(record(CATALOG, release=release, license="x", tasks=[{"task_id": TASK}]))
    )
    selection = tmp_path / "selection.json"
    selection.write_text(
        json.dumps(
            record(
                SELECTION,
                name="one",
                task_ids=[TASK],
                selection_sha256="0" * 64,
                release=release,
            )
        )
    )
    return [
        f"--catalog={catalog}",
        f"--selection={selection}",
        f"--agent={agent}",
        f"--repository-dir={checkout}",
        "--tasks-dir=tasks",
        f"--jobs-dir={tmp_path / 'jobs'}",
        "--environment-type=docker",
        f"--harbor={HARBOR}",
    ]


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
    fields = plan_inputs(tmp_path, checkout, "nop")
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
    fields = plan_inputs(tmp_path, checkout, "cost_agent:CostAgent")
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


def test_a_job_is_finished_only_with_its_finished_at_and_every_trial_result(tmp_path):
    job_dir = tmp_path / "job"
    (job_dir / "t__1").mkdir(parents=True)
    assert not job_finished(job_dir)
    (job_dir / "result.json").write_text(json.dumps({"finished_at": None, "n_total_trials": 1}))
    (job_dir / "t__1" / "result.json").write_text("{}")
    assert not job_finished(job_dir)
    (job_dir / "result.json").write_text(json.dumps({"finished_at": "x", "n_total_trials": 1}))
    assert job_finished(job_dir)


# --- the protocol-conformance certificate -----------------------------------------------------
def settings(**changed) -> dict:
    from afbench.runs import trial_settings

    base = trial_settings({"agent": {"name": "nop"}, "environment": {"type": "docker"}}, "x")
    return {**base, **changed}


def test_the_protocol_settings_each_name_their_reason():
    assert conformance.settings_reasons(settings()) == []
    assert conformance.settings_reasons(settings(timeout_multiplier=2.0)) == [
        f"changed timeout: the {phase} timeout is multiplied by 2 (timeout_multiplier); the "
        "protocol keeps the upstream per-task timeouts"
        for phase in ("agent", "verifier")
    ]
    only_verifier = settings(timeout_multiplier=2.0, agent_timeout_multiplier=1.0)
    assert [r.split(":")[1] for r in conformance.settings_reasons(only_verifier)] == [
        " the verifier timeout is multiplied by 2 (timeout_multiplier); the protocol keeps the "
        "upstream per-task timeouts"
    ]
    assert conformance.settings_reasons(settings(**{"agent.override_timeout_sec": 10.0})) == [
        "changed timeout: agent.override_timeout_sec is 10.0; the protocol sets none"
    ]
    assert conformance.settings_reasons(settings(**{"agent.kwargs": {"hint": "use simp"}})) == [
        "agent kwargs: agent.kwargs is {'hint': 'use simp'}; the protocol gives the agent none"
    ]
    assert conformance.settings_reasons(settings(extra_instructions=["try ring"])) == [
        "a hint: extra_instructions is ['try ring']; the protocol gives the agent none"
    ]
    custom = settings(**{"environment.type": None, "environment.import_path": "m:Env"})
    assert conformance.settings_reasons(custom) == [
        "environment type custom (m:Env), not the protocol's (docker or singularity)"
    ]
    assert conformance.settings_reasons(settings(**{"environment.override_cpus": 64.0})) == [
        "changed environment: environment.override_cpus is 64.0"
    ]


def attempt(checksum: str | None, **verifier) -> dict:
    return {
        "task_id": TASK,
        "trial_name": f"{TASK}__x",
        "task_checksum": checksum,
        "configuration": "c",
        "verifier": {**harbor.VERIFIER_SETTINGS, **verifier},
    }


def test_the_tasks_and_the_verification_of_a_run_are_certified_per_trial():
    exported = {"tasks": {TASK: {"checksum": "a" * 64, "images": ["base@sha256:" + "1" * 64]}}}
    release = {"images": [{"role": "task-environment", "digest": None}]}
    ok = conformance.certify({"settings": settings()}, [attempt("a" * 64)], exported, release)
    assert ok["conformant"] is True and ok["task_checksums"]["compared"] == 1
    changed = conformance.certify({"settings": settings()}, [attempt("b" * 64)], exported, release)
    assert changed["conformant"] is False
    assert changed["reasons"][0].startswith(f"task {TASK} differs from the exporter's output")
    none = conformance.certify({"settings": settings()}, [attempt("a" * 64)], None, release)
    assert none["reasons"][0].startswith("task checksums not compared: no exporter output")
    unverified = conformance.certify(
        {"settings": settings()}, [attempt("a" * 64, disable=True)], exported, release
    )
    assert unverified["reasons"] == [
        f"verification disabled (verifier.disable) for 1 of 1 trial(s), e.g. {TASK}__x"
    ]
    custom = conformance.certify(
        {"settings": settings()}, [attempt("a" * 64, import_path="v:Mine")], exported, release
    )
    assert custom["reasons"] == [
        "changed verification: verifier.import_path is 'v:Mine' for 1 trial(s)"
    ]
    for digest, named in (("1" * 64, True), ("2" * 64, False)):
        pinned = {"images": [{"role": "task-environment", "digest": f"sha256:{digest}"}]}
        got = conformance.certify({"settings": settings()}, [attempt("a" * 64)], exported, pinned)
        assert got["conformant"] is named, got["reasons"]


def test_an_exported_tasks_images_are_its_from_lines_and_docker_images(tmp_path):
    (tmp_path / "environment").mkdir()
    (tmp_path / "environment/Dockerfile").write_text(
        "FROM --platform=linux/amd64 base@sha256:abc AS build\nRUN x\nfrom other:1\n"
    )
    (tmp_path / "task.toml").write_text(
        '[environment]\ndocker_image = "env:1"\n[verifier.environment]\ndocker_image = "v:2"\n'
    )
    assert conformance.task_images(tmp_path) == ["base@sha256:abc", "env:1", "other:1", "v:2"]


@pytest.mark.harbor
@pytest.mark.skipif(harbor_skip_reason() is not None, reason=str(harbor_skip_reason()))
def test_our_task_checksum_is_harbors_dirhash(tmp_path):
    tree = tmp_path / "task"
    for rel, data in {
        "task.toml": b"[agent]\n",
        "environment/Dockerfile": b"FROM x\n",
        "environment/workspace/.hidden": b"",
        "tests/test.sh": b"#!/bin/bash\n",
        "sp ace/\xc3\xa9.txt": b"\x00\x01",
    }.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes(data)
    (tree / "empty/inner").mkdir(parents=True)  # left out, as dirhash leaves it out
    (tree / "link").symlink_to("environment")
    python = HARBOR.parent / "python"
    dirhash = "import sys, dirhash; print(dirhash.dirhash(sys.argv[1], 'sha256'))"
    theirs = subprocess.run(
        [str(python), "-c", dirhash, str(tree)], capture_output=True, text=True, check=True
    )
    assert harbor.task_checksum(tree) == theirs.stdout.strip()
    with pytest.raises(AfbenchError, match="holds no file"):
        harbor.task_checksum(tree / "empty")


def test_the_report_and_the_frames_carry_the_certificate(tmp_path):
    import afbench.frames as af
    from afbench.analysis import local_run_rows
    from afbench.report import cost_ledger_section, local_runs_section

    from conftest import FIXTURES, afbench

    release = identity(load_config([REPO / "config/demo.yaml"])["release"])
    selection = tmp_path / "selection.json"
    selection.write_text(
        json.dumps(
            record(
                SELECTION,
                name="fixtures",
                release=release,
                selection_sha256="0" * 64,
                task_ids=["hello-pass"],
            )
        )
    )
    out = tmp_path / "runs/fixture"
    afbench(
        "import-run",
        "--selection",
        selection,
        "--name",
        "fixture",
        "--kind",
        "harbor",
        "--path",
        FIXTURES / "demo-nop",
        "--output-dir",
        out,
    )
    summary = json.loads((out / "summary.json").read_text())
    [configuration] = summary["configurations"]
    assert summary["conformant"] is False and configuration["conformant"] is False
    reasons = configuration["conformance"]["reasons"]
    assert reasons[0] == (
        "environment type custom (hostenv:HostEnvironment), not the protocol's (docker or "
        "singularity)"
    )
    assert reasons[1].startswith("task checksums not compared: no exporter output")
    html = local_runs_section(local_run_rows([summary]))
    assert "NOT CONFORMANT ⚠ nop 1.0.0" in html
    assert "NOT CONFORMANT: environment type custom (hostenv:HostEnvironment)" in html
    outcomes = af.run_outcomes(tmp_path / "runs")
    assert str(outcomes.conformant.dtype) == "boolean" and not outcomes.conformant.any()
    assert af.run_attempts(tmp_path / "runs").conformant.tolist() == [False]
    ledger_html = cost_ledger_section(
        {
            "ceiling_usd": 10.0,
            "spent_usd": 12.5,
            "stopped": True,
            "refused": 1,
            "note": "<b>",
            "trials": [
                {
                    "job_name": "<j>",
                    "task_id": TASK,
                    "attempt": 1,
                    "agent": "a:B",
                    "model": None,
                    "status": "refused",
                    "cost_usd": None,
                    "worst_case_usd": 200.0,
                }
            ],
        }
    )
    assert "Spent USD 12.50 of the ceiling USD 10.00" in ledger_html
    assert "Stopped at the ceiling: 1 trial(s) not started." in ledger_html
    assert "<j>" not in ledger_html and "&lt;j&gt;" in ledger_html and "<b>" not in ledger_html


def test_the_guard_prints_what_the_run_can_detect_and_what_runs_elsewhere(tmp_path):
    from afbench.execute import approve, planned_trials

    release = {"nominal_budget_usd": 200.0}
    jobs = tmp_path / "jobs"

    def plan(agent: str, n: int) -> dict:
        argv = ["harbor", "run", "-a", agent, "--job-name", "J", "-o", str(jobs)]
        return {
            "tasks": [
                {
                    "task_id": f"t{i}",
                    "job_name": f"j-{agent}-{i}",
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
        "afbench execute: selection fifty: 50 task(s) can detect a paired difference of 27.4 pp "
        "or more; McNemar at alpha 0.05, power 0.8, assuming a baseline success rate of 0.5"
    )
    assert lines[2].startswith(
        "afbench execute: trial j-nop-3-attempt-1 is still running elsewhere (host "
    )
    assert f"pid {held.pid}" in lines[2] and refusal is None
    _, refusal = approve(planned_trials(plans, 1), release, 9_999, tmp_path / "jobs.ledger.jsonl")
    assert refusal == (
        "execute: worst-case cost USD 10000 is over the ceiling execute.max_cost_usd = 9999; "
        "nothing was started"
    )
    # a trial the ledger finished is reused (its cost counts once); another run's open one
    # still may spend its worst case
    path = tmp_path / "jobs.ledger.jsonl"
    ledger.start(path, trial("j-a:B-0-attempt-1"), 200, None)
    ledger.finish(path, trial("j-a:B-0-attempt-1"), [350.0], paid=True, nominal=200)
    ledger.start(path, trial("another-run"), 200, None)
    lines, refusal = approve(planned_trials(plans, 1), release, 10_349, path)
    assert refusal == (
        "execute: worst-case cost USD 10350 (USD 550 spent or held by the live ledger + 49 "
        "unfinished trial(s) x USD 200) is over the ceiling execute.max_cost_usd = 10349; "
        "nothing was started"
    )
    assert approve(planned_trials(plans, 1), release, 10_350, path)[1] is None


def test_before_the_plans_the_guard_counts_what_the_config_will_plan(tmp_path):
    from afbench.execute import approve, selection_size, unplanned_trials

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
    assert "341 task(s) can detect a paired difference of 10.7 pp or more" in lines[1]
    assert refusal.startswith("execute: worst-case cost USD 136400 is over the ceiling")
    assert unplanned_trials(items, {"all": None}, 1) is None
