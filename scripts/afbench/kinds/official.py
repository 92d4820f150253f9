"""The official results: one model's import with its per-task results, the comparison summary
of several, and the seed command's reference (both in one file)."""

from __future__ import annotations

from . import Field, Kind, ListOf, MapOf, Shape, Table
from .release import RELEASE
from .tasks import MANIFEST_ROW

CONDITIONS = ("source-present", "source-free")

# The per-task result of a model import, in the order of its keys in the file: the fast reader
# of an import (official._outcomes_as_written) matches this layout, field by field.
TASK_RESULT = Shape(
    "per-task result",
    Field("task_id", str),
    Field("source_id", str, category=True),
    Field("success", bool, doc="every obligation accepted, as the authors reported it"),
    Field("n_obligations", int, minimum=1, unit="proof obligations"),
    Field("obligations_accepted", int, minimum=0, unit="proof obligations"),
    Field("cost_usd", float, minimum=0, unit="USD", doc="the reported cost, never capped"),
    Field("stop_reason", str, category=True, doc="'solved' if and only if success"),
    Field(
        "finished_at",
        str,
        null=True,
        time=True,
        doc="ISO-8601 date or datetime as reported; null: unknown (and kept unknown)",
    ),
    doc="one task of one model's results file, checked against its MANIFEST row",
)
# the columns of a results file that hold one value for every row (the file's setting)
RESULT_CONSTANTS = ("source_condition", "scaffold", "tools", "stopping_policy")
RESULTS_ROW = Table(
    "results row",
    *TASK_RESULT.take("task_id", "source_id"),
    *MANIFEST_ROW.take("target_declaration"),
    *TASK_RESULT.take("n_obligations", "success", "obligations_accepted", "cost_usd"),
    *TASK_RESULT.take("stop_reason"),
    Field(
        "source_condition",
        str,
        values=CONDITIONS,
        doc="constant within the file, and the model's pinned condition",
    ),
    Field("scaffold", str, doc="constant within the file"),
    Field("tools", str, doc="constant within the file"),
    Field("stopping_policy", str, doc="constant within the file"),
    *TASK_RESULT.take("finished_at"),
    doc="one row of an upstream results file, in its columns' order (their names mapped in "
    "config): source, declaration and obligations its MANIFEST row's (official.parse_results)",
)
OVER_BUDGET = Shape(
    "over-budget record",
    Field("source", str, doc="the model (or run configuration) the record is of"),
    Field("task_id", str),
    Field("cost_usd", float, unit="USD"),
    Field("excess_usd", float, unit="USD", doc="cost above the budget"),
)
BUDGET_AUDIT = Shape(
    "budget audit",
    Field("budget_usd", float, unit="USD per task"),
    Field("records_checked", int, minimum=0),
    Field("cost_unknown", int, minimum=0, doc="records without a reported cost"),
    Field("over_budget_count", int, minimum=0),
    Field("over_budget", ListOf(OVER_BUDGET), doc="every record over budget: none capped"),
    Field("note", str),
)
MODEL_IMPORT = Kind(
    "afbench official results import",
    Field("note", str),
    Field("local_capability_score", None, doc="always null: a summary of reported results"),
    Field("license", str),
    Field("release", RELEASE),
    Field("model", str, category=True, doc="the model's slug"),
    Field("display_name", str),
    Field("file", str, doc="the results file's path in the release"),
    Field(
        "inputs",
        MapOf(str, keys="release path"),
        doc="release path -> SHA-256 of every file read (results, MANIFEST, SOURCES)",
    ),
    Field("budget_usd", float, unit="USD per task", minimum=0),
    Field("source_condition", str, values=CONDITIONS),
    Field("scaffold", str, null=True),
    Field("tools", str, null=True),
    Field("stopping_policy", str, null=True),
    Field("tasks", int, minimum=0, unit="tasks"),
    Field("passes", int, minimum=0, unit="tasks"),
    Field("success_rate", float, minimum=0),
    Field("stop_reasons", MapOf(int, keys="stop reason"), unit="tasks"),
    Field(
        "obligations",
        Shape(
            "obligations",
            Field("accepted", int, minimum=0),
            Field("total", int, minimum=0),
        ),
        unit="proof obligations",
    ),
    Field(
        "infrastructure_errors",
        Shape(
            "infrastructure errors",
            Field("count", int, minimum=0),
            Field("tasks", ListOf(str)),
            Field("note", str),
        ),
    ),
    Field(
        "cost_usd",
        Shape(
            "cost summary",
            Field("total", float, unit="USD"),
            Field("mean", float, unit="USD per task"),
            Field("median", float, unit="USD per task"),
            Field("max", float, unit="USD"),
            Field("per_solved_task", float, null=True, unit="USD", doc="null: nothing solved"),
        ),
    ),
    Field(
        "finished_at",
        Shape("finish times", Field("known", int, minimum=0), Field("unknown", int, minimum=0)),
        unit="tasks",
    ),
    Field("budget_audit", BUDGET_AUDIT),
    Field("extra_columns", ListOf(str), doc="columns of the results file afbench ignored"),
    Field("task_set_sha256", str),
    Field("records", ListOf(TASK_RESULT), doc="one per task, in the catalog's order; last"),
    doc="one model's official results, checked task by task against the catalog",
)

