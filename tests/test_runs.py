"""Local runs: real Harbor 0.22.0 job directories and verdict files. Errors are never 0."""

from __future__ import annotations

import csv
import json
import shutil

import pytest

from afbench.errors import AfbenchError
from afbench.runs import parse_verdict, read_harbor_job, summarize_run

from conftest import FIXTURES

RELEASE = {"name": "t", "revision": "a" * 40}
EXPECTED = {
    "hello-pass": ("accepted", 1, "reward 1"),
    "agent-timeout": ("rejected", 0, "AgentTimeoutError"),
    "solve-fails": ("rejected", 0, "reward 0"),
    "verifier-timeout": ("error", None, "VerifierTimeoutError"),
    "no-reward": ("error", None, "RewardFileNotFoundError"),
    "empty-reward": ("error", None, "RewardFileEmptyError"),
    "bad-reward": ("error", None, "VerifierOutputParseError"),
    "reward-json": ("error", None, "invalid_reward (0.5)"),
    "no-solution": ("error", None, "FileNotFoundError"),
}


def selection(*task_ids):
    return {"name": "sel", "selection_sha256": "0" * 64, "task_ids": list(task_ids)}


def test_every_oracle_trial_is_classified():
    attempts = read_harbor_job(FIXTURES / "demo-oracle")
    assert {a["task_id"]: (a["outcome"], a["reward"], a["reason"]) for a in attempts} == EXPECTED
    assert all(a["agent"] == "oracle" for a in attempts)


def test_errors_never_appear_as_zero(tmp_path):
    attempts = read_harbor_job(FIXTURES / "demo-oracle")
    summary, rows = summarize_run("oracle", "harbor", selection(*EXPECTED), attempts, 200, RELEASE)
    for row in rows:
        if row["outcome"] == "error":
            assert row["reward"] is None
    assert summary["counts"] == {
        "accepted": 1,
        "rejected": 2,
        "error": 6,
        "incomplete": 0,
        "missing": 0,
    }
    assert summary["success_rate"] is None
    assert summary["success_rate_bounds"] == {
        **summary["success_rate_bounds"],
        "lower": 1 / 9,
        "upper": 7 / 9,
    }
    assert summary["condition"] == "source-free"
    assert summary["verifier_provenance_attested"] is False
    assert summary["local_capability_score"] is None


def test_nop_environment_failure_and_attempts():
    nop = read_harbor_job(FIXTURES / "demo-nop")
    assert [(a["outcome"], a["reward"], a["agent"]) for a in nop] == [("rejected", 0, "nop")]
    failstart = read_harbor_job(FIXTURES / "demo-failstart")
    assert [(a["outcome"], a["reward"], a["reason"]) for a in failstart] == [
        ("error", None, "RuntimeError")
    ]
    k4 = read_harbor_job(FIXTURES / "demo-k4")
    summary, rows = summarize_run("k4", "harbor", selection("hello-pass"), k4, 200, RELEASE)
    assert rows[0]["attempts"] == 4 and rows[0]["accepted_attempts"] == 4
    assert summary["success_rate"] == 1.0
    assert summary["pass_at_k"] == {"1": 1.0, "4": 1.0}
    # several job directories (one per attempt) are kept as attempts, never collapsed
    both = nop + k4
    summary, rows = summarize_run("mix", "harbor", selection("hello-pass"), both, 200, RELEASE)
    assert rows[0]["attempts"] == 5 and rows[0]["outcome"] == "accepted"
    assert summary["pass_at_k"]["1"] == pytest.approx(4 / 5)


def test_incomplete_and_missing_and_outside_selection(tmp_path):
    job = tmp_path / "job"
    shutil.copytree(FIXTURES / "demo-oracle", job)
    (job / "hello-pass__BXEW54v" / "result.json").unlink()
    attempts = read_harbor_job(job)
    hello = next(a for a in attempts if a["task_id"] == "hello-pass")
    assert hello["outcome"] == "incomplete" and hello["reward"] is None
    summary, rows = summarize_run(
        "r", "harbor", selection(*EXPECTED, "never-ran"), attempts, 200, RELEASE
    )
    assert summary["counts"]["incomplete"] == 1 and summary["counts"]["missing"] == 1
    assert {r["task_id"]: r["outcome"] for r in rows}["never-ran"] == "missing"
    with pytest.raises(AfbenchError, match="not in selection 'sel': .*hello-pass"):
        summarize_run("r", "harbor", selection("agent-timeout"), attempts, 200, RELEASE)


def test_unparsable_trial_result_is_a_clear_error(tmp_path):
    job = tmp_path / "job"
    shutil.copytree(FIXTURES / "demo-nop", job)
    next(job.glob("hello-pass__*/result.json")).write_text('{"verifier_result": NaN}')
    with pytest.raises(AfbenchError, match="result.json: trial result is not valid JSON"):
        read_harbor_job(job)
    with pytest.raises(AfbenchError, match="not a Harbor job directory"):
        read_harbor_job(tmp_path)


