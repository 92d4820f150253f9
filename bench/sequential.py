"""The sequential paired test (afbench.execution.sequential) in seeded simulations of releases like
the demo's: 341 tasks in 24 sources of the demo's sizes, run in the nested stratified order a sealed
plan draws, looked at after every batch of 10 tasks.

Each task has a latent difficulty x_t = μ + u_s + e_t on the logit scale (u_s the source's,
e_t the task's own); a configuration solves it with probability expit(x_t ± γ/2), trials
independent given the task. Three releases:

  independent   no source effect (u_s = 0); the two configurations disagree on ψ ≈ 0.18 of
                the tasks, as demo models C and D do;
  clustered     60% of the latent variance between sources (tasks of a source succeed or fail
                together), the same ψ;
  coin flips    every task solved with probability 0.5 by each, independently (ψ = 0.5).

Under no difference (γ = 0: on every task the two are exchangeable, the null the test is
valid under) it prints the test's error rate over R replications with its Monte Carlo error
(sqrt(p(1-p)/R)) beside the exact error for tasks independent and alike (operating_
characteristics); under a 10-point difference (γ so that the mean difference is 0.10) its
power and mean tasks spent beside the fixed-n planner's count (Connor 1987, the yardstick).
Then the clustered release with infrastructure errors, each attempt of each trial an error
with probability 5%, independently (of the task, the configuration and the other attempts),
under no difference and under the 10-point one, as `snakemake execute` runs a sealed plan:

  rerun then exclude   (the rule plans are sealed with) an errored trial runs again at the
                       next step, beside the next batch, up to the sealed attempts (1, 2 or 3:
                       execute.attempts); each configuration's outcome is its first verdict; a
                       task one of whose sides erred at every attempt is left out for both; a
                       look waits until its tasks are counted or left out, so the run can be a
                       batch ahead of its looks: the tasks and trials it spends are counted as
                       the engine spends them (batch b starts at step b - 1; a task settles at
                       step b - 1 + the attempts its slower side ran; the run stops at the step
                       its deciding look is made, with every batch started by then run);
  bounds               (plans sealed before that rule) errors counted both ways, never rerun:
                       a decision must hold with every error resolved against it.

Beside each, the fixed-n exact McNemar test over all 341 tasks: errors as failures (as
reported) for bounds, the same reruns and exclusions for the rule. Then sources that favour one
configuration or the other but none on average over the pool (per-source effects v_s ~ N(0, 1)
on the logit scale, recentred so the pool's mean difference is 0); and the same effects not
recentred (a superpopulation null over sources, which no test of these tasks can address; the
fixed-n exact McNemar on all 341 beside it). Last, what peeking does to a fixed-n test: the
exact McNemar test at α after every batch, stopping at the first p < α.

Usage: python bench/sequential.py [--replications R] [--seed S]   (default 10000, 20261201)"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from afbench.core import stats  # noqa: E402
from afbench.execution import sequential  # noqa: E402

# the demo release's 24 source sizes (resources/demo-release/SOURCES.csv)
SIZES = [13, 12, 12, 11, 15, 9, 16, 17, 11, 11, 15, 14, 12, 13, 18, 14, 9, 16, 20, 19, 13, 17]
SIZES += [17, 17]
ALPHA, DIFFERENCE, POWER, BATCH, FUTILITY = 0.05, 0.10, 0.8, 10, 0.1
TARGET_PSI, TARGET_RATE, CLUSTER_SHARE = 0.176, 0.57, 0.6
ERRORS = 0.05  # each attempt's chance of an infrastructure error
CHUNK = 2000

NODES, WEIGHTS = np.polynomial.hermite_e.hermegauss(80)
WEIGHTS = WEIGHTS / WEIGHTS.sum()


def expit(x):
    return 1 / (1 + np.exp(-x))


def latent_moments(mu: float, sigma: float, gamma: float) -> tuple[float, float, float]:
    """E[p_a], E[p_a - p_b] and ψ for x ~ N(mu, sigma²), by Gauss-Hermite quadrature."""
    x = mu + sigma * NODES
    pa, pb = expit(x + gamma / 2), expit(x - gamma / 2)
    psi = pa * (1 - pb) + pb * (1 - pa)
    return float(WEIGHTS @ pa), float(WEIGHTS @ (pa - pb)), float(WEIGHTS @ psi)


def bisect(f, low: float, high: float) -> float:
    """The root of an increasing f on [low, high]."""
    for _ in range(100):
        middle = (low + high) / 2
        if f(middle) < 0:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def calibrate() -> tuple[float, float, float]:
    """μ and σ giving a mean success of TARGET_RATE and ψ = TARGET_PSI under no difference,
    and the γ that gives a mean difference of DIFFERENCE."""

    def mu_for(sigma: float) -> float:
        return bisect(lambda m: latent_moments(m, sigma, 0)[0] - TARGET_RATE, -10, 10)

    sigma = bisect(lambda s: TARGET_PSI - latent_moments(mu_for(s), s, 0)[2], 0.01, 20)
    mu = mu_for(sigma)
    gamma = bisect(lambda g: latent_moments(mu, sigma, g)[1] - DIFFERENCE, 0, 20)
    return mu, sigma, gamma


class Release:
    """The pool in the plan's order: each position's source, and the design for its ψ."""

    def __init__(self, psi: float) -> None:
        tasks = [(f"s{i:02d}_t{j:03d}", i) for i, n in enumerate(SIZES) for j in range(n)]
        order = sequential.nested_stratified_order(
            [(t, f"s{s:02d}") for t, s in tasks], [f"s{i:02d}" for i in range(len(SIZES))], 1
        )["task_ids"]
        source = dict(tasks)
        self.source = np.array([source[t] for t in order])
        self.design = sequential.design(
            alpha=ALPHA,
            difference=DIFFERENCE,
            discordance=psi,
            power=POWER,
            batch_tasks=BATCH,
            selection_tasks=len(order),
            futility_power=FUTILITY,
        )
        self.fixed = stats.mcnemar_sample_size(
            DIFFERENCE, alpha=ALPHA, power=POWER, discordance=psi
        )["tasks"]


def run_test(design: dict, d_fa, d_fb) -> tuple[np.ndarray, np.ndarray]:
    """Each replication's decision (1 a better, -1 b better, 0 futile or undecided) and tasks
    spent, from its per-task paired outcomes with errors resolved for a (d_fa) and for b
    (d_fb): +1 only a solved, -1 only b, 0 both or neither."""
    boundary = np.array([*design["boundary"], 10**9])
    reps = d_fa.shape[0]
    decision = np.zeros(reps, dtype=int)
    spent = np.full(reps, design["looks"][-1])
    active = np.ones(reps, dtype=bool)
    cum = {
        "m_fa": np.cumsum(d_fa != 0, axis=1),
        "k_fa": np.cumsum(d_fa == 1, axis=1),
        "m_fb": np.cumsum(d_fb != 0, axis=1),
        "k_fb": np.cumsum(d_fb == 1, axis=1),
    }
    for look, table in zip(design["looks"], design["futility"]["tables"], strict=True):
        at = {key: value[:, look - 1] for key, value in cum.items()}
        table = np.array(table)
        a = active & (at["k_fb"] >= boundary[at["m_fb"]])
        b = active & ~a & (at["m_fa"] - at["k_fa"] >= boundary[at["m_fa"]])
        last = look == design["looks"][-1]
        reach = (at["k_fa"] >= table[at["m_fa"]]) | (at["m_fb"] - at["k_fb"] >= table[at["m_fb"]])
        stop = a | b | (active & (last | ~reach))
        decision[a], decision[b] = 1, -1
        spent[stop] = look
        active &= ~stop
    return decision, spent


def simulate(release: Release, mu, sigma, share, gamma, reps, rng, *, errors=0.0, sources=None):
    """R replications: decisions and tasks spent. `sources`: None, or ("recentred" or
    "drawn", τ) for per-source differences."""
    n, groups = len(release.source), len(SIZES)
    decisions, spent, full_pool = [], [], []
    for start in range(0, reps, CHUNK):
        size = min(CHUNK, reps - start)
        u = rng.normal(0, sigma * math.sqrt(share), (size, groups))[:, release.source]
        e = rng.normal(0, sigma * math.sqrt(1 - share), (size, n))
        x = mu + u + e
        shift = np.full((size, 1), gamma / 2)
        if sources is not None:
            how, tau = sources
            v = rng.normal(0, tau, (size, groups))[:, release.source]
            if how == "recentred":
                v = v - _centre(x, v)[:, None]
            shift = v / 2
        pa, pb = expit(x + shift), expit(x - shift)
        a = rng.random((size, n)) < pa
        b = rng.random((size, n)) < pb
        ea = rng.random((size, n)) < errors
        eb = rng.random((size, n)) < errors
        fa = (a | ea).astype(int) - (b & ~eb).astype(int)  # errors resolved for a
        fb = (a & ~ea).astype(int) - (b | eb).astype(int)  # and for b
        d, s = run_test(release.design, fa, fb)
        decisions.append(d)
        spent.append(s)
        # the fixed-n test on all the tasks, errors counted as failures (as reported)
        full_pool.append(_mcnemar_rejects((a & ~ea).astype(int) - (b & ~eb).astype(int)))
    return np.concatenate(decisions), np.concatenate(spent), np.concatenate(full_pool)


def simulate_reruns(release: Release, mu, sigma, share, gamma, reps, rng, *, errors, attempts):
    """R replications of the engine under `rerun then exclude` with `attempts` sealed: each
    attempt an error with probability `errors`. Returns decisions, tasks run, trials started,
    tasks left out among the looks made, and the fixed-n McNemar over every task (the same
    reruns and exclusions)."""
    n, groups = len(release.source), len(SIZES)
    design = release.design
    looks = design["looks"]
    starts = np.array([0, *looks[:-1]])  # each batch's first position
    batch_of = np.searchsorted(np.array(looks), np.arange(n), side="right")  # 0-based batch
    horizon = looks[-1]
    out = {"decision": [], "tasks": [], "trials": [], "excluded": [], "pool": []}
    for start in range(0, reps, CHUNK):
        size = min(CHUNK, reps - start)
        u = rng.normal(0, sigma * math.sqrt(share), (size, groups))[:, release.source]
        e = rng.normal(0, sigma * math.sqrt(1 - share), (size, n))
        x = mu + u + e
        a = rng.random((size, n)) < expit(x + gamma / 2)
        b = rng.random((size, n)) < expit(x - gamma / 2)
        # attempts to the first verdict (1, 2, ...); beyond `attempts`: every attempt erred
        tries_a = rng.geometric(1 - errors, (size, n))
        tries_b = rng.geometric(1 - errors, (size, n))
        counted = (tries_a <= attempts) & (tries_b <= attempts)
        d = (a.astype(int) - b.astype(int)) * counted  # a task left out adds no pair
        decision, spent = run_test(design, d, d)
        ran_a, ran_b = np.minimum(tries_a, attempts), np.minimum(tries_b, attempts)
        # the step at which each look can be made: its batch's slowest task, and every look
        # before it (looks are made in order)
        settle = np.maximum(ran_a, ran_b)[:, :horizon]
        slowest = np.maximum.reduceat(settle, starts, axis=1)
        made = np.maximum.accumulate(np.arange(len(looks)) + slowest, axis=1)
        stop_look = np.searchsorted(np.array(looks), spent)
        step = made[np.arange(size), stop_look]  # batches 1..step have started
        started = batch_of[None, :horizon] < step[:, None]
        may = step[:, None] - batch_of[None, :horizon]  # attempts asked by that step
        trials = (
            np.minimum(ran_a[:, :horizon], may) + np.minimum(ran_b[:, :horizon], may)
        ) * started
        looked = np.arange(horizon)[None, :] < spent[:, None]
        out["decision"].append(decision)
        out["tasks"].append(started.sum(axis=1))
        out["trials"].append(trials.sum(axis=1))
        out["excluded"].append((looked & ~counted[:, :horizon]).sum(axis=1))
        out["pool"].append(_mcnemar_rejects(d))
    return {key: np.concatenate(value) for key, value in out.items()}


def _centre(x, v):
    """Per replication, the shift c with Σ_t expit(x + (v-c)/2) - expit(x - (v-c)/2) = 0."""
    low, high = np.full(len(x), -20.0), np.full(len(x), 20.0)
    for _ in range(60):
        c = (low + high) / 2
        w = (v - c[:, None]) / 2
        total = (expit(x + w) - expit(x - w)).sum(axis=1)
        low = np.where(total > 0, c, low)
        high = np.where(total > 0, high, c)
    return (low + high) / 2


_CRITICAL: dict[int, int] = {}


def critical(m: int) -> int:
    """The smallest max(only a, only b) at which the exact two-sided McNemar p is below α."""
    if m not in _CRITICAL:
        k = next(
            (k for k in range((m + 1) // 2, m + 1) if stats.mcnemar_exact(k, m - k) < ALPHA), m + 1
        )
        _CRITICAL[m] = k
    return _CRITICAL[m]


def _mcnemar_rejects(d) -> np.ndarray:
    m, k = (d != 0).sum(axis=1), (d == 1).sum(axis=1)
    edge = np.array([critical(int(x)) for x in m])
    return np.maximum(k, m - k) >= edge


def peeking(release: Release, mu, sigma, reps, rng) -> float:
    """The exact McNemar test at α after every batch, stopping at the first p < α, under no
    difference: its error rate."""
    wrong = 0
    looks = release.design["looks"]
    for start in range(0, reps, CHUNK):
        size = min(CHUNK, reps - start)
        x = mu + rng.normal(0, sigma, (size, len(release.source)))
        p = expit(x)
        d = (rng.random(p.shape) < p).astype(int) - (rng.random(p.shape) < p).astype(int)
        m, k = np.cumsum(d != 0, axis=1), np.cumsum(d == 1, axis=1)
        hit = np.zeros(size, dtype=bool)
        for look in looks:
            mm, kk = m[:, look - 1], k[:, look - 1]
            edge = np.array([critical(int(v)) for v in mm])
            hit |= np.maximum(kk, mm - kk) >= edge
        wrong += int(hit.sum())
    return wrong / reps


def rate(hits: int, reps: int) -> str:
    p = hits / reps
    return f"{p:.4f} ± {math.sqrt(p * (1 - p) / reps):.4f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    reps = args.replications
    started, cpu = time.perf_counter(), time.process_time()
    mu, sigma, gamma = calibrate()
    _, _, psi1 = latent_moments(mu, sigma, gamma)
    coin_gamma = 2 * math.log(0.55 / 0.45)  # p_a = 0.55, p_b = 0.45 at x = 0
    coin_psi1 = 0.55 * 0.55 + 0.45 * 0.45
    releases = {
        "independent": (Release(psi1), mu, sigma, 0.0, gamma),
        "clustered": (Release(psi1), mu, sigma, CLUSTER_SHARE, gamma),
        "coin flips": (Release(coin_psi1), 0.0, 0.0, 0.0, coin_gamma),
    }
    print(
        f"# {reps:,} replications per row, seed {args.seed}; 341 tasks in the demo's 24 sources, "
        f"batches of {BATCH}, alpha {ALPHA}, a design difference of {DIFFERENCE} at its ψ, power "
        f"{POWER}, futility below {FUTILITY}; latent sd {sigma:.3f} (mean success "
        f"{TARGET_RATE}), γ = {gamma:.3f} for a 10-point difference (ψ = {psi1:.3f})"
    )
    print(
        f"{'release':<12} {'truth':<18} {'error or power':>16} {'exact (iid)':>11} "
        f"{'mean tasks':>10} {'fixed-n':>7} {'horizon':>7} {'futile':>7}"
    )
    rng = np.random.default_rng(args.seed)
    for name, (release, m, s, share, g) in releases.items():
        design = release.design
        null_exact = design["at_no_difference"]["decisions"]
        for truth, gam in (("no difference", 0.0), ("10-point difference", g)):
            decision, spent, _ = simulate(release, m, s, share, gam, reps, rng)
            hits = int((decision != 0).sum()) if gam == 0 else int((decision == 1).sum())
            exact = (
                null_exact["A better"] + null_exact["B better"]
                if gam == 0
                else design["at_difference"]["decisions"]["A better"]
            )
            print(
                f"{name:<12} {truth:<18} {rate(hits, reps):>16} {exact:>11.4f} "
                f"{spent.mean():>10.1f} {release.fixed:>7} {design['horizon']:>7} "
                f"{(decision == 0).mean():>7.3f}"
            )
    release, m, s, share, g = releases["clustered"]
    # drawn in the order the rows were added, so that each row keeps its random numbers when
    # rows are added after it; printed by table
    errors_rows, sources_rows = [], []

    def errors_row(truth: str, rule: str, gam: float, attempts: int | None) -> str:
        if attempts is None:
            decision, spent, pool = simulate(release, m, s, share, gam, reps, rng, errors=ERRORS)
            trials, left_out = 2 * spent, np.zeros(reps)
        else:
            run = simulate_reruns(
                release, m, s, share, gam, reps, rng, errors=ERRORS, attempts=attempts
            )
            decision, spent, pool = run["decision"], run["tasks"], run["pool"]
            trials, left_out = run["trials"], run["excluded"]
        hits = int((decision != 0).sum()) if gam == 0 else int((decision == 1).sum())
        return (
            f"{truth + ', ' + rule:<58} {rate(hits, reps):>16} "
            f"{rate(int(pool.sum()), reps):>16} {spent.mean():>10.1f} "
            f"{trials.mean():>7.1f} {left_out.mean():>8.2f}"
        )

    truths = (("no difference", 0.0), ("10-point difference", g))
    for truth, gam in truths:
        errors_rows.append(errors_row(truth, "bounds, never rerun", gam, None))
    for label, kwargs in (
        ("sources differ, recentred: no difference over the pool", ("recentred", 1.0)),
        ("sources differ, drawn: a superpopulation null", ("drawn", 1.0)),
    ):
        decision, spent, pool = simulate(release, m, s, share, 0.0, reps, rng, sources=kwargs)
        sources_rows.append(
            f"{label:<58} {rate(int((decision != 0).sum()), reps):>16} "
            f"{rate(int(pool.sum()), reps):>16} {spent.mean():>10.1f}"
        )
    independent = releases["independent"][0]
    wrong = peeking(independent, mu, sigma, reps, rng)
    for attempts in (1, 2, 3):
        rule = f"rerun then exclude, {attempts} attempt{'s' if attempts > 1 else ''}"
        for truth, gam in truths:
            errors_rows.append(errors_row(truth, rule, gam, attempts))
    print()
    print(
        f"{'clustered release, 5% of attempts an infrastructure error':<58} "
        f"{'error or power':>16} {'McNemar, 341':>16} {'mean tasks':>10} {'trials':>7} "
        f"{'left out':>8}"
    )
    print("\n".join(errors_rows))
    print()
    print(
        f"{'clustered release':<58} {'error or power':>16} {'McNemar, 341':>16} {'mean tasks':>10}"
    )
    print("\n".join(sources_rows))
    print(
        f"peeking: the exact McNemar test at alpha {ALPHA} after every batch, no difference: "
        f"error {rate(round(wrong * reps), reps)}"
    )
    print(f"# CPU {time.process_time() - cpu:.1f} s, wall {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
