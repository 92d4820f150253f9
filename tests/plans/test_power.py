"""Power of a paired comparison (Connor 1987) against values obtained independently.

Reference values were computed outside the repository (a scratch venv with scipy 1.17.1,
numpy 2.4.6 and statsmodels 0.15.0, none of them a dependency of afbench):
  - Connor's n from the same formula with scipy.stats.norm.ppf quantiles;
  - the smallest detectable difference by scipy.optimize.brentq (xtol 1e-14) on that formula;
  - the power of the exact McNemar test (statsmodels' mcnemar(exact=True): min(1, 2 binom.cdf))
    at a given n, by enumerating D ~ Bin(n, ψ) discordant tasks and A | D ~ Bin(D, p10/ψ); a
    Monte-Carlo run of 200,000 tables per case agreed within its standard error (~0.0009).
The published example is from powerandsamplesize.com ("Compare Paired Proportions: McNemar's
Z-test, 2-Sided Equality", which cites Connor 1987, p. 209): p01 = 0.45, p10 = 0.05, α = 0.05,
power 0.8 gives 23 pairs."""

from __future__ import annotations

import functools
import json
import math
from statistics import NormalDist

import pytest

from afbench.core.stats import (
    CONNOR_METHOD,
    DIFFERENCE_TOLERANCE,
    GIVEN_DISCORDANCE,
    INDEPENDENT_SUCCESSES,
    mcnemar_detectable_difference,
    mcnemar_exact,
    mcnemar_sample_size,
)

import properties as prop
from conftest import afbench


def test_the_published_example():
    result = mcnemar_sample_size(0.4, discordance=0.5)  # |p10 - p01| = 0.4, p10 + p01 = 0.5
    assert result["tasks"] == 23
    assert result == {
        "tasks": 23,
        "tasks_unrounded": pytest.approx(22.011324427435788, rel=1e-12),
        "difference": 0.4,
        "discordance": 0.5,
        "baseline_rate": None,
        "alpha": 0.05,
        "power": 0.8,
        "method": CONNOR_METHOD,
        "assumption": GIVEN_DISCORDANCE,
    }


# (difference, discordance, alpha, power) -> n before rounding, by scipy
GIVEN_PSI = [
    ((0.1, 0.3, 0.05, 0.8), 233.0945382046738),
    ((0.05, 0.2, 0.05, 0.8), 625.5473178337214),
    ((0.05, 0.1, 0.05, 0.9), 416.12685505665416),
    ((0.1, 0.3, 0.01, 0.8), 347.4744731518753),
]
# (difference, baseline rate, alpha, power) -> n before rounding, by scipy with
# ψ = (P + δ)(1 - P) + P(1 - P - δ)
FROM_RATE = [
    ((0.1, 0.5, 0.05, 0.8), 390.0777818507084),
    ((0.1, 0.3, 0.05, 0.8), 358.6815304524533),
    ((0.05, 0.7, 0.05, 0.8), 1253.4602983849288),
    ((0.2, 0.1, 0.05, 0.9), 85.08035629929353),
]


@pytest.mark.parametrize(("args", "expected"), GIVEN_PSI)
def test_sample_size_for_a_given_discordance(args, expected):
    difference, psi, alpha, power = args
    result = mcnemar_sample_size(difference, discordance=psi, alpha=alpha, power=power)
    assert result["tasks_unrounded"] == pytest.approx(expected, rel=1e-12)
    assert result["tasks"] == math.ceil(expected)
    assert result["discordance"] == psi and result["assumption"] == GIVEN_DISCORDANCE


@pytest.mark.parametrize(("args", "expected"), FROM_RATE)
def test_sample_size_from_a_baseline_rate(args, expected):
    difference, rate, alpha, power = args
    result = mcnemar_sample_size(difference, baseline_rate=rate, alpha=alpha, power=power)
    assert result["tasks_unrounded"] == pytest.approx(expected, rel=1e-12)
    assert result["tasks"] == math.ceil(expected)
    p_a, p_b = rate + difference, rate
    assert result["discordance"] == pytest.approx(p_a * (1 - p_b) + p_b * (1 - p_a), rel=1e-15)
    assert result["baseline_rate"] == rate and result["assumption"] == INDEPENDENT_SUCCESSES


