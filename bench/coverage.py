"""Coverage, size and power of the report's statistics over simulated releases (the yardstick
of issue 29: releases drawn from a known model, so the truth is known).

Each setting draws REPLICATES releases of 24 sources, with the demo's source sizes (341 tasks)
or a skewed profile (37 down to 3 tasks, 341 in all), per-source random effects on the logit
scale tuned to a design effect, and true rates 0.45-0.85. Printed side by side:

  rates        today's clustered interval (Miller eq. 4, mean ± z·SE, clipped) against the new
               one (CR2, Wilson on the effective n, t on Bell-McCaffrey df): coverage of the
               true rate at nominal 95% and mean width;
  differences  the same for a paired difference a - b (today: mean ± z·SE_CR0; new: mean ±
               t·SE_CR2), in a two-model release whose discordant tasks cluster by source;
  size         under the null (the two models exchangeable within each source), how often
               today's exact McNemar test over tasks and the new sign-flip test over sources
               reject at 0.05, at paired design effects 1.5 to 3.5;
  power        the planner's promised power (afbench.plans.power) against the power of the test the
               report applies, simulated here with independent code (numpy draws from the
               planning model, the report's own test functions deciding), at a baseline rate
               (tasks as the unit), two clustered settings, and a 9-configuration family (Holm
               over 36 pairs), and a setting beyond the cap, where the planner must say so.

Usage: python bench/coverage.py [--replicates N] [--seed S] [--output FILE]
(`make bench` does not run it: ~4 minutes on 2 cores; bench/results.md records its figures.)"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import optimize
from scipy.special import expit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from afbench.core import stats  # noqa: E402
from afbench.plans import power as planner  # noqa: E402

DEMO = [13, 12, 12, 11, 15, 9, 16, 17, 11, 11, 15, 14, 12, 13, 18, 14, 9, 16, 20, 19, 13, 17]
DEMO += [17, 17]


def skewed() -> list[int]:
    weights = 0.9 ** np.arange(24)
    sizes = np.maximum(2, np.round(weights / weights.sum() * 341)).astype(int)
    sizes[0] += 341 - sizes.sum()
    return sizes.tolist()


PROFILES = {"demo sizes": DEMO, "skewed sizes": skewed()}
Z = 1.959963984540054
NODES, WEIGHTS = np.polynomial.hermite_e.hermegauss(80)
WEIGHTS = WEIGHTS / WEIGHTS.sum()


def logit_normal(mean: float, icc: float) -> tuple[float, float]:
    """(mu, tau) with E[expit(mu + tau Z)] = mean and Var = icc·mean(1-mean), by quadrature."""

    def moments(mu: float, tau: float) -> tuple[float, float]:
        p = expit(mu + tau * NODES)
        m = float(WEIGHTS @ p)
        return m, float(WEIGHTS @ (p * p)) - m * m

    def mu_for(tau: float) -> float:
        return optimize.brentq(lambda mu: moments(mu, tau)[0] - mean, -80, 80)

    if icc <= 0:
        return mu_for(0.0), 0.0
    target = icc * mean * (1 - mean)
    tau = optimize.brentq(lambda t: moments(mu_for(t), t)[1] - target, 1e-6, 10)
    return mu_for(tau), tau


def icc_for(design_effect: float, sizes: list[int]) -> float:
    """The intra-source correlation giving this design effect: 1 + (sum n²/n - 1)·icc."""
    n = np.asarray(sizes)
    return (design_effect - 1) / ((n * n).sum() / n.sum() - 1)


def bm_df(sizes: list[int]) -> float:
    return stats.bell_mccaffrey_df(sizes)


def rate_intervals(passes: np.ndarray, sizes: list[int]):
    """Today's interval (vectorised) and the new one (afbench.core.stats itself, per release)."""
    n_s = np.asarray(sizes)
    n = n_s.sum()
    mean = passes.sum(1) / n
    residual = passes - n_s * mean[:, None]
    v0 = (residual**2).sum(1) / n**2
    today = (np.clip(mean - Z * np.sqrt(v0), 0, 1), np.clip(mean + Z * np.sqrt(v0), 0, 1))
    new = [stats.clustered_rate_from_counts(row, sizes) for row in passes.tolist()]
    return today, (np.array([x["low"] for x in new]), np.array([x["high"] for x in new]))


def difference_intervals(won: np.ndarray, lost: np.ndarray, sizes: list[int]):
    n_s = np.asarray(sizes)
    n = n_s.sum()
    sums = won - lost
    mean = sums.sum(1) / n
    residual = sums - n_s * mean[:, None]
    se0 = np.sqrt((residual**2).sum(1)) / n
    new = [
        stats.clustered_difference_from_counts(a, b, sizes)
        for a, b in zip(won.tolist(), lost.tolist(), strict=True)
    ]
    return (mean - Z * se0, mean + Z * se0), (
        np.array([x["low"] for x in new]),
        np.array([x["high"] for x in new]),
    )


