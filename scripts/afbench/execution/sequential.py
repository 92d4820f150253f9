"""A paired comparison that stops when it is decided (design.md 3.7, 3.9).

Two configurations, a and b, run the same tasks batch by batch, in an order whose every prefix
is a stratified selection (`nested_stratified_order`). Only the discordant pairs carry evidence
about which is better: a task solved by one and not by the other. Each favours a with some
probability θ; no difference is θ = 1/2 on every task. After each batch the test
(`sequential_decision`) says `A better`, `B better`, `continue` or `futile`:

- the evidence for a is Robbins' (1970) beta-mixture likelihood ratio over the discordant pairs,
  M_a(m, k) = ∫ θ^k (1 - θ)^(m - k) / 2^-m dπ(θ) with k of m pairs favouring a and π a Beta(c, c)
  prior restricted to θ > 1/2; M_b the same with k and m - k swapped. Each is a martingale
  under θ = 1/2 and a supermartingale under θ < 1/2 (for M_a; θ > 1/2 for M_b), so Ville's
  inequality bounds the chance that it ever reaches 2/α by α/2 (an e-process: Howard et al.
  2021 build confidence sequences from the same mixtures);
- the run is finite (at most `horizon` tasks, so at most that many discordant pairs), so the
  threshold is calibrated exactly instead: the largest boundary whose binomial first-passage
  probability under θ = 1/2, over every prefix of up to `horizon` pairs, is at most α/2 per
  side (computed with integers, `crossing_probability`). It is never above Ville's 2/α, so the
  test is never weaker, and it holds at any stopping time up to the horizon: the run may stop
  at any batch, for any reason (a decision, futility, the cost ceiling), and the chance of a
  wrong decision stays within α;
- futility: non-binding conditional power (Lachin 2005). At each look, the probability of
  reaching a decision by the horizon, were the true difference the design's (its discordance
  and difference), is computed exactly for both directions; below `futility_power` both ways,
  the run is futile. A futility stop only ends a run without a decision, so it cannot raise
  the error above α. At the horizon every undecided run is futile;
- infrastructure errors (any outcome but accepted and rejected) follow the plan's sealed rule
  (`infrastructure_errors`, ERROR_RULES). `rerun then exclude`: an errored trial runs again as
  a new attempt in the next step, beside the next batch, up to the configurations' sealed
  attempts (configurations.a.attempts = configurations.b.attempts, from execute.attempts); a
  configuration's outcome on a task is its first verdict; a task one of whose configurations
  erred at every attempt is left out of the test, for both configurations, and reported by
  task; a look waits until each of its tasks is counted or left out. `bounds`, the rule of
  plans sealed before afbench sealed one, which they keep: a task whose outcome is an error
  for a configuration is counted both ways, and `A better` is declared only if it holds with
  every error resolved against a (M_a only grows as a pair moves towards a), `B better`
  likewise, `futile` only if it holds resolved either way; errored trials are rerun only at
  the horizon, when the decision rests on them.

The decision is about these tasks, paired, as the exact McNemar test's is: its null is that on
every task the two configurations are exchangeable, which holds however tasks cluster by
source. Batches are stratified by source, so at every look each source is represented in
proportion (bench/sequential.py measures the error with sources that differ).

Why leaving a task out keeps the test valid. Under that null the two configurations are
exchangeable on each task with everything their trials record, infrastructure errors
included: the pair of attempt sequences (a's, b's) is as likely as (b's, a's), tasks
independent. The rule sees only whether each side reached a verdict within the same sealed
number of attempts, and leaves the task out when either did not: a function of the pair that
swapping a and b does not change. So, given which tasks are left out and which are discordant,
each counted discordant pair still favours a or b with probability 1/2, independently: the
test's null distribution, a fair coin over at most `horizon` pairs, whose boundary was
calibrated for any stopping time. Retries and their timing are the same for both sides (each
errored trial reruns at the next step), so they change when a look is made, never what it
counts. What it does not protect against: errors that are not exchangeable under the null,
above all errors that stand for the configuration's own failure (an agent whose crash on hard
tasks reads as an infrastructure error, a provider that fails one model's long requests):
leaving those tasks out removes one configuration's failures and can favour it when the two
are equally good; errors as bounds were valid whatever the errors, at the cost of power. The
decision is then about the tasks that were counted, not the whole selection: the excluded
tasks are listed for that reason, and many of them say the comparison measured little.

The design (`design`) fixes everything before money is spent: the prior's concentration c
from the design's difference, the horizon (the fewest tasks, within the selection, that give
the asked power at the design's difference, futility included), the boundary and the futility
tables as integers, and the test's exact operating characteristics (`operating_
characteristics`: expected tasks to a decision, the chance of each decision) beside the fixed-n
planner's count. The sealed plan (afbench.plans.preregister) carries it, so every decision is a
table look-up: the same on every machine.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction

from afbench.core.errors import AfbenchError, Problem
from afbench.kinds import SEQUENTIAL_DECISION, SEQUENTIAL_RUN
from afbench.kinds.execution import ERROR_RULES

TEST_NAME = "truncated beta-mixture sequential probability ratio test on the discordant pairs"
TEST_METHOD = (
    "Robbins' (1970) beta-mixture likelihood ratio over the discordant pairs (k of m favouring "
    "a): M_a(m, k) = ∫_{θ>1/2} θ^k (1-θ)^(m-k) 2^m dBeta(c, c)(θ) / P(θ > 1/2), and M_b with k "
    "and m - k swapped, each an e-process under no difference (Ville 1939); a is declared "
    "better once M_a reaches the threshold, b once M_b does. The threshold is calibrated "
    "exactly for the horizon: the largest boundary whose first-passage probability under "
    "θ = 1/2, over every prefix of up to `horizon` discordant pairs, is at most α/2 per side "
    "(integer path counts), never above Ville's 2/α. Infrastructure errors follow the plan's "
    "rule: rerun up to the sealed attempts and a task whose trials still err left out for "
    "both (or, in plans sealed before that rule, bounds: a decision must hold with every "
    "error resolved against it)"
)
FUTILITY_METHOD = (
    "non-binding conditional power (Lachin 2005): futile when the chance of a decision by the "
    "horizon, computed exactly at the design's difference and discordance in either direction "
    "from the current counts (errors resolved towards that direction), is below the threshold "
    "both ways; every run undecided at the horizon is futile"
)
ORDER_METHOD = (
    "nested stratified order: the h-th task goes to the source with the earliest deadline "
    "(a_s + 1) / n_s among those still below their upper quota h·n_s / N (the quota method of "
    "Balinski & Young 1975), so every prefix gives each source the floor or the ceiling of its "
    "quota; within a source, its tasks by the lowest sha256(f'{seed}:{task_id}'), as a "
    "stratified selection draws them"
)
HORIZON_RULE = (
    "the fewest whole batches (within the selection) whose exact power at the design's "
    "difference, futility included, reaches the asked power (bisection over the batches); the "
    "whole selection when it cannot"
)
CITATIONS = (
    "Robbins, H. (1970). Statistical methods related to the law of the iterated logarithm. "
    "Ann. Math. Statist. 41(5):1397-1409",
    "Ville, J. (1939). Étude critique de la notion de collectif. Gauthier-Villars",
    "Howard, S. R., Ramdas, A., McAuliffe, J., Sekhon, J. (2021). Time-uniform, nonparametric, "
    "nonasymptotic confidence sequences. Ann. Statist. 49(2):1055-1080",
    "Lachin, J. M. (2005). A review of methods for futility stopping based on conditional "
    "power. Stat. Med. 24(18):2747-2764",
    "Balinski, M. L., Young, H. P. (1975). The quota method of apportionment. Amer. Math. "
    "Monthly 82(7):701-730",
)
VALIDITY = (
    "valid at any stopping time up to the horizon: the chance of declaring either "
    "configuration better when on every task the two are exchangeable is at most alpha, "
    "whenever the run stops (a decision, futility, the cost ceiling or by hand)"
)
DECISIONS = ("A better", "B better", "continue", "futile")
ERRORS_AS_BOUNDS, RERUN_THEN_EXCLUDE = ERROR_RULES
ERROR_STATEMENT = (
    "an infrastructure error (a trial's outcome other than accepted and rejected) runs again "
    "as a new attempt at the next step, beside the next batch, up to the configurations' "
    "attempts (configurations.a.attempts and .b.attempts, sealed from execute.attempts); "
    "each configuration's outcome on a task is its first verdict; a task one of whose "
    "configurations erred at every attempt is left out of the test for both, and reported; a "
    "look waits until each of its tasks is counted or left out"
)
# The largest horizon a design covers: the exact tables cost O(horizon^3) to build
MAX_HORIZON = 1000
MAX_PRIOR_CONCENTRATION = 1000
RESOLVED = {"accepted": 1, "rejected": 0}


# --- the order: every prefix a stratified selection -----------------------------------------
def _rank(seed: int | str, task_id: str) -> bytes:
    return hashlib.sha256(f"{seed}:{task_id}".encode()).digest()


def nested_stratified_order(
    tasks: Sequence[tuple[str, str]], sources: Sequence[str], seed: int | str
) -> dict:
    """All of `tasks` ((task_id, source_id) in MANIFEST order; `sources` the source ids in
    SOURCES order) in an order whose every prefix of h tasks gives each source s the floor or
    the ceiling of its quota h·n_s/N, and takes each source's tasks by the lowest
    sha256(f"{seed}:{task_id}") (afbench.core.stats.seeded_sample): a nested sequence of stratified
    selections. Largest-remainder allocation is not nested (the Alabama paradox), so the
    sources take turns by Balinski and Young's quota method: the source with the earliest
    deadline (a_s + 1)/n_s among those below their upper quota; ties to the larger source,
    then the earlier one. Returns {"task_ids", "seed", "method"}."""
    if len({task_id for task_id, _ in tasks}) != len(tasks):
        raise ValueError("task ids must be distinct")
    if len(set(sources)) != len(sources):
        raise ValueError("source ids must be distinct")
    unknown = sorted({source for _, source in tasks} - set(sources))
    if unknown:
        raise ValueError(f"tasks of unknown sources: {', '.join(unknown)}")
    by_source: dict[str, list[str]] = {source: [] for source in sources}
    for task_id, source in tasks:
        by_source[source].append(task_id)
    queues = [
        sorted(ids, key=lambda task_id: _rank(seed, task_id)) for ids in by_source.values() if ids
    ]
    sizes = [len(queue) for queue in queues]
    total = sum(sizes)
    taken = [0] * len(queues)
    order = []
    for h in range(1, total + 1):
        best = -1
        for i, size in enumerate(sizes):
            if taken[i] * total >= h * size:  # at its upper quota already
                continue
            if best < 0:
                best = i
                continue
            # earlier deadline: (taken_i + 1)/n_i < (taken_b + 1)/n_b, exactly
            left, right = (taken[i] + 1) * sizes[best], (taken[best] + 1) * size
            if left < right or (left == right and size > sizes[best]):
                best = i
        order.append(queues[best][taken[best]])
        taken[best] += 1
    return {"task_ids": order, "seed": seed, "method": ORDER_METHOD}


# --- the mixture and its calibrated boundary ---------------------------------------------------
def prior_concentration(difference: float, discordance: float) -> int:
    """The Beta(c, c) prior's c whose spread, 1/(2·sqrt(2c + 1)), is the design's θ - 1/2 =
    δ/(2ψ): the mixture then weighs most the alternatives the design is about (a small
    difference among many discordant pairs wants a concentrated prior)."""
    gap = difference / (2 * discordance)
    if not 0 < gap <= 0.5:
        raise ValueError("the difference must be above 0 and at most the discordance")
    c = round((1 / (4 * gap * gap) - 1) / 2)
    return max(1, min(MAX_PRIOR_CONCENTRATION, c))


def log_mixture_rows(max_pairs: int, c: int):
    """log M_a(m, k) for m = 0..max_pairs, each row over k = 0..m (numpy arrays, made
    non-decreasing in k as the exact values are). With integer c,
    M_a = 2^(m+1) B(k+c, m-k+c) / B(c, c) · P(Binomial(m+2c-1, 1/2) <= k+c-1)."""
    import numpy as np

    if c < 1 or int(c) != c:
        raise ValueError("the prior's concentration is a whole number >= 1")
    lgamma = np.array([math.lgamma(i) if i > 0 else math.inf for i in range(max_pairs + 2 * c + 2)])
    log2 = math.log(2)
    log_beta_cc = 2 * lgamma[c] - lgamma[2 * c]
    rows = []
    for m in range(max_pairs + 1):
        k = np.arange(m + 1)
        a, b = k + c, m - k + c
        trials = m + 2 * c - 1
        i = np.arange(trials + 1)
        log_pmf = lgamma[trials + 1] - lgamma[i + 1] - lgamma[trials - i + 1] - trials * log2
        log_cdf = np.logaddexp.accumulate(log_pmf)
        row = (m + 1) * log2 + lgamma[a] + lgamma[b] - lgamma[a + b] - log_beta_cc + log_cdf[a - 1]
        rows.append(np.maximum.accumulate(row))
    return rows


def _boundary_at(rows, threshold: float) -> list[int]:
    """The smallest k with log M_a(m, k) >= threshold, per m (m + 1: none)."""
    import numpy as np

    return [int(np.searchsorted(row, threshold, side="left")) for row in rows]


def crossing_probability(boundary: Sequence[int]) -> Fraction:
    """Exactly, the chance that a fair coin's running count of heads k over m = 1..len - 1
    tosses ever reaches boundary[m] (a boundary[m] above m never crosses): the chance, under no
    difference, that the test ever declares a better, for a run of up to len - 1 discordant
    pairs. Integer path counts; no rounding."""
    if not boundary or boundary[0] <= 0:
        return Fraction(1)
    paths = [1]  # paths[k]: paths that have not crossed, with k heads after m tosses
    crossed = Fraction(0)
    for m in range(1, len(boundary)):
        step = [0] * (m + 1)
        for k, count in enumerate(paths):
            if count:
                step[k] += count
                step[k + 1] += count
        edge = boundary[m]
        if edge <= m:
            over = sum(step[edge:])
            if over:
                crossed += Fraction(over, 1 << m)
                step[edge:] = [0] * (m + 1 - edge)
        paths = step
    return crossed


def _float_crossing(boundary: Sequence[int]) -> float:
    import numpy as np

    n = len(boundary)
    p = np.zeros(n + 1)
    p[0] = 1.0
    crossed = 0.0
    for m in range(1, n):
        q = np.zeros(n + 1)
        q[:m] += 0.5 * p[:m]
        q[1 : m + 1] += 0.5 * p[:m]
        edge = boundary[m]
        if edge <= m:
            crossed += float(q[edge : m + 1].sum())
            q[edge : m + 1] = 0.0
        p = q
    return crossed


def calibrated_boundary(horizon: int, c: int, alpha: float, rows=None) -> dict:
    """The decision boundary for runs of up to `horizon` tasks: per m = 0..horizon, the
    smallest count of pairs favouring a (of m discordant pairs) at which a is declared better
    (m + 1: never), at the lowest value of M_a whose exact crossing probability under no
    difference is at most α/2 (`rows`: log_mixture_rows of at least `horizon` pairs, if
    computed already). Returns boundary, threshold (log M_a), threshold_e, the exact size per
    side (a float of the exact fraction) and Ville's threshold beside it."""
    import numpy as np

    if not 1 <= horizon <= MAX_HORIZON:
        raise ValueError(f"the horizon must be between 1 and {MAX_HORIZON} tasks, not {horizon}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1 (exclusive), not {alpha}")
    side = Fraction(repr(float(alpha))) / 2
    rows = log_mixture_rows(horizon, c) if rows is None else rows[: horizon + 1]
    # the boundary changes only where the threshold passes a value of M_a: bisect over them,
    # between 1 (every run crosses at once) and Ville's 2/α (valid on any horizon)
    ville = math.log(2 / alpha)
    values = np.unique(np.concatenate(rows))
    values = values[(values > 0) & (values <= ville)]
    candidates = [*values.tolist(), ville] if not values.size or values[-1] < ville else values
    low, high = -1, len(candidates) - 1  # crossing(candidates[high]) <= side < crossing(low)
    while high - low > 1:
        middle = (low + high) // 2
        if _float_crossing(_boundary_at(rows, candidates[middle])) <= float(side):
            high = middle
        else:
            low = middle
    boundary = _boundary_at(rows, candidates[high])
    size = crossing_probability(boundary)
    while size > side:  # only float rounding gets here: step up to the next value of M_a
        high += 1
        if high == len(candidates):
            raise ValueError("no boundary keeps the error within alpha/2 (float rounding)")
        boundary = _boundary_at(rows, candidates[high])
        size = crossing_probability(boundary)
    threshold = float(candidates[high])
    return {
        "boundary": boundary,
        # for the reader; the boundary's integers are the test
        "threshold_log_e": float(f"{threshold:.10g}"),
        "threshold_e": float(f"{math.exp(threshold):.10g}"),
        "ville_threshold_e": 2 / alpha,
        "size_per_side": float(size),
    }


