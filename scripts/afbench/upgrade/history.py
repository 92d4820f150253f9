"""A configuration's history across revisions: each official model and each local run's
configuration of this revision against the same one in every other revision of the results
store, each pair of revisions only on the tasks their upgrade diff calls comparable (the diff's
comparable subset, afbench.upgrade.diff) and with the comparisons' own machinery
(afbench.upgrade.crossrev: each side's rate on that subset, the paired difference with its
intervals, the tests). A rate is never pooled across revisions.

This revision's side comes from its own artifacts (its imports, its runs' outcomes); the other
revision's from its partitions of the store (official_results, run_outcomes), which the
report's rule declares, so a partition that changes reruns the report. Which tasks compare is
read from the diff's comparable subset, not worked out again from the store: the store's tasks
table holds each task's MANIFEST row, not its exported content's digests, so a verifier or an
environment that changed under an unchanged row would pass for unchanged there.
"""

from __future__ import annotations

from afbench.core.errors import AfbenchError
from afbench.report.analysis import ALPHA
from afbench.task_analysis.anatomy import INFRASTRUCTURE_STOP
from afbench.upgrade.crossrev import ACCEPTED_OR_NOT, Subset, compared_rows, methods, side_label

# the store's tables a history reads (afbench.exports.store.TABLES), with the columns it reads of
# each
STORED_COLUMNS = {
    "official_results": (
        "model",
        "display_name",
        "source_condition",
        "budget_usd",
        "task_id",
        "source_id",
        "success",
        "stop_reason",
    ),
    "run_outcomes": ("run", "configuration", "task_id", "outcome"),
}
STORED_TABLES = tuple(STORED_COLUMNS)
NOTE = (
    "Each configuration of this revision (an official model at this condition and budget, or a "
    "local run's configuration) against the same configuration in each other revision of the "
    "results store, on the tasks the two revisions' upgrade diff calls unchanged and both sides "
    "have; each rate is over those tasks and carries its revision, never pooled. The "
    "difference is current - previous, as the diff orders the two revisions. An official model "
    "is matched by its slug, source condition and budget (the store holds no scaffold, tools or "
    "stopping policy); a local configuration by its run's name and its label."
)
NO_DIFF = (
    "no comparable subset: no diff between this revision and that one among the inputs "
    "(upgrade.previous_revision names the previous release in the later one's config; "
    "snakemake diff)"
)


class Stored:
    """One other revision's partitions, read: its official results and its run outcomes (each
    a list of rows with the columns STORED_COLUMNS names), and per table what its partition
    is (table, revision, file: its path in the store, sha256, rows)."""

    def __init__(self, revision: str, tables: dict[str, list[dict]], files: dict[str, dict]):
        self.revision, self.tables, self.files = revision, tables, files


def _key(side: dict) -> tuple:
    return (side["kind"], side["model"], side["run"], side["configuration"])


def _tasks(rows: list[dict], file: str, solved, unresolved, source) -> dict:
    tasks: dict[str, tuple] = {}
    for row in rows:
        if row["task_id"] in tasks:
            raise AfbenchError(
                "a task twice for one configuration: write the revision's store again "
                "(snakemake store)",
                file=file,
                field="task_id",
                expected="one row per task and configuration",
                found=row["task_id"],
            )
        tasks[row["task_id"]] = (source(row), solved(row), unresolved(row))
    return tasks


def stored_side(side: dict, stored: Stored) -> dict | None:
    """The same configuration as `side` (a side of this revision, crossrev.official_side or
    local_side) in another revision's partitions, as a side of that revision; None when that
    revision does not have it."""
    if side["kind"] == "official":
        like = side["like_for_like"]
        table = "official_results"
        rows = [
            r
            for r in stored.tables[table]
            if r["model"] == side["model"]
            and r["source_condition"] == like["source_condition"]
            and r["budget_usd"] == like["budget_usd"]
        ]
    else:
        table = "run_outcomes"
        rows = [
            r
            for r in stored.tables[table]
            if r["run"] == side["run"] and r["configuration"] == side["configuration"]
        ]
    if not rows:
        return None
    file = stored.files[table]
    official = side["kind"] == "official"
    name = rows[0]["display_name"] if official else f"{side['run']} [{side['configuration']}]"
    return {
        **side,
        "revision": stored.revision,
        "label": side_label(name, stored.revision),
        "catalog_inputs": None,
        "results": {"file": file["file"], "sha256": file["sha256"]} if official else None,
        "like_for_like": None,
        "task_order": None,
        "selection_sha256": None,
        "file": file["file"],
        "tasks": _tasks(
            rows,
            file["file"],
            (lambda r: bool(r["success"])) if official else (lambda r: r["outcome"] == "accepted"),
            (lambda r: r["stop_reason"] == INFRASTRUCTURE_STOP)
            if official
            else (lambda r: r["outcome"] not in ACCEPTED_OR_NOT),
            (lambda r: r["source_id"]) if official else (lambda r: None),
        ),
    }


