"""pass@k (afbench.runs.passk): the unbiased estimator against its definition, the attempts that
count, the interval clustered over sources, the job's refusals and the rule in the demo."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from itertools import combinations
from pathlib import Path

import pytest

from afbench.core import stats
from afbench.core.errors import AfbenchError
from afbench.core.fsutil import csv_bytes, json_bytes
from afbench.kinds import ATTEMPTS, CATALOG, PASS_AT_K, RUN_SUMMARY
from afbench.kinds.runs import CONFIGURATION, COUNTS
from afbench.kinds.tasks import TASK
from afbench.runs.passk import pass_at_k

from conftest import declared, demo_revision, job

LABEL = "agent 1 | model m"


def test_the_estimator_is_the_share_of_k_attempts_that_hold_an_accepted_one():
    # the definition counted out: every k of the n attempts, drawn without replacement
    for n in range(1, 8):
        for c in range(n + 1):
            attempts = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                draws = list(combinations(attempts, k))
                counted = Fraction(sum(any(d) for d in draws), len(draws))
                assert pass_at_k(n, c, k) == counted
                assert pass_at_k(n, c, k) == 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (1, 1, 1, Fraction(1)),
        (1, 0, 1, Fraction(0)),
        (10, 3, 1, Fraction(3, 10)),  # pass@1 is the share of accepted attempts
        (10, 3, 5, Fraction(11, 12)),  # 1 - C(7, 5) / C(10, 5) = 1 - 21/252
        (4, 2, 2, Fraction(5, 6)),
        (5, 1, 5, Fraction(1)),  # every attempt drawn: the accepted one among them
        (200, 1, 100, Fraction(1, 2)),
    ],
)
def test_known_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == expected


@pytest.mark.parametrize(("n", "c", "k"), [(3, 1, 4), (3, 1, 0), (2, 3, 1), (2, -1, 1)])
def test_k_beyond_the_attempts_and_impossible_counts_are_refused(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


# --- the job, over real files -------------------------------------------------------------
def _attempt(task: str, outcome: str, replaced_by: str | None = None, label: str = LABEL):
    return ATTEMPTS.row(
        configuration=label,
        task_id=task,
        outcome=outcome,
        reward={"accepted": 1, "rejected": 0}.get(outcome),
        reason="r",
        cost_usd=None,
        agent="agent",
        agent_version="1",
        model="m",
        trial_name=f"{task}__x",
        job_id="j",
        trial_dir=f"jobs/{task}",
        replaced_by=replaced_by,
    )


def _write_run(
    root: Path, sources: dict[str, str], attempts: list[dict], missing: int = 0
) -> list[str]:
    """A run's summary.json, attempts.csv and the catalog of its tasks (task -> source); the
    job's flags for them."""
    root.mkdir(parents=True, exist_ok=True)
    tasks = [declared(TASK, task_id=t, source_id=s) for t, s in sources.items()]
    catalog = declared(CATALOG, tasks=tasks)
    standing = sum(a["replaced_by"] is None for a in attempts)
    configuration = declared(
        CONFIGURATION,
        configuration=LABEL,
        counts=declared(COUNTS, missing=missing),
        attempts={"total": standing, "per_task": [], "by_outcome": {}},
    )
    summary = declared(RUN_SUMMARY, run="r", configurations=[configuration])
    (root / "catalog.json").write_bytes(json_bytes(catalog))
    (root / "summary.json").write_bytes(json_bytes(summary))
    rows = [[a[c] for c in ATTEMPTS.columns] for a in attempts]
    (root / "attempts.csv").write_bytes(csv_bytes(ATTEMPTS.columns, rows))
    return [
        f"--summary={root / 'summary.json'}",
        f"--attempts={root / 'attempts.csv'}",
        f"--catalog={root / 'catalog.json'}",
        "--confidence=0.95",
    ]


def _pass_at_k(tmp_path: Path, sources: dict[str, str], attempts: list[dict], **kw) -> dict:
    flags = _write_run(tmp_path / "run", sources, attempts, **kw)
    out = tmp_path / "pass-at-k.json"
    job("pass-at-k", *flags, f"--output={out}")
    (configuration,) = PASS_AT_K.read(out)["configurations"]
    return configuration