# --- futility and the operating characteristics -------------------------------------------------
def looks_for(horizon: int, batch_tasks: int) -> list[int]:
    """The task counts at which the test looks: after each batch, and at the horizon."""
    if batch_tasks < 1:
        raise ValueError("a batch has at least one task")
    return sorted({*range(batch_tasks, horizon + 1, batch_tasks), horizon})


def _regions(boundary: Sequence[int], size: int):
    import numpy as np

    m = np.arange(size)[:, None]
    k = np.arange(size)[None, :]
    edge = np.array([*boundary, *([size + 1] * (size - len(boundary)))])[:, None]
    valid = k <= m
    return valid & (k >= edge), valid & (m - k >= edge), valid


def futility_tables(
    boundary: Sequence[int], looks: Sequence[int], p10: float, p01: float, below: float
) -> list[list[int]]:
    """Per look n, per m = 0..n: the smallest k at which the chance of declaring a better by
    the last look (exactly, by backward induction, with each task discordant for a with
    probability p10 and for b with p01, and decisions taken only at the looks) is at least
    `below`; m + 1 when none. By symmetry the same table read at m - k gives b's chance under
    the mirrored alternative."""
    import numpy as np

    horizon = looks[-1]
    size = horizon + 2
    a_region, b_region, _ = _regions(boundary, size)
    chance = np.where(a_region, 1.0, 0.0)
    tables: dict[int, list[int]] = {}
    concordant = 1.0 - p10 - p01
    at_looks = set(looks)
    for n in range(horizon, looks[0] - 1, -1):
        if n < horizon:
            # after n tasks m <= n: only that corner of the table moves
            after = chance[: n + 2, : n + 2]
            chance[: n + 1, : n + 1] = (
                concordant * after[: n + 1, : n + 1]
                + p10 * after[1:, 1:]
                + p01 * after[1:, : n + 1]
            )
            if n in at_looks:
                chance[a_region] = 1.0
                chance[b_region] = 0.0
        if n in at_looks:
            reach = chance[: n + 1, : n + 1] >= below
            reach &= np.tri(n + 1, dtype=bool)  # k <= m
            first = np.where(reach.any(axis=1), reach.argmax(axis=1), np.arange(n + 1) + 1)
            tables[n] = [int(x) for x in first]
    return [tables[n] for n in looks]


