"""The run planner: the tasks a paired comparison needs to detect a difference, or the smallest
difference a number of tasks detects, for the tests the report applies, at the family size it
adjusts over. It spends nothing; it says what a run would buy.

Two tests, as the report has them:
  - sources as the unit (the report's ★, letters and *): the exact sign-flip test over sources
    (afbench.core.stats.sign_flip_p), whose power is simulated, seeded, from a model whose
    between-source variation is estimated from two imports, at the selection's own size and
    source allocation (a stratified selection of N tasks from the release's sources);
  - tasks as the unit: the exact McNemar test, whose power is computed exactly, by enumerating
    the number of discordant tasks and the split of them.
Both at Holm's first step over the family of k(k-1)/2 pairs of the k configurations compared:
the level alpha / (k(k-1)/2), at which the pair is declared different whatever the other
pairs do (Holm's power for a pair is at least this, and equal to it when no other pair is
rejected before it).

numpy and scipy are imported by the functions that compute: the job that plans pays for them,
nothing else does."""

from __future__ import annotations

import math

from afbench.core import stats
from afbench.core.errors import AfbenchError
from afbench.kinds import POWER_PLAN

DRAWS = 4000  # simulated selections a power (Monte Carlo error at most 0.008)
SEED = 20261202
CAP_FACTOR = 10  # the sign-flip search stops at 10x the release's tasks (sources 10x larger)
DIFFERENCE_STEP = 1e-4  # the detectable difference's resolution

EXACT_POWER_METHOD = (
    "exact McNemar test (tasks as the unit; two-sided, tail-doubled), its power by "
    "enumeration: sum over D ~ Binomial(N, ψ) discordant tasks of P(min(A, D - A) <= k_D) with "
    "A | D ~ Binomial(D, p10 / ψ) and k_D the largest count the test rejects at the level "
    "(decided by afbench.core.stats.mcnemar_exact itself); the smallest N whose power reaches the "
    "asked one (scanned upward from half of Connor's 1987 approximation)"
)
SIGN_FLIP_POWER_METHOD = (
    "sign-flip test over sources (the report's decisions), its power by seeded simulation: N "
    "tasks allocated to the sources in proportion to their sizes (largest remainder, as a "
    "stratified selection; beyond the release, sources like these made larger), each source "
    "with its own discordance ψ_s ~ Beta(mean ψ, intra-source correlation ρ_d) and its own "
    "share π_s ~ Beta(mean π, ρ_w) of discordant tasks won by a, π = (1 + δ/ψ)/2; ρ_d and ρ_w "
    "are the ANOVA estimates of the two imports' between-source variation (0 without it); the "
    "smallest N by bisection over the same draws"
)
FAMILY_NOTE = (
    "level alpha / m at Holm's first step over the m = k(k-1)/2 pairs of the k configurations "
    "compared: the power to declare this pair different whatever the other pairs do"
)


def _family(configurations: int) -> int:
    if configurations < 2:
        raise AfbenchError(
            "a comparison needs at least two configurations",
            field="configurations",
            expected="2 or more",
            found=configurations,
        )
    return configurations * (configurations - 1) // 2


def anova_icc(successes: list[int], sizes: list[int]) -> float:
    """The ANOVA estimate of the intra-cluster correlation of binary outcomes (successes of
    sizes per cluster; Fleiss 1981, with n0 for unequal sizes), clipped to [0, 1): the share of
    a task's variance that its cluster shares. 0 when it cannot be told (fewer than two
    non-empty clusters, or no within-cluster variation to compare with)."""
    cells = [(x, n) for x, n in zip(successes, sizes, strict=True) if n > 0]
    total = sum(n for _, n in cells)
    if len(cells) < 2 or total <= len(cells):
        return 0.0
    p = sum(x for x, _ in cells) / total
    between = sum((x - n * p) ** 2 / n for x, n in cells) / (len(cells) - 1)
    within = sum(x - x * x / n for x, n in cells) / (total - len(cells))
    n0 = (total - sum(n * n for _, n in cells) / total) / (len(cells) - 1)
    denominator = between + (n0 - 1) * within
    if denominator <= 0:
        return 0.0
    return min(max((between - within) / denominator, 0.0), 0.999)


