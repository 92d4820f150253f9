"""The task table (afbench.task_analysis.items): the Rasch fit recovers known difficulties, its
shuffled controls reject real structure and accept noise (and then no difficulty is reported), the
discrimination and audit lists are right, and the derived discriminative subset is a selection
like any other (hashed, consumable by a plan), labelled as derived from source-present
results."""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from afbench.core.errors import AfbenchError
from afbench.core.fsutil import canonical_digest
from afbench.kinds import RELEASE
from afbench.release import demo as demo_release
from afbench.task_analysis import items

from conftest import copy_demo_run, declared, job, revision_dir


def spearman(a, b) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    return float(np.corrcoef(pd.Series(a).rank(), pd.Series(b).rank())[0, 1])


def simulate(seed: int, models: int = 9, tasks: int = 341, spread: float = 1.5):
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, spread, tasks)
    ability = np.linspace(-2, 2, models)
    p = 1 / (1 + np.exp(-(ability[None, :] - difficulty[:, None])))
    return (rng.random((tasks, models)) < p).astype(float), difficulty, ability


def difficulties(fit: dict, answers) -> np.ndarray:
    return np.array([fit["difficulty_by_score"][int(k)] for k in np.asarray(answers).sum(1)])


# --- the fit ----------------------------------------------------------------------------------
def test_the_hessian_and_gradient_are_exact():
    answers, _, _ = simulate(1)
    passes, scores, counts = items._statistics(np, answers)
    quad = items._Quadrature(np)
    args = (np, quad)
    stats = (passes, scores.astype(float), counts.astype(float))
    at = np.append(np.random.default_rng(2).normal(0, 1, 9), 0.3)
    _, grad, hessian = items._objective(*args, at, *stats, True)
    h = 1e-5
    for k in range(len(at)):
        step = np.zeros(len(at))
        step[k] = h
        up, down = (
            items._objective(*args, at + step, *stats),
            items._objective(*args, at - step, *stats),
        )
        assert (up[0] - down[0]) / (2 * h) == pytest.approx(grad[k], rel=1e-5, abs=1e-5)
        assert (up[1] - down[1]) / (2 * h) == pytest.approx(hessian[:, k], rel=1e-5, abs=1e-5)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_fit_recovers_known_difficulties_and_abilities(seed):
    answers, difficulty, ability = simulate(seed)
    fit = items.fit(answers)
    assert spearman(difficulties(fit, answers), difficulty) >= 0.8
    assert np.corrcoef(fit["abilities"], ability)[0, 1] > 0.98
    assert fit["sigma"] == pytest.approx(1.5, rel=0.25)
    # the fit's maximum: a nudge anywhere makes the likelihood no higher
    for control in ("tasks", "models"):
        assert items.control(answers, control, 39, seed, fit["log_likelihood"])["p"] == 1 / 40


def test_the_fit_costs_the_same_at_a_hundred_times_the_tasks():
    """Its sufficient statistics: passes per model and the count of each solve count."""
    answers, _, _ = simulate(4)
    big = np.tile(answers, (100, 1))
    small_fit, big_fit = items.fit(answers), items.fit(big)
    assert big_fit["log_likelihood"] == pytest.approx(100 * small_fit["log_likelihood"], rel=0.05)
    assert np.allclose(big_fit["abilities"], small_fit["abilities"], atol=0.05)


# --- the negative controls --------------------------------------------------------------------
def test_the_within_task_control_rejects_at_its_level_under_noise():
    """Nine identical models (every answer a fair coin): the answers carry no difference
    between models, and the permutation p is uniform: about 1/40 of the data sets reject."""
    rejected = 0
    for seed in range(30):
        answers = (np.random.default_rng(seed).random((341, 9)) < 0.5).astype(float)
        fit = items.fit(answers)
        rejected += items.control(answers, "tasks", 39, seed, fit["log_likelihood"])["p"] < 0.05
    # p < 0.05 only when no shuffle is as good: 1/40 under noise; P(X >= 5) < 0.005
    assert rejected <= 4


def table_of(answers, **settings) -> dict:
    """The task table of a tasks x models answer matrix, as afbench.task_analysis.items builds
    it."""
    answers = np.asarray(answers, dtype=int)
    n_tasks, n_models = answers.shape
    catalog = {"tasks": [{"task_id": f"t{i:04d}", "source_id": "s"} for i in range(n_tasks)]}
    imports = [
        {
            "model": f"m{j}",
            "display_name": f"M{j}",
            "passes": int(answers[:, j].sum()),
            "source_condition": "source-present",
            "budget_usd": 200.0,
            "release": declared(RELEASE, revision="r"),
            "license": "l",
            "file": f"results/m{j}.csv",
            "inputs": {"MANIFEST.csv": "x", f"results/m{j}.csv": f"{j:064x}"},
            "records": [
                {"task_id": f"t{i:04d}", "success": bool(answers[i, j])} for i in range(n_tasks)
            ],
        }
        for j in range(n_models)
    ]
    return items.task_table(imports, catalog, **settings)


