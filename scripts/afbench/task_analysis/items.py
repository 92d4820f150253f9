"""The task table: which tasks measure anything. Per task: how many models solve it, its
discrimination, and a difficulty from an item-response fit, guarded by negative controls; an
audit list (solved by none, solved by all) and a derived "discriminative subset" selection.

The fit is a Rasch model with the models as fixed effects and the tasks as random effects:
P(model j solves task i) = logistic(theta_j - b_i), b_i ~ Normal(0, sigma^2), fitted by
marginal maximum likelihood (the task difficulties integrated out by Gauss-Hermite
quadrature), each task's difficulty then its posterior mean (EAP) with its posterior standard
deviation. Tasks are the random side because they are many and each is seen by few models: a
fixed difficulty per task, estimated from nine answers, is the incidental-parameter problem
(joint maximum likelihood is biased, and a task solved by all or none has no finite
estimate); the posterior mean is finite for every task and shrinks the weakly measured ones.

Under the Rasch model a task's number of solves is sufficient for its difficulty, so the
marginal likelihood depends on the data only through each model's passes and how many tasks
have each number of solves: a fit costs the same at 341 tasks as at 34,100, and the controls
can refit hundreds of shuffled data sets. It also means the difficulty is a function of the
solve count: with J models there are at most J + 1 distinct difficulties (ten for nine
models). That is what "weakly identified" means here, and the table says it with numbers
(distinct values, posterior standard deviations, the EAP reliability).

2PL (a discrimination per task) is not fitted: with nine answers per task a second parameter
per task is not identified. Why not a library: girth (the maintained-looking IRT package on
PyPI) had its last release in 2021, and none fits this orientation (few fixed respondents, many
random items) by the sufficient statistics; this module's fit is ~100 lines on numpy, tested
against simulated data with known difficulties (tests/task_analysis/test_items.py).

Negative controls (the fit is otherwise free to describe noise): the same fit on the answers
shuffled within tasks (each task's answers permuted among the models: its solve count kept, any
consistent difference between models destroyed) and within models (each model's answers
permuted among the tasks: its passes kept, any difference between tasks destroyed), each
`shuffles` times from `seed`. The criterion is a permutation test on the maximised
log-likelihood: p = (1 + #{shuffled fit at least as good}) / (shuffles + 1). Difficulties are
reported only when both controls are rejected at alpha (the answers fit better than their
shuffles); otherwise they are withheld and the table says which control fitted as well.

Discrimination is the point-biserial correlation between a task's answers and the models'
rest scores (their passes on the other tasks): the corrected item-total correlation, undefined
for a task solved by all or none.
"""

from __future__ import annotations

import functools
import math

from afbench.core.errors import AfbenchError
from afbench.kinds import SELECTION, TASK_TABLE

DEFAULT_SHUFFLES = 199
DEFAULT_SEED = 20261013
DEFAULT_ALPHA = 0.05
DEFAULT_MIN_DISCRIMINATION = 0.3  # Ebel's "reasonably good" discrimination and above
QUADRATURE_NODES = 61
ABILITY_PRIOR_SD = 10.0  # a nearly flat penalty: keeps a model that solved all or none finite
LOG_SIGMA_RANGE = (math.log(1e-3), math.log(20.0))
DECIMALS = 6

