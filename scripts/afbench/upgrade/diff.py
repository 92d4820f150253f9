"""Release upgrades: two pinned revisions compared task by task from their content digests
(catalog.content_digests), the comparable subset (the tasks that did not change) as a selection
like any other, and an upgrade plan in Harbor's vocabulary (reuse, regrade, rerun, drop) with
its cost as the execution guard counts it.

Harbor 0.26's own `harbor run --diff` (harbor/job_diff.py) decides from the version each task
declares (task.toml's [task] version): same version reuse, a patch bump reuse, a minor bump
regrade, a major bump or no version rerun. A statement fixed under a patch bump is reused
there; here the content decides, and a declared bump that does not match the content change is
flagged by name.
"""

from __future__ import annotations

import re

from afbench.core.errors import AfbenchError, Problem
from afbench.core.fsutil import canonical_digest
from afbench.kinds import SELECTION, UPGRADE_DIFF, UPGRADE_PLAN
from afbench.kinds.upgrade import CHANGE_CLASSES as CLASSES
from afbench.tasks.catalog import compare_task, select_tasks

# what a class asks of old results, in Harbor's vocabulary (job_diff.DiffAction, and drop)
ACTION = {
    "unchanged": "reuse",
    "metadata-changed": "reuse",
    "verifier-changed": "regrade",
    "statement-changed": "rerun",
    "environment-changed": "rerun",
    "added": "rerun",
    "removed": "drop",
}
RANK = {"reuse": 0, "regrade": 1, "rerun": 2}
# semver.org's regular expression for a semantic version (Harbor parses with semver.Version)
SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?\Z"
)
DIFF_NOTE = (
    "Each task of two pinned revisions compared by its content digests: unchanged, "
    "statement / verifier / environment / metadata changed (its most consequential change; "
    "every changed file or field listed), added or removed. Where tasks declare a version "
    "(task.toml [task] version, Harbor's convention), the bump Harbor's own diff would act on "
    "is checked against the content change; a weaker one is flagged."
)
PLAN_NOTE = (
    "What to do with each task's old results, in Harbor's vocabulary: reuse (unchanged, or "
    "only metadata changed), regrade (only the verifier changed, where Harbor can regrade: a "
    "verifier in its own environment), rerun (statement or environment changed, a verifier "
    "Harbor cannot regrade, or a new task), drop (removed). The cost line is the execution "
    "guard's for the rerun trials, each at the cap per trial."
)


def _basis(previous: dict, current: dict) -> str:
    both = previous["export"]["exported"] and current["export"]["exported"]
    return "export" if both else "manifest"


def harbor_action(previous: str | None, current: str | None, changed: bool) -> tuple[str, str]:
    """What Harbor 0.26's diff does with a task from its declared versions (job_diff.py's
    _version_action and its checks): the action, or "refused", and why."""
    if current is None:
        return "rerun", "the task declares no version: Harbor's diff reruns it"
    if previous is None:
        return "rerun", "no version was declared before: Harbor's diff has no old trial to use"
    bad = [v for v in (previous, current) if not SEMVER.match(v)]
    if bad:
        return "refused", f"'{bad[0]}' is not a semantic version: Harbor's diff refuses the job"
    if previous == current:
        if changed:
            return "refused", (
                f"the content changed under the same version {current}: Harbor's diff "
                "refuses the job (same version, different digest)"
            )
        return "reuse", f"version unchanged at {current}"
    old, new = (SEMVER.match(v).groups()[:3] for v in (previous, current))  # type: ignore[union-attr]
    if old[0] != new[0]:
        return "rerun", f"major bump {previous} -> {current}"
    if old[1] != new[1]:
        return "regrade", f"minor bump {previous} -> {current}"
    if old[2] != new[2]:
        return "reuse", f"patch bump {previous} -> {current}"
    return "rerun", f"pre-release or build metadata changed {previous} -> {current}"