COMPARISON_BUDGET_AUDIT = Shape(
    "comparison budget audit",
    Field("budget_usd", float, unit="USD per task"),
    Field("over_budget_count", int, minimum=0),
    Field("over_budget", ListOf(OVER_BUDGET), doc="every model's records over budget"),
    Field("strict", bool, doc="whether a record over budget refuses the comparison"),
    Field("note", str),
)
PUBLISHED_MODEL = Shape(
    "published pass count check",
    Field("published_passes", int, null=True, doc="null: the authors published none"),
    Field("passes", int),
    Field("difference", int, optional=True, doc="imported - published; only when published"),
    Field("matches", bool, null=True),
)
PUBLISHED = Shape(
    "published facts check",
    Field("source", str, null=True, doc="where the authors published them; null: nothing"),
    Field("note", str),
    Field("matches", bool, null=True, doc="null: nothing was checked"),
    Field("models", MapOf(PUBLISHED_MODEL, keys="model slug")),
    Field(
        "over_budget",
        MapOf(
            Shape(
                "published over-budget check",
                Field("published_usd", ListOf(float), unit="USD"),
                Field("imported_usd", ListOf(float), unit="USD"),
                Field("matches", bool),
            ),
            keys="model slug",
        ),
    ),
    Field(
        "task_rows",
        Shape(
            "task rows check",
            Field("published", int),
            Field("models", ListOf(str)),
            Field("imported", int, null=True),
            Field("matches", bool, null=True),
            Field("note", str, optional=True, doc="only when not checked: why"),
        ),
        null=True,
    ),
    Field("differences", ListOf(str)),
)
LETTERS = ListOf(str, doc="compact letter display: models sharing a letter do not differ")
LEADERBOARD_ROW = Shape(
    "leaderboard row",
    Field("rank", int, minimum=1),
    Field("model", str, category=True),
    Field("display_name", str),
    Field("passes", int, minimum=0, unit="tasks"),
    Field("tasks", int, minimum=0, unit="tasks"),
    Field("success_rate", float),
    Field("mean_cost_usd", float, unit="USD per task"),
    Field("cost_per_solved_usd", float, null=True, unit="USD"),
    Field("infrastructure_errors", int, unit="tasks"),
    Field("over_budget_records", int, unit="tasks"),
    Field("leader_tier", bool, doc="in the leader's tier (sources as the unit)"),
    Field("letters", LETTERS),
    Field("leader_tier_tasks_as_unit", bool),
    Field("letters_tasks_as_unit", LETTERS),
    Field("passes_errors_as_successes", int, unit="tasks"),
    Field("success_rate_errors_as_successes", float),
    Field("published_passes", int, null=True),
    Field("matches_published", bool, null=True),
    doc="one model in the comparison (leaderboard.csv has these columns, letters as text)",
)
SUMMARY = Kind(
    "afbench official results summary",
    Field("note", str),
    Field("local_capability_score", None),
    Field("license", str),
    Field("release", RELEASE),
    Field("source_condition", str, values=CONDITIONS),
    Field("budget_usd", float, unit="USD per task"),
    Field(
        "comparison",
        Shape(
            "comparison validity",
            Field("valid", bool),
            Field("like_for_like", MapOf(bool, keys="compared field")),
            Field("strict_budget", bool),
        ),
    ),
    Field("published", PUBLISHED),
    Field("tiers", Shape("tier method", Field("alpha", float), Field("method", str))),
    Field("leaderboard", ListOf(LEADERBOARD_ROW), doc="best first"),
    Field("budget_audit", COMPARISON_BUDGET_AUDIT),
    Field("inputs", MapOf(str, keys="release path")),
    doc="the like-for-like comparison of model imports (`afbench job compare-models`)",
)
OFFICIAL_REFERENCE = Kind(
    "afbench official reference",
    Field("summary", SUMMARY),
    Field("models", ListOf(MODEL_IMPORT), doc="every model's import, whole"),
    doc="the seed command's one file: the comparison and every import (`import-results`)",
)