# (tasks, discordance, baseline rate, alpha, power) -> δ by brentq
DETECTABLE = [
    ((341, 0.2, None, 0.05, 0.8), 0.067614415666),
    ((341, None, 0.5, 0.05, 0.8), 0.106907778083),
    ((341, None, 0.2, 0.05, 0.8), 0.092658268414),
    ((34_100, None, 0.6, 0.05, 0.9), 0.012130111530),
    ((23, 0.5, None, 0.05, 0.8), 0.392230487315),
    ((1000, 0.05, None, 0.01, 0.8), 0.024130271193),
]
# bisection keeps the side that needs at most `tasks`: at or just above the root (within the
# tolerance; the references carry 12 decimals)
DETECTABLE_SLACK = DIFFERENCE_TOLERANCE + 1e-12


@pytest.mark.parametrize(("args", "expected"), DETECTABLE)
def test_detectable_difference_by_bisection(args, expected):
    tasks, psi, rate, alpha, power = args
    result = mcnemar_detectable_difference(
        tasks, discordance=psi, baseline_rate=rate, alpha=alpha, power=power
    )
    assert expected - 1e-12 <= result["difference"] <= expected + DETECTABLE_SLACK
    assert result["tolerance"] == DIFFERENCE_TOLERANCE
    assert (
        mcnemar_sample_size(
            result["difference"], discordance=psi, baseline_rate=rate, alpha=alpha, power=power
        )["tasks"]
        <= tasks
    )
    assert (
        mcnemar_sample_size(
            result["difference"] - DIFFERENCE_TOLERANCE,
            discordance=psi,
            baseline_rate=rate,
            alpha=alpha,
            power=power,
        )["tasks_unrounded"]
        > tasks
    )


def exact_mcnemar_power(n: int, p10: float, p01: float, alpha: float) -> float:
    """P(exact McNemar p < alpha) over all (only_a, only_b, rest) tables of n tasks."""
    rest = 1 - p10 - p01
    return math.fsum(
        math.comb(n, a) * math.comb(n - a, b) * p10**a * p01**b * rest ** (n - a - b)
        for a in range(n + 1)
        for b in range(n - a + 1)
        if mcnemar_exact(a, b) < alpha
    )