def test_no_difficulty_is_reported_when_the_shuffled_answers_fit_as_well():
    noise = (np.random.default_rng(7).random((341, 9)) < 0.5).astype(int)
    table = table_of(noise, shuffles=99, seed=1)
    assert table["controls"][0]["p"] >= 0.05 or table["controls"][1]["p"] >= 0.05
    assert table["difficulties_reported"] is False
    assert "fit as well as the answers given: difficulties withheld" in table["withheld"]
    assert all(t["difficulty"] is None and t["difficulty_sd"] is None for t in table["tasks"])
    assert "median_difficulty_sd" not in table["identification"]


def test_models_that_differ_on_tasks_that_do_not_fail_the_within_model_control():
    """Models of different strength, every task alike: the within-task control is rejected,
    the within-model one is not, and no difficulty is reported."""
    rng = np.random.default_rng(11)
    answers = (rng.random((341, 9)) < np.linspace(0.2, 0.8, 9)[None, :]).astype(int)
    table = table_of(answers, shuffles=99, seed=3)
    (within_tasks, within_models) = table["controls"]
    assert within_tasks["p"] < 0.05 <= within_models["p"]
    assert table["difficulties_reported"] is False
    assert table["withheld"].startswith("the answers shuffled within models fit as well")


# --- discrimination, audit, subset ---------------------------------------------------------------
def test_discrimination_is_the_point_biserial_with_the_rest_score():
    answers = np.array([[1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 1, 1], [0, 0, 0, 0], [1, 1, 1, 0]])
    got = items.discrimination(answers)
    passes = answers.sum(0)
    for i, value in enumerate(got):
        rest = passes - answers[i]
        if answers[i].min() == answers[i].max():
            assert value is None
        else:
            assert value == pytest.approx(np.corrcoef(answers[i], rest)[0, 1], abs=1e-6)
    assert got[2] is None and got[3] is None


def test_the_audit_lists_and_the_subset_rule():
    answers, _, _ = simulate(5)
    answers[0] = 0
    answers[1] = 1
    table = table_of(answers, shuffles=99, seed=1, min_discrimination=0.3)
    assert "t0000" in table["audit"]["solved_by_none"]
    assert "t0001" in table["audit"]["solved_by_all"]
    for task in table["tasks"]:
        assert task["discriminative"] == (
            0 < task["solved_by"] < 9
            and task["discrimination"] is not None
            and task["discrimination"] >= 0.3
        )
    assert table["discriminative"]["tasks"] == sum(t["discriminative"] for t in table["tasks"])


def test_settings_are_checked():
    answers, _, _ = simulate(6)
    with pytest.raises(AfbenchError, match="task-table setting"):
        table_of(answers, shuffles=5)
    with pytest.raises(AfbenchError, match="at least two models"):
        table_of(answers[:, :1])


# --- on the demo -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo(tmp_path_factory, demo_run) -> Path:
    base = tmp_path_factory.mktemp("items")
    return revision_dir(copy_demo_run(demo_run, base))  # run_all's tree, copied


def generator_difficulty(release_files: dict[str, bytes]) -> dict[str, float]:
    """Each demo task's difficulty as afbench.release.demo's generator drew it: its random stream
    replayed from its seed, in its order (sources, obligations, difficulties, cohesive
    sources). The replay is checked against the release itself: the same task ids, sources
    and obligation counts, or it is not the generator's stream."""
    rng = random.Random(demo_release.SEED)
    sizes = demo_release._partition(rng, demo_release.N_TASKS, demo_release.N_SOURCES, 6)
    tasks = []
    for s, size in enumerate(sizes, start=1):
        for t in range(1, size + 1):
            tasks.append(
                {"task_id": f"demo_s{s:02d}_t{t:03d}", "source_id": f"demo_source_{s:02d}", "n": 1}
            )
    for index in rng.choices(
        range(demo_release.N_TASKS), k=demo_release.N_OBLIGATIONS - demo_release.N_TASKS
    ):
        tasks[index]["n"] += 1
    difficulty = {t["task_id"]: rng.random() for t in tasks}
    sources = [f"demo_source_{s:02d}" for s in range(1, demo_release.N_SOURCES + 1)]
    for source_id in sorted(rng.sample(sources, demo_release.COHESIVE_SOURCES)):
        level = rng.random()
        for t in tasks:
            if t["source_id"] == source_id:
                difficulty[t["task_id"]] = level + rng.gauss(0, demo_release.COHESIVE_NOISE)
    manifest = list(csv.DictReader(io.StringIO(release_files["MANIFEST.csv"].decode())))
    assert [(r["task_id"], r["source_id"], int(r["n_obligations"])) for r in manifest] == [
        (t["task_id"], t["source_id"], t["n"]) for t in tasks
    ], "the replay is not the generator's stream"
    return difficulty