def covered(interval, truth: float) -> tuple[float, float]:
    low, high = interval
    return float(np.mean((low <= truth) & (truth <= high))), float(np.mean(high - low))


def rates(rng, replicates: int) -> list[tuple]:
    rows = []
    for profile, sizes in PROFILES.items():
        for effect in (1.5, 2.0, 3.0):
            for rate in (0.45, 0.65, 0.85):
                mu, tau = logit_normal(rate, icc_for(effect, sizes))
                p = expit(mu + tau * rng.standard_normal((replicates, len(sizes))))
                passes = rng.binomial(np.asarray(sizes), p)
                today, new = rate_intervals(passes, sizes)
                rows.append((profile, effect, rate, covered(today, rate), covered(new, rate)))
    return rows


def paired_draws(rng, sizes, replicates, psi, pi, icc_d, icc_w):
    """Per-source discordance and direction, logit-normal (the planner assumes Beta): each
    source's tasks only a solved and only b solved."""
    shape = (replicates, len(sizes))
    mu, tau = logit_normal(psi, icc_d)
    psi_s = expit(mu + tau * rng.standard_normal(shape))
    mu, tau = logit_normal(pi, icc_w)
    pi_s = expit(mu + tau * rng.standard_normal(shape))
    discordant = rng.binomial(np.asarray(sizes), psi_s)
    won = rng.binomial(discordant, pi_s)
    return won, discordant - won


def paired_icc(effect: float, sizes: list[int], psi: float, delta: float) -> float:
    """The direction's intra-source correlation giving a paired design effect (with no
    clustering of the discordance itself): Cov(d_i, d_j | source) = psi²·Var(2π_s - 1) =
    4 psi² icc π(1-π), Var(d) = psi - delta²."""
    pi = (1 + delta / psi) / 2
    n = np.asarray(sizes)
    m = (n * n).sum() / n.sum()
    cov = (effect - 1) / (m - 1) * (psi - delta * delta)
    return cov / (4 * psi * psi * pi * (1 - pi))


def differences(rng, replicates: int) -> list[tuple]:
    rows = []
    psi = 0.3
    for profile, sizes in PROFILES.items():
        for effect in (1.5, 2.0, 3.0):
            for delta in (0.0, 0.06, 0.15):
                icc_w = paired_icc(effect, sizes, psi, delta)
                won, lost = paired_draws(
                    rng, sizes, replicates, psi, (1 + delta / psi) / 2, 0.0, icc_w
                )
                today, new = difference_intervals(won, lost, sizes)
                rows.append((profile, effect, delta, covered(today, delta), covered(new, delta)))
    return rows


def null_size(rng, replicates: int) -> list[tuple]:
    """Size of both tests under the null, from the same draws: only_a and only_b per source."""
    rows = []
    psi = 0.25
    for profile, sizes in PROFILES.items():
        for effect in (1.5, 2.0, 3.0, 3.5):
            icc_w = paired_icc(effect, sizes, psi, 0.0)
            shape = (replicates, len(sizes))
            mu, tau = logit_normal(0.5, icc_w)
            pi_s = expit(mu + tau * rng.standard_normal(shape))
            discordant = rng.binomial(np.asarray(sizes), psi)
            won = rng.binomial(discordant, pi_s)
            lost = discordant - won
            only_a, only_b = won.sum(1).tolist(), lost.sum(1).tolist()
            p_exact = stats.mcnemar_exact_many(list(zip(only_a, only_b, strict=True)))
            sums = (won - lost).tolist()
            flip = sum(stats.sign_flip_p(row) < 0.05 for row in sums) / replicates
            exact = sum(p < 0.05 for p in p_exact) / replicates
            rows.append((profile, effect, exact, flip))
    return rows


def simulated_power(
    rng, sizes, tasks, delta, psi, icc_d, icc_w, level, replicates, family=None
) -> float:
    """The report's test at the planned allocation, data drawn with numpy from the planning
    model (Beta per source, as the planner states it), decided by afbench.core.stats.sign_flip_p;
    with a family, Holm over it by afbench.core.stats.holm, as the report adjusts."""
    allocation = np.asarray(planner.allocate(sizes, tasks))
    shape = (replicates, len(sizes))

    def beta(mean, icc):
        if icc <= 0:
            return np.full(shape, mean)
        total = (1 - icc) / icc
        return rng.beta(mean * total, (1 - mean) * total, size=shape)

    psi_s, pi_s = beta(psi, icc_d), beta((1 + delta / psi) / 2, icc_w)
    discordant = rng.binomial(allocation, psi_s)
    won = rng.binomial(discordant, pi_s)
    sums = (2 * won - discordant).tolist()
    if family is None:
        return sum(stats.sign_flip_p(row) < level for row in sums) / replicates
    return family(sums)