MODEL = (
    "Rasch model, models fixed, tasks random: P(solve) = logistic(theta_model - b_task), "
    "b_task ~ Normal(0, sigma^2); marginal maximum likelihood by Gauss-Hermite quadrature "
    f"({QUADRATURE_NODES} nodes, abilities with a Normal(0, {ABILITY_PRIOR_SD:g}^2) penalty), "
    "each task's difficulty its posterior mean (logits; higher is harder) with its posterior "
    "standard deviation"
)
CONTROL = (
    "permutation test on the maximised log-likelihood: the same fit on the answers shuffled "
    "within tasks (among the models) and within models (among the tasks), {shuffles} times "
    "each from seed {seed}; p = (1 + #(shuffled log-likelihood >= actual)) / (shuffles + 1); "
    "difficulties are reported only when both p are below alpha {alpha:g}"
)
DISCRIMINATION = (
    "point-biserial correlation between the task's answers and the models' rest scores (passes "
    "on the other tasks); undefined for a task solved by all or none"
)
IDENTIFICATION = (
    "With few models a task's difficulty is weakly identified: under the Rasch model its solve "
    "count is sufficient for it, so there are at most (models + 1) distinct difficulties, and "
    "each rests on one answer per model; read the posterior standard deviations."
)
SUBSET_NOTE = (
    "Derived from the source-present official results: the tasks some but not all models "
    "solved whose discrimination is at least the threshold. Chosen by how these models fared, "
    "so a success rate on it is not an estimate of the benchmark's: compare configurations on "
    "it, do not report it as the benchmark's rate."
)


def _numpy():
    import numpy

    return numpy


# --- the fit --------------------------------------------------------------------------------
@functools.cache
def _quadrature() -> _Quadrature:
    """The Gauss-Hermite nodes, computed once: a task table fits the model some 400 times (its
    negative controls), and each computation of the nodes took a sixth of the job."""
    return _Quadrature(_numpy())


class _Quadrature:
    def __init__(self, np) -> None:
        nodes, weights = np.polynomial.hermite_e.hermegauss(QUADRATURE_NODES)
        self.z = nodes
        self.log_w = np.log(weights / math.sqrt(2 * math.pi))


def _posterior(np, quad, theta, log_sigma, scores):
    """log-integrand L[r, q] for each solve count r and node q, and its normalised weights."""
    sigma = math.exp(log_sigma)
    b = sigma * quad.z  # (Q,)
    eta = theta[:, None] - b[None, :]  # (J, Q)
    a = np.logaddexp(0.0, eta).sum(axis=0)  # (Q,)
    log_int = quad.log_w[None, :] - scores[:, None] * b[None, :] - a[None, :]  # (R, Q)
    top = log_int.max(axis=1, keepdims=True)
    weights = np.exp(log_int - top)
    total = weights.sum(axis=1, keepdims=True)
    return log_int, top[:, 0] + np.log(total[:, 0]), weights / total, eta, b


def _objective(np, quad, params, passes, scores, counts, hessian: bool = False):
    """The penalised marginal log-likelihood, its gradient and (when asked) its Hessian in
    (abilities, log sigma). With P the posterior over the nodes of each solve count r, every
    derivative of log M_r is the posterior mean of the integrand's derivative, plus, for the
    second derivatives, the posterior covariance of the first ones."""
    theta, log_sigma = params[:-1], params[-1]
    sigma = math.exp(log_sigma)
    _, log_marginal, post, eta, _ = _posterior(np, quad, theta, log_sigma, scores)
    prior = 1.0 / ABILITY_PRIOR_SD**2
    value = float(theta @ passes + counts @ log_marginal - prior * (theta @ theta) / 2)
    p = 1.0 / (1.0 + np.exp(-eta))  # (J, Q)
    weighted = counts[:, None] * post  # (R, Q): n_r P_rq
    mass = weighted.sum(axis=0)  # (Q,)
    sz = sigma * quad.z  # (Q,)
    g = sz[None, :] * (p.sum(axis=0)[None, :] - scores[:, None])  # (R, Q): dL/d log sigma
    grad = np.append(passes - p @ mass - prior * theta, float((weighted * g).sum()))
    if not hessian:
        return value, grad, None
    v = p * (1 - p)  # (J, Q)
    m = post @ p.T  # (R, J): posterior mean of p_j
    g_mean = (post * g).sum(axis=1)  # (R,)
    size = len(params)
    h = np.empty((size, size))
    h[:-1, :-1] = -np.diag(v @ mass) + (p * mass) @ p.T - m.T @ (counts[:, None] * m)
    h[:-1, :-1] -= prior * np.eye(size - 1)
    cross = v @ (mass * sz) - (p @ (weighted * g).T).sum(axis=1) + m.T @ (counts * g_mean)
    h[:-1, -1] = h[-1, :-1] = cross
    second = g - (sz * sz * v.sum(axis=0))[None, :]
    h[-1, -1] = float((weighted * (second + g * g)).sum() - counts @ (g_mean * g_mean))
    return value, grad, h