def test_on_the_demo_the_fit_recovers_the_generators_difficulty_and_rejects_its_controls(
    demo, release_files
):
    table = json.loads((demo / "imports/source-present/budget-200/task-table.json").read_text())
    truth = generator_difficulty(release_files)
    assert [c["p"] for c in table["controls"]] == [0.005, 0.005]  # 0 of 199 shuffles as good
    assert table["difficulties_reported"] is True
    fitted = [t["difficulty"] for t in table["tasks"]]
    rho = spearman(fitted, [truth[t["task_id"]] for t in table["tasks"]])
    assert rho >= 0.8, rho
    # weakly identified, and measured: ten distinct values for nine models
    ident = table["identification"]
    assert ident["distinct_difficulties"] == len(set(fitted)) == 10
    assert 0 < ident["median_difficulty_sd"] < 3 and 0 < ident["eap_reliability"] < 1
    # the demo models' order is their generator's (INTENDED_PASS_COUNTS)
    abilities = table["fit"]["abilities"]
    assert sorted(abilities, key=abilities.get, reverse=True) == list(
        demo_release.INTENDED_PASS_COUNTS
    )


def test_the_demo_table_is_deterministic_and_its_subset_a_selection_like_any_other(demo, tmp_path):
    folder = demo / "imports/source-present/budget-200"
    catalog = demo / "tasks/catalog.json"
    args = [
        *["analyse-tasks", f"--catalog={catalog}"],
        *[f"--import={p}" for p in sorted(folder.glob("demo-model-?.json"))],
        *["--shuffles=199", "--seed=20261013", "--alpha=0.05", "--min-discrimination=0.3"],
        "--selection-name=discriminative",
    ]
    job(*args, f"--output={tmp_path / 't.json'}", f"--selection={tmp_path / 's.json'}")
    # the same bytes as the run that wrote the demo's table (run_all's, another invocation)
    assert (tmp_path / "t.json").read_bytes() == (folder / "task-table.json").read_bytes()
    selection = json.loads((tmp_path / "s.json").read_text())
    table = json.loads((tmp_path / "t.json").read_text())
    ids = [t["task_id"] for t in table["tasks"] if t["discriminative"]]
    assert selection["kind"] == "afbench task selection" and selection["task_ids"] == ids
    cat = json.loads(catalog.read_text())
    assert selection["selection_sha256"] == canonical_digest(
        {"revision": cat["release"]["revision"], "inputs": cat["inputs"], "task_ids": ids}
    )
    derived = selection["derived"]
    assert derived["from"] == "source-present official results (budget USD 200)"
    assert "not an estimate of the benchmark's" in derived["note"]
    from afbench.core.fsutil import sha256_bytes

    assert derived["task_table_sha256"] == sha256_bytes((tmp_path / "t.json").read_bytes())
    # (tests/test_workflow.py plans a run on it, as on any selection)


def test_a_subset_of_models_that_do_not_differ_is_refused(tmp_path):
    from afbench.task_analysis.items import discriminative_selection

    noise = (np.random.default_rng(7).random((60, 9)) < 0.5).astype(int)
    table = table_of(noise, shuffles=99, seed=1)
    if table["controls"][0]["p"] < 0.05:
        pytest.skip("this noise happened to look structured")
    with pytest.raises(AfbenchError, match="the discriminative subset is empty"):
        discriminative_selection(table, {"release": {"revision": "r"}, "inputs": {}}, "x", "0")


def test_the_same_import_named_twice_is_refused_not_counted_as_two_models(demo, tmp_path):
    one = demo / "imports/source-present/budget-200/demo-model-a.json"
    with pytest.raises(AfbenchError, match="task table refused: model 'demo-model-a' is given"):
        job(
            *["analyse-tasks", f"--catalog={demo / 'tasks/catalog.json'}"],
            *[f"--import={one}", f"--import={one}", "--shuffles=19", "--seed=1"],
            *["--alpha=0.05", "--min-discrimination=0.3", f"--output={tmp_path / 'x.json'}"],
        )
    assert not (tmp_path / "x.json").exists()