def declared_check(old: dict, new: dict, kind: str, basis: str) -> dict | None:
    """The declared versions against the content change, where either revision declares one:
    `mismatch` when Harbor's diff would do less than the content asks (or refuse the job),
    `larger` when it would do more."""
    if basis != "export":
        return None
    before, after = old["export"]["declared"]["version"], new["export"]["declared"]["version"]
    if before is None and after is None:
        return None
    needed = ACTION[kind]
    action, why = harbor_action(before, after, kind != "unchanged")
    mismatch = action == "refused" or RANK[action] < RANK[needed]
    message = None
    if mismatch:
        message = (
            f"declared version {before} -> {after} does not match the change: {kind} asks "
            f"for {needed}, Harbor's diff would "
            + ("refuse the job" if action == "refused" else action)
            + f" ({why})"
        )
    return {
        "previous": before,
        "current": after,
        "harbor_action": action,
        "harbor_reason": why,
        "content_action": needed,
        "mismatch": mismatch,
        "larger": not mismatch and RANK[action] > RANK[needed],
        "message": message,
    }


def _identity(release: dict) -> dict:
    return {key: release[key] for key in ("name", "repository", "revision", "synthetic")}


def diff_releases(previous: dict, current: dict, catalog: dict) -> tuple[dict, dict]:
    """The diff of two revisions' task digests, and the comparable subset (the unchanged
    tasks) as a selection of the current catalog (catalog.select_tasks)."""
    old_rev, new_rev = previous["release"]["revision"], current["release"]["revision"]
    if old_rev == new_rev:
        raise AfbenchError(
            "the previous release is this release: nothing to compare",
            field="upgrade.previous_revision",
            expected=f"a revision other than {new_rev}",
            found=old_rev,
        )
    if catalog["release"]["revision"] != new_rev or catalog["inputs"] != current["inputs"]:
        raise AfbenchError(
            "the catalog is not the one the current digests were made from",
            field="--catalog",
            expected=f"the catalog of revision {new_rev}",
            found=catalog["release"]["revision"],
        )
    basis = _basis(previous, current)
    old_tasks, new_tasks = previous["tasks"], current["tasks"]
    tasks = []
    for task_id, new in new_tasks.items():
        old = old_tasks.get(task_id)
        if old is None:
            tasks.append({"task_id": task_id, "class": "added", "parts": [], "changed": []})
            continue
        entry = {"task_id": task_id, **compare_task(old, new, basis)}
        declared = declared_check(old, new, entry["class"], basis)
        if declared is not None:
            entry["declared"] = declared
        if entry["class"] == "verifier-changed" and basis == "export":
            entry["regrade"] = new["export"]["regrade"]
        tasks.append(entry)
    for task_id in old_tasks:
        if task_id not in new_tasks:
            tasks.append({"task_id": task_id, "class": "removed", "parts": [], "changed": []})
    counts = {kind: sum(t["class"] == kind for t in tasks) for kind in CLASSES}
    unchanged = [t["task_id"] for t in tasks if t["class"] == "unchanged"]
    if not unchanged:
        raise AfbenchError(
            "no task is unchanged between the two revisions: there is no comparable subset",
            field="upgrade.previous_revision",
            expected="a previous release sharing at least one unchanged task",
            found=old_rev,
        )
    flagged = [
        {"task_id": t["task_id"], "message": t["declared"]["message"]}
        for t in tasks
        if t.get("declared", {}).get("mismatch")
    ]
    digest = canonical_digest({"previous": old_rev, "current": new_rev, "tasks": tasks})
    selected = select_tasks(catalog, f"comparable-{old_rev[:12]}", tasks=unchanged)
    comparable = SELECTION.record(
        **SELECTION.body(selected),
        comparable={
            "previous": _identity(previous["release"]),
            "current": _identity(current["release"]),
            # the catalog files each revision's digests came from: what a result compared on
            # this subset must have been checked against (afbench.upgrade.crossrev)
            "previous_inputs": previous["inputs"],
            "current_inputs": current["inputs"],
            "diff_sha256": digest,
            "basis": basis,
            "excluded": {kind: n for kind, n in counts.items() if kind != "unchanged" and n},
            "note": "the tasks the diff calls unchanged: results of both revisions compare on "
            "these, and only on these",
        },
    )
    diff = UPGRADE_DIFF.record(
        note=DIFF_NOTE,
        # this release first: the artifact belongs to its results tree, whose readers
        # (afbench.frames) take an artifact's revision from its first "revision"
        release=catalog["release"],
        previous=_identity(previous["release"]),
        current=_identity(current["release"]),
        license=catalog["license"],
        basis=basis,
        basis_note=None
        if basis == "export"
        else "exported content not compared (a revision's digests have no export: configure "
        "a checkout, plans.repository_dir): statement, verifier and environment changes that "
        "leave the MANIFEST row as it was are not seen",
        diff_sha256=digest,
        counts=counts,
        flagged=flagged,
        comparable={
            "name": comparable["name"],
            "selection_sha256": comparable["selection_sha256"],
            "tasks": len(unchanged),
        },
        tasks=tasks,
    )
    return diff, comparable


