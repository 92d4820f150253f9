"""Statistics against values computed by hand (formulas in the comments)."""

from __future__ import annotations

import math

import pytest

from afbench.stats import (
    holm,
    mcnemar_exact,
    paired_difference_from_counts,
    pareto_frontier,
    standard_error,
    wilson_interval,
    z_for,
)

Z2 = 1.959963984540054**2


def test_wilson_edge_cases_and_midpoint():
    assert wilson_interval(0, 10) == (0.0, pytest.approx(Z2 / (10 + Z2)))  # 0.27753
    low, high = wilson_interval(10, 10)
    assert low == pytest.approx(10 / (10 + Z2)) and high == 1.0  # 0.72247
    assert wilson_interval(5, 10) == (
        pytest.approx(0.236593, abs=1e-6),
        pytest.approx(0.763407, abs=1e-6),
    )
    low, high = wilson_interval(281, 341)
    assert low < 281 / 341 < high
    with pytest.raises(ValueError):
        wilson_interval(0, 0)


def test_standard_error_uses_the_sample_variance():
    assert standard_error(5, 10) == pytest.approx(math.sqrt(0.25 / 9))
    assert standard_error(0, 10) == 0.0


def test_exact_mcnemar_by_hand():
    assert mcnemar_exact(1, 9) == 2 * (1 + 10) / 1024
    assert mcnemar_exact(9, 1) == mcnemar_exact(1, 9)
    assert mcnemar_exact(0, 6) == 2 / 64
    assert mcnemar_exact(5, 5) == 1.0
    assert mcnemar_exact(0, 0) == 1.0


def test_large_mcnemar_matches_exact_integer_arithmetic():
    from fractions import Fraction

    for only_a, only_b in [(600, 700), (480, 521), (1500, 1400), (10, 2000)]:
        n = only_a + only_b
        exact = float(
            min(
                Fraction(1),
                Fraction(2 * sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1)), 2**n),
            )
        )
        assert mcnemar_exact(only_a, only_b) == pytest.approx(exact, rel=1e-9, abs=1e-300)


def test_holm_adjustment():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def per_task_difference(a: list[bool], b: list[bool], confidence: float = 0.95) -> dict:
    """The textbook computation over per-task differences, the reference for the fast one."""
    n = len(a)
    diffs = [int(x) - int(y) for x, y in zip(a, b, strict=True)]
    mean = sum(diffs) / n
    se = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1) / n)
    z = z_for(confidence)
    return {"difference": mean, "standard_error": se, "low": mean - z * se, "high": mean + z * se}


def test_paired_difference():
    a = [True] * 6 + [False] * 4
    b = [True] * 3 + [False] * 7
    only_a = sum(x and not y for x, y in zip(a, b, strict=True))
    only_b = sum(y and not x for x, y in zip(a, b, strict=True))
    assert (only_a, only_b) == (3, 0)
    result = paired_difference_from_counts(only_a, only_b, len(a))
    assert result["difference"] == pytest.approx(0.3)
    # diffs: three 1s, seven 0s -> sample variance 0.7*0.3*10/9
    assert result["standard_error"] == pytest.approx(math.sqrt(0.21 * 10 / 9 / 10))
    assert result["low"] < 0.3 < result["high"]


def test_difference_from_counts_equals_the_per_task_computation():
    a = [True] * 6 + [False] * 4 + [True, False]
    b = [True] * 3 + [False] * 7 + [True, True]
    only_a = sum(x and not y for x, y in zip(a, b, strict=True))
    only_b = sum(y and not x for x, y in zip(a, b, strict=True))
    fast = paired_difference_from_counts(only_a, only_b, len(a))
    assert fast == pytest.approx(per_task_difference(a, b))


def test_pareto_frontier():
    points = {
        "cheap": (10, 0.3),
        "best": (50, 0.8),
        "dominated": (60, 0.7),
        "mid": (20, 0.5),
        "tie": (20, 0.5),
    }
    assert pareto_frontier(points) == ["cheap", "mid", "tie", "best"]
