"""Release upgrades: the task-by-task diff of two pinned revisions, what to do with old results
(reuse, regrade, rerun, drop), and results of two revisions compared on the tasks that did not
change."""

from __future__ import annotations

from . import Field, Kind, ListOf, MapOf, Shape
from .release import RELEASE
from .stats import CLUSTERED_DIFFERENCE, CLUSTERED_RATE
from .tasks import RELEASE_REF

# a task's class, its most consequential change first after `unchanged` (afbench.upgrade.diff)
CHANGE_CLASSES = (
    "unchanged",
    "statement-changed",
    "verifier-changed",
    "environment-changed",
    "metadata-changed",
    "added",
    "removed",
)
ACTIONS = ("reuse", "regrade", "rerun", "drop")
FLAGGED = ListOf(
    Shape("flagged version", Field("task_id", str), Field("message", str)),
    doc="tasks whose declared version bump does not match their content change",
)
TASK_CHANGE = Shape(
    "task change",
    Field("task_id", str),
    Field("class", str, values=CHANGE_CLASSES),
    Field("parts", ListOf(str), doc="the exported parts that changed"),
    Field("changed", ListOf(str), doc="what changed, named"),
    Field(
        "declared",
        Shape(
            "declared version check",
            Field("previous", str, null=True),
            Field("current", str, null=True),
            Field("harbor_action", str),
            Field("harbor_reason", str),
            Field("content_action", str),
            Field("mismatch", bool),
            Field("larger", bool),
            Field("message", str, null=True),
        ),
        optional=True,
        doc="only when a task declares a version (exported content compared)",
    ),
    Field("regrade", str, null=True, optional=True, doc="verifier-changed: why not regradable"),
)
UPGRADE_DIFF = Kind(
    "afbench release diff",
    Field("note", str),
    Field(
        "release",
        RELEASE,
        doc="this (the current) release first: the artifact belongs to its results tree",
    ),
    Field("previous", RELEASE_REF),
    Field("current", RELEASE_REF),
    Field("license", str),
    Field("basis", str, values=("export", "manifest")),
    Field("basis_note", str, null=True),
    Field("diff_sha256", str),
    Field("counts", Shape("change counts", *(Field(c, int, unit="tasks") for c in CHANGE_CLASSES))),
    Field("flagged", FLAGGED),
    Field(
        "comparable",
        Shape(
            "comparable selection",
            Field("name", str),
            Field("selection_sha256", str),
            Field("tasks", int, unit="tasks"),
        ),
        doc="the selection of the unchanged tasks, written beside the diff",
    ),
    Field("tasks", ListOf(TASK_CHANGE)),
    doc="two pinned revisions compared task by task (`afbench job diff-releases`)",
)
UPGRADE_PLAN = Kind(
    "afbench upgrade plan",
    Field("note", str),
    Field(
        "release",
        RELEASE,
        doc="this (the current) release first: the artifact belongs to its results tree",
    ),
    Field("previous", RELEASE_REF),
    Field("current", RELEASE_REF),
    Field("license", str),
    Field("diff_sha256", str),
    Field("counts", Shape("action counts", *(Field(a, int, unit="tasks") for a in ACTIONS))),
    Field(
        "cost",
        Shape(
            "rerun cost",
            Field("attempts", int),
            Field("rerun_trials", int, unit="trials"),
            Field("regrade", str),
            Field("line", str),
        ),
    ),
    Field("flagged", FLAGGED),
    Field(
        "tasks",
        ListOf(
            Shape(
                "task action",
                Field("task_id", str),
                Field("class", str, values=CHANGE_CLASSES),
                Field("action", str, values=ACTIONS),
                Field("reason", str),
            )
        ),
    ),
    doc="per task: reuse, regrade, rerun or drop its old results (`afbench job plan-upgrade`)",
)

