"""Statistics against values computed by hand (formulas in the comments)."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from afbench import stats
from afbench.stats import (
    ALLOCATION_METHOD,
    CLUSTERED_DIFFERENCE_METHOD,
    CLUSTERED_RATE_METHOD,
    EXACT_INTEGER_LIMIT,
    INFRASTRUCTURE_BOUNDS_METHOD,
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
    standard_error,
    stratified_selection,
    success_bounds,
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
    reference: dict[tuple[int, int], float] = {}
    for only_a, only_b in pairs:
        key = (only_a + only_b, min(only_a, only_b))
        if key not in reference:
            reference[key] = reference_mcnemar_exact(only_a, only_b)
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
    for nats in (0.5, 8.0, 35.0):
        fast = [stats._log_space_p(n, k, lgamma, significant_nats=nats) for n, k in counts]
        assert fast == [reference_mcnemar_exact(k, n - k) for n, k in counts], nats


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
    # SE_cl = sqrt(4 · 1.5²) / 12 = 1/4, SE_iid = sqrt(12 · 0.25) / 12, design effect 9/3 = 3
    # (the cluster size, as outcomes are identical within a source)
    sources = [c for c in "ABCD" for _ in range(3)]
    result = clustered_rate([1, 1, 1, 0, 0, 0] * 2, sources)
    assert (result["mean"], result["se_clustered"]) == (0.5, 0.25)
    assert result["se_iid"] == pytest.approx(math.sqrt(3) / 12, rel=1e-15)
    assert result["design_effect"] == 3.0
    assert (result["clusters"], result["tasks"], result["confidence"]) == (4, 12, 0.95)
    half = z_for(0.95) * 0.25
    assert (result["low"], result["high"]) == (0.5 - half, 0.5 + half)
    assert result["method"] == CLUSTERED_RATE_METHOD
    assert result == clustered_rate_from_counts([3, 0, 3, 0], [3, 3, 3, 3])


def test_clustered_interval_is_clipped_and_degenerate_cases_have_no_design_effect():
    # 9 of 10 in one source, 1 of 2 in another: mean + z·SE_cl exceeds 1
    high = clustered_rate_from_counts([9, 1], [10, 2], confidence=0.99)
    assert high["mean"] + z_for(0.99) * high["se_clustered"] > 1 and high["high"] == 1.0
    assert high["low"] < high["mean"]
    low = clustered_difference_from_counts([0, 1], [5, 0], [5, 2])
    assert low["mean"] - z_for(0.95) * low["se_clustered"] < -1 and low["low"] == -1.0
    assert low["method"] == CLUSTERED_DIFFERENCE_METHOD
    for same in (clustered_rate([1, 1, 1], "abc"), clustered_rate_from_counts([0, 0], [2, 3])):
        assert same["se_clustered"] == same["se_iid"] == 0.0 and same["design_effect"] is None
        assert same["low"] == same["high"] == same["mean"]
    empty_source = clustered_rate_from_counts([2, 0, 1], [4, 0, 3])
    assert empty_source["clusters"] == 2 and empty_source["tasks"] == 7


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
        assert result["se_clustered"] == pytest.approx(math.sqrt(between) / n, abs=1e-12)
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
    assert result["se_clustered"] == result["se_iid"]
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
