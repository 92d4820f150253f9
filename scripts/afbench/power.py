"""The run planner: the tasks a paired comparison needs to detect a difference, or the smallest
difference a number of tasks detects (Connor 1987, afbench.stats), from two models' observed
discordance or from a baseline rate. It spends nothing; it says what a run would buy."""

from __future__ import annotations

import math

from . import stats
from .errors import AfbenchError
from .records import POWER_PLAN, record

FORMULA = "Connor (1987): n = (z_{1-α/2}·√ψ + z_{1-β}·√(ψ - δ²))² / δ²"
DESIGN_EFFECT_NOTE = (
    "The formula takes tasks as independent. With two models' imports, the design effect of "
    "their paired difference over sources (clustered over independent variance) is observed "
    "too: tasks_with_design_effect is the task count times it (never below 1), and "
    "difference_with_design_effect the difference detectable with the task count divided by it, "
    "for a run whose tasks cluster by source as these do"
)


def observed(imports: list[dict]) -> dict:
    """Two model imports (with their per-task records) on the same tasks: their discordant
    counts, the discordance ψ = (only_a + only_b) / tasks, and the design effect of the paired
    difference over sources."""
    if len(imports) != 2:
        raise AfbenchError(
            "two model imports are needed",
            field="--import",
            expected="2 imports",
            found=f"{len(imports)} given",
        )
    a, b = imports
    if a["model"] == b["model"]:
        raise AfbenchError(
            "the two models must differ",
            field="models",
            expected="two different models",
            found=f"{a['model']} twice",
        )
    if a["task_set_sha256"] != b["task_set_sha256"]:
        raise AfbenchError(
            f"models '{a['model']}' and '{b['model']}' were imported on different task sets",
            field="task_set_sha256",
        )
    success_a = {r["task_id"]: r["success"] for r in a["records"]}
    differences = [int(success_a[r["task_id"]]) - int(r["success"]) for r in b["records"]]
    sources = [r["source_id"] for r in b["records"]]
    only_a, only_b = differences.count(1), differences.count(-1)
    if only_a + only_b == 0:
        raise AfbenchError(
            f"models '{a['model']}' and '{b['model']}' never disagree: a discordance of 0 plans "
            "nothing",
            field="models",
        )
    clustered = stats.clustered_difference(differences, sources)
    return {
        "a": a["model"],
        "b": b["model"],
        "source_condition": a["source_condition"],
        "tasks": len(differences),
        "only_a": only_a,
        "only_b": only_b,
        "discordance": (only_a + only_b) / len(differences),
        "design_effect": clustered["design_effect"],
    }


def plan(
    *,
    difference: float | None,
    tasks: int | None,
    alpha: float,
    power: float,
    baseline_rate: float | None = None,
    models: dict | None = None,
    release: dict | None = None,
) -> dict:
    """The tasks needed for `difference`, or the difference `tasks` detect, at two-sided
    `alpha` with `power`, from the `observed` discordance of two models or a baseline rate."""
    if (difference is None) == (tasks is None):
        raise AfbenchError(
            "say what to plan: a difference to detect, or a number of tasks",
            field="difference",
            expected="exactly one of difference and tasks",
        )
    if (models is None) == (baseline_rate is None):
        raise AfbenchError(
            "say what the models are like: two models (their observed discordance) or a "
            "baseline rate",
            field="models",
            expected="exactly one of models and baseline_rate",
        )
    basis = {"discordance": models["discordance"]} if models else {"baseline_rate": baseline_rate}
    effect = max(1.0, models["design_effect"] or 1.0) if models else None
    try:
        if difference is not None:
            result = stats.mcnemar_sample_size(difference, alpha=alpha, power=power, **basis)
            adjusted = {
                "tasks_with_design_effect": None
                if effect is None
                else math.ceil(result["tasks_unrounded"] * effect)
            }
        else:
            result = stats.mcnemar_detectable_difference(tasks, alpha=alpha, power=power, **basis)
            adjusted = {"difference_with_design_effect": _mde(tasks, effect, alpha, power, basis)}
    except ValueError as error:
        raise AfbenchError(str(error), field="difference" if tasks is None else "tasks") from None
    body = {
        "question": "tasks" if difference is not None else "detectable difference",
        "release": release,
        "models": models,
        **result,
        **adjusted,
        "two_sided": True,
        "design_effect_note": DESIGN_EFFECT_NOTE if models else None,
    }
    return record(POWER_PLAN, **body, line=line(body))


def _mde(tasks: int, effect: float | None, alpha: float, power: float, basis: dict):
    if effect is None:
        return None
    effective = math.floor(tasks / effect)
    try:
        found = stats.mcnemar_detectable_difference(effective, alpha=alpha, power=power, **basis)
    except ValueError:
        return None  # too few effective tasks to detect any difference
    return found["difference"]


def line(plan: dict) -> str:
    """The planner's one line: the answer, what it assumes, and its formula."""
    psi = plan["discordance"]
    models = plan["models"]
    if models:
        given = (
            f"discordance ψ = {psi:.4g} observed between {models['a']} and {models['b']} "
            f"({models['only_a'] + models['only_b']} of {models['tasks']} tasks)"
        )
    else:
        given = (
            f"discordance ψ = {psi:.4g} from a baseline rate of {plan['baseline_rate']:g} with "
            "independent successes"
        )
    settings = f"at two-sided alpha {plan['alpha']:g} with power {plan['power']:g}"
    if plan["question"] == "tasks":
        answer = (
            f"{plan['tasks']} tasks detect a paired difference of {plan['difference']:g} "
            f"({100 * plan['difference']:.1f} pp) {settings}"
        )
        extra = f"{plan['tasks_with_design_effect']}"
    else:
        answer = (
            f"{plan['tasks']} tasks detect a paired difference of {plan['difference']:.4f} "
            f"({100 * plan['difference']:.1f} pp) or more {settings}"
        )
        found = plan["difference_with_design_effect"]
        extra = "none" if found is None else f"{found:.4f}"
    effect = models["design_effect"] if models else None
    adjusted = (
        f"; {extra} with their design effect over sources, {effect:.2f}"
        if effect is not None and effect > 1
        else ""
    )
    return f"afbench power: {answer}, {given}{adjusted}; {FORMULA}"