def operating_characteristics(design: Mapping, p10: float, p01: float) -> dict:
    """Exactly, for tasks independent and alike (each discordant for a with probability p10,
    for b with p01): the chance of each decision, the expected tasks spent and its quartiles
    and 90th percentile, for the design's boundary, futility tables and looks."""
    import numpy as np

    looks = design["looks"]
    horizon = looks[-1]
    size = horizon + 2
    a_region, b_region, valid = _regions(design["boundary"], size)
    futile_at = {}
    for n, table in zip(looks, design["futility"]["tables"], strict=True):
        edge = np.array([*table, *([size + 1] * (size - len(table)))])[:, None]
        m = np.arange(size)[:, None]
        k = np.arange(size)[None, :]
        futile_at[n] = valid & (k < edge) & (m - k < edge)
    state = np.zeros((size, size))
    state[0, 0] = 1.0
    concordant = 1.0 - p10 - p01
    outcome = {"A better": 0.0, "B better": 0.0, "futile": 0.0}
    stopped: list[tuple[int, float]] = []
    at_looks = set(looks)
    for n in range(1, horizon + 1):
        # after n tasks m <= n: only that corner of the table moves
        before = state[: n + 1, : n + 1]
        moved = concordant * before
        moved[1:, 1:] += p10 * before[:-1, :-1]
        moved[1:, :] += p01 * before[:-1, :]
        state[: n + 1, : n + 1] = moved
        if n in at_looks:
            here = 0.0
            for name, region in (
                ("A better", a_region),
                ("B better", b_region),
                ("futile", futile_at[n] & ~a_region & ~b_region),
            ):
                mass = float(state[region].sum())
                outcome[name] += mass
                here += mass
                state[region] = 0.0
            stopped.append((n, here))
    outcome["futile"] += float(state.sum())  # undecided at the horizon: no futility stop asked
    expected = sum(n * mass for n, mass in stopped) + horizon * float(state.sum())

    def quantile(q: float) -> int:
        total = 0.0
        for n, mass in stopped:
            total += mass
            if total >= q - 1e-12:
                return n
        return horizon

    return {
        "p10": p10,
        "p01": p01,
        "decisions": {name: round(value, 6) for name, value in outcome.items()},
        "expected_tasks": round(expected, 3),
        "tasks_quantiles": {"25%": quantile(0.25), "50%": quantile(0.5), "75%": quantile(0.75)}
        | {"90%": quantile(0.9)},
    }


