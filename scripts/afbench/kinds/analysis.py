"""The analysis behind the report, and what stands beside it: the run planner's power plan, the
task table (which tasks measure anything) and the failure anatomies (why tasks failed)."""

from __future__ import annotations

from . import Field, Kind, ListOf, MapOf, Shape
from .execution import COST_LEDGER, SEQUENTIAL_RUN
from .official import COMPARISON_BUDGET_AUDIT, CONDITIONS, LETTERS, PUBLISHED, TASK_RESULT
from .release import RELEASE, RELEASE_DATES, VERIFIED_ENTRY
from .runs import BOUNDS, OUTCOMES, PLAN_CHECK
from .stats import CLUSTERED_DIFFERENCE, CLUSTERED_RATE, INTERVAL
from .upgrade import CROSS_REVISION, REVISION_COMPARISON

# --- failure anatomy ---------------------------------------------------------------------------
# every class in precedence order (afbench.task_analysis.anatomy): the official ones lack no_verdict
# and progress_unknown, the local ones near_miss, partial and none
FAILURE_CLASSES = (
    "infrastructure",
    "no_verdict",
    "over_budget",
    "budget_or_time_stop",
    "near_miss",
    "partial",
    "none",
    "progress_unknown",
)
OFFICIAL_CLASSES = tuple(c for c in FAILURE_CLASSES if c not in ("no_verdict", "progress_unknown"))
LOCAL_CLASSES = tuple(c for c in FAILURE_CLASSES if c not in ("near_miss", "partial", "none"))
ADVISORY_CLASSES = (
    "environment",
    "verifier",
    "model_api",
    "credentials_or_model",
    "agent",
    "unknown",
    "mixed",
)


def _counts(name: str, classes: tuple[str, ...]) -> Shape:
    return Shape(name, *(Field(c, int, minimum=0, unit="tasks") for c in classes))


OFFICIAL_MODEL_FAILURES = Shape(
    "model failures",
    Field("model", str, category=True),
    Field("display_name", str),
    Field("tasks", int, unit="tasks"),
    Field("passes", int, unit="tasks"),
    Field("failures", int, unit="tasks"),
    Field("counts", _counts("official failure counts", OFFICIAL_CLASSES)),
)
# a failed task is its per-task result's fields (a local one its outcomes row's) with its class
FAILED_TASK = Shape(
    "failed task",
    *TASK_RESULT.take("task_id"),
    Field("class", str, values=FAILURE_CLASSES),
    *TASK_RESULT.take("obligations_accepted", "n_obligations", "stop_reason", "cost_usd"),
)
FAILURE_ANATOMY = Kind(
    "afbench failure anatomy",
    Field("scope", str, values=("official",)),
    Field("note", str),
    Field("license", str),
    Field("release", RELEASE),
    Field("source_condition", str, values=CONDITIONS),
    Field("budget_usd", float, unit="USD per task"),
    Field("near_miss_share", float, doc="share of obligations that makes a near miss"),
    Field("method", str),
    Field("classes", ListOf(str, values=OFFICIAL_CLASSES)),
    Field("labels", MapOf(str, keys="class")),
    Field("inputs", MapOf(str, keys="release path")),
    Field(
        "models",
        ListOf(
            Shape(
                "model anatomy",
                *OFFICIAL_MODEL_FAILURES.fields,
                Field("failed_tasks", ListOf(FAILED_TASK)),
            )
        ),
        doc="in the leaderboard's order",
    ),
    doc="every failed task of every official model in one class (`afbench job analyse-failures`)",
)
LOCAL_CONFIGURATION_FAILURES = Shape(
    "configuration failures",
    Field("configuration", str, category=True),
    Field("tasks", int, unit="tasks"),
    Field("accepted", int, unit="tasks"),
    Field("failures", int, unit="tasks"),
    Field("counts", _counts("local failure counts", LOCAL_CLASSES)),
    Field("advisory", _counts("advisory counts", ADVISORY_CLASSES)),
)
LOCAL_FAILED_TASK = Shape(
    "task not accepted",
    *OUTCOMES.take("task_id"),
    Field("class", str, values=FAILURE_CLASSES),
    *OUTCOMES.take("outcome", "reason"),
    Field("advisory", str, null=True, values=ADVISORY_CLASSES, doc="infrastructure only"),
    *OUTCOMES.take("cost_usd"),
)
RUN_FAILURE_ANATOMY = Kind(
    "afbench run failure anatomy",
    Field("scope", str, values=("local run",)),
    Field("note", str),
    Field("release", RELEASE),
    Field("run", str, category=True),
    Field(
        "selection",
        Shape(
            "run selection",
            Field("name", str),
            Field("selection_sha256", str),
            Field("tasks", int, unit="tasks"),
        ),
    ),
    Field("method", str),
    Field("advisory_method", str),
    Field("classes", ListOf(str, values=LOCAL_CLASSES)),
    Field("labels", MapOf(str, keys="class")),
    Field("advisory_classes", ListOf(str, values=ADVISORY_CLASSES)),
    Field(
        "configurations",
        ListOf(
            Shape(
                "configuration anatomy",
                *LOCAL_CONFIGURATION_FAILURES.fields,
                Field("failed_tasks", ListOf(LOCAL_FAILED_TASK)),
            )
        ),
    ),
    doc="every task a local run did not get accepted, in one class (`analyse-run-failures`)",
)

