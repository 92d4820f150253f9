"""The sequential paired test (afbench.execution.sequential): its nested stratified order, its
mixture and boundary checked by exact computation, its decisions after each batch, with
infrastructure errors rerun and their tasks left out (and, under plans sealed before that rule, as
bounds), and its exact operating characteristics checked against enumeration."""

from __future__ import annotations

import copy
import csv
import itertools
import json
import math
import os
import random
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from test_trial import as_checkout, readme_example, shell

from afbench.core import stats
from afbench.core.errors import AfbenchError
from afbench.core.fsutil import json_bytes
from afbench.execution import sequential

from conftest import (
    SNAKEMAKE,
    demo_revision,
    docker_leftovers,
    docker_skip_reason,
    examples,
    harbor_skip_reason,
    run_afbench,
    snakemake,
    snakemake_env,
)

# the demo release's 24 source sizes (resources/demo-release/SOURCES.csv)
DEMO_SIZES = [13, 12, 12, 11, 15, 9, 16, 17, 11, 11, 15, 14, 12, 13, 18, 14, 9, 16, 20, 19, 13]
DEMO_SIZES += [17, 17, 17]


def pool(sizes: list[int]) -> tuple[list[tuple[str, str]], list[str]]:
    tasks = [(f"s{i:02d}_t{j:03d}", f"s{i:02d}") for i, n in enumerate(sizes) for j in range(n)]
    return tasks, [f"s{i:02d}" for i in range(len(sizes))]


# --- the order ------------------------------------------------------------------------------
def assert_every_prefix_stratified(sizes: list[int], seed: int) -> list[str]:
    tasks, sources = pool(sizes)
    order = sequential.nested_stratified_order(tasks, sources, seed)["task_ids"]
    assert sorted(order) == sorted(t for t, _ in tasks)
    source_of = dict(tasks)
    ids = {s: [t for t, src in tasks if src == s] for s in sources}
    total = len(order)
    taken = dict.fromkeys(sources, 0)
    for h, task_id in enumerate(order, start=1):
        taken[source_of[task_id]] += 1
        for s, size in zip(sources, sizes, strict=True):
            quota = h * size
            assert quota // total <= taken[s] <= -(-quota // total), (h, s, taken[s])
    # each source's tasks come in the order a stratified selection draws them
    for s in sources:
        mine = [t for t in order if source_of[t] == s]
        for k in range(len(mine) + 1):
            assert set(mine[:k]) == set(stats.seeded_sample(ids[s], k, seed))
    return order


def test_every_prefix_of_the_demo_order_is_a_stratified_selection():
    order = assert_every_prefix_stratified(DEMO_SIZES, seed=20261013)
    tasks, sources = pool(DEMO_SIZES)
    again = sequential.nested_stratified_order(list(reversed(tasks)), sources, 20261013)
    assert again["task_ids"] == order  # MANIFEST order does not matter, the seed does
    other = sequential.nested_stratified_order(tasks, sources, 1)["task_ids"]
    assert other != order
    # where the largest-remainder allocation is itself nested, the prefix is that selection
    same = sum(
        set(order[:h]) == set(stats.stratified_selection(tasks, sources, h, 20261013)["task_ids"])
        for h in range(1, len(order) + 1)
    )
    assert 0 < same < len(order)


def test_largest_remainder_allocations_are_not_nested_and_the_order_still_is():
    # the Alabama paradox: with sources of 1, 3 and 3 tasks, the first source has one task in
    # the largest-remainder selection of 3 and none in that of 4
    sizes = [1, 3, 3]
    _, sources = pool(sizes)
    three, four = (
        stats.proportional_allocation(list(zip(sources, sizes, strict=True)), h) for h in (3, 4)
    )
    assert three["s00"] == 1 and four["s00"] == 0
    assert_every_prefix_stratified(sizes, 0)


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.integers(0, 25), min_size=1, max_size=9), st.integers(0, 10**6))
def test_every_prefix_is_stratified_for_any_source_sizes(sizes, seed):
    if sum(sizes) == 0:
        return
    assert_every_prefix_stratified(sizes, seed)


def test_the_order_refuses_duplicates_and_unknown_sources():
    with pytest.raises(ValueError, match="distinct"):
        sequential.nested_stratified_order([("a", "s"), ("a", "s")], ["s"], 0)
    with pytest.raises(ValueError, match="unknown sources: t"):
        sequential.nested_stratified_order([("a", "t")], ["s"], 0)


# --- the mixture, exactly -----------------------------------------------------------------------
def exact_mixture(m: int, k: int, c: int) -> Fraction:
    """M_a(m, k) with Fractions: 2^(m+1) B(k+c, m-k+c)/B(c, c) P(Bin(m+2c-1, 1/2) <= k+c-1)."""

    def beta(a: int, b: int) -> Fraction:
        return Fraction(math.factorial(a - 1) * math.factorial(b - 1), math.factorial(a + b - 1))

    n = m + 2 * c - 1
    tail = Fraction(sum(math.comb(n, i) for i in range(k + c)), 2**n)
    return 2 ** (m + 1) * beta(k + c, m - k + c) / beta(c, c) * tail


@pytest.mark.parametrize("c", [1, 2, 5])
def test_the_mixture_matches_its_exact_value_and_is_a_martingale_under_no_difference(c):
    rows = sequential.log_mixture_rows(30, c)
    assert exact_mixture(0, 0, c) == 1
    for m in range(30):
        for k in range(m + 1):
            exact = exact_mixture(m, k, c)
            assert math.isclose(math.exp(rows[m][k]), float(exact), rel_tol=1e-9)
            # a fair coin: the expected next value is the value now (a martingale)
            after = (exact_mixture(m + 1, k + 1, c) + exact_mixture(m + 1, k, c)) / 2
            assert after == exact
            # a pair favouring b never raises the evidence for a (a supermartingale below 1/2)
            assert exact_mixture(m + 1, k, c) <= exact <= exact_mixture(m + 1, k + 1, c)


def brute_crossing(boundary: list[int]) -> Fraction:
    n = len(boundary) - 1
    crossed = 0
    for tosses in itertools.product((0, 1), repeat=n):
        k = 0
        for m, toss in enumerate(tosses, start=1):
            k += toss
            if k >= boundary[m]:
                crossed += 1
                break
    return Fraction(crossed, 2**n)


def test_the_crossing_probability_is_exact_against_every_sequence():
    rng = random.Random(5)
    for _ in range(40):
        n = rng.randint(1, 12)
        boundary = [1] + [rng.randint(1, m + 2) for m in range(1, n + 1)]
        assert sequential.crossing_probability(boundary) == brute_crossing(boundary)
    assert sequential.crossing_probability([0, 1]) == 1


@pytest.mark.parametrize("horizon,c,alpha", [(12, 1, 0.2), (40, 3, 0.05), (120, 12, 0.05)])
def test_the_calibrated_boundary_is_valid_tight_and_never_weaker_than_ville(horizon, c, alpha):
    found = sequential.calibrated_boundary(horizon, c, alpha)
    boundary = found["boundary"]
    assert len(boundary) == horizon + 1
    size = sequential.crossing_probability(boundary)
    assert size <= Fraction(repr(alpha)) / 2
    assert found["size_per_side"] == float(size)
    assert found["threshold_e"] <= found["ville_threshold_e"] == 2 / alpha
    # Ville's threshold gives a boundary at least as high everywhere
    rows = sequential.log_mixture_rows(horizon, c)
    ville = [int((r < math.log(2 / alpha)).sum()) for r in rows]
    assert all(ours <= theirs for ours, theirs in zip(boundary, ville, strict=True))
    # tight: the next lower threshold crosses more often than alpha/2
    used = min(float(r[b]) for r, b in zip(rows, boundary, strict=True) if b < len(r))
    assert used == pytest.approx(found["threshold_log_e"], rel=1e-9)
    lower = max(float(r[r < used].max()) for r in rows if (r < used).any())
    looser = [int((r < lower).sum()) for r in rows]
    assert sequential.crossing_probability(looser) > Fraction(repr(alpha)) / 2