# --- the design -------------------------------------------------------------------------------
def _design_at(
    horizon: int,
    *,
    alpha: float,
    c: int,
    batch_tasks: int,
    p10: float,
    p01: float,
    futility_power: float,
    rows,
) -> dict:
    calibrated = calibrated_boundary(horizon, c, alpha, rows)
    looks = looks_for(horizon, batch_tasks)
    tables = futility_tables(calibrated["boundary"], looks, p10, p01, futility_power)
    return {
        **calibrated,
        "looks": looks,
        "futility": {"method": FUTILITY_METHOD, "conditional_power_below": futility_power}
        | {"tables": tables},
    }


def design(
    *,
    alpha: float,
    difference: float,
    discordance: float,
    power: float,
    batch_tasks: int,
    selection_tasks: int,
    horizon: int | None = None,
    futility_power: float = 0.1,
) -> dict:
    """The sequential test for a paired comparison, fixed before any trial: the prior's
    concentration from the design (`difference` δ at `discordance` ψ: a pair favours a with
    probability (ψ + δ)/(2ψ)), the horizon (given, or the fewest tasks within the selection
    with `power` at the design, HORIZON_RULE), the calibrated boundary, the looks (every
    `batch_tasks` tasks and the horizon), the futility tables, and the exact operating
    characteristics at the design's difference and at none."""
    if not 0 < difference <= discordance <= 1:
        raise ValueError(
            "the design needs 0 < difference <= discordance <= 1 (p01 = (ψ - δ)/2 >= 0)"
        )
    if not 0 <= futility_power < 1:
        raise ValueError(f"the futility threshold must be in [0, 1), not {futility_power}")
    limit = min(selection_tasks, MAX_HORIZON)
    if selection_tasks < 1:
        raise ValueError("the selection has no tasks")
    p10, p01 = (discordance + difference) / 2, (discordance - difference) / 2
    c = prior_concentration(difference, discordance)
    settings = {
        "alpha": alpha,
        "c": c,
        "batch_tasks": batch_tasks,
        "p10": p10,
        "p01": p01,
        "futility_power": futility_power,
        "rows": log_mixture_rows(limit, c),
    }

    def at(n: int) -> tuple[dict, dict]:
        built = _design_at(n, **settings)
        return built, operating_characteristics(built, p10, p01)

    if horizon is not None:
        if not 1 <= horizon <= limit:
            raise ValueError(f"the horizon must be between 1 and {limit} tasks, not {horizon}")
        chosen, at_design = at(horizon)
        rule = "given"
    else:
        chosen, at_design = at(limit)
        rule = HORIZON_RULE
        if at_design["decisions"]["A better"] >= power:
            # a whole number of batches, or the whole selection
            sizes = looks_for(limit, batch_tasks)
            low, high = -1, len(sizes) - 1  # power(sizes[low]) < power <= power(sizes[high])
            found = (chosen, at_design)
            while high - low > 1:
                middle = (low + high) // 2
                built = at(sizes[middle])
                if built[1]["decisions"]["A better"] >= power:
                    high, found = middle, built
                else:
                    low = middle
            chosen, at_design = found
    null = operating_characteristics(chosen, discordance / 2, discordance / 2)
    return {
        "test": TEST_NAME,
        "method": TEST_METHOD,
        "citations": list(CITATIONS),
        "validity": VALIDITY,
        "alpha": alpha,
        "difference": difference,
        "discordance": discordance,
        "power_asked": power,
        "prior_concentration": c,
        "horizon": chosen["looks"][-1],
        "horizon_rule": rule,
        "batch_tasks": batch_tasks,
        **chosen,
        "at_difference": at_design,
        "at_no_difference": null,
    }


# --- after each batch -------------------------------------------------------------------------
def _check_outcomes(outcomes: Sequence[Mapping], order: Sequence[str]) -> dict[str, Mapping]:
    from afbench.kinds.runs import OUTCOME_VALUES as OUTCOMES

    planned = set(order)
    found: dict[str, Mapping] = {}
    for i, row in enumerate(outcomes):
        where = f"outcomes[{i}]"
        task_id = row.get("task_id") if isinstance(row, Mapping) else None
        if task_id not in planned:
            raise AfbenchError(
                "an outcome for a task outside the sealed plan's horizon",
                field=f"{where}.task_id",
                expected=f"one of the first {len(order)} tasks of the plan's order",
                found=task_id,
            )
        if task_id in found:
            raise AfbenchError(
                "a task's outcome given twice",
                field=f"{where}.task_id",
                expected="each task once",
                found=task_id,
            )
        for side in ("a", "b"):
            if row.get(side) not in OUTCOMES:
                raise AfbenchError(
                    "not a trial outcome",
                    field=f"{where}.{side}",
                    expected=f"one of {', '.join(OUTCOMES)}",
                    found=row.get(side),
                )
        tried = row.get("attempts", {"a": 1, "b": 1})
        for side in ("a", "b"):
            ran = tried.get(side) if isinstance(tried, Mapping) else None
            if isinstance(ran, bool) or not isinstance(ran, int) or ran < 1:
                raise AfbenchError(
                    "the attempts a configuration ran on a task are a whole number >= 1",
                    field=f"{where}.attempts.{side}",
                    expected="a whole number >= 1 (absent: one attempt each)",
                    found=ran,
                )
        cost = row.get("cost_usd")
        if cost is not None and (
            isinstance(cost, bool)
            or not isinstance(cost, int | float)
            or not math.isfinite(cost)
            or cost < 0
        ):
            raise AfbenchError(
                "a task's cost must be a finite number of USD >= 0, or null",
                field=f"{where}.cost_usd",
                expected="a finite number >= 0, or null",
                found=cost,
            )
        found[task_id] = row
    return found


def error_rule(plan: Mapping) -> str:
    """The sealed plan's rule for infrastructure errors (ERROR_RULES): a sequential plan sealed
    before afbench sealed one keeps the rule it was sealed under, errors as bounds."""
    sealed = plan.get("infrastructure_errors")
    return ERRORS_AS_BOUNDS if sealed is None else sealed["rule"]