def observed(imports: list[dict]) -> dict:
    """Two model imports (with their per-task records) on the same tasks: their discordant
    counts, the discordance ψ = (only_a + only_b) / tasks, per source their tasks and
    discordant counts, the intra-source correlations of discordance and of its direction, and
    the design effect of the paired difference over sources."""
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
    per_source: dict[str, list[int]] = {}
    for d, source in zip(differences, sources, strict=True):
        cell = per_source.setdefault(source, [0, 0, 0])
        cell[0] += 1
        cell[1] += d == 1
        cell[2] += d == -1
    cells = list(per_source.values())
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
        "sources": {
            source: {"tasks": n, "only_a": x, "only_b": y}
            for source, (n, x, y) in per_source.items()
        },
        "discordance_icc": anova_icc([x + y for _, x, y in cells], [n for n, _, _ in cells]),
        "direction_icc": anova_icc([x for _, x, _ in cells], [x + y for _, x, y in cells]),
    }


# --- tasks as the unit: the exact McNemar test's power by enumeration -----------------------
class _ExactTest:
    """The exact McNemar test's rejection bounds at one level: k[D], the largest count of the
    less frequent kind of discordant task at which the test rejects with D discordant tasks
    (-1: none), from stats.mcnemar_exact itself. k grows by at most 1 per D (P(Bin(D+1) <= k)
    <= P(Bin(D) <= k) <= P(Bin(D+1) <= k+1)), so one test per D finds it."""

    def __init__(self, level: float) -> None:
        self.level = level
        self.bounds = [-1]

    def rejects(self, k: int, d: int) -> bool:
        return 2 * k < d and stats.mcnemar_exact(k, d - k) < self.level

    def upto(self, n: int) -> list[int]:
        while len(self.bounds) <= n:
            d, k = len(self.bounds), self.bounds[-1]
            self.bounds.append(k + 1 if self.rejects(k + 1, d) else k)
        return self.bounds

    def power(self, n: int, p10: float, p01: float) -> float:
        import numpy as np
        from scipy.special import bdtr, bdtrc, gammaln

        psi = p10 + p01
        if n < 1 or psi <= 0:
            return 0.0
        d = np.arange(n + 1)
        k = np.array(self.upto(n)[: n + 1])
        log_pmf = gammaln(n + 1) - gammaln(d + 1) - gammaln(n - d + 1) + d * math.log(psi)
        log_pmf = log_pmf + (
            (n - d) * math.log1p(-psi) if psi < 1 else np.where(d == n, 0, -np.inf)
        )
        share = p10 / psi
        can = k >= 0
        reject = np.zeros(n + 1)
        kk, dd = k[can], d[can]
        reject[can] = bdtr(kk, dd, share) + bdtrc(dd - kk - 1, dd, share)
        return float(min(1.0, np.sum(np.exp(log_pmf) * reject)))


def _cells(difference: float, discordance: float | None, baseline: float | None):
    """(p10, p01): a's and b's discordant shares for a difference δ."""
    if discordance is not None:
        return (discordance + difference) / 2, (discordance - difference) / 2
    p_a, p_b = baseline + difference, baseline
    return p_a * (1 - p_b), p_b * (1 - p_a)