def _reason(task: dict) -> str:
    kind = task["class"]
    if kind == "verifier-changed" and task.get("regrade"):
        return f"only the verifier changed, but Harbor cannot regrade it: {task['regrade']}"
    return {
        "unchanged": "unchanged: its results stand",
        "metadata-changed": "only metadata changed (" + ", ".join(task["changed"]) + "): its "
        "results stand",
        "verifier-changed": "only the verifier changed: grade the old trials again",
        "statement-changed": "the statement changed: old trials answered another task",
        "environment-changed": "the environment changed: old trials ran elsewhere",
        "added": "a new task: no old trial",
        "removed": "no longer in the release: its old results leave the comparison",
    }[kind]


def rerun_cost(
    task_ids: list[str], attempts: int, release: dict, cap_usd: float | None = None
) -> str:
    """The execution guard's cost line (approval.approve) for these tasks' trials run by a
    model-calling agent, each at the cap per trial (`cap_usd`, execute.trial_cap_usd; None:
    the release's nominal budget): the one call of the guard's arithmetic, so the line is the
    one `snakemake execute` prints when it follows this plan."""
    import tempfile
    from pathlib import Path

    from afbench.execution.approval import approve

    trials = [
        {
            "selection": "upgrade-rerun",
            "task_id": task_id,
            "job_name": f"upgrade-rerun-{task_id}-attempt-{attempt}",
            "lock": None,
            "paid": True,
        }
        for task_id in task_ids
        for attempt in range(1, attempts + 1)
    ]
    with tempfile.TemporaryDirectory() as empty:
        lines, _ = approve(trials, release, None, Path(empty) / "no-ledger.jsonl", cap_usd=cap_usd)
    return lines[0].removeprefix("afbench execute: ")


def upgrade_plan_tasks(diff: dict) -> list[dict]:
    """Per task of the diff: its class, its action and why."""
    tasks = []
    for task in diff["tasks"]:
        action = ACTION[task["class"]]
        if action == "regrade" and task.get("regrade"):
            action = "rerun"  # as Harbor's diff downgrades a regrade it cannot do
        tasks.append(
            {
                "task_id": task["task_id"],
                "class": task["class"],
                "action": action,
                "reason": _reason(task),
            }
        )
    return tasks


def _action_counts(tasks: list[dict]) -> dict[str, int]:
    return {a: sum(t["action"] == a for t in tasks) for a in ("reuse", "regrade", "rerun", "drop")}


def upgrade_plan(diff: dict, release: dict, attempts: int, cap_usd: float | None = None) -> dict:
    """Per task: reuse, regrade, rerun or drop, with why; and what the reruns cost."""
    tasks = upgrade_plan_tasks(diff)
    counts = _action_counts(tasks)
    rerun = [t["task_id"] for t in tasks if t["action"] == "rerun"]
    return UPGRADE_PLAN.record(
        note=PLAN_NOTE,
        release=release,
        previous=diff["previous"],
        current=diff["current"],
        license=diff["license"],
        diff_sha256=diff["diff_sha256"],
        counts=counts,
        cost={
            "attempts": attempts,
            "rerun_trials": len(rerun) * attempts,
            "regrade": "a regrade runs the verifier on the old trial's artifacts: no agent, "
            "no model cost",
            "line": rerun_cost(rerun, attempts, release, cap_usd) if rerun else "no trial to rerun",
        },
        flagged=diff["flagged"],
        tasks=tasks,
    )