def _clamp(np, params):
    params = params.copy()
    params[-1] = min(max(params[-1], LOG_SIGMA_RANGE[0]), LOG_SIGMA_RANGE[1])
    return params


def fit_counts(passes, scores, counts, tasks: int, start=None) -> dict:
    """The Rasch fit from its sufficient statistics: each model's passes, and how many tasks
    (`counts`) have each solve count (`scores`). Newton's method on the penalised marginal
    log-likelihood with its exact gradient and Hessian, damped where the Hessian is not negative
    definite, with backtracking; converged when no step gains more than 1e-10. From `start`
    (abilities and log sigma) when given, else from each model's logit pass rate."""
    np = _numpy()
    quad = _quadrature()
    passes = np.asarray(passes, dtype=float)
    scores = np.asarray(scores, dtype=float)
    counts = np.asarray(counts, dtype=float)
    if start is None:
        rate = np.clip(passes / tasks, 0.02, 0.98)
        params = np.append(np.log(rate / (1 - rate)), 0.0)
    else:
        params = _clamp(np, np.asarray(start, dtype=float))
    value, grad, hessian = _objective(np, quad, params, passes, scores, counts, True)
    size = len(params)
    for _ in range(200):
        damping = 0.0
        while True:
            try:
                direction = np.linalg.solve(hessian - damping * np.eye(size), -grad)
            except np.linalg.LinAlgError:
                direction = None
            if direction is not None and direction @ grad > 0:
                break
            damping = max(2 * damping, 1e-6)
            if damping > 1e8:
                direction = grad
                break
        scale, improved = 1.0, False
        while scale > 1e-8:
            trial = _clamp(np, params + scale * direction)
            trial_value, trial_grad, trial_hessian = _objective(
                np, quad, trial, passes, scores, counts, True
            )
            if trial_value >= value:
                improved = True
                break
            scale /= 2
        if not improved:
            break
        gain = trial_value - value
        params, value, grad, hessian = trial, trial_value, trial_grad, trial_hessian
        if gain < 1e-10:
            break
    theta, log_sigma = params[:-1], params[-1]
    _, _, post, _, b = _posterior(np, quad, theta, log_sigma, scores)
    mean = post @ b
    sd = np.sqrt(np.maximum(post @ (b * b) - mean * mean, 0.0))
    return {
        "log_likelihood": value,
        "abilities": theta,
        "log_sigma": log_sigma,
        "sigma": math.exp(log_sigma),
        "difficulty_by_score": dict(zip(scores.astype(int).tolist(), mean.tolist(), strict=True)),
        "sd_by_score": dict(zip(scores.astype(int).tolist(), sd.tolist(), strict=True)),
    }


def _statistics(np, answers):
    """(passes per model, the solve counts present, how many tasks have each)."""
    passes = answers.sum(axis=0)
    solves = answers.sum(axis=1).astype(int)
    scores, counts = np.unique(solves, return_counts=True)
    return passes, scores, counts


def fit(answers) -> dict:
    """The Rasch fit of a tasks x models 0/1 matrix."""
    np = _numpy()
    answers = np.asarray(answers, dtype=float)
    return fit_counts(*_statistics(np, answers), tasks=answers.shape[0])


