"""Interval estimates and paired tests for binary per-task outcomes. Pure functions."""

from __future__ import annotations

import math
from fractions import Fraction
from statistics import NormalDist


def z_for(confidence: float) -> float:
    return NormalDist().inv_cdf((1 + confidence) / 2)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (well behaved at 0/n and n/n)."""
    if n <= 0:
        raise ValueError("n must be positive")
    z = z_for(confidence)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # at 0/n and n/n the bound is exactly 0 or 1; avoid a rounding residue of 1e-17
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def standard_error(successes: int, n: int) -> float:
    """Standard error of the mean score, with the sample variance (Miller 2024, eq. 2)."""
    if n < 2:
        return float("nan")
    p = successes / n
    return math.sqrt(p * (1 - p) / (n - 1))


EXACT_INTEGER_LIMIT = 1000


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar test: a binomial test of the discordant pairs at 1/2.

    Exact integer arithmetic up to 1,000 discordant pairs; beyond, the same binomial tail summed
    in log space (relative error ~1e-12), since big-integer sums grow quadratically."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    if n <= EXACT_INTEGER_LIMIT:
        tail = sum(math.comb(n, i) for i in range(k + 1))
        return float(min(Fraction(1), Fraction(2 * tail, 2**n)))
    log_norm = math.lgamma(n + 1) - n * math.log(2)
    logs = [log_norm - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in range(k + 1)]
    top = max(logs)
    tail = math.exp(top) * math.fsum(math.exp(x - top) for x in logs)
    return min(1.0, 2 * tail)


def holm(p_values: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def paired_difference_from_counts(
    only_a: int, only_b: int, n: int, confidence: float = 0.95
) -> dict:
    """Mean paired difference in success (a - b) over n tasks with a normal-approximation
    interval using the paired standard error (Miller 2024, section 4), from the discordant
    counts alone: the per-task differences are +1 only_a times, -1 only_b times, else 0."""
    if n < 2:
        raise ValueError("need at least 2 paired tasks")
    mean = (only_a - only_b) / n
    var = (only_a + only_b - n * mean * mean) / (n - 1)
    se = math.sqrt(max(var, 0.0) / n)
    z = z_for(confidence)
    return {"difference": mean, "standard_error": se, "low": mean - z * se, "high": mean + z * se}


def pareto_frontier(points: dict[str, tuple[float, float]]) -> list[str]:
    """Names of the points (cost, success) not dominated by a cheaper-or-equal, at-least-as-
    successful point that is strictly better in one of the two."""
    frontier = []
    for name, (cost, rate) in points.items():
        dominated = any(
            (c <= cost and r >= rate) and (c < cost or r > rate)
            for other, (c, r) in points.items()
            if other != name
        )
        if not dominated:
            frontier.append(name)
    return sorted(frontier, key=lambda n: points[n][0])