def test_a_replaced_attempt_is_no_attempt_of_pass_at_k(tmp_path):
    # t1's accepted attempt was replaced by a rerun that was rejected: it does not count
    attempts = [
        _attempt("t1", "accepted", replaced_by="afbench-job-2"),
        _attempt("t1", "rejected"),
        _attempt("t1", "rejected"),
        _attempt("t2", "accepted"),
        _attempt("t2", "rejected"),
    ]
    got = _pass_at_k(tmp_path, {"t1": "s1", "t2": "s2"}, attempts)
    assert (got["attempts"], got["replaced_attempts"], got["attempts_per_task"]) == (4, 1, [2])
    assert [e["k"] for e in got["estimates"]] == [1, 2]
    # t1: 0 of 2, t2: 1 of 2; pass@1 = (0 + 1/2) / 2, pass@2 = (0 + 1) / 2
    assert [e["clustered"]["mean"] for e in got["estimates"]] == [0.25, 0.5]
    assert got["note"] is None


def test_k_runs_up_to_the_fewest_attempts_any_task_has(tmp_path):
    attempts = [_attempt("t1", o) for o in ("accepted", "rejected", "rejected")]
    attempts += [_attempt("t2", o) for o in ("rejected", "accepted", "rejected", "rejected")]
    got = _pass_at_k(tmp_path, {"t1": "s1", "t2": "s2"}, attempts)
    assert got["attempts_per_task"] == [3, 4]
    expected = [(pass_at_k(3, 1, k) + pass_at_k(4, 1, k)) / 2 for k in (1, 2, 3)]
    assert [e["clustered"]["mean"] for e in got["estimates"]] == [float(x) for x in expected]


@pytest.mark.parametrize(
    ("outcome", "missing", "note"),
    [
        ("error", 0, "1 attempt(s) neither accepted nor rejected"),
        ("unverified", 0, "1 attempt(s) neither accepted nor rejected"),
        ("rejected", 2, "2 selected task(s) have no attempt"),
    ],
)
def test_without_a_decided_attempt_everywhere_there_is_no_estimate(
    tmp_path, outcome, missing, note
):
    attempts = [_attempt("t1", "accepted"), _attempt("t2", outcome)]
    got = _pass_at_k(tmp_path, {"t1": "s1", "t2": "s2"}, attempts, missing=missing)
    assert got["estimates"] == [] and note in got["note"]
    assert got["tasks"] == 2 + missing


def _one_attempt_each(successes: dict[str, int]) -> list[dict]:
    return [_attempt(t, "accepted" if ok else "rejected") for t, ok in successes.items()]


def test_pass_at_1_of_one_attempt_a_task_is_the_reports_clustered_success_rate(tmp_path):
    sources = {f"t{i}": f"s{i % 4}" for i in range(12)}
    successes = {t: int(i in (0, 1, 4, 5, 9)) for i, t in enumerate(sources)}
    got = _pass_at_k(tmp_path, sources, _one_attempt_each(successes))
    (estimate,) = got["estimates"]
    rate = stats.clustered_rate(list(successes.values()), list(sources.values()), 0.95)
    for key, value in rate.items():
        if key != "method":
            assert estimate["clustered"][key] == pytest.approx(value, rel=1e-12, abs=1e-15), key


def test_the_interval_is_clustered_over_sources(tmp_path):
    # the accepted tasks are all of one source: their sources, not their tasks, are the draws
    sources = {f"t{i}": f"s{i // 4}" for i in range(12)}
    successes = {t: int(i < 4) for i, t in enumerate(sources)}
    got = _pass_at_k(tmp_path, sources, _one_attempt_each(successes))
    clustered = got["estimates"][0]["clustered"]
    naive_low, naive_high = stats.wilson_interval(4, 12, 0.95)
    assert clustered["clusters"] == 3 and clustered["design_effect"] > 1
    assert clustered["high"] - clustered["low"] > naive_high - naive_low
    # the same successes spread over the sources: no wider than tasks drawn independently
    spread = {t: int(i % 3 == 0) for i, t in enumerate(sources)}
    got = _pass_at_k(tmp_path / "spread", sources, _one_attempt_each(spread))
    even = got["estimates"][0]["clustered"]
    assert even["high"] - even["low"] < clustered["high"] - clustered["low"]