def sealed_attempts(plan: Mapping) -> dict[str, int]:
    """How many attempts each configuration's trial of a task may take: the plan's
    configurations' attempts (sealed from execute.attempts, their one home)."""
    return {side: plan["configurations"][side]["attempts"] for side in ("a", "b")}


def _attempts_run(row: Mapping) -> Mapping[str, int]:
    return row.get("attempts", {"a": 1, "b": 1})


def _standing(row: Mapping, rule: str, attempts: Mapping[str, int]) -> str:
    """A task's standing under the error rule: `counted` (as bounds, always), or `counted`
    once both configurations have a verdict, `excluded` once one of them erred at every
    attempt it may take, `pending` while an errored one has an attempt left."""
    if rule == ERRORS_AS_BOUNDS:
        return "counted"
    tried = _attempts_run(row)
    if any(row[side] not in RESOLVED and tried[side] >= attempts[side] for side in "ab"):
        return "excluded"
    return "counted" if row["a"] in RESOLVED and row["b"] in RESOLVED else "pending"


def _counts(rows: Sequence[Mapping]) -> dict:
    """Discordant counts with every unresolved outcome resolved for a, and for b."""
    favour_a = {"pairs": 0, "for_a": 0}
    favour_b = {"pairs": 0, "for_a": 0}
    errors = {"a": 0, "b": 0}
    for row in rows:
        a, b = RESOLVED.get(row["a"]), RESOLVED.get(row["b"])
        errors["a"] += a is None
        errors["b"] += b is None
        for counts, best_a, best_b in ((favour_a, 1, 0), (favour_b, 0, 1)):
            x = best_a if a is None else a
            y = best_b if b is None else b
            if x != y:
                counts["pairs"] += 1
                counts["for_a"] += x
    return {"favour_a": favour_a, "favour_b": favour_b, "unresolved": errors}


def _shown(log_e: float) -> float:
    """An e-value to four significant digits: what a reader needs, and the same bytes on
    machines whose lgamma differs in the last place."""
    return float(f"{math.exp(log_e):.4g}")


def sequential_decision(outcomes: Sequence[Mapping], plan: Mapping) -> dict:
    """The decision after the batches finished so far. `outcomes`: one row per task run,
    {"task_id", "a", "b", "cost_usd", "attempts"} with a's and b's trial outcomes
    (afbench.runs.summary.OUTCOMES: accepted and rejected are verdicts, any other an infrastructure
    error or unknown), what the task's trials cost (or null) and how many attempts each
    configuration ran ({"a": n, "b": n}; absent: one each). `plan`: a sealed analysis plan
    (afbench.plans.preregister) with a sequential stopping rule, whose rule for infrastructure
    errors (error_rule) says what an error does. Looks at each batch whose tasks all have outcomes
    (rerun then exclude: each counted or left out), in the plan's order, and stops at the
    first decision. Returns the decision record: the decision, why, every look, where it
    stopped, what it spent, the next batch to run (when it continues), the errored trials to
    run again (`next_reruns`), the tasks whose errors hold the decision (`unresolved_tasks`:
    as bounds, those counted both ways; at the horizon a decision resting on them is
    `continue` with no next batch; rerun then exclude, those waiting for a rerun), the tasks
    left out (`excluded_tasks`), and what the fixed-n planner would have spent."""
    rule = plan["stopping_rule"]
    if rule.get("kind") != "sequential":
        raise AfbenchError(
            "the plan's stopping rule is not sequential: a fixed-n run has no decision "
            "after each batch",
            field="stopping_rule.kind",
            expected="sequential",
            found=rule.get("kind"),
        )
    test = plan["test"]
    errors, attempts = error_rule(plan), sealed_attempts(plan)
    order, looks = rule["order"], test["looks"]
    boundary, tables = test["boundary"], test["futility"]["tables"]
    done = _check_outcomes(outcomes, order[: looks[-1]])
    standing = {task_id: _standing(row, errors, attempts) for task_id, row in done.items()}
    # the mixture's values, for the record only: decisions read the sealed integer tables
    log_e = log_mixture_rows(looks[-1], test["prior_concentration"])
    history = []
    decision, reason, stopped_at = "continue", None, None
    for look, futile_below in zip(looks, tables, strict=True):
        batch = order[:look]
        if any(standing.get(task_id, "pending") == "pending" for task_id in batch):
            break
        counts = _counts([done[t] for t in batch if standing[t] == "counted"])
        fa, fb = counts["favour_a"], counts["favour_b"]
        # a better only if it holds with every error resolved against a; b likewise
        a_better = fb["for_a"] >= boundary[fb["pairs"]]
        b_better = fa["pairs"] - fa["for_a"] >= boundary[fa["pairs"]]
        reach_a = fa["for_a"] >= futile_below[fa["pairs"]]
        reach_b = fb["pairs"] - fb["for_a"] >= futile_below[fb["pairs"]]
        if a_better:
            decided, why = "A better", "the evidence for a reached the boundary"
        elif b_better:
            decided, why = "B better", "the evidence for b reached the boundary"
        elif look == looks[-1]:
            # at the horizon, a decision that rests on errors waits for them to be rerun
            could = fa["for_a"] >= boundary[fa["pairs"]] or (
                fb["pairs"] - fb["for_a"] >= boundary[fb["pairs"]]
            )
            decided, why = (
                (
                    "continue",
                    f"at the horizon ({look} tasks) the decision rests on "
                    "infrastructure errors: rerun those trials",
                )
                if could
                else ("futile", f"the horizon ({look} tasks) was reached undecided")
            )
        elif not (reach_a or reach_b):
            decided, why = (
                "futile",
                "the chance of a decision by the horizon is below "
                f"{test['futility']['conditional_power_below']:g} either way",
            )
        else:
            decided, why = "continue", None
        history.append(
            {
                "tasks": look,
                "favour_a": fa,
                "favour_b": fb,
                "unresolved": counts["unresolved"],
                "boundary_for_a": boundary[fb["pairs"]],
                "boundary_for_b": boundary[fa["pairs"]],
                "e_a": _shown(log_e[fb["pairs"]][fb["for_a"]]),
                "e_b": _shown(log_e[fa["pairs"]][fa["pairs"] - fa["for_a"]]),
                "excluded": sum(standing[t] == "excluded" for t in batch),
                "decision": decided,
            }
        )
        if decided != "continue" or why is not None:
            decision, reason, stopped_at = decided, why, look
            break
    spent_tasks = history[-1]["tasks"] if history else 0
    looked = order[:spent_tasks]
    counted = [done[t] for t in looked if standing[t] == "counted"]
    ran = list(done)
    costs = [done[t].get("cost_usd") for t in ran]
    next_batch: list[str] = []
    if decision == "continue" and stopped_at is None:
        # the first batch not yet run (rerun then exclude: even while an earlier one waits)
        upto = next((n for n in looks if any(t not in done for t in order[:n])), None)
        next_batch = [t for t in order[: upto or 0] if t not in done]
    if errors == ERRORS_AS_BOUNDS:
        unresolved_tasks = [
            t for t in looked if done[t]["a"] not in RESOLVED or done[t]["b"] not in RESOLVED
        ]
        # rerun only at the horizon, the decision resting on them
        waiting = unresolved_tasks if decision == "continue" and stopped_at is not None else []
    else:
        unresolved_tasks = [t for t in order if standing.get(t) == "pending"]
        waiting = unresolved_tasks if decision == "continue" else []
    next_reruns = [
        {"task_id": t, "configuration": side, "attempt": _attempts_run(done[t])[side] + 1}
        for t in waiting
        for side in ("a", "b")
        if done[t][side] not in RESOLVED and _attempts_run(done[t])[side] < attempts[side]
    ]
    excluded_tasks = [
        {
            "task_id": t,
            "a": done[t]["a"],
            "b": done[t]["b"],
            "attempts": dict(_attempts_run(done[t])),
        }
        for t in looked
        if standing[t] == "excluded"
    ]
    return SEQUENTIAL_DECISION.record(
        plan_sha256=plan["sealed_sha256"],
        comparison=plan["primary_comparison"],
        test=TEST_NAME,
        method=TEST_METHOD,
        alpha=test["alpha"],
        validity=VALIDITY,
        decision=decision,
        reason=reason,
        stopped_at_tasks=stopped_at,
        tasks_counted=spent_tasks,
        tasks_run=len(ran),
        spent_usd=round(sum(cost for cost in costs if cost is not None), 6),
        tasks_without_cost=sum(c is None for c in costs),
        unresolved=_counts(counted)["unresolved"] if counted else {"a": 0, "b": 0},
        horizon=looks[-1],
        fixed_n_tasks=plan["design"]["fixed_n"]["tasks"],
        fixed_n_worst_case_usd=plan["design"]["fixed_n"]["tasks"]
        * plan.get("money", {}).get("worst_case_per_task_usd", 0.0),
        expected_tasks_at_difference=test["at_difference"]["expected_tasks"],
        infrastructure_errors=errors,
        retries=sum(n - 1 for t in ran for n in _attempts_run(done[t]).values()),
        excluded_tasks=excluded_tasks,
        looks=history,
        next_batch=next_batch,
        next_reruns=next_reruns,
        unresolved_tasks=unresolved_tasks,
    )


