"""Opt-in execution: each trial's receipt, the run's cost ledger, the sealed analysis plan, the
sequential decision taken after each batch, and each step of a comparison run through
`snakemake execute`."""

from __future__ import annotations

from . import ANY, SAFE_NAME, Field, Kind, ListOf, MapOf, Shape
from .release import RELEASE
from .runs import OUTCOME_VALUES
from .tasks import PLAN_TASK

STEP_NAMES = ("export", "check", "run")
PLAN_MADE = Shape(
    "plan of the trial",
    Field(
        "selection",
        Shape(
            "planned selection",
            Field("name", str),
            Field("selection_sha256", str),
            Field("tasks", int, minimum=0),
        ),
    ),
    Field("agent", str),
    Field("model", str, null=True),
    Field("sha256", str, doc="the plan file's SHA-256"),
)
TRIAL = Shape(
    "trial",
    Field("trial_name", str),
    Field("task_id", str),
    Field("outcome", str, values=OUTCOME_VALUES),
    Field("reward", int, null=True),
    Field("reason", str, null=True),
    Field(
        "cost_usd",
        float,
        null=True,
        unit="USD",
        minimum=0,
        doc="what Harbor recorded; null: none",
    ),
    Field("result_sha256", str, null=True),
)
TRIAL_RECEIPT = Kind(
    "afbench trial receipt",
    Field("release", RELEASE),
    Field("plan", PLAN_MADE),
    Field("task_id", str),
    Field("attempt", int, minimum=1),
    Field("run_agent", str, doc="the -a of the harbor run argv"),
    Field("run_model", str, null=True, doc="its -m; null: none"),
    Field("argv_sha256", str, doc="digest of the three steps' argument vectors"),
    Field(
        "steps",
        Shape("trial steps", *(PLAN_TASK.field(name) for name in STEP_NAMES)),
        doc="the plan's steps, the run's job name suffixed with the attempt",
    ),
    Field(
        "environment",
        MapOf(MapOf(str, keys="variable"), keys="step"),
        null=True,
        doc="per step, where each variable came from (names and sources, never values)",
    ),
    Field("job_name", str),
    Field("job_dir", str),
    Field("lock", str),
    Field("action", str, doc="what this job did with the trial"),
    Field("worst_case_usd", float, unit="USD", doc="the trial's cap, reserved before it ran"),
    Field("refused", str, null=True, doc="why the trial did not run; null: it ran"),
    Field(
        "meter",
        Shape(
            "meter",
            Field("running_cost_usd", float, null=True, unit="USD"),
            Field("stopped", str, null=True, doc="why afbench stopped Harbor; null: it did not"),
            Field("cost_usd", float, null=True, unit="USD"),
            Field("overshoot_usd", float, null=True, unit="USD"),
        ),
        null=True,
    ),
    Field("trials", ListOf(TRIAL)),
    Field("outcome", str, doc="its trials' outcome, 'mixed', 'none' or 'not started'"),
    Field("round", int, null=True, minimum=1, doc="its round in a partial run; null: none"),
    doc="what one trial job ran and what came of it (`afbench job run-trial`)",
)

LEDGER_TRIAL = Shape(
    "ledger trial",
    Field("job_name", str),
    Field("task_id", str),
    Field("attempt", int),
    Field("agent", str),
    Field("model", str, null=True),
    Field("status", str),
    Field("cost_usd", float, null=True, unit="USD"),
    Field("cost_reported", bool, null=True),
    Field("worst_case_usd", float, unit="USD"),
    Field("overshoot_usd", float, null=True, unit="USD"),
    Field("stopped", str, null=True),
    Field("held_usd", float, unit="USD"),
    Field("refused", str, null=True),
    Field("action", str, null=True),
)
COST_LEDGER = Kind(
    "afbench cost ledger",
    Field("release", RELEASE),
    Field("ceiling_usd", float, null=True, unit="USD", doc="null: no ceiling"),
    Field("spent_usd", float, unit="USD"),
    Field("held_usd", float, unit="USD"),
    Field("overshoots", int, minimum=0, unit="trials"),
    Field("overshoot_usd", float, unit="USD"),
    Field("ledger_spent_usd", float, unit="USD", doc="the whole live ledger's"),
    Field("ledger_held_usd", float, unit="USD"),
    Field("ledger_open_usd", float, unit="USD"),
    Field("trials", ListOf(LEDGER_TRIAL)),
    Field("refused", int, minimum=0, unit="trials"),
    Field("stopped", bool, doc="a trial was refused at the ceiling"),
    Field("interrupted_not_rerun", int, minimum=0, unit="trials"),
    Field(
        "partial",
        Shape(
            "partial run",
            Field(
                "rounds",
                ListOf(
                    Shape(
                        "round",
                        Field("round", int),
                        Field("ran", int),
                        Field("not_run", int),
                    )
                ),
            ),
            Field("complete_rounds", int),
        ),
        null=True,
        doc="null: not a partial run",
    ),
    Field("live_ledger", str, doc="the live ledger's path"),
    Field("note", str),
    doc="the executed trials' reported costs beside the ceiling (`afbench job write-cost-ledger`)",
)


