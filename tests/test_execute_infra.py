"""The pieces the execute stage stands on, each real: the demo release's exporter writes Harbor
0.22.0 task directories whose grader scores the untouched workspace 0 and the oracle's solution
1; Harbor 0.22.0 itself (from `make harbor`) runs `nop` and `oracle` on them through the plan's
argv in its own `docker` environment (a Docker engine from `make docker`), leaving no container
behind, and reports the cost afbench's test agent (tests/harbor_agents) says it spent; and a
Snakemake job goes through profiles/slurm to a real SLURM cluster (from `make slurm`)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from afbench import demo
from afbench.config import load_config
from afbench.plan import build_plan
from afbench.release import identity
from afbench.runs import read_harbor_job

from conftest import (
    HARBOR,
    REPO,
    docker_leftovers,
    docker_skip_reason,
    harbor_skip_reason,
    slurm_skip_reason,
)

TASK = "demo_s01_t001"
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """The demo release as the git checkout a plan points at, at the pinned revision."""
    root = tmp_path_factory.mktemp("upstream") / "demo-upstream"
    demo.build_repository(REPO / "resources/demo-release", root)
    return root


def plan_for(checkout: Path, agent: str, jobs: Path, environment: str = "docker") -> dict:
    config = load_config([REPO / "config/demo.yaml"])
    release = identity(config["release"])
    catalog = {"release": release, "license": "synthetic", "tasks": [{"task_id": TASK}]}
    selection = {
        "name": "infra",
        "task_ids": [TASK],
        "selection_sha256": "0" * 64,
        "release": release,
    }
    plan = build_plan(
        catalog, selection, agent, None, str(checkout), "tasks", str(jobs), environment
    )
    return plan["tasks"][0]


def run(argv: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def python_argv(step: dict) -> list[str]:
    assert step["argv"][0] == "python"
    return [sys.executable, *step["argv"][1:]]


def grade(task_dir: Path, workspace: Path, logs: Path) -> tuple[str, str]:
    result = run(
        ["bash", str(task_dir / "tests/test.sh")],
        task_dir,
        {"WORKSPACE": str(workspace), "VERIFIER_LOGS": str(logs)},
    )
    assert result.returncode == 0, result.stderr
    return (logs / "reward.txt").read_text().strip(), result.stdout


def test_exporter_writes_the_task_the_plan_runs_and_its_grader_scores_0_and_1(checkout, tmp_path):
    step = plan_for(checkout, "nop", tmp_path / "jobs")
    exported = run(python_argv(step["export"]), Path(step["export"]["cwd"]))
    assert exported.returncode == 0, exported.stderr
    task_dir = Path(step["run"]["argv"][step["run"]["argv"].index("-p") + 1])
    assert task_dir == checkout / "tasks" / TASK and task_dir.is_dir()
    assert run(python_argv(step["check"]), checkout).returncode == 0

    toml = tomllib.loads((task_dir / "task.toml").read_text())
    assert toml["agent"]["timeout_sec"] == 86400 and toml["verifier"]["timeout_sec"] == 6000
    assert "task" not in toml  # Harbor names the task (and each trial) after the directory
    assert toml["metadata"]["task_id"] == TASK and toml["metadata"]["synthetic"] is True
    assert "sorry" in (task_dir / "environment/workspace/Task.lean").read_text()
    assert "COPY workspace/ /workspace/" in (task_dir / "environment/Dockerfile").read_text()

    workspace = tmp_path / "workspace"
    shutil.copytree(task_dir / "environment/workspace", workspace)
    assert grade(task_dir, workspace, tmp_path / "logs-0") == (
        "0",
        f"rejected: {workspace}/Task.lean is unchanged (every proof is still sorry)\n",
    )
    lean = workspace / "Task.lean"
    lean.write_text(lean.read_text().replace("sorry", "decide", 1))
    assert grade(task_dir, workspace, tmp_path / "logs-wrong")[0] == "0"

    solve = run(
        ["bash", str(task_dir / "solution/solve.sh")], task_dir, {"WORKSPACE": str(workspace)}
    )
    assert solve.returncode == 0, solve.stderr
    assert "sorry" not in lean.read_text().split("\n\nnamespace", 1)[1]
    assert grade(task_dir, workspace, tmp_path / "logs-1")[0] == "1"


def test_export_is_idempotent_and_check_names_every_difference(checkout, tmp_path):
    exporter = [sys.executable, str(checkout / "harbor/export.py")]
    out = tmp_path / "elsewhere"
    first = run([*exporter, "--problem", TASK, "--tasks-dir", str(out)], checkout)
    assert first.returncode == 0 and first.stdout.startswith("written:"), first.stderr
    task_dir = out / TASK
    before = {p: p.read_bytes() for p in task_dir.rglob("*") if p.is_file()}
    again = run([*exporter, "--problem", TASK, "--tasks-dir", str(out)], checkout)
    assert again.stdout.startswith("up to date:")
    assert {p: p.read_bytes() for p in task_dir.rglob("*") if p.is_file()} == before

    (task_dir / "tests/test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    (task_dir / "notes.txt").write_text("stray")
    check = run([*exporter, "--problem", TASK, "--tasks-dir", str(out), "--check"], checkout)
    assert check.returncode == 1
    assert "tests/test.sh: content differs from the export" in check.stderr
    assert "notes.txt: not written by the export" in check.stderr
    assert (task_dir / "notes.txt").exists()  # --check changed nothing

    fixed = run([*exporter, "--problem", TASK, "--tasks-dir", str(out)], checkout)
    assert fixed.stdout.startswith("replaced:")
    assert {p: p.read_bytes() for p in task_dir.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in out.iterdir()) == [f".{TASK}.lock", TASK]  # no staging left

    for bad, message in (("demo_nope", "is not in"), ("../x", "is not a task id")):
        refused = run([*exporter, "--problem", bad, "--tasks-dir", str(out)], checkout)
        assert refused.returncode == 2 and message in refused.stderr


def test_concurrent_exports_of_one_task_all_succeed_and_agree(checkout, tmp_path):
    argv = [sys.executable, str(checkout / "harbor/export.py"), "--problem", TASK]
    argv += ["--tasks-dir", str(tmp_path)]
    processes = [
        subprocess.Popen(argv, cwd=checkout, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(4)
    ]
    outputs = [p.communicate(timeout=60) for p in processes]
    assert [p.returncode for p in processes] == [0] * 4, outputs
    said = sorted(out.decode().split(":")[0] for out, _ in outputs)
    assert said == ["up to date"] * 3 + ["written"]
    assert run([*argv, "--check"], checkout).returncode == 0


def trial_skip_reason() -> str | None:
    return harbor_skip_reason() or docker_skip_reason()


@pytest.mark.harbor
@pytest.mark.docker
@pytest.mark.skipif(trial_skip_reason() is not None, reason=str(trial_skip_reason()))
def test_harbor_runs_nop_and_oracle_with_the_plan_argv_and_afbench_reads_them(checkout, tmp_path):
    jobs = tmp_path / "jobs"
    outcomes = {}
    for agent in ("nop", "oracle"):
        step = plan_for(checkout, agent, jobs)
        assert run(python_argv(step["export"]), checkout).returncode == 0
        argv = step["run"]["argv"]
        assert argv[0] == "harbor" and argv[-2:] == ["-e", "docker"]
        assert step["run"]["env"] == {"HARBOR_TELEMETRY": "0"}
        result = run([str(HARBOR), *argv[1:]], Path(step["run"]["cwd"]), step["run"]["env"])
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        [attempt] = read_harbor_job(Path(step["job_dir"]))
        outcomes[agent] = (attempt["task_id"], attempt["outcome"], attempt["reward"])
        assert attempt["agent"] == agent
    assert outcomes == {"nop": (TASK, "rejected", 0), "oracle": (TASK, "accepted", 1)}

    # The same argv again resumes the job: the finished trial is kept, not rerun.
    job_dir = Path(step["job_dir"])
    trials = {
        p.name: hashlib.sha256((p / "result.json").read_bytes()).hexdigest()
        for p in job_dir.iterdir()
        if p.is_dir()
    }
    again = run([str(HARBOR), *argv[1:]], Path(step["run"]["cwd"]), step["run"]["env"])
    assert again.returncode == 0, again.stderr[-2000:]
    assert {
        p.name: hashlib.sha256((p / "result.json").read_bytes()).hexdigest()
        for p in job_dir.iterdir()
        if p.is_dir()
    } == trials
    assert docker_leftovers(jobs) == []


@pytest.mark.harbor
@pytest.mark.docker
@pytest.mark.skipif(trial_skip_reason() is not None, reason=str(trial_skip_reason()))
def test_the_test_agent_reports_its_cost_through_harbor_and_afbench_reads_it(checkout, tmp_path):
    # the plan's argv with the agent swapped for afbench's model-free test agent, which reports
    # a fixed cost through Harbor's agent context (plans accept only Harbor's own agents)
    jobs = tmp_path / "jobs"
    step = plan_for(checkout, "nop", jobs)
    assert run(python_argv(step["export"]), checkout).returncode == 0
    argv = [str(HARBOR), *step["run"]["argv"][1:]]
    argv[argv.index("-a") + 1] = "cost_agent:CostAgent"
    result = run(
        argv,
        Path(step["run"]["cwd"]),
        {
            **step["run"]["env"],
            "PYTHONPATH": str(REPO / "tests" / "harbor_agents"),
            "AFBENCH_TEST_AGENT_COST_USD": "2.5",
        },
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    job_dir = Path(step["job_dir"])
    [trial] = [p for p in job_dir.iterdir() if p.is_dir()]
    recorded = json.loads((trial / "result.json").read_text())
    assert recorded["agent_result"]["cost_usd"] == 2.5
    assert recorded["verifier_result"]["rewards"] == {"reward": 0.0}  # it wrote nothing
    assert json.loads((job_dir / "result.json").read_text())["stats"]["cost_usd"] == 2.5
    [attempt] = read_harbor_job(job_dir)
    assert (attempt["agent"], attempt["outcome"], attempt["cost_usd"]) == (
        "afbench-test-cost",
        "rejected",
        2.5,
    )
    assert docker_leftovers(jobs) == []


@pytest.mark.slurm
@pytest.mark.snakemake
@pytest.mark.skipif(slurm_skip_reason() is not None, reason=str(slurm_skip_reason()))
def test_a_snakemake_job_runs_on_slurm_through_the_profile(tmp_path):
    (tmp_path / "Snakefile").write_text(
        'rule one:\n    output:\n        "out.txt",\n    resources:\n        runtime=5,\n'
        '    shell:\n        "echo slurm_job=$SLURM_JOB_ID > {output}"\n'
    )
    (tmp_path / "config.yaml").write_text("{}\n")
    result = run(
        [
            SNAKEMAKE,
            "--profile",
            str(REPO / "profiles/slurm"),
            "--configfile",
            "config.yaml",
            # first status check soon after the job's ~10 s (the profile waits 5 s, then 15)
            "--slurm-init-seconds-before-status-checks",
            "2",
        ],
        tmp_path,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    job = (tmp_path / "out.txt").read_text().strip()
    assert job.startswith("slurm_job=") and job != "slurm_job="  # ran inside a SLURM job


@pytest.mark.harbor
@pytest.mark.docker
@pytest.mark.skipif(trial_skip_reason() is not None, reason=str(trial_skip_reason()))
def test_a_run_as_planned_is_conformant_and_each_change_is_named(checkout, tmp_path):
    """Four real Harbor jobs of one task, run at once: the plan's argv, and the same with a
    doubled timeout, disabled verification, or an agent kwarg; each imported against the
    exporter's output for the task."""
    from afbench.records import SELECTION, record

    from conftest import afbench, job

    config = load_config([REPO / "config/demo.yaml"])
    release = identity(config["release"])
    selection = tmp_path / "selection.json"
    selection.write_text(
        json.dumps(
            record(
                SELECTION, name="infra", task_ids=[TASK], selection_sha256="0" * 64, release=release
            )
        )
    )
    checksums = tmp_path / "checksums.json"
    job(
        "checksum-tasks",
        f"--selection={selection}",
        f"--repository-dir={checkout}",
        "--tasks-dir=tasks",
        f"--output={checksums}",
    )
    changes = {
        "as-planned": [],
        "timeout": ["--timeout-multiplier", "2"],
        "unverified": ["--disable-verification"],
        "hinted": ["--ak", "hint=use decide"],
    }
    runs = {}
    for name, extra in changes.items():
        step = plan_for(checkout, "nop", tmp_path / name)
        argv = [str(HARBOR), *step["run"]["argv"][1:], *extra]
        runs[name] = (
            Path(step["job_dir"]),
            subprocess.Popen(
                argv,
                cwd=step["run"]["cwd"],
                env={**os.environ, **step["run"]["env"]},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            ),
        )
    certificates = {}
    for name, (job_dir, process) in runs.items():
        output = process.communicate(timeout=300)[0]
        assert process.returncode == 0, output[-2000:]
        out = tmp_path / "imported" / name
        afbench(
            "import-run",
            "--selection",
            selection,
            "--name",
            name,
            "--kind",
            "harbor",
            "--path",
            job_dir,
            "--task-checksums",
            checksums,
            "--output-dir",
            out,
        )
        summary = json.loads((out / "summary.json").read_text())
        [configuration] = summary["configurations"]
        certificates[name] = (summary["conformant"], configuration["conformance"]["reasons"])
        assert configuration["conformance"]["task_checksums"]["compared"] == 1
    assert certificates["as-planned"] == (True, [])  # Harbor's task checksum is the export's
    assert certificates["timeout"] == (
        False,
        [
            f"changed timeout: the {phase} timeout is multiplied by 2 (timeout_multiplier); "
            "the protocol keeps the upstream per-task timeouts"
            for phase in ("agent", "verifier")
        ],
    )
    assert certificates["unverified"][0] is False
    [reason] = certificates["unverified"][1]
    assert reason.startswith("verification disabled (verifier.disable) for 1 of 1 trial(s)")
    assert certificates["hinted"] == (
        False,
        ["agent kwargs: agent.kwargs is {'hint': 'use decide'}; the protocol gives the agent none"],
    )
    for name in changes:
        assert docker_leftovers(tmp_path / name) == []