def test_cost_goes_through_the_budget_audit(tmp_path):
    job = tmp_path / "job"
    shutil.copytree(FIXTURES / "demo-nop", job)
    result = next(job.glob("hello-pass__*/result.json"))
    doc = json.loads(result.read_text())
    doc["agent_result"]["cost_usd"] = 250.0
    result.write_text(json.dumps(doc))
    summary, _ = summarize_run(
        "c", "harbor", selection("hello-pass"), read_harbor_job(job), 200, RELEASE
    )
    assert summary["budget_audit"]["over_budget"][0]["excess_usd"] == 50.0


def verdict(**changes):
    doc = {
        "task_id": "t1",
        "status": "accepted",
        "obligations": [{"declaration": "A.b", "status": "accepted", "detail": ""}],
        "checks": {
            "target_equivalence": True,
            "allowed_axioms": True,
            "lean_kernel": True,
            "nanoda_replay": True,
        },
        "error": None,
        "verifier": {"name": "comparator", "version": "1.0"},
    }
    doc.update(changes)
    return json.dumps(doc).encode()


def test_verdict_rewards():
    assert parse_verdict(verdict(), "v.json", "t1")["reward"] == 1
    rejected = parse_verdict(
        verdict(
            status="rejected",
            checks={
                "target_equivalence": True,
                "allowed_axioms": False,
                "lean_kernel": True,
                "nanoda_replay": True,
            },
        ),
        "v.json",
        "t1",
    )
    assert rejected["reward"] == 0 and "allowed_axioms" in rejected["reason"]
    error = parse_verdict(
        verdict(status="error", error={"kind": "timeout", "message": "x"}), "v.json", "t1"
    )
    assert error["reward"] is None and error["reason"] == "timeout"
    for result in (rejected, error):
        assert result["verifier_provenance_attested"] is False
        assert result["local_capability_score"] is None


@pytest.mark.parametrize(
    "doc,match",
    [
        (
            verdict(
                checks={
                    "target_equivalence": True,
                    "allowed_axioms": False,
                    "lean_kernel": True,
                    "nanoda_replay": True,
                }
            ),
            "accepted with a failed check",
        ),
        (
            verdict(obligations=[{"declaration": "A.b", "status": "rejected", "detail": ""}]),
            "without every obligation accepted",
        ),
        (
            verdict(
                checks={"target_equivalence": True, "allowed_axioms": True, "lean_kernel": True}
            ),
            "lacks checks",
        ),
        (verdict(status="error"), "status error without an error object"),
        (verdict(status="rejected"), "rejected although every check and obligation passed"),
        (verdict(task_id="t2"), "verdict is for another task"),
        (verdict(status="maybe"), "unknown status"),
        (b'{"task_id": "t1", "task_id": "t1"}', "duplicate key"),
        (b"[1, 2]", "must be a JSON object"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_verdict_contradictions_are_errors(doc, match):
    with pytest.raises(AfbenchError, match=match):
        parse_verdict(doc, "v.json", "t1")


def test_cli_import_run_writes_outcomes(tmp_path, fetched_config, capsys):
    from afbench.cli import main

    from conftest import afbench, release_dir

    selection = tmp_path / "demo-first-tasks.json"
    afbench(
        "tasks",
        "--release-dir",
        release_dir(fetched_config),
        "--output",
        selection,
        "--task",
        "demo_s01_t001",
        "--task",
        "demo_s01_t002",
        "--task",
        "demo_s02_t001",
        cfg=fetched_config,
    )
    verdicts = tmp_path / "verdicts"
    verdicts.mkdir()
    (verdicts / "a.json").write_bytes(verdict(task_id="demo_s01_t001"))
    (verdicts / "b.json").write_bytes(
        verdict(task_id="demo_s01_t002", status="error", error={"kind": "oom", "message": "killed"})
    )
    out = tmp_path / "runs" / "mine"
    code = main(
        [
            "import-run",
            "--name",
            "mine",
            "--kind",
            "verdicts",
            "--path",
            str(verdicts),
            "--selection",
            str(selection),
            "--output-dir",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    rows = list(csv.DictReader((out / "outcomes.csv").open()))
    assert [(r["task_id"], r["outcome"], r["reward"]) for r in rows] == [
        ("demo_s01_t001", "accepted", "1"),
        ("demo_s01_t002", "error", ""),
        ("demo_s02_t001", "missing", ""),
    ]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["success_rate"] is None
    assert summary["success_rate_bounds"]["lower"] == pytest.approx(1 / 3)