STANDING_RULE = (
    "of a trial's attempts (one task, one configuration), the one that stands is its first "
    "with a verdict (accepted or rejected: later attempts exist to rerun infrastructure "
    "errors), else its last that started; every other attempt was replaced by it"
)


def standing_attempt(started: Sequence[Mapping]) -> Mapping:
    """The attempt of one trial that stands (STANDING_RULE), of its started attempts (each a
    mapping with its `attempt` number and its `outcome`, in any order): the outcome the
    decision reads for the configuration on the task, and the one the executed run's import
    keeps (afbench.runs.summary.mark_replaced), so the two never disagree."""
    tried = sorted(started, key=lambda r: r["attempt"])
    return next((r for r in tried if r["outcome"] in RESOLVED), tried[-1])


def comparison_receipts(plan: Mapping, receipts: Sequence[Mapping]) -> list[Mapping]:
    """The receipts of the sealed plan's comparison: its two configurations' trials of its
    selection (others, of another item or selection, are no trial of it)."""
    sides = {(c["agent"], c["model"]) for c in plan["configurations"].values()}
    wanted = plan["selection"]["selection_sha256"]
    return [
        r
        for r in receipts
        if (r["plan"]["agent"], r["plan"]["model"]) in sides
        and r["plan"]["selection"]["selection_sha256"] == wanted
    ]


def rerun_receipts(plan: Mapping, receipts: Sequence[Mapping]) -> list[Mapping]:
    """The receipts whose attempts replace one another (STANDING_RULE): a sequential plan's
    comparison, whose later attempts are reruns of errored trials; none under a fixed-n plan,
    whose every attempt runs as an attempt of its own."""
    if plan["stopping_rule"]["kind"] != "sequential":
        return []
    return comparison_receipts(plan, receipts)


def outcomes_from_receipts(plan: Mapping, receipts: Sequence[Mapping]) -> list[dict]:
    """The rows `sequential_decision` reads, from the trial receipts of the plan's two
    configurations (afbench.execution.trial): per task, each configuration's outcome is that of its
    attempt that stands (standing_attempt: its first with a verdict, else its last that
    started), and its attempts the latest that started; the cost is every started attempt's,
    both configurations (null when a trial reported none). A task is left out until
    both configurations have a started attempt (a trial refused at the cost ceiling did not
    start). Receipts of another selection, configuration or task are refused."""
    from afbench.plans.plan import plan_label

    sides = {(c["agent"], c["model"]): side for side, c in plan["configurations"].items()}
    wanted = plan["selection"]["selection_sha256"]
    planned = set(plan["stopping_rule"]["order"])
    attempts: dict[tuple[str, str], list[Mapping]] = {}
    for i, receipt in enumerate(receipts):
        where = f"receipts[{i}]"
        made = receipt["plan"]
        if made["selection"]["selection_sha256"] != wanted:
            raise AfbenchError(
                "a trial of another selection than the sealed plan's",
                field=f"{where}.plan.selection.selection_sha256",
                expected=wanted,
                found=made["selection"]["selection_sha256"],
            )
        side = sides.get((made["agent"], made["model"]))
        if side is None:
            raise AfbenchError(
                "a trial of neither configuration of the sealed plan",
                field=f"{where}.plan.agent",
                expected=" or ".join(c["label"] for c in plan["configurations"].values()),
                found=plan_label(made["agent"], made["model"]),
            )
        if receipt["task_id"] not in planned:
            raise AfbenchError(
                "a trial of a task the sealed plan does not hold",
                field=f"{where}.task_id",
                expected="a task of the plan's selection",
                found=receipt["task_id"],
            )
        if receipt["refused"] is None:
            attempts.setdefault((receipt["task_id"], side), []).append(receipt)
    rows = []
    for task_id in plan["stopping_rule"]["order"]:
        if (task_id, "a") not in attempts or (task_id, "b") not in attempts:
            continue
        row: dict = {"task_id": task_id}
        costs: list[float | None] = []
        for side in ("a", "b"):
            tried = sorted(attempts[(task_id, side)], key=lambda r: r["attempt"])
            row[side] = standing_attempt(tried)["outcome"]
            costs += [t["cost_usd"] for r in tried for t in r["trials"]] or [None]
        row["cost_usd"] = None if None in costs else sum(costs)
        row["attempts"] = {
            side: max(r["attempt"] for r in attempts[(task_id, side)]) for side in ("a", "b")
        }
        rows.append(row)
    return rows


# --- the comparison run through `snakemake execute`, step by step --------------------------------
RUN_NOTE = (
    "The paired comparison of the sealed analysis plan, run by `snakemake execute` in batches "
    "of its order: after each step (step 0: before any trial) the sequential test decides on "
    "the trials run so far, and the run stops at the first decision, at the horizon or at the "
    "cost ceiling, whichever comes first; otherwise `next_trials` run next: a new attempt of "
    "each trial whose infrastructure error is known, up to the sealed attempts, beside the "
    "next batch (in a plan whose errors are bounds, a new attempt only at the horizon, of each "
    "trial whose error keeps the decision open)."
)


