"""The failure anatomy (afbench.task_analysis.anatomy): every failed task in exactly one class, by
the stated precedence; classes that sum to each model's failures on the demo; advisory
infrastructure classes for local Harbor runs from Harbor 0.22.0's own exception types, never a
verdict."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from afbench.core.errors import AfbenchError
from afbench.task_analysis import anatomy

from conftest import REPO, add_local_runs, copy_demo_run, job, revision_dir


@pytest.fixture(scope="module")
def demo(tmp_path_factory, demo_run) -> Path:
    """The demo's artifacts as the pipeline lays them out (run_all), with two local runs: the
    Harbor 0.22.0 fixture jobs and a verdict folder."""
    base = tmp_path_factory.mktemp("anatomy")
    rev = revision_dir(copy_demo_run(demo_run, base))  # run_all's tree, copied
    add_local_runs(base, rev)
    return rev


def imports_of(rev: Path) -> list[dict]:
    folder = rev / "imports/source-present/budget-200"
    return [json.loads(p.read_text()) for p in sorted(folder.glob("demo-model-?.json"))]


def test_on_the_demo_the_classes_sum_to_each_models_failures(demo):
    official = json.loads(
        (demo / "imports/source-present/budget-200/failure-anatomy.json").read_text()
    )
    imports = {imp["model"]: imp for imp in imports_of(demo)}
    assert len(official["models"]) == 9
    for model in official["models"]:
        imp = imports[model["model"]]
        failures = imp["tasks"] - imp["passes"]
        assert model["failures"] == failures == sum(model["counts"].values())
        assert Counter(t["class"] for t in model["failed_tasks"]) == {
            c: n for c, n in model["counts"].items() if n
        }
        assert {t["task_id"] for t in model["failed_tasks"]} == {
            r["task_id"] for r in imp["records"] if not r["success"]
        }
    by_class = Counter(
        c for m in official["models"] for c, n in m["counts"].items() for _ in range(n)
    )
    # the demo has every official class: each one's rule is exercised on real records
    assert set(by_class) == set(anatomy.OFFICIAL_CLASSES)
    # the report carries the same counts
    analysis = json.loads((demo / "report/analysis.json").read_text())
    assert [m["counts"] for m in analysis["anatomy"]["official"]] == [
        m["counts"] for m in official["models"]
    ]


def test_each_failed_record_is_in_the_first_class_that_applies(demo):
    """The precedence, checked record by record against the imports' own fields."""
    official = json.loads(
        (demo / "imports/source-present/budget-200/failure-anatomy.json").read_text()
    )
    share = official["near_miss_share"]
    for imp in imports_of(demo):
        over = {o["task_id"] for o in imp["budget_audit"]["over_budget"]}
        given = next(m for m in official["models"] if m["model"] == imp["model"])
        classes = {t["task_id"]: t["class"] for t in given["failed_tasks"]}
        for rec in imp["records"]:
            if rec["success"]:
                continue
            if rec["stop_reason"] == "infrastructure_error":
                expected = "infrastructure"
            elif rec["task_id"] in over:
                expected = "over_budget"
            elif rec["stop_reason"] in ("budget_exhausted", "time_limit"):
                expected = "budget_or_time_stop"
            elif rec["obligations_accepted"] == 0:
                expected = "none"
            elif rec["obligations_accepted"] >= share * rec["n_obligations"]:
                expected = "near_miss"
            else:
                expected = "partial"
            assert classes[rec["task_id"]] == expected, rec


@pytest.mark.parametrize(
    ("stop", "accepted", "total", "over", "share", "expected"),
    [
        ("infrastructure_error", 3, 4, True, 0.5, "infrastructure"),  # before over budget
        ("time_limit", 3, 4, True, 0.5, "over_budget"),  # before the stop
        ("budget_exhausted", 3, 4, False, 0.5, "budget_or_time_stop"),  # before near miss
        ("gave_up", 2, 4, False, 0.5, "near_miss"),  # at the share: a near miss
        ("gave_up", 1, 4, False, 0.5, "partial"),
        ("gave_up", 0, 4, False, 0.5, "none"),
        ("gave_up", 3, 4, False, 1.0, "partial"),  # share 1: only all obligations
        ("gave_up", 4, 4, False, 1.0, "near_miss"),
    ],
)
def test_the_precedence(stop, accepted, total, over, share, expected):
    record = {"stop_reason": stop, "obligations_accepted": accepted, "n_obligations": total}
    assert anatomy.official_class(record, over, share) == expected


