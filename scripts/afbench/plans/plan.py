"""Exact, runnable Harbor 0.22.0 run plans: argument vectors, never shell strings, never run."""

from __future__ import annotations

from pathlib import Path

from afbench.core import harbor
from afbench.core.errors import AfbenchError, Problem
from afbench.core.fsutil import check_name
from afbench.kinds import PLAN

EXPORTER = "harbor/export.py"
TRAPS = [
    "-m is ignored by harbor without -a: the plan always passes -a",
    "a -p directory that is not a valid task is silently treated as a dataset: run the "
    "exporter's --check first and make sure the task directory exists",
    "reusing a --job-name with the same -o and flags resumes that job: a trial with a "
    "result.json is kept and never rerun (an errored one too: delete its trial folder to retry "
    "it); changed flags or task contents make harbor refuse to resume. Job names here are "
    "unique to (selection, agent, model, task); `afbench execute` adds an attempt suffix",
]


def tasks_folder(repo: Path, tasks_dir: str) -> Path:
    """Where the exporter writes the tasks: plans.tasks_dir, relative to the checkout unless
    absolute."""
    tasks_path = Path(tasks_dir)
    return tasks_path if tasks_path.is_absolute() else repo / tasks_path


def check_repository(repository_dir: str | None, revision: str) -> Path:
    if not repository_dir:
        raise AfbenchError(
            "no repository directory: set plans.repository_dir or pass "
            "--repository-dir (an absolute path to a checkout at the pinned "
            "revision)",
            field="repository_dir",
        )
    path = Path(repository_dir)
    if not path.is_absolute():
        raise AfbenchError(
            "repository directory must be an absolute path",
            field="repository_dir",
            expected="an absolute path (starting with /)",
            found=str(repository_dir),
        )
    if not path.is_dir():
        raise AfbenchError("repository directory does not exist", file=str(path))
    from afbench.core import gitrun

    top = gitrun.output(path, "rev-parse", "--show-toplevel").decode("utf-8", "replace").strip()
    if Path(top).resolve() != path.resolve():
        raise AfbenchError("repository directory is not the top of a git checkout", file=str(path))
    head = gitrun.run(path, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
    if head.returncode != 0:
        raise AfbenchError(
            "the checkout has no commit checked out (HEAD names none)",
            file=str(path),
            expected=revision,
        )
    found = head.stdout.decode("utf-8", "replace").strip()
    if found != revision:
        raise AfbenchError(
            "checkout is not at the pinned revision",
            file=str(path),
            expected=revision,
            found=found,
        )
    if not (path / EXPORTER).is_file():
        raise AfbenchError("checkout has no exporter", file=str(path / EXPORTER))
    return path


def agent_label(agent: str) -> str:
    """An agent as a name: a custom agent's module.path:ClassName as module.path__ClassName
    (no Harbor agent name holds `__`, and a module path holds no `-`)."""
    return agent.replace(":", "__") if harbor.is_import_path(agent) else agent


def plan_label(agent: str, model: str | None) -> str:
    """A plan's file name: the agent, or agent__provider__model for a real model."""
    agent = agent_label(agent)
    return check_name(
        agent if model is None else f"{agent}__{model.replace('/', '__')}", "plan name"
    )


def export_steps(repository: Path, task_id: str, tasks_path: Path | None = None) -> dict:
    """The exporter's export and its read-only check for one task, run in the checkout: they
    write (and check) <tasks_path>/<task>, where a plan's `-p` points; the exporter's own
    default, <checkout>/tasks, is passed as nothing, any other folder as `--tasks-dir`."""
    exporter = str(repository / EXPORTER)
    where = (
        ["--tasks-dir", str(tasks_path)]
        if tasks_path is not None and tasks_path != repository / "tasks"
        else []
    )
    return {
        "export": {
            "argv": ["python", exporter, "--problem", task_id, *where],
            "cwd": str(repository),
        },
        "check": {
            "argv": ["python", exporter, "--problem", task_id, *where, "--check"],
            "cwd": str(repository),
            "read_only": True,
        },
    }


def build_plan(
    catalog: dict,
    selection: dict,
    agent: str,
    model: str | None,
    repository_dir: str | None,
    tasks_dir: str,
    jobs_dir: str,
    environment_type: str,
    harbor_executable: str = "harbor",
) -> dict:
    """The plan for one selection and one agent (and model). `tasks_dir` is relative to the
    checkout unless absolute; `jobs_dir` is made absolute; `harbor_executable` is the harbor
    to run."""
    release = catalog["release"]
    if selection["release"] != release:
        raise AfbenchError(
            "selection was made from another release than the catalog; rebuild it",
            field="selection.release.revision",
            expected=release["revision"],
            found=selection["release"].get("revision"),
        )
    unknown = sorted(set(selection["task_ids"]) - {t["task_id"] for t in catalog["tasks"]})
    if unknown:
        raise AfbenchError(
            "selection names tasks the catalog lacks",
            field="task_ids",
            expected="tasks of the catalog",
            found=", ".join(unknown[:20]),
        )
    harbor.check_agent(agent, model)
    environment_type = harbor.check_environment_type(environment_type)
    repo = check_repository(repository_dir, release["revision"])
    tasks_path = tasks_folder(repo, tasks_dir)
    jobs_path = Path(jobs_dir).resolve()
    label = check_name(
        agent_label(agent) if model is None else f"{agent_label(agent)}-{model.replace('/', '_')}",
        "agent/model label",
    )
    tasks = []
    for task_id in selection["task_ids"]:
        check_name(task_id, "task_id")
        job_name = (
            f"afbench-{selection['name']}-{label}-{task_id}-{selection['selection_sha256'][:8]}"
        )
        run = [harbor_executable, "run", "-p", str(tasks_path / task_id), "-a", agent]
        if model is not None:
            run += ["-m", model]
        run += [
            "--job-name",
            job_name,
            "-o",
            str(jobs_path),
            "-n",
            "1",
            "-k",
            "1",
            "-y",
            "-q",
            "-e",
            environment_type,
        ]
        tasks.append(
            {
                "task_id": task_id,
                "job_name": job_name,
                "job_dir": str(jobs_path / job_name),
                **export_steps(repo, task_id, tasks_path),
                "run": {"argv": run, "cwd": str(repo), "env": dict(harbor.RUN_ENV)},
            }
        )
    images = release["images"]
    return PLAN.record(
        note="A plan only: nothing was executed and nothing installed. Run the export, its "
        "--check, then harbor run, in that order, per task.",
        executed=False,
        dollar_cap_enforced=False,
        release=release,
        license=catalog["license"],
        selection={
            "name": selection["name"],
            "selection_sha256": selection["selection_sha256"],
            "tasks": len(tasks),
        },
        agent=agent,
        model=model,
        expected_reward=0 if agent == "nop" else None,
        repository_dir=str(repo),
        environment_type=environment_type,
        timeouts={
            "agent_s": harbor.AGENT_TIMEOUT_S,
            "verifier_s": harbor.VERIFIER_TIMEOUT_S,
            "preserved": "upstream per-task timeouts; the plan passes no timeout "
            "multiplier or override",
        },
        requirements={
            "lean": release["lean"],
            "mathlib": release["mathlib"],
            "harbor": release["harbor"],
            "images": images,
            "image_digests_required_for_formal_run": True,
            "formal_run_ready": bool(images) and all(i["digest"] for i in images),
        },
        traps=TRAPS,
        tasks=tasks,
    )


def plan_of_selection(plan: dict, selection: dict) -> list[Problem]:
    """PLAN_OF_SELECTION (afbench.kinds.relations): the plan is of this selection (its release,
    name, hash and size) and plans its tasks, in its order."""
    problems = []
    if plan["release"] != selection["release"]:
        problems.append(
            Problem(
                "the plan is of another release than its selection",
                field="release",
                expected=selection["release"]["revision"],
                found=plan["release"]["revision"],
            )
        )
    named = {
        "name": selection["name"],
        "selection_sha256": selection["selection_sha256"],
        "tasks": selection["counts"]["tasks"],
    }
    for field, value in named.items():
        if plan["selection"][field] != value:
            problems.append(
                Problem(
                    "the plan names another selection",
                    field=f"selection.{field}",
                    expected=value,
                    found=plan["selection"][field],
                )
            )
    planned = [t["task_id"] for t in plan["tasks"]]
    if planned != selection["task_ids"]:
        problems.append(
            Problem(
                "the plan's tasks are not its selection's, in order",
                field="tasks",
                expected=f"{len(selection['task_ids'])} tasks",
                found=f"{len(planned)} tasks",
            )
        )
    return problems