# --- the task table ----------------------------------------------------------------------------
TASK_TABLE_SETTINGS = Shape(
    "task table settings",
    Field("shuffles", int, minimum=19),
    Field("seed", int, minimum=0),
    Field("alpha", float),
    Field("min_discrimination", float),
)
CONTROL = Shape(
    "shuffle control",
    Field("within", str, values=("tasks", "models")),
    Field("shuffles", int),
    Field("seed", int),
    Field("log_likelihood_median", float),
    Field("log_likelihood_max", float),
    Field("at_least_as_good", int),
    Field("p", float),
)
FIT = Shape(
    "Rasch fit",
    Field("log_likelihood", float),
    Field("sigma", float),
    Field("abilities", MapOf(float, keys="model slug")),
)
IDENTIFICATION = Shape(
    "identification",
    Field("models", int),
    Field("tasks", int),
    Field("distinct_difficulties", int),
    Field("note", str),
    Field("median_difficulty_sd", float, optional=True, doc="only when difficulties are reported"),
    Field("eap_reliability", float, optional=True, doc="only when difficulties are reported"),
)
AUDIT = Shape(
    "solve audit",
    Field("solved_by_none", ListOf(str)),
    Field("solved_by_all", ListOf(str)),
    Field("note", str),
)
DISCRIMINATIVE = Shape(
    "discriminative subset",
    Field("tasks", int, unit="tasks"),
    Field("rule", str),
    Field("note", str),
)
TASK_ROW = Shape(
    "task row",
    Field("task_id", str),
    Field("source_id", str, category=True),
    Field("solved_by", int, minimum=0, unit="models"),
    Field("solve_rate", float),
    Field("discrimination", float, null=True, doc="null: solved by all or by none"),
    Field("difficulty", float, null=True, doc="Rasch difficulty; null: withheld"),
    Field("difficulty_sd", float, null=True, doc="its posterior SD; null: withheld"),
    Field("discriminative", bool),
)
TASK_TABLE_METHODS = Shape(
    "task table methods",
    Field("model", str),
    Field("control", str),
    Field("discrimination", str),
)
TASK_TABLE = Kind(
    "afbench task table",
    Field("note", str),
    Field("license", str),
    Field("release", RELEASE),
    Field("source_condition", str, values=CONDITIONS),
    Field("budget_usd", float, unit="USD per task"),
    Field(
        "models",
        ListOf(
            Shape(
                "table model",
                Field("model", str),
                Field("display_name", str),
                Field("passes", int),
            )
        ),
    ),
    Field("inputs", MapOf(str, keys="release path")),
    Field("settings", TASK_TABLE_SETTINGS),
    Field("methods", TASK_TABLE_METHODS),
    Field("fit", FIT),
    Field("controls", ListOf(CONTROL)),
    Field("difficulties_reported", bool),
    Field("withheld", str, null=True, doc="why the difficulties are withheld"),
    Field("identification", IDENTIFICATION),
    Field("audit", AUDIT),
    Field("discriminative", DISCRIMINATIVE),
    Field("tasks", ListOf(TASK_ROW)),
    doc="per task its solves, discrimination and Rasch difficulty (`afbench job analyse-tasks`)",
)