def test_the_exact_test_falls_short_of_the_normal_approximation():
    # Connor's n = 23 for the published example gives the exact (conservative) McNemar test
    # power 0.777, not 0.8 (scipy enumeration: 0.7765861776597958); it first reaches 0.8 at 25
    assert exact_mcnemar_power(23, 0.45, 0.05, 0.05) == pytest.approx(0.7765861776597958, 1e-9)
    assert exact_mcnemar_power(24, 0.45, 0.05, 0.05) == pytest.approx(0.7993697193130315, 1e-9)
    assert exact_mcnemar_power(25, 0.45, 0.05, 0.05) == pytest.approx(0.8201620678402026, 1e-9)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: mcnemar_sample_size(0.0, discordance=0.5), "difference must be between 0"),
        (lambda: mcnemar_sample_size(1.0, discordance=0.5), "difference must be between 0"),
        (lambda: mcnemar_sample_size(0.1, discordance=0.5, alpha=0), "alpha must be between"),
        (lambda: mcnemar_sample_size(0.1, discordance=0.5, power=1), "power must be"),
        (lambda: mcnemar_sample_size(0.1, discordance=0.5, power=0.3), "at least 0.5"),
        (lambda: mcnemar_sample_size(0.1), "either the discordance or the baseline"),
        (
            lambda: mcnemar_sample_size(0.1, discordance=0.3, baseline_rate=0.5),
            "not both or neither",
        ),
        (lambda: mcnemar_sample_size(0.1, discordance=0.0), "discordance must be above 0"),
        (lambda: mcnemar_sample_size(0.1, discordance=1.5), "at most 1"),
        (lambda: mcnemar_sample_size(0.3, discordance=0.2), "at most the discordance"),
        (lambda: mcnemar_sample_size(0.1, baseline_rate=1.0), "baseline rate must be between"),
        (lambda: mcnemar_sample_size(0.3, baseline_rate=0.8), "plus the difference"),
        (lambda: mcnemar_detectable_difference(0, discordance=0.5), "at least 1"),
        (lambda: mcnemar_detectable_difference(3, discordance=0.5), "even the largest, 0.5,"),
        (lambda: mcnemar_detectable_difference(10, baseline_rate=0.5, power=0.2), "power"),
    ],
)
def test_power_refusals(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_largest_differences_are_allowed():
    # δ = ψ (no task where b beats a) and P + δ = 1 are on the boundary, not beyond it
    assert mcnemar_sample_size(0.2, discordance=0.2)["tasks"] >= 1
    assert mcnemar_sample_size(0.3, baseline_rate=0.7)["discordance"] == pytest.approx(0.3)
    smallest = mcnemar_sample_size(0.5, discordance=0.5)["tasks"]
    assert mcnemar_detectable_difference(smallest, discordance=0.5)["difference"] <= 0.5


# --- afbench.plans.power: the planner of the report's tests --------------------------------------
from fractions import Fraction  # noqa: E402

from afbench.core.errors import AfbenchError  # noqa: E402
from afbench.plans import power as planner  # noqa: E402


def exact_power_by_hand(n: int, p10: float, p01: float, level: float) -> float:
    """Every table (A, B, rest) of n tasks by its multinomial probability, rejected when the
    tail-doubled exact p (exact fractions) is below the level."""
    total = 0.0
    for a in range(n + 1):
        for b in range(n + 1 - a):
            d, k = a + b, min(a, b)
            tail = Fraction(sum(math.comb(d, i) for i in range(k + 1)), 2**d)
            if min(1, 2 * tail) < Fraction(level):
                ways = math.comb(n, a) * math.comb(n - a, b)
                total += ways * p10**a * p01**b * (1 - p10 - p01) ** (n - a - b)
    return total


@pytest.mark.parametrize(
    ("n", "p10", "p01", "level"),
    [
        (20, 0.3, 0.1, 0.05),
        (35, 0.25, 0.15, 0.05),
        (30, 0.4, 0.05, 0.05 / 36),
        (12, 0.5, 0.0, 0.05),
    ],
)
def test_exact_power_is_the_sum_over_every_table(n, p10, p01, level):
    found = planner._ExactTest(level).power(n, p10, p01)
    assert found == pytest.approx(exact_power_by_hand(n, p10, p01, level), abs=1e-12)


def test_the_smallest_count_reaching_the_power_and_the_smallest_difference():
    found = planner.exact_tasks(0.4, 0.05, 0.8, discordance=0.5)
    n = found["tasks"]
    assert (
        exact_power_by_hand(n, 0.45, 0.05, 0.05)
        >= 0.8
        > exact_power_by_hand(n - 1, 0.45, 0.05, 0.05)
    )
    assert found["connor_tasks"] == 23  # the published example's normal approximation
    inverse = planner.exact_difference(n, 0.05, 0.8, discordance=0.5)
    assert inverse["difference"] <= 0.4 and inverse["power"] >= 0.8
    assert planner.exact_difference(3, 0.05, 0.8, discordance=0.5) is None


def test_anova_icc_by_hand():
    # two sources of 4: (4 of 4) and (0 of 4): MSB = 8·0.25·... identical within, so ρ = 1 -> 0.999
    assert planner.anova_icc([4, 0], [4, 4]) == 0.999
    # the same share everywhere: no between-source variation
    assert planner.anova_icc([2, 2, 2], [4, 4, 4]) == 0.0
    # (3 of 4, 1 of 4): p = 1/2, MSB = (4·(1/4)² ·2)/1 = 0.5, MSW = (3·1/4 + 1·3/4)/6 = 0.25,
    # n0 = (8 - 32/8)/1 = 4: ρ = (0.5 - 0.25)/(0.5 + 3·0.25) = 0.2
    assert planner.anova_icc([3, 1], [4, 4]) == pytest.approx(0.2)
    assert planner.anova_icc([1], [4]) == 0.0


def test_allocation_follows_the_stratified_selection_and_grows_beyond_the_release():
    sizes = [13, 12, 12, 11]
    assert planner.allocate(sizes, 24) == [7, 6, 6, 5]
    assert sum(planner.allocate(sizes, 480)) == 480 and planner.allocate(sizes, 96) == [
        26,
        24,
        24,
        22,
    ]


def test_sign_flip_power_is_seeded_and_grows_with_the_difference():
    allocation = [10] * 24
    args = (0.25, 0.05, 0.1, 0.05)
    first = planner.sign_flip_power(allocation, 0.08, *args, draws=400, seed=1)
    assert first == planner.sign_flip_power(allocation, 0.08, *args, draws=400, seed=1)
    assert planner.sign_flip_power(allocation, 0.0, *args, draws=400, seed=1) <= 0.08
    assert planner.sign_flip_power(allocation, 0.2, *args, draws=400, seed=1) > first


def models_like(sizes, psi, icc_d, icc_w) -> dict:
    return {
        "a": "A",
        "b": "B",
        "source_condition": "source-present",
        "tasks": sum(sizes),
        "only_a": 1,
        "only_b": 1,
        "discordance": psi,
        "design_effect": None,
        "sources": {f"s{i}": {"tasks": n, "only_a": 0, "only_b": 0} for i, n in enumerate(sizes)},
        "discordance_icc": icc_d,
        "direction_icc": icc_w,
    }


def test_the_plan_says_when_24_sources_cannot_reach_the_power_and_when_it_exceeds_the_release():
    sizes = [14] * 24
    beyond = planner.plan(
        difference=0.05,
        tasks=None,
        alpha=0.05,
        power=0.95,
        configurations=9,
        models=models_like(sizes, 0.3, 0.0, 0.5),
        draws=300,
    )
    assert beyond["sources_as_unit"]["reachable"] is False and beyond["family"] == 36
    assert "no number of tasks from these 24 sources" in beyond["line"]
    larger = planner.plan(
        difference=0.1,
        tasks=None,
        alpha=0.05,
        power=0.8,
        configurations=9,
        models=models_like(sizes, 0.25, 0.0, 0.05),
        draws=300,
    )
    assert larger["sources_as_unit"]["exceeds_release"] is True
    assert "more than the release has" in larger["line"]
    assert larger["tasks_as_unit"]["exceeds_release"] is (larger["tasks_as_unit"]["tasks"] > 336)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"configurations": 1}, "at least two configurations"),
        ({"difference": 0.5}, "below the discordance"),
        ({"difference": None}, "say what to plan"),
        ({"alpha": 1.0}, "alpha"),
    ],
)
def test_plan_refusals(overrides, message):
    settings = {
        "difference": 0.1,
        "tasks": None,
        "alpha": 0.05,
        "power": 0.8,
        "models": models_like([14] * 24, 0.25, 0.0, 0.0),
        **overrides,
    }
    with pytest.raises(AfbenchError, match=message):
        planner.plan(**settings)


