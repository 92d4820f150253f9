"""The demo release's Harbor task exporter (afbench.release.demo_exporter): tasks whose grader
scores the untouched workspace 0 and the oracle 1, exports idempotent and safe side by side."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import (
    TASK,
    plan_for,
    python_argv,
    run,
)


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