_NEEDED: list[tuple[str, str]] = []  # (event, field): a field that event's line must have


def _when(
    events: str, name: str, type: object, doc: str, *, needed: bool = False, **more: object
) -> Field:
    """A field only some events' lines have (absent from the others: empty in a table); with
    `needed`, each of those events' lines has it (lines written before it was added lack the
    others)."""
    if needed:
        _NEEDED.extend((event, name) for event in events.split(", "))
    return Field(name, type, f"{events}: {doc}", optional=True, **more)


# One line of the live cost ledger (afbench.execution.ledger writes it, and reads it strictly
# through this declaration; the ledger is no artifact): what the results store and `afbench export
# --ledger` tabulate.
LEDGER_ENTRY = Shape(
    "live ledger entry",
    Field(
        "event",
        str,
        values=("start", "finish", "released", "interrupted", "refused"),
        doc="start: the trial's cap reserved; finish: what it spent; released: it never "
        "reached Harbor, nothing spent; interrupted: it reached Harbor and its holder died, its "
        "cap held for good; refused: not started, at the ceiling",
    ),
    Field("at", str, time=True, doc="when the line was written (UTC, to the second)"),
    Field(
        "job_name", str, pattern=SAFE_NAME, doc="the trial's Harbor job (the receipt's job_name)"
    ),
    Field("task_id", str),
    Field("attempt", int, minimum=1),
    Field("agent", str, doc="the -a of the harbor run argv"),
    Field("model", str, null=True, doc="its -m; null: none"),
    _when("start", "worst_case_usd", float, "the cap reserved", needed=True, unit="USD", minimum=0),
    _when("finish", "cost_usd", float, "what the trial spent", needed=True, unit="USD", minimum=0),
    _when(
        "finish",
        "cost_reported",
        bool,
        "every Harbor trial of the job reported its cost",
        needed=True,
    ),
    _when(
        "finish", "trials", int, "the job's Harbor trials", needed=True, unit="trials", minimum=0
    ),
    _when("finish", "cap_usd", float, "the trial's cap", unit="USD", minimum=0),
    _when("finish", "overshoot_usd", float, "spent beyond the cap", unit="USD", minimum=0),
    _when(
        "finish",
        "running_cost_usd",
        float,
        "what afbench saw it spend",
        null=True,
        unit="USD",
        minimum=0,
    ),
    _when(
        "finish",
        "stopped",
        str,
        "why afbench stopped Harbor; null: it did not",
        null=True,
        values=("cap", "ceiling"),
    ),
    _when(
        "interrupted",
        "held_usd",
        float,
        "what stays held for good",
        needed=True,
        unit="USD",
        minimum=0,
    ),
    _when("released, interrupted, refused", "reason", str, "why, as text", needed=True),
    Field("host", str, doc="the host of the process that wrote it"),
    Field("pid", int, minimum=1, doc="its process id"),
    Field("slurm_job_id", str, null=True, optional=True, doc="its SLURM job; null: none"),
    _when("start", "lock", str, "the trial's lock file"),
    doc="one line of the live cost ledger beside the Harbor jobs folder (afbench.execution.ledger)",
)
# the fields each event's line must have: those of every line, then the event's own
LEDGER_REQUIRED = {
    event: (
        *(f.name for f in LEDGER_ENTRY.fields if not f.optional and f.name != "event"),
        *(name for when, name in _NEEDED if when == event),
    )
    for event in LEDGER_ENTRY.field("event").values
}

