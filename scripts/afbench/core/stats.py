"""Statistics for binary per-task outcomes: intervals (Wilson, clustered over sources), exact
paired tests (over tasks, and a sign-flip randomisation over sources), letter displays, power
and stratified selection. Pure functions on numbers, lists and bitsets, standard library only:
job processes import this module and must stay lean (no pandas, no numpy, no scipy). The t
quantile of a clustered interval and the exact binomial tail of McNemar's test are computed
here, not taken from scipy (special.stdtrit, stats.binom.cdf / binomtest), for two measured
reasons: scipy's floats differ from the exact ones in the last digits (the demo's analysis
would change: 8 of its 36 p-values and its t quantile), and importing scipy.special costs a
job ~0.4 s of CPU (scipy.stats ~0.85 s) where the whole report job takes ~0.15 s, of which these
functions ~6 ms. The normal quantile is the standard library's (statistics.NormalDist)."""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from fractions import Fraction
from itertools import groupby, repeat
from operator import itemgetter, sub
from statistics import NormalDist


def z_for(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    return NormalDist().inv_cdf((1 + confidence) / 2)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (well behaved at 0/n and n/n)."""
    if n <= 0:
        raise ValueError("n must be positive")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n ({n}), not {successes}")
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
# math.exp(y) is exactly 0.0 for y < -1075·ln 2 = -745.13 (below half the smallest subnormal);
# binomial terms this many nats below the largest one therefore add exactly nothing to the tail
_NEGLIGIBLE_NATS = 760.0
# terms this far below the largest are ~1e-22 of it and of the sum: they are skipped unless
# their sum could change the rounded sum (see `_log_space_p`)
_SIGNIFICANT_NATS = 50.0
_LOG2 = math.log(2)
# _LGAMMA[j] == math.lgamma(j) for j >= 1 (index 0 unused), grown on demand: one lgamma call per
# integer ever needed, instead of two per binomial term per test (~32 bytes an entry: 1.1 MB
# when some pair of models disagrees on 34,100 tasks)
_LGAMMA: list[float] = [math.inf]


def _lgamma_table(largest: int) -> list[float]:
    if len(_LGAMMA) <= largest:
        _LGAMMA.extend(map(math.lgamma, range(len(_LGAMMA), largest + 1)))
    return _LGAMMA


def _binomial_prefix_sums(n: int, k: int) -> list[int]:
    """[sum of C(n, i) for i <= j, for j in 0..k], exactly, by C(n, i+1) = C(n, i)(n-i)/(i+1)."""
    sums, term = [1], 1
    for i in range(k):
        term = term * (n - i) // (i + 1)
        sums.append(sums[-1] + term)
    return sums


def _exact_p(n: int, tail: int) -> float:
    # int / int is correctly rounded, as float(Fraction(...)) is: the same float as the old
    # float(min(Fraction(1), Fraction(2 * tail, 2**n)))
    return 1.0 if 2 * tail >= 1 << n else 2 * tail / (1 << n)


def _log_space_p(
    n: int, k: int, lgamma: list[float], significant_nats: float = _SIGNIFICANT_NATS
) -> float:
    """The tail in log space with the very float operations of the term-by-term sum
    (log_norm - lgamma(i+1) - lgamma(n-i+1), exp(x - top), fsum over i <= k), over fewer terms.

    The mathematical terms grow with i up to k <= n/2, by a factor (n-i)/(i+1) a step, so
    below the index found by bisection for a threshold, every term is below it too (apart from
    lgamma's rounding, far below a nat). Terms 760 nats below the largest are exactly 0.0 after
    exp and none is the maximum: dropping them changes nothing. fsum is correctly rounded in any
    order (the terms go largest first, which keeps it fast), so terms more than
    `significant_nats` below the largest are dropped as well when a bound on their sum (their
    geometric decay) provably cannot move the kept sum across a rounding boundary, which the
    kept sum's exact residual tells; when it could, they are summed after all."""
    log_norm = lgamma[n + 1] - n * _LOG2

    def log_term(i: int) -> float:
        return log_norm - lgamma[i + 1] - lgamma[n - i + 1]

    def lowest_at_least(threshold: float) -> int:
        if log_term(0) >= threshold:
            return 0
        below, lo = 0, k  # invariant: log_term(below) < threshold <= log_term(lo)
        while lo - below > 1:
            mid = (below + lo) // 2
            if log_term(mid) < threshold:
                below = mid
            else:
                lo = mid
        return lo

    def terms_from(lo: int) -> list[float]:
        # x for i = k, k-1, ..., lo: lgamma(i + 1) and lgamma(n - i + 1) as two table slices
        return list(
            map(
                sub,
                map(sub, repeat(log_norm), lgamma[k + 1 : lo : -1]),
                lgamma[n - k + 1 : n - lo + 2],
            )
        )

    largest = log_term(k)
    if largest < -_NEGLIGIBLE_NATS:
        return 0.0  # exp(top) == 0.0, so tail == 0.0 * fsum(...) == 0.0: p underflows
    lo = lowest_at_least(largest - significant_nats)
    logs = terms_from(lo)
    top = max(logs)
    terms = list(map(math.exp, map(sub, logs, repeat(top))))
    total = math.fsum(terms)
    if lo > 0:
        # the dropped terms i < lo: at most exp(x_{lo-1} - top) and falling by e^-rho a step,
        # rho = log((n - lo + 2) / (lo - 1)); twice that sum bounds the computed floats
        rho = math.log((n - lo + 2) / (lo - 1)) if lo > 1 else math.inf
        dropped = 2 * math.exp(log_term(lo - 1) - top) / -math.expm1(-rho)
        residual = math.fsum([*terms, -total])  # kept sum - total, rounded
        gap = math.ulp(total)  # to the next float up; sums below total + gap/2 round to total
        if residual + dropped + gap * 2**-40 >= gap / 2:
            logs = terms_from(lowest_at_least(largest - _NEGLIGIBLE_NATS))
            total = math.fsum(map(math.exp, map(sub, logs, repeat(top))))
    tail = math.exp(top) * total
    return min(1.0, 2 * tail)


def _discordance(only_a: int, only_b: int) -> tuple[int, int]:
    if only_a < 0 or only_b < 0:
        raise ValueError("discordant counts must be non-negative")
    return only_a + only_b, min(only_a, only_b)


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar test: a binomial test of the discordant pairs at 1/2,
    p = min(1, 2·sum_{i<=k} C(n, i) / 2^n) with n = only_a + only_b, k = min(only_a, only_b).

    Exact integer arithmetic up to 1,000 discordant pairs; beyond, the same binomial tail summed
    in log space (relative error ~1e-12), since big-integer sums grow quadratically. The same
    floats as the term-by-term sums, faster: the exact branch steps C(n, i+1) = C(n, i)(n-i)/(i+1)
    instead of calling math.comb per term, the log branch runs no Python code per term and skips
    the terms that provably cannot change the result (see `_log_space_p`)."""
    return mcnemar_exact_many([(only_a, only_b)])[0]


def mcnemar_exact_many(pairs: Iterable[tuple[int, int]]) -> list[float]:
    """`mcnemar_exact` of each (only_a, only_b), bit for bit, in the input order: each distinct
    (n, k) is computed once, each n <= 1,000 shares one row of binomial prefix sums, and the
    lgamma table is built once for the largest n."""
    keys = [_discordance(only_a, only_b) for only_a, only_b in pairs]
    p: dict[tuple[int, int], float] = {}
    lgamma = _lgamma_table(max((n for n, _ in keys), default=0) + 1)
    for n, group in groupby(sorted(set(keys)), key=itemgetter(0)):
        ks = [k for _, k in group]
        if n == 0:
            p[0, 0] = 1.0
        elif n <= EXACT_INTEGER_LIMIT:
            tails = _binomial_prefix_sums(n, ks[-1])
            for k in ks:
                p[n, k] = _exact_p(n, tails[k])
        else:
            for k in ks:
                p[n, k] = _log_space_p(n, k, lgamma)
    return [p[key] for key in keys]


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


SIGN_FLIP_METHOD = (
    "sign-flip randomisation test over sources (two-sided): the statistic is the sum over "
    "sources of t_c = only_a_c - only_b_c (the mean paired difference times n); its null "
    "distribution flips each source's sign independently (a and b exchangeable within a "
    "source), and p = #{patterns with |sum ±t_c| >= |sum t_c|} / 2^G counts all 2^G patterns "
    "exactly through their generating function prod_c (1 + x^|t_c|): no Monte Carlo, so no "
    "draws, seed or Monte Carlo error"
)


def sign_flip_p(sums: Sequence[int]) -> float:
    """Exact two-sided p of the sign-flip randomisation test of per-cluster integer sums t_c
    (SIGN_FLIP_METHOD): the share of the 2^G sign patterns e with |sum e_c·t_c| >= |sum t_c|.

    With A = sum |t_c| and K the sum of the |t_c| given a + sign, the statistic is 2K - A, so
    a pattern is as extreme as the observed T = |sum t_c| when K <= (A - T)/2 or K >= (A +
    T)/2 (disjoint for T > 0, and mirror images: K <-> A - K). The counts of K are the
    coefficients of prod_c (1 + x^|t_c|), each at most 2^G: held in one integer with G + 1
    bits a coefficient, they never carry, and the sum of the first (A - T)/2 + 1 of them (at
    most 2^G < 2^(G+1) - 1) is that integer's low part modulo 2^(G+1) - 1. So p = 2·that sum
    / 2^G exactly, in O(G·A) bit operations, for any G."""
    if any(not isinstance(t, int) for t in sums):
        raise ValueError("per-cluster sums must be integers")
    observed = abs(sum(sums))
    if observed == 0:
        return 1.0
    clusters = len(sums)
    width = clusters + 1
    generating = 1
    for t in sums:
        generating += generating << (width * abs(t))
    lowest = (sum(map(abs, sums)) - observed) // 2  # A - T is even: sum |t| = sum t mod 2
    low = generating & ((1 << (width * (lowest + 1))) - 1)
    count = low % ((1 << width) - 1)
    return min(1.0, count / (1 << (clusters - 1)))


def sign_flip_smallest_p(sources: int, comparisons: int = 1) -> float:
    """The smallest p the sign-flip test over `sources` non-empty sources can give, Holm-adjusted
    over `comparisons`: every source's sum of one sign makes only it and its mirror as extreme,
    2 of the 2^G patterns, and Holm's first step multiplies the smallest p by the family's size.
    At or above alpha no pair can be declared different, whatever the data."""
    if sources < 1:
        return 1.0
    return min(1.0, comparisons * 2.0 ** (1 - sources))


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


CR2_NOTE = (
    "CR2 cluster-robust variance over sources (Bell & McCaffrey 2002; for the mean, "
    "V = sum_c (sum_{i in c} (x_i - mean))^2 / (1 - n_c/n) / n^2) with a t quantile on the "
    "Bell-McCaffrey degrees of freedom under a working model of tasks correlated within a "
    "source by the ANOVA estimate of their intra-source correlation (Imbens & Kolesar 2016): "
    "G - 1 for independent tasks in sources of equal size, fewer when sizes differ and "
    "sources cohere"
)
CLUSTERED_RATE_METHOD = (
    "Wilson score interval on the effective number of tasks n_eff = p(1 - p) / SE_CR2^2 (at "
    "most n; Kish's effective sample size, as Korn & Graubard 1998 use it), with the t "
    "quantile in place of z; " + CR2_NOTE + ". It follows the skew of a rate near 0 or 1"
)
CLUSTERED_DIFFERENCE_METHOD = (
    "paired difference a - b per task; mean ± t·SE_CR2, clipped to [-1, 1]; " + CR2_NOTE
)
CR0_NOTE = (
    "se_cr0 is Miller (2024, eq. 4), sqrt(sum_c (sum_{i in c} (x_i - mean))^2) / n, without "
    "the small-sample correction; design_effect = (se_cr0 / se_iid)^2"
)


def _log_beta_half(b: float) -> float:
    """log B(b, 1/2). Past b = 16 the difference lgamma(b) - lgamma(b + 1/2) of two growing
    numbers would lose digits; there the Stirling series of the ratio, log Γ(b + 1/2) - log Γ(b)
    = ½ log b - 1/(8b) + 1/(192b³) - 1/(640b⁵) + 17/(14336b⁷) - 31/(18432b⁹) + O(b⁻¹¹), is exact
    to double precision."""
    if b <= 16:
        return math.lgamma(b) + math.lgamma(0.5) - math.lgamma(b + 0.5)
    u = 1 / b
    u2 = u * u
    series = u * (-1 / 8 + u2 * (1 / 192 + u2 * (-1 / 640 + u2 * (17 / 14336 - u2 * 31 / 18432))))
    return math.lgamma(0.5) - 0.5 * math.log(b) - series


def _incomplete_beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularised incomplete beta function I_x(a, b) (DLMF
    8.17.22), by the modified Lentz algorithm; it converges fast for x < (a + 1)/(a + b + 2)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 10_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= d * c
        if abs(d * c - 1) < 1e-16:
            return fraction
    raise ArithmeticError(f"the incomplete beta fraction did not converge (a={a}, b={b}, x={x})")


def _t_two_sided_tail(t: float, df: float) -> float:
    """P(|T| > t) for T ~ Student's t on df degrees of freedom, t >= 0: I_x(df/2, 1/2) with
    x = df/(df + t²) (DLMF 8.17.2 and the symmetry I_x(a, b) = 1 - I_{1-x}(b, a))."""
    a = df / 2
    # log x and log(1 - x) from t itself: 1 - x = t²/(df + t²) keeps its digits when t is small
    log_x = -math.log1p(t * t / df)
    log_rest = 2 * math.log(t) - math.log(df + t * t) if t > 0 else -math.inf
    front = math.exp(a * log_x + 0.5 * log_rest - _log_beta_half(a)) if t > 0 else 0.0
    x = df / (df + t * t)
    if x < (a + 1) / (a + 2.5):
        return front * _incomplete_beta_fraction(a, 0.5, x) / a
    return 1 - front * _incomplete_beta_fraction(0.5, a, t * t / (df + t * t)) / 0.5


def _t_quantile_expansion(z: float, df: float) -> float:
    """The t quantile from the normal one, z, as a series in 1/df (Abramowitz & Stegun 26.7.5;
    Fisher & Cornish 1960): past df = 10⁴ the first omitted term is below 10⁻¹⁸ for any
    confidence up to 1 - 10⁻⁹."""
    z2 = z * z
    g1 = (z2 + 1) * z / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
    g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160
    return z + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df


def t_quantile(confidence: float, df: float) -> float:
    """The two-sided t quantile t_{df, (1 + confidence)/2}: the t with P(|T| <= t) =
    confidence. Past df = 10⁴ the Cornish-Fisher series; below, safeguarded Newton steps on the
    tail P(|T| > t) (its derivative is -2 times the density) from that series, inside a bracket
    that bisection keeps. Newton converges quadratically, so a step below 10⁻⁹ of t leaves an
    error near the square of it, beyond double precision: two or three evaluations of the tail
    where a start from the normal quantile took a dozen. Within 1e-12 of the exact quantile
    (tests/core/test_stats.py solves for it in 40-digit arithmetic with mpmath, and compares with
    scipy.special.stdtrit)."""
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    if not df > 0:
        raise ValueError(f"degrees of freedom must be positive, not {df}")
    alpha = 1 - confidence
    # the lower tail alpha/2 keeps its digits where 1 - alpha/2 would round them away
    start = _t_quantile_expansion(-NormalDist().inv_cdf(alpha / 2), df)
    if df > 1e4:  # where the incomplete beta fraction converges slowly, the series is exact
        return start
    log_density_scale = -0.5 * math.log(df) - _log_beta_half(df / 2)
    low, high = 0.0, math.inf
    t = start if math.isfinite(start) and start > 0 else 1.0
    for _ in range(400):
        excess = _t_two_sided_tail(t, df) - alpha
        if excess > 0:
            low = t
        else:
            high = t
        density = math.exp(log_density_scale - (df + 1) / 2 * math.log1p(t * t / df))
        step = excess / (2 * density)
        following = t + step
        if not low < following < high:  # Newton left the bracket: bisect, or widen it
            following = (low + high) / 2 if math.isfinite(high) else 2 * t
        elif abs(step) <= 1e-9 * t:
            return following
        if abs(following - t) <= 4e-16 * following or following in (low, high):
            return following
        t = following
    return t


def bell_mccaffrey_df(sizes: Sequence[int], correlation: float = 0.0) -> float | None:
    """Bell & McCaffrey (2002) degrees of freedom of the CR2 variance of a mean over clusters
    of these sizes, under a working model in which outcomes of one cluster correlate by
    `correlation` (Imbens & Kolesar 2016 take it estimated, which matters when the clusters'
    sizes differ; 0: independent outcomes, the original). The CR2 estimator of the mean is
    y'GG'y, so df = tr(M)^2 / tr(M^2) with M = G'ΩG, Ω = (1 - ρ)I + ρ·sum_b 1_b 1_b'. With
    p_c = n_c / n and v_c = p_c / sqrt(1 - p_c), n·G'G = D - vv' (D = diag(p_c / (1 - p_c)))
    and n·G'1_b1_b'G has entries n·v_c·v_d·(δ_cd - p_c - p_d + sum_b p_b^2) (G'1_b =
    v_c(δ_bc - p_b)): a G x G matrix. Equal sizes give G - 1 at ρ = 0. None with fewer than
    two non-empty clusters."""
    if not 0 <= correlation < 1:
        raise ValueError(f"the working correlation must be in [0, 1), not {correlation}")
    traces = _bell_mccaffrey_traces(tuple(sorted(size for size in sizes if size > 0)))
    if traces is None:
        return None
    trace_a, trace_b, square_a, cross, square_b = traces
    rho = correlation
    # M = (1 - ρ)A + ρB with A = n·G'G and B = n·G'(sum_b 1_b 1_b')G, both positive
    # semi-definite, so tr(AB) >= 0 and the three terms of tr(M^2) never cancel
    trace = (1 - rho) * trace_a + rho * trace_b
    square = (1 - rho) ** 2 * square_a + 2 * rho * (1 - rho) * cross + rho**2 * square_b
    return trace * trace / square


@functools.lru_cache(maxsize=64)
def _bell_mccaffrey_traces(sizes: tuple[int, ...]) -> tuple[float, ...] | None:
    """tr(A), tr(B), tr(A^2), tr(AB), tr(B^2) of `bell_mccaffrey_df`'s two matrices for these
    (positive, sorted) cluster sizes, entry by entry in O(G^2) and summed correctly rounded
    (math.fsum), so the same for any order of the clusters. A report asks for them once per
    task set: every pair over the same tasks has the same sizes, only its correlation differs."""
    if len(sizes) < 2:
        return None
    n = sum(sizes)
    shares = [size / n for size in sizes]
    squares = math.fsum(p * p for p in shares)
    v = [p / math.sqrt(1 - p) for p in shares]
    diagonal_a, diagonal_b, entries_a, entries_ab, entries_b = [], [], [], [], []
    for c, (p_c, v_c) in enumerate(zip(shares, v, strict=True)):
        for d, (p_d, v_d) in enumerate(zip(shares, v, strict=True)):
            same = c == d
            a = (p_c / (1 - p_c) if same else 0.0) - v_c * v_d
            b = n * v_c * v_d * (((1.0 if same else 0.0) - p_c) - p_d + squares)
            if same:
                diagonal_a.append(a)
                diagonal_b.append(b)
            entries_a.append(a * a)
            entries_ab.append(a * b)
            entries_b.append(b * b)
    return (
        math.fsum(diagonal_a),
        math.fsum(diagonal_b),
        math.fsum(entries_a),
        math.fsum(entries_ab),
        math.fsum(entries_b),
    )


def intra_cluster_correlation(
    sums: Sequence[int], squares: Sequence[int], sizes: Sequence[int]
) -> float:
    """The ANOVA estimate of the intra-cluster correlation (Fleiss 1981; n0 for unequal
    sizes) from each cluster's sum, sum of squares and size, clipped to [0, 0.999]: 0 when it
    cannot be told (fewer than two non-empty clusters, no within-cluster variation, or
    singletons only)."""
    cells = [(t, q, m) for t, q, m in zip(sums, squares, sizes, strict=True) if m > 0]
    n, g = sum(m for *_, m in cells), len(cells)
    if g < 2 or n <= g:
        return 0.0
    total = sum(t for t, _, _ in cells)
    explained = math.fsum(t * t / m for t, _, m in cells)
    between = (explained - total * total / n) / (g - 1)
    within = (math.fsum(q for _, q, _ in cells) - explained) / (n - g)
    n0 = (n - math.fsum(m * m for *_, m in cells) / n) / (g - 1)
    denominator = between + (n0 - 1) * within
    if denominator <= 0:
        return 0.0
    return min(max((between - within) / denominator, 0.0), 0.999)


def _wilson_effective(mean: float, variance: float, n: int, t: float) -> tuple[float, float]:
    """The Wilson score interval with n replaced by n_eff = p(1-p)/variance (at most n; n when
    the variance is 0, as at 0/n and n/n) and z by t."""
    pq = mean * (1 - mean)
    effective = min(n, pq / variance) if variance > 0 else n
    denom = 1 + t * t / effective
    centre = (mean + t * t / (2 * effective)) / denom
    half = t * math.sqrt(pq / effective + t * t / (4 * effective * effective)) / denom
    low = 0.0 if mean == 0 else max(0.0, centre - half)
    high = 1.0 if mean == 1 else min(1.0, centre + half)
    return low, high


def _clustered(
    sums: Sequence[int],
    sizes: Sequence[int],
    squares: Sequence[int],
    confidence: float,
    bounds: tuple[float, float],
    method: str,
) -> dict:
    """CR2 (Bell & McCaffrey 2002) from per-cluster sums s_c and sizes n_c of integer
    outcomes. For the mean (an intercept-only regression) the hat matrix's block for cluster
    c is J/n, so the CR2 adjustment (I - H_cc)^(-1/2) scales the cluster's residual sum by
    1 / sqrt(1 - n_c/n): SE_CR2^2 = sum_c (s_c - n_c·mean)^2 / (1 - n_c/n) / n^2, with
    `bell_mccaffrey_df` degrees of freedom under the working correlation estimated from the
    data (`intra_cluster_correlation`; Imbens & Kolesar 2016). Rates (bounds (0, 1)) get the
    Wilson interval on the effective number of tasks, differences mean ± t·SE_CR2.

    Beside it: se_cr0, Miller (2024, eq. 4), sqrt(sum_c (n·s_c - n_c·S)^2 / n^4), and se_iid =
    sqrt((n·sum x_i^2 - S^2) / n^3), both exact integers over powers of n rounded twice, and
    the design effect (se_cr0 / se_iid)^2 = sum_c (n·s_c - n_c·S)^2 / (n·(n·sum x_i^2 -
    S^2)), rounded once: exactly 1.0 when every cluster is one task, None when se_iid is 0.
    With fewer than two non-empty clusters there is no CR2 variance: se_clustered and df are
    None and the interval is the whole range."""
    n, total = sum(sizes), sum(sums)
    if n <= 0:
        raise ValueError("need at least one task")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    residuals = [(n * s - size * total, size) for s, size in zip(sums, sizes, strict=True)]
    between = sum(r * r for r, _ in residuals)
    within = n * sum(squares) - total * total
    mean = total / n
    correlation = intra_cluster_correlation(sums, squares, sizes)
    df = bell_mccaffrey_df(sizes, correlation)
    if df is None:
        se, low, high = None, bounds[0], bounds[1]
    else:
        # (s_c - n_c·mean)^2 / (1 - n_c/n) / n^2 = r_c^2 / (n - n_c) / n^3 with the exact
        # integer r_c = n·s_c - n_c·S: one correctly rounded division a term
        variance = math.fsum(r * r / (n - size) for r, size in residuals if size) / n**3
        se = math.sqrt(variance)
        t = t_quantile(confidence, df)
        if bounds == (0.0, 1.0):
            low, high = _wilson_effective(mean, variance, n, t)
        else:
            low, high = max(bounds[0], mean - t * se), min(bounds[1], mean + t * se)
    return {
        "mean": mean,
        "se_clustered": se,
        "df": df,
        "correlation": correlation,
        "se_cr0": math.sqrt(between / n**4),
        "se_iid": math.sqrt(within / n**3),
        "design_effect": between / (n * within) if within else None,
        "clusters": sum(1 for size in sizes if size > 0),
        "tasks": n,
        "confidence": confidence,
        "low": low,
        "high": high,
        "method": method,
    }


def _sums_by_cluster(values: Sequence[int], clusters: Sequence[Hashable]) -> list[list[int]]:
    """[sum, count] per cluster, in order of first appearance."""
    if len(values) != len(clusters):
        raise ValueError("one cluster id per value is needed")
    by_cluster: dict[Hashable, list[int]] = {}
    for value, cluster in zip(values, clusters, strict=True):
        entry = by_cluster.setdefault(cluster, [0, 0])
        entry[0] += value
        entry[1] += 1
    return list(by_cluster.values())


def clustered_rate(
    successes: Sequence[int], clusters: Sequence[Hashable], confidence: float = 0.95
) -> dict:
    """Success rate over tasks with its cluster-robust (CR2) standard error over their
    sources, from per-task success (0/1 or bools) and each task's cluster id. Returns mean,
    se_clustered (CR2), df (Bell-McCaffrey), se_cr0 (Miller 2024, eq. 4), se_iid,
    design_effect (None if se_iid is 0), clusters, tasks, confidence, low, high (the Wilson
    interval on the effective number of tasks, t on df: CLUSTERED_RATE_METHOD) and method."""
    if any(x not in (0, 1) for x in successes):
        raise ValueError("successes must be 0 or 1")
    sums = _sums_by_cluster([int(x) for x in successes], clusters)
    return clustered_rate_from_counts([s for s, _ in sums], [c for _, c in sums], confidence)


def clustered_rate_from_counts(
    passes: Sequence[int], sizes: Sequence[int], confidence: float = 0.95
) -> dict:
    """`clustered_rate` from passes and task counts per source (e.g. an import's
    passes_by_source): for 0/1 outcomes sum_{i in c}(x_i - mean) = passes_c - n_c·mean and
    sum_i x_i^2 = sum_c passes_c, so nothing per task is needed. Sources with no tasks count for
    nothing, not even as clusters."""
    if len(passes) != len(sizes):
        raise ValueError("one size per source is needed")
    if any(not 0 <= k <= size for k, size in zip(passes, sizes, strict=True)):
        raise ValueError("passes must be between 0 and the source's task count")
    return _clustered(passes, sizes, passes, confidence, (0.0, 1.0), CLUSTERED_RATE_METHOD)


CLUSTERED_MEAN_METHOD = "mean over tasks of a per-task value in [0, 1]; " + CLUSTERED_RATE_METHOD


def clustered_mean(
    values: Sequence[int | Fraction], clusters: Sequence[Hashable], confidence: float = 0.95
) -> dict:
    """`clustered_rate` of per-task values in [0, 1] that need not be 0 or 1 (a task's pass@k
    over several attempts): the same CR2 variance, degrees of freedom and Wilson interval on
    the effective number of tasks, computed on the exact values (ints or Fractions: no
    rounding before the sums, so a variance is never below 0), the same fields, mean and
    design_effect as floats. For 0/1 values it is clustered_rate to the last digit or two."""
    sums: dict[Hashable, list] = {}
    for value, cluster in zip(values, clusters, strict=True):
        exact = Fraction(value)
        if not 0 <= exact <= 1:
            raise ValueError(f"values must be between 0 and 1, not {value}")
        entry = sums.setdefault(cluster, [0, 0, 0])
        entry[0] += exact
        entry[1] += 1
        entry[2] += exact * exact
    cells = list(sums.values())
    result = _clustered(
        [s for s, _, _ in cells],
        [n for _, n, _ in cells],
        [q for _, _, q in cells],
        confidence,
        (0.0, 1.0),
        CLUSTERED_MEAN_METHOD,
    )
    effect = result["design_effect"]
    return {
        **result,
        "mean": float(result["mean"]),
        "design_effect": None if effect is None else float(effect),
    }


def clustered_difference(
    differences: Sequence[int], clusters: Sequence[Hashable], confidence: float = 0.95
) -> dict:
    """Mean paired difference a_i - b_i (each -1, 0 or 1) with its CR2 standard error over
    sources. Same fields as `clustered_rate`; low and high are mean ± t·se_clustered clipped to
    [-1, 1]."""
    if any(d not in (-1, 0, 1) for d in differences):
        raise ValueError("paired differences must be -1, 0 or 1")
    only_a = _sums_by_cluster([int(d == 1) for d in differences], clusters)
    only_b = _sums_by_cluster([int(d == -1) for d in differences], clusters)
    return clustered_difference_from_counts(
        [s for s, _ in only_a], [s for s, _ in only_b], [c for _, c in only_a], confidence
    )


def clustered_difference_from_counts(
    only_a: Sequence[int], only_b: Sequence[int], sizes: Sequence[int], confidence: float = 0.95
) -> dict:
    """`clustered_difference` from the discordant counts per source (tasks only a solved, only
    b solved, and the source's task count): sum_{i in c}(x_i - mean) = (only_a_c - only_b_c) -
    n_c·mean and sum_i x_i^2 = sum_c (only_a_c + only_b_c)."""
    if not len(only_a) == len(only_b) == len(sizes):
        raise ValueError("one count of each kind per source is needed")
    if any(
        a < 0 or b < 0 or a + b > size for a, b, size in zip(only_a, only_b, sizes, strict=True)
    ):
        raise ValueError("discordant counts must be non-negative and at most the task count")
    return _clustered(
        [a - b for a, b in zip(only_a, only_b, strict=True)],
        sizes,
        [a + b for a, b in zip(only_a, only_b, strict=True)],
        confidence,
        (-1.0, 1.0),
        CLUSTERED_DIFFERENCE_METHOD,
    )


LETTER_DISPLAY_METHOD = (
    "compact letter display, insert-absorb with sweeping (Piepho 2004, J. Comput. Graph. Stat. "
    "13:456-466): two models share a letter exactly when they do not differ significantly"
)


def letter_name(index: int) -> str:
    """0 -> 'a', ..., 25 -> 'z', 26 -> 'aa', 27 -> 'ab', ... (bijective base 26, as spreadsheet
    columns): letters beyond the 26th have two characters or more."""
    name = ""
    index += 1
    while index:
        index, digit = divmod(index - 1, 26)
        name = chr(ord("a") + digit) + name
    return name


def _asker(
    differ: Callable[[str, str], bool] | Mapping[tuple[str, str], bool],
) -> Callable[[str, str], bool]:
    if not isinstance(differ, Mapping):
        return differ

    def lookup(a: str, b: str) -> bool:
        for pair in ((a, b), (b, a)):
            if pair in differ:
                return differ[pair]
        raise ValueError(f"no comparison of '{a}' with '{b}'")

    return lookup


def compact_letter_display(
    models: Sequence[str],
    differ: Callable[[str, str], bool] | Mapping[tuple[str, str], bool],
) -> dict[str, list[str]]:
    """Letters per model (Piepho 2004) such that two models share a letter exactly when they do
    not differ significantly. `models` in display order, best first; `differ(a, b)` (or a
    mapping with the pair in either order) tells whether a and b differ (e.g. Holm-adjusted
    p < alpha); it is asked once per pair, a before b in display order.

    Each letter is a set of models. Start with one letter for all; for each differing pair, in
    display order, every letter holding both is split in two, one without each model (insert),
    and a new letter inside another is dropped (absorb). Then each model leaves a letter when
    every pair it forms there is also in another letter (sweep), and letters inside others go.
    Letters are named in order of their best model, then their next ones: the leader's first
    letter is 'a'. Each model's letters come in that order; beyond 'z' see `letter_name`."""
    if len(set(models)) != len(models):
        raise ValueError("models must be distinct")
    ask = _asker(differ)
    m = len(models)
    columns = [(1 << m) - 1] if m else []  # a letter as a bitset: bit i is models[i]
    for i in range(m):
        for j in range(i + 1, m):
            if not ask(models[i], models[j]):
                continue
            both = (1 << i) | (1 << j)
            kept = [c for c in columns if c & both != both]
            new = [h for c in columns if c & both == both for h in (c & ~(1 << i), c & ~(1 << j))]
            # new letters never contain one another nor a kept letter (they lack i or j), and
            # kept letters were not inside one another: only a new one can be absorbed
            columns = kept + [c for c in new if not any(c & ~k == 0 for k in kept)]

    def members(column: int) -> list[int]:
        return [i for i in range(m) if column >> i & 1]

    columns.sort(key=members)
    for index in range(len(columns)):
        for i in members(columns[index]):
            rest = columns[index] & ~(1 << i)
            elsewhere = 0  # every model sharing another letter with i
            for k, column in enumerate(columns):
                if k != index and column >> i & 1:
                    elsewhere |= column
            if rest and rest & ~elsewhere == 0:
                columns[index] = rest
    distinct = sorted(set(columns), key=members)
    columns = [c for c in distinct if not any(c != o and c & ~o == 0 for o in distinct)]
    letters: dict[str, list[str]] = {name: [] for name in models}
    for index, column in enumerate(columns):
        for i in members(column):
            letters[models[i]].append(letter_name(index))
    return letters


def leader_tier(
    models: Sequence[str], p_holm_vs_leader: Mapping[str, float], alpha: float = 0.05
) -> list[str]:
    """The leader (models[0], display order best first) and every model whose Holm-adjusted p
    against the leader is at least alpha: the models the data cannot tell from the best. The
    family the p-values were adjusted over (all pairs, or the comparisons with the leader) is
    the caller's choice."""
    if not models:
        raise ValueError("need at least one model")
    if not 0 < alpha < 1:
        raise ValueError("alpha must be between 0 and 1")
    missing = [m for m in models[1:] if m not in p_holm_vs_leader]
    if missing:
        raise ValueError(f"no p-value against the leader for {', '.join(missing)}")
    return [models[0], *(m for m in models[1:] if p_holm_vs_leader[m] >= alpha)]


INFRASTRUCTURE_BOUNDS_METHOD = (
    "tasks with an official infrastructure error, counted as unsolved, resolved both ways: "
    "in favour of a (a's errors solved, b's unsolved) and in favour of b; exact McNemar each way"
)


def success_bounds(passes: int, errors: int, tasks: int) -> dict:
    """A model's success with its infrastructure errors as failures (as reported) and as
    successes: passes..passes + errors, and the rates over `tasks`."""
    if tasks <= 0:
        raise ValueError("tasks must be positive")
    if passes < 0 or errors < 0 or passes + errors > tasks:
        raise ValueError("passes and errors must be non-negative and together at most tasks")
    return {
        "passes": passes,
        "errors": errors,
        "tasks": tasks,
        "passes_high": passes + errors,
        "rate": passes / tasks,
        "rate_high": (passes + errors) / tasks,
    }


def discordant_counts(a: int, b: int) -> tuple[int, int]:
    """The tasks only a solved and only b solved, from two success bitsets over one task
    order: the two counts a paired (McNemar) test reads."""
    return (a & ~b).bit_count(), (b & ~a).bit_count()


def _discordant(a: int, b: int) -> dict:
    only_a, only_b = discordant_counts(a, b)
    return {"only_a": only_a, "only_b": only_b, "p_exact": mcnemar_exact(only_a, only_b)}


def infrastructure_error_bounds(
    success_a: int, errors_a: int, success_b: int, errors_b: int, tasks: int
) -> dict:
    """How far infrastructure errors could move a paired comparison. Arguments are bitsets over
    the same task order (bit i: task i, as `success_bits`): each model's successes, and the
    tasks whose outcome was an infrastructure error (counted as unsolved, so disjoint from the
    successes). Returns {"reported", "favour_a", "favour_b"}, each {"only_a", "only_b",
    "p_exact"} (exact two-sided McNemar), "a" and "b" from `success_bounds`, and "method".
    In favour of a, a's error tasks become successes and b's stay failures; in favour of b the
    other way round. A pair whose decision could change has a p on the other side of alpha from
    the reported one."""
    for name, bits in [("a", success_a), ("b", success_b)]:
        if bits < 0 or bits.bit_length() > tasks:
            raise ValueError(f"{name}'s success bits must be a non-negative bitset over tasks")
    for name, bits, errors in [("a", success_a, errors_a), ("b", success_b, errors_b)]:
        if errors < 0 or errors.bit_length() > tasks:
            raise ValueError(f"{name}'s error bits must be a non-negative bitset over tasks")
        if bits & errors:
            raise ValueError(f"{name} has tasks both solved and with an infrastructure error")
    return {
        "reported": _discordant(success_a, success_b),
        "favour_a": _discordant(success_a | errors_a, success_b),
        "favour_b": _discordant(success_a, success_b | errors_b),
        "a": success_bounds(success_a.bit_count(), errors_a.bit_count(), tasks),
        "b": success_bounds(success_b.bit_count(), errors_b.bit_count(), tasks),
        "method": INFRASTRUCTURE_BOUNDS_METHOD,
    }


CONNOR_METHOD = (
    "Connor (1987), Biometrics 43:207-211, normal approximation for McNemar's test: "
    "n = (z_{1-α/2}·√ψ + z_{1-β}·√(ψ - δ²))² / δ², rounded up"
)
GIVEN_DISCORDANCE = (
    "discordance ψ = p10 + p01 given, e.g. observed: (only_a + only_b) / tasks of two models"
)
INDEPENDENT_SUCCESSES = (
    "successes of the two models independent given their rates: p_b = P, p_a = P + δ, "
    "ψ = p_a(1 - p_b) + p_b(1 - p_a)"
)
DIFFERENCE_TOLERANCE = 1e-9


def _between_0_and_1(name: str, value: float) -> None:
    if not 0 < value < 1:
        raise ValueError(f"{name} must be between 0 and 1 (exclusive), not {value}")


def _power_arguments(
    alpha: float, power: float, discordance: float | None, baseline_rate: float | None
) -> None:
    _between_0_and_1("alpha", alpha)
    if not 0.5 <= power < 1:
        # below one half z_{1-β} < 0: the formula's n stops falling as δ grows, and can be 0
        raise ValueError(f"power must be at least 0.5 and below 1, not {power}")
    if (discordance is None) == (baseline_rate is None):
        raise ValueError("give either the discordance or the baseline rate, not both or neither")
    if discordance is not None and not 0 < discordance <= 1:
        raise ValueError(f"discordance must be above 0 and at most 1, not {discordance}")
    if baseline_rate is not None:
        _between_0_and_1("baseline rate", baseline_rate)


def _psi(difference: float, discordance: float | None, baseline_rate: float | None) -> float:
    if discordance is not None:
        return discordance
    p_a, p_b = baseline_rate + difference, baseline_rate
    return p_a * (1 - p_b) + p_b * (1 - p_a)


def _connor_tasks(difference: float, psi: float, alpha: float, power: float) -> float:
    root = z_for(1 - alpha) * math.sqrt(psi) + NormalDist().inv_cdf(power) * math.sqrt(
        psi - difference * difference
    )
    return root * root / (difference * difference)


def _largest_difference(discordance: float | None, baseline_rate: float | None) -> float:
    # p01 = (ψ - δ)/2 >= 0, or p_a = P + δ <= 1
    return discordance if discordance is not None else 1 - baseline_rate


def _power_fields(
    difference: float,
    discordance: float | None,
    baseline_rate: float | None,
    alpha: float,
    power: float,
) -> dict:
    return {
        "difference": difference,
        "discordance": _psi(difference, discordance, baseline_rate),
        "baseline_rate": baseline_rate,
        "alpha": alpha,
        "power": power,
        "method": CONNOR_METHOD,
        "assumption": GIVEN_DISCORDANCE if discordance is not None else INDEPENDENT_SUCCESSES,
    }


def mcnemar_sample_size(
    difference: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    discordance: float | None = None,
    baseline_rate: float | None = None,
) -> dict:
    """Tasks needed for a two-sided McNemar test at `alpha` to detect a paired difference δ in
    success rate with probability `power` (Connor 1987, see CONNOR_METHOD). ψ comes from
    either `discordance` (e.g. observed for two models) or `baseline_rate` P under the
    INDEPENDENT_SUCCESSES assumption. Returns tasks (rounded up), tasks_unrounded, difference,
    discordance (ψ), baseline_rate (or None), alpha, power, method and assumption."""
    _between_0_and_1("difference", difference)
    _power_arguments(alpha, power, discordance, baseline_rate)
    if difference > _largest_difference(discordance, baseline_rate):
        raise ValueError(
            "the difference must be at most the discordance (p01 = (ψ - δ)/2 >= 0)"
            if discordance is not None
            else "the baseline rate plus the difference must be at most 1"
        )
    psi = _psi(difference, discordance, baseline_rate)
    tasks = _connor_tasks(difference, psi, alpha, power)
    return {
        "tasks": math.ceil(tasks),
        "tasks_unrounded": tasks,
        **_power_fields(difference, discordance, baseline_rate, alpha, power),
    }


def mcnemar_detectable_difference(
    tasks: int,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    discordance: float | None = None,
    baseline_rate: float | None = None,
) -> dict:
    """The smallest paired difference δ that `tasks` tasks detect at `alpha` with `power`: the
    inverse of `mcnemar_sample_size`, by bisection on δ to DIFFERENCE_TOLERANCE (the returned δ
    needs at most `tasks` tasks; δ - tolerance needs more). The required n falls as δ grows
    (power >= 1/2), for a fixed ψ and under the independence assumption, where ψ grows with δ.
    δ is at most ψ, or 1 - P. Returns difference, tolerance, tasks, discordance (ψ at that δ),
    baseline_rate (or None), alpha, power, method and assumption."""
    if tasks < 1:
        raise ValueError(f"tasks must be at least 1, not {tasks}")
    _power_arguments(alpha, power, discordance, baseline_rate)

    def needed(difference: float) -> float:
        return _connor_tasks(difference, _psi(difference, discordance, baseline_rate), alpha, power)

    low, high = 0.0, _largest_difference(discordance, baseline_rate)
    if needed(high) > tasks:
        raise ValueError(
            f"{tasks} tasks detect no possible difference at this alpha and power: even the "
            f"largest, {high:.4g}, needs {math.ceil(needed(high))}"
        )
    while high - low > DIFFERENCE_TOLERANCE:  # needed(low) > tasks >= needed(high)
        middle = (low + high) / 2
        if needed(middle) > tasks:
            low = middle
        else:
            high = middle
    return {
        "tasks": tasks,
        "tolerance": DIFFERENCE_TOLERANCE,
        **_power_fields(high, discordance, baseline_rate, alpha, power),
    }


ALLOCATION_METHOD = (
    "proportional allocation by largest remainder (Hamilton): floor(N·n_s/T) per source, the "
    "rest one each to the largest remainders, ties to the larger source, then the earlier one"
)
SELECTION_METHOD = (
    "per source, the tasks with the lowest sha256(f'{seed}:{task_id}'), in MANIFEST order"
)


def proportional_allocation(sources: Sequence[tuple[str, int]], total: int) -> dict[str, int]:
    """Split `total` tasks over `sources` ((source_id, task count) in source order) in
    proportion to their sizes, by the largest-remainder (Hamilton) method: each source gets the
    floor of its quota total·n_s/T, and the seats left go one each to the largest remainders
    (exact integers, no float), ties broken by the larger source, then the earlier one. Every
    source gets the floor or the ceiling of its quota, never more tasks than it has. Returns
    {source_id: count} in source order."""
    ids = [source_id for source_id, _ in sources]
    if len(set(ids)) != len(ids):
        raise ValueError("source ids must be distinct")
    if any(size < 0 for _, size in sources):
        raise ValueError("task counts must be non-negative")
    available = sum(size for _, size in sources)
    if not 1 <= total <= available:
        raise ValueError(f"the number of tasks must be between 1 and {available}, not {total}")
    shares = [divmod(total * size, available) for _, size in sources]
    left = total - sum(floor for floor, _ in shares)
    ranked = sorted(range(len(sources)), key=lambda i: (-shares[i][1], -sources[i][1], i))
    extra = set(ranked[:left])
    return {ids[i]: floor + (i in extra) for i, (floor, _) in enumerate(shares)}


def seeded_sample(task_ids: Sequence[str], k: int, seed: int | str) -> list[str]:
    """The k task ids with the lowest sha256(f"{seed}:{task_id}") (the same on every Python
    version and machine, unlike `random`), in their given order."""
    if len(set(task_ids)) != len(task_ids):
        raise ValueError("task ids must be distinct")
    if not 0 <= k <= len(task_ids):
        raise ValueError(f"cannot pick {k} of {len(task_ids)} tasks")

    def rank(task_id: str) -> bytes:
        return hashlib.sha256(f"{seed}:{task_id}".encode()).digest()

    keep = set(sorted(task_ids, key=rank)[:k])
    return [task_id for task_id in task_ids if task_id in keep]


def stratified_selection(
    tasks: Sequence[tuple[str, str]], sources: Sequence[str], total: int, seed: int | str
) -> dict:
    """`total` tasks stratified by source: `tasks` are (task_id, source_id) in MANIFEST order,
    `sources` the source ids in SOURCES order. Each source's count is its
    `proportional_allocation`, its tasks its `seeded_sample`. Returns {"allocation":
    {source_id: count} in source order, "task_ids": the selected ids in MANIFEST order,
    "seed", "method"}."""
    if len({task_id for task_id, _ in tasks}) != len(tasks):
        raise ValueError("task ids must be distinct")
    unknown = sorted({source for _, source in tasks} - set(sources))
    if unknown:
        raise ValueError(f"tasks of unknown sources: {', '.join(unknown)}")
    by_source: dict[str, list[str]] = {source: [] for source in sources}
    for task_id, source in tasks:
        by_source[source].append(task_id)
    allocation = proportional_allocation([(s, len(ids)) for s, ids in by_source.items()], total)
    chosen = {
        task_id
        for source, ids in by_source.items()
        for task_id in seeded_sample(ids, allocation[source], seed)
    }
    return {
        "allocation": allocation,
        "task_ids": [task_id for task_id, _ in tasks if task_id in chosen],
        "seed": seed,
        "method": f"{ALLOCATION_METHOD}; {SELECTION_METHOD}",
    }


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