def test_the_execute_line_is_the_exact_tests_detectable_difference():
    line = planner.execute_line(50)
    assert line.startswith("50 task(s) can detect a paired difference of 28.7 pp or more")
    assert "exact McNemar (tasks as the unit)" in line
    assert "no paired difference at all" in planner.execute_line(2)


# --- the run planner ------------------------------------------------------------------------
def connor(delta: float, psi: float, alpha: float = 0.05, power: float = 0.8) -> float:
    normal = NormalDist()
    root = normal.inv_cdf(1 - alpha / 2) * math.sqrt(psi) + normal.inv_cdf(power) * math.sqrt(
        psi - delta * delta
    )
    return root * root / (delta * delta)


@functools.cache
def exact_rejection(d: int, level: float) -> int:
    """The largest k with 2·P(Bin(d, 1/2) <= k) below the level (-1 if none), exactly: with
    level = num/den, 2·C/2^d < num/den is 2·C·den < num·2^d in whole numbers, C the sum of
    binomial coefficients (cached: exact_power asks the same d for every n of a range)."""
    num, den = Fraction(level).as_integer_ratio()
    tail, reject, comb = 0, -1, 1
    for k in range((d + 1) // 2):
        tail += comb  # math.comb(d, k), one step on from math.comb(d, k - 1)
        comb = comb * (d - k) // (k + 1)
        if 2 * tail * den < num * 2**d:
            reject = k
        else:
            break
    return reject


def exact_power(n: int, p10: float, p01: float, level: float) -> float:
    """The exact McNemar test's power by hand: over D ~ Bin(n, ψ) and A | D ~ Bin(D, p10/ψ),
    the probability that 2·P(Bin(D, 1/2) <= min(A, D - A)) (tail-doubled, capped at 1) is below
    the level, with exact whole numbers for the test and scipy.stats.binom for the draws (one
    vectorised call each, summed in the order of d)."""
    import numpy as np
    from scipy.stats import binom

    psi = p10 + p01
    share = p10 / psi
    d = np.arange(n + 1)
    reject = np.array([exact_rejection(int(x), level) for x in d])
    d, reject = d[reject >= 0], reject[reject >= 0]
    inside = binom.cdf(reject, d, share) + binom.sf(d - reject - 1, d, share)
    total = 0.0
    for term in binom.pmf(d, n, psi) * inside:
        total += float(term)
    return total


def test_power_gives_the_tasks_for_a_difference_and_its_inverse(tmp_path, capsys):
    afbench(
        "power",
        *("--difference", "0.1", "--alpha", "0.05", "--power", "0.8", "--baseline-rate", "0.5"),
        *("--output", tmp_path / "n.json"),
    )
    line = capsys.readouterr().out.strip()
    plan = json.loads((tmp_path / "n.json").read_text())
    p10, p01 = 0.6 * 0.5, 0.5 * 0.4  # p_a = 0.6, p_b = 0.5, successes independent
    exact = plan["tasks_as_unit"]
    # Connor's 391 falls short with the exact test (0.783); 408 is the first count reaching 0.8
    assert exact["connor_tasks"] == math.ceil(connor(0.1, p10 + p01)) == 391
    assert 0.78 < exact_power(391, p10, p01, 0.05) < 0.79
    assert exact["tasks"] == 408 and exact["power"] == pytest.approx(
        exact_power(408, p10, p01, 0.05), abs=1e-9
    )
    assert all(exact_power(n, p10, p01, 0.05) < 0.8 for n in range(400, 408))
    assert plan["sources_as_unit"] is None and "only the test with tasks as the unit" in line
    assert line == plan["line"] and "\n" not in line
    assert line.startswith("afbench power: 408 tasks detect a paired difference of 0.1")
    # nine configurations: Holm's first step over 36 pairs
    afbench(
        "power",
        *("--difference", "0.1", "--baseline-rate", "0.5", "--configurations", "9"),
        *("--output", tmp_path / "nine.json"),
    )
    nine = json.loads((tmp_path / "nine.json").read_text())
    assert (nine["family"], nine["level"]) == (36, 0.05 / 36)
    n = nine["tasks_as_unit"]["tasks"]
    assert exact_power(n, p10, p01, 0.05 / 36) >= 0.8 > exact_power(n - 1, p10, p01, 0.05 / 36)
    # the inverse: the smallest difference 408 tasks detect is at most 0.1
    afbench("power", "--tasks", "408", "--baseline-rate", "0.5", "--output", tmp_path / "d.json")
    found = json.loads((tmp_path / "d.json").read_text())["tasks_as_unit"]["difference"]
    assert 0.099 < found <= 0.1
    capsys.readouterr()
    afbench("power", "--tasks", "5", "--baseline-rate", "0.5")
    assert "no paired difference at all" in capsys.readouterr().out


def test_power_over_two_models_uses_their_observed_discordance(
    demo_chain_rev, demo_chain_records, demo_chain_catalog, capsys
):
    afbench(
        "power",
        *(
            "--difference",
            "0.1",
            "--models",
            "demo-model-c",
            "demo-model-d",
            "--root",
            demo_chain_rev,
        ),
        *("--output", demo_chain_rev.parent / "power-c-d.json"),
    )
    plan = json.loads((demo_chain_rev.parent / "power-c-d.json").read_text())
    c, d = demo_chain_records["demo-model-c"], demo_chain_records["demo-model-d"]
    discordant = sum(c[t]["success"] != d[t]["success"] for t in c)
    models = plan["models"]
    assert models["only_a"] + models["only_b"] == discordant
    assert models["discordance"] == discordant / 341
    # per source, the counts the between-source variation is estimated from
    for source in demo_chain_catalog["sources"]:
        ids = [
            t["task_id"]
            for t in demo_chain_catalog["tasks"]
            if t["source_id"] == source["source_id"]
        ]
        cell = models["sources"][source["source_id"]]
        assert cell["tasks"] == len(ids)
        assert cell["only_a"] == sum(c[t]["success"] and not d[t]["success"] for t in ids)
    sources = plan["sources_as_unit"]
    assert sources["draws"] == 4000 and sources["seed"] == 20261202
    assert sources["power"] >= 0.8 and sources["reachable"] is True
    assert sources["monte_carlo_error"] == pytest.approx(
        math.sqrt(sources["power"] * (1 - sources["power"]) / 4000)
    )
    assert plan["release"]["revision"] == demo_chain_rev.name
    out = capsys.readouterr().out
    assert "with the report's sign-flip test over sources" in out
    assert "planning assumption" in out and "official source-present results" in out
    with pytest.raises(AfbenchError, match="no import of model 'demo-model-z'"):
        afbench(
            "power",
            "--difference",
            "0.1",
            "--models",
            "demo-model-c",
            "demo-model-z",
            "--root",
            demo_chain_rev,
        )


def test_power_refuses_more_tasks_than_the_release_has(demo_chain_rev):
    code, err = prop.cli(
        "power",
        *("--tasks", "100000", "--models", "demo-model-c", "demo-model-d"),
        *("--root", demo_chain_rev),
    )
    assert code == 2 and "Traceback" not in err
    assert "--tasks" in err and "at most 341 (the release's tasks)" in err and "100000" in err
    # the release's own size is still planned
    code, err = prop.cli(
        "power",
        *("--tasks", "341", "--models", "demo-model-c", "demo-model-d"),
        *("--root", demo_chain_rev),
    )
    assert code == 0, err


@pytest.mark.parametrize(
    ("sources", "configurations", "smallest", "decidable"),
    [
        (5, 2, 0.0625, False),
        (6, 2, 0.03125, True),
        (6, 3, 0.09375, False),
        (24, 9, 36 / 2**23, True),
    ],
)
def test_the_plan_says_when_the_sources_allow_no_decision(
    sources, configurations, smallest, decidable
):
    plan = planner.plan(
        difference=0.1,
        tasks=None,
        alpha=0.05,
        power=0.8,
        configurations=configurations,
        models=models_like([14] * sources, 0.25, 0.0, 0.0),
        draws=200,
    )
    flip = plan["sources_as_unit"]
    assert flip["smallest_p_holm"] == pytest.approx(smallest) and flip["decidable"] is decidable
    said = "no decision possible at alpha 0.05" in plan["line"]
    assert said is not decidable
    if decidable:
        assert f"reaches p = {smallest:.4g} at best" in plan["line"]
    else:
        assert f"2/2^{sources}" in plan["line"] and "detects" not in plan["line"].split(";")[0]
        # tasks as the unit still answers
        assert "with the exact McNemar test with tasks as the unit at" in plan["line"]
