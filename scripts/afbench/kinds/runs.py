"""Local runs: a verifier's verdict, a run's summary, and its two CSV tables (outcomes: one row
per configuration and selected task; attempts: one row per trial or verdict)."""

from __future__ import annotations

from . import ANY, Field, Kind, ListOf, MapOf, Shape, Table
from .official import BUDGET_AUDIT
from .release import RELEASE
from .stats import CLUSTERED_RATE

OUTCOME_VALUES = ("accepted", "rejected", "unverified", "error", "incomplete", "missing")
ATTEMPT_OUTCOMES = OUTCOME_VALUES[:-1]
CHECK_NAMES = ("target_equivalence", "allowed_axioms", "lean_kernel", "nanoda_replay")
VERIFIER_ID = Shape("verifier", Field("name", str), Field("version", str))

VERDICT = Kind(
    "afbench verdict import",
    Field("task_id", str),
    Field("status", str, values=("accepted", "rejected", "error")),
    Field("reward", int, null=True, values=(0, 1), doc="accepted 1, rejected 0, error null"),
    Field("reason", str),
    Field(
        "checks",
        Shape(
            "checks", *(Field(name, bool, null=True, doc="null: not run") for name in CHECK_NAMES)
        ),
    ),
    Field(
        "obligations",
        Shape("verdict obligations", Field("total", int), Field("accepted", int)),
    ),
    Field("error", ANY, doc="null, or the verifier's error object ({kind, message, ...})"),
    Field("verifier", VERIFIER_ID),
    Field("verifier_provenance_attested", bool),
    Field("local_capability_score", None),
    Field(
        "input",
        Shape("verdict input", Field("path", str), Field("sha256", str)),
    ),
    doc="one verifier verdict, checked for shape and contradictions (`afbench verdict`)",
)