def test_the_prior_concentration_follows_the_design():
    assert sequential.prior_concentration(0.1, 0.176) == 1  # θ = 0.78: a wide prior
    assert sequential.prior_concentration(0.1, 0.3) == 4
    assert sequential.prior_concentration(0.1, 0.5) == 12  # θ = 0.6: a concentrated one
    with pytest.raises(ValueError, match="at most the discordance"):
        sequential.prior_concentration(0.4, 0.3)


# --- the design, its decisions, and its exact operating characteristics -------------------
@pytest.fixture(scope="module")
def small():
    """A small design: 6 tasks in batches of 2, at α = 0.2 so that decisions happen."""
    return sequential.design(
        alpha=0.2,
        difference=0.4,
        discordance=0.6,
        power=0.8,
        batch_tasks=2,
        selection_tasks=6,
        horizon=6,
        futility_power=0.1,
    )


def plan_of(design: dict, order: list[str]) -> dict:
    return {
        "sealed_sha256": "0" * 64,
        "primary_comparison": {
            "a": "x",
            "b": "y",
            "selection": "s",
            "estimand": "a - b",
            "sided": "two-sided",
        },
        "stopping_rule": {"kind": "sequential", "order": order},
        "test": design,
        "design": {"fixed_n": {"tasks": 99}},
        "configurations": {side: {"attempts": 1} for side in "ab"},
    }


PAIRS = {"A": ("accepted", "rejected"), "B": ("rejected", "accepted"), "=": ("accepted",) * 2}


def outcomes(pattern: str, order: list[str], cost: float | None = 1.0) -> list[dict]:
    return [
        {"task_id": t, "a": PAIRS[p][0], "b": PAIRS[p][1], "cost_usd": cost}
        for t, p in zip(order, pattern, strict=False)
    ]


def test_the_decisions_agree_with_exact_enumeration_of_every_run(small):
    """Every sequence of 6 tasks (each concordant, for a, or for b) run through
    sequential_decision: the chance of each decision and the expected tasks equal the design's
    exact operating characteristics, at no difference and at a difference."""
    order = [f"t{i}" for i in range(6)]
    plan = plan_of(small, order)
    for p10, p01 in [(0.3, 0.3), (0.5, 0.1), (0.05, 0.45)]:
        chance = {"A better": 0.0, "B better": 0.0, "futile": 0.0}
        expected = 0.0
        weights = {"A": p10, "B": p01, "=": 1 - p10 - p01}
        for pattern in itertools.product("AB=", repeat=6):
            weight = math.prod(weights[p] for p in pattern)
            decided = sequential.sequential_decision(outcomes("".join(pattern), order), plan)
            chance[decided["decision"]] += weight
            expected += weight * decided["stopped_at_tasks"]
        exact = sequential.operating_characteristics(small, p10, p01)
        for name, value in chance.items():
            assert value == pytest.approx(exact["decisions"][name], abs=2e-6)
        assert expected == pytest.approx(exact["expected_tasks"], abs=2e-3)
        if p10 == p01:
            # valid: a wrong decision at most alpha, whatever the stopping
            assert chance["A better"] + chance["B better"] <= 0.2


def test_a_run_stops_at_its_first_decision_and_names_the_next_batch(small):
    order = [f"t{i}" for i in range(6)]
    plan = plan_of(small, order)
    first = sequential.sequential_decision(outcomes("A", order), plan)
    assert first["decision"] == "continue" and first["looks"] == []
    assert first["next_batch"] == ["t1"] and first["tasks_run"] == 1
    everything_a = sequential.sequential_decision(outcomes("AAAAAA", order), plan)
    assert everything_a["decision"] == "A better"
    stop = everything_a["stopped_at_tasks"]
    assert stop < 6 and everything_a["looks"][-1]["tasks"] == stop
    assert everything_a["spent_usd"] == 6.0 and everything_a["tasks_run"] == 6
    assert everything_a["next_batch"] == []
    assert everything_a["fixed_n_tasks"] == 99
    assert "valid at any stopping time" in everything_a["validity"]
    mirrored = sequential.sequential_decision(outcomes("BBBBBB", order), plan)
    assert mirrored["decision"] == "B better" and mirrored["stopped_at_tasks"] == stop
    # the same outcomes, the same record, byte for byte
    assert json_bytes(everything_a) == json_bytes(
        sequential.sequential_decision(outcomes("AAAAAA", order), plan)
    )


def test_the_horizon_reached_undecided_is_futile(small):
    order = [f"t{i}" for i in range(6)]
    decided = sequential.sequential_decision(outcomes("AB" * 3, order), plan_of(small, order))
    assert decided["decision"] == "futile" and decided["stopped_at_tasks"] <= 6
    none = without_futility(small)
    at_end = sequential.sequential_decision(outcomes("AB" * 3, order), plan_of(none, order))
    assert at_end["decision"] == "futile" and at_end["stopped_at_tasks"] == 6
    assert "horizon" in at_end["reason"]


