"""Statistics against values computed by hand (formulas in the comments)."""

from __future__ import annotations

import csv
import itertools
import json
import math
import random
from collections import Counter, defaultdict
from fractions import Fraction
from statistics import NormalDist

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import afbench.frames as af
from afbench.core import stats
from afbench.core.stats import (
    ALLOCATION_METHOD,
    CLUSTERED_DIFFERENCE_METHOD,
    CLUSTERED_RATE_METHOD,
    EXACT_INTEGER_LIMIT,
    INFRASTRUCTURE_BOUNDS_METHOD,
    bell_mccaffrey_df,
    clustered_difference,
    clustered_difference_from_counts,
    clustered_rate,
    clustered_rate_from_counts,
    compact_letter_display,
    holm,
    infrastructure_error_bounds,
    leader_tier,
    letter_name,
    mcnemar_exact,
    mcnemar_exact_many,
    paired_difference_from_counts,
    pareto_frontier,
    proportional_allocation,
    seeded_sample,
    sign_flip_p,
    sign_flip_smallest_p,
    standard_error,
    stratified_selection,
    success_bounds,
    t_quantile,
    wilson_interval,
    z_for,
)

from conftest import IMPORTS, examples

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


def test_wilson_with_one_or_two_tasks_and_impossible_counts():
    assert wilson_interval(0, 1) == (0.0, pytest.approx(Z2 / (1 + Z2)))  # 0.79345
    assert wilson_interval(1, 1) == (pytest.approx(1 / (1 + Z2)), 1.0)
    low, high = wilson_interval(1, 2)
    assert 0 < low < 0.5 < high < 1 and low + high == pytest.approx(1.0)
    for successes in (-1, 3):
        with pytest.raises(ValueError, match="between 0 and n"):
            wilson_interval(successes, 2)


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
    for only_a, only_b in [(600, 700), (480, 521), (1500, 1400), (10, 2000)]:
        n = only_a + only_b
        exact = float(
            min(
                Fraction(1),
                Fraction(2 * sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1)), 2**n),
            )
        )
        assert mcnemar_exact(only_a, only_b) == pytest.approx(exact, rel=1e-9, abs=1e-300)


def reference_mcnemar_exact(only_a: int, only_b: int) -> float:
    """`mcnemar_exact` as it was before the per-term loops went (commit 3ffd83b), verbatim: the
    fast one must return the same float, to the last bit. bench/stats_speed.py times it."""
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