COMPARISON = Shape(
    "primary comparison",
    Field("selection", str),
    Field("a", str, doc="configuration a's label"),
    Field("b", str),
    Field("estimand", str),
    Field("sided", str),
)
SIDE = Shape(
    "configuration side",
    Field("label", str),
    Field("agent", str),
    Field("model", str, null=True),
    Field("environment_type", str),
    Field("attempts", int, minimum=1),
    Field("agent_timeout_s", int, unit="seconds"),
    Field("verifier_timeout_s", int, unit="seconds"),
)
CRITERIA = Shape(
    "sealed criteria",
    Field("tasks", ListOf(str)),
    Field("sources", ListOf(str)),
    Field("limit", int, null=True),
    Field(
        "stratified",
        Shape("stratified settings", Field("tasks", int), Field("seed", int)),
        null=True,
    ),
)
CHARACTERISTICS = Shape(
    "operating characteristics",
    Field("p10", float),
    Field("p01", float),
    Field("decisions", MapOf(float, keys="decision"), doc="chance of each decision"),
    Field("expected_tasks", float, unit="tasks"),
    Field("tasks_quantiles", MapOf(int, keys="quantile"), unit="tasks"),
)
SEQUENTIAL_ONLY = "sequential stopping only"
# what a sealed comparison does with a trial that ends in an infrastructure error (afbench.
# sequential): count it both ways (the rule of plans sealed before afbench sealed one), or run
# it again up to the configurations' attempts and leave out a task whose trials still err
ERROR_RULES = ("bounds", "rerun then exclude")
FIXED_ONLY = "fixed-n stopping only"
TEST = Shape(
    "sealed test",
    Field("test", str),
    Field("method", str, optional=True, doc=SEQUENTIAL_ONLY),
    Field("citations", ListOf(str), optional=True, doc=SEQUENTIAL_ONLY),
    Field("validity", str, optional=True, doc=SEQUENTIAL_ONLY),
    Field("alpha", float),
    Field("tasks", int, optional=True, doc=FIXED_ONLY),
    Field("difference", float, optional=True),
    Field("discordance", float, optional=True),
    Field("power_asked", float, optional=True),
    Field("prior_concentration", int, optional=True),
    Field("horizon", int, optional=True, unit="tasks"),
    Field("horizon_rule", str, optional=True),
    Field("batch_tasks", int, optional=True, unit="tasks"),
    Field("boundary", ListOf(int), optional=True, doc="per discordant pairs m: the least k"),
    Field("threshold_log_e", float, optional=True),
    Field("threshold_e", float, optional=True),
    Field("ville_threshold_e", float, optional=True),
    Field("size_per_side", float, optional=True),
    Field("looks", ListOf(int), optional=True, unit="tasks"),
    Field(
        "futility",
        Shape(
            "futility",
            Field("method", str),
            Field("conditional_power_below", float),
            Field("tables", ListOf(ListOf(int))),
        ),
        optional=True,
    ),
    Field("at_difference", CHARACTERISTICS, optional=True),
    Field("at_no_difference", CHARACTERISTICS, optional=True),
)
ANALYSIS_PLAN = Kind(
    "afbench analysis plan",
    Field("note", str),
    Field("release", RELEASE),
    Field(
        "selection",
        Shape(
            "sealed selection",
            Field("name", str),
            Field("criteria", CRITERIA),
            Field("selection_sha256", str),
            Field("tasks", int, minimum=0),
        ),
    ),
    Field("configurations", Shape("configurations", Field("a", SIDE), Field("b", SIDE))),
    Field("primary_comparison", COMPARISON),
    Field(
        "analysis",
        Shape(
            "analysis settings",
            Field("alpha", float),
            Field("stopping", str, values=("sequential", "fixed")),
            Field("difference", float),
            Field("discordance", float, null=True),
            Field("baseline_rate", float, null=True),
            Field("power", float),
            Field("batch_tasks", int),
            Field("horizon", int, null=True),
            Field("order_seed", int),
            Field("futility_power", float),
        ),
    ),
    Field("test", TEST),
    Field(
        "stopping_rule",
        Shape(
            "stopping rule",
            Field("kind", str, values=("sequential", "fixed")),
            Field("batch_tasks", int),
            Field("horizon", int, unit="tasks"),
            Field("looks", ListOf(int), optional=True, doc=SEQUENTIAL_ONLY),
            Field("statement", str),
            Field("order_seed", int),
            Field("order_method", str),
            Field("order", ListOf(str)),
        ),
    ),
    Field(
        "infrastructure_errors",
        Shape(
            "infrastructure error rule",
            Field("rule", str, values=ERROR_RULES),
            Field("statement", str),
        ),
        optional=True,
        doc="sequential stopping only; absent from a sequential plan sealed before afbench "
        "sealed this rule: its errors are bounds",
    ),
    Field(
        "design",
        Shape(
            "design",
            Field("difference", float),
            Field("discordance", float),
            Field("power", float),
            Field("fixed_n", MapOf(ANY, keys="setting"), doc="afbench.plans.power's fixed-n plan"),
        ),
    ),
    Field(
        "money",
        Shape(
            "money",
            Field("per_trial_cap_usd", MapOf(float, keys="side"), unit="USD"),
            Field("ceiling_usd", float, null=True, unit="USD"),
            Field("worst_case_per_task_usd", float, unit="USD"),
            Field("worst_case_usd", float, unit="USD"),
            Field("tasks_the_ceiling_buys", int, null=True, unit="tasks"),
        ),
    ),
    Field("sealed_sha256", str, doc="SHA-256 of everything above (preregister.seal)"),
    doc="the comparison sealed before money is spent (`afbench preregister`)",
)