def test_the_near_miss_share_is_a_setting(demo, tmp_path):
    folder = demo / "imports/source-present/budget-200"
    each = [f"--import={p}" for p in sorted(folder.glob("demo-model-?.json"))]
    counts = {}
    for share in ("0.5", "0.75"):
        out = tmp_path / f"anatomy-{share}.json"
        job("analyse-failures", *each, f"--near-miss-share={share}", f"--output={out}")
        made = json.loads(out.read_text())
        counts[share] = sum(m["counts"]["near_miss"] for m in made["models"])
        assert f"at least {float(share):g} of the task's obligations" in made["method"]
        assert all(m["failures"] == sum(m["counts"].values()) for m in made["models"])
    assert counts["0.75"] < counts["0.5"]
    with pytest.raises(SystemExit) as refused:  # the flag takes what the schema takes
        job("analyse-failures", *each, "--near-miss-share=1.5", f"--output={tmp_path / 'x.json'}")
    assert refused.value.code == 2


def test_the_setting_is_in_the_schema_with_its_default(demo_yaml):
    from afbench.core.config import validate_config

    schema = (REPO / "scripts/afbench/data/config.schema.yaml").read_text()
    assert "near_miss_share" in schema
    cfg = dict(demo_yaml)
    cfg.pop("anatomy", None)
    assert validate_config(cfg, "test")["anatomy"]["near_miss_share"] == 0.5
    with pytest.raises(AfbenchError, match="near_miss_share"):
        validate_config({**demo_yaml, "anatomy": {"near_miss_share": 0}}, "test")


def run_anatomy(rev: Path, run: str) -> dict:
    return json.loads((rev / "runs" / run / "failure-anatomy.json").read_text())


def test_local_harbor_failures_get_their_class_and_an_advisory_one(demo):
    """The Harbor 0.22.0 fixture jobs: each errored trial's exception type decides its
    advisory class; an agent timeout with a reward of 0 is a time stop; the verdicts stay."""
    made = run_anatomy(demo, "harbor-fixtures")
    tasks = {
        (c["configuration"], t["task_id"]): t
        for c in made["configurations"]
        for t in c["failed_tasks"]
    }
    by_task = {}
    for (_, task_id), t in tasks.items():
        if t["outcome"] == "missing":  # a task of the selection this configuration never ran
            assert (t["class"], t["advisory"]) == ("no_verdict", None)
            continue
        by_task.setdefault(task_id, []).append(t)
    expected = {
        "verifier-timeout": ("infrastructure", "verifier"),
        "no-reward": ("infrastructure", "verifier"),
        "empty-reward": ("infrastructure", "verifier"),
        "bad-reward": ("infrastructure", "verifier"),
        "reward-json": ("infrastructure", "verifier"),  # reward 0.5: invalid_reward
        "no-solution": ("infrastructure", "unknown"),  # a FileNotFoundError of the agent's
        "agent-timeout": ("budget_or_time_stop", None),  # AgentTimeoutError, reward 0
        "solve-fails": ("progress_unknown", None),
    }
    for task_id, (cls, advisory) in expected.items():
        assert [(t["class"], t["advisory"]) for t in by_task[task_id]] == [(cls, advisory)]
    # advisory never changes a verdict: every row keeps the outcome the run gave it
    outcomes = {}
    for line in (demo / "runs/harbor-fixtures/outcomes.csv").read_text().splitlines()[1:]:
        config, task_id, outcome = line.split(",")[:3]
        outcomes[(config, task_id)] = outcome
    assert all(outcomes[key] == t["outcome"] for key, t in tasks.items())
    for config in made["configurations"]:
        assert config["failures"] == sum(config["counts"].values())
        assert config["failures"] == config["tasks"] - config["accepted"]
        infra = config["counts"]["infrastructure"]
        assert sum(config["advisory"].values()) == infra


def test_a_verdict_error_is_infrastructure_and_a_rejection_has_no_progress_recorded(demo):
    made = run_anatomy(demo, "verdicts-three")
    (config,) = made["configurations"]
    classes = {t["task_id"]: (t["class"], t["advisory"]) for t in config["failed_tasks"]}
    assert classes == {
        "demo_s01_t002": ("progress_unknown", None),
        "demo_s01_t003": ("infrastructure", "unknown"),
    }


