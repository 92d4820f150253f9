"""Execute one trial of a plan: the exporter, its read-only check, then `harbor run`, each
exactly as the plan gives it (the job name takes an attempt suffix), with HARBOR_TELEMETRY=0.

Harbor resumes a job whose name and folder are unchanged, keeping every trial that has a
result.json, so running the same attempt again after a crash finishes it instead of starting
over. The Harbor job folder is not an artifact of ours: the receipt names it.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from . import harbor
from .errors import AfbenchError
from .fsutil import canonical_digest
from .records import TRIAL_RECEIPT, record


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
        raise AfbenchError("attempts count from 1", field="--attempt", found=attempt)
    run = copy.deepcopy(task["run"])
    argv = run["argv"]
    at = argv.index("--job-name") + 1
    argv[at] = attempt_job_name(task["job_name"], attempt)
    jobs_dir = argv[argv.index("-o") + 1]
    return {
        "export": task["export"],
        "check": task["check"],
        "run": run,
        "job_name": argv[at],
        "job_dir": str(Path(jobs_dir) / argv[at]),
    }


def steps_digest(steps: dict) -> str:
    return canonical_digest({k: steps[k] for k in ("export", "check", "run")})


def check_allowed(plan: dict, allow_model_agents: bool) -> None:
    """Only nop and oracle run without more: any other agent calls a paid model."""
    if harbor.calls_a_model(plan["agent"]) and not allow_model_agents:
        raise AfbenchError(
            f"agent '{plan['agent']}' calls a model and spends money: refused without "
            f"--allow-model-agent (execute.allow_model_agents and a ceiling in config)",
            field="agent",
            found=plan["agent"],
        )


def run_steps(steps: dict, extra_env: dict[str, str]) -> None:
    """Export, check, then harbor run; each one's output goes to our stderr (the job's log)."""
    for name in ("export", "check", "run"):
        step = steps[name]
        env = {**os.environ, **extra_env, **step.get("env", {})}
        sys.stderr.write(f"afbench: {name}: {json.dumps(step['argv'])}\n")
        sys.stderr.flush()
        try:
            done = subprocess.run(
                step["argv"],
                cwd=step.get("cwd"),
                env=env,
                stdout=sys.stderr,
                stderr=sys.stderr,
                check=False,
            )
        except FileNotFoundError:
            raise AfbenchError(
                f"cannot start the {name} step: program not found",
                field=name,
                found=step["argv"][0],
            ) from None
        if done.returncode != 0:
            raise AfbenchError(
                f"the {name} step failed with exit code {done.returncode}",
                field=name,
                found=" ".join(step["argv"]),
            )


def trial_receipt(
    plan: dict, plan_sha256: str, task_id: str, attempt: int, steps: dict, attempts: list[dict]
) -> dict:
    """What ran and what came of it: the argv digest, the job folder, each trial's id,
    outcome and result file hash."""
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
                "result_sha256": hashlib.sha256(result.read_bytes()).hexdigest()
                if result.is_file()
                else None,
            }
        )
    outcomes = sorted({t["outcome"] for t in trials})
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
        argv_sha256=steps_digest(steps),
        steps={k: steps[k] for k in ("export", "check", "run")},
        job_name=steps["job_name"],
        job_dir=steps["job_dir"],
        trials=trials,
        outcome=outcomes[0] if len(outcomes) == 1 else ("none" if not outcomes else "mixed"),
    )