def _receipt_cost(receipt: Mapping) -> float | None:
    costs = [t["cost_usd"] for t in receipt["trials"]]
    if not costs or None in costs:
        return None
    return round(sum(costs), 6)


def run_step(
    plan: Mapping,
    receipts: Sequence[Mapping],
    *,
    step: int,
    afford: Callable[[list[dict]], str | None] | None = None,
) -> dict:
    """Where the comparison of the sealed `plan` stands after `step` steps of `snakemake
    execute`, from the trial receipts of its two configurations so far (afbench.execution.trial),
    and what runs next: the decision record's facts (sequential_decision), whether and why the run
    stopped (kinds.execution.STOPS), what it spent, the retries and the tasks left out, and
    `next_trials` ({task_id, configuration, label, attempt}): the decision's reruns (each a new
    attempt, within the configuration's sealed attempts), then the next batch of the plan's
    order, both configurations, first attempts. `afford(next_trials)` says why the next trials
    may not start at the cost ceiling (the guard's arithmetic, afbench.execution.approval.approve),
    or None."""
    if step < 0:
        raise ValueError("steps count from 0")
    receipts = sorted(receipts, key=lambda r: (r["task_id"], r["plan"]["agent"], r["attempt"]))
    decided = sequential_decision(outcomes_from_receipts(plan, receipts), plan)
    attempts = sealed_attempts(plan)
    sides = {(c["agent"], c["model"]): side for side, c in plan["configurations"].items()}
    for i, receipt in enumerate(receipts):
        most = attempts[sides[(receipt["plan"]["agent"], receipt["plan"]["model"])]]
        if not 1 <= receipt["attempt"] <= most:
            raise AfbenchError(
                "a trial's attempt is beyond the attempts the sealed plan allows",
                field=f"receipts[{i}].attempt",
                expected=f"1 to {most} (configurations' attempts, execute.attempts)",
                found=receipt["attempt"],
            )
    labels = {side: c["label"] for side, c in plan["configurations"].items()}
    position = {task_id: i for i, task_id in enumerate(plan["stopping_rule"]["order"])}
    trials = sorted(
        (
            {
                "task_id": r["task_id"],
                "configuration": sides[(r["plan"]["agent"], r["plan"]["model"])],
                "attempt": r["attempt"],
                "outcome": r["outcome"],
                "cost_usd": _receipt_cost(r),
                "refused": r["refused"] is not None,
            }
            for r in receipts
        ),
        key=lambda t: (position[t["task_id"]], t["configuration"], t["attempt"]),
    )
    refused = [r for r in receipts if r["refused"] is not None]
    refused.sort(key=lambda r: (position[r["task_id"]], r["attempt"], r["plan"]["agent"]))
    next_trials: list[dict] = []
    stopped_by, stop_reason = None, None
    if decided["decision"] in ("A better", "B better"):
        stopped_by, stop_reason = "decision", decided["reason"]
    elif decided["decision"] == "futile":
        at_horizon = decided["stopped_at_tasks"] == decided["horizon"]
        stopped_by, stop_reason = ("horizon" if at_horizon else "futility"), decided["reason"]
    elif refused:
        first = refused[0]
        stopped_by = "cost ceiling" if first["action"] == "refused" else "interrupted trial"
        stop_reason = f"trial {first['job_name']} did not start: {first['refused']}"
    else:
        wanted = [(r["task_id"], r["configuration"], r["attempt"]) for r in decided["next_reruns"]]
        wanted += [(t, side, 1) for t in decided["next_batch"] for side in ("a", "b")]
        next_trials = [
            {"task_id": t, "configuration": side, "label": labels[side], "attempt": attempt}
            for t, side, attempt in wanted
        ]
        if not next_trials:
            stopped_by = "attempts exhausted"
            stop_reason = (
                f"at the horizon the decision rests on the infrastructure errors of "
                f"{len(decided['unresolved_tasks'])} task(s), and each has run "
                f"{max(attempts.values())} attempt(s) (execute.attempts): undecided"
            )
    if next_trials and afford is not None:
        why = afford(next_trials)
        if why is not None:
            stopped_by, stop_reason, next_trials = "cost ceiling", why, []
    started = [t for t in trials if not t["refused"]]
    costs = [t["cost_usd"] for t in started]
    spent = round(sum(c for c in costs if c is not None), 6)
    retried = [t["cost_usd"] for t in started if t["attempt"] > 1]
    per_task = spent / decided["tasks_run"] if decided["tasks_run"] and spent else None
    fixed_n = plan["design"]["fixed_n"]["tasks"]
    return SEQUENTIAL_RUN.record(
        note=RUN_NOTE,
        plan_sha256=plan["sealed_sha256"],
        comparison=plan["primary_comparison"],
        test=TEST_NAME,
        method=TEST_METHOD,
        alpha=plan["test"]["alpha"],
        validity=VALIDITY,
        step=step,
        decision=decided["decision"],
        reason=decided["reason"],
        stopped=stopped_by is not None,
        stopped_by=stopped_by,
        stop_reason=stop_reason,
        stopped_at_tasks=decided["stopped_at_tasks"],
        tasks_counted=decided["tasks_counted"],
        tasks_run=decided["tasks_run"],
        horizon=decided["horizon"],
        trials_started=len(started),
        trials_refused=len(trials) - len(started),
        spent_usd=spent,
        trials_without_cost=sum(c is None for c in costs),
        worst_case_per_task_usd=plan["money"]["worst_case_per_task_usd"],
        fixed_n_tasks=fixed_n,
        fixed_n_worst_case_usd=decided["fixed_n_worst_case_usd"],
        fixed_n_usd_at_observed_cost=None if per_task is None else round(fixed_n * per_task, 2),
        expected_tasks_at_difference=decided["expected_tasks_at_difference"],
        unresolved=decided["unresolved"],
        unresolved_tasks=decided["unresolved_tasks"],
        infrastructure_errors=decided["infrastructure_errors"],
        retries=len(retried),
        retries_usd=round(sum(c for c in retried if c is not None), 6),
        excluded_tasks=decided["excluded_tasks"],
        looks=decided["looks"],
        trials=trials,
        next_trials=next_trials,
    )


def decision_of_plan(run: Mapping, plan: Mapping) -> list[Problem]:
    """A step or decision record beside the sealed plan it names: made under its seal, for its
    comparison, at its α and horizon."""
    expected = {
        "plan_sha256": plan["sealed_sha256"],
        "comparison": plan["primary_comparison"],
        "alpha": plan["test"]["alpha"],
        "horizon": plan["stopping_rule"]["horizon"],
        "infrastructure_errors": error_rule(plan),
    }
    return [
        Problem(
            "the decision record disagrees with the sealed plan",
            field=field,
            expected=value,
            found=run[field],
        )
        for field, value in expected.items()
        if run[field] != value
    ]