def tasks_by_action(plan: dict, task_ids: list[str], revision: str, previous: str | None) -> dict:
    """What `snakemake execute` does with `task_ids` (a selection's tasks, in its order) as the
    upgrade `plan` says: {"rerun", "regrade", "reuse"} lists. The plan must be the one from
    `previous` to `revision` (this release), and name every task."""
    for field, wanted in (("current", revision), ("previous", previous)):
        found = plan[field]["revision"]
        if found != wanted:
            raise AfbenchError(
                f"the upgrade plan is of another {field} release than the config's",
                field=f"upgrade plan: {field}.revision",
                expected=wanted,
                found=found,
            )
    action = {task["task_id"]: task["action"] for task in plan["tasks"]}
    missing = [task_id for task_id in task_ids if action.get(task_id) in (None, "drop")]
    if missing:
        raise AfbenchError(
            "a task of the selection is not in the upgrade plan's current release",
            field="upgrade plan: tasks",
            expected="every task of the selection, as reuse, regrade or rerun",
            found=", ".join(missing[:5]) + (" ..." if len(missing) > 5 else ""),
        )
    return {
        kind: [task_id for task_id in task_ids if action[task_id] == kind]
        for kind in ("rerun", "regrade", "reuse")
    }


# --- relations (afbench.kinds.relations): the upgrade's artifacts against their sources ------
COMMIT = re.compile(r"[0-9a-f]{40}")


def previous_release_holds(previous: dict, current: dict) -> list[Problem]:
    """PREVIOUS_DIGESTS: the previous digests are of the same repository, at another
    revision that is a pinned commit (40 hexadecimal digits)."""
    problems = []
    old, new = previous["release"], current["release"]
    if old["repository"] != new["repository"]:
        problems.append(
            Problem(
                "the previous release is of another repository",
                field="release.repository",
                expected=new["repository"],
                found=old["repository"],
            )
        )
    if not COMMIT.fullmatch(old["revision"]):
        problems.append(
            Problem(
                "the previous release's revision is not a pinned commit",
                field="release.revision",
                expected="40 lowercase hexadecimal digits",
                found=old["revision"],
            )
        )
    elif old["revision"] == new["revision"]:
        problems.append(
            Problem(
                "the previous release is this release: nothing to compare",
                field="release.revision",
                expected=f"a revision other than {new['revision']}",
                found=old["revision"],
            )
        )
    return problems


def _diff_digest(diff: dict) -> str:
    return canonical_digest(
        {
            "previous": diff["previous"]["revision"],
            "current": diff["current"]["revision"],
            "tasks": diff["tasks"],
        }
    )


def diff_of_digests(diff: dict, digests: dict) -> list[Problem]:
    """DIFF_OF_DIGESTS: the diff is of the current digests' revision and task set (every task
    of it once, none other but the removed), and its diff_sha256 and counts are its tasks'."""
    problems = []
    if diff["current"]["revision"] != digests["release"]["revision"]:
        problems.append(
            Problem(
                "the diff is of another current revision than the digests",
                field="current.revision",
                expected=digests["release"]["revision"],
                found=diff["current"]["revision"],
            )
        )
    present = [t["task_id"] for t in diff["tasks"] if t["class"] != "removed"]
    if sorted(present) != sorted(digests["tasks"]):
        extra = sorted(set(present) ^ set(digests["tasks"])) or sorted(present)
        problems.append(
            Problem(
                "the diff's tasks are not the digests' tasks",
                field="tasks",
                expected=f"{len(digests['tasks'])} tasks, each once",
                found=f"{len(present)} ({extra[0]} ...)",
            )
        )
    digest = _diff_digest(diff)
    if diff["diff_sha256"] != digest:
        problems.append(
            Problem(
                "diff_sha256 is not that of the diff's tasks",
                field="diff_sha256",
                expected=digest,
                found=diff["diff_sha256"],
            )
        )
    counts = {kind: sum(t["class"] == kind for t in diff["tasks"]) for kind in CLASSES}
    if diff["counts"] != counts:
        problems.append(
            Problem(
                "the counts are not the tasks'",
                field="counts",
                expected=counts,
                found=diff["counts"],
            )
        )
    return problems