RUN_PLAN = Kind(
    "afbench sealed run plan",
    Field("note", str),
    Field("release", RELEASE),
    Field(
        "selection",
        Shape(
            "sealed run's selection",
            Field("name", str),
            Field("selection_sha256", str),
            Field("tasks", int, minimum=0),
        ),
    ),
    Field("configuration", SIDE),
    Field(
        "estimate",
        Shape(
            "estimate",
            Field("estimand", str),
            Field(
                "precision", str, doc="what the selection's size can detect (afbench.plans.power)"
            ),
        ),
    ),
    Field(
        "money",
        Shape(
            "run's money",
            Field("per_trial_cap_usd", float, unit="USD"),
            Field("ceiling_usd", float, unit="USD"),
            Field("worst_case_usd", float, unit="USD"),
        ),
    ),
    Field("sealed_sha256", str, doc="SHA-256 of everything above (preregister.seal)"),
    doc="a paid run of one configuration, sealed before money is spent (`snakemake preregister`)",
)

SIDES = Shape("per side", Field("pairs", int), Field("for_a", int))
UNRESOLVED = Shape("unresolved", Field("a", int), Field("b", int))
DECISIONS = ("continue", "A better", "B better", "futile")
LOOK = Shape(
    "look",
    Field("tasks", int),
    Field("favour_a", SIDES),
    Field("favour_b", SIDES),
    Field("unresolved", UNRESOLVED),
    Field("boundary_for_a", int),
    Field("boundary_for_b", int),
    Field("e_a", float),
    Field("e_b", float),
    Field("excluded", int, minimum=0, unit="tasks", doc="of the look's tasks, those left out"),
    Field("decision", str, values=DECISIONS),
)
EXCLUDED_TASK = Shape(
    "excluded task",
    Field("task_id", str),
    Field("a", str, doc="a's outcome: its verdict, or its last attempt's error"),
    Field("b", str),
    Field("attempts", Shape("attempts per side", Field("a", int), Field("b", int))),
)
RERUN = Shape(
    "rerun",
    Field("task_id", str),
    Field("configuration", str, values=("a", "b")),
    Field("attempt", int, minimum=2),
)
SEQUENTIAL_DECISION = Kind(
    "afbench sequential decision",
    Field("plan_sha256", str),
    Field("comparison", COMPARISON),
    Field("test", str),
    Field("method", str),
    Field("alpha", float),
    Field("validity", str),
    Field("decision", str, values=DECISIONS),
    Field("reason", str, null=True),
    Field("stopped_at_tasks", int, null=True, unit="tasks"),
    Field("tasks_counted", int, unit="tasks"),
    Field("tasks_run", int, unit="tasks"),
    Field("spent_usd", float, unit="USD"),
    Field("tasks_without_cost", int, unit="tasks"),
    Field("unresolved", UNRESOLVED, unit="tasks"),
    Field("horizon", int, unit="tasks"),
    Field("fixed_n_tasks", int, unit="tasks"),
    Field("fixed_n_worst_case_usd", float, unit="USD"),
    Field("expected_tasks_at_difference", float, unit="tasks"),
    Field("infrastructure_errors", str, values=ERROR_RULES, doc="the sealed plan's rule"),
    Field("retries", int, minimum=0, unit="trials", doc="attempts after each trial's first"),
    Field(
        "excluded_tasks",
        ListOf(EXCLUDED_TASK),
        doc="the looked-at tasks left out: a configuration's every attempt erred",
    ),
    Field("looks", ListOf(LOOK)),
    Field("next_batch", ListOf(str)),
    Field("next_reruns", ListOf(RERUN), doc="errored trials to run again next"),
    Field("unresolved_tasks", ListOf(str)),
    # 2: the error rule, retries, excluded tasks and reruns; each look's excluded tasks
    version=2,
    doc="the decision after the batches finished so far (`afbench decide`)",
)