def errors_resolved(pattern: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Every way the errors of `pattern` could have come out."""
    slots = [
        (i, side) for i, pair in enumerate(pattern) for side in (0, 1) if pair[side] == "error"
    ]
    out = []
    for values in itertools.product(("accepted", "rejected"), repeat=len(slots)):
        resolved = [list(pair) for pair in pattern]
        for (i, side), value in zip(slots, values, strict=True):
            resolved[i][side] = value
        out.append([tuple(pair) for pair in resolved])
    return out


def without_futility(design: dict) -> dict:
    tables = [[0] * (n + 1) for n in design["looks"]]
    return dict(design, futility=dict(design["futility"], tables=tables))


def test_a_decision_with_infrastructure_errors_holds_for_every_resolution(small):
    """Random runs with errors: at the look where a run decides, every resolution of its
    errors decides the same: a (or b) better at that look or before, or futile there."""
    order = [f"t{i}" for i in range(6)]
    plan, bare = plan_of(small, order), plan_of(without_futility(small), order)
    rng = random.Random(11)
    good = ["accepted", "accepted", "accepted", "error", "rejected"]
    bad = ["rejected", "rejected", "accepted", "error", "rejected"]
    seen = set()

    def rows(pattern):
        return [
            {"task_id": t, "a": a, "b": b, "cost_usd": None}
            for t, (a, b) in zip(order, pattern, strict=False)
        ]

    for run in range(400):
        a_choices, b_choices = (good, bad) if run % 2 else (bad, good)
        pattern = [(rng.choice(a_choices), rng.choice(b_choices)) for _ in range(6)]
        decided = sequential.sequential_decision(rows(pattern), plan)
        seen.add(decided["decision"])
        look = decided["stopped_at_tasks"]
        if decided["decision"] == "continue":  # at the horizon, waiting for errors to rerun
            assert look == 6 and decided["next_batch"] == [] and decided["unresolved_tasks"]
            assert "rerun" in decided["reason"]
            resolutions = errors_resolved(pattern)
            found = {sequential.sequential_decision(rows(r), bare)["decision"] for r in resolutions}
            assert len(found) > 1 and found & {"A better", "B better"}
            continue
        table = small["futility"]["tables"][small["looks"].index(look)]
        for resolved in errors_resolved(pattern[:look]):
            if decided["decision"] in ("A better", "B better"):
                again = sequential.sequential_decision(rows(resolved), bare)
                assert again["decision"] == decided["decision"], (pattern, resolved)
                assert again["stopped_at_tasks"] <= look
            else:
                pairs = [(a == "accepted") - (b == "accepted") for a, b in resolved]
                m, k = sum(p != 0 for p in pairs), pairs.count(1)
                assert k < small["boundary"][m] and m - k < small["boundary"][m]
                if look < 6:
                    assert k < table[m] and m - k < table[m], (pattern, resolved)
    assert seen == {"A better", "B better", "futile", "continue"}


def test_errors_that_could_flip_a_decision_keep_the_run_going(small):
    order = [f"t{i}" for i in range(6)]
    plan = plan_of(small, order)
    clean = sequential.sequential_decision(outcomes("AAAAAA", order), plan)
    stop = clean["stopped_at_tasks"]
    # every one of a's wins before the stop is an error for a: nothing is decided yet
    rows = outcomes("AAAAAA", order)
    for row in rows[:stop]:
        row["a"] = "error"
    held = sequential.sequential_decision(rows, plan)
    assert held["decision"] != "A better" or held["stopped_at_tasks"] > stop
    assert held["looks"][0]["unresolved"]["a"] >= 1


EXCLUDING = "rerun then exclude"


def excluding(plan: dict, attempts: int = 2) -> dict:
    """`plan` sealed with the rule for errors: rerun up to `attempts`, then leave the task out."""
    plan = copy.deepcopy(plan)
    plan["configurations"] = {
        side: {**plan["configurations"][side], "attempts": attempts} for side in "ab"
    }
    plan["infrastructure_errors"] = {"rule": EXCLUDING, "statement": sequential.ERROR_STATEMENT}
    return plan


# a task's kinds under the rule, each as trial rows give it (two attempts sealed): a left out
# (a's both attempts erred), concordant, for a (a's verdict after a rerun), for b
EXCLUDED_ROW = {"a": "error", "b": "accepted", "attempts": {"a": 2, "b": 1}}
KINDS_OF_TASK = {
    "X": EXCLUDED_ROW,
    "=": {"a": "rejected", "b": "rejected", "attempts": {"a": 1, "b": 2}},
    "A": {"a": "accepted", "b": "rejected", "attempts": {"a": 2, "b": 1}},
    "B": {"a": "rejected", "b": "accepted", "attempts": {"a": 1, "b": 1}},
}


def rows_of(pattern: str, order: list[str]) -> list[dict]:
    return [
        {"task_id": t, **copy.deepcopy(KINDS_OF_TASK[p]), "cost_usd": 1.0}
        for t, p in zip(order, pattern, strict=False)
    ]


def test_leaving_out_a_task_whose_trials_still_err_keeps_the_error_within_alpha(small):
    """Every run of 6 tasks, each left out (one side erred at both attempts), concordant, for a
    or for b: a left-out task decides exactly as a concordant one would (the looks, their
    decisions and where the run stops), and is counted in its look's `excluded`; so the chance
    of each decision is the design's exact operating characteristic with a left-out task's
    chance counted as concordant. With per-attempt errors exchangeable (the null: each side
    errs at an attempt with the same chance, and solves with the same chance), A better and B
    better are equally likely and together at most alpha."""
    order = [f"t{i}" for i in range(6)]
    plan = excluding(plan_of(small, order))
    bare = plan_of(small, order)
    decided = {}
    for pattern in map("".join, itertools.product("X=AB", repeat=6)):
        got = sequential.sequential_decision(rows_of(pattern, order), plan)
        same = sequential.sequential_decision(outcomes(pattern.replace("X", "="), order), bare)
        assert [(k["tasks"], k["decision"]) for k in got["looks"]] == [
            (k["tasks"], k["decision"]) for k in same["looks"]
        ], pattern
        assert got["decision"] == same["decision"], pattern
        looked = pattern[: got["stopped_at_tasks"]]
        assert [k["excluded"] for k in got["looks"]] == [
            pattern[: k["tasks"]].count("X") for k in got["looks"]
        ]
        assert [t["task_id"] for t in got["excluded_tasks"]] == [
            t for t, p in zip(order, looked, strict=False) if p == "X"
        ]
        assert got["next_reruns"] == [] and got["unresolved_tasks"] == []
        decided[pattern] = got["decision"]
    for error, pa, pb in [(0.3, 0.5, 0.5), (0.05, 0.4, 0.4), (0.2, 0.8, 0.3)]:
        left_out = 1 - (1 - error**2) ** 2  # either side erred at both of its attempts
        counted = 1 - left_out
        weights = {
            "X": left_out,
            "A": counted * pa * (1 - pb),
            "B": counted * (1 - pa) * pb,
        }
        weights["="] = 1 - sum(weights.values())
        chance = {"A better": 0.0, "B better": 0.0, "futile": 0.0}
        for pattern, decision in decided.items():
            chance[decision] += math.prod(weights[p] for p in pattern)
        exact = sequential.operating_characteristics(small, weights["A"], weights["B"])
        for name, value in chance.items():
            assert value == pytest.approx(exact["decisions"][name], abs=2e-6)
        if pa == pb:
            assert chance["A better"] == pytest.approx(chance["B better"], abs=1e-12)
            assert chance["A better"] + chance["B better"] <= 0.2


def test_a_look_waits_for_its_errored_trials_and_the_next_batch_does_not(small):
    """Rerun then exclude: an errored trial with an attempt left holds its look, is rerun
    (its next attempt) and the next batch is named beside it; a task whose side erred at its
    last attempt is left out and holds nothing; the retries are counted."""
    order = [f"t{i}" for i in range(6)]
    plan = excluding(plan_of(small, order), attempts=3)
    first = [
        {"task_id": "t0", "a": "accepted", "b": "rejected", "cost_usd": 1.0},
        {"task_id": "t1", "a": "error", "b": "rejected", "cost_usd": 1.0},
    ]
    waiting = sequential.sequential_decision(first, plan)
    assert waiting["decision"] == "continue" and waiting["looks"] == []
    assert waiting["next_batch"] == ["t2", "t3"] and waiting["tasks_counted"] == 0
    assert waiting["next_reruns"] == [{"task_id": "t1", "configuration": "a", "attempt": 2}]
    assert waiting["unresolved_tasks"] == ["t1"] and waiting["retries"] == 0
    assert "2 task(s), and 1 errored trial(s) to rerun" in sequential.line(waiting)
    # two batches waiting on t1 (its second attempt erred too): the third batch is not held
    second = [*first, *outcomes("AA", order[2:4])]
    second[1] = {**second[1], "attempts": {"a": 2, "b": 1}}
    held = sequential.sequential_decision(second, plan)
    assert held["looks"] == [] and held["next_batch"] == ["t4", "t5"]
    assert held["next_reruns"] == [{"task_id": "t1", "configuration": "a", "attempt": 3}]
    # its last attempt erred: left out, and the looks it held are made at once
    second[1] = {**second[1], "attempts": {"a": 3, "b": 1}}
    out = sequential.sequential_decision(second, plan)
    assert [(k["tasks"], k["excluded"]) for k in out["looks"]] == [(2, 1), (4, 1)]
    assert out["excluded_tasks"] == [
        {"task_id": "t1", "a": "error", "b": "rejected", "attempts": {"a": 3, "b": 1}}
    ]
    assert out["retries"] == 2 and out["next_reruns"] == []
    assert out["looks"][-1]["favour_a"] == {"pairs": 3, "for_a": 3}
    assert "1 task(s) left out for both configurations" in sequential.line(out)
    # a side exhausted leaves the task out whatever the other side still waits for
    both = [{"task_id": "t0", "a": "error", "b": "error", "attempts": {"a": 3, "b": 2}}]
    assert sequential.sequential_decision(both, plan)["next_reruns"] == []
    # bad attempts are refused by field
    with pytest.raises(AfbenchError) as refused:
        sequential.sequential_decision([{**first[0], "attempts": {"a": 0, "b": 1}}], plan)
    assert refused.value.problems[0].field == "outcomes[0].attempts.a"


@pytest.mark.parametrize(
    "row,field",
    [
        ({"task_id": "nope", "a": "accepted", "b": "rejected"}, "outcomes[0].task_id"),
        ({"task_id": "t0", "a": "solved", "b": "rejected"}, "outcomes[0].a"),
        ({"task_id": "t0", "a": "accepted", "b": "rejected", "cost_usd": -1}, "cost_usd"),
        ({"task_id": "t0", "a": "accepted", "b": "rejected", "cost_usd": math.nan}, "cost_usd"),
        ({"task_id": "t0", "a": "accepted", "b": "rejected", "cost_usd": True}, "cost_usd"),
    ],
)
def test_bad_outcomes_are_refused_naming_the_field(small, row, field):
    order = [f"t{i}" for i in range(6)]
    with pytest.raises(AfbenchError) as caught:
        sequential.sequential_decision([row], plan_of(small, order))
    assert field in str(caught.value)


def test_a_task_given_twice_and_a_fixed_plan_are_refused(small):
    order = [f"t{i}" for i in range(6)]
    twice = outcomes("AA", order) + outcomes("A", order)
    with pytest.raises(AfbenchError, match="given twice"):
        sequential.sequential_decision(twice, plan_of(small, order))
    fixed = plan_of(small, order)
    fixed["stopping_rule"] = {"kind": "fixed", "order": order}
    with pytest.raises(AfbenchError, match="not sequential"):
        sequential.sequential_decision([], fixed)


def test_the_design_reaches_the_asked_power_within_the_selection_and_spends_less():
    built = sequential.design(
        alpha=0.05,
        difference=0.1,
        discordance=0.176,
        power=0.8,
        batch_tasks=10,
        selection_tasks=341,
    )
    fixed = stats.mcnemar_sample_size(0.1, alpha=0.05, power=0.8, discordance=0.176)["tasks"]
    at, null = built["at_difference"], built["at_no_difference"]
    assert built["horizon"] <= 341 and at["decisions"]["A better"] >= 0.8
    assert at["expected_tasks"] < fixed  # 116.5 < 136: it spends less than fixed-n
    assert null["decisions"]["A better"] + null["decisions"]["B better"] <= 0.05
    assert built["size_per_side"] <= 0.025
    json.dumps(built)  # a plan carries it as JSON
    # with the whole selection out of reach, the horizon is the selection
    short = sequential.design(
        alpha=0.05,
        difference=0.1,
        discordance=0.5,
        power=0.8,
        batch_tasks=10,
        selection_tasks=60,
    )
    assert short["horizon"] == 60 and short["at_difference"]["decisions"]["A better"] < 0.8


def chance_to_decide_for_a(design: dict, n: int, m: int, k: int) -> float:
    """By enumerating every way the remaining tasks can go: the chance, at the design's
    alternative, of declaring a better at a later look (a run that declares b first stops)."""
    p10 = (design["discordance"] + design["difference"]) / 2
    p01 = (design["discordance"] - design["difference"]) / 2
    weights = {"A": p10, "B": p01, "=": 1 - p10 - p01}
    boundary, looks = design["boundary"], design["looks"]
    if k >= boundary[m]:
        return 1.0
    total = 0.0
    for rest in itertools.product("AB=", repeat=looks[-1] - n):
        mm, kk = m, k
        for step, p in enumerate(rest, start=n + 1):
            mm += p != "="
            kk += p == "A"
            if step in looks and kk >= boundary[mm]:
                total += math.prod(weights[x] for x in rest)
                break
            if step in looks and mm - kk >= boundary[mm]:
                break
    return total


def test_the_futility_tables_hold_the_conditional_power_threshold(small):
    """At each look, the table's first k for each m is where the chance of deciding for a by
    the horizon, found by enumeration, first reaches the threshold."""
    below = small["futility"]["conditional_power_below"]
    for n, table in zip(small["looks"], small["futility"]["tables"], strict=True):
        assert len(table) == n + 1
        for m in range(n + 1):
            chances = [chance_to_decide_for_a(small, n, m, k) for k in range(m + 1)]
            first = next((k for k, c in enumerate(chances) if c >= below), m + 1)
            assert table[m] == first, (n, m, chances)


def test_the_planner_view_sits_beside_the_fixed_n_count():
    fixed = stats.mcnemar_sample_size(0.3, alpha=0.05, power=0.8, discordance=0.5)["tasks"]
    view = sequential.planner_view(
        difference=0.3,
        discordance=0.5,
        alpha=0.05,
        power=0.8,
        fixed_n_tasks=fixed,
        selection_tasks=100,
        batch_tasks=5,
        usd_per_task=400,
    )
    assert view["fixed_n_tasks"] == fixed == 42 and view["fixed_n_usd"] == 16800
    at = view["at_difference"]
    assert at["expected_tasks"] < fixed and at["decisions"]["A better"] >= 0.8
    assert at["expected_usd"] == pytest.approx(at["expected_tasks"] * 400, abs=0.01)
    assert view["at_no_difference"]["expected_tasks"] <= view["horizon"] <= 100
    assert f"the fixed-n count is {fixed}" in view["line"]


def test_afbench_power_shows_the_sequential_view_beside_the_fixed_n_count(tmp_path):
    out = tmp_path / "power.json"
    argv = ["power", "--difference", "0.2", "--baseline-rate", "0.3"]
    result = run_afbench(
        *argv, "--sequential-tasks", "90", "--usd-per-task", "250", "--output", str(out)
    )
    assert result.returncode == 0, result.stderr
    fixed_line, sequential_line = result.stdout.splitlines()
    plan = json.loads(out.read_text())
    view = plan["sequential"]
    assert view["fixed_n_tasks"] == plan["tasks"] == 103 and view["usd_per_task"] == 250
    assert view["horizon"] == 90  # 103 tasks are more than the run may spend
    assert view["at_difference"]["expected_tasks"] < 90
    assert f"the fixed-n count is {plan['tasks']}" in sequential_line
    assert fixed_line == plan["line"]
    # without the flag the plan is what it was; with a number of tasks there is no view
    plain = run_afbench(*argv)
    assert plain.stdout.strip() == fixed_line
    refused = run_afbench(
        "power", "--tasks", "100", "--baseline-rate", "0.3", "--sequential-tasks", "50"
    )
    assert refused.returncode == 2 and "needs a difference to detect" in refused.stderr


# --- the comparison run through `snakemake execute`, step by step -----------------------------
def run_plan(design: dict, order: list[str]) -> dict:
    """plan_of with what a run step reads too: the configurations, the selection, the money."""
    plan = plan_of(design, order)
    plan["configurations"] = {
        side: {"agent": agent, "model": None, "label": agent, "attempts": 1}
        for side, agent in (("a", "x:X"), ("b", "y:Y"))
    }
    plan["selection"] = {"name": "s", "selection_sha256": "5" * 64}
    plan["stopping_rule"]["horizon"] = design["horizon"]
    plan["money"] = {"worst_case_per_task_usd": 4.0}
    return plan


SIDE_AGENT = {"a": "x:X", "b": "y:Y"}


def trial_receipt(task: str, side: str, attempt: int, outcome: str, cost=2.0, refused=None):
    """A trial receipt as afbench.execution.trial writes it, with what a run step reads."""
    return {
        "kind": "afbench trial receipt",
        "schema_version": 1,
        "plan": {
            "selection": {"name": "s", "selection_sha256": "5" * 64},
            "agent": SIDE_AGENT[side],
            "model": None,
        },
        "task_id": task,
        "attempt": attempt,
        "job_name": f"job-{side}-{task}-attempt-{attempt}",
        "action": "refused" if refused else "harbor run",
        "refused": refused,
        "trials": [] if refused else [{"outcome": outcome, "cost_usd": cost}],
        "outcome": "not started" if refused else outcome,
    }


def receipts_of(pattern: str, order: list[str]) -> list[dict]:
    """Both configurations' first attempts, per task: A (a wins), B (b wins), = (both solve),
    E (a's trial an infrastructure error, b fails)."""
    outcome = {
        "A": ("accepted", "rejected"),
        "B": ("rejected", "accepted"),
        "=": ("accepted", "accepted"),
        "E": ("error", "rejected"),
    }
    return [
        trial_receipt(task, side, 1, outcome[p][i])
        for task, p in zip(order, pattern, strict=False)
        for i, side in enumerate("ab")
    ]


def test_a_run_step_names_the_next_batch_then_stops_at_the_decision(small):
    order = [f"t{i}" for i in range(6)]
    plan = run_plan(small, order)
    first = sequential.run_step(plan, [], step=0)
    assert first["kind"] == "afbench sequential run" and not first["stopped"]
    assert first["next_trials"] == [
        {"task_id": t, "configuration": side, "label": SIDE_AGENT[side], "attempt": 1}
        for t in ("t0", "t1")
        for side in "ab"
    ]
    after_one = sequential.run_step(plan, receipts_of("AA", order), step=1)
    assert not after_one["stopped"] and after_one["decision"] == "continue"
    assert [t["task_id"] for t in after_one["next_trials"]] == ["t2", "t2", "t3", "t3"]
    done = sequential.run_step(plan, receipts_of("AAAA", order), step=2)
    assert done["stopped"] and done["stopped_by"] == "decision" and done["next_trials"] == []
    assert done["decision"] == "A better" and done["stopped_at_tasks"] == 4
    assert done["spent_usd"] == 16.0 and done["trials_started"] == 8
    assert done["fixed_n_tasks"] == 99 and done["fixed_n_usd_at_observed_cost"] == 396.0
    assert "valid at any stopping time" in done["validity"]
    assert [t["configuration"] for t in done["trials"][:2]] == ["a", "b"]
    # the same receipts in any order: the same record, byte for byte
    shuffled = receipts_of("AAAA", order)[::-1]
    assert json_bytes(sequential.run_step(plan, shuffled, step=2)) == json_bytes(done)
    line = sequential.run_line(done)
    assert "A better, stopped at 4 tasks (decision" in line and "fixed-n" in line
    # the record beside its plan and receipts (the audit's relations): held, and each forgery
    # named by its field
    source = {"plan": plan, "receipts": receipts_of("AAAA", order)}
    assert sequential.decision_of_plan(done, plan) == []
    assert sequential.decision_of_receipts(done, source) == []
    for change, field in (
        (lambda d: d.update(decision="B better"), "decision"),
        (lambda d: d.update(spent_usd=1.0), "spent_usd"),
        (lambda d: d["looks"][1].update(decision="continue"), "looks[1]"),
        (lambda d: d["trials"].pop(), "trials"),
    ):
        forged = copy.deepcopy(done)
        change(forged)
        problems = sequential.decision_of_receipts(forged, source)
        assert field in {p.field for p in problems}, (field, [str(p) for p in problems])
    resealed = copy.deepcopy(done)
    resealed.update(plan_sha256="f" * 64, alpha=0.5)
    fields = {p.field for p in sequential.decision_of_plan(resealed, plan)}
    assert fields == {"plan_sha256", "alpha"}


def sealed_with(plan: dict, attempts: int, rule: str | None = None) -> dict:
    """`plan` with each configuration's sealed attempts, and its error rule sealed (None: a
    plan sealed before afbench sealed one, whose errors are bounds)."""
    plan = copy.deepcopy(plan)
    for side in "ab":
        plan["configurations"][side]["attempts"] = attempts
    if rule is not None:
        plan["infrastructure_errors"] = {"rule": rule, "statement": sequential.ERROR_STATEMENT}
    return plan


def test_as_bounds_errors_are_rerun_at_the_horizon_while_attempts_last(small):
    """A plan sealed before the error rule keeps its meaning: errors are bounds, and AAAEEE
    decides nothing either way at the horizon (a's three errors could go either way), so a's
    errored trials run again as attempt 2; with one attempt sealed, the run ends undecided;
    the reruns resolved, it decides."""
    order = [f"t{i}" for i in range(6)]
    plan = sealed_with(run_plan(without_futility(small), order), 2)
    receipts = receipts_of("AAAEEE", order)
    held = sequential.run_step(plan, receipts, step=3)
    assert held["infrastructure_errors"] == "bounds"
    assert not held["stopped"] and held["decision"] == "continue"
    assert held["unresolved_tasks"] == ["t3", "t4", "t5"]
    assert held["next_trials"] == [
        {"task_id": t, "configuration": "a", "label": "x:X", "attempt": 2}
        for t in ("t3", "t4", "t5")
    ]
    # the batches before the horizon are not held up by their errors: looked at as bounds
    early = sequential.run_step(plan, receipts_of("AE", order), step=1)
    assert [t["attempt"] for t in early["next_trials"]] == [1] * 4
    assert early["looks"][0]["unresolved"] == {"a": 1, "b": 0}
    spent = sequential.run_step(sealed_with(plan, 1), receipts, step=3)
    assert spent["stopped"] and spent["stopped_by"] == "attempts exhausted"
    assert spent["decision"] == "continue" and spent["next_trials"] == []
    reruns = [trial_receipt(t, "a", 2, "accepted") for t in ("t3", "t4", "t5")]
    decided = sequential.run_step(plan, receipts + reruns, step=4)
    assert decided["stopped_by"] == "decision" and decided["decision"] == "A better"
    assert decided["retries"] == 3 and decided["retries_usd"] == 6.0
    assert decided["excluded_tasks"] == []
    beyond = [trial_receipt("t3", "a", 3, "accepted")]
    with pytest.raises(AfbenchError, match="beyond the attempts") as refused:
        sequential.run_step(plan, receipts + reruns + beyond, step=5)
    assert refused.value.problems[0].field.endswith(".attempt")


def test_each_step_reruns_the_errors_it_sees_and_no_attempt_is_asked_twice(small):
    """The steps as `snakemake execute` runs them, each step's next trials run (their outcomes
    drawn once per task, configuration and attempt) and their receipts handed to the next:
    every errored trial with an attempt left is rerun at the very next step, beside the next
    batch; no trial (task, configuration, attempt) is asked twice or beyond the sealed attempts,
    and each step's trials are first offered to the ceiling's check; the run ends as the first
    verdicts decide, a task left out exactly when one side erred at every attempt."""
    order = [f"t{i}" for i in range(6)]
    rng = random.Random(5)
    seen_stops = set()
    for run in range(150):
        attempts = 1 + run % 3
        plan = excluding(run_plan(small, order), attempts)
        solves = {"a": rng.choice([0.3, 0.5, 0.8]), "b": rng.choice([0.3, 0.5])}
        fate = {
            (t, side, n): "error"
            if rng.random() < 0.35
            else ("accepted" if rng.random() < solves[side] else "rejected")
            for t in order
            for side in "ab"
            for n in range(1, attempts + 1)
        }
        receipts, asked, offered = [], set(), []

        def afford(trials, offered=offered):
            offered.append([dict(t) for t in trials])

        step, arrived = 0, []
        while True:
            record = sequential.run_step(plan, receipts, step=step, afford=afford)
            wanted = {
                (t["task_id"], t["configuration"], t["attempt"]) for t in record["next_trials"]
            }
            if record["next_trials"]:
                assert offered[-1] == record["next_trials"]
            left_out = {t["task_id"] for t in record["excluded_tasks"]}
            for task, side, n in arrived:  # what this step received
                other = "b" if side == "a" else "a"
                exhausted = all(fate[(task, other, k)] == "error" for k in range(1, attempts + 1))
                retried = not (exhausted and (task, other, attempts) in asked)
                if fate[(task, side, n)] == "error" and n < attempts and not record["stopped"]:
                    assert not retried or (task, side, n + 1) in wanted, (run, step, task, side)
            if record["stopped"]:
                break
            assert not wanted & asked and all(n <= attempts for _, _, n in wanted)
            asked |= wanted
            arrived = sorted(wanted)
            receipts += [trial_receipt(t, side, n, fate[(t, side, n)]) for t, side, n in arrived]
            step += 1
        seen_stops.add(record["stopped_by"])
        # what the first verdicts decide, a left-out task as a concordant one, on the bare plan
        pattern = ""
        for t in order:
            verdicts = [
                next(
                    (
                        fate[(t, side, n)]
                        for n in range(1, attempts + 1)
                        if fate[(t, side, n)] != "error"
                    ),
                    None,
                )
                for side in "ab"
            ]
            if None in verdicts:
                pattern += "="
            else:
                pattern += {("accepted", "rejected"): "A", ("rejected", "accepted"): "B"}.get(
                    tuple(verdicts), "="
                )
        bare = sequential.sequential_decision(outcomes(pattern, order), plan_of(small, order))
        assert record["decision"] == bare["decision"], run
        assert record["stopped_at_tasks"] == bare["stopped_at_tasks"], run
        assert left_out == {
            t
            for t in order[: record["tasks_counted"]]
            if any(
                all(fate[(t, side, n)] == "error" for n in range(1, attempts + 1)) for side in "ab"
            )
        }
        assert record["retries"] == sum(n > 1 for _, _, n in asked)
        # the audit makes the last step again from its receipts: a forged count is named
        source = {"plan": plan, "receipts": receipts}
        assert sequential.decision_of_receipts(record, source) == []
        if record["excluded_tasks"]:
            forged = copy.deepcopy(record)
            forged["excluded_tasks"].pop()
            problems = sequential.decision_of_receipts(forged, source)
            assert {p.field for p in problems} == {"excluded_tasks"}
            seen_stops.add("excluded")
        if record["retries"]:
            forged = dict(record, retries=0)
            assert {p.field for p in sequential.decision_of_receipts(forged, source)} == {"retries"}
    assert seen_stops == {"decision", "futility", "horizon", "excluded"}
    # a receipt beyond the sealed attempts is a problem the audit names, not a crash
    beyond = [*receipts, trial_receipt(order[0], "a", attempts + 1, "accepted")]
    [problem] = sequential.decision_of_receipts(record, {"plan": plan, "receipts": beyond})
    assert problem.field.endswith(".attempt") and "beyond the attempts" in problem.message


def test_a_run_stops_at_the_ceiling_before_a_batch_it_cannot_pay_for(small):
    order = [f"t{i}" for i in range(6)]
    plan = run_plan(small, order)
    receipts = receipts_of("AA", order)
    receipts[-1] = trial_receipt("t1", "b", 1, "", refused="the ceiling: USD 10 is spent")
    stopped = sequential.run_step(plan, receipts, step=1)
    assert stopped["stopped_by"] == "cost ceiling" and stopped["next_trials"] == []
    assert "job-b-t1-attempt-1 did not start: the ceiling" in stopped["stop_reason"]
    assert stopped["trials_refused"] == 1 and stopped["tasks_counted"] == 0
    asked = []

    def afford(trials):
        asked.append(trials)
        return "the next 4 trial(s) would pass the ceiling"

    unaffordable = sequential.run_step(plan, receipts_of("AA", order), step=1, afford=afford)
    assert unaffordable["stopped_by"] == "cost ceiling" and unaffordable["next_trials"] == []
    assert unaffordable["stop_reason"] == "the next 4 trial(s) would pass the ceiling"
    assert [t["task_id"] for t in asked[0]] == ["t2", "t2", "t3", "t3"]
    # a decision needs no more money: the check is not asked
    asked.clear()
    sequential.run_step(plan, receipts_of("AAAA", order), step=2, afford=afford)
    assert asked == []


# the README's example: two model-free agents of our own (tests/harbor_agents/solve_agent.py),
# StrongAgent solving 80% of the tasks and WeakAgent 20%, each reporting USD 2 a trial. Of the
# selection's two sources' first four tasks StrongAgent solves all but demo_s01_t003, WeakAgent
# only demo_s01_t003 and demo_s02_t002 (solve_agent.solves). In the order seed 6 draws, the
# first four tasks are each solved by a alone: at alpha 0.2 the boundary is 4 of 4 discordant
# pairs, so the first batch of two continues and the second decides A better.
README_TEST = "test_a_sealed_comparison_stops_at_its_first_decision_the_same_on_a_rerun"


ORDER = ["demo_s01_t001", "demo_s02_t004", "demo_s01_t002", "demo_s02_t001"]


def comparison(root: Path, change: dict | None = None) -> list[str]:
    """The README's my-comparison.yaml over config/demo.yaml, as written, and `change` over
    it."""
    config, _ = readme_example(README_TEST)
    (root / "my-comparison.yaml").write_text(config)
    args = ["--configfile", "config/demo.yaml", "my-comparison.yaml"]
    if change is None:
        return args
    (root / "change.yaml").write_text(yaml.safe_dump(change))
    return [*args, "change.yaml"]


@pytest.fixture
def built(demo_project, tmp_path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(demo_project, root, symlinks=True)
    return root


def out_dir(root: Path) -> Path:
    return root / "results" / demo_revision()


def execute(root: Path, args: list[str], *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [SNAKEMAKE, "execute", *extra, *args],
        cwd=root,
        env=snakemake_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def said(result: subprocess.CompletedProcess) -> str:
    return result.stdout + result.stderr


def refusal(root: Path, args: list[str]) -> str:
    """`snakemake execute -n`'s one-line refusal (and that nothing ran)."""
    result = execute(root, args, "-n")
    lines = [line for line in said(result).splitlines() if "afbench: refused:" in line]
    assert result.returncode != 0 and len(lines) == 1, said(result)[-3000:]
    assert "Traceback" not in said(result)
    return lines[0]


@pytest.mark.snakemake
def test_a_comparison_runs_only_under_its_sealed_plan_and_as_the_config_still_says(built):
    root = built
    as_checkout(root)
    args = comparison(root)
    missing = refusal(root, args)
    assert "no sealed analysis plan" in missing and "snakemake preregister" in missing
    snakemake(root, "preregister", *args)
    sealed = out_dir(root) / "execute/analysis-plan.json"
    plan = json.loads(sealed.read_text())
    assert plan["stopping_rule"]["order"][:4] == ORDER
    assert plan["money"]["per_trial_cap_usd"] == {"a": 5.0, "b": 5.0}  # execute.trial_cap_usd
    changed = refusal(root, comparison(root, {"preregister": {"alpha": 0.1}}))
    assert "the config no longer matches the sealed analysis plan" in changed
    assert "field 'analysis.alpha'" in changed and "preregister.alpha" in changed
    capped = refusal(root, comparison(root, {"execute": {"trial_cap_usd": 6}}))
    assert "field 'money.per_trial_cap_usd.a'" in capped and "execute.trial_cap_usd" in capped
    first_only = {
        "execute": {"items": yaml.safe_load(readme_example(README_TEST)[0])["execute"]["items"][:1]}
    }
    half = refusal(root, comparison(root, first_only))
    assert "runs configuration a of the preregistered comparison without the other" in half
    partial = refusal(root, comparison(root, {"execute": {"partial": True}}))
    assert "execute.partial does not apply" in partial
    gone = refusal(root, comparison(root, {"preregister": {"comparison": None}}))
    assert "the config no longer names it" in gone
    assert not (out_dir(root) / "execute/sequential").exists()
    assert not (out_dir(root) / "jobs.ledger.jsonl").exists()


def audit_lines(directory: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(SNAKEMAKE).with_name("afbench")), "audit", str(directory)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _rewrite(path: Path, change) -> None:
    data = json.loads(path.read_bytes())
    change(data)
    path.chmod(0o644)
    path.write_bytes(json_bytes(data))


def _forge_receipt(out: Path) -> None:
    """A second receipt of a trial, its outcome turned (the forgery that flipped decide)."""
    genuine = sorted((out / "execute/seq-eight").rglob("attempt-1.json"))[0]
    data = json.loads(genuine.read_bytes())
    data["outcome"] = "rejected" if data["outcome"] == "accepted" else "accepted"
    (genuine.parent / "attempt-1 copy.json").write_bytes(json_bytes(data))


def _forge_ledger(out: Path) -> None:
    _rewrite(out / "execute/cost-ledger.json", lambda d: d.update(spent_usd=d["spent_usd"] / 2))


def _forge_decision(out: Path) -> None:
    _rewrite(out / "execute/decision.json", lambda d: d.update(decision="B better"))


def _forge_seal(out: Path) -> None:
    _rewrite(out / "execute/decision.json", lambda d: d.update(plan_sha256="0" * 64))


@pytest.mark.snakemake
@pytest.mark.harbor
@pytest.mark.docker
def test_a_sealed_comparison_stops_at_its_first_decision_the_same_on_a_rerun(built):
    """Two batches of two tasks, both agents (8 Harbor trials): the first batch continues, the
    second decides A better; nothing of the selection's other four tasks runs. Derived again
    from the receipts, every step and the decision are the same bytes; the run is checked
    against its plan (confirmatory), and a departure makes it exploratory, named."""
    if reason := harbor_skip_reason() or docker_skip_reason():
        pytest.skip(reason)
    root = built
    env = as_checkout(root)
    args = comparison(root)
    _, block = readme_example(README_TEST)
    result = shell(root, block, env)
    assert result.returncode == 0, said(result)[-3000:]
    out = out_dir(root)
    decision = out / "execute/decision.json"
    decided = json.loads(decision.read_text())
    plan = json.loads((out / "execute/analysis-plan.json").read_text())
    assert decided["plan_sha256"] == plan["sealed_sha256"]
    assert (decided["decision"], decided["stopped_by"]) == ("A better", "decision")
    assert decided["stopped_at_tasks"] == 4 and decided["horizon"] == 8
    assert [(look["tasks"], look["decision"]) for look in decided["looks"]] == [
        (2, "continue"),
        (4, "A better"),
    ]
    assert [(t["task_id"], t["configuration"], t["outcome"]) for t in decided["trials"]] == [
        (task, side, "accepted" if side == "a" else "rejected") for task in ORDER for side in "ab"
    ]
    assert decided["spent_usd"] == 16.0  # 8 trials at USD 2
    assert decided["fixed_n_tasks"] == 9 == plan["design"]["fixed_n"]["tasks"]
    steps = sorted((out / "execute/sequential").iterdir())
    assert [p.name for p in steps] == ["step-0.json", "step-1.json", "step-2.json"]
    assert steps[-1].read_bytes() == decision.read_bytes()
    assert "afbench execute: solve_agent__StrongAgent against solve_agent__WeakAgent: A " in (
        said(result)
    )
    ran = sorted(p.parent.name for p in (out / "execute/seq-eight").rglob("attempt-1.json"))
    assert ran == sorted(ORDER * 2)  # the other four tasks never ran
    ledger = (out / "jobs.ledger.jsonl").read_text().splitlines()
    assert [json.loads(line)["event"] for line in ledger].count("finish") == 8
    summary = json.loads((out / "runs/executed-seq-eight/summary.json").read_text())
    checked = summary["analysis_plan"]
    assert checked["as_planned"] and checked["problems"] == []
    [role] = checked["comparisons"]
    assert role["role"] == "confirmatory" and role["plan_sha256"] == plan["sealed_sha256"]
    html = (out / "report/executed/index.html").read_text()
    assert 'id="sealed-comparison"' in html and "confirmatory" in html
    assert "valid at any stopping time" in html

    # the paid chain audits whole (receipts, ledger, steps, decision), and each forgery of it is
    # named by the relation it breaks
    audited = audit_lines(out)
    assert audited.returncode == 0, audited.stdout[-3000:]
    for relation in ("ledger-receipts", "decision-plan", "decision-receipts"):
        assert f"held   {relation} (" in audited.stdout, relation
    forged = root.parent / "forged"
    for change, relation in (
        (_forge_receipt, "receipt-trial"),
        (_forge_ledger, "ledger-receipts"),
        (_forge_decision, "decision-receipts"),
        (_forge_seal, "decision-plan"),
    ):
        shutil.rmtree(forged, ignore_errors=True)
        shutil.copytree(out, forged, symlinks=True)
        change(forged)
        failed = audit_lines(forged)
        assert failed.returncode == 1, (relation, failed.stdout[-3000:])
        assert f"FAILED {relation} (" in failed.stdout, (relation, failed.stdout[-3000:])
        assert "Traceback" not in failed.stdout + failed.stderr

    # derived again from the receipts, the decision and every step are the same bytes, and
    # no trial runs again
    before = {p.name: p.read_bytes() for p in [*steps, decision]}
    for path in [*steps, decision]:
        path.unlink()
    derived = execute(root, args, "--cores", "4")
    assert derived.returncode == 0, said(derived)[-3000:]
    assert {p.name: p.read_bytes() for p in [*steps, decision]} == before
    assert (out / "jobs.ledger.jsonl").read_text().splitlines() == ledger  # no trial ran again

    # the check against the plan names a departure, and the comparison is then exploratory
    from afbench.runs.conformance import plan_conformance

    receipts = [
        json.loads(p.read_text()) for p in sorted((out / "execute/seq-eight").rglob("*.json"))
    ]
    assert plan_conformance(plan, summary, receipts)["as_planned"]
    other = copy.deepcopy(receipts)
    other[0]["worst_case_usd"] = 50.0
    slower = copy.deepcopy(summary)
    slower["configurations"][0]["settings"]["agent_timeout_multiplier"] = 2.0
    departed = plan_conformance(plan, slower, other)
    assert not departed["as_planned"]
    fields = " ".join(departed["problems"])
    assert "money.per_trial_cap_usd" in fields and "agent_timeout_s" in fields
    assert departed["comparisons"][0]["role"] == "exploratory"

    # a config changed after sealing is refused before anything runs
    assert "field 'analysis.difference'" in refusal(
        root, comparison(root, {"preregister": {"difference": 0.5}})
    )
    assert docker_leftovers(out / "jobs") == []


RATE_LIMITED = "solve_agent:StrongAgentRateLimitedOnce"


@pytest.mark.snakemake
@pytest.mark.harbor
@pytest.mark.docker
def test_execute_reruns_an_errored_trial_at_the_next_step_and_the_run_decides(built):
    """The README's comparison with a's first trial of demo_s01_t001 stopped by a provider's
    rate limit (an infrastructure error) and two attempts sealed: `snakemake execute` runs its
    second attempt at the very next step, beside the second batch; the look at the first batch
    waits for it, and the second look decides A better. Nine Harbor trials, each paid once,
    one of them a rerun; nothing left out."""
    if reason := harbor_skip_reason() or docker_skip_reason():
        pytest.skip(reason)
    root = built
    as_checkout(root)
    readme = yaml.safe_load(readme_example(README_TEST)[0])
    items = [{"selection": "seq-eight", "agent": RATE_LIMITED}, readme["plans"]["items"][1]]
    args = comparison(
        root,
        {
            "plans": {"items": items},
            "execute": {"items": items, "attempts": 2},
            "preregister": {"comparison": {"a": {"agent": RATE_LIMITED}}},
        },
    )
    snakemake(root, "preregister", *args)
    out = out_dir(root)
    plan = json.loads((out / "execute/analysis-plan.json").read_text())
    assert plan["infrastructure_errors"]["rule"] == "rerun then exclude"
    assert {side["attempts"] for side in plan["configurations"].values()} == {2}
    agents = str(root / "tests" / "harbor_agents")
    paths = os.pathsep.join(p for p in (agents, os.environ.get("PYTHONPATH")) if p)
    ran = subprocess.run(
        [SNAKEMAKE, "execute", "--cores", "4", *args],
        cwd=root,
        env={**snakemake_env(), "PYTHONPATH": paths},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert ran.returncode == 0, said(ran)[-3000:]
    assert "runs again at the next step, up to 2 attempt(s) in all, and a task still erring" in (
        said(ran)
    )
    steps = [json.loads(p.read_text()) for p in sorted((out / "execute/sequential").iterdir())]
    assert [s["step"] for s in steps] == [0, 1, 2]
    label = plan["configurations"]["a"]["label"]
    # step 1: the look at the first batch waits for a's rerun, which runs beside the second batch
    assert steps[1]["looks"] == [] and steps[1]["unresolved_tasks"] == [ORDER[0]]
    assert steps[1]["next_trials"] == [
        {"task_id": ORDER[0], "configuration": "a", "label": label, "attempt": 2},
        *(
            {"task_id": t, "configuration": side, "label": plan["configurations"][side]["label"]}
            | {"attempt": 1}
            for t in ORDER[2:4]
            for side in "ab"
        ),
    ]
    decided = json.loads((out / "execute/decision.json").read_text())
    assert (decided["decision"], decided["stopped_by"]) == ("A better", "decision")
    assert [(look["tasks"], look["decision"]) for look in decided["looks"]] == [
        (2, "continue"),
        (4, "A better"),
    ]
    assert decided["retries"] == 1 and decided["excluded_tasks"] == []
    assert decided["infrastructure_errors"] == "rerun then exclude"
    first, second = (
        json.loads((out / f"execute/seq-eight/{label}/{ORDER[0]}/attempt-{n}.json").read_text())
        for n in (1, 2)
    )
    assert (first["outcome"], second["outcome"]) == ("error", "accepted")
    assert decided["trials"][:2] == [
        {"task_id": ORDER[0], "configuration": "a", "attempt": n, "outcome": outcome}
        | {"cost_usd": 2.0, "refused": False}
        for n, outcome in ((1, "error"), (2, "accepted"))
    ]
    receipts = sorted((out / "execute/seq-eight").rglob("attempt-*.json"))
    assert len(receipts) == 9 and decided["trials_started"] == 9
    assert decided["spent_usd"] == 18.0 and decided["retries_usd"] == 2.0
    # each trial paid once: one start and one finish in the live ledger, every job its own
    events = [json.loads(line) for line in (out / "jobs.ledger.jsonl").read_text().splitlines()]
    for event in ("start", "finish"):
        names = [e["job_name"] for e in events if e["event"] == event]
        assert len(names) == len(set(names)) == 9, event
    assert "1 trial(s) rerun after an infrastructure error" in said(ran)
    html = (out / "report/executed/index.html").read_text()
    assert "Trials rerun after an infrastructure error: 1 (USD 2.00)" in html
    summary = json.loads((out / "runs/executed-seq-eight/summary.json").read_text())
    assert summary["analysis_plan"]["as_planned"], summary["analysis_plan"]["problems"]
    # the executed run counts the task as the decision does: a's rerun stands, accepted, one
    # attempt, the rate-limited attempt it replaced recorded on it and still paid for
    [pair] = summary["analysis_plan"]["comparisons"]
    run_label = dict(zip((pair["a"], pair["b"]), pair["configurations"], strict=True))[label]
    with open(out / "runs/executed-seq-eight/outcomes.csv", newline="") as table:
        [row] = [
            r
            for r in csv.DictReader(table)
            if (r["configuration"], r["task_id"]) == (run_label, ORDER[0])
        ]
    assert (row["outcome"], row["attempts"], float(row["cost_usd"])) == ("accepted", "1", 4.0)
    [config] = [c for c in summary["configurations"] if c["configuration"] == run_label]
    [rerun] = config["reruns"]["rerun_trials"]
    assert (rerun["task_id"], rerun["attempt"], rerun["outcome"]) == (ORDER[0], 2, "accepted")
    assert [(r["attempt"], r["outcome"]) for r in rerun["replaced"]] == [(1, "error")]
    audited = audit_lines(out)
    assert audited.returncode == 0, audited.stdout[-3000:]
    assert "held   decision-receipts (" in audited.stdout
    assert "held   run-decision (" in audited.stdout
    assert docker_leftovers(out / "jobs") == []