COUNTS = Shape(
    "outcome counts",
    *(Field(o, int, minimum=0, unit="tasks") for o in OUTCOME_VALUES),
)
BY_OUTCOME = MapOf(int, keys="outcome", doc="trials by outcome (no 'missing')")
BOUNDS = Shape(
    "success rate bounds",
    Field("lower", float, doc="errors and the rest as failures"),
    Field("upper", float, null=True, doc="errors as successes; null: withheld"),
    Field("upper_withheld", str, null=True, doc="why the upper bound is withheld"),
)
CHECK = Shape(
    "conformance check",
    Field("status", str, values=("passed", "failed", "not certified")),
    Field("reasons", ListOf(str)),
)
CONFORMANCE = Shape(
    "conformance certificate",
    Field("conformant", bool, null=True, doc="null: not certified, or not checked (verdicts)"),
    Field("status", str, values=("conformant", "not conformant", "not certified", "not checked")),
    Field("reasons", ListOf(str)),
    Field(
        "checks",
        Shape(
            "conformance checks",
            Field("settings", CHECK),
            Field("verification", CHECK),
            Field("retries", CHECK),
            Field("task_checksums", CHECK),
        ),
        optional=True,
        doc="Harbor runs only",
    ),
    Field(
        "task_checksums",
        Shape(
            "task checksum counts",
            Field("trials", int),
            Field("compared", int),
            Field("differ", int),
            Field("without_checksum", int),
        ),
        optional=True,
        doc="Harbor runs only",
    ),
    Field(
        "compared",
        str,
        optional=True,
        doc="Harbor runs only: for how many trials the task checksums were compared ('compared "
        "N of M trials'); conformant only when N is M",
    ),
    Field("image_digests", str, optional=True, doc="Harbor runs only"),
)
HARBOR_JOB = Shape(
    "Harbor job facts",
    Field("job_dir", str),
    Field("job_id", str, null=True),
    Field("harbor_version", str, null=True, doc="null: unknown (no readable lock.json)"),
    Field("harbor_version_from", str),
    Field("error_policy", str),
    Field("finished", bool),
    Field("incomplete", str, null=True, doc="why the job is unfinished; null: finished"),
    Field(
        "retry",
        Shape(
            "retry settings",
            Field("max_retries", int, minimum=0),
            Field("include_exceptions", ListOf(str), null=True),
            Field("exclude_exceptions", ListOf(str), null=True),
        ),
    ),
    Field("n_retries", int, null=True),
    Field("retries_logged", int, null=True, doc="null: no job.log"),
)
HARBOR_ONLY = "Harbor runs only"
CONFIGURATION = Shape(
    "run configuration",
    Field("configuration", str, category=True, doc="its label: agent, model, env, settings"),
    Field("verifier", VERIFIER_ID, optional=True, doc="verdicts only"),
    Field("agent", str, null=True),
    Field("agent_version", str, null=True, optional=True, doc=HARBOR_ONLY),
    Field("model", str, null=True),
    Field("model_info", ANY, optional=True, doc=f"{HARBOR_ONLY}: Harbor's agent_info.model_info"),
    Field("n_attempts", int, optional=True, doc=HARBOR_ONLY),
    Field("max_retries", int, optional=True, doc=HARBOR_ONLY),
    Field("settings", MapOf(ANY, keys="Harbor setting"), optional=True, doc=HARBOR_ONLY),
    Field("environment", str, null=True, optional=True, doc=HARBOR_ONLY),
    Field("non_default_settings", MapOf(ANY, keys="setting"), optional=True, doc=HARBOR_ONLY),
    Field("note", str, optional=True, doc="verdicts only"),
    Field("jobs", ListOf(str)),
    Field("harbor_jobs", ListOf(HARBOR_JOB), null=True, doc="null for verdicts"),
    Field("counts", COUNTS),
    Field(
        "attempts",
        Shape(
            "attempt counts",
            Field(
                "total",
                int,
                minimum=0,
                unit="trials",
                doc="the trials that are attempts: a replaced one (reruns) is not",
            ),
            Field("per_task", ListOf(int), doc="the distinct numbers of attempts per task"),
            Field("by_outcome", BY_OUTCOME),
        ),
    ),
    Field("success_rate", float, null=True, doc="null unless every task was decided"),
    Field("success_rate_bounds", BOUNDS),
    Field(
        "retries",
        Shape(
            "retries",
            Field("max_retries", int, null=True),
            Field("retries", int),
            Field(
                "retried_trials",
                ListOf(
                    Shape(
                        "retried trial",
                        Field("trial_name", str),
                        Field("task_id", str),
                        Field("retries", int),
                        Field("earlier_attempts_raised", ListOf(str)),
                        Field("outcome", str, values=ATTEMPT_OUTCOMES),
                    )
                ),
            ),
            Field("trials_with_unknown_retries", int),
            Field("jobs_n_retries", int, null=True),
            Field("note", str),
        ),
        null=True,
        doc="null for verdicts",
    ),
    Field(
        "retry_shift",
        Shape(
            "retry shift",
            Field("method", str),
            Field(
                "retried", Shape("retried", Field("trials", int), Field("by_outcome", BY_OUTCOME))
            ),
            Field(
                "ran_once", Shape("ran once", Field("trials", int), Field("by_outcome", BY_OUTCOME))
            ),
            Field(
                "first_attempts_only",
                Shape(
                    "first attempts only",
                    Field("counts", COUNTS),
                    Field("success_rate_bounds", BOUNDS),
                ),
            ),
        ),
        null=True,
        doc="null when nothing was retried, or a retry count is unknown",
    ),
    Field(
        "reruns",
        Shape(
            "reruns",
            Field(
                "replaced_attempts",
                int,
                minimum=0,
                unit="trials",
                doc="trials of the afbench attempts a later one replaced: attempts.csv rows "
                "with replaced_by, counted in no outcome or attempt",
            ),
            Field(
                "replaced_cost_usd",
                float,
                null=True,
                unit="USD",
                doc="what they cost (in their tasks' cost_usd); null: one reported none",
            ),
            Field(
                "rerun_trials",
                ListOf(
                    Shape(
                        "rerun trial",
                        Field("task_id", str),
                        Field("job_name", str, doc="the afbench attempt that stands"),
                        Field("attempt", int, minimum=1),
                        Field("outcome", str, values=OUTCOME_VALUES, doc="the task's outcome"),
                        Field(
                            "replaced",
                            ListOf(
                                Shape(
                                    "replaced attempt",
                                    Field("job_name", str),
                                    Field("attempt", int, minimum=1),
                                    Field("trial_name", str),
                                    Field("outcome", str, values=ATTEMPT_OUTCOMES),
                                    Field("reason", str, null=True),
                                    Field("cost_usd", float, null=True, unit="USD"),
                                )
                            ),
                        ),
                    )
                ),
            ),
            Field("note", str),
        ),
        null=True,
        optional=True,
        doc="afbench's own reruns of errored trials (a sealed sequential comparison's); null "
        "when no attempt was replaced; absent in summaries written before reruns were recorded",
    ),
    Field("pass_at_k", MapOf(float, keys="k"), null=True),
    Field("pass_at_k_note", str, null=True),
    Field("budget_audit", BUDGET_AUDIT),
    Field(
        "conformant",
        bool,
        null=True,
        optional=True,
        doc="absent in summaries written before certificates existed",
    ),
    Field("conformance", CONFORMANCE, optional=True),
)
ROLES = ("confirmatory", "exploratory")
PLAN_CHECK = Shape(
    "run against its sealed plan",
    Field("note", str),
    Field("plan_sha256", str),
    Field(
        "primary_comparison",
        Shape("sealed comparison", Field("selection", str), Field("a", str), Field("b", str)),
    ),
    Field("as_planned", bool),
    Field("problems", ListOf(str), doc="each departure from the sealed plan, named"),
    Field(
        "comparisons",
        ListOf(
            Shape(
                "comparison role",
                Field("a", str),
                Field("b", str),
                Field("configurations", ListOf(str)),
                Field("role", str, values=ROLES),
                Field("reason", str),
                Field("plan_sha256", str, null=True),
            )
        ),
    ),
    doc="afbench.runs.conformance.plan_conformance",
)
RUN_SUMMARY = Kind(
    "afbench local run summary",
    Field("note", str),
    Field("condition", str, values=("source-free",)),
    Field("verifier_provenance_attested", bool),
    Field("local_capability_score", None),
    Field("official_leaderboard", str),
    Field("release", RELEASE),
    Field("run", str, category=True),
    Field("input_kind", str, values=("harbor", "verdicts")),
    Field(
        "selection",
        Shape(
            "run selection",
            Field("name", str),
            Field("selection_sha256", str),
            Field("tasks", int, minimum=0, unit="tasks"),
        ),
    ),
    Field("configuration_rule", str),
    Field("attempt_rule", str),
    Field("bounds_rule", str),
    Field("configurations", ListOf(CONFIGURATION)),
    Field("conformant", bool, null=True, optional=True),
    Field("certification", str, optional=True),
    Field("protocol", str, null=True, optional=True),
    Field(
        "analysis_plan",
        PLAN_CHECK,
        optional=True,
        doc="only in an executed run with a sealed analysis plan",
    ),
    Field(
        "carried_over",
        Shape(
            "carried over",
            Field("note", str),
            Field("previous_revision", str),
            Field("tasks", ListOf(str), doc="the tasks whose results the upgrade plan reuses"),
        ),
        optional=True,
        doc="only in an executed run of an upgrade that reuses earlier results",
    ),
    doc="a local run over its selection, one entry per configuration (`afbench import-run`)",
)

