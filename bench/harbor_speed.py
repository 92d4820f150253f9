"""The Harbor reader's cost per trial, today's code against the previous round's, in one run.

Builds a job folder of N trials (default 100,000) under bench/work/harbor-speed/ from the real
Harbor 0.22.0 fixture trials (tests/fixtures/harbor-0.22.0-jobs/demo-oracle: every outcome
Harbor writes) in a run's realistic shares (MIX: 40% accepted, 54% rejected, 6% errors of six
kinds), each copy with a task, trial name, trial folder and trial id of its own, so the job's
own facts agree (one trial per task, as its n_attempts 1 says). Then `harborjobs.read_harbor_job`
reads it in fresh processes, alternating between the package at REF (default 8109c16, the
previous round, taken with `git archive` and put first on PYTHONPATH) and this work tree's,
ROUNDS times each (default 3). Prints each side's best wall and CPU time (the child's own
CPU: user + system), microseconds per trial, and the ratio new/old; the target is a CPU ratio
of at most 1.2.

Usage: python bench/harbor_speed.py [--trials N] [--rounds R] [--ref REF]"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "bench" / "work" / "harbor-speed"
FIXTURE = REPO / "tests" / "fixtures" / "harbor-0.22.0-jobs" / "demo-oracle"
TARGET = 1.2
# a run's realistic shares, per 100 trials, by fixture trial: 40 accepted (reward 1), 54
# rejected (49 reward 0, 5 agent timeouts), 6 infrastructure or verifier errors
MIX = {
    "hello-pass": 40,
    "solve-fails": 49,
    "reward-json": 1,
    "agent-timeout": 5,
    "bad-reward": 1,
    "empty-reward": 1,
    "no-reward": 1,
    "no-solution": 1,
    "verifier-timeout": 1,
}

CHILD = r"""
import json, os, resource, sys, time
from pathlib import Path
started = time.perf_counter()
from afbench.runs import harbor_jobs as harborjobs
assert Path(harborjobs.__file__).is_relative_to(sys.argv[1]), harborjobs.__file__
imported = time.perf_counter() - started
before = resource.getrusage(resource.RUSAGE_SELF)
wall = time.perf_counter()
attempts = harborjobs.read_harbor_job(Path(sys.argv[2]))
wall = time.perf_counter() - wall
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
outcomes = {}
for a in attempts:
    outcomes[a["outcome"]] = outcomes.get(a["outcome"], 0) + 1
peak = int(Path("/proc/self/status").read_text().split("VmHWM:")[1].split()[0]) / 1024
print(json.dumps({"wall": wall, "cpu": cpu, "import_s": imported, "trials": len(attempts),
                  "outcomes": outcomes, "peak_mib": peak}))
"""


def build_job(trials: int) -> Path:
    """A job folder of `trials` trials copied from the fixture job, each renamed throughout."""
    job = WORK / f"job-{trials}-realistic"
    stamp = job / ".complete"
    if stamp.exists():
        return job
    shutil.rmtree(job, ignore_errors=True)
    job.mkdir(parents=True)
    shutil.copy(FIXTURE / "config.json", job / "config.json")
    shutil.copy(FIXTURE / "result.json", job / "result.json")
    job_id = json.loads((FIXTURE / "result.json").read_text())["id"]
    templates = []
    for trial in sorted(p for p in FIXTURE.iterdir() if p.is_dir()):
        template = (
            json.loads((trial / "result.json").read_text()),
            json.loads((trial / "config.json").read_text()),
        )
        templates += [template] * MIX[trial.name.split("__")[0]]
    rng = uuid.UUID(int=0)
    for i in range(trials):
        result, config = templates[i % len(templates)]
        task = f"task-{i:06d}"
        rng = uuid.uuid5(rng, str(i))
        name = f"{task}__{rng.hex[:7]}"
        task_path = f"/srv/harbor/tasks/{task}"
        doc = dict(result, id=str(rng), task_name=task, trial_name=name)
        doc["trial_uri"] = f"file:///srv/harbor/jobs/demo-oracle/{name}"
        doc["task_id"] = {"path": task_path}
        doc["config"] = dict(result["config"], trial_name=name, job_id=job_id)
        doc["config"]["task"] = dict(result["config"]["task"], path=task_path)
        own = dict(
            config, trial_name=name, job_id=job_id, task=dict(config["task"], path=task_path)
        )
        folder = job / name
        folder.mkdir()
        (folder / "result.json").write_text(json.dumps(doc, indent=4))
        (folder / "config.json").write_text(json.dumps(own, indent=4))
    stamp.touch()
    return job


def old_package(ref: str) -> Path:
    """The package at `ref`, unpacked where a child can put it first on PYTHONPATH."""
    WORK.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="old-", dir=WORK))
    archive = subprocess.run(
        ["git", "archive", ref, "scripts/afbench"], cwd=REPO, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    return root / "scripts"


def read_once(scripts: Path, job: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(scripts)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(scripts), str(job)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if out.returncode != 0:
        sys.exit(f"{scripts}: {out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ref", default="8109c16")
    args = parser.parse_args()
    job = build_job(args.trials)
    old_scripts = old_package(args.ref)
    sides = {"old": (old_scripts, []), "new": (REPO / "scripts", [])}
    try:
        for _ in range(args.rounds):  # alternate, so both sides share the machine's moods
            for scripts, runs in sides.values():
                runs.append(read_once(scripts, job))
    finally:
        shutil.rmtree(old_scripts.parent, ignore_errors=True)
    best = {
        name: (min(r["wall"] for r in runs), min(r["cpu"] for r in runs), runs[0])
        for name, (_, runs) in sides.items()
    }
    print(f"job folder: {args.trials} trials (from {FIXTURE.relative_to(REPO)}), {job}")
    print(f"{'side':28} {'wall s':>8} {'cpu s':>8} {'cpu us/trial':>13} {'peak MiB':>9}")
    for name, (wall, cpu, first) in best.items():
        label = f"{name} ({args.ref})" if name == "old" else f"{name} (this tree)"
        print(
            f"{label:28} {wall:8.2f} {cpu:8.2f} {cpu / args.trials * 1e6:13.1f} "
            f"{first['peak_mib']:9.0f}"
        )
    for name, (_, _, first) in best.items():
        print(f"{name} outcomes: {dict(sorted(first['outcomes'].items()))}")
    ratio_cpu = best["new"][1] / best["old"][1]
    ratio_wall = best["new"][0] / best["old"][0]
    verdict = "met" if ratio_cpu <= TARGET else "MISSED"
    print(
        f"new/old: cpu {ratio_cpu:.2f}x, wall {ratio_wall:.2f}x "
        f"(target cpu <= {TARGET}x: {verdict})"
    )


if __name__ == "__main__":
    main()
