"""The sealed analysis plan: what a paid comparison is meant to show, written before it spends
anything (design.md 3.7, 3.9).

`afbench preregister` (rule `preregister`, never part of `all`) writes the plan from config and
the selection: the release and selection (its hash), the two configurations as the plan items
run them (agent, model, Harbor environment, attempts, timeouts), the primary comparison, α, the
test and its stopping rule (for a sequential one the whole design of afbench.execution.sequential:
the order of the tasks, the boundary and futility tables, the horizon), the design's difference and
the fixed-n count beside it, for a sequential test its rule for infrastructure errors (rerun
up to the configurations' attempts, then leave the task out: afbench.execution.sequential says why
that keeps the test valid), each trial's cap and the ceiling. The plan is sealed: its SHA-256
over its own content (`sealed_sha256`), and the workflow writes it write-protected, so changing
the config afterwards does not rewrite it.

What the other stages call:

- `plan_facts(config, selection)`: what the config (and the selection artifact, when given)
  says now, in the plan's terms;
- `check_plan(plan, facts)`: every difference between the sealed plan and those facts, and any
  damage to the plan itself, as problems naming the field (empty: the run is the planned one);
- `require_plan(path, facts)`: the plan, or one refusal naming every problem (execute calls it
  before a paid run);
- `comparison_role(plan, ...)`: whether a comparison the report shows is the plan's
  (confirmatory) or not (exploratory).

The retry count for infrastructure errors is execute.attempts, sealed already as each
configuration's `attempts` (what its trials may run, checked against the receipts): the rule
(`infrastructure_errors`) names it and holds no second copy. A sequential plan sealed before
afbench sealed that rule has no `infrastructure_errors`; it is read as it was sealed, errors as
bounds (afbench.execution.sequential.error_rule), rather than refused: its seal covers what it said,
a run under it may be half done, and the audit re-derives its decision from its receipts; giving
it the new rule would change a sealed decision rule after the fact.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from afbench.core import harbor
from afbench.core.errors import AfbenchError, Problem
from afbench.core.fsutil import canonical_digest
from afbench.kinds import ANALYSIS_PLAN, SELECTION, View

NOTE = (
    "A sealed analysis plan, written before any trial of the comparison ran: what the run is "
    "meant to show and how it will decide. `sealed_sha256` is the SHA-256 of everything else "
    "in this file; afbench refuses a paid run whose config no longer matches it."
)
# the sealed analysis settings, in the plan's order, and the stopping rules it may name
ANALYSIS_SETTINGS = ANALYSIS_PLAN.field("analysis").type
ANALYSIS_KEYS = tuple(ANALYSIS_SETTINGS.names)
STOPPING_RULES = ANALYSIS_SETTINGS.field("stopping").values
FIXED_TEST = "exact McNemar test, two-sided, over every task of the selection"
ESTIMAND = (
    "the paired difference in success rate, a minus b, on the selection's tasks (a task is a "
    "success when its trial's outcome is accepted)"
)
# where each sealed field comes from in config, for messages that name what to change back
CONFIG_FIELDS = {
    "release.{key}": "release.{key}",
    "selection.name": "preregister.comparison.selection",
    "selection.criteria": "selections.{name}",
    "selection.selection_sha256": "the selection artifact (selections.{name})",
    "selection.order": "the selection artifact (selections.{name})",
    "configurations.{side}.agent": "preregister.comparison.{side}.agent",
    "configurations.{side}.model": "preregister.comparison.{side}.model",
    "configurations.{side}.label": "preregister.comparison.{side}",
    "configurations.{side}.environment_type": "plans.environment_type",
    "configurations.{side}.attempts": "execute.attempts",
    "configurations.{side}.agent_timeout_s": "the release's agent timeout (afbench.core.harbor)",
    "configurations.{side}.verifier_timeout_s": (
        "the release's verifier timeout (afbench.core.harbor)"
    ),
    "analysis.{key}": "preregister.{key}",
    "money.per_trial_cap_usd.{side}": "the trial cap of configuration {side}: "
    "execute.trial_cap_usd (unset: release.nominal_budget_usd) for an agent that may call a "
    "model, nothing for nop and oracle",
    "money.ceiling_usd": "execute.max_cost_usd",
}


def selection_criteria(criteria: Mapping) -> dict:
    """A selection's criteria in one form, from config (`selections.<name>`) or from the
    selection artifact (whose stratified draw records its allocation too)."""
    stratified = criteria.get("stratified")
    return {
        "tasks": list(criteria.get("tasks") or []),
        "sources": list(criteria.get("sources") or []),
        "limit": criteria.get("limit"),
        "stratified": None
        if stratified is None
        else {"tasks": stratified["tasks"], "seed": stratified["seed"]},
    }


def configuration(agent: str, model: str | None, environment_type: str, attempts: int) -> dict:
    """One side of the comparison as its trials run it."""
    from afbench.plans.plan import plan_label

    return {
        "label": plan_label(agent, model),
        "agent": agent,
        "model": model,
        "environment_type": environment_type,
        "attempts": attempts,
        "agent_timeout_s": harbor.AGENT_TIMEOUT_S,
        "verifier_timeout_s": harbor.VERIFIER_TIMEOUT_S,
    }


def facts_from_settings(
    *,
    release: Mapping,
    selection: str,
    criteria: Mapping,
    sides: Mapping[str, Mapping],
    environment_type: str,
    attempts: int,
    analysis: Mapping,
    ceiling_usd: float | None,
    trial_cap_usd: float | None = None,
) -> dict:
    """The plan's facts from single settings (what `plan_facts` reads from config, and what
    the workflow's job gets as flags): `sides` maps a and b to {agent, model}; each trial's
    cap is execute's (afbench.execution.trial.trial_cap_usd, from `trial_cap_usd`,
    execute.trial_cap_usd)."""
    from afbench.execution.trial import trial_cap_usd as cap_of

    configurations = {
        side: configuration(
            sides[side]["agent"], sides[side].get("model"), environment_type, attempts
        )
        for side in ("a", "b")
    }
    return {
        "release": dict(release),
        "selection": {"name": selection, "criteria": dict(criteria)},
        "configurations": configurations,
        "analysis": _analysis(analysis),
        "money": {
            "per_trial_cap_usd": {
                side: cap_of(
                    configurations[side]["agent"], release["nominal_budget_usd"], trial_cap_usd
                )
                for side in configurations
            },
            "ceiling_usd": None if ceiling_usd is None else float(ceiling_usd),
        },
    }


WHOLE_KEYS = ("batch_tasks", "horizon", "order_seed")


def _analysis(analysis: Mapping) -> dict:
    """The analysis settings in one spelling (YAML's 1 and a flag's 1.0 seal alike)."""
    out = {}
    for key in ANALYSIS_KEYS:
        value = analysis[key]
        if value is not None and not isinstance(value, str):
            value = int(value) if key in WHOLE_KEYS else float(value)
        out[key] = value
    return out


def plan_facts(config: Mapping, selection: Mapping | None = None) -> dict:
    """What the config says now about the comparison it seals (`preregister:` and the
    settings it names: the selection's criteria, the plan items' Harbor environment, the
    attempts, the ceiling), in the plan's terms. With the selection artifact, its hash and the
    order the plan would draw too."""
    from afbench.release.identity import identity

    pre = config["preregister"]
    comparison = pre["comparison"]
    if comparison is None:
        raise AfbenchError(
            "no comparison to seal",
            field="preregister.comparison",
            expected="{selection: NAME, a: {agent, model}, b: {agent, model}}",
            found="none",
        )
    name = comparison["selection"]
    if name not in config["selections"]:
        raise AfbenchError(
            "the comparison's selection is not configured",
            field="preregister.comparison.selection",
            expected=f"one of {sorted(config['selections'])} (selections)",
            found=name,
        )
    _check_items(comparison, config["plans"]["items"])
    facts = facts_from_settings(
        release=identity(config["release"]),
        selection=name,
        criteria=selection_criteria(config["selections"][name]),
        sides={side: comparison[side] for side in ("a", "b")},
        environment_type=config["plans"]["environment_type"],
        attempts=config["execute"]["attempts"],
        analysis={key: pre[key] for key in ANALYSIS_KEYS},
        ceiling_usd=config["execute"]["max_cost_usd"],
        trial_cap_usd=config["execute"]["trial_cap_usd"],
    )
    if selection is not None:
        facts["selection"]["selection_sha256"] = selection["selection_sha256"]
        facts["selection"]["order"] = _order(selection, pre["order_seed"])["task_ids"]
    return facts


def _check_items(comparison: Mapping, items: Sequence[Mapping]) -> None:
    from afbench.plans.plan import plan_label

    name = comparison["selection"]
    configured = {plan_label(i["agent"], i.get("model")) for i in items if i["selection"] == name}
    labels = {}
    for side in ("a", "b"):
        label = plan_label(comparison[side]["agent"], comparison[side].get("model"))
        if label not in configured:
            raise AfbenchError(
                f"configuration {side} of the comparison is not a plan item of selection '{name}'",
                field=f"preregister.comparison.{side}",
                expected=f"one of {sorted(configured)} (plans.items)"
                if configured
                else (f"a plan item {{selection: {name}, agent: ...}} under plans.items"),
                found=label,
            )
        labels[side] = label
    if labels["a"] == labels["b"]:
        raise AfbenchError(
            "the comparison's two configurations are the same",
            field="preregister.comparison.b",
            expected=f"another configuration than {labels['a']}",
            found=labels["b"],
        )


def _order(selection: Mapping, seed: int) -> dict:
    from afbench.execution.sequential import nested_stratified_order

    sources = list(dict.fromkeys(task["source_id"] for task in selection["tasks"]))
    pairs = [(task["task_id"], task["source_id"]) for task in selection["tasks"]]
    return nested_stratified_order(pairs, sources, seed)


# --- building the plan ------------------------------------------------------------------------
def _discordance(analysis: View) -> tuple[float, dict]:
    """ψ and the fixed-n planner's count (Connor 1987) for the design's difference."""
    from afbench.core.stats import mcnemar_sample_size

    basis = (
        {"discordance": analysis.discordance}
        if analysis.discordance is not None
        else {"baseline_rate": analysis.baseline_rate}
    )
    try:
        fixed = mcnemar_sample_size(
            analysis.difference, alpha=analysis.alpha, power=analysis.power, **basis
        )
    except ValueError as error:
        raise AfbenchError(str(error), field="preregister.difference") from None
    return fixed["discordance"], fixed


def _check_analysis(analysis: View) -> None:
    if (analysis.discordance is None) == (analysis.baseline_rate is None):
        raise AfbenchError(
            "say what the two configurations are like: the share of tasks they will disagree "
            "on (discordance) or the weaker one's success rate (baseline_rate)",
            field="preregister.discordance",
            expected="exactly one of discordance and baseline_rate",
            found="both" if analysis.discordance is not None else "neither",
        )
    if analysis.stopping not in STOPPING_RULES:
        raise AfbenchError(
            "not a stopping rule",
            field="preregister.stopping",
            expected=f"one of {', '.join(STOPPING_RULES)}",
            found=analysis.stopping,
        )


def build_plan(facts: Mapping, selection: Mapping) -> dict:
    """The sealed plan from `facts` (as plan_facts gives them, or the job's flags) and the
    selection artifact they name: the order of its tasks, the test (for a sequential rule, the
    whole afbench.execution.sequential design), the fixed-n count, the money, all sealed."""
    from afbench.execution.sequential import ERROR_STATEMENT, RERUN_THEN_EXCLUDE, design

    selection = SELECTION.check(selection, "selection")
    analysis = ANALYSIS_SETTINGS.view(facts["analysis"])
    _check_analysis(analysis)
    wanted = facts["selection"]
    problems = []
    if selection["name"] != wanted["name"]:
        problems.append(
            Problem(
                "the selection file is not the comparison's selection",
                field="preregister.comparison.selection",
                expected=wanted["name"],
                found=selection["name"],
            )
        )
    if selection["release"] != facts["release"]:
        problems.append(
            Problem(
                "the selection was made from another release than the config pins; rebuild it",
                field="release",
                expected=facts["release"]["revision"],
                found=selection["release"].get("revision"),
            )
        )
    if selection_criteria(selection["criteria"]) != wanted["criteria"]:
        problems.append(
            Problem(
                "the selection file was made with other criteria than the config's; rebuild it",
                field=f"selections.{wanted['name']}",
                expected=wanted["criteria"],
                found=selection_criteria(selection["criteria"]),
            )
        )
    if problems:
        raise AfbenchError(problems=problems)
    psi, fixed = _discordance(analysis)
    drawn = _order(selection, analysis.order_seed)
    tasks = len(selection["task_ids"])
    if analysis.stopping == "sequential":
        try:
            test = design(
                alpha=analysis.alpha,
                difference=analysis.difference,
                discordance=psi,
                power=analysis.power,
                batch_tasks=analysis.batch_tasks,
                selection_tasks=tasks,
                horizon=analysis.horizon,
                futility_power=analysis.futility_power,
            )
        except ValueError as error:
            raise AfbenchError(str(error), field="preregister") from None
        horizon = test["horizon"]
        rule = {
            "kind": "sequential",
            "batch_tasks": analysis.batch_tasks,
            "horizon": horizon,
            "looks": test["looks"],
            "statement": "the run stops at the first look with a decision (A better, B "
            "better or futile), at the horizon, or at the cost ceiling, whichever comes first",
        }
    else:
        horizon = tasks
        test = {"test": FIXED_TEST, "alpha": analysis.alpha, "tasks": tasks}
        rule = {
            "kind": "fixed",
            "batch_tasks": analysis.batch_tasks,
            "horizon": tasks,
            "statement": "every task of the selection runs; the test is applied once, at the end",
        }
    rule |= {"order_seed": analysis.order_seed, "order_method": drawn["method"]}
    rule["order"] = drawn["task_ids"]
    caps = facts["money"]["per_trial_cap_usd"]
    per_task = (
        caps["a"] * facts["configurations"]["a"]["attempts"]
        + caps["b"] * (facts["configurations"]["b"]["attempts"])
    )
    ceiling = facts["money"]["ceiling_usd"]
    body = {
        "note": NOTE,
        "release": facts["release"],
        "selection": {
            "name": selection["name"],
            "criteria": wanted["criteria"],
            "selection_sha256": selection["selection_sha256"],
            "tasks": tasks,
        },
        "configurations": dict(facts["configurations"]),
        "primary_comparison": {
            "selection": selection["name"],
            "a": facts["configurations"]["a"]["label"],
            "b": facts["configurations"]["b"]["label"],
            "estimand": ESTIMAND,
            "sided": "two-sided",
        },
        "analysis": {key: analysis.record[key] for key in ANALYSIS_KEYS},
        "test": test,
        "stopping_rule": rule,
        **(
            {"infrastructure_errors": {"rule": RERUN_THEN_EXCLUDE, "statement": ERROR_STATEMENT}}
            if rule["kind"] == "sequential"
            else {}
        ),
        "design": {
            "difference": analysis.difference,
            "discordance": psi,
            "power": analysis.power,
            "fixed_n": fixed,
        },
        "money": {
            "per_trial_cap_usd": dict(caps),
            "ceiling_usd": ceiling,
            "worst_case_per_task_usd": per_task,
            "worst_case_usd": per_task * horizon,
            "tasks_the_ceiling_buys": None
            if ceiling is None or per_task == 0
            else math.floor(ceiling / per_task),
        },
    }
    unsealed = ANALYSIS_PLAN.record(**body, sealed_sha256="")
    return ANALYSIS_PLAN.record(**body, sealed_sha256=seal(unsealed))


def seal_into(facts: Mapping, selection: Mapping, output: Path) -> dict:
    """Build the plan and write it to `output`, unless a different sealed plan is there: a
    seal is never replaced (remove the old plan to seal a new one). The same plan again is
    left as it is."""
    import os
    import stat

    from afbench.core.fsutil import json_bytes, json_output, say, write_outputs

    plan = build_plan(facts, selection)
    output = Path(output)
    if os.path.lexists(output):
        # read past the command's own guard against reading its outputs: comparing the old
        # seal with the new is the point (write_outputs refuses anything but a regular file)
        info = output.lstat()
        same = (
            stat.S_ISREG(info.st_mode)
            and info.st_size < (64 << 20)
            and output.read_bytes() == json_bytes(plan)
        )
        if same:
            say(plan, [output])
            return plan
        raise AfbenchError(
            "a sealed analysis plan is there already, and this one differs: a seal is never "
            "replaced (remove the old plan to seal a new one; its hash stays in your records)",
            file=str(output),
            expected="no plan, or this same plan",
            found="another plan",
        )
    write_outputs([json_output(output, plan)], about=plan)
    return plan


def seal(plan: Mapping) -> str:
    """The SHA-256 of the plan's content: everything but the seal itself."""
    return canonical_digest({key: value for key, value in plan.items() if key != "sealed_sha256"})


# --- checking a run against its plan --------------------------------------------------------
def _where(path: str, name: str) -> str:
    parts = path.split(".")
    for pattern, origin in CONFIG_FIELDS.items():
        keys = pattern.split(".")
        if len(keys) > len(parts):
            continue
        bound = {}
        for key, part in zip(keys, parts, strict=False):
            if key.startswith("{"):
                bound[key[1:-1]] = part
            elif key != part:
                break
        else:
            return origin.format(name=name, **bound)
    return path


def _differences(sealed: object, now: object, path: str) -> list[tuple[str, object, object]]:
    if isinstance(sealed, Mapping) and isinstance(now, Mapping):
        found = []
        for key in sorted(set(sealed) | set(now), key=str):
            at = f"{path}.{key}" if path else str(key)
            found += _differences(sealed.get(key), now.get(key), at)
        return found
    if sealed != now or (type(sealed) is not type(now) and not _same_number(sealed, now)):
        return [(path, sealed, now)]
    return []


def _same_number(a: object, b: object) -> bool:
    numbers = int | float
    return (
        isinstance(a, numbers)
        and isinstance(b, numbers)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
        and a == b
    )


def _shown(value: object) -> object:
    text = repr(value)
    if len(text) <= 120:
        return value
    return f"a list of {len(value)} items" if isinstance(value, list) else text[:117] + "..."


def check_plan(plan: Mapping, facts: Mapping, file: str | None = None) -> list[Problem]:
    """Every way the run described by `facts` (plan_facts) is not the one `plan` sealed, and
    any damage to the plan itself (its seal, a boundary whose exact error exceeds α/2), each a
    Problem naming the field, the config setting it comes from, the sealed value and the
    value now. Empty: the run is the planned one."""
    try:
        plan = ANALYSIS_PLAN.check(plan, file or "analysis plan")
    except AfbenchError as error:
        return list(error.problems)
    problems = _check_seal(plan, file)
    name = facts["selection"]["name"]
    sealed = {
        "release": plan["release"],
        "selection": {
            "name": plan["selection"]["name"],
            "criteria": plan["selection"]["criteria"],
            "selection_sha256": plan["selection"]["selection_sha256"],
            "order": plan["stopping_rule"]["order"],
        },
        "configurations": plan["configurations"],
        "analysis": plan["analysis"],
        "money": {
            "per_trial_cap_usd": plan["money"]["per_trial_cap_usd"],
            "ceiling_usd": plan["money"]["ceiling_usd"],
        },
    }
    now = {key: facts[key] for key in sealed}
    for key in ("selection_sha256", "order"):  # known only with the selection artifact
        if key not in now["selection"]:
            now["selection"] = {**now["selection"], key: sealed["selection"][key]}
    for path, was, is_now in _differences(sealed, now, ""):
        problems.append(
            Problem(
                f"differs from the sealed analysis plan (set by {_where(path, name)})",
                file=file,
                field=path,
                expected=f"{_shown(was)!r} as sealed",
                found=_shown(is_now),
            )
        )
    problems += [
        Problem(p.message, file=file, field=p.field, expected=p.expected, found=p.found)
        for p in plan_holds(plan)
    ]
    return problems


def _check_seal(plan: Mapping, file: str | None) -> list[Problem]:
    if plan.get("sealed_sha256") == seal(plan):
        return []
    return [
        Problem(
            "the plan's content does not match its seal: it was edited after sealing",
            file=file,
            field="sealed_sha256",
            expected=seal(plan),
            found=plan.get("sealed_sha256"),
        )
    ]


def check_sealed(plan: Mapping, file: str | None = None, catalog: Mapping | None = None) -> None:
    """The plan as sealed, whatever the config says now: its seal matches its content and its
    fields agree with each other (plan_holds; with the catalog, its selection's hash too);
    else one refusal naming each problem."""
    problems = _check_seal(plan, file) + [
        Problem(p.message, file=file, field=p.field, expected=p.expected, found=p.found)
        for p in plan_holds(plan, catalog)
    ]
    if problems:
        raise AfbenchError(problems=problems)


def plan_holds(plan: Mapping, catalog: Mapping | None = None) -> list[Problem]:
    """PLAN_OF_ITSELF: the plan's fields agree with each other, whether or not it was sealed
    again after an edit (a seal proves only that nobody edited it without resealing): α is the
    test's, the boundary keeps it, the horizon and looks are the ones its own design (analysis,
    selection size, batch size) gives, the order is the selection's tasks; with the catalog
    (the relation's source), the order's tasks hash to the sealed selection_sha256."""
    from afbench.tasks.catalog import selection_hash

    problems = []
    analysis = ANALYSIS_SETTINGS.view(plan["analysis"])
    test, rule = plan["test"], plan["stopping_rule"]
    tasks, order = plan["selection"]["tasks"], rule["order"]
    if test.get("alpha") != analysis.alpha:
        problems.append(
            Problem(
                "the test is not at the plan's α",
                field="test.alpha",
                expected=f"{analysis.alpha!r} (analysis.alpha)",
                found=test.get("alpha"),
            )
        )
    if len(order) != tasks or len(set(order)) != len(order):
        problems.append(
            Problem(
                "the stopping rule's order is not the selection's tasks, each once",
                field="stopping_rule.order",
                expected=f"{tasks} distinct tasks (selection.tasks)",
                found=f"{len(order)} entries, {len(set(order))} distinct",
            )
        )
    if rule["batch_tasks"] != analysis.batch_tasks:
        problems.append(
            Problem(
                "the stopping rule's batches are not the plan's",
                field="stopping_rule.batch_tasks",
                expected=f"{analysis.batch_tasks} (analysis.batch_tasks)",
                found=rule["batch_tasks"],
            )
        )
    if rule["kind"] == "sequential":
        # a test at another α has another design: that one problem says it
        if not problems:
            problems += _check_design(plan)
        if not problems:
            problems += _check_test(plan, None)
        problems += _check_error_rule(plan)
    elif rule["horizon"] != tasks or test.get("tasks") != tasks:
        problems.append(
            Problem(
                "a fixed test runs the whole selection",
                field="stopping_rule.horizon",
                expected=f"{tasks} tasks (selection.tasks)",
                found=f"horizon {rule['horizon']}, test over {test.get('tasks')} tasks",
            )
        )
    if catalog is not None:
        chosen = set(order)
        ids = [t["task_id"] for t in catalog["tasks"] if t["task_id"] in chosen]
        digest = selection_hash(catalog, ids)
        if len(ids) != len(chosen) or digest != plan["selection"]["selection_sha256"]:
            problems.append(
                Problem(
                    "the plan's tasks do not hash to its selection_sha256",
                    field="selection.selection_sha256",
                    expected=digest,
                    found=plan["selection"]["selection_sha256"],
                )
            )
    return problems


def _check_error_rule(plan: Mapping) -> list[Problem]:
    """Leaving out a task whose trials still err is symmetric only when both configurations
    may take the same number of attempts."""
    from afbench.execution.sequential import RERUN_THEN_EXCLUDE, error_rule

    sides = plan["configurations"]
    if error_rule(plan) != RERUN_THEN_EXCLUDE or sides["a"]["attempts"] == sides["b"]["attempts"]:
        return []
    return [
        Problem(
            "the two configurations may take different numbers of attempts: leaving out a task "
            "whose trials still err favours the configuration with more",
            field="configurations.b.attempts",
            expected=f"{sides['a']['attempts']} (configurations.a.attempts)",
            found=sides["b"]["attempts"],
        )
    ]


def _check_design(plan: Mapping) -> list[Problem]:
    """The sequential test's horizon and looks, made again from the plan's own design."""
    from afbench.execution.sequential import design

    analysis = ANALYSIS_SETTINGS.view(plan["analysis"])
    test, rule = plan["test"], plan["stopping_rule"]
    try:
        made = design(
            alpha=analysis.alpha,
            difference=analysis.difference,
            discordance=plan["design"]["discordance"],
            power=analysis.power,
            batch_tasks=analysis.batch_tasks,
            selection_tasks=plan["selection"]["tasks"],
            horizon=analysis.horizon,
            futility_power=analysis.futility_power,
        )
    except ValueError as error:
        return [Problem(str(error), field="analysis", expected="a design afbench can build")]
    sealed = {
        "test.horizon": test["horizon"],
        "stopping_rule.horizon": rule["horizon"],
        "test.looks": test["looks"],
        "stopping_rule.looks": rule["looks"],
        "test.batch_tasks": test["batch_tasks"],
    }
    fresh = {
        "test.horizon": made["horizon"],
        "stopping_rule.horizon": made["horizon"],
        "test.looks": made["looks"],
        "stopping_rule.looks": made["looks"],
        "test.batch_tasks": made["batch_tasks"],
    }
    return [
        Problem(
            f"does not fit the plan's design ({plan['selection']['tasks']} tasks in batches of "
            f"{analysis.batch_tasks})",
            field=field,
            expected=_shown(fresh[field]),
            found=_shown(value),
        )
        for field, value in sealed.items()
        if value != fresh[field]
    ]


def _check_test(plan: Mapping, file: str | None) -> list[Problem]:
    """A sequential plan's boundary keeps its promise, whoever wrote it: its exact chance of a
    wrong decision per side, computed afresh from its integers, is at most α/2."""
    from fractions import Fraction

    from afbench.execution.sequential import crossing_probability, looks_for

    if plan["stopping_rule"]["kind"] != "sequential":
        return []
    test = plan["test"]
    boundary, horizon = test["boundary"], test["horizon"]
    problems = []
    if len(boundary) != horizon + 1 or test["looks"] != looks_for(horizon, test["batch_tasks"]):
        problems.append(
            Problem(
                "the test's boundary or looks do not fit its horizon",
                file=file,
                field="test.boundary",
                expected=f"{horizon + 1} entries and looks every {test['batch_tasks']} tasks",
                found=f"{len(boundary)} entries",
            )
        )
    elif crossing_probability(boundary) > Fraction(repr(float(test["alpha"]))) / 2:
        problems.append(
            Problem(
                "the test's boundary errs more often than α/2 per side",
                file=file,
                field="test.boundary",
                expected=f"an exact size per side of at most {test['alpha'] / 2:g}",
                found=f"{float(crossing_probability(boundary)):.6g}",
            )
        )
    return problems


def read_plan(path: Path | str) -> dict:
    """A sealed analysis plan read as an artifact (its seal is checked by check_plan)."""
    return ANALYSIS_PLAN.read(path)


def read_approved_plan(path: Path | str, plan_sha256: str) -> dict:
    """The sealed plan at `path`, if it is the one the run was approved against (its seal is
    `plan_sha256`: a plan sealed again since is refused) and its seal holds."""
    plan = read_plan(path)
    if plan.get("sealed_sha256") != plan_sha256:
        raise AfbenchError(
            "the sealed analysis plan is not the one this run was approved against",
            file=str(path),
            field="sealed_sha256",
            expected=plan_sha256,
            found=plan.get("sealed_sha256"),
        )
    check_sealed(plan, str(path))
    return plan


def require_plan(path: Path | str, facts: Mapping) -> dict:
    """The sealed plan at `path` if the run `facts` describes is the one it planned; else one
    refusal naming every difference. For execute, before a paid trial starts."""
    path = Path(path)
    if not path.exists():
        raise AfbenchError(
            "no sealed analysis plan: a paid comparison runs only after its plan is sealed "
            "(run `snakemake preregister` first)",
            file=str(path),
        )
    problems = check_plan(read_plan(path), facts, str(path))
    if problems:
        raise AfbenchError(problems=problems)
    return read_plan(path)


def comparison_role(
    plan: Mapping | None,
    selection: str,
    a: str,
    b: str,
    problems: Sequence[Problem] = (),
) -> dict:
    """Whether the comparison of configurations `a` and `b` (plan labels) on `selection` is
    confirmatory (the primary comparison of a sealed plan the run matches: `problems` from
    check_plan empty) or exploratory, and why. The order of a and b does not matter."""
    if plan is None:
        return {"role": "exploratory", "reason": "no sealed analysis plan", "plan_sha256": None}
    primary = plan["primary_comparison"]
    shown = plan.get("sealed_sha256")
    if primary["selection"] != selection or {primary["a"], primary["b"]} != {a, b}:
        return {
            "role": "exploratory",
            "reason": f"not the sealed plan's primary comparison ({primary['a']} against "
            f"{primary['b']} on {primary['selection']})",
            "plan_sha256": shown,
        }
    if problems:
        return {
            "role": "exploratory",
            "reason": "the run differs from its sealed plan: "
            + "; ".join(str(p) for p in problems[:5]),
            "plan_sha256": shown,
        }
    return {
        "role": "confirmatory",
        "reason": "the primary comparison of the sealed analysis plan, run as planned",
        "plan_sha256": shown,
    }


def line(plan: Mapping) -> str:
    """The plan in one line, for the terminal."""
    rule, test = plan["stopping_rule"], plan["test"]
    primary = plan["primary_comparison"]
    fixed = plan["design"]["fixed_n"]["tasks"]
    if rule["kind"] == "sequential":
        from afbench.execution.sequential import RERUN_THEN_EXCLUDE, error_rule

        at = test["at_difference"]
        short = at["decisions"]["A better"] < test["power_asked"]
        attempts = plan["configurations"]["a"]["attempts"]
        errors = (
            f"; infrastructure errors: up to {attempts} attempt(s) per trial, then the task left "
            "out"
            if error_rule(plan) == RERUN_THEN_EXCLUDE
            else "; infrastructure errors as bounds"
        )
        how = (
            f"sequential ({test['test']}), alpha {test['alpha']:g}, batches of "
            f"{rule['batch_tasks']}, horizon {rule['horizon']} tasks; at a difference of "
            f"{plan['design']['difference']:g} it decides with probability "
            f"{at['decisions']['A better']:.3f} after {at['expected_tasks']:.1f} tasks on "
            f"average (fixed-n: {fixed})"
            + (
                f"; the asked power {test['power_asked']:g} is out of reach within the "
                f"selection's {plan['selection']['tasks']} tasks"
                if short
                else ""
            )
            + errors
        )
    else:
        how = f"fixed ({FIXED_TEST}), alpha {test['alpha']:g}, {rule['horizon']} tasks"
    return (
        f"afbench preregister: {primary['a']} against {primary['b']} on "
        f"{primary['selection']} ({plan['selection']['tasks']} tasks), {how}; sealed "
        f"{plan['sealed_sha256'][:12]}"
    )


# --- a paid run of one configuration --------------------------------------------------------
RUN_NOTE = (
    "A paid run of one configuration, sealed before any of its trials ran: the selection, the "
    "configuration, each trial's cap, the ceiling and the estimate it is for. `sealed_sha256` "
    "is the SHA-256 of everything else in this file; afbench refuses the run once its config "
    "no longer matches it."
)


def run_plan(
    *,
    release: Mapping,
    selection: Mapping,
    agent: str,
    model: str | None,
    environment_type: str,
    attempts: int,
    ceiling_usd: float,
    trial_cap_usd: float | None,
) -> dict:
    """The sealed plan of a paid run of one configuration on `selection` (the artifact):
    every one of its trials runs, so its worst case is the selection's tasks x attempts x
    each trial's cap."""
    from afbench.execution.trial import trial_cap_usd as cap_of
    from afbench.kinds import RUN_PLAN
    from afbench.plans.power import execute_line

    side = configuration(agent, model, environment_type, attempts)
    cap = cap_of(agent, release["nominal_budget_usd"], trial_cap_usd)
    tasks = len(selection["task_ids"])
    body = {
        "note": RUN_NOTE,
        "release": dict(release),
        "selection": {
            "name": selection["name"],
            "selection_sha256": selection["selection_sha256"],
            "tasks": tasks,
        },
        "configuration": side,
        "estimate": {
            "estimand": f"the success rate of {side['label']} on the selection's tasks (a task "
            "is a success when its trial's outcome is accepted)",
            "precision": execute_line(tasks),
        },
        "money": {
            "per_trial_cap_usd": cap,
            "ceiling_usd": float(ceiling_usd),
            "worst_case_usd": cap * attempts * tasks,
        },
    }
    unsealed = RUN_PLAN.record(**body, sealed_sha256="")
    return RUN_PLAN.record(**body, sealed_sha256=seal(unsealed))


def run_plan_of_selection(plan: Mapping, selection: Mapping) -> list[Problem]:
    """RUN_PLAN_OF_SELECTION (afbench.kinds.relations): the sealed run plan made again from its
    selection and its own configuration, caps and ceiling; each field that differs is named
    (a plan resealed over another selection, an edited worst case or estimate)."""
    side, money = plan["configuration"], plan["money"]
    made = run_plan(
        release=selection["release"],
        selection=selection,
        agent=side["agent"],
        model=side["model"],
        environment_type=side["environment_type"],
        attempts=side["attempts"],
        ceiling_usd=money["ceiling_usd"],
        trial_cap_usd=money["per_trial_cap_usd"],
    )
    return [
        Problem(
            "differs from the run plan made again from its selection",
            field=field,
            expected=_shown(expected),
            found=_shown(found),
        )
        for field, found, expected in _differences(plan, made, "")
    ]


def require_run_plan(path: Path | str, planned: Mapping) -> dict:
    """The sealed run plan at `path` if it is `planned` (run_plan from the config now) and its
    seal holds; else one refusal naming the missing plan or every differing field."""
    from afbench.kinds import RUN_PLAN

    path = Path(path)
    if not path.exists():
        raise no_run_plan(path, planned["configuration"]["label"], planned["selection"]["name"])
    plan = RUN_PLAN.read(path)
    problems = _check_seal(plan, str(path))
    problems += [
        Problem(
            "differs from the sealed run plan (remove the plan to seal a new one)",
            file=str(path),
            field=field,
            expected=f"{_shown(was)!r} as sealed",
            found=_shown(now),
        )
        for field, was, now in _differences(
            {k: v for k, v in plan.items() if k != "sealed_sha256"},
            {k: v for k, v in planned.items() if k != "sealed_sha256"},
            "",
        )
    ]
    if problems:
        raise AfbenchError(problems=problems)
    return plan


def no_run_plan(path: Path | str, label: str, selection: str) -> AfbenchError:
    return AfbenchError(
        f"no sealed plan for the paid run of {label} on {selection}: a paid run starts only "
        "after its plan is sealed (run `snakemake preregister` first)",
        file=str(path),
    )