# --- the power plan ----------------------------------------------------------------------------
SEQUENTIAL_CHARACTERISTICS = Shape(
    "sequential characteristics",
    Field("p10", float),
    Field("p01", float),
    Field("decisions", MapOf(float, keys="decision")),
    Field("expected_tasks", float, unit="tasks"),
    Field("tasks_quantiles", MapOf(int, keys="quantile"), unit="tasks"),
    Field("expected_usd", float, unit="USD"),
)
POWER_PLAN = Kind(
    "afbench power plan",
    Field("question", str, values=("tasks", "detectable difference")),
    Field("release", RELEASE, null=True, doc="null: planned without model imports"),
    Field(
        "models",
        Shape(
            "observed models",
            Field("a", str),
            Field("b", str),
            Field("source_condition", str, values=CONDITIONS),
            Field("tasks", int, unit="tasks"),
            Field("only_a", int, unit="tasks"),
            Field("only_b", int, unit="tasks"),
            Field("discordance", float),
            Field("design_effect", float, null=True),
            Field(
                "sources",
                MapOf(
                    Shape(
                        "source discordance",
                        Field("tasks", int),
                        Field("only_a", int),
                        Field("only_b", int),
                    ),
                    keys="source id",
                ),
            ),
            Field("discordance_icc", float, null=True),
            Field("direction_icc", float, null=True),
        ),
        null=True,
        doc="the two models' observed discordance; null: a baseline rate instead",
    ),
    Field("baseline_rate", float, null=True),
    Field("difference", float, null=True, doc="asked, or the answer; null: none reaches it"),
    Field("tasks", int, null=True, unit="tasks", doc="asked, or the answer; null: none"),
    Field("alpha", float),
    Field("power", float),
    Field("two_sided", bool),
    Field("configurations", int),
    Field("family", int, doc="pairs compared (Holm's family)"),
    Field("level", float, doc="alpha over the family"),
    Field("family_note", str),
    Field(
        "sources_as_unit",
        Shape(
            "sign-flip plan",
            Field("tasks", int, null=True, optional=True),
            Field("difference", float, null=True, optional=True),
            Field("power", float, null=True),
            Field("reachable", bool, optional=True),
            Field("cap", int, optional=True),
            Field("power_at_cap", float, optional=True),
            Field("exceeds_release", bool, optional=True),
            Field("test", str),
            Field("method", str),
            Field("draws", int),
            Field("seed", int),
            Field("monte_carlo_error", float, null=True),
            Field("sources", int),
            Field(
                "smallest_p_holm",
                float,
                doc="the smallest p the test over these sources can give, Holm over the family",
            ),
            Field("decidable", bool, doc="false: no pair can be declared different at alpha"),
        ),
        null=True,
        doc="the report's test; null without two models' imports",
    ),
    Field(
        "tasks_as_unit",
        Shape(
            "exact McNemar plan",
            Field("test", str),
            Field("method", str),
            Field("difference", float, null=True, optional=True),
            Field("power", float, null=True),
            Field("tasks", int, optional=True),
            Field("connor_tasks", int, optional=True),
            Field("exceeds_release", bool, null=True, optional=True),
        ),
    ),
    Field("assumption", str),
    Field("line", str),
    Field(
        "sequential",
        Shape(
            "sequential view",
            Field("test", str),
            Field("validity", str),
            Field("horizon", int, unit="tasks"),
            Field("horizon_rule", str),
            Field("batch_tasks", int, unit="tasks"),
            Field("prior_concentration", int),
            Field("futility_power", float),
            Field("usd_per_task", float, unit="USD"),
            Field("at_difference", SEQUENTIAL_CHARACTERISTICS),
            Field("at_no_difference", SEQUENTIAL_CHARACTERISTICS),
            Field("fixed_n_tasks", int, unit="tasks"),
            Field("fixed_n_usd", float, unit="USD"),
            Field("line", str),
        ),
        optional=True,
        doc="only with --sequential",
    ),
    doc="the run planner's answer for the report's test (`afbench plan-run`)",
)