def exact_power_by_simulation(rng, tasks, p10, p01, level, replicates) -> float:
    counts = rng.multinomial(tasks, [p10, p01, 1 - p10 - p01], size=replicates)
    p = stats.mcnemar_exact_many([(int(a), int(b)) for a, b, _ in counts])
    return sum(x < level for x in p) / replicates


def nine_configurations(rng, sizes, tasks, delta, psi, icc_d, icc_w, replicates) -> float:
    """A family of 9 configurations: the planned pair (A, B) differs by delta; seven more sit
    between them (each differs from A and B by delta/2 in expectation, discordant with each at
    the same rate). Holm over all 36 pairs by afbench.core.stats.holm; the share of releases in
    which the pair (A, B) is declared different."""
    allocation = np.asarray(planner.allocate(sizes, tasks))
    found = 0
    for _ in range(replicates):
        # each configuration's per-task outcome on a shared latent: configurations are
        # successive small shifts, so neighbours are concordant and A, B differ most
        k = len(allocation)
        shares = np.full(k, psi)
        if icc_d > 0:
            total = (1 - icc_d) / icc_d
            shares = rng.beta(psi * total, (1 - psi) * total, size=k)
        direction = np.full(k, (1 + delta / psi) / 2)
        if icc_w > 0:
            total = (1 - icc_w) / icc_w
            mean = (1 + delta / psi) / 2
            direction = rng.beta(mean * total, (1 - mean) * total, size=k)
        # per task: discordant between A and B with prob psi_s; if discordant, A wins w.p.
        # pi_s; the middle configurations agree with A or B at random on discordant tasks and
        # with both elsewhere
        outcomes = []
        for size_s, psi_s, pi_s in zip(allocation, shares, direction, strict=True):
            disc = rng.random(size_s) < psi_s
            a_wins = rng.random(size_s) < pi_s
            a = np.where(disc, a_wins, rng.random(size_s) < 0.5)
            b = np.where(disc, ~a_wins, a)
            middle = [np.where(disc, rng.random(size_s) < 0.5, a) for _ in range(7)]
            outcomes.append(np.array([a, b, *middle]))
        table = np.concatenate(outcomes, axis=1)
        bounds = np.cumsum([0, *allocation])
        pairs, ps = [], []
        for i in range(9):
            for j in range(i + 1, 9):
                d = table[i].astype(int) - table[j].astype(int)
                sums = [int(d[bounds[s] : bounds[s + 1]].sum()) for s in range(k)]
                pairs.append((i, j))
                ps.append(stats.sign_flip_p(sums))
        adjusted = stats.holm(ps)
        found += adjusted[pairs.index((0, 1))] < 0.05
    return found / replicates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started, cpu = time.perf_counter(), time.process_time()
    out: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        out.append(text)

    r = args.replicates
    say(f"Simulated releases: {r} per setting, seed {args.seed}; 24 sources; nominal 95%.")
    say(f"Source sizes: demo {DEMO}; skewed {PROFILES['skewed sizes']}.")
    say(f"Bell-McCaffrey df: demo {bm_df(DEMO):.2f}, skewed {bm_df(PROFILES['skewed sizes']):.2f}")
    say()
    say("### Rates: coverage (mean width)")
    say()
    say("| sources | design effect | rate | today: CR0, z | new: CR2 Wilson, t(BM-IK) |")
    say("|---|---:|---:|---:|---:|")
    rate_rows = rates(rng, r)
    for profile, effect, rate, today, new in rate_rows:
        say(
            f"| {profile} | {effect:g} | {rate:g} | {today[0]:.3f} ({today[1]:.3f}) | "
            f"{new[0]:.3f} ({new[1]:.3f}) |"
        )
    say()
    say("### Paired differences (discordance 0.3): coverage (mean width)")
    say()
    say("| sources | paired design effect | difference | today: CR0, z | new: CR2, t(BM-IK) |")
    say("|---|---:|---:|---:|---:|")
    diff_rows = differences(rng, r)
    for profile, effect, delta, today, new in diff_rows:
        say(
            f"| {profile} | {effect:g} | {delta:g} | {today[0]:.3f} ({today[1]:.3f}) | "
            f"{new[0]:.3f} ({new[1]:.3f}) |"
        )
    every = [new[0] for *_, new in rate_rows + diff_rows]
    old = [today[0] for *_, today, _ in rate_rows + diff_rows]
    say()
    say(
        f"Over all {len(every)} settings: new coverage min {min(every):.3f}, mean "
        f"{np.mean(every):.3f}; today min {min(old):.3f}, mean {np.mean(old):.3f}. "
        f"Width new / today: {np.mean([n[1] / t[1] for *_, t, n in rate_rows + diff_rows]):.3f}."
    )
    say()
    say("### Size under the null (discordance 0.25; rejections at 0.05)")
    say()
    say(
        "| sources | paired design effect | today: exact McNemar over tasks "
        "| new: sign-flip over sources |"
    )
    say("|---|---:|---:|---:|")
    for profile, effect, exact, flip in null_size(rng, r):
        say(f"| {profile} | {effect:g} | {exact:.3f} | {flip:.3f} |")
    say()
    say("### Power: the planner's promise against the test the report applies")
    say()
    say("| setting | planner | tasks | promised | simulated | difference |")
    say("|---|---|---:|---:|---:|---:|")
    power_rows(rng, max(r, 4000), say)
    say()
    say(
        f"Run time: {time.perf_counter() - started:.0f} s wall, "
        f"{time.process_time() - cpu:.0f} s CPU."
    )
    if args.output:
        args.output.write_text("\n".join(out) + "\n")