def test_one_source_with_all_attempts_gives_the_whole_range(tmp_path):
    sources = {f"t{i}": "s1" for i in range(6)}
    attempts = [_attempt(t, o) for t in sources for o in ("accepted", "rejected")]
    got = _pass_at_k(tmp_path, sources, attempts)
    for estimate in got["estimates"]:
        clustered = estimate["clustered"]
        assert clustered["se_clustered"] is None and clustered["clusters"] == 1
        assert (clustered["low"], clustered["high"]) == (0.0, 1.0)
    naive_low, naive_high = stats.wilson_interval(3, 6, 0.95)
    assert 0.0 < naive_low < naive_high < 1.0


def _refusal(tmp_path: Path, sources: dict, attempts: list[dict], edit=None):
    """The one problem the job refuses the run with (afbench.core.errors.Problem)."""
    flags = _write_run(tmp_path / "run", sources, attempts)
    if edit is not None:
        edit(tmp_path / "run")
    with pytest.raises(AfbenchError) as caught:
        job("pass-at-k", *flags, f"--output={tmp_path / 'out.json'}")
    assert not (tmp_path / "out.json").exists()
    (problem,) = caught.value.problems
    return problem


def test_an_attempt_of_no_outcome_is_refused_naming_its_row(tmp_path):
    def edit(run):
        path = run / "attempts.csv"
        path.write_text(path.read_text().replace(",rejected,0,", ",maybe,,", 1))

    error = _refusal(tmp_path, {"t1": "s1"}, [_attempt("t1", "rejected")], edit)
    assert (error.file, error.row, error.field, error.found) == (
        str(tmp_path / "run/attempts.csv"),
        2,
        "outcome",
        "maybe",
    )


def test_attempts_of_another_run_are_refused(tmp_path):
    stray = _attempt("t1", "accepted", label="another configuration")
    error = _refusal(tmp_path, {"t1": "s1"}, [_attempt("t1", "accepted"), stray])
    assert (error.row, error.field, error.found) == (3, "configuration", "another configuration")
    error = _refusal(tmp_path / "t", {"t1": "s1"}, [_attempt("t9", "accepted")])
    assert (error.row, error.field, error.found) == (2, "task_id", "t9")


def test_attempts_the_summary_does_not_count_are_refused(tmp_path):
    def edit(run):
        summary = json.loads((run / "summary.json").read_text())
        summary["configurations"][0]["attempts"]["total"] = 5
        (run / "summary.json").write_text(json.dumps(summary))

    error = _refusal(tmp_path, {"t1": "s1"}, [_attempt("t1", "accepted")], edit)
    assert error.field == "configuration" and "5 attempts" in error.expected


# --- the rule, in the demo workflow ---------------------------------------------------------
@pytest.mark.snakemake
def test_the_demo_builds_each_runs_pass_at_k_and_the_report_shows_it(demo_project):
    rev = demo_project / "results" / demo_revision()
    for name in ("demo-harbor", "demo-verdicts"):
        record = PASS_AT_K.read(rev / "runs" / name / "pass-at-k.json")
        summary = RUN_SUMMARY.read(rev / "runs" / name / "summary.json")
        assert record["run"] == name
        by_label = {c["configuration"]: c for c in summary["configurations"]}
        assert [c["configuration"] for c in record["configurations"]] == list(by_label)
        for configuration in record["configurations"]:
            # the run summary's own pass@k (afbench.runs.summary) and this stage's agree
            shown = by_label[configuration["configuration"]]["pass_at_k"]
            got = {str(e["k"]): e["clustered"]["mean"] for e in configuration["estimates"]}
            assert got == (shown or {})
    harbor = PASS_AT_K.read(rev / "runs/demo-harbor/pass-at-k.json")["configurations"]
    assert sorted(c["estimates"][0]["clustered"]["mean"] for c in harbor) == [0.0, 0.0, 1.0]
    html = (rev / "report/index.html").read_text()
    assert '<h3 id="pass-at-k">pass@k of the local runs</h3>' in html
    assert "no estimate: 1 attempt(s) neither accepted nor rejected" in html