def control(answers, within: str, shuffles: int, seed: int, actual: float) -> dict:
    """One negative control: `shuffles` fits of the answers permuted within tasks (among
    models) or within models (among tasks), from `seed`, and the permutation p of the actual
    log-likelihood."""
    np = _numpy()
    answers = np.asarray(answers, dtype=float)
    rng = np.random.default_rng([seed, 0 if within == "tasks" else 1])
    axis = 1 if within == "tasks" else 0
    shuffled, start = [], None
    for _ in range(shuffles):
        permuted = rng.permuted(answers, axis=axis)
        # shuffles are exchangeable: each fit starts where the one before it ended, which takes
        # Newton about half the steps of a start from the pass rates
        fitted = fit_counts(*_statistics(np, permuted), tasks=answers.shape[0], start=start)
        start = np.append(fitted["abilities"], fitted["log_sigma"])
        shuffled.append(fitted)
    values = [f["log_likelihood"] for f in shuffled]
    at_least = sum(v >= actual - 1e-9 for v in values)
    return {
        "within": within,
        "shuffles": shuffles,
        "seed": seed,
        "log_likelihood_median": _round(float(np.median(values))),
        "log_likelihood_max": _round(max(values)),
        "at_least_as_good": at_least,
        "p": _round((1 + at_least) / (shuffles + 1)),
    }


def discrimination(answers) -> list[float | None]:
    """Each task's point-biserial correlation with the models' rest scores."""
    np = _numpy()
    answers = np.asarray(answers, dtype=float)
    passes = answers.sum(axis=0)
    out: list[float | None] = []
    for row in answers:
        rest = passes - row
        if row.min() == row.max() or rest.min() == rest.max():
            out.append(None)
            continue
        out.append(_round(float(np.corrcoef(row, rest)[0, 1])))
    return out


def _round(x: float) -> float:
    return round(x, DECIMALS) + 0.0  # + 0.0: never a negative zero


# --- the artifact ---------------------------------------------------------------------------
def _answers(imports: list[dict], catalog: dict) -> tuple[list[str], list[str], list[list[int]]]:
    order = [t["task_id"] for t in catalog["tasks"]]
    position = {t: i for i, t in enumerate(order)}
    models = [imp["model"] for imp in imports]
    answers = [[0] * len(models) for _ in order]
    for j, imp in enumerate(imports):
        seen = set()
        for rec in imp["records"]:
            i = position.get(rec["task_id"])
            if i is None:
                raise AfbenchError(
                    f"model '{imp['model']}': a task that is not in the catalog: import it again",
                    field="records.task_id",
                    expected="a task of the catalog",
                    found=rec["task_id"],
                )
            seen.add(i)
            answers[i][j] = int(bool(rec["success"]))
        if len(seen) != len(order):
            raise AfbenchError(
                f"model '{imp['model']}' does not answer every task of the catalog: import it "
                "again",
                field="records",
                expected=f"{len(order)} tasks",
                found=f"{len(seen)} tasks",
            )
    return order, models, answers