# --- the analysis --------------------------------------------------------------------------------
ANALYSIS_ROW = Shape(
    "analysis leaderboard row",
    Field("model", str, category=True),
    Field("display_name", str),
    Field("passes", int, unit="tasks"),
    Field("tasks", int, unit="tasks"),
    Field("success_rate", float),
    Field("wilson_low", float),
    Field("wilson_high", float),
    Field("standard_error", float, null=True, doc="null: fewer than 2 tasks"),
    Field("clustered", CLUSTERED_RATE),
    Field("leader_tier", bool),
    Field("letters", LETTERS),
    Field("leader_tier_tasks_as_unit", bool),
    Field("letters_tasks_as_unit", LETTERS),
    Field("infrastructure_errors", int, unit="tasks"),
    Field(
        "infrastructure_bounds",
        Shape(
            "infrastructure bounds",
            Field("passes", int),
            Field("errors", int),
            Field("tasks", int),
            Field("passes_high", int),
            Field("rate", float),
            Field("rate_high", float),
            Field("clustered", INTERVAL, doc="the union of both resolutions' intervals"),
        ),
    ),
    Field("over_budget_records", int, unit="tasks"),
    Field("published_passes", int, null=True),
    Field("matches_published", bool, null=True),
)
RESOLVED = Shape(
    "errors resolved one way",
    Field("only_a", int),
    Field("only_b", int),
    Field("p_exact", float),
    Field("p_sign_flip", float),
    Field("p_sign_flip_holm", float),
    Field("significant", bool),
    Field("clustered", CLUSTERED_DIFFERENCE),
)
PAIR = Shape(
    "pair",
    Field("a", str, doc="ranked above b"),
    Field("b", str),
    Field("tasks", int, unit="tasks"),
    Field("both", int, unit="tasks"),
    Field("only_a", int, unit="tasks"),
    Field("only_b", int, unit="tasks"),
    Field("neither", int, unit="tasks"),
    Field("p_exact", float),
    Field("p_holm", float),
    Field("significant_tasks_as_unit", bool),
    Field("p_sign_flip", float),
    Field("p_sign_flip_holm", float),
    Field("significant", bool, doc="the decision the report shows"),
    Field("difference_difference", float, doc="a - b, paired"),
    Field("difference_standard_error", float, null=True, doc="null: fewer than 2 tasks"),
    Field("difference_low", float, null=True, doc="null: fewer than 2 tasks"),
    Field("difference_high", float, null=True, doc="null: fewer than 2 tasks"),
    Field("clustered", CLUSTERED_DIFFERENCE),
    Field(
        "infrastructure",
        Shape(
            "infrastructure resolutions",
            Field("favour_a", RESOLVED),
            Field("favour_b", RESOLVED),
            Field("marked", bool, doc="the decision shown could flip"),
            Field("clustered", INTERVAL),
        ),
    ),
)
TIER_CHANGE = Shape(
    "tier change",
    Field("errors_solved_for", str),
    Field("leader_tier", ListOf(str)),
    Field("letters", MapOf(LETTERS, keys="model slug")),
    Field("leader_tier_changes", bool),
    Field("letters_change", bool),
)
PAIRED = Shape(
    "paired comparisons",
    Field("decisions", str),
    Field("test", str),
    Field("test_tasks_as_unit", str),
    Field("correction", str),
    Field("sources", int),
    Field("difference", str),
    Field("clustered_difference", str),
    Field("infrastructure", str),
    Field("tiers", str),
    Field(
        "smallest_p_holm",
        float,
        doc="the smallest Holm-adjusted sign-flip p the sources and pairs allow "
        "(stats.sign_flip_smallest_p)",
    ),
    Field("decidable", bool, doc="false: no pair can be declared different at alpha"),
    Field("marked_pairs", int),
    Field("tier_changes", ListOf(TIER_CHANGE)),
    Field("pairs", ListOf(PAIR)),
)
METHODS = Shape(
    "methods",
    *(
        Field(name, str)
        for name in (
            "success_rate_independent",
            "standard_error",
            "success_rate_clustered",
            "clustered_difference",
            "clustered_cr0",
            "decisions",
            "paired_test",
            "paired_test_tasks_as_unit",
            "tiers",
            "infrastructure_bounds",
            "per_source",
            "which_to_cite",
            "few_sources",
        )
    ),
    Field(
        "conventions",
        Shape(
            "conventions",
            Field("alpha", float),
            Field("two_sided", bool),
            Field("exact_p", str),
            Field("holm_family", str),
            Field("sources", int),
            Field("tasks", int),
            Field("df", float, null=True),
            Field("df_method", str),
            Field(
                "randomisation",
                Shape(
                    "randomisation",
                    Field("draws", str),
                    Field("seed", int, null=True),
                    Field("monte_carlo_error", float),
                ),
            ),
        ),
    ),
)
PER_SOURCE = Shape(
    "per-source row",
    Field("source_id", str),
    Field("title", str),
    Field("tasks", int, unit="tasks"),
    Field("passes", MapOf(int, keys="model slug")),
    Field("rates", MapOf(float, null=True, keys="model slug")),
    Field("wilson", MapOf(INTERVAL, null=True, keys="model slug")),
)
COST_POINT = Shape(
    "cost-success point",
    Field("model", str),
    Field("display_name", str),
    Field("mean_cost_usd", float, unit="USD per task"),
    Field("cost_per_solved_usd", float, null=True, unit="USD"),
    Field("total_cost_usd", float, unit="USD"),
    Field("success_rate", float),
    Field("on_frontier", bool),
)
LOCAL_RUN_ROW = Shape(
    "local run row",
    Field("run", str),
    Field("configuration", str),
    Field("selection", str),
    Field("tasks", int, unit="tasks"),
    Field("counts", MapOf(int, keys="outcome")),
    Field("success_rate", float, null=True),
    Field("success_rate_bounds", BOUNDS),
    Field("pass_at_k", MapOf(float, keys="k"), null=True),
    Field("conformant", bool, null=True),
    Field("conformance_reasons", ListOf(str)),
    Field("certification", str, null=True),
)
ANATOMY_BLOCK = Shape(
    "anatomy block",
    Field("classes", ListOf(str, values=FAILURE_CLASSES)),
    Field("labels", MapOf(str, keys="class")),
    Field("method", str, null=True),
    Field("local_method", str),
    Field("near_miss_share", float, null=True),
    Field("advisory_method", str),
    Field("advisory_classes", ListOf(str, values=ADVISORY_CLASSES)),
    Field("official", ListOf(OFFICIAL_MODEL_FAILURES), null=True),
    Field(
        "local_runs",
        ListOf(
            Shape(
                "run anatomy summary",
                Field("run", str),
                Field("configurations", ListOf(LOCAL_CONFIGURATION_FAILURES)),
            )
        ),
    ),
)
TASK_TABLE_BLOCK = Shape(
    "task table block",
    Field("source_condition", str, values=CONDITIONS),
    Field("budget_usd", float),
    Field("settings", TASK_TABLE_SETTINGS),
    Field("methods", TASK_TABLE_METHODS),
    Field("fit", FIT),
    Field("controls", ListOf(CONTROL)),
    Field("difficulties_reported", bool),
    Field("withheld", str, null=True),
    Field("identification", IDENTIFICATION),
    Field("audit", AUDIT),
    Field("discriminative", DISCRIMINATIVE),
    Field("models", int),
    Field("tasks", int),
    Field(
        "by_solves",
        ListOf(
            Shape(
                "tasks by solves",
                Field("solved_by", int),
                Field("tasks", int),
                Field("difficulty", float, null=True),
                Field("difficulty_sd", float, null=True),
                Field("mean_discrimination", float, null=True),
                Field("discriminative", int),
            )
        ),
    ),
)
PROVENANCE = Shape(
    "provenance",
    Field("files", ListOf(VERIFIED_ENTRY)),
    Field("release_dates", RELEASE_DATES),
    Field("config_digest", str),
    Field("versions", MapOf(str, keys="tool")),
)
SEQUENTIAL_BLOCK = Shape(
    "sequential comparison shown",
    Field("run", SEQUENTIAL_RUN, doc="the comparison's last step"),
    Field(
        "plan_checks",
        ListOf(Shape("run's plan check", Field("run", str), *PLAN_CHECK.fields)),
        doc="each executed run's check against the sealed plan",
    ),
)
HISTORY_STATUSES = ("compared", "too-few-tasks", "no-diff")
HISTORY = Shape(
    "history across revisions",
    Field("note", str),
    Field("revision", str, doc="this report's revision"),
    Field("confidence", float),
    Field("alpha", float),
    Field("methods", CROSS_REVISION.field("methods").type),
    Field("no_diff", str, doc="why a revision without a comparable subset is not compared"),
    Field(
        "store",
        ListOf(
            Shape(
                "store partition read",
                Field("table", str),
                Field("revision", str),
                Field("file", str, doc="its path in the store"),
                Field("sha256", str),
                Field("rows", int, minimum=0, unit="rows"),
            )
        ),
        doc="the other revisions' partitions the history was computed from",
    ),
    Field(
        "revisions",
        ListOf(
            Shape(
                "other revision",
                Field("revision", str),
                Field(
                    "comparable",
                    CROSS_REVISION.field("comparable").type,
                    null=True,
                    doc="the pair's comparable subset; null: no diff between the two",
                ),
                Field("comparable_file", str, null=True),
                Field("configurations", int, minimum=0, doc="of this revision's it has"),
                Field("compared", int, minimum=0, doc="of those, compared"),
            )
        ),
        doc="every other revision in the store, in order",
    ),
    Field(
        "configurations",
        ListOf(
            Shape(
                "configuration's history",
                Field("kind", str, values=("official", "local")),
                Field("model", str, null=True),
                Field("run", str, null=True),
                Field("configuration", str, null=True),
                Field("label", str),
                Field(
                    "revisions",
                    ListOf(
                        Shape(
                            "against another revision",
                            Field("revision", str),
                            Field("status", str, values=HISTORY_STATUSES),
                            Field(
                                "tasks",
                                int,
                                minimum=0,
                                unit="tasks",
                                doc="of the comparable subset, on both sides",
                            ),
                            Field("comparison", REVISION_COMPARISON, null=True),
                        )
                    ),
                    doc="each other revision that has the configuration",
                ),
            )
        ),
        doc="each configuration of this revision, as the report shows them",
    ),
)
ANALYSIS = Kind(
    "afbench analysis",
    Field("note", str),
    Field("license", str),
    Field("release", RELEASE),
    Field("confidence", float),
    Field("source_condition", str, values=CONDITIONS),
    Field("budget_usd", float, unit="USD per task"),
    Field("alpha", float),
    Field("methods", METHODS),
    Field("published", PUBLISHED),
    Field("leaderboard", ListOf(ANALYSIS_ROW), doc="best first"),
    Field("paired", PAIRED),
    Field("per_source", ListOf(PER_SOURCE)),
    Field(
        "cost_success",
        Shape(
            "cost and success",
            Field("axis", str),
            Field("models", ListOf(COST_POINT)),
            Field("frontier", ListOf(str)),
        ),
    ),
    Field("budget_audit", COMPARISON_BUDGET_AUDIT),
    Field("local_runs", ListOf(LOCAL_RUN_ROW), doc="one row per run and configuration"),
    Field("cost_ledger", COST_LEDGER, optional=True, doc="with executed trials only"),
    Field(
        "sequential",
        SEQUENTIAL_BLOCK,
        optional=True,
        doc="with a sealed comparison run through `snakemake execute` only",
    ),
    Field("anatomy", ANATOMY_BLOCK, optional=True, doc="with the failure anatomies only"),
    Field("task_table", TASK_TABLE_BLOCK, optional=True, doc="with the task table only"),
    Field(
        "cross_revision",
        CROSS_REVISION.shape,
        optional=True,
        doc="the comparisons across revisions into this revision, without their kind and "
        "version; with an upgrade's comparisons only",
    ),
    Field(
        "history",
        HISTORY,
        optional=True,
        doc="each configuration against the other revisions of the results store; with "
        "report.history only",
    ),
    Field(
        "provenance", PROVENANCE, optional=True, doc="in the report's analysis; not the figures'"
    ),
    doc="everything the report shows, computed from the imports (the report's analysis)",
)