# why a comparison run through `snakemake execute` stopped (afbench.execution.sequential.run_step)
STOPS = (
    "decision",  # A better or B better
    "futility",  # futile before the horizon
    "horizon",  # undecided at the horizon
    "cost ceiling",  # a trial refused at the ceiling, or the next batch's caps do not fit
    "interrupted trial",  # a trial of a paid agent interrupted earlier and not run again
    "attempts exhausted",  # errors as bounds: at the horizon a decision rests on errors, and
    # no attempt is left
)
CONFIGURATION_SIDES = ("a", "b")
SEQUENTIAL_RUN = Kind(
    "afbench sequential run",
    Field("note", str),
    Field("plan_sha256", str),
    Field("comparison", COMPARISON),
    Field("test", str),
    Field("method", str),
    Field("alpha", float),
    Field("validity", str),
    Field("step", int, minimum=0, doc="0: before any trial"),
    Field("decision", str, values=DECISIONS),
    Field("reason", str, null=True),
    Field("stopped", bool),
    Field("stopped_by", str, null=True, values=STOPS, doc="null: the run goes on"),
    Field("stop_reason", str, null=True),
    Field("stopped_at_tasks", int, null=True, unit="tasks"),
    Field("tasks_counted", int, unit="tasks"),
    Field("tasks_run", int, unit="tasks"),
    Field("horizon", int, unit="tasks"),
    Field("trials_started", int, minimum=0, unit="trials"),
    Field("trials_refused", int, minimum=0, unit="trials"),
    Field("spent_usd", float, unit="USD"),
    Field("trials_without_cost", int, minimum=0, unit="trials"),
    Field("worst_case_per_task_usd", float, unit="USD"),
    Field("fixed_n_tasks", int, unit="tasks"),
    Field("fixed_n_worst_case_usd", float, unit="USD"),
    Field(
        "fixed_n_usd_at_observed_cost",
        float,
        null=True,
        unit="USD",
        doc="null: no trial reported a cost yet",
    ),
    Field("expected_tasks_at_difference", float, unit="tasks"),
    Field("unresolved", UNRESOLVED, unit="tasks"),
    Field("unresolved_tasks", ListOf(str)),
    Field("infrastructure_errors", str, values=ERROR_RULES, doc="the sealed plan's rule"),
    Field("retries", int, minimum=0, unit="trials", doc="trials started after a first attempt"),
    Field("retries_usd", float, unit="USD", doc="what they cost, as reported"),
    Field("excluded_tasks", ListOf(EXCLUDED_TASK)),
    Field("looks", ListOf(LOOK)),
    Field(
        "trials",
        ListOf(
            Shape(
                "step trial",
                Field("task_id", str),
                Field("configuration", str, values=CONFIGURATION_SIDES),
                Field("attempt", int, minimum=1),
                Field("outcome", str, doc="the trial receipt's outcome"),
                Field("cost_usd", float, null=True, unit="USD"),
                Field("refused", bool),
            )
        ),
        doc="every trial so far, in the plan's order",
    ),
    Field(
        "next_trials",
        ListOf(
            Shape(
                "next trial",
                Field("task_id", str),
                Field("configuration", str, values=CONFIGURATION_SIDES),
                Field("label", str),
                Field("attempt", int, minimum=1),
            )
        ),
        doc="empty once stopped; errored trials' new attempts first, then the next batch",
    ),
    # 2: the error rule, retries and excluded tasks; each look's excluded tasks
    version=2,
    doc="where a sealed comparison run by `snakemake execute` stands after a step, and what "
    "runs next (`afbench job decide-step`)",
)