# a run record's facts that its receipts and plan alone determine (the others depend on the
# cost ceiling's arithmetic at the time: whether the next batch could be afforded)
_FROM_RECEIPTS = (
    "decision",
    "reason",
    "stopped_at_tasks",
    "tasks_counted",
    "tasks_run",
    "trials_started",
    "trials_refused",
    "spent_usd",
    "trials_without_cost",
    "fixed_n_usd_at_observed_cost",
    "unresolved",
    "unresolved_tasks",
    "retries",
    "retries_usd",
    "excluded_tasks",
    "looks",
    "trials",
)


def decision_of_receipts(run: Mapping, source: Mapping) -> list[Problem]:
    """The last step's record made again (run_step) from `source`'s receipts of the sealed
    plan's selection and configurations ({"plan": ..., "receipts": [...]}) and compared,
    fact by fact."""
    plan = source["plan"]
    try:
        again = run_step(plan, comparison_receipts(plan, source["receipts"]), step=run["step"])
    except AfbenchError as error:
        return [
            Problem(
                f"its receipts cannot be decided under the sealed plan: {p.message}",
                field=p.field,
                expected=p.expected,
                found=p.found,
            )
            for p in error.problems
        ]
    problems = []
    for field in _FROM_RECEIPTS:
        made, found, at = again[field], run[field], field
        if made == found:
            continue
        if isinstance(made, list) and isinstance(found, list):
            # the first entry that differs, not two lists of hundreds of trials
            i = next((i for i, (m, f) in enumerate(zip(made, found, strict=False)) if m != f), None)
            if i is None:
                made, found = f"{len(made)} entries", f"{len(found)} entries"
            else:
                made, found, at = made[i], found[i], f"{field}[{i}]"
        problems.append(
            Problem(
                "the decision record is not what its receipts give under the sealed plan",
                field=at,
                expected=made,
                found=found,
            )
        )
    return problems


def errors_line(record: Mapping) -> str:
    """What a decision or step record says of infrastructure errors: the retries spent and the
    tasks left out, by task ("" when there are none)."""
    parts = []
    if record["retries"]:
        spent = f" (USD {record['retries_usd']:g})" if "retries_usd" in record else ""
        parts.append(f"{record['retries']} trial(s) rerun after an infrastructure error{spent}")
    excluded = [t["task_id"] for t in record["excluded_tasks"]]
    if excluded:
        shown = ", ".join(excluded[:10]) + (
            f" and {len(excluded) - 10} more" if len(excluded) > 10 else ""
        )
        parts.append(
            f"{len(excluded)} task(s) left out for both configurations, one of them erring at "
            f"every attempt: {shown}"
        )
    return "; ".join(parts)


def run_line(run: Mapping) -> str:
    """A run step in one line, for the terminal."""
    comparison = run["comparison"]
    head = f"afbench execute: {comparison['a']} against {comparison['b']}: "
    errors = errors_line(run)
    errors = f"; {errors}" if errors else ""
    if not run["stopped"]:
        reruns = sum(t["attempt"] > 1 for t in run["next_trials"])
        return (
            head + f"{run['decision']} after {run['tasks_counted']} task(s) (step {run['step']}); "
            f"next {len(run['next_trials'])} trial(s)"
            + (f", {reruns} of them reruns" if reruns else "")
            + errors
        )
    where = (
        f"stopped at {run['stopped_at_tasks']} tasks"
        if run["stopped_at_tasks"] is not None
        else f"stopped after {run['tasks_counted']} counted task(s)"
    )
    return (
        head + f"{run['decision']}, {where} ({run['stopped_by']}: {run['stop_reason']}); spent "
        f"USD {run['spent_usd']:g} on {run['tasks_run']} task(s) of the horizon's "
        f"{run['horizon']}{errors}; the fixed-n planner's count is {run['fixed_n_tasks']} "
        f"task(s) (worst case USD {run['fixed_n_worst_case_usd']:g}); {VALIDITY}"
    )


def line(decided: Mapping) -> str:
    """A decision record in one line, for the terminal."""
    if decided["decision"] == "continue" and decided["stopped_at_tasks"] is None:
        where = f"after {decided['tasks_counted']} tasks, next {len(decided['next_batch'])} task(s)"
    else:
        where = f"after {decided['stopped_at_tasks']} tasks ({decided['reason']})"
    if decided["next_reruns"]:
        where += f", and {len(decided['next_reruns'])} errored trial(s) to rerun"
    errors = errors_line(decided)
    return (
        f"afbench decide: {decided['decision']} {where}; spent USD {decided['spent_usd']:g} on "
        f"{decided['tasks_run']} task(s)" + (f"; {errors}" if errors else "") + "; the fixed-n "
        f"count is {decided['fixed_n_tasks']}; valid at any stopping time up to the horizon"
    )


# --- the planner's sequential view ----------------------------------------------------------
def planner_view(
    *,
    difference: float,
    discordance: float,
    alpha: float,
    power: float,
    fixed_n_tasks: int,
    selection_tasks: int,
    batch_tasks: int,
    usd_per_task: float,
    futility_power: float = 0.1,
) -> dict:
    """Beside the fixed-n count: what the sequential test (`design`, its horizon chosen for
    `power` within `selection_tasks`) spends to a decision at the true difference and at none,
    exactly, with tasks independent and alike; cost at `usd_per_task` (both configurations'
    trials of a task)."""
    built = design(
        alpha=alpha,
        difference=difference,
        discordance=discordance,
        power=power,
        batch_tasks=batch_tasks,
        selection_tasks=selection_tasks,
        futility_power=futility_power,
    )
    at, null = built["at_difference"], built["at_no_difference"]
    view = {
        "test": TEST_NAME,
        "validity": VALIDITY,
        "horizon": built["horizon"],
        "horizon_rule": built["horizon_rule"],
        "batch_tasks": batch_tasks,
        "prior_concentration": built["prior_concentration"],
        "futility_power": futility_power,
        "usd_per_task": usd_per_task,
        "at_difference": at | {"expected_usd": round(at["expected_tasks"] * usd_per_task, 2)},
        "at_no_difference": null
        | {"expected_usd": round(null["expected_tasks"] * usd_per_task, 2)},
        "fixed_n_tasks": fixed_n_tasks,
        "fixed_n_usd": round(fixed_n_tasks * usd_per_task, 2),
    }
    view["line"] = (
        f"afbench power (sequential): at a true difference of {difference:g} the sequential "
        f"test spends {at['expected_tasks']:.1f} tasks on average (USD "
        f"{view['at_difference']['expected_usd']:g}; median {at['tasks_quantiles']['50%']}, "
        f"90% within {at['tasks_quantiles']['90%']}) and decides for the better configuration "
        f"with probability {at['decisions']['A better']:.3f}; the fixed-n count is "
        f"{fixed_n_tasks} (USD {view['fixed_n_usd']:g}); with no difference it spends "
        f"{null['expected_tasks']:.1f} tasks on average; horizon {built['horizon']} tasks in "
        f"batches of {batch_tasks}; valid at any stopping time up to the horizon"
    )
    return view