def power_rows(rng, replicates: int, say) -> None:
    demo, sizes = DEMO, DEMO
    # 1. baseline rate, tasks as the unit: exact enumeration vs simulated McNemar tables
    plan = planner.plan(difference=0.1, tasks=None, alpha=0.05, power=0.8, baseline_rate=0.5)
    n, promised = plan["tasks_as_unit"]["tasks"], plan["tasks_as_unit"]["power"]
    p10, p01 = 0.6 * 0.5, 0.5 * 0.4
    found = exact_power_by_simulation(rng, n, p10, p01, 0.05, replicates)
    say(
        f"| baseline 0.5, δ 0.1, 2 configurations | exact McNemar | {n} | {promised:.3f} "
        f"| {found:.3f} | {found - promised:+.3f} |"
    )
    # 2-4. clustered: models whose discordance and direction cluster by source
    for label, psi, delta, icc_d, icc_w, configurations in (
        ("clustered, ψ 0.25, δ 0.1, ρ_d 0.05, ρ_w 0.1", 0.25, 0.1, 0.05, 0.1, 2),
        ("clustered, ψ 0.2, δ 0.08, ρ_d 0.1, ρ_w 0.2", 0.2, 0.08, 0.1, 0.2, 2),
        ("clustered, ψ 0.25, δ 0.12, ρ_w 0.1, 9 configurations", 0.25, 0.12, 0.0, 0.1, 9),
    ):
        models = pilot(demo, psi, icc_d, icc_w)
        plan = planner.plan(
            difference=delta,
            tasks=None,
            alpha=0.05,
            power=0.8,
            models=models,
            configurations=configurations,
        )
        sources = plan["sources_as_unit"]
        n, promised = sources["tasks"], sources["power"]
        if configurations == 2:
            found = simulated_power(rng, sizes, n, delta, psi, icc_d, icc_w, 0.05, replicates)
        else:
            found = nine_configurations(
                rng, sizes, n, delta, psi, icc_d, icc_w, min(replicates, 1500)
            )
        say(
            f"| {label} | sign-flip, Holm over {plan['family']} | {n} | {promised:.3f} "
            f"| {found:.3f} | {found - promised:+.3f} |"
        )
    # beyond the cap: strongly clustered direction, a small difference, 0.95 over 36 pairs
    models = pilot(demo, 0.3, 0.0, 0.5)
    plan = planner.plan(
        difference=0.05, tasks=None, alpha=0.05, power=0.95, models=models, configurations=9
    )
    sources = plan["sources_as_unit"]
    say(
        "| beyond the cap: ψ 0.3, δ 0.05, ρ_w 0.5, 9 configurations, power 0.95 | sign-flip "
        f"| — | reachable: {sources['reachable']} | at {sources['cap']} tasks "
        f"{sources['power_at_cap']:.3f} | |"
    )
    say()
    say(f"The planner's line beyond the cap: {plan['line'][:400]}…")


def pilot(sizes: list[int], psi: float, icc_d: float, icc_w: float) -> dict:
    """A planner's `observed` input with these parameters set (not estimated), so the promise
    is checked against the model it states; afbench.plans.power.anova_icc's estimates are tested in
    tests/plans/test_power.py."""
    return {
        "a": "A",
        "b": "B",
        "source_condition": "source-present",
        "tasks": sum(sizes),
        "only_a": 0,
        "only_b": 0,
        "discordance": psi,
        "design_effect": None,
        "sources": {f"s{i}": {"tasks": n, "only_a": 0, "only_b": 0} for i, n in enumerate(sizes)},
        "discordance_icc": icc_d,
        "direction_icc": icc_w,
    }


if __name__ == "__main__":
    main()