_COMMON = (
    Field("configuration", str, category=True),
    Field("task_id", str),
    Field("outcome", str, values=OUTCOME_VALUES),
    Field("reward", int, null=True, doc="accepted 1, rejected 0, otherwise empty: never 0"),
    Field("reason", str, null=True),
)
_AGENT = (
    Field("agent", str, null=True),
    Field("agent_version", str, null=True),
    Field("model", str, null=True),
)
OUTCOMES = Table(
    "outcomes",
    *_COMMON,
    Field("attempts", int, minimum=0, unit="trials", doc="a replaced attempt is none"),
    Field("accepted_attempts", int, minimum=0, unit="trials"),
    Field(
        "cost_usd",
        float,
        null=True,
        unit="USD",
        doc="summed over its attempts and the attempts they replaced",
    ),
    *_AGENT,
    Field("trial_dirs", str, null=True, doc="its trials' folders, ';'-separated"),
    doc="outcomes.csv: one row per configuration and selected task",
)
ATTEMPTS = Table(
    "attempts",
    *_COMMON,
    Field("cost_usd", float, null=True, unit="USD"),
    *_AGENT,
    Field("trial_name", str, null=True),
    Field("job_id", str, null=True),
    Field("trial_dir", str, null=True),
    Field(
        "replaced_by",
        str,
        null=True,
        doc="the job of the afbench attempt that replaced this one (a sealed comparison's "
        "rerun of an errored trial): then no attempt of its own; empty: it counts",
    ),
    doc="attempts.csv: one row per trial (or verdict)",
)
PASS_AT_K_ESTIMATE = Shape(
    "pass@k estimate",
    Field("k", int, minimum=1, unit="attempts"),
    Field(
        "clustered",
        CLUSTERED_RATE,
        doc="the mean over tasks of each task's unbiased pass@k, its CR2 interval over sources",
    ),
)
PASS_AT_K = Kind(
    "afbench run pass-at-k",
    Field("run", str, category=True),
    Field("estimator", str),
    Field("attempt_rule", str),
    Field("confidence", float),
    Field(
        "configurations",
        ListOf(
            Shape(
                "pass@k configuration",
                Field("configuration", str, category=True),
                Field("tasks", int, minimum=0, unit="tasks"),
                Field(
                    "attempts",
                    int,
                    minimum=0,
                    unit="trials",
                    doc="attempts.csv rows that are attempts: a replaced one is not",
                ),
                Field("replaced_attempts", int, minimum=0, unit="trials"),
                Field("attempts_per_task", ListOf(int), doc="the distinct numbers, ascending"),
                Field(
                    "estimates",
                    ListOf(PASS_AT_K_ESTIMATE),
                    doc="k = 1 up to the fewest attempts any task has; empty: see note",
                ),
                Field("note", str, null=True, doc="why there is no estimate; null: there are"),
            )
        ),
    ),
    doc="pass@k of each configuration of a run, from its attempts (`afbench job pass-at-k`)",
)
