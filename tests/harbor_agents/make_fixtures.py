"""Make the job folders under tests/fixtures/harbor-<version>-jobs/ that the scripted agent's
tests read, with real Harbor in its own `docker` environment (see tests/fixtures/HARBOR-JOBS.md).

    .venv/bin/python tests/harbor_agents/make_fixtures.py HARBOR_EXECUTABLE VERSION OUT_DIR

Builds the demo release's upstream repository, exports the demo tasks each job runs (one
folder of tasks per job, run as a dataset with `-p`), and runs, with the scripted agent
(tests/harbor_agents/scripted_agent.py) on the module path:

- `scripted`: demo_s01_t001 solved (accepted), t002 untouched (rejected), t003 raising
  ApiRateLimitError (reward 0 beside it: an error by Harbor's error policy), t004 raising
  ApiInternalServerError once and solving on its retry (`--max-retries 1 --retry-include
  ApiInternalServerError`: Harbor deletes the first attempt's folder);
- `five-exceptions`: demo_s01_t001..t005, each raising one of the five provider exceptions
  of provider_errors.EXCEPTIONS (no retries), each left with reward 0;
- `multi-step`: demo_s01_t006 made a two-step task (multi_step; each step the demo task's own
  instruction, grader and solution; the final step's reward is the trial's), solved at step
  one, NetworkConnectionError raised at step two, whose verifier still scores the solved
  workspace 1: Harbor records the exception on the step, not the trial.

The job folders land in OUT_DIR/<job>; nothing else is written outside a temporary folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from provider_errors import EXCEPTIONS  # noqa: E402

from afbench.release import demo  # noqa: E402

JOBS = {
    "scripted": (
        {
            "demo_s01_t001": "solve",
            "demo_s01_t002": "nothing",
            "demo_s01_t003": "raise:ApiRateLimitError",
            "demo_s01_t004": "fail-once:ApiInternalServerError",
        },
        ["--max-retries", "1", "--retry-include", "ApiInternalServerError"],
    ),
    "five-exceptions": (
        {f"demo_s01_t00{i}": f"raise:{name}" for i, name in enumerate(EXCEPTIONS, 1)},
        [],
    ),
    "multi-step": ({"demo_s01_t006": "solve-then:NetworkConnectionError"}, []),
}
MULTI_STEP = ("demo_s01_t006",)
STEPS = ("one", "two")


def make_multi_step(task_dir: Path) -> None:
    """Turn an exported single-step task into a two-step one (Harbor's [[steps]]): each step
    gets the task's instruction, grader and solution; the trial's reward is the final step's."""
    toml = task_dir / "task.toml"
    text = toml.read_text().replace(
        "[metadata]", 'multi_step_reward_strategy = "final"\n\n[metadata]', 1
    )
    for step in STEPS:
        text += f'\n[[steps]]\nname = "{step}"\n'
        folder = task_dir / "steps" / step
        (folder / "tests").mkdir(parents=True)
        (folder / "solution").mkdir()
        (folder / "instruction.md").write_text((task_dir / "instruction.md").read_text())
        for part in ("tests/test.sh", "solution/solve.sh"):
            (folder / part).write_bytes((task_dir / part).read_bytes())
            (folder / part).chmod(0o755)
    toml.write_text(text)


# Harbor 0.26 runs `docker compose exec -u root` in the task's container, which needs an
# /etc/passwd naming root; a local debian:bookworm-slim imported from a bare Debian tree may have
# none (an older ci/docker-up.sh wrote none). Each exported task copies one in, for both
# versions alike, so the two versions run byte-identical tasks.
PASSWD = "root:x:0:0:root:/root:/bin/bash\n"
GROUP = "root:x:0:\n"


def add_passwd(task_dir: Path) -> None:
    environment = task_dir / "environment"
    (environment / "passwd").write_text(PASSWD)
    (environment / "group").write_text(GROUP)
    dockerfile = environment / "Dockerfile"
    text = dockerfile.read_text()
    if "COPY passwd group /etc/" not in text:
        dockerfile.write_text(text + "COPY passwd group /etc/\n")


def export_tasks(checkout: Path, tasks: Path, task_ids) -> None:
    """Export each task with the demo release's exporter into `tasks`, then add_passwd."""
    for task in task_ids:
        subprocess.run(
            [
                sys.executable,
                str(checkout / "harbor/export.py"),
                "--problem",
                task,
                "--tasks-dir",
                str(tasks),
            ],
            cwd=checkout,
            check=True,
            capture_output=True,
        )
        add_passwd(tasks / task)
        if task in MULTI_STEP:
            make_multi_step(tasks / task)


def harbor_argv(harbor: str, tasks: Path, jobs: Path, job: str, script: dict, state: Path):
    return [
        harbor,
        "run",
        "-p",
        str(tasks),
        "-a",
        "scripted_agent:ScriptedAgent",
        "--ak",
        "script=" + ",".join(f"{task}={action}" for task, action in script.items()),
        "--ak",
        f"state_dir={state}",
        "--job-name",
        job,
        "-o",
        str(jobs),
        "-n",
        "4",
        "-k",
        "1",
        "-y",
        "-q",
        "-e",
        "docker",
    ]


def make(harbor: str, out: Path, work: Path, jobs_wanted=tuple(JOBS)) -> dict[str, Path]:
    """Run each wanted job into `out`; return its folder. `work` holds the checkout, the
    exported tasks and the agent's state."""
    checkout = work / "demo-upstream"
    if not checkout.exists():
        demo.build_repository(REPO / "resources/demo-release", checkout)
    env = {
        **os.environ,
        "HARBOR_TELEMETRY": "0",
        "PYTHONPATH": str(HERE),
    }
    processes = {}
    for job in jobs_wanted:
        script, extra = JOBS[job]
        tasks = work / f"tasks-{job}"
        export_tasks(checkout, tasks, script)
        argv = harbor_argv(harbor, tasks, out, job, script, work / f"state-{job}") + extra
        processes[job] = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
    for job, process in processes.items():
        output = process.communicate(timeout=600)[0]
        if process.returncode != 0:
            raise RuntimeError(f"harbor run of {job} failed:\n{output[-4000:]}")
    return {job: out / job for job in jobs_wanted}


if __name__ == "__main__":
    harbor, version, out = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix=f"afbench-harbor-{version}-") as work:
        for job, folder in make(harbor, Path(out), Path(work)).items():
            print(f"{version} {job}: {folder}")