def exact_tasks(
    difference: float, level: float, power: float, discordance=None, baseline=None
) -> dict:
    """The smallest N at which the exact McNemar test at `level` reaches `power`."""
    p10, p01 = _cells(difference, discordance, baseline)
    connor = stats.mcnemar_sample_size(
        difference,
        alpha=level,
        power=power,
        discordance=discordance,
        baseline_rate=baseline,
    )["tasks"]
    test, n = _ExactTest(level), max(1, connor // 2)
    while test.power(n, p10, p01) >= power and n > 1:
        n //= 2
    found = test.power(n, p10, p01)
    while found < power:
        n += 1
        found = test.power(n, p10, p01)
    return {"tasks": n, "power": found, "connor_tasks": connor}


def exact_difference(tasks: int, level: float, power: float, discordance=None, baseline=None):
    """The smallest difference the exact McNemar test at `level` detects with `power` on
    `tasks` tasks (to DIFFERENCE_STEP), or None when not even the largest one is."""
    test = _ExactTest(level)
    high = discordance if discordance is not None else 1 - baseline
    high -= 1e-12

    def power_at(delta: float) -> float:
        return test.power(tasks, *_cells(delta, discordance, baseline))

    if power_at(high) < power:
        return None
    low = 0.0
    while high - low > DIFFERENCE_STEP:
        middle = (low + high) / 2
        if power_at(middle) >= power:
            high = middle
        else:
            low = middle
    return {"difference": high, "power": power_at(high)}


# --- sources as the unit: the sign-flip test's power by simulation -------------------------
def allocate(sizes: list[int], total: int) -> list[int]:
    """`total` tasks over sources of these sizes by largest remainder, as a stratified
    selection allocates them (stats.proportional_allocation); beyond the release's tasks the
    same rule allots sources like these made larger."""
    if total <= sum(sizes):
        shares = stats.proportional_allocation([(str(i), s) for i, s in enumerate(sizes)], total)
        return list(shares.values())
    available = sum(sizes)
    quotas = [divmod(total * size, available) for size in sizes]
    left = total - sum(q for q, _ in quotas)
    ranked = sorted(range(len(sizes)), key=lambda i: (-quotas[i][1], -sizes[i], i))
    extra = set(ranked[:left])
    return [q + (i in extra) for i, (q, _) in enumerate(quotas)]


def _beta(rng, mean: float, icc: float, shape: tuple[int, int]):
    import numpy as np

    if icc <= 0 or mean <= 0 or mean >= 1:
        return np.full(shape, mean)
    total = (1 - icc) / icc
    return rng.beta(mean * total, (1 - mean) * total, size=shape)


def sign_flip_power(
    allocation: list[int],
    difference: float,
    discordance: float,
    discordance_icc: float,
    direction_icc: float,
    level: float,
    draws: int = DRAWS,
    seed: int = SEED,
) -> float:
    """The simulated power of the sign-flip test at `level` (SIGN_FLIP_POWER_METHOD): the
    share of `draws` seeded selections of `allocation` tasks per source whose p is below it."""
    import numpy as np

    rng = np.random.default_rng(seed)
    shape = (draws, len(allocation))
    psi = _beta(rng, discordance, discordance_icc, shape)
    share = _beta(rng, (1 + difference / discordance) / 2, direction_icc, shape)
    discordant = rng.binomial(np.array(allocation), psi)
    won = rng.binomial(discordant, share)
    sums = (2 * won - discordant).tolist()
    return sum(stats.sign_flip_p(row) < level for row in sums) / draws


def sign_flip_tasks(models: dict, difference: float, level: float, power: float, draws, seed):
    """The smallest N (bisection over the same seeded draws) at which the sign-flip test
    reaches `power`, searched up to CAP_FACTOR times the release's tasks."""
    sizes = [s["tasks"] for s in models["sources"].values()]
    release = sum(sizes)
    cap = CAP_FACTOR * release

    def power_at(n: int) -> float:
        return sign_flip_power(
            allocate(sizes, n),
            difference,
            models["discordance"],
            models["discordance_icc"],
            models["direction_icc"],
            level,
            draws,
            seed,
        )

    top = power_at(cap)
    if top < power:
        return {"tasks": None, "power": None, "reachable": False, "cap": cap, "power_at_cap": top}
    low, high = len(sizes), cap  # below one task a source the test has fewer clusters
    if power_at(low) >= power:
        high = low
    while high - low > 1:
        middle = (low + high) // 2
        if power_at(middle) >= power:
            high = middle
        else:
            low = middle
    return {
        "tasks": high,
        "power": power_at(high),
        "reachable": True,
        "cap": cap,
        "power_at_cap": top,
        "exceeds_release": high > release,
    }


def sign_flip_difference(models: dict, tasks: int, level: float, power: float, draws, seed):
    """The smallest difference (to DIFFERENCE_STEP) the sign-flip test detects with `power` on
    a stratified selection of `tasks` tasks, or None when not even the largest one is."""
    sizes = [s["tasks"] for s in models["sources"].values()]
    allocation = allocate(sizes, tasks)
    psi = models["discordance"]

    def power_at(delta: float) -> float:
        return sign_flip_power(
            allocation,
            delta,
            psi,
            models["discordance_icc"],
            models["direction_icc"],
            level,
            draws,
            seed,
        )

    high = psi * (1 - 1e-9)
    if power_at(high) < power:
        return None
    low = 0.0
    while high - low > DIFFERENCE_STEP:
        middle = (low + high) / 2
        if power_at(middle) >= power:
            high = middle
        else:
            low = middle
    return {"difference": high, "power": power_at(high)}


# --- the plan ----------------------------------------------------------------------------------
def _check(difference, tasks, models, baseline_rate, alpha, power) -> None:
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
    if not 0 < alpha < 1:
        raise AfbenchError(
            "alpha must be between 0 and 1", field="alpha", expected="0 < alpha < 1", found=alpha
        )
    if not 0.5 <= power < 1:
        raise AfbenchError(
            "power must be at least 0.5 and below 1",
            field="power",
            expected="0.5 <= power < 1",
            found=power,
        )
    if tasks is not None and tasks < 1:
        raise AfbenchError(
            "tasks must be at least 1", field="tasks", expected="1 or more", found=tasks
        )
    if difference is not None:
        largest = models["discordance"] if models else 1 - baseline_rate
        if not 0 < difference < largest:
            raise AfbenchError(
                "the difference must be above 0 and below "
                + (
                    f"the discordance ψ = {largest:.4g} (p01 = (ψ - δ)/2 > 0)"
                    if models
                    else f"1 - the baseline rate ({largest:.4g})"
                ),
                field="difference",
                expected=f"0 < difference < {largest:.4g}",
                found=difference,
            )


def plan(
    *,
    difference: float | None,
    tasks: int | None,
    alpha: float,
    power: float,
    configurations: int = 2,
    baseline_rate: float | None = None,
    models: dict | None = None,
    release: dict | None = None,
    draws: int = DRAWS,
    seed: int = SEED,
) -> dict:
    """The tasks needed for `difference`, or the difference `tasks` detect, at two-sided
    `alpha` over the family of `configurations` compared, with `power`: for the exact
    McNemar test (tasks as the unit) from the `observed` discordance of two models or a
    baseline rate, and, from two models, for the sign-flip test over sources."""
    _check(difference, tasks, models, baseline_rate, alpha, power)
    if tasks is not None and models is not None and tasks > models["tasks"]:
        # a selection is drawn from the release: it can never hold more tasks than it has
        raise AfbenchError(
            "a selection cannot hold more tasks than the release it is drawn from",
            field="--tasks",
            expected=f"at most {models['tasks']} (the release's tasks)",
            found=tasks,
        )
    family = _family(configurations)
    level = alpha / family
    basis = {"discordance": models["discordance"]} if models else {"baseline": baseline_rate}
    release_tasks = models["tasks"] if models else None
    if difference is not None:
        exact = exact_tasks(difference, level, power, **basis)
        exact["exceeds_release"] = None if release_tasks is None else exact["tasks"] > release_tasks
    else:
        exact = exact_difference(tasks, level, power, **basis) or {
            "difference": None,
            "power": None,
        }
    sources = None
    if models:
        if difference is not None:
            sources = sign_flip_tasks(models, difference, level, power, draws, seed)
        else:
            sources = sign_flip_difference(models, tasks, level, power, draws, seed) or {
                "difference": None,
                "power": None,
            }
        found = sources["power"]
        smallest = stats.sign_flip_smallest_p(len(models["sources"]), family)
        sources.update(
            {
                "smallest_p_holm": smallest,
                "decidable": smallest < alpha,
                "test": stats.SIGN_FLIP_METHOD,
                "method": SIGN_FLIP_POWER_METHOD,
                "draws": draws,
                "seed": seed,
                "monte_carlo_error": None
                if found is None
                else math.sqrt(found * (1 - found) / draws),
                "sources": len(models["sources"]),
            }
        )
    shown = sources if sources is not None else exact  # the report's test, when it can be planned
    body = {
        "question": "tasks" if difference is not None else "detectable difference",
        "release": release,
        "models": models,
        "baseline_rate": baseline_rate,
        # the question asked and the answer for the report's test (None: none reaches it)
        "difference": difference if difference is not None else shown["difference"],
        "tasks": tasks if tasks is not None else shown["tasks"],
        "alpha": alpha,
        "power": power,
        "two_sided": True,
        "configurations": configurations,
        "family": family,
        "level": level,
        "family_note": FAMILY_NOTE,
        "sources_as_unit": sources,
        "tasks_as_unit": {"test": "exact McNemar", "method": EXACT_POWER_METHOD, **exact},
        "assumption": _assumption(models, baseline_rate),
    }
    return POWER_PLAN.record(**body, line=line(body))


def _assumption(models: dict | None, baseline_rate: float | None) -> str:
    if models:
        return (
            f"planning assumption: the two configurations disagree as {models['a']} and "
            f"{models['b']} do in the official {models['source_condition']} results "
            f"(discordance ψ = {models['discordance']:.4g}, {models['only_a'] + models['only_b']} "
            f"of {models['tasks']} tasks; intra-source correlations "
            f"{models['discordance_icc']:.3f} of discordance and {models['direction_icc']:.3f} of "
            "its direction); a local run's configurations may disagree more or less"
        )
    return (
        f"planning assumption: a baseline rate of {baseline_rate:g} with the two configurations' "
        "successes independent; no between-source variation is known, so only the test with "
        "tasks as the unit is planned: the report's decisions use the sign-flip test over "
        "sources (plan it with two models' imports: --models A B)"
    )


def _family_text(plan: dict) -> str:
    pairs = plan["family"]
    if pairs == 1:
        return f"two-sided alpha {plan['alpha']:g}"
    return (
        f"two-sided alpha {plan['alpha']:g} Holm-adjusted over the {pairs} pairs of "
        f"{plan['configurations']} configurations (level {plan['level']:.3g})"
    )


def _detect(difference: float) -> str:
    return f"a paired difference of {difference:.4g} ({100 * difference:.1f} pp)"


def line(plan: dict) -> str:
    """The planner's one line: the answer for the report's test (sources as the unit), the one
    with tasks as the unit beside it, and what it assumes."""
    settings = f"{_family_text(plan)}, power {plan['power']:g}"
    exact, sources = plan["tasks_as_unit"], plan["sources_as_unit"]
    asked = plan["difference"] if plan["question"] == "tasks" else None
    models = plan["models"]
    release = f"the release's {models['tasks']}" if models else None
    exact_test = "the exact McNemar test with tasks as the unit"
    parts = []
    if sources is not None and not sources["decidable"]:
        parts.append(_no_decision(plan))
        sources = None  # what it would detect is moot: the line goes on with tasks as the unit
    if plan["question"] == "tasks":
        what = _detect(asked)
        if sources is not None and not sources["reachable"]:
            parts.append(
                f"no number of tasks from these {sources['sources']} sources detects {what} "
                f"with the report's sign-flip test over sources at {settings}: at "
                f"{sources['cap']} tasks ({CAP_FACTOR}x {release}) its power is only "
                f"{sources['power_at_cap']:.2f} (simulated)"
            )
        elif sources is not None:
            beyond = " (more than the release has: sources like these, larger)"
            parts.append(
                f"{sources['tasks']} tasks{beyond if sources['exceeds_release'] else ''} detect "
                f"{what} with the report's sign-flip test over sources at {settings} "
                f"(simulated power {sources['power']:.3f} ± {sources['monte_carlo_error']:.3f}, "
                f"{sources['draws']} draws)"
            )
        beyond = f" (more than {release})" if exact.get("exceeds_release") else ""
        parts.append(
            f"{exact['tasks']} tasks{beyond} "
            + (f"with {exact_test}" if sources is not None else f"detect {what} with {exact_test}")
            + ("" if sources is not None else f" at {settings}")
            + f" (exact power {exact['power']:.3f})"
        )
    else:
        n = plan["tasks"]
        if sources is not None:
            found = sources["difference"]
            parts.append(
                f"{n} tasks detect no paired difference at all with the report's sign-flip test "
                f"over sources at {settings}"
                if found is None
                else f"{n} tasks detect {_detect(found)} or more with the report's sign-flip test "
                f"over sources at {settings} (simulated power {sources['power']:.3f})"
            )
        found = exact["difference"]
        lead = "" if sources is not None else f"{n} tasks detect "
        tail = "" if sources is not None else f" at {settings}"
        parts.append(
            f"{lead}no paired difference at all with {exact_test}{tail}"
            if found is None
            else f"{lead}{_detect(found)} or more with {exact_test}{tail} (exact power "
            f"{exact['power']:.3f})"
        )
    if sources is not None:
        parts.append(
            f"the sign-flip test over {sources['sources']} sources reaches p = "
            f"{sources['smallest_p_holm']:.4g} at best, Holm over the {plan['family']} pair(s)"
        )
    return f"afbench power: {'; '.join(parts)}; {plan['assumption']}"


def _no_decision(plan: dict) -> str:
    sources = plan["sources_as_unit"]
    return (
        f"no decision possible at alpha {plan['alpha']:g} with the report's sign-flip test over "
        f"these {sources['sources']} sources, whatever the tasks or the difference: its p cannot "
        f"go below 2/2^{sources['sources']}, and Holm over the {plan['family']} pair(s) not "
        f"below {sources['smallest_p_holm']:.4g}"
    )


def execute_line(tasks: int, alpha: float = 0.05, power: float = 0.8) -> str:
    """What `snakemake execute` prints beside the worst-case cost: the smallest difference the
    run's tasks detect with the exact McNemar test between two configurations, for a baseline
    of 0.5 and independent successes."""
    found = exact_difference(tasks, alpha, power, baseline=0.5)
    detect = (
        "no paired difference at all, too few tasks"
        if found is None
        else f"a paired difference of {100 * found['difference']:.1f} pp or more"
    )
    return (
        f"{tasks} task(s) can detect {detect}; exact McNemar (tasks as the unit) at alpha "
        f"{alpha:g}, power {power:g} (exact), assuming a baseline success rate of 0.5 and "
        "independent successes of two configurations compared; more configurations (Holm) and "
        "the report's sign-flip test over sources need more: afbench power --configurations K "
        "--models A B"
    )


def with_sequential(plan: dict, tasks: int, batch_tasks: int, usd_per_task: float) -> dict:
    """The plan with the sequential view beside its fixed-n count (afbench.execution.sequential):
    what the sequential test spends on average to a decision at the plan's difference and at none,
    with at most `tasks` tasks in batches of `batch_tasks`, each task's two trials costing
    `usd_per_task`. Only for a plan that asks how many tasks a difference needs."""
    from afbench.execution.sequential import planner_view

    if plan["question"] != "tasks":
        raise AfbenchError(
            "the sequential view needs a difference to detect",
            field="difference",
            expected="a difference (the planner's question: how many tasks)",
            found="a number of tasks",
        )
    models, baseline = plan["models"], plan["baseline_rate"]
    if models:
        discordance = models["discordance"]
    else:  # independent successes at the baseline rate and the baseline plus the difference
        high = baseline + plan["difference"]
        discordance = high * (1 - baseline) + baseline * (1 - high)
    try:
        view = planner_view(
            difference=plan["difference"],
            discordance=discordance,
            alpha=plan["level"],
            power=plan["power"],
            fixed_n_tasks=plan["tasks_as_unit"]["tasks"],
            selection_tasks=tasks,
            batch_tasks=batch_tasks,
            usd_per_task=usd_per_task,
        )
    except ValueError as error:
        raise AfbenchError(str(error), field="sequential") from None
    return {**plan, "sequential": view}