def task_table(
    imports: list[dict],
    catalog: dict,
    shuffles: int = DEFAULT_SHUFFLES,
    seed: int = DEFAULT_SEED,
    alpha: float = DEFAULT_ALPHA,
    min_discrimination: float = DEFAULT_MIN_DISCRIMINATION,
) -> dict:
    """The task table artifact from the official model imports (whole, with records) of one
    source condition and budget, and the catalog they were checked against."""
    from afbench.imports.official import distinct_models
    from afbench.report.analysis import leaderboard_order
    from afbench.task_analysis.anatomy import _same

    _check_settings(shuffles, seed, alpha, min_discrimination)
    if len(imports) < 2:
        raise AfbenchError(
            "a task table needs at least two models' results",
            field="--import",
            expected="two or more model imports",
            found=len(imports),
        )
    distinct_models(imports, "task table")
    condition = _same(imports, "source_condition")
    budget = _same(imports, "budget_usd")
    imports = leaderboard_order(imports)
    order, models, answers = _answers(imports, catalog)
    np = _numpy()
    matrix = np.asarray(answers, dtype=float)
    result = fit(matrix)
    actual = result["log_likelihood"]
    controls = [control(matrix, w, shuffles, seed, actual) for w in ("tasks", "models")]
    rejected = all(c["p"] < alpha for c in controls)
    failed = [c["within"] for c in controls if c["p"] >= alpha]
    solves = matrix.sum(axis=1).astype(int).tolist()
    discriminations = discrimination(matrix)
    by_id = {t["task_id"]: t for t in catalog["tasks"]}
    n_models = len(models)
    rows = []
    for task_id, solved, disc in zip(order, solves, discriminations, strict=True):
        difficulty = result["difficulty_by_score"][solved] if rejected else None
        sd = result["sd_by_score"][solved] if rejected else None
        rows.append(
            {
                "task_id": task_id,
                "source_id": by_id[task_id]["source_id"],
                "solved_by": solved,
                "solve_rate": _round(solved / n_models),
                "discrimination": disc,
                "difficulty": None if difficulty is None else _round(difficulty),
                "difficulty_sd": None if sd is None else _round(sd),
                "discriminative": 0 < solved < n_models
                and disc is not None
                and disc >= min_discrimination
                and controls[0]["p"] < alpha,
            }
        )
    eap = [r["difficulty"] for r in rows if r["difficulty"] is not None]
    variances = [r["difficulty_sd"] ** 2 for r in rows if r["difficulty_sd"] is not None]
    identification = {
        "models": n_models,
        "tasks": len(order),
        "distinct_difficulties": len(set(solves)),
        "note": IDENTIFICATION,
    }
    if eap:
        spread = float(np.var(eap))
        identification["median_difficulty_sd"] = _round(
            float(np.median([v**0.5 for v in variances]))
        )
        identification["eap_reliability"] = _round(spread / (spread + float(np.mean(variances))))
    subset = [r["task_id"] for r in rows if r["discriminative"]]
    return TASK_TABLE.record(
        note="Which tasks measure anything, from the official source-present results as "
        "reported. Not a local capability score.",
        license=imports[0]["license"],
        release=imports[0]["release"],
        source_condition=condition,
        budget_usd=budget,
        models=[
            {"model": imp["model"], "display_name": imp["display_name"], "passes": imp["passes"]}
            for imp in imports
        ],
        inputs={p: s for imp in imports for p, s in sorted(imp["inputs"].items())},
        settings={
            "shuffles": shuffles,
            "seed": seed,
            "alpha": alpha,
            "min_discrimination": min_discrimination,
        },
        methods={
            "model": MODEL,
            "control": CONTROL.format(shuffles=shuffles, seed=seed, alpha=alpha),
            "discrimination": DISCRIMINATION,
        },
        fit={
            "log_likelihood": _round(actual),
            "sigma": _round(result["sigma"]),
            "abilities": {
                m: _round(float(a)) for m, a in zip(models, result["abilities"], strict=True)
            },
        },
        controls=controls,
        difficulties_reported=rejected,
        withheld=None
        if rejected
        else "the answers shuffled within "
        + " and within ".join(failed)
        + " fit as well as the answers given: difficulties withheld",
        identification=identification,
        audit={
            "solved_by_none": [r["task_id"] for r in rows if r["solved_by"] == 0],
            "solved_by_all": [r["task_id"] for r in rows if r["solved_by"] == n_models],
            "note": "solved by none: possibly broken, or beyond every model; solved by all: "
            "carries no information about the models",
        },
        discriminative={
            "tasks": len(subset),
            "rule": f"solved by some but not all of the {n_models} models, discrimination at "
            f"least {min_discrimination:g}, and the models' answers fit better than their "
            "shuffles within tasks",
            "note": SUBSET_NOTE,
        },
        tasks=rows,
    )