@pytest.mark.parametrize(
    ("reason", "advisory"),
    [
        ("EnvironmentStartTimeoutError", "environment"),
        ("VerifierTimeoutError", "verifier"),
        ("invalid_reward (0.5)", "verifier"),
        ("ApiRateLimitError", "model_api"),
        ("ModelNotFoundError", "credentials_or_model"),
        ("ContextWindowExceededError", "agent"),
        ("RuntimeError", "unknown"),
        ("reward 0; VerifierTimeoutError", "verifier"),  # a rejected attempt's reason is not one
        ("ApiOverloadedError; VerifierTimeoutError", "mixed"),
        ("", "unknown"),
    ],
)
def test_advisory_classes_are_deterministic_from_exception_types(reason, advisory):
    assert anatomy.advisory_class(reason) == advisory


def test_every_harbor_exception_named_is_one_harbor_0_22_0_defines():
    """The advisory table names Harbor's own exception classes, checked against the installed
    Harbor 0.22.0 (make harbor)."""
    site = list((REPO / ".harbor-venv" / "lib").glob("python3*/site-packages/harbor"))
    if not site:
        pytest.skip("Harbor 0.22.0 is not installed (make harbor)")
    defined = set()
    for path in site[0].rglob("*.py"):
        defined |= set(re.findall(r"^class (\w+)\(", path.read_text(errors="replace"), re.M))
    named = {n for names in anatomy.ADVISORY.values() for n in names}
    ours = {"invalid_reward", "no_reward"}  # afbench's own reasons (harborfiles.classify_trial)
    assert named - ours <= defined, sorted(named - ours - defined)


def test_outcomes_of_another_run_are_refused(demo, tmp_path):
    with pytest.raises(AfbenchError, match="not the outcomes of this summary"):
        job(
            "analyse-run-failures",
            f"--summary={demo / 'runs/verdicts-three/summary.json'}",
            f"--outcomes={demo / 'runs/harbor-fixtures/outcomes.csv'}",
            f"--output={tmp_path / 'x.json'}",
        )
    assert not (tmp_path / "x.json").exists()


def test_the_report_refuses_an_anatomy_of_other_imports(demo, tmp_path):
    folder = demo / "imports/source-present/budget-200"
    fewer = tmp_path / "fewer.json"
    job(
        "analyse-failures",
        *[f"--import={p}" for p in sorted(folder.glob("demo-model-[ab].json"))],
        "--near-miss-share=0.5",
        f"--output={fewer}",
    )
    with pytest.raises(AfbenchError, match="not made from the model imports the report shows"):
        job(
            "render-report",
            f"--summary={folder / 'summary.json'}",
            *[f"--import={p}" for p in sorted(folder.glob("demo-model-?.json"))],
            f"--catalog={demo / 'tasks/catalog.json'}",
            f"--receipt={demo / 'release/receipt.json'}",
            "--confidence=0.95",
            f"--settings-digest={'0' * 64}",
            *[f"--figure={p}" for p in sorted((demo / "report/figures").glob("*.svg"))],
            f"--html={tmp_path / 'i.html'}",
            f"--analysis={tmp_path / 'a.json'}",
            f"--anatomy={fewer}",
        )
    assert not (tmp_path / "i.html").exists()


def test_the_report_shows_the_classes_figure_and_local_failures(demo):
    html = (demo / "report/index.html").read_text()
    assert 'id="failures"' in html and "Why the failures failed" in html
    assert (demo / "report/figures/failures.svg").is_file()
    assert "budget or time stop" in html and "near miss" in html


def test_the_readme_example_runs_on_the_demo(demo):
    from test_readme import blocks

    import afbench.frames as af

    marker = (
        "readme-test: covered by tests/task_analysis/test_anatomy.py::test_the_readme_example_runs"
    )
    [code] = [text for shown, _, text in blocks() if shown and marker in shown]
    scope = {"af": af, "root": demo}
    exec(code, scope)  # as written in docs/report.md
    failures = af.official_failures(demo)
    counts = failures.pivot_table(
        index="model", columns="failure_class", values="task_id", aggfunc="count", observed=True
    )
    assert int(counts.sum().sum()) == len(failures) == 1476
    assert set(af.run_failures(demo)["run"]) == {"harbor-fixtures", "verdicts-three"}


def test_the_same_import_named_twice_is_refused_not_counted_twice(demo, tmp_path):
    one = demo / "imports/source-present/budget-200/demo-model-a.json"
    with pytest.raises(AfbenchError, match="failure anatomy refused: model 'demo-model-a' is"):
        job(
            "analyse-failures",
            f"--import={one}",
            f"--import={one}",
            "--near-miss-share=0.5",
            f"--output={tmp_path / 'x.json'}",
        )
    assert not (tmp_path / "x.json").exists()