def pair_subsets(revision: str, inputs: dict, subsets: list[tuple[Subset, str]]) -> dict:
    """Each other revision's comparable subset with this one, from the subsets given (a diff
    between two other revisions is passed over): one per revision, made from this revision's
    catalog files."""
    found: dict[str, tuple[Subset, str]] = {}
    for subset, file in subsets:
        previous, current = subset.revisions
        if revision not in (previous, current):
            continue
        role = 1 if current == revision else 0
        if subset.inputs[role] != inputs:
            raise AfbenchError(
                "the comparable subset was made from other catalog files than this report's: "
                "run the diff again",
                file=file,
                field=f"comparable.{('previous', 'current')[role]}_inputs",
                expected=", ".join(f"{p} {d[:12]}" for p, d in sorted(inputs.items())),
                found=", ".join(f"{p} {d[:12]}" for p, d in sorted(subset.inputs[role].items())),
            )
        other = subset.revisions[1 - role]
        if other in found:
            raise AfbenchError(
                "two comparable subsets for one pair of revisions",
                file=file,
                field="comparable",
                expected=f"one diff between {revision[:12]} and {other[:12]}",
                found=f"also {found[other][1]}",
            )
        found[other] = (subset, file)
    return found


def _common(previous: dict, current: dict, subset: Subset) -> int:
    return sum(t in previous["tasks"] and t in current["tasks"] for t in subset.task_ids)


def history(
    revision: str,
    inputs: dict,
    sides: list[dict],
    stored: list[Stored],
    subsets: list[tuple[Subset, str]],
    confidence: float,
    alpha: float = ALPHA,
) -> dict:
    """The report's history block: per other revision its comparable subset (or why there is
    none), and per configuration of this revision (`sides`) its comparison with each other
    revision that has it, on that pair's comparable subset; Holm over each pair of revisions'
    comparisons."""
    by_other = pair_subsets(revision, inputs, subsets)
    found: dict[tuple, list[dict]] = {_key(side): [] for side in sides}
    revisions = []
    for other in sorted(stored, key=lambda s: s.revision):
        subset, file = by_other.get(other.revision, (None, None))
        entries = []
        for side in sides:
            theirs = stored_side(side, other)
            if theirs is None:
                continue
            entry = {
                "revision": other.revision,
                "status": "no-diff",
                "tasks": 0,
                "comparison": None,
            }
            if subset is not None:
                ours_current = subset.revisions[1] == revision
                pair = (theirs, side) if ours_current else (side, theirs)
                entry["tasks"] = _common(*pair, subset)
                entry["status"] = "compared" if entry["tasks"] >= 2 else "too-few-tasks"
                entry["pair"] = pair
            found[_key(side)].append(entry)
            entries.append(entry)
        compared = [e for e in entries if e["status"] == "compared"]
        if compared:
            rows = compared_rows([e.pop("pair") for e in compared], subset, confidence, alpha)
            for entry, row in zip(compared, rows, strict=True):
                entry["comparison"] = row
        for entry in entries:
            entry.pop("pair", None)
        revisions.append(
            {
                "revision": other.revision,
                "comparable": None if subset is None else subset.about,
                "comparable_file": file,
                "configurations": len(entries),
                "compared": len(compared),
            }
        )
    return {
        "note": NOTE,
        "revision": revision,
        "confidence": confidence,
        "alpha": alpha,
        "methods": methods(
            confidence,
            "Holm-Bonferroni over the comparisons with each other revision, for each test "
            f"separately; family-wise alpha {alpha}",
        ),
        "no_diff": NO_DIFF,
        "store": [f for s in sorted(stored, key=lambda s: s.revision) for f in s.files.values()],
        "revisions": revisions,
        "configurations": [
            {
                "kind": side["kind"],
                "model": side["model"],
                "run": side["run"],
                "configuration": side["configuration"],
                "label": side["label"],
                "revisions": found[_key(side)],
            }
            for side in sides
        ],
    }