def comparable_of_diff(comparable: dict, diff: dict) -> list[Problem]:
    """COMPARABLE_OF_DIFF: the comparable subset is the diff's (its diff_sha256, name, hash and
    size) and holds exactly the tasks the diff calls unchanged."""
    problems = []
    made = comparable.get("comparable")
    if made is None:
        return [
            Problem(
                "the selection is not a comparable subset",
                field="comparable",
                expected="the diff's comparable subset",
                found="a plain selection",
            )
        ]
    if made["diff_sha256"] != diff["diff_sha256"]:
        problems.append(
            Problem(
                "the comparable subset is of another diff",
                field="comparable.diff_sha256",
                expected=diff["diff_sha256"],
                found=made["diff_sha256"],
            )
        )
    named = diff["comparable"]
    for field, value in (
        ("name", comparable["name"]),
        ("selection_sha256", comparable["selection_sha256"]),
        ("tasks", comparable["counts"]["tasks"]),
    ):
        if named[field] != value:
            problems.append(
                Problem(
                    f"the diff names another comparable subset ({field})",
                    field=field,
                    expected=named[field],
                    found=value,
                )
            )
    unchanged = sorted(t["task_id"] for t in diff["tasks"] if t["class"] == "unchanged")
    if sorted(comparable["task_ids"]) != unchanged:
        extra = sorted(set(comparable["task_ids"]) ^ set(unchanged))
        problems.append(
            Problem(
                "the comparable subset's tasks are not the diff's unchanged tasks",
                field="task_ids",
                expected=f"{len(unchanged)} unchanged tasks",
                found=f"{len(comparable['task_ids'])} ({extra[0] if extra else 'order'})",
            )
        )
    return problems


def plan_of_diff(plan: dict, diff: dict) -> list[Problem]:
    """UPGRADE_PLAN_OF_DIFF: the plan is of this diff, and each task's class and action, and
    the counts, are made again from the diff."""
    problems = []
    if plan["diff_sha256"] != diff["diff_sha256"]:
        problems.append(
            Problem(
                "the upgrade plan is of another diff",
                field="diff_sha256",
                expected=diff["diff_sha256"],
                found=plan["diff_sha256"],
            )
        )
    again = upgrade_plan_tasks(diff)
    planned = [{k: t[k] for k in ("task_id", "class", "action")} for t in plan["tasks"]]
    made = [{k: t[k] for k in ("task_id", "class", "action")} for t in again]
    if planned != made:
        wrong = next((p for p, m in zip(planned, made, strict=False) if p != m), None) or {
            "task_id": "(the task list)"
        }
        problems.append(
            Problem(
                "the plan's tasks are not what the diff asks",
                field="tasks",
                expected="each task of the diff, its class and Harbor's action",
                found=wrong["task_id"],
            )
        )
    counts = _action_counts(again)
    if plan["counts"] != counts:
        problems.append(
            Problem(
                "the counts are not the diff's",
                field="counts",
                expected=counts,
                found=plan["counts"],
            )
        )
    rerun = counts["rerun"] * plan["cost"]["attempts"]
    if plan["cost"]["rerun_trials"] != rerun:
        problems.append(
            Problem(
                "the rerun trials are not the reruns times the attempts",
                field="cost.rerun_trials",
                expected=rerun,
                found=plan["cost"]["rerun_trials"],
            )
        )
    return problems