# what the diff leaves out of a comparison, in the order the report names it (CHANGE_CLASSES)
DIFF_CLASSES = CHANGE_CLASSES[1:]
NOT_ON_BOTH = "not-on-both-sides"  # a comparable task one side (or both) has no outcome for
LEFT_OUT = MapOf(int, keys="why left out: a class of DIFF_CLASSES, or not-on-both-sides")
INPUTS = MapOf(str, keys="release path", doc="the catalog files' SHA-256")
REVISION_SIDE = Shape(
    "revision side",
    Field("revision", str),
    Field("kind", str, values=("official", "local")),
    Field("model", str, null=True, doc="an official import's model; null for a run"),
    Field("run", str, null=True, doc="a local run's name; null for an import"),
    Field("configuration", str, null=True),
    Field("label", str, doc="what the report calls it, its revision's first 12 digits with it"),
    Field(
        "results",
        Shape("results file", Field("file", str), Field("sha256", str)),
        null=True,
        doc="an official import's results file; null for a run",
    ),
    Field("selection_sha256", str, null=True, doc="a run's selection; null for an import"),
    Field("tasks", int, unit="tasks"),
    Field("solved", int, unit="tasks"),
    Field("success_rate", float),
    Field("wilson_low", float),
    Field("wilson_high", float),
    Field("clustered", CLUSTERED_RATE),
    Field("unresolved", int, unit="tasks"),
    Field("outside", int, unit="tasks", doc="tasks of the subset this side has no outcome for"),
)
RESOLVED_WAY = Shape(
    "unresolved counted as solved",
    Field("only_previous", int, unit="tasks"),
    Field("only_current", int, unit="tasks"),
    Field("difference", float),
    Field("clustered", CLUSTERED_DIFFERENCE),
    Field("p_sign_flip", float),
    Field("p_sign_flip_holm", float),
    Field("significant", bool),
)
REVISION_COMPARISON = Shape(
    "comparison across revisions",
    Field("previous", REVISION_SIDE),
    Field("current", REVISION_SIDE),
    Field("tasks", int, unit="tasks"),
    Field("sources", int, unit="sources"),
    Field("left_out", LEFT_OUT),
    Field("left_out_total", int, unit="tasks"),
    Field("both", int, unit="tasks"),
    Field("only_previous", int, unit="tasks"),
    Field("only_current", int, unit="tasks"),
    Field("neither", int, unit="tasks"),
    Field("difference", float, doc="current - previous"),
    Field("standard_error", float),
    Field("low", float),
    Field("high", float),
    Field("clustered", CLUSTERED_DIFFERENCE),
    Field("p_sign_flip", float),
    Field("p_sign_flip_holm", float),
    Field("significant", bool, doc="the decision the report shows"),
    Field("p_exact", float),
    Field("p_holm", float),
    Field("significant_tasks_as_unit", bool),
    Field(
        "unresolved",
        Shape(
            "unresolved tasks",
            Field("previous", int, unit="tasks"),
            Field("current", int, unit="tasks"),
            Field("favour_previous", RESOLVED_WAY),
            Field("favour_current", RESOLVED_WAY),
            Field("marked", bool, doc="the decision shown could change"),
        ),
    ),
)
CROSS_REVISION = Kind(
    "afbench cross-revision comparisons",
    Field("note", str),
    Field("release", RELEASE, doc="the current revision's release"),
    Field("license", str),
    Field("previous_revision", str),
    Field("current_revision", str),
    Field("same_revision", bool, doc="two results of one revision, on its whole catalog"),
    Field(
        "comparable",
        Shape(
            "comparable subset compared on",
            Field("name", str),
            Field("selection_sha256", str),
            Field("diff_sha256", str),
            Field("basis", str, values=("export", "manifest")),
            Field("previous", RELEASE_REF),
            Field("current", RELEASE_REF),
            Field("previous_inputs", INPUTS),
            Field("current_inputs", INPUTS),
            Field("tasks", int, unit="tasks"),
            Field("left_out", LEFT_OUT),
        ),
        null=True,
        doc="the diff's comparable subset; null for two results of one revision",
    ),
    Field("confidence", float),
    Field("alpha", float),
    Field(
        "methods",
        Shape(
            "comparison methods",
            Field("rates", str),
            Field("difference", str),
            Field("clustered_difference", str),
            Field("test", str),
            Field("test_tasks_as_unit", str),
            Field("correction", str),
            Field(
                "unresolved",
                Shape("unresolved counted", Field("official", str), Field("local", str)),
            ),
            Field("mark", str),
            Field("left_out", str),
        ),
    ),
    Field("comparisons", ListOf(REVISION_COMPARISON)),
    doc="results of two revisions compared on the tasks both share unchanged "
    "(`afbench job compare-revisions`, `afbench compare-revisions`)",
)