def _check_settings(shuffles: object, seed: object, alpha: object, minimum: object) -> None:
    def whole(x: object, least: int) -> bool:
        return isinstance(x, int) and not isinstance(x, bool) and x >= least

    def fraction(x: object) -> bool:
        return isinstance(x, int | float) and not isinstance(x, bool) and 0 < x < 1

    for ok, field, expected, found in (
        (whole(shuffles, 19), "shuffles", "a whole number of at least 19", shuffles),
        (whole(seed, 0), "seed", "a whole number of at least 0", seed),
        (fraction(alpha), "alpha", "a number between 0 and 1", alpha),
        (
            isinstance(minimum, int | float)
            and not isinstance(minimum, bool)
            and -1 <= minimum <= 1,
            "min_discrimination",
            "a correlation, -1 to 1",
            minimum,
        ),
    ):
        if not ok:
            raise AfbenchError(
                "a task-table setting out of range", field=field, expected=expected, found=found
            )


def discriminative_selection(table: dict, catalog: dict, name: str, table_sha256: str) -> dict:
    """The derived selection: the table's discriminative tasks as a selection artifact (made
    by catalog.select_tasks, so hashed like every selection), labelled as derived from the
    source-present results, with the table it came from."""
    from afbench.tasks.catalog import select_tasks

    subset = [t["task_id"] for t in table["tasks"] if t["discriminative"]]
    if not subset:
        reason = (
            table["withheld"]
            if table["controls"][0]["p"] >= table["settings"]["alpha"]
            else "no task reaches the discrimination threshold"
        )
        raise AfbenchError(
            f"the discriminative subset is empty ({reason}): nothing to select",
            field="task_table.selection",
        )
    if (table["release"]["revision"], table["inputs"]) != (
        catalog["release"]["revision"],
        {**table["inputs"], **catalog["inputs"]},
    ):
        raise AfbenchError(
            "the task table was not made against this catalog: build it again",
            field="inputs",
        )
    made = select_tasks(catalog, name, tasks=subset)
    derived = {
        "from": f"{table['source_condition']} official results (budget USD "
        f"{table['budget_usd']:g})",
        "task_table_sha256": table_sha256,
        "rule": table["discriminative"]["rule"],
        "models": [m["model"] for m in table["models"]],
        "note": SUBSET_NOTE,
    }
    return SELECTION.record(**SELECTION.body(made), derived=derived)


def check_task_table(table: dict, imports: list[dict], file: str) -> None:
    """Refuse a task table not made from exactly these model imports."""
    from afbench.task_analysis.anatomy import check_made_from

    check_made_from(table, [(m["model"], m["passes"]) for m in table["models"]], imports, file)


def analysis_block(table: dict) -> dict:
    """The analysis' `task_table` key: the fit, its controls, how weakly it identifies each
    difficulty, the audit lists and the subset, and the table by solve count (at most models +
    1 rows: the difficulty is a function of it); the task rows stay in the artifact."""
    n_models = len(table["models"])
    by_solves = []
    for solved in range(n_models + 1):
        rows = [t for t in table["tasks"] if t["solved_by"] == solved]
        if not rows:
            continue
        discriminations = [t["discrimination"] for t in rows if t["discrimination"] is not None]
        by_solves.append(
            {
                "solved_by": solved,
                "tasks": len(rows),
                "difficulty": rows[0]["difficulty"],
                "difficulty_sd": rows[0]["difficulty_sd"],
                "mean_discrimination": _round(sum(discriminations) / len(discriminations))
                if discriminations
                else None,
                "discriminative": sum(t["discriminative"] for t in rows),
            }
        )
    return {
        key: table[key]
        for key in (
            "source_condition",
            "budget_usd",
            "settings",
            "methods",
            "fit",
            "controls",
            "difficulties_reported",
            "withheld",
            "identification",
            "audit",
            "discriminative",
        )
    } | {"models": len(table["models"]), "tasks": len(table["tasks"]), "by_solves": by_solves}