def test_fast_mcnemar_is_bit_identical_for_every_count_up_to_400():
    pairs = [(only_a, n - only_a) for n in range(401) for only_a in range(n + 1)]
    # the reference's exact branch (n <= EXACT_INTEGER_LIMIT) for every (n, k), its tail
    # sum(comb(n, i) for i <= k) summed once per n as k grows (the same whole number) ...
    assert EXACT_INTEGER_LIMIT >= 400
    reference: dict[tuple[int, int], float] = {(0, 0): 1.0}
    for n in range(1, 401):
        tail, comb = 0, 1
        for k in range(n // 2 + 1):
            tail += comb  # math.comb(n, k)
            comb = comb * (n - k) // (k + 1)
            reference[n, k] = float(min(Fraction(1), Fraction(2 * tail, 2**n)))
    # ... and that table is the verbatim reference's, to the bit, on every 13th n
    assert all(
        reference[n, min(a, n - a)] == reference_mcnemar_exact(a, n - a)
        for n in range(0, 401, 13)
        for a in range(n + 1)
    )
    fast = mcnemar_exact_many(pairs)
    assert fast == [reference[a + b, min(a, b)] for a, b in pairs]


def test_fast_mcnemar_is_bit_identical_in_log_space_up_to_40000():
    rng = random.Random(20241101)
    pairs = [(0, 1001), (500, 501), (1, 1000), (20_000, 20_000), (19_999, 20_001), (0, 40_000)]
    for _ in range(150):  # anywhere, mostly p == 0.0 ...
        n = rng.randint(EXACT_INTEGER_LIMIT - 50, 40_000)
        pairs.append((only_a := rng.randint(0, n), n - only_a))
    for _ in range(150):  # ... and near n/2, where p is neither 0 nor 1 and the tail is long
        n = rng.randint(EXACT_INTEGER_LIMIT + 1, 40_000)
        only_a = min(n, max(0, n // 2 + round(rng.gauss(0, 2 * math.sqrt(n)))))
        pairs.append((only_a, n - only_a))
    expected = [reference_mcnemar_exact(a, b) for a, b in pairs]
    assert 0 < sum(0.0 < p < 1.0 for p in expected) < len(pairs)
    assert mcnemar_exact_many(pairs) == expected
    assert [mcnemar_exact(a, b) for a, b in pairs] == expected


def test_dropped_terms_are_summed_when_they_could_change_the_rounding():
    """The log-space branch skips terms 50 nats below the largest only when their bound cannot
    move the rounded sum. With a cut a few nats below the largest, the skipped terms matter
    nearly always (without the check, 400 of these 400 p-values differ at 8 nats, 329 at 35):
    the check must catch every one of them and sum the terms after all."""
    rng = random.Random(5)
    counts = []
    for _ in range(200):
        n = rng.randint(EXACT_INTEGER_LIMIT + 1, 20_000)
        only_a = min(n, max(0, n // 2 + round(rng.gauss(0, 2 * math.sqrt(n)))))
        counts.append((n, min(only_a, n - only_a)))
    lgamma = stats._lgamma_table(20_001)
    expected = [reference_mcnemar_exact(k, n - k) for n, k in counts]
    for nats in (0.5, 8.0, 35.0):
        fast = [stats._log_space_p(n, k, lgamma, significant_nats=nats) for n, k in counts]
        assert fast == expected, nats


def test_exact_mcnemar_agrees_with_scipy_but_is_not_scipy_s_floats():
    """scipy.stats.binom.cdf gives the same tail to 1e-10 (away from underflow: it loses digits
    near 1e-290 and returns 0.0 below ~1e-299, where the exact sum does not), but not the same
    floats: the demo's p-values would move in their last digits, which is why stats keeps its
    own sum."""
    from scipy.stats import binom

    differing = 0
    for n in [*range(1, 301), 999, 1000, 1001, 1500, 5000]:
        ks = list(range(n // 2 + 1))
        ours = mcnemar_exact_many([(k, n - k) for k in ks])
        theirs = [min(1.0, 2 * float(c)) for c in binom.cdf(ks, n, 0.5)]
        for k, a, b in zip(ks, ours, theirs, strict=True):
            if b > 1e-250:  # nearer underflow scipy loses digits
                assert a == pytest.approx(b, rel=1e-10, abs=0), (n, k)
            differing += a != b
    assert differing > 0


def test_mcnemar_many_keeps_the_input_order_and_refuses_negative_counts():
    assert mcnemar_exact_many([(0, 6), (5, 5), (6, 0), (0, 0)]) == [2 / 64, 1.0, 2 / 64, 1.0]
    assert mcnemar_exact_many([]) == []
    with pytest.raises(ValueError, match="non-negative"):
        mcnemar_exact(-1, 3)


def test_terms_beyond_the_cutoff_are_exactly_zero_after_exp():
    # the log-space branch drops terms 760 nats below the largest: exp gives 0.0 from -745.14
    assert math.exp(-745.2) == 0.0 and math.exp(-745.1) > 0.0


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


def test_clustered_rate_by_hand():
    # sources A, C = (1, 1, 1) and B, D = (0, 0, 0): mean 1/2, deviation per source ±1.5;
    # SE_CR0 = sqrt(4 · 1.5²) / 12 = 1/4; CR2 divides each square by 1 - 3/12 = 3/4: SE_CR2 =
    # sqrt(4 · 1.5² / 0.75) / 12 = sqrt(12) / 12; equal sources: Bell-McCaffrey df = G - 1 = 3.
    # SE_iid = sqrt(12 · 0.25) / 12, design effect 9/3 = 3 (the cluster size: outcomes are
    # identical within a source)
    sources = [c for c in "ABCD" for _ in range(3)]
    result = clustered_rate([1, 1, 1, 0, 0, 0] * 2, sources)
    assert (result["mean"], result["se_cr0"]) == (0.5, 0.25)
    assert result["se_clustered"] == pytest.approx(math.sqrt(12) / 12, rel=1e-15)
    assert result["df"] == pytest.approx(3.0, rel=1e-12)
    assert result["se_iid"] == pytest.approx(math.sqrt(3) / 12, rel=1e-15)
    assert result["design_effect"] == 3.0
    assert (result["clusters"], result["tasks"], result["confidence"]) == (4, 12, 0.95)
    # Wilson on n_eff = p(1-p) / SE_CR2^2 = 0.25 / (1/12) = 3 tasks, t_{3, 0.975} = 3.182446...
    t = 3.1824463052842638
    assert t_quantile(0.95, result["df"]) == pytest.approx(t, rel=1e-9)
    half = t * math.sqrt(0.25 / 3 + t * t / 36) / (1 + t * t / 3)
    assert result["low"] == pytest.approx(0.5 - half, rel=1e-9)
    assert result["high"] == pytest.approx(0.5 + half, rel=1e-9)
    assert result["method"] == CLUSTERED_RATE_METHOD
    assert result == clustered_rate_from_counts([3, 0, 3, 0], [3, 3, 3, 3])


def test_clustered_interval_is_clipped_and_degenerate_cases_have_no_design_effect():
    # a difference: mean - t·SE_CR2 below -1 is clipped
    low = clustered_difference_from_counts([0, 1], [5, 0], [5, 2])
    assert low["mean"] - t_quantile(0.95, low["df"]) * low["se_clustered"] < -1
    assert low["low"] == -1.0 and low["method"] == CLUSTERED_DIFFERENCE_METHOD
    # a rate's Wilson-type interval stays inside [0, 1] by construction and is asymmetric
    high = clustered_rate_from_counts([9, 10, 8], [10, 10, 10], confidence=0.99)
    assert 0 < high["low"] < high["mean"] < high["high"] < 1
    assert high["high"] - high["mean"] < high["mean"] - high["low"]
    for same in (clustered_rate([1, 1, 1], "abc"), clustered_rate_from_counts([0, 0], [2, 3])):
        assert same["se_clustered"] == same["se_iid"] == 0.0 and same["design_effect"] is None
    # no variance at n/n or 0/n: the Wilson interval on all n tasks with t on df, [n/(n+t²), 1]
    # and [0, t²/(n+t²)]
    t2 = t_quantile(0.95, 2) ** 2
    every = clustered_rate([1, 1, 1], "abc")
    assert (every["low"], every["high"]) == (pytest.approx(3 / (3 + t2), rel=1e-12), 1.0)
    t2 = t_quantile(0.95, 1) ** 2
    none = clustered_rate_from_counts([0, 0], [2, 3])
    assert (none["low"], none["high"]) == (0.0, pytest.approx(t2 / (5 + t2), rel=1e-12))
    empty_source = clustered_rate_from_counts([2, 0, 1], [4, 0, 3])
    assert empty_source["clusters"] == 2 and empty_source["tasks"] == 7
    # one source: no cluster-robust variance at all, and no claim beyond the whole range
    single = clustered_rate_from_counts([2], [5])
    assert (single["se_clustered"], single["df"], single["low"], single["high"]) == (
        None,
        None,
        0.0,
        1.0,
    )


def anova_correlation(values: list[float], sources: list[str]) -> float:
    """The ANOVA intra-cluster correlation by its textbook mean squares (clipped to [0, .999])."""
    groups = {c: [v for v, s in zip(values, sources, strict=True) if s == c] for c in set(sources)}
    n, g = len(values), len(groups)
    if g < 2 or n <= g:
        return 0.0
    grand = sum(values) / n
    msb = sum(len(x) * (sum(x) / len(x) - grand) ** 2 for x in groups.values()) / (g - 1)
    msw = sum(sum((v - sum(x) / len(x)) ** 2 for v in x) for x in groups.values()) / (n - g)
    n0 = (n - sum(len(x) ** 2 for x in groups.values()) / n) / (g - 1)
    if msb + (n0 - 1) * msw <= 0:
        return 0.0
    return min(max((msb - msw) / (msb + (n0 - 1) * msw), 0.0), 0.999)


def cr2_by_matrices(values: list[float], sources: list[str]) -> tuple[float, float]:
    """CR2 and its Bell-McCaffrey df for the mean of `values`, by the general matrix
    formulas (Bell & McCaffrey 2002; Pustejovsky & Tipton 2018): X a column of ones, H =
    X(X'X)^-1 X', A_c = (I - H_cc)^(-1/2) by eigendecomposition, V = sum_c (X_c' A_c e_c)^2 /
    (X'X)^2; with G the n x G matrix of columns (I - H) A_c X_c / (X'X) (zero outside c) and
    the working covariance Ω = (1 - ρ)I + ρ·(same source) at the ANOVA ρ (Imbens & Kolesar
    2016), df = tr(G'ΩG)^2 / tr((G'ΩG)^2). Independent of afbench's closed form."""
    np = pytest.importorskip("numpy")
    rho = anova_correlation(values, sources)
    y = np.array(values, dtype=float)
    n = len(y)
    x = np.ones((n, 1))
    bread = np.linalg.inv(x.T @ x)
    hat = x @ bread @ x.T
    residual = y - hat @ y
    meat = 0.0
    columns = []
    for c in sorted(set(sources)):
        rows = np.array([s == c for s in sources])
        block = np.eye(rows.sum()) - hat[np.ix_(rows, rows)]
        eigenvalues, vectors = np.linalg.eigh(block)
        adjust = vectors @ np.diag(eigenvalues**-0.5) @ vectors.T
        score = (x[rows].T @ adjust @ residual[rows]).item()
        meat += score * score
        column = np.zeros(n)
        column[rows] = (adjust @ x[rows] @ bread).ravel()
        columns.append((np.eye(n) - hat) @ column)
    g = np.array(columns).T
    same = np.array([[a == b for b in sources] for a in sources], dtype=float)
    omega = (1 - rho) * np.eye(n) + rho * same
    m = g.T @ omega @ g
    return math.sqrt((bread @ bread).item() * meat), np.trace(m) ** 2 / np.trace(m @ m)


@given(
    st.lists(
        st.tuples(st.integers(0, 1), st.integers(0, 1), st.sampled_from("ABCDE")), min_size=3
    ).filter(lambda tasks: len({s for _, _, s in tasks}) >= 2)
)
def test_cr2_and_its_df_match_the_matrix_formulas(tasks):
    a, b, sources = (list(column) for column in zip(*tasks, strict=True))
    differences = [x - y for x, y in zip(a, b, strict=True)]
    for values, result in [
        (a, clustered_rate(a, sources)),
        (differences, clustered_difference(differences, sources)),
    ]:
        se, df = cr2_by_matrices(values, sources)
        assert result["se_clustered"] == pytest.approx(se, rel=1e-9, abs=1e-12)
        assert result["df"] == pytest.approx(df, rel=1e-9)


def exact_t_quantile(confidence: float, df: float):
    """The t with P(|T| > t) = 1 - confidence, solved in 40-digit arithmetic (mpmath): the
    regularised incomplete beta I_{df/(df+t²)}(df/2, 1/2) is that tail."""
    import mpmath
    from scipy.special import stdtrit

    with mpmath.workdps(40):
        alpha = 1 - mpmath.mpf(confidence)
        half_df = mpmath.mpf(df) / 2

        def tail(t):
            return mpmath.betainc(half_df, 0.5, 0, df / (df + t * t), regularized=True) - alpha

        return mpmath.findroot(tail, float(stdtrit(df, (1 + confidence) / 2)))


T_DFS = [0.2, 0.5, 1, 2, 2.7, 3, 7.3, 16.5, 23, 33.1, 999.5, 9999, 1e4 + 1, 3e6]


@pytest.mark.parametrize("df", T_DFS)
def test_the_t_quantile_is_exact_to_1e_12_and_agrees_with_scipy(df):
    from scipy.special import stdtrit

    for confidence in (0.01, 0.5, 0.9, 0.95, 0.99, 0.999999):
        got = t_quantile(confidence, df)
        exact = exact_t_quantile(confidence, df)
        assert abs(got - exact) <= 1e-12 * exact, (df, confidence, got, exact)
        # scipy takes (1 + confidence)/2, rounded: it is off by up to 2e-10 in the far tail
        assert got == pytest.approx(float(stdtrit(df, (1 + confidence) / 2)), rel=1e-9)


@settings(max_examples=examples(300))
@given(
    df=st.floats(0.3, 1e8, allow_nan=False),
    confidence=st.floats(0.001, 0.9999, allow_nan=False),
)
def test_the_t_quantile_agrees_with_scipy_everywhere(df, confidence):
    from scipy.special import stdtrit

    got = t_quantile(confidence, df)
    assert got == pytest.approx(float(stdtrit(df, (1 + confidence) / 2)), rel=1e-9)


def test_the_t_quantile_refuses_what_has_none():
    for confidence, df in ((0, 3), (1, 3), (0.95, 0), (0.95, -1), (0.95, float("nan"))):
        with pytest.raises(ValueError):
            t_quantile(confidence, df)
    assert t_quantile(0.95, float("inf")) == pytest.approx(NormalDist().inv_cdf(0.975), rel=1e-15)


def test_bell_mccaffrey_df_by_hand():
    # equal sizes: G - 1; two sources of 1 and 3 tasks: shares 1/4, 3/4, d = (1/3, 3),
    # v² = (1/12, 9/4): tr M = 10/3 - 7/3 = 1, tr M² = 1/9 + 9 - 2(1/36 + 27/4) + 49/9 = 1: df 1
    assert bell_mccaffrey_df([7] * 24) == pytest.approx(23, rel=1e-12)
    assert bell_mccaffrey_df([1, 3]) == pytest.approx(1, rel=1e-12)
    assert bell_mccaffrey_df([5, 0]) is None and bell_mccaffrey_df([]) is None
    # unequal sizes have fewer degrees of freedom than G - 1, and cohesive sources fewer still
    assert bell_mccaffrey_df([40, 30, 20, 5, 3, 2]) < 5
    assert bell_mccaffrey_df([40, 30, 20, 5, 3, 2], 0.3) < bell_mccaffrey_df([40, 30, 20, 5, 3, 2])
    # equal sizes: the working correlation changes nothing (G'1_b = 0 in sum)
    assert bell_mccaffrey_df([7] * 24, 0.3) == pytest.approx(23, rel=1e-9)
    with pytest.raises(ValueError, match="working correlation"):
        bell_mccaffrey_df([1, 2], 1.0)


def sign_flip_by_enumeration(sums: list[int]) -> Fraction:
    observed = abs(sum(sums))
    extreme = sum(
        abs(sum(e * t for e, t in zip(signs, sums, strict=True))) >= observed
        for signs in itertools.product((1, -1), repeat=len(sums))
    )
    return Fraction(extreme, 2 ** len(sums))


@given(st.lists(st.integers(-9, 9), min_size=1, max_size=11))
def test_sign_flip_p_counts_every_pattern(sums):
    assert sign_flip_p(sums) == float(sign_flip_by_enumeration(sums))


def test_sign_flip_p_by_hand():
    # (3, 1): patterns ±3 ±1 give 4, 2, -2, -4; |.| >= 4 twice of 4
    assert sign_flip_p([3, 1]) == 0.5
    assert sign_flip_p([0, 0, 0]) == 1.0 and sign_flip_p([2, -2]) == 1.0
    # 24 sources all one way: only the observed pattern and its mirror image
    assert sign_flip_p([1] * 24) == 2 / 2**24
    # sources without a discordant task double both counts and change nothing
    assert sign_flip_p([3, 1, 0, 0]) == 0.5
    with pytest.raises(ValueError, match="integers"):
        sign_flip_p([1.5])


@given(st.integers(1, 7))
def test_the_smallest_sign_flip_p_is_the_smallest_over_every_pattern_of_sums(sources):
    smallest = min(
        sign_flip_p(list(sums)) for sums in itertools.product((-1, 0, 1, 2), repeat=sources)
    )
    assert sign_flip_smallest_p(sources) == smallest == 2 / 2**sources


def test_the_smallest_sign_flip_p_by_hand():
    assert [sign_flip_smallest_p(g) for g in (3, 5, 6)] == [0.25, 0.0625, 0.03125]
    # Holm's first step over 3 pairs of 3 models
    assert sign_flip_smallest_p(6, comparisons=3) == 0.09375
    assert sign_flip_smallest_p(1) == 1.0 and sign_flip_smallest_p(0) == 1.0
    assert sign_flip_smallest_p(2, comparisons=10) == 1.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: clustered_rate([1, 2], "ab"), "0 or 1"),
        (lambda: clustered_rate([1, 0], "a"), "one cluster id per value"),
        (lambda: clustered_rate([], []), "at least one task"),
        (lambda: clustered_rate_from_counts([3], [2]), "between 0 and"),
        (lambda: clustered_rate_from_counts([1, 1], [2]), "one size per source"),
        (lambda: clustered_rate_from_counts([1], [2], confidence=1.0), "confidence"),
        (lambda: clustered_difference([2], "a"), "-1, 0 or 1"),
        (lambda: clustered_difference_from_counts([2], [1], [2]), "at most the task count"),
        (lambda: clustered_difference_from_counts([1], [], [2]), "one count of each kind"),
    ],
)
def test_clustered_refusals(call, message):
    with pytest.raises(ValueError, match=message):
        call()


clustered_tasks = st.lists(
    st.tuples(st.integers(0, 1), st.integers(0, 1), st.sampled_from("ABCDE")), min_size=1
)


@given(clustered_tasks)
def test_clustered_standard_errors_match_the_textbook_sums(tasks):
    a, b, sources = (list(column) for column in zip(*tasks, strict=True))
    n = len(tasks)
    for values, result in [
        (a, clustered_rate(a, sources)),
        (
            [x - y for x, y in zip(a, b, strict=True)],
            clustered_difference([x - y for x, y in zip(a, b, strict=True)], sources),
        ),
    ]:
        mean = math.fsum(values) / n
        per_source = {
            c: math.fsum(v - mean for v, s in zip(values, sources, strict=True) if s == c)
            for c in set(sources)
        }
        between = math.fsum(d * d for d in per_source.values())
        assert result["mean"] == mean
        assert result["se_cr0"] == pytest.approx(math.sqrt(between) / n, abs=1e-12)
        within = math.fsum((v - mean) ** 2 for v in values)
        assert result["se_iid"] == pytest.approx(math.sqrt(within) / n, abs=1e-12)
        assert result["clusters"] == len(per_source)


@given(clustered_tasks)
def test_per_source_counts_give_the_per_task_result(tasks):
    a, b, sources = (list(column) for column in zip(*tasks, strict=True))
    order = sorted(set(sources))
    passes = [sum(x for x, s in zip(a, sources, strict=True) if s == c) for c in order]
    sizes = [sources.count(c) for c in order]
    # the per-task form sums clusters in order of appearance: the result must not depend on it
    assert clustered_rate(a, sources) == clustered_rate_from_counts(passes, sizes)
    only_a = [sum(x > y for x, y, s in zip(a, b, sources, strict=True) if s == c) for c in order]
    only_b = [sum(y > x for x, y, s in zip(a, b, sources, strict=True) if s == c) for c in order]
    differences = [x - y for x, y in zip(a, b, strict=True)]
    assert clustered_difference(differences, sources) == clustered_difference_from_counts(
        only_a, only_b, sizes
    )


@given(st.lists(st.integers(0, 1), min_size=2))
def test_design_effect_is_one_with_singleton_clusters(values):
    result = clustered_rate(values, list(range(len(values))))
    assert result["se_cr0"] == result["se_iid"]
    assert result["design_effect"] == (None if len(set(values)) == 1 else 1.0)
    # the plug-in variance (1/n): sqrt((n-1)/n) times the sample-variance standard error
    n = len(values)
    expected = standard_error(sum(values), n) * math.sqrt((n - 1) / n)
    assert result["se_iid"] == pytest.approx(expected, rel=1e-12, abs=1e-300)


def test_clustered_difference_without_clusters_is_the_paired_difference():
    only_a, only_b, n = 30, 12, 100
    singletons = clustered_difference_from_counts(
        [1] * only_a + [0] * (n - only_a),
        [0] * (only_a) + [1] * only_b + [0] * (n - only_a - only_b),
        [1] * n,
    )
    paired = paired_difference_from_counts(only_a, only_b, n)
    assert singletons["mean"] == paired["difference"]
    assert singletons["se_iid"] == pytest.approx(
        paired["standard_error"] * math.sqrt((n - 1) / n), rel=1e-14
    )
    assert singletons["design_effect"] == 1.0


def differing(*pairs: str):
    significant = {frozenset(pair) for pair in pairs}
    return lambda a, b: frozenset((a, b)) in significant


def test_letter_display_by_hand():
    assert compact_letter_display("ABC", differing()) == {"A": ["a"], "B": ["a"], "C": ["a"]}
    assert compact_letter_display("ABC", differing("AB", "AC", "BC")) == {
        "A": ["a"],
        "B": ["b"],
        "C": ["c"],
    }
    # a chain: neighbours do not differ, models two apart do
    assert compact_letter_display("ABCD", differing("AC", "AD", "BD")) == {
        "A": ["a"],
        "B": ["a", "b"],
        "C": ["b", "c"],
        "D": ["c"],
    }
    assert compact_letter_display(["solo"], {}) == {"solo": ["a"]}
    assert compact_letter_display([], {}) == {}


def test_letter_display_sweeps_a_letter_insert_absorb_leaves():
    # insert-absorb alone ends with 6 letters here; sweeping B out of {B, D, F} and absorbing
    # leaves 5, and every one of the 11 non-significant pairs still shares a letter
    assert compact_letter_display("ABCDEF", differing("AC", "AE", "BF", "CD")) == {
        "A": ["a", "b"],
        "B": ["a", "c", "d"],
        "C": ["c", "e"],
        "D": ["b", "d"],
        "E": ["d", "e"],
        "F": ["b", "e"],
    }


def test_letter_display_takes_a_mapping_in_either_order_and_names_letters_past_z():
    mapping = {("B", "A"): True, ("A", "C"): False, ("C", "B"): False}
    assert compact_letter_display("ABC", mapping) == {"A": ["a"], "B": ["b"], "C": ["a", "b"]}
    with pytest.raises(ValueError, match="no comparison of 'A' with 'C'"):
        compact_letter_display("ABC", {("A", "B"): True})
    with pytest.raises(ValueError, match="distinct"):
        compact_letter_display("ABA", differing())
    names = [f"m{i}" for i in range(28)]
    letters = compact_letter_display(names, lambda a, b: True)
    assert [letters[name] for name in names[25:]] == [["z"], ["aa"], ["ab"]]
    assert [letter_name(i) for i in (0, 25, 26, 51, 52, 701, 702)] == [
        "a",
        "z",
        "aa",
        "az",
        "ba",
        "zz",
        "aaa",
    ]


@given(
    st.integers(0, 9).flatmap(
        lambda m: st.tuples(
            st.just(m),
            st.sets(
                st.sampled_from(list(itertools.combinations(range(m), 2)))
                if m > 1
                else st.nothing()
            ),
        )
    )
)
def test_models_share_a_letter_exactly_when_they_do_not_differ(case):
    m, significant = case
    models = [f"model-{i}" for i in range(m)]
    index = {name: i for i, name in enumerate(models)}
    asked = []

    def differ(a: str, b: str) -> bool:
        asked.append((index[a], index[b]))
        return (index[a], index[b]) in significant

    letters = compact_letter_display(models, differ)
    assert sorted(asked) == list(itertools.combinations(range(m), 2))
    for (i, a), (j, b) in itertools.combinations(enumerate(models), 2):
        assert bool(set(letters[a]) & set(letters[b])) == ((i, j) not in significant)
    assert all(letters[name] for name in models)

    def alphabetical(names):
        return sorted(names, key=lambda x: (len(x), x))

    used = alphabetical({x for v in letters.values() for x in v})
    assert used == [letter_name(i) for i in range(len(used))]  # a, b, ... with no gap
    assert all(v == alphabetical(v) for v in letters.values())
    if models:
        assert letters[models[0]][0] == "a"
    assert compact_letter_display(models, differ) == letters


def test_leader_tier():
    models = ["best", "close", "far", "tied"]
    p = {"close": 0.2, "far": 0.001, "tied": 0.05}
    assert leader_tier(models, p) == ["best", "close", "tied"]  # p >= alpha stays
    assert leader_tier(models, p, alpha=0.3) == ["best"]
    assert leader_tier(["alone"], {}) == ["alone"]
    with pytest.raises(ValueError, match="far"):
        leader_tier(models, {"close": 0.2, "tied": 0.5})
    with pytest.raises(ValueError, match="alpha"):
        leader_tier(models, p, alpha=1.0)
    with pytest.raises(ValueError, match="at least one model"):
        leader_tier([], {})


def bitset(outcomes: str, mark: str) -> int:
    """Bit i set where outcomes[i] == mark (task i first, as in success_bits)."""
    return sum(1 << i for i, x in enumerate(outcomes) if x == mark)


def test_infrastructure_errors_can_move_a_pair_across_alpha():
    # s solved, e infrastructure error, . failed; 15 tasks
    a = "sssssssssseesss"  # 13 passes, 2 errors
    b = "..........e.sss"  #  3 passes, 1 error
    result = infrastructure_error_bounds(
        bitset(a, "s"), bitset(a, "e"), bitset(b, "s"), bitset(b, "e"), 15
    )
    # reported 10 : 0; for a, 12 : 0; for b, 10 : 1 (task 10, an error of both, goes to b)
    assert result["reported"] == {"only_a": 10, "only_b": 0, "p_exact": 2 / 2**10}
    assert result["favour_a"] == {"only_a": 12, "only_b": 0, "p_exact": 2 / 2**12}
    assert result["favour_b"] == {"only_a": 10, "only_b": 1, "p_exact": 2 * 12 / 2**11}
    assert result["a"] == {
        "passes": 13,
        "errors": 2,
        "tasks": 15,
        "passes_high": 15,
        "rate": 13 / 15,
        "rate_high": 1.0,
    }
    assert result["b"]["passes_high"] == 4 and result["b"]["rate_high"] == 4 / 15
    assert result["method"] == INFRASTRUCTURE_BOUNDS_METHOD
    # 10 : 3 is not significant at 0.05 (p = 756/8192); with a's two errors solved it is
    close = infrastructure_error_bounds(
        bitset("ssssssssss...ee", "s"),
        bitset("ssssssssss...ee", "e"),
        bitset("..........sss..", "s"),
        0,
        15,
    )
    assert close["reported"]["p_exact"] == 2 * (1 + 13 + 78 + 286) / 2**13 > 0.05
    assert close["favour_a"]["p_exact"] == 2 * (1 + 15 + 105 + 455) / 2**15 < 0.05
    assert close["favour_b"] == close["reported"]


outcome_strings = st.integers(1, 40).flatmap(
    lambda n: st.tuples(*[st.text("se.", min_size=n, max_size=n)] * 2)
)


@given(outcome_strings)
def test_infrastructure_bounds_against_resolving_each_task(case):
    a, b = case
    result = infrastructure_error_bounds(
        bitset(a, "s"), bitset(a, "e"), bitset(b, "s"), bitset(b, "e"), len(a)
    )
    for key, solved_a, solved_b in [
        ("reported", "s", "s"),
        ("favour_a", "se", "s"),
        ("favour_b", "s", "se"),
    ]:
        only_a = sum(x in solved_a and y not in solved_b for x, y in zip(a, b, strict=True))
        only_b = sum(y in solved_b and x not in solved_a for x, y in zip(a, b, strict=True))
        assert result[key] == {
            "only_a": only_a,
            "only_b": only_b,
            "p_exact": mcnemar_exact(only_a, only_b),
        }
    assert result["a"] == success_bounds(a.count("s"), a.count("e"), len(a))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: infrastructure_error_bounds(0b11, 0b10, 0, 0, 2), "both solved and with an"),
        (lambda: infrastructure_error_bounds(0b100, 0, 0, 0, 2), "a's success bits"),
        (lambda: infrastructure_error_bounds(0, 0, 0, -1, 2), "b's error bits"),
        (lambda: success_bounds(2, 1, 2), "at most tasks"),
        (lambda: success_bounds(0, 0, 0), "tasks must be positive"),
    ],
)
def test_infrastructure_bounds_refusals(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_allocation_by_largest_remainder():
    # quotas 2.5, 1.5, 1.0: floors 2, 1, 1; one seat left, remainders tie at 1/2 -> larger A
    assert proportional_allocation([("A", 5), ("B", 3), ("C", 2)], 5) == {"A": 3, "B": 1, "C": 1}
    # same remainder, same size: the earlier source
    assert proportional_allocation([("A", 3), ("B", 3)], 1) == {"A": 1, "B": 0}
    assert proportional_allocation([("B", 3), ("A", 3)], 1) == {"B": 1, "A": 0}
    # quotas 10·(7, 2, 1)/10 exactly: nothing left over; and all tasks
    assert proportional_allocation([("x", 7), ("y", 2), ("z", 1)], 10) == {"x": 7, "y": 2, "z": 1}
    # quotas 4·(5, 3, 2)/10 = 2.0, 1.2, 0.8: floors 2, 1, 0, the seat left to the smallest z
    assert proportional_allocation([("x", 5), ("y", 3), ("z", 2)], 4) == {"x": 2, "y": 1, "z": 1}
    # quotas 2.4, 1.2, 0.4: x and z tie at 0.4, the larger x wins
    assert proportional_allocation([("x", 6), ("y", 3), ("z", 1)], 4) == {"x": 3, "y": 1, "z": 0}
    assert proportional_allocation([("empty", 0), ("full", 4)], 2) == {"empty": 0, "full": 2}


@given(
    st.lists(st.integers(0, 60), min_size=1, max_size=24).filter(any),
    st.floats(0, 1),
)
def test_allocations_are_floor_or_ceiling_of_the_quota_and_sum_to_n(sizes, fraction):
    available = sum(sizes)
    total = max(1, round(fraction * available))
    sources = [(f"s{i}", size) for i, size in enumerate(sizes)]
    allocation = proportional_allocation(sources, total)
    assert list(allocation) == [s for s, _ in sources]
    assert sum(allocation.values()) == total
    for source, size in sources:
        quota = Fraction(total * size, available)
        assert allocation[source] in (math.floor(quota), math.ceil(quota))
        assert allocation[source] <= size
    assert proportional_allocation(sources, total) == allocation


@pytest.mark.parametrize(
    ("sources", "total", "message"),
    [
        ([("A", 3)], 0, "between 1 and 3, not 0"),
        ([("A", 3)], 4, "between 1 and 3, not 4"),
        ([("A", 3), ("A", 1)], 2, "distinct"),
        ([("A", -1), ("B", 3)], 1, "non-negative"),
    ],
)
def test_allocation_refusals(sources, total, message):
    with pytest.raises(ValueError, match=message):
        proportional_allocation(sources, total)


def test_seeded_sample_ranks_by_sha256_and_keeps_the_given_order():
    tasks = [f"t{i}" for i in range(1, 9)]
    # by coreutils: printf 'afbench:t5' | sha256sum -> 02868c8e..., t4 0452c361..., t1 0db9977c...
    assert seeded_sample(tasks, 3, "afbench") == ["t1", "t4", "t5"]
    # printf '2024:t1' | sha256sum -> 528d1518..., t6 535313c9..., t2 6c642e0f...
    assert seeded_sample(tasks, 3, 2024) == ["t1", "t2", "t6"]
    assert seeded_sample(tasks, 0, 1) == [] and seeded_sample(tasks, 8, 1) == tasks
    assert seeded_sample(tasks[::-1], 3, "afbench") == ["t5", "t4", "t1"]
    with pytest.raises(ValueError, match="cannot pick 9 of 8"):
        seeded_sample(tasks, 9, 1)
    with pytest.raises(ValueError, match="distinct"):
        seeded_sample(["t1", "t1"], 1, 1)


def test_stratified_selection():
    # MANIFEST order interleaves sources; SOURCES order is B, A, C (C has no task)
    tasks = [(f"t{i}", "A" if i % 3 else "B") for i in range(1, 13)]  # A: 8 tasks, B: 4
    result = stratified_selection(tasks, ["B", "A", "C"], 6, seed="afbench")
    assert result["allocation"] == {"B": 2, "A": 4, "C": 0}
    chosen = result["task_ids"]
    assert chosen == [t for t, _ in tasks if t in set(chosen)]  # MANIFEST order
    source = dict(tasks)
    assert sum(source[t] == "A" for t in chosen) == 4 and len(chosen) == 6
    a_tasks = [t for t, s in tasks if s == "A"]
    assert [t for t in chosen if source[t] == "A"] == seeded_sample(a_tasks, 4, "afbench")
    assert result["seed"] == "afbench" and result["method"].startswith(ALLOCATION_METHOD)
    assert stratified_selection(tasks, ["B", "A", "C"], 6, seed="afbench") == result
    assert stratified_selection(tasks, ["B", "A", "C"], 6, seed="other")["task_ids"] != chosen
    with pytest.raises(ValueError, match="unknown sources: A"):
        stratified_selection(tasks, ["B"], 2, seed=1)
    with pytest.raises(ValueError, match="task ids must be distinct"):
        stratified_selection([("t1", "A"), ("t1", "B")], ["A", "B"], 1, seed=1)


ALPHA = 0.05


Z = NormalDist().inv_cdf(0.975)


def by_formula(values: list[int], sources: list[str], rate: bool) -> dict:
    """By hand: Miller (2024) SE_CR0 = sqrt(sum_c (sum_{i in c} (x_i - mean))^2) / n, SE_iid
    the same with each task its own cluster, design effect (SE_CR0 / SE_iid)^2; CR2 and its
    Bell-McCaffrey df by the general matrix formulas (test_stats.cr2_by_matrices); the t
    quantile from scipy.stats; a rate's interval the Wilson interval on n_eff = p(1-p)/SE^2
    (at most n) with t for z, a difference's mean ± t·SE."""
    from scipy.stats import t as student
    from test_stats import cr2_by_matrices

    n = len(values)
    mean = sum(values) / n
    per_source: dict[str, float] = defaultdict(float)
    for x, source in zip(values, sources, strict=True):
        per_source[source] += x - mean
    se_cr0 = math.sqrt(sum(s * s for s in per_source.values())) / n
    se_iid = math.sqrt(sum((x - mean) ** 2 for x in values)) / n
    se, df = cr2_by_matrices(values, sources)
    t = student.ppf(0.975, df)
    if rate:
        n_eff = min(n, mean * (1 - mean) / se**2)
        centre = (mean + t * t / (2 * n_eff)) / (1 + t * t / n_eff)
        half = t * math.sqrt(mean * (1 - mean) / n_eff + t * t / (4 * n_eff**2))
        low, high = centre - half / (1 + t * t / n_eff), centre + half / (1 + t * t / n_eff)
    else:
        low, high = mean - t * se, mean + t * se
    return {
        "mean": mean,
        "se_clustered": se,
        "df": df,
        "se_cr0": se_cr0,
        "se_iid": se_iid,
        "design_effect": (se_cr0 / se_iid) ** 2,
        "clusters": len(per_source),
        "low": low,
        "high": high,
    }


def close(found: dict, expected: dict) -> None:
    for key, value in expected.items():
        assert found[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


def test_each_models_clustered_interval_is_the_formula_over_its_records(
    demo_chain_analysis, demo_chain_records, demo_chain_catalog
):
    tasks = [t["task_id"] for t in demo_chain_catalog["tasks"]]
    sources = [t["source_id"] for t in demo_chain_catalog["tasks"]]
    assert demo_chain_analysis["confidence"] == 0.95
    assert "Bell & McCaffrey 2002" in demo_chain_analysis["methods"]["success_rate_clustered"]
    assert "Wilson" in demo_chain_analysis["methods"]["success_rate_independent"]
    assert "clustered" in demo_chain_analysis["methods"]["which_to_cite"]
    effects = {}
    for row in demo_chain_analysis["leaderboard"]:
        x = [int(demo_chain_records[row["model"]][t]["success"]) for t in tasks]
        clustered = row["clustered"]
        close(clustered, by_formula(x, sources, rate=True))
        assert clustered["clusters"] == 24 and clustered["tasks"] == 341
        assert clustered["method"].startswith("Wilson score interval on the effective number")
        assert row["passes"] == sum(x)
        effects[row["model"]] = clustered["design_effect"]
    # the demo's cohesive sources: at least one model's tasks are far from independent
    assert max(effects.values()) >= 1.5
    conventions = demo_chain_analysis["methods"]["conventions"]
    # the conventions' df is that of independent tasks; an interval's is lower where its
    # sources cohere (the working correlation it estimates)
    assert conventions["sources"] == 24
    assert all(
        r["clustered"]["df"] <= conventions["df"] + 1e-9 for r in demo_chain_analysis["leaderboard"]
    )


def sign_flip_by_convolution(sums: list[int]) -> Fraction:
    """The sign-flip p by a table of how many sign patterns give each total (a convolution
    over sources), independent of afbench's generating-function integer."""
    ways = Counter({0: 1})
    for t in sums:
        step: Counter = Counter()
        for total, count in ways.items():
            step[total + t] += count
            step[total - t] += count
        ways = step
    observed = abs(sum(sums))
    return Fraction(sum(c for total, c in ways.items() if abs(total) >= observed), 2 ** len(sums))


def holm_by_hand(p: list[float]) -> list[float]:
    order = sorted(range(len(p)), key=p.__getitem__)
    adjusted, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        adjusted[i] = running
    return adjusted


def test_each_pairs_clustered_difference_and_sign_flip_p_over_its_records(
    demo_chain_analysis, demo_chain_records, demo_chain_catalog
):
    tasks = [t["task_id"] for t in demo_chain_catalog["tasks"]]
    sources = [t["source_id"] for t in demo_chain_catalog["tasks"]]
    assert "paired difference a - b" in demo_chain_analysis["paired"]["clustered_difference"]
    pairs = demo_chain_analysis["paired"]["pairs"]
    assert len(pairs) == 36
    p_flip = []
    for pair in pairs:
        a, b = demo_chain_records[pair["a"]], demo_chain_records[pair["b"]]
        d = [int(a[t]["success"]) - int(b[t]["success"]) for t in tasks]
        close(pair["clustered"], by_formula(d, sources, rate=False))
        assert pair["clustered"]["mean"] == pytest.approx(pair["difference_difference"])
        assert (pair["only_a"], pair["only_b"]) == (d.count(1), d.count(-1))
        per_source: Counter = Counter()
        for x, source in zip(d, sources, strict=True):
            per_source[source] += x
        p = sign_flip_by_convolution(
            [per_source[s["source_id"]] for s in demo_chain_catalog["sources"]]
        )
        assert pair["p_sign_flip"] == float(p)
        p_flip.append(float(p))
    for pair, adjusted in zip(pairs, holm_by_hand(p_flip), strict=True):
        assert pair["p_sign_flip_holm"] == pytest.approx(adjusted, rel=1e-12)
        assert pair["significant"] == (adjusted < ALPHA)
        assert pair["significant_tasks_as_unit"] == (pair["p_holm"] < ALPHA)


def test_per_source_wilson_intervals_by_hand(
    demo_chain_analysis, demo_chain_records, demo_chain_catalog
):
    """Wilson: (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    assert "Wilson" in demo_chain_analysis["methods"]["per_source"]
    of_source = defaultdict(list)
    for task in demo_chain_catalog["tasks"]:
        of_source[task["source_id"]].append(task["task_id"])
    assert [s["source_id"] for s in demo_chain_analysis["per_source"]] == list(of_source)
    for row in demo_chain_analysis["per_source"]:
        n = len(of_source[row["source_id"]])
        for model, interval in row["wilson"].items():
            k = sum(demo_chain_records[model][t]["success"] for t in of_source[row["source_id"]])
            assert row["passes"][model] == k
            p = k / n
            centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
            half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
            assert interval["low"] == pytest.approx(max(0.0, centre - half), abs=1e-12)
            assert interval["high"] == pytest.approx(min(1.0, centre + half), abs=1e-12)


def test_tiers_agree_with_the_holm_p_values_for_every_pair(demo_chain_analysis, demo_chain_rev):
    """★, letters and * come from the source-aware test; the task-level ones stand beside."""
    board = demo_chain_analysis["leaderboard"]
    leader = board[0]["model"]
    for suffix, key in (("", "p_sign_flip_holm"), ("_tasks_as_unit", "p_holm")):
        letters = {r["model"]: set(r["letters" + suffix]) for r in board}
        tier = {r["model"]: r["leader_tier" + suffix] for r in board}
        holm = {(p["a"], p["b"]): p[key] for p in demo_chain_analysis["paired"]["pairs"]}
        assert len(holm) == 36
        for (a, b), p in holm.items():
            assert bool(letters[a] & letters[b]) == (p >= ALPHA), (a, b, p)
            if a == leader:
                assert tier[b] == (p >= ALPHA)
        assert tier[leader] is True
    # the two tests disagree somewhere on the demo, so the choice shows
    assert any(
        p["significant"] != p["significant_tasks_as_unit"]
        for p in demo_chain_analysis["paired"]["pairs"]
    )
    # the comparison's summary, its CSV and the frame carry the same tiers
    fields = ("leader_tier", "letters", "leader_tier_tasks_as_unit", "letters_tasks_as_unit")
    summary = json.loads((demo_chain_rev / IMPORTS / "summary.json").read_text())
    assert {r["model"]: [r[f] for f in fields] for r in summary["leaderboard"]} == {
        r["model"]: [r[f] for f in fields] for r in board
    }
    with open(demo_chain_rev / IMPORTS / "leaderboard.csv", newline="") as f:
        written = {row["model"]: row for row in csv.DictReader(f)}
    frame = af.leaderboard(demo_chain_rev)
    for r in board:
        row = frame[frame.model == r["model"]].iloc[0]
        for suffix in ("", "_tasks_as_unit"):
            assert written[r["model"]]["letters" + suffix] == "".join(r["letters" + suffix])
            assert (
                written[r["model"]]["leader_tier" + suffix]
                == str(r["leader_tier" + suffix]).lower()
            )
            assert row["letters" + suffix] == "".join(r["letters" + suffix])
            assert bool(row["leader_tier" + suffix]) == r["leader_tier" + suffix]
        assert row.design_effect == pytest.approx(r["clustered"]["design_effect"])
        assert row.clustered_low == pytest.approx(r["clustered"]["low"])
        assert row.clustered_df == pytest.approx(r["clustered"]["df"])
        assert row.clustered_sources == 24
    comparisons = af.comparisons(demo_chain_rev)
    for p in demo_chain_analysis["paired"]["pairs"]:
        row = comparisons[(comparisons.a == p["a"]) & (comparisons.b == p["b"])].iloc[0]
        assert bool(row.significant) == p["significant"]
        assert bool(row.significant_tasks_as_unit) == p["significant_tasks_as_unit"]
        assert row.p_sign_flip_holm == p["p_sign_flip_holm"]


def test_every_dagger_agrees_with_a_recomputed_holm_decision(
    demo_chain_analysis, demo_chain_records, demo_chain_catalog, demo_chain_rev
):
    """Every pair: the whole family's sign-flip p recomputed (by convolution, Holm by hand)
    with a's infrastructure errors counted as solved, then with b's; † exactly when the Holm
    decision of the pair changes either way. Bounds: passes .. passes + errors, and the union
    of the two resolutions' clustered intervals."""
    tasks = [t["task_id"] for t in demo_chain_catalog["tasks"]]
    sources = [t["source_id"] for t in demo_chain_catalog["tasks"]]
    order = [r["model"] for r in demo_chain_analysis["leaderboard"]]
    solved = {
        m: {t: demo_chain_records[m][t]["success"] for t in tasks} for m in demo_chain_records
    }
    error = {
        m: {t for t in tasks if demo_chain_records[m][t]["stop_reason"] == "infrastructure_error"}
        for m in demo_chain_records
    }
    pairs = demo_chain_analysis["paired"]["pairs"]

    def family(outcomes: dict) -> list[float]:
        p = []
        for pair in pairs:
            per_source: Counter = Counter()
            for t, s in zip(tasks, sources, strict=True):
                per_source[s] += int(outcomes[pair["a"]][t]) - int(outcomes[pair["b"]][t])
            p.append(
                float(
                    sign_flip_by_convolution(
                        [per_source[s["source_id"]] for s in demo_chain_catalog["sources"]]
                    )
                )
            )
        return holm_by_hand(p)

    resolved = {
        m: family({**solved, m: {t: solved[m][t] or t in error[m] for t in tasks}})
        for m in order
        if error[m]
    }
    marked = []
    for i, pair in enumerate(pairs):
        flips = []
        for way, model in (("favour_a", pair["a"]), ("favour_b", pair["b"])):
            adjusted = resolved[model][i] if model in resolved else pair["p_sign_flip_holm"]
            assert pair["infrastructure"][way]["p_sign_flip_holm"] == pytest.approx(
                adjusted, rel=1e-12
            )
            flips.append((adjusted < ALPHA) != pair["significant"])
        assert pair["infrastructure"]["marked"] == any(flips), (pair["a"], pair["b"])
        if any(flips):
            marked.append((pair["a"], pair["b"]))
        union = pair["infrastructure"]["clustered"]
        ways = [pair["infrastructure"][w]["clustered"] for w in ("favour_a", "favour_b")]
        assert union == {"low": min(w["low"] for w in ways), "high": max(w["high"] for w in ways)}
    assert marked and demo_chain_analysis["paired"]["marked_pairs"] == len(marked)
    assert "Holm" in demo_chain_analysis["paired"]["infrastructure"]
    for row in demo_chain_analysis["leaderboard"]:
        m = row["model"]
        bounds = row["infrastructure_bounds"]
        assert (bounds["passes"], bounds["passes_high"]) == (
            row["passes"],
            row["passes"] + len(error[m]),
        )
        assert bounds["clustered"]["low"] == row["clustered"]["low"]
        assert bounds["clustered"]["high"] >= row["clustered"]["high"]
    html = (demo_chain_rev / "report/index.html").read_text()
    assert 'id="infrastructure"' in html and f"{len(marked)} pair(s) marked" in html
    frame = af.comparisons(demo_chain_rev)
    assert sorted(map(tuple, frame[frame.infrastructure_marked][["a", "b"]].values)) == sorted(
        marked
    )
    # the tier and letter changes the report names are those of the recomputed families
    changes = {c["errors_solved_for"] for c in demo_chain_analysis["paired"]["tier_changes"]}
    for model, adjusted in resolved.items():
        flipped = [(a < ALPHA) != p["significant"] for a, p in zip(adjusted, pairs, strict=True)]
        if model in changes:
            assert any(flipped)


def test_the_task_level_resolution_is_the_exact_test_each_way(
    demo_chain_analysis, demo_chain_records, demo_chain_catalog
):
    tasks = [t["task_id"] for t in demo_chain_catalog["tasks"]]

    def bits(model: str, keep) -> int:
        return sum(1 << i for i, t in enumerate(tasks) if keep(demo_chain_records[model][t]))

    success = {m: bits(m, lambda r: r["success"]) for m in demo_chain_records}
    errors = {
        m: bits(m, lambda r: r["stop_reason"] == "infrastructure_error") for m in demo_chain_records
    }
    for pair in demo_chain_analysis["paired"]["pairs"]:
        a, b = pair["a"], pair["b"]
        reference = infrastructure_error_bounds(success[a], errors[a], success[b], errors[b], 341)
        assert reference["reported"]["p_exact"] == pair["p_exact"]
        for way in ("favour_a", "favour_b"):
            mine = pair["infrastructure"][way]
            assert {k: mine[k] for k in reference[way]} == reference[way]
