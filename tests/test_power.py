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

import math

import pytest

from afbench.stats import (
    CONNOR_METHOD,
    DIFFERENCE_TOLERANCE,
    GIVEN_DISCORDANCE,
    INDEPENDENT_SUCCESSES,
    mcnemar_detectable_difference,
    mcnemar_exact,
    mcnemar_sample_size,
)


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
